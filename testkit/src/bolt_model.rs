//! A model of a bbolt database's logical content (nested buckets of
//! key/value pairs) and its canonical dump text, as the bbolt peer prints
//! it (`peers/bolt/README.md`, "Dump format"). Tests compare the peer's
//! dump of a file against the model's text; [`oracle_check`] and
//! [`oracle_agrees`] judge a file our engine wrote.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use mapwise_native::engine::bolt::{Db, Options};

/// The bbolt peer's binary (`peers/bolt/peer build` prints its directory;
/// the script execs this same binary for `check` and `dump`). Calling it
/// directly saves the script's start-up, so thousands of files can be
/// judged in seconds.
pub fn oracle_binary() -> std::path::PathBuf {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let out = crate::peers::bolt_out(&["build"]);
        let dir = String::from_utf8(out).expect("utf-8");
        std::path::PathBuf::from(dir.trim()).join("boltoracle")
    })
    .clone()
}

/// Run the oracle binary: `(exit ok, stdout, stderr)`.
pub fn oracle_run(args: &[&str]) -> (bool, String, String) {
    let out = crate::run_limited(
        std::process::Command::new(oracle_binary()).args(args),
        std::time::Duration::from_secs(120),
    );
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run the oracle binary with `args`; panics unless it exits 0 (the
/// `peers/bolt/peer` script's contract, without its start-up cost).
pub fn oracle_fast(args: &[&str]) -> Vec<u8> {
    let out = crate::run_limited(
        std::process::Command::new(oracle_binary()).args(args),
        std::time::Duration::from_secs(300),
    );
    assert!(
        out.status.success(),
        "oracle {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// One entry of a bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A plain value.
    Value(Vec<u8>),
    /// A nested bucket.
    Bucket(Bucket),
}

/// A bucket: its sequence and entries in key order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bucket {
    /// The bucket's sequence (`NextSequence`).
    pub seq: u64,
    /// Its keys, each a value or a nested bucket.
    pub kv: BTreeMap<Vec<u8>, Entry>,
}

impl Bucket {
    /// The bucket at `path`, mutably.
    pub fn at_mut(&mut self, path: &[Vec<u8>]) -> Option<&mut Bucket> {
        let mut b = self;
        for p in path {
            match b.kv.get_mut(p) {
                Some(Entry::Bucket(c)) => b = c,
                _ => return None,
            }
        }
        Some(b)
    }

    /// Every bucket path below (and excluding) this one, depth first.
    pub fn bucket_paths(&self) -> Vec<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        fn rec(b: &Bucket, prefix: &mut Vec<Vec<u8>>, out: &mut Vec<Vec<Vec<u8>>>) {
            for (k, e) in &b.kv {
                if let Entry::Bucket(c) = e {
                    prefix.push(k.clone());
                    out.push(prefix.clone());
                    rec(c, prefix, out);
                    prefix.pop();
                }
            }
        }
        rec(self, &mut Vec::new(), &mut out);
        out
    }
}

use mapwise_view::fmt::hex;

/// The oracle's dump text of a database whose root bucket is `root`.
pub fn dump(root: &Bucket) -> String {
    let mut out = String::new();
    fn rec(b: &Bucket, path: &mut Vec<String>, out: &mut String) {
        for (k, e) in &b.kv {
            match e {
                Entry::Value(v) => {
                    let p = if path.is_empty() { "-".to_string() } else { path.join("/") };
                    let v = if v.is_empty() { "-".into() } else { hex(v) };
                    let _ = writeln!(out, "kv {p} {} {v}", hex(k));
                }
                Entry::Bucket(c) => {
                    path.push(hex(k));
                    let _ = writeln!(out, "bucket {} seq={}", path.join("/"), c.seq);
                    rec(c, path, out);
                    path.pop();
                }
            }
        }
    }
    rec(root, &mut Vec::new(), &mut out);
    out
}

/// The logical content of a snapshot, read through our own parser.
pub fn read(file: &mapwise_core::bolt::BoltFile<'_, [u8]>) -> Bucket {
    use mapwise_core::bolt::{DumpError, Record, visit};
    let mut root = Bucket::default();
    visit(file, |rec| {
        match rec {
            Record::Bucket { path, sequence } => {
                let path: Vec<Vec<u8>> = path.iter().map(|p| p.to_vec()).collect();
                let (last, parent) = path.split_last().expect("path");
                root.at_mut(parent).expect("parent").kv.insert(
                    last.clone(),
                    Entry::Bucket(Bucket { seq: sequence, kv: BTreeMap::new() }),
                );
            }
            Record::Kv { path, key, value } => {
                let path: Vec<Vec<u8>> = path.iter().map(|p| p.to_vec()).collect();
                root.at_mut(&path)
                    .expect("bucket")
                    .kv
                    .insert(key.to_vec(), Entry::Value(value.to_vec()));
            }
        }
        Ok::<(), DumpError>(())
    })
    .expect("read the snapshot");
    root
}

/// Parse a dump text back into a model (for files whose content a test
/// did not build itself).
pub fn parse_dump(text: &str) -> Bucket {
    fn unhex(s: &str) -> Vec<u8> {
        fn nibble(c: u8) -> u8 {
            match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                _ => panic!("not a hex digit: {c}"),
            }
        }
        s.as_bytes().chunks_exact(2).map(|p| nibble(p[0]) << 4 | nibble(p[1])).collect()
    }
    let mut root = Bucket::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "bucket" => {
                let path: Vec<Vec<u8>> = f[1].split('/').map(unhex).collect();
                let seq = f[2].trim_start_matches("seq=").parse().expect("seq");
                let (last, parent) = path.split_last().expect("path");
                let p = root.at_mut(parent).expect("parent bucket");
                p.kv.insert(last.clone(), Entry::Bucket(Bucket { seq, kv: BTreeMap::new() }));
            }
            "kv" => {
                let path: Vec<Vec<u8>> =
                    if f[1] == "-" { Vec::new() } else { f[1].split('/').map(unhex).collect() };
                let v = if f[3] == "-" { Vec::new() } else { unhex(f[3]) };
                root.at_mut(&path).expect("bucket").kv.insert(unhex(f[2]), Entry::Value(v));
            }
            other => panic!("unexpected dump line {other:?}"),
        }
    }
    root
}

/// Read-write options with page size `ps`.
pub fn rw(ps: u32) -> Options {
    Options { page_size: ps, ..Options::read_write() }
}

/// The oracle's check passes on `path`.
pub fn oracle_check(path: &Path) {
    let p = path.to_str().expect("utf-8");
    let out = String::from_utf8(oracle_fast(&["check", p])).expect("utf-8");
    assert_eq!(out.trim_end(), "OK", "oracle check {p}:\n{out}");
}

/// The oracle's check passes and its dump equals `model`.
pub fn oracle_agrees(path: &Path, model: &Bucket) {
    oracle_check(path);
    let p = path.to_str().expect("utf-8");
    crate::assert_same_text(
        &format!("oracle dump of {p}"),
        &oracle_fast(&["dump", p]),
        dump(model).as_bytes(),
    );
}

/// Our own dump of the current snapshot.
pub fn our_dump(db: &Db) -> String {
    let tx = db.begin().expect("read tx");
    let mut s = String::new();
    mapwise_core::bolt::dump(&tx.file(), &mut s).expect("dump");
    s
}
