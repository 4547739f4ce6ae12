//! Every real bbolt file of the corpus reads to the dump Go bbolt made of it.

use std::path::PathBuf;

use mapwise_core::bolt::{BoltFile, WalkOptions, dump, walk};

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/bolt").join(name)
}

const CORPUS: &[&str] =
    &["small", "overflow", "freelist", "freelist-1k", "nofreelistsync", "etcd-small"];

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
        assert!(w.layout.problems.is_empty(), "{name}: {:?}", w.layout.problems);
    }
}

/// When damage cuts off part of the tree, pages the walk did not reach
/// may still be in use: they are `unknown`, never `free` (which a writer
/// would reuse) and never leaks.
#[test]
fn lost_subtrees_leave_unreached_pages_unknown() {
    use mapwise_core::layout::Kind;
    for name in ["nofreelistsync", "small"] {
        let mut bytes = std::fs::read(testdata(&format!("{name}.db"))).unwrap();
        let (root, ps, free_before) = {
            let file = BoltFile::open(bytes.as_slice()).unwrap();
            let w = walk(&file, WalkOptions::default());
            let c = w.layout.kind_counts(u64::from(w.layout.page_size));
            let free = c.bytes[Kind::Free.index()] + c.bytes[Kind::Pending.index()];
            (usize::try_from(file.meta().root).unwrap(), file.page_size() as usize, free)
        };
        // The root page no longer says who it is: its whole tree is lost.
        bytes[root * ps] ^= 0xff;
        let file = BoltFile::open(bytes.as_slice()).unwrap();
        let w = walk(&file, WalkOptions::default());
        let counts = w.layout.kind_counts(u64::from(w.layout.page_size));
        assert!(counts.bytes[Kind::Unknown.index()] > 0, "{name}: {counts:?}");
        assert_eq!(counts.bytes[Kind::Unreachable.index()], 0, "{name}");
        assert_eq!(counts.bytes[Kind::Leaf.index()], 0, "{name}");
        let free_after = counts.bytes[Kind::Free.index()] + counts.bytes[Kind::Pending.index()];
        if name == "nofreelistsync" {
            // Without a stored freelist nothing can be called free.
            assert_eq!(free_after, 0, "{name}");
        } else {
            // The stored freelist still says which pages are free.
            assert!(free_after > 0 && free_before > 0, "{name}");
        }
        assert!(
            w.layout.problems.iter().any(|p| p.to_string().contains(&format!("page {root}"))),
            "{name}: {:?}",
            w.layout.problems
        );
        assert!(
            !w.layout.problems.iter().any(|p| matches!(p, mapwise_core::Error::Unreachable { .. })),
            "{name}"
        );
    }
}

#[test]
fn an_unsure_layout_has_no_verdicts() {
    use mapwise_core::bolt::FreelistInfo;
    use mapwise_core::layout::Kind;
    let mut bytes = std::fs::read(testdata("small.db")).unwrap();
    let (root, ps, freelist) = {
        let file = BoltFile::open(bytes.as_slice()).unwrap();
        let m = file.meta();
        (m.root, u64::from(file.page_size()), m.freelist)
    };
    // The root page and the freelist page no longer say who they are.
    for pgid in [root, freelist] {
        bytes[usize::try_from(pgid * ps).unwrap()] ^= 0xff;
    }
    let file = BoltFile::open(bytes.as_slice()).unwrap();
    let w = walk(&file, WalkOptions::default());
    let counts = |l: &mapwise_core::layout::Layout| l.kind_counts(u64::from(l.page_size));
    let before = counts(&w.layout);
    assert!(before.bytes[Kind::Corrupt.index()] > 0, "{before:?}");
    assert!(!w.layout.problems.is_empty());
    assert!(matches!(w.freelist, FreelistInfo::Unreadable { .. }));
    let u = w.clone().unsure();
    let after = counts(&u.layout);
    assert_eq!(after.bytes[Kind::Corrupt.index()], 0, "{after:?}");
    assert_eq!(
        after.bytes[Kind::Unknown.index()],
        before.bytes[Kind::Unknown.index()] + before.bytes[Kind::Corrupt.index()]
    );
    assert!(u.layout.problems.is_empty());
    assert_eq!(u.freelist, FreelistInfo::NotRead { pgid: freelist }, "{:?}", u.freelist);
    // Every other region stays as the walk found it.
    for (a, b) in w.layout.regions.iter().zip(u.layout.regions.iter()) {
        assert_eq!((a.offset, a.len), (b.offset, b.len));
        if a.kind != Kind::Corrupt {
            assert_eq!(a.kind, b.kind);
        }
    }
}
