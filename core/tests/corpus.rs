//! Every real bbolt file of the corpus reads to the dump Go bbolt made of it.

use std::path::PathBuf;

use mapwise_core::bolt::{BoltFile, WalkOptions, dump, walk};

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/bolt")
        .join(name)
}

const CORPUS: &[&str] = &[
    "small",
    "overflow",
    "freelist",
    "freelist-1k",
    "nofreelistsync",
    "etcd-small",
];

#[test]
fn dumps_equal_go_bbolt() {
    for name in CORPUS {
        let bytes = std::fs::read(testdata(&format!("{name}.db"))).unwrap();
        let want = std::fs::read_to_string(testdata(&format!("{name}.dump.txt"))).unwrap();
        let file = BoltFile::open(bytes.as_slice()).unwrap();
        let mut got = String::new();
        dump(&file, &mut got).unwrap();
        assert!(got == want, "{name}: dump differs from Go bbolt's");
    }
}

#[test]
fn corpus_walks_clean() {
    for name in CORPUS {
        let bytes = std::fs::read(testdata(&format!("{name}.db"))).unwrap();
        let file = BoltFile::open(bytes.as_slice()).unwrap();
        let w = walk(&file, WalkOptions::default());
        assert!(
            w.layout.problems.is_empty(),
            "{name}: {:?}",
            w.layout.problems
        );
    }
}
