use mapwise_testkit::etcd::{Config, Etcd, Limits};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let size: u64 = a[1].parse().unwrap();
    let out = std::path::PathBuf::from(&a[2]);
    let cfg = Config { parent: Some("/work/main/target/bench".into()), ..Config::default() };
    let e = Etcd::try_start(
        &cfg,
        Limits { quota_backend_bytes: Some(8 << 30), max_request_bytes: Some(8 << 20) },
    )
    .unwrap();
    let t = std::time::Instant::now();
    let (n, last) = e.churn_to(size, 1, 4, &|| false).unwrap();
    println!("txns {n} last rev {last} in {:?} status {:?}", t.elapsed(), e.status());
    e.compact(last / 2, true);
    let (n2, last2) = e.churn_to(size + size / 8, 2, 4, &|| false).unwrap();
    println!("txns {n2} last rev {last2} status {:?}", e.status());
    e.snapshot(&out);
    println!("done in {:?}", t.elapsed());
}
