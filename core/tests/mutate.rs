//! Damaged bbolt files never make the core panic or loop: random byte
//! flips, truncations and splices of real files go through open, walk,
//! dump, page decoding and every cursor movement, and each returns a
//! value or an error.

use std::path::PathBuf;

use mapwise_core::bolt::{BoltFile, Bucket, WalkOptions, dump, page_detail, pages, walk};
use proptest::prelude::*;

fn corpus(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/bolt").join(name);
    std::fs::read(p).expect("corpus file")
}

/// Everything a front end does with a file, on `bytes`.
fn exercise(bytes: &[u8]) {
    let Ok(file) = BoltFile::open(bytes) else {
        return;
    };
    let w = walk(&file, WalkOptions::default());
    let _ = pages(&file, &w.layout);
    let mut out = String::new();
    let _ = dump(&file, &mut out);
    for pgid in 0..file.file_pages().min(64) {
        let _ = page_detail(&file, pgid, 100);
    }
    let root = Bucket::root_of(&file);
    let mut c = root.cursor();
    // Bounded walks in both directions and seeks; a cycle must end in an
    // error, never in an endless loop (each loop is capped far above any
    // legitimate count for these small files).
    let mut n = 0;
    let mut it = c.first();
    while let Ok(Some(item)) = it {
        n += 1;
        assert!(n < 100_000, "forward scan does not end");
        if item.is_bucket()
            && let Ok(Some(b)) = c.bucket()
        {
            let mut bc = b.cursor();
            let mut m = 0;
            let mut x = bc.last();
            while let Ok(Some(_)) = x {
                m += 1;
                assert!(m < 100_000, "backward scan does not end");
                x = bc.prev();
            }
            let _ = bc.seek(b"key-5");
            let _ = b.get(b"key-001");
        }
        it = c.next();
    }
}

fn flipped(base: &[u8], flips: &[(usize, u8)]) -> Vec<u8> {
    let mut b = base.to_vec();
    for &(pos, mask) in flips {
        let i = pos % b.len();
        b[i] ^= mask | 1;
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_flips_in_small(flips in prop::collection::vec((0usize..65536, any::<u8>()), 1..8)) {
        exercise(&flipped(&corpus("small.db"), &flips));
    }

    #[test]
    fn random_flips_in_page_headers(page in 0usize..128, field in 0usize..16, mask in any::<u8>(), name in prop::sample::select(vec!["overflow.db", "freelist.db", "etcd-small.db", "freelist-1k.db"])) {
        let base = corpus(name);
        let ps = if name == "freelist-1k.db" { 1024 } else { 4096 };
        let pos = (page * ps + field) % base.len();
        exercise(&flipped(&base, &[(pos, mask)]));
    }

    #[test]
    fn truncations(cut in 0usize..524_288, name in prop::sample::select(vec!["overflow.db", "freelist.db", "nofreelistsync.db"])) {
        let base = corpus(name);
        exercise(&base[..cut.min(base.len())]);
    }

    #[test]
    fn spliced_pages(src in 0usize..128, dst in 2usize..128) {
        // Copy one page over another: duplicated ids, shared children.
        let mut b = corpus("overflow.db");
        let (s, d) = (src * 4096 % b.len(), dst * 4096 % b.len());
        let page = b[s..s + 4096].to_vec();
        b[d..d + 4096].copy_from_slice(&page);
        exercise(&b);
    }
}

#[test]
fn unmutated_corpus_exercises() {
    for name in [
        "small.db",
        "overflow.db",
        "freelist.db",
        "etcd-small.db",
        "freelist-1k.db",
        "nofreelistsync.db",
    ] {
        eprintln!("{name}");
        exercise(&corpus(name));
    }
}
