//! `inspector export` scraped by a real Prometheus (Debian's): what
//! Prometheus stores is what vmtouch counts on the same files. The
//! residency is pinned while it is compared: one file is locked in part
//! (`vmtouch -l`, which this machine's reclaimer cannot evict), the other
//! evicted whole, so the numbers cannot drift between the scrape and
//! vmtouch.

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Kill, Need, bin, need, pin_16_pages, tmpdir, vmtouch_resident};

/// A port free now on loopback.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Prometheus' answer to an instant query: (`file`, `kind`) labels (`kind`
/// empty when the metric has none) → value.
fn query(port: u16, q: &str) -> std::collections::BTreeMap<(String, String), f64> {
    let url = format!("http://127.0.0.1:{port}/api/v1/query");
    let Ok(mut resp) = ureq::get(&url).query("query", q).call() else {
        return Default::default();
    };
    let v: serde_json::Value =
        serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
    v["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let label = |k: &str| r["metric"][k].as_str().unwrap_or_default().to_owned();
            ((label("file"), label("kind")), r["value"][1].as_str().unwrap().parse().unwrap())
        })
        .collect()
}

#[test]
fn prometheus_scrapes_what_vmtouch_counts() {
    need(&[Need::Prometheus, Need::Vmtouch]);
    let dir = tmpdir();
    let tree = dir.path().join("tree");
    fs::create_dir(&tree).unwrap();
    let data = tree.join("data");
    let mut f = fs::File::create(&data).unwrap();
    f.write_all(&vec![7u8; 1 << 20]).unwrap();
    f.sync_all().unwrap();
    let rrd = tree.join("big.rrd");
    fs::copy(mapwise_testkit::testdata("rrd/big.rrd"), &rrd).unwrap();
    fs::File::open(&rrd).unwrap().sync_all().unwrap();
    let db = tree.join("small.db");
    fs::copy(mapwise_testkit::testdata("bolt/small.db"), &db).unwrap();
    // data: its first 64 KiB locked (16 pages), the rest evicted; big.rrd
    // evicted whole.
    assert!(Command::new("vmtouch").arg("-qe").arg(&rrd).status().unwrap().success());
    let _lock = pin_16_pages(&data);

    let mut exporter = Kill(
        Command::new(bin())
            .args(["export", "--listen", "127.0.0.1:0", "--interval", "1", "-R"])
            .arg(&tree)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(exporter.0.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("inspector: serving http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no address: {line}"))
        .to_owned();

    let prom_port = free_port();
    let config = dir.path().join("prometheus.yml");
    fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: mapwise\n    \
             static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .unwrap();
    let _prometheus = Kill(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("tsdb").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    let deadline = Instant::now() + Duration::from_secs(60);
    let resident = loop {
        let r = query(prom_port, "mapwise_file_resident_bytes");
        if r.len() == 3 {
            break r;
        }
        assert!(Instant::now() < deadline, "Prometheus scraped nothing: {r:?}");
        std::thread::sleep(Duration::from_millis(250));
    };
    let page = mapwise_native::os::residency::os_page_size() as f64;
    let at = |p: &Path| (p.to_str().unwrap().to_owned(), String::new());
    assert_eq!(resident[&at(&data)], vmtouch_resident(&data) as f64 * page);
    assert_eq!(resident[&at(&rrd)], vmtouch_resident(&rrd) as f64 * page);
    assert_eq!(resident[&at(&data)], 16.0 * page);
    let size = query(prom_port, "mapwise_file_size_bytes");
    assert_eq!(size[&at(&data)], (1 << 20) as f64);
    assert_eq!(size[&at(&rrd)], fs::metadata(&rrd).unwrap().len() as f64);
    // big.rrd is evicted: none of its hot set is resident.
    let hot_ratio = query(prom_port, "mapwise_rrd_hot_resident_ratio");
    assert_eq!(hot_ratio[&at(&rrd)], 0.0);

    // Every value equals `inspector residency --json` on the same files.
    let out = Command::new(bin()).args(["residency", "--json", "-R"]).arg(&tree).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kind_bytes = query(prom_port, "mapwise_kind_bytes");
    let kind_resident = query(prom_port, "mapwise_kind_resident_bytes");
    let hot = query(prom_port, "mapwise_rrd_hot_bytes");
    let cold = query(prom_port, "mapwise_rrd_cold_resident_bytes");
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    for f in files {
        let file = f["file"].as_str().unwrap().to_owned();
        let key = (file.clone(), String::new());
        assert_eq!(Some(resident[&key]), f["resident_bytes"].as_f64(), "{file}");
        assert_eq!(Some(size[&key]), f["size"].as_f64(), "{file}");
        for k in f["kinds"].as_array().unwrap() {
            let kk = (file.clone(), k["kind"].as_str().unwrap().to_owned());
            assert_eq!(Some(kind_bytes[&kk]), k["bytes"].as_f64(), "{kk:?}");
            assert_eq!(Some(kind_resident[&kk]), k["resident_bytes"].as_f64(), "{kk:?}");
        }
        if let Some(h) = f.get("hot_set") {
            assert_eq!(Some(hot[&key]), h["hot_bytes"].as_f64());
            assert_eq!(Some(cold[&key]), h["cold_resident_bytes"].as_f64());
            assert_eq!(Some(hot_ratio[&key] * 100.0), h["hot_resident_percent"].as_f64());
        }
    }
    assert_eq!(query(prom_port, "mapwise_export_files").len(), 1);
    // small.db as Go bbolt reads it: the high-water mark and the freelist's
    // ids (all free once no reader holds them), of 4096-byte pages.
    let info = Command::new(mapwise_testkit::peers::bolt()).arg("info").arg(&db).output().unwrap();
    let info = String::from_utf8(info.stdout).unwrap();
    let word = |key: &str| -> f64 {
        info.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap().parse().unwrap()
    };
    let (hwm, free) = (word("hwm="), word("ids="));
    let bolt = |m: &str| query(prom_port, m)[&at(&db)];
    assert_eq!(bolt("mapwise_bolt_size_bytes"), hwm * 4096.0);
    assert_eq!(bolt("mapwise_bolt_free_bytes"), free * 4096.0);
    assert_eq!(bolt("mapwise_bolt_in_use_bytes"), (hwm - free) * 4096.0);

    // The Grafana dashboard (docs/grafana/mapwise.json) names only metrics
    // the exporter serves, and Prometheus accepts each of its queries.
    let served = ureq::get(&format!("http://{addr}/metrics"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let families: std::collections::BTreeSet<&str> =
        served.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next()).collect();
    let dashboard: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(mapwise_testkit::repo().join("docs/grafana/mapwise.json")).unwrap(),
    )
    .unwrap();
    let exprs: Vec<&str> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
        .map(|t| t["expr"].as_str().unwrap())
        .collect();
    assert!(exprs.len() >= 10, "{exprs:?}");
    for e in exprs {
        for name in e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if name.starts_with("mapwise_") {
                assert!(families.contains(name), "{name} is not served: {families:?}");
            }
        }
        let url = format!("http://127.0.0.1:{prom_port}/api/v1/query");
        let q = e.replace("$file", ".*").replace("$instance", ".*");
        let mut resp = ureq::get(&url).query("query", &q).call().unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        assert_eq!(v["status"], "success", "{q}: {v}");
        let n = v["data"]["result"].as_array().map_or(0, Vec::len);
        assert!(n > 0, "{q} gives nothing over this tree: {v}");
    }
}

#[test]
fn export_refuses_a_remote_address_unless_asked() {
    let out = Command::new(bin())
        .args(["export", "--listen", "0.0.0.0:0", "/nonexistent"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a loopback address") && err.contains("--allow-remote"), "{err}");
}
