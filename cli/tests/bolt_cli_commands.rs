//! `mapwise bolt buckets|keys|get|put|del|stats|page|dump PGID|compact`
//! against Go bbolt (the oracle): the peer is the judge of every answer.
//! Reads match the oracle's `keys`, `get` and `dump`; writes leave files
//! the oracle's `check` passes and whose `dump` shows exactly the change;
//! statistics count what the oracle's walk counts; pages decode to the
//! oracle's page table and meta fields; read commands leave the file's
//! bytes and mtime alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{run_mapwise, tempdir, testdata};
use mapwise_testkit::bolt_model::oracle_check;
use mapwise_testkit::bolt_model::{
    Bucket, Entry, dump, oracle_fast as oracle, oracle_run, parse_dump,
};

use mapwise_view::fmt::hex;

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = run_mapwise(args);
    assert!(o.status.success(), "mapwise {args:?}: {}", text(&o));
    o.stdout
}

fn copy(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::copy(testdata(name), &p).expect("copy");
    p
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

/// The oracle's view of the whole content.
fn go_model(p: &Path) -> Bucket {
    parse_dump(&String::from_utf8(oracle(&["dump", s(p)])).expect("utf-8"))
}

fn bucket_at<'a>(root: &'a Bucket, path: &[Vec<u8>]) -> &'a Bucket {
    let mut b = root;
    for p in path {
        match b.kv.get(p) {
            Some(Entry::Bucket(c)) => b = c,
            _ => panic!("no bucket {p:?}"),
        }
    }
    b
}

/// `mapwise bolt <cmd> FILE --bucket-format hex <path…>` arguments.
fn hex_path_args(path: &[Vec<u8>]) -> Vec<String> {
    path.iter().map(|p| hex(p)).collect()
}

const CORPUS: [&str; 5] =
    ["small.db", "overflow.db", "freelist-1k.db", "nofreelistsync.db", "etcd-small.db"];

#[test]
fn buckets_keys_and_get_answer_as_go_does() {
    for name in CORPUS {
        let f = testdata(name);
        let p = s(&f);
        let model = go_model(&f);
        // buckets: the top-level bucket names of the oracle's dump.
        let want: String = model
            .kv
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Bucket(_)))
            .map(|(k, _)| format!("{}\n", hex(k)))
            .collect();
        let ours = ok(&["bolt", "buckets", p, "--format", "hex"]);
        assert_eq!(String::from_utf8_lossy(&ours), want, "{name}: buckets");
        for path in model.bucket_paths() {
            let hp = hex_path_args(&path);
            let joined = hp.join("/");
            // keys: the oracle's `keys` (hex, bbolt order).
            let mut args = vec!["bolt", "keys", p, "--bucket-format", "hex", "--format", "hex"];
            args.extend(hp.iter().map(String::as_str));
            let go = oracle(&["keys", p, &joined, "--hex-path"]);
            assert_eq!(
                String::from_utf8_lossy(&ok(&args)),
                String::from_utf8_lossy(&go),
                "{name}: keys {joined}"
            );
            // get: first, middle and last plain values, and a sub-bucket.
            let b = bucket_at(&model, &path);
            let plain: Vec<&Vec<u8>> =
                b.kv.iter().filter(|(_, e)| matches!(e, Entry::Value(_))).map(|(k, _)| k).collect();
            let mut pick: Vec<&Vec<u8>> = [0, plain.len() / 2, plain.len().saturating_sub(1)]
                .iter()
                .filter_map(|&i| plain.get(i).copied())
                .collect();
            pick.dedup();
            let sub = b.kv.iter().find(|(_, e)| matches!(e, Entry::Bucket(_))).map(|(k, _)| k);
            for key in pick.iter().copied().chain(sub) {
                let kh = hex(key);
                let mut args = vec![
                    "bolt",
                    "get",
                    p,
                    "--bucket-format",
                    "hex",
                    "--parse-format",
                    "hex",
                    "--format",
                    "hex",
                ];
                args.extend(hp.iter().map(String::as_str));
                args.push(&kh);
                let ours = run_mapwise(&args);
                let (go_ok, go_out, _) = oracle_run(&["get", p, &joined, &kh, "--hex-path"]);
                assert_eq!(
                    ours.status.success(),
                    go_ok,
                    "{name}: get {joined} {kh}: {}",
                    text(&ours)
                );
                if go_ok {
                    assert_eq!(
                        String::from_utf8_lossy(&ours.stdout),
                        go_out,
                        "{name}: get {joined} {kh}"
                    );
                } else {
                    // A sub-bucket's name has no value: bbolt's Get says nil.
                    assert_eq!(ours.status.code(), Some(1), "{}", text(&ours));
                    assert!(text(&ours).contains("key not found"), "{}", text(&ours));
                }
            }
        }
    }
}

#[test]
fn text_formats_print_what_go_stores() {
    // small.db: bucket "alpha" holds keys 00 and fffe and "key-000"...; the
    // default formats print printable names as text, others as hex.
    let f = testdata("small.db");
    let p = s(&f);
    let model = go_model(&f);
    let names: String = model
        .kv
        .keys()
        .map(|k| format!("{}\n", String::from_utf8(k.clone()).expect("utf-8 names")))
        .collect();
    assert_eq!(String::from_utf8_lossy(&ok(&["bolt", "buckets", p])), names);
    let alpha = bucket_at(&model, &[b"alpha".to_vec()]);
    let auto: String = alpha
        .kv
        .keys()
        .map(|k| match std::str::from_utf8(k) {
            Ok(t) if t.chars().all(|c| (' '..='~').contains(&c)) => format!("{t}\n"),
            _ => format!("{}\n", hex(k)),
        })
        .collect();
    assert_eq!(String::from_utf8_lossy(&ok(&["bolt", "keys", p, "alpha"])), auto);
    // Nested buckets as further arguments, the value as raw bytes.
    let Some(Entry::Value(v)) =
        bucket_at(&model, &[b"beta".to_vec(), b"inner".to_vec(), b"deeper".to_vec()])
            .kv
            .get(&b"leaf"[..])
    else {
        panic!("beta/inner/deeper leaf")
    };
    let mut want = v.clone();
    want.push(b'\n');
    assert_eq!(
        ok(&["bolt", "get", p, "beta", "inner", "deeper", "leaf", "--format", "bytes"]),
        want
    );
    // Redacted: length and SHA-256 only (checked against sha256sum).
    let got = String::from_utf8(ok(&[
        "bolt", "get", p, "beta", "inner", "deeper", "leaf", "--format", "redacted",
    ]))
    .expect("utf-8");
    let dir = tempdir();
    let vf = dir.path().join("v");
    std::fs::write(&vf, v).expect("write");
    let sum = std::process::Command::new("sha256sum").arg(&vf).output().expect("sha256sum");
    let sum = String::from_utf8_lossy(&sum.stdout);
    let sum = sum.split_whitespace().next().expect("sum");
    assert_eq!(got, format!("<redacted len:{} sha256:{sum}>\n", v.len()));
}

/// Run a writing command, then the oracle must pass the file and dump
/// exactly `model`.
fn write_and_judge(f: &Path, args: &[&str], model: &Bucket, what: &str) {
    let mut full = vec!["bolt"];
    full.extend_from_slice(args);
    let o = run_mapwise(&full);
    assert!(o.status.success(), "{what}: {}", text(&o));
    oracle_check(f);
    assert_eq!(
        String::from_utf8(oracle(&["dump", s(f)])).expect("utf-8"),
        dump(model),
        "{what}: the oracle's dump differs from the expected change"
    );
}

#[test]
fn put_and_del_change_exactly_what_go_sees() {
    let dir = tempdir();
    let f = copy(dir.path(), "small.db");
    let p = s(&f);
    let mut model = go_model(&f);
    let put = |m: &mut Bucket, path: &[&[u8]], k: &[u8], v: &[u8]| {
        let path: Vec<Vec<u8>> = path.iter().map(|x| x.to_vec()).collect();
        m.at_mut(&path).expect("bucket").kv.insert(k.to_vec(), Entry::Value(v.to_vec()));
    };
    put(&mut model, &[b"alpha"], b"new-key", b"new value");
    write_and_judge(&f, &["put", p, "alpha", "new-key", "new value"], &model, "put");
    // Overwrite with an empty value.
    put(&mut model, &[b"alpha"], b"key-000", b"");
    write_and_judge(&f, &["put", p, "alpha", "key-000", ""], &model, "put empty");
    // Binary key, a value that needs overflow pages, in a nested bucket.
    let big: Vec<u8> = (0..9000u32).map(|i| (i * 7 % 251) as u8).collect();
    put(&mut model, &[b"beta", b"inner"], &[0, 0xff], &big);
    write_and_judge(
        &f,
        &["put", p, "--parse-format", "hex", "beta", "inner", "00ff", &hex(&big)],
        &model,
        "put hex overflow value",
    );
    // An inline bucket named in hex.
    put(&mut model, &[b"gamma-inline"], b"g5", b"five");
    write_and_judge(
        &f,
        &["put", p, "--bucket-format", "hex", &hex(b"gamma-inline"), "g5", "five"],
        &model,
        "put into an inline bucket",
    );
    // del.
    let wide = model.at_mut(&[b"wide".to_vec()]).expect("wide");
    let victim = wide.kv.keys().nth(3).expect("a key").clone();
    wide.kv.remove(&victim);
    write_and_judge(&f, &["del", p, "--parse-format", "hex", "wide", &hex(&victim)], &model, "del");
    // New buckets on the way.
    let mut sub = Bucket::default();
    sub.kv.insert(b"k".to_vec(), Entry::Value(b"v".to_vec()));
    let mut new = Bucket::default();
    new.kv.insert(b"sub".to_vec(), Entry::Bucket(sub));
    model.kv.insert(b"new".to_vec(), Entry::Bucket(new));
    write_and_judge(
        &f,
        &["put", p, "--create-buckets", "new", "sub", "k", "v"],
        &model,
        "put --create-buckets",
    );

    // Refusals change nothing: exit 1 with bbolt's message.
    let before = std::fs::read(&f).expect("read");
    for (args, msg) in [
        (vec!["del", p, "alpha", "no-such-key"], "key not found"),
        (vec!["put", p, "nope", "k", "v"], "bucket not found"),
        (vec!["put", p, "beta", "inner", "v"], "incompatible value"),
        (vec!["del", p, "beta", "inner"], "incompatible value"),
    ] {
        let mut full = vec!["bolt"];
        full.extend_from_slice(&args);
        let o = run_mapwise(&full);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(msg), "{args:?}: {}", text(&o));
    }
    assert!(std::fs::read(&f).expect("read") == before, "a refused write changed the file");
    let o = run_mapwise(&["bolt", "put", p, "alpha", "", "v"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("key required"), "{}", text(&o));

    // Files without a freelist (etcd's NoFreelistSync) stay without one.
    for name in ["nofreelistsync.db", "etcd-small.db"] {
        let f = copy(dir.path(), name);
        let p = s(&f);
        let mut model = go_model(&f);
        let first = model.kv.keys().next().expect("a top-level bucket").clone();
        model
            .at_mut(std::slice::from_ref(&first))
            .expect("bucket")
            .kv
            .insert(b"mapwise".to_vec(), Entry::Value(b"was here".to_vec()));
        write_and_judge(
            &f,
            &["put", p, "--bucket-format", "hex", &hex(&first), "mapwise", "was here"],
            &model,
            name,
        );
        let info = String::from_utf8(oracle(&["info", p])).expect("utf-8");
        assert!(info.contains("freelist: not synced"), "{name}: {info}");
    }
}

#[test]
fn put_json_reports_the_transaction() {
    let dir = tempdir();
    let f = copy(dir.path(), "small.db");
    let p = s(&f);
    let o = ok(&["bolt", "put", p, "alpha", "k", "v", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o).expect("json");
    // The oracle's meta: the commit's txid is the current one now.
    let info = String::from_utf8(oracle(&["info", p])).expect("utf-8");
    let txid = info
        .lines()
        .find_map(|l| l.strip_prefix("current="))
        .and_then(|l| l.split_once("txid="))
        .map(|(_, t)| t.trim().parse::<u64>().expect("txid"))
        .expect("current line");
    assert_eq!(v["txid"].as_u64(), Some(txid), "{v}");
    assert_eq!(v["key"], hex(b"k"));
    assert_eq!(v["value"], hex(b"v"));
}

#[test]
fn compact_writes_a_file_go_reads_back_the_same() {
    let dir = tempdir();
    for name in ["small.db", "overflow.db", "etcd-small.db"] {
        let src = testdata(name);
        let dst = dir.path().join(format!("compact-{name}"));
        let out =
            String::from_utf8(ok(&["bolt", "compact", "-o", s(&dst), s(&src)])).expect("utf-8");
        let (a, b) = (
            std::fs::metadata(&src).expect("stat").len(),
            std::fs::metadata(&dst).expect("stat").len(),
        );
        #[expect(clippy::cast_precision_loss)]
        let gain = a as f64 / b as f64;
        assert_eq!(out, format!("{a} -> {b} bytes (gain={gain:.2}x)\n"));
        oracle_check(&dst);
        assert_eq!(
            String::from_utf8(oracle(&["dump", s(&dst)])).expect("utf-8"),
            String::from_utf8(oracle(&["dump", s(&src)])).expect("utf-8"),
            "{name} compacted"
        );
        // A second compaction into the same file is refused.
        let o = run_mapwise(&["bolt", "compact", "-o", s(&dst), s(&src)]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    }
    // A compaction that fails part-way (a leaf overwritten with garbage;
    // Go's check rejects the source too) leaves no output behind that
    // could pass for a finished copy.
    let bad = dir.path().join("bad.db");
    let mut bytes = std::fs::read(testdata("small.db")).expect("read");
    let ps = 4096;
    bytes[5 * ps..6 * ps].fill(0xa5);
    std::fs::write(&bad, &bytes).expect("write");
    // (`--raw-only`: bbolt's own Tx.Check can loop on such damage.)
    let (ok, _, _) = oracle_run(&["check", s(&bad), "--raw-only"]);
    assert!(!ok, "Go bbolt should reject the damaged source");
    let dst = dir.path().join("bad-compact.db");
    let o = run_mapwise(&["bolt", "compact", "-o", s(&dst), s(&bad)]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("page 5"), "{}", text(&o));
    assert!(!dst.exists(), "a failed compact left {}", dst.display());
}

/// A branch element of bucket `bench` pointing back at the page that
/// lists the top-level buckets nests `bench` in itself, level after level
/// (bbolt's compact copies until the depth limit: about 200 MB and 30 s
/// from a 3 MB file). compact refuses the source after its check, at
/// once, and creates no output; the oracle's check sees the damage too.
#[test]
fn compact_refuses_a_source_whose_bucket_nests_in_itself() {
    let dir = tempdir();
    let src = dir.path().join("deep.db");
    oracle(&[
        "bench",
        s(&src),
        "--write-mode",
        "rnd",
        "--read-mode",
        "seq",
        "--count",
        "3000",
        "--batch-size",
        "100",
        "--key-size",
        "400",
        "--value-size",
        "10",
        "--page-size",
        "1024",
        "--no-sync",
    ]);
    let (metas, current) = go_info(s(&src));
    let root: u64 = metas[&current]["root"].parse().expect("root pgid");
    let (branch, (_, items, _)) = go_pages(s(&src))
        .into_iter()
        .find(|(_, (kind, items, _))| kind == "branch" && *items > 1)
        .expect("a branch page");
    let mut bytes = std::fs::read(&src).expect("read");
    // Branch element `items - 1`: pos u32, ksize u32, pgid u64.
    let at = usize::try_from(branch * 1024 + 16 + 16 * (items - 1) + 8).expect("offset");
    bytes[at..at + 8].copy_from_slice(&root.to_le_bytes());
    let bad = dir.path().join("nested.db");
    std::fs::write(&bad, &bytes).expect("write");
    let (go_ok, _, _) = oracle_run(&["check", s(&bad), "--raw-only"]);
    assert!(!go_ok, "Go bbolt should reject the damaged source");
    let dst = dir.path().join("nested-compact.db");
    let started = std::time::Instant::now();
    let o = run_mapwise(&["bolt", "compact", "-o", s(&dst), s(&bad)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("the source fails check"), "{}", text(&o));
    assert!(!dst.exists(), "a refused compact left {}", dst.display());
    // No copying happened: the check alone is milliseconds here (bounded
    // loosely, a slow CI machine included; the copy took 30 s).
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

/// The oracle's `pages` table: id → (type, items, overflow).
fn go_pages(p: &str) -> BTreeMap<u64, (String, u64, u64)> {
    String::from_utf8(oracle(&["pages", p]))
        .expect("utf-8")
        .lines()
        .skip(2)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let id = f.first()?.parse().ok()?;
            let items = f.get(2).map_or(0, |x| x.parse().expect("items"));
            let ovf = f.get(3).map_or(0, |x| x.parse().expect("overflow"));
            Some((id, (f.get(1)?.to_string(), items, ovf)))
        })
        .collect()
}

/// The oracle's `info`: `metaN` → field → value, and the current meta.
fn go_info(p: &str) -> (BTreeMap<String, BTreeMap<String, String>>, String) {
    let info = String::from_utf8(oracle(&["info", p])).expect("utf-8");
    let mut metas = BTreeMap::new();
    let mut current = String::new();
    for l in info.lines() {
        if let Some((label, rest)) = l.split_once(": ")
            && label.starts_with("meta")
        {
            let fields = rest
                .split(' ')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            metas.insert(label.to_string(), fields);
        }
        if let Some(c) = l.strip_prefix("current=") {
            current = c.split(' ').next().expect("meta").to_string();
        }
        if let Some(r) = l.strip_prefix("freelist: ") {
            metas.insert(
                "freelist".into(),
                r.split(' ')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
        }
    }
    (metas, current)
}

#[test]
fn stats_count_what_the_go_walk_counts() {
    for name in CORPUS {
        let f = testdata(name);
        let p = s(&f);
        let go: BTreeMap<String, u64> =
            String::from_utf8(oracle(&["check", p, "-v", "--raw-only"]))
                .expect("utf-8")
                .lines()
                .find_map(|l| l.strip_prefix("raw: stats: "))
                .expect("stats line")
                .split(' ')
                .filter_map(|kv| kv.split_once('='))
                .filter_map(|(k, v)| v.parse().ok().map(|v| (k.to_string(), v)))
                .collect();
        // bbolt's `stats` sums the top-level buckets; the oracle's walk
        // also counts the root tree (the page listing them): a leaf here.
        let (metas, current) = go_info(p);
        let root: u64 = metas[&current]["root"].parse().expect("root");
        let (ty, top, root_ovf) = go_pages(p)[&root].clone();
        assert_eq!(ty, "leaf", "{name}: root tree is one leaf");
        let ours: serde_json::Value =
            serde_json::from_slice(&ok(&["bolt", "stats", p, "--json"])).expect("json");
        let n = |k: &str| ours[k].as_u64().unwrap_or_else(|| panic!("{k} in {ours}"));
        assert_eq!(n("buckets"), top, "{name}: top-level buckets");
        assert_eq!(n("branch_page_n"), go["branch_pages"], "{name}: branch pages");
        assert_eq!(n("leaf_page_n"), go["leaf_pages"] - 1, "{name}: leaf pages");
        assert_eq!(
            n("branch_overflow_n") + n("leaf_overflow_n"),
            go["overflow_pages"] - root_ovf,
            "{name}: overflow pages"
        );
        assert_eq!(n("bucket_n"), go["buckets"], "{name}: buckets");
        assert_eq!(n("inline_bucket_n"), go["inline_buckets"], "{name}: inline");
        // Keys: every leaf element below the top level (values and
        // sub-bucket entries).
        assert_eq!(n("key_n"), go["keys"] + go["buckets"] - top, "{name}: keys");
        let ps: u64 = metas[&current]["page_size"].parse().expect("page size");
        assert_eq!(n("leaf_alloc"), (n("leaf_page_n") + n("leaf_overflow_n")) * ps);
        // The text block carries the same numbers in bbolt's lines.
        let t = String::from_utf8(ok(&["bolt", "stats", p])).expect("utf-8");
        assert!(t.starts_with(&format!("Aggregate statistics for {top} buckets\n\n")), "{t}");
        for line in [
            format!("\tNumber of logical branch pages: {}\n", go["branch_pages"]),
            format!("\tNumber of logical leaf pages: {}\n", go["leaf_pages"] - 1),
            format!("\tNumber of keys/value pairs: {}\n", go["keys"] + go["buckets"] - top),
            format!("\tTotal number of buckets: {}\n", go["buckets"]),
        ] {
            assert!(t.contains(&line), "{name}: {line:?} not in\n{t}");
        }
    }
}

#[test]
fn page_decodes_what_go_lists() {
    for name in ["small.db", "overflow.db", "freelist-1k.db"] {
        let f = testdata(name);
        let p = s(&f);
        let table = go_pages(p);
        let (metas, current) = go_info(p);
        let live: Vec<u64> =
            table.iter().filter(|(_, (ty, ..))| ty != "free").map(|(id, _)| *id).collect();
        let ids: Vec<String> = live.iter().map(u64::to_string).collect();
        let mut args = vec!["bolt", "page", p, "--json"];
        args.extend(ids.iter().map(String::as_str));
        let out = String::from_utf8(ok(&args)).expect("utf-8");
        let pages: Vec<serde_json::Value> =
            out.lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
        assert_eq!(pages.len(), live.len());
        for v in &pages {
            let id = v["pgid"].as_u64().expect("pgid");
            let (ty, items, ovf) = &table[&id];
            assert_eq!(v["type"], ty.as_str(), "{name} page {id}");
            assert_eq!(v["count"].as_u64(), Some(*items), "{name} page {id} items");
            assert_eq!(v["overflow"].as_u64(), Some(*ovf), "{name} page {id} overflow");
            if id < 2 {
                let m = &metas[&format!("meta{id}")];
                for (ours, go) in [("root", "root"), ("hwm", "hwm"), ("txid", "txid")] {
                    assert_eq!(
                        v["meta"][ours].as_u64().map(|x| x.to_string()).as_deref(),
                        Some(m[go].as_str()),
                        "{name} meta {id} {ours}"
                    );
                }
                assert_eq!(v["meta"]["checksum"], m["checksum"].as_str());
            }
            if ty == "freelist" {
                let fl = &metas["freelist"];
                assert_eq!(
                    v["ids"].as_array().map(Vec::len).map(|n| n.to_string()).as_deref(),
                    Some(fl["ids"].as_str())
                );
                assert_eq!(fl["page"], id.to_string());
            }
        }
        // --all walks every page run: each live page of the table is there
        // (stale free pages that do not decode are reported, exit 0).
        let all = String::from_utf8(ok(&["bolt", "page", p, "--all"])).expect("utf-8");
        for id in &live {
            assert!(all.contains(&format!("Page ID:    {id}\n")), "{name}: --all lacks {id}");
        }
        // The root page in bbolt's text: the top-level buckets with their
        // sequences, as the oracle's dump has them.
        let root: u64 = metas[&current]["root"].parse().expect("root");
        let model = go_model(&f);
        let t = String::from_utf8(ok(&["bolt", "page", p, &root.to_string()])).expect("utf-8");
        let (ty, items, ovf) = &table[&root];
        let ps: u64 = metas[&current]["page_size"].parse().expect("ps");
        assert!(
            t.starts_with(&format!(
                "Page ID:    {root}\nPage Type:  {ty}\nTotal Size: {} bytes\nOverflow pages: {ovf}\nItem Count: {items}\n\n",
                (ovf + 1) * ps
            )),
            "{t}"
        );
        for (k, e) in &model.kv {
            let Entry::Bucket(b) = e else { continue };
            let key = format!("\"{}\": <pgid=", String::from_utf8_lossy(k));
            let line =
                t.lines().find(|l| l.starts_with(&key)).unwrap_or_else(|| panic!("{key} in {t}"));
            assert!(line.ends_with(&format!(",seq={}>", b.seq)), "{line}");
        }
        // `dump FILE PGID`: bbolt's hex lines hold the page's bytes.
        let bytes = std::fs::read(&f).expect("read");
        let d = String::from_utf8(ok(&["bolt", "dump", p, &root.to_string()])).expect("utf-8");
        let mut got = Vec::new();
        let mut last: Vec<u8> = Vec::new();
        let mut pending_star = false;
        for l in d.lines().filter(|l| !l.is_empty()) {
            let (off, rest) = l.split_once(' ').expect("offset");
            let off = u64::from_str_radix(off, 16).expect("hex offset");
            if rest == "*" {
                pending_star = true;
                continue;
            }
            if pending_star {
                while (root * ps + got.len() as u64) < off {
                    got.extend_from_slice(&last);
                }
                pending_star = false;
            }
            assert_eq!(off, root * ps + got.len() as u64, "{l}");
            let line: Vec<u8> = rest
                .split(' ')
                .flat_map(|g| {
                    (0..g.len())
                        .step_by(2)
                        .map(move |i| u8::from_str_radix(&g[i..i + 2], 16).expect("hex"))
                })
                .collect();
            got.extend_from_slice(&line);
            last = line;
        }
        let at = usize::try_from(root * ps).expect("offset");
        assert_eq!(got, bytes[at..at + usize::try_from(ps).expect("ps")], "{name}: dump {root}");
    }
}

/// The last page run `page --all` printed: its id and overflow count.
fn last_run(out: &[u8]) -> (u64, u64) {
    let t = String::from_utf8_lossy(out);
    let num =
        |l: &str, prefix: &str| l.strip_prefix(prefix).map(|v| v.trim().parse().expect("number"));
    let mut last = (0, 0);
    for l in t.lines() {
        if let Some(id) = num(l, "Page ID:") {
            last = (id, 0);
        } else if let Some(ovf) = num(l, "Overflow pages:") {
            last.1 = ovf;
        } else if let Some(rest) = l.strip_prefix("Printing page ") {
            last = (rest.split(' ').next().expect("id").parse().expect("id"), 0);
        }
    }
    last
}

/// `page --all` walks to the high-water mark meta page 0 stores (as
/// bbolt 1.3.9's CLI does, whichever meta is current), and to the
/// current meta's when page 0's magic is broken. The marks are the
/// oracle's decoding of both meta pages.
#[test]
fn page_all_walks_to_meta_0s_high_water_mark() {
    let dir = tempdir();
    let f = copy(dir.path(), "overflow.db");
    let p = s(&f);
    // One commit that grows the file: meta page 1 becomes current with a
    // higher mark than page 0's.
    let big = "v".repeat(100_000);
    ok(&["bolt", "put", p, "blobs", "grown", &big]);
    let (metas, current) = go_info(p);
    let hwm = |m: &str| -> u64 { metas[m]["hwm"].parse().expect("hwm") };
    assert_eq!(current, "meta1");
    assert!(hwm("meta1") > hwm("meta0"), "{metas:?}");
    let ends_at = |out: &[u8], mark: u64| {
        let (id, ovf) = last_run(out);
        assert!(id < mark && id + ovf + 1 >= mark, "last run {id}+{ovf}, mark {mark}");
    };
    ends_at(&ok(&["bolt", "page", p, "--all"]), hwm("meta0"));

    let mut bytes = std::fs::read(&f).expect("read");
    bytes[16..20].copy_from_slice(b"XXXX");
    std::fs::write(&f, &bytes).expect("write");
    let o = run_mapwise(&["bolt", "page", p, "--all"]);
    assert!(o.status.success(), "{}", text(&o));
    ends_at(&o.stdout, hwm("meta1"));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("meta page 0 has a wrong magic"),
        "{}",
        text(&o)
    );
}

#[test]
fn missing_buckets_and_keys_exit_1_with_bbolts_message() {
    let f = testdata("small.db");
    let p = s(&f);
    // The oracle agrees they are missing.
    assert!(!oracle_run(&["get", p, "alpha", &hex(b"nope")]).0);
    assert!(!oracle_run(&["keys", p, "nope"]).0);
    for (args, msg) in [
        (vec!["keys", p, "nope"], "bucket not found"),
        (vec!["keys", p, "beta", "nope"], "bucket not found"),
        (vec!["get", p, "nope", "k"], "bucket not found"),
        (vec!["get", p, "alpha", "nope"], "key not found for key: \"nope\" hex: \"6e6f7065\""),
        // A name holding a value is no bucket (bbolt's `Bucket.Bucket`).
        (vec!["keys", p, "alpha", "key-000"], "bucket not found"),
    ] {
        let mut full = vec!["bolt"];
        full.extend_from_slice(&args);
        let o = run_mapwise(&full);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(msg), "{args:?}: {}", text(&o));
        full.push("--json");
        let o = run_mapwise(&full);
        assert_eq!(o.status.code(), Some(1), "{args:?} --json");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json error");
        assert!(v["error"].as_str().is_some_and(|e| e.contains(msg)), "{v}");
    }
    // Arguments missing: could not run (2).
    for (args, msg) in [
        (vec!["get", p, "alpha", ""], "key required"),
        (vec!["get", p, "alpha"], "bucket required"),
    ] {
        let mut full = vec!["bolt"];
        full.extend_from_slice(&args);
        let o = run_mapwise(&full);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(msg), "{args:?}: {}", text(&o));
    }
}

/// A key (or bucket name) stored as bytes and asked for by its hex text
/// without `--parse-format hex` (`--bucket-format hex`): bbolt's "not
/// found" line and exit 1 as before, then one line naming the flag; with
/// the flag, the value the oracle reads. Hex that reads as nothing there
/// gets no hint.
#[test]
fn hex_text_taken_as_bytes_gets_a_hint() {
    let f = testdata("small.db");
    let p = s(&f);
    let (key, bucket) = (hex(b"key-000"), hex(b"alpha"));
    let value = oracle(&["get", p, "alpha", &key]);
    // The oracle holds no key spelled as the hex text, nor such a bucket.
    assert!(!oracle_run(&["get", p, "alpha", &hex(key.as_bytes())]).0);
    assert!(!oracle_run(&["keys", p, &bucket]).0);
    let key_line =
        |k: &str| format!("mapwise: key not found for key: \"{k}\" hex: \"{}\"", hex(k.as_bytes()));
    let bucket_line = format!("mapwise: bucket not found: \"{bucket}\"");
    let key_hint = format!("hint: the key whose hex is {key} exists: add --parse-format hex");
    let bucket_hint =
        format!("hint: the bucket path whose hex is {bucket} exists: add --bucket-format hex");
    let prefixed = format!("0x{key}");
    let cases: [(&[&str], Vec<String>); 5] = [
        (&["get", p, "alpha", &key], vec![key_line(&key), key_hint.clone()]),
        (
            &["get", p, "alpha", &prefixed],
            vec![
                key_line(&prefixed),
                format!(
                    "hint: the key whose hex is {key} exists: add --parse-format hex \
                     and drop the 0x (bbolt's hex reading refuses it)"
                ),
            ],
        ),
        (
            &["get", p, &bucket, &key, "--parse-format", "hex"],
            vec![bucket_line.clone(), bucket_hint.clone()],
        ),
        (&["keys", p, &bucket], vec![bucket_line, bucket_hint]),
        // `cafe` is hex, but no key holds the bytes ca fe either.
        (&["get", p, "alpha", "cafe"], vec![key_line("cafe")]),
    ];
    assert!(!oracle_run(&["get", p, "alpha", "cafe"]).0);
    for (args, lines) in &cases {
        let mut full = vec!["bolt"];
        full.extend_from_slice(args);
        let o = run_mapwise(&full);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().collect::<Vec<_>>(), *lines, "{args:?}");
        full.push("--json");
        let o = run_mapwise(&full);
        assert_eq!(o.status.code(), Some(1), "{args:?} --json");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json error");
        assert_eq!(v["hint"].as_str().map(|h| format!("hint: {h}")).as_ref(), lines.get(1), "{v}");
    }
    // With the flags, the value the oracle reads (both print it as hex).
    for args in [
        ["bolt", "get", p, "alpha", &key, "--parse-format", "hex", "-f", "hex"].as_slice(),
        &["bolt", "get", p, &bucket, "key-000", "--bucket-format", "hex", "-f", "hex"],
    ] {
        assert_eq!(ok(args), value, "{args:?}");
    }
}

#[test]
fn read_commands_leave_the_file_alone() {
    let dir = tempdir();
    let f = copy(dir.path(), "small.db");
    let p = s(&f);
    let st = std::process::Command::new("touch")
        .args(["-d", "2001-02-03 04:05:06", p])
        .status()
        .expect("touch");
    assert!(st.success());
    let before = std::fs::read(&f).expect("read");
    let mtime = || std::fs::metadata(&f).and_then(|m| m.modified()).expect("mtime");
    let t0 = mtime();
    let dst = dir.path().join("compacted.db");
    let d = s(&dst);
    let cmds: Vec<Vec<&str>> = vec![
        vec!["info", p],
        vec!["buckets", p],
        vec!["keys", p, "beta", "inner"],
        vec!["get", p, "alpha", "key-001"],
        vec!["dump", p],
        vec!["dump", p, "0", "4"],
        vec!["check", p],
        vec!["stats", p],
        vec!["pages", p],
        vec!["page", p, "0", "4", "11"],
        vec!["page", p, "--all"],
        vec!["compact", "-o", d, p],
    ];
    for c in cmds {
        for json in [false, true] {
            let mut full = vec!["bolt"];
            full.extend_from_slice(&c);
            if json {
                full.push("--json");
                let _ = std::fs::remove_file(&dst);
            }
            let o = run_mapwise(&full);
            assert!(o.status.success(), "{full:?}: {}", text(&o));
            assert!(std::fs::read(&f).expect("read") == before, "{full:?} changed the bytes");
            assert_eq!(mtime(), t0, "{full:?} changed the mtime");
        }
    }
    // `info` keeps bbolt's first line, then mapwise's meta detail.
    let info = String::from_utf8(ok(&["bolt", "info", p])).expect("utf-8");
    let (metas, _) = go_info(p);
    assert!(info.starts_with(&format!("Page Size: {}\n", metas["meta0"]["page_size"])), "{info}");
}

#[test]
fn writers_take_the_exclusive_lock_and_readers_share() {
    use mapwise_native::engine::bolt::{Db, Options};
    let dir = tempdir();
    let f = copy(dir.path(), "small.db");
    let p = s(&f);
    {
        // A reader holds the shared lock: reads go on, a write waits and
        // gives up after --timeout (exit 2), leaving the file as it was.
        let _reader = Db::open(&f, &Options::default()).expect("open read-only");
        let before = std::fs::read(&f).expect("read");
        ok(&["bolt", "get", p, "alpha", "key-001", "--timeout", "0.3"]);
        let o = run_mapwise(&["bolt", "put", p, "alpha", "k", "v", "--timeout", "0.3"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("timeout"), "{}", text(&o));
        assert!(std::fs::read(&f).expect("read") == before);
    }
    {
        // A writer holds the exclusive lock: reads wait too.
        let _writer = Db::open(&f, &Options::read_write()).expect("open read-write");
        let o = run_mapwise(&["bolt", "keys", p, "alpha", "--timeout", "0.3"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("timeout"), "{}", text(&o));
    }
    // Unlocked, the write goes through.
    ok(&["bolt", "put", p, "alpha", "k", "v", "--timeout", "0.3"]);
    assert_eq!(
        String::from_utf8(oracle(&["get", p, "alpha", &hex(b"k")])).expect("utf-8"),
        format!("{}\n", hex(b"v"))
    );
}

/// A freelist that lists a live page opens (neither bbolt nor our engine
/// walks the tree at open) but fails the oracle's check. A commit would
/// hand that page out again and destroy what it holds, as Go bbolt's own
/// `Put` does; `put` and `del` check first, refuse, and leave every byte.
#[test]
fn put_and_del_refuse_a_file_whose_freelist_lists_a_live_page() {
    let dir = tempdir();
    let f = copy(dir.path(), "small.db");
    let p = s(&f);
    let pages = String::from_utf8(oracle(&["pages", p])).expect("utf-8");
    let id_of = |kind: &str| -> u64 {
        pages
            .lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                let id = w.next()?.parse().ok()?;
                (w.next()? == kind).then_some(id)
            })
            .unwrap_or_else(|| panic!("no {kind} page in\n{pages}"))
    };
    let (freelist, leaf) = (id_of("freelist"), id_of("leaf"));
    // The freelist page keeps its count in the header; its first id sits
    // right after the 16-byte page header.
    let mut bytes = std::fs::read(&f).expect("read");
    let at = usize::try_from(freelist * 4096 + 16).expect("offset");
    bytes[at..at + 8].copy_from_slice(&leaf.to_le_bytes());
    std::fs::write(&f, &bytes).expect("write");
    let (passed, out, _) = oracle_run(&["check", p]);
    assert!(!passed || out.trim_end() != "OK", "the oracle must see the damage:\n{out}");
    for args in [
        &["bolt", "put", p, "alpha", "new-key", "v"][..],
        &["bolt", "del", p, "alpha", "key-001"][..],
    ] {
        let o = run_mapwise(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(text(&o).contains("fails check"), "{args:?}: {}", text(&o));
        assert!(std::fs::read(&f).expect("read") == bytes, "{args:?} wrote");
    }
}

/// A database whose creator died before its first write is a file of 0
/// bytes; bbolt's `Open` initialises it, and so does `put`, after which
/// the oracle reads back what was put.
#[test]
fn put_initialises_an_empty_file_as_bbolt_open_does() {
    let dir = tempdir();
    let f = dir.path().join("empty.db");
    std::fs::write(&f, b"").expect("create");
    let p = s(&f);
    ok(&["bolt", "put", p, "b", "k", "v", "--create-buckets"]);
    oracle_check(&f);
    assert_eq!(
        String::from_utf8(oracle(&["get", p, "b", &hex(b"k")])).expect("utf-8"),
        format!("{}\n", hex(b"v"))
    );
}
