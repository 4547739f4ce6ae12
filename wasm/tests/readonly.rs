//! Readers never write, for the browser viewer's view
//! layer: every call the page makes (`Viewer::open`, the summary, the map,
//! cells, buckets and keys, decoded pages, hex, revlog entries, RRD rows)
//! runs natively over a `pread` source on copies of real files, and every
//! file's bytes, length, inode, mtime and ctime are the same afterwards.
//! (In the browser the module only ever sees a `Blob`; this pins the view
//! layer itself. The command-line readers and the TUI are checked in
//! `inspector/tests/readonly.rs`.)

use std::fs::File;
use std::path::Path;

use mapwise_native::os::io::PreadSource;
use mapwise_wasm::view::Viewer;

use mapwise_testkit::fileprint::{copy_tree, differences, prints};

#[test]
fn the_view_layer_never_writes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata");
    let dir = tempfile::Builder::new()
        .prefix("wasm-readonly-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temp dir");
    let names = [
        "bolt/etcd-small.db",
        "bolt/small.db",
        "bolt/overflow.db",
        "rrd/hw.rrd",
        "rrd/mixed.rrd",
        "revlog/00changelog.i",
        "revlog/data/big.txt.i",
    ];
    for n in names {
        let to = dir.path().join(n.replace('/', "-"));
        copy_tree(&root.join(n), &to);
    }
    let before = prints(dir.path());
    let mut calls = 0u64;
    for path in before.keys() {
        let src = PreadSource::new(File::open(path).expect("open")).expect("pread source");
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let v = Viewer::open(src, name.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let s = v.summary();
        assert!(s.fatal.is_none(), "{name}: {:?}", s.fatal);
        let pages = v.pages();
        let cells = u32::try_from(pages).unwrap();
        assert_eq!(v.map(0, 1, cells).len(), usize::try_from(pages).unwrap());
        calls += 2;
        for p in 0..pages {
            let _ = v.cell(p, 1);
            let _ = v.page(p);
            calls += 2;
        }
        v.hex(0, 16 * 1024).unwrap_or_else(|e| panic!("{name}: hex: {e}"));
        calls += 1;
        // Every group (buckets, archives), depth first, with a bucket's
        // first screen of keys.
        let mut parents = vec![None];
        while let Some(parent) = parents.pop() {
            for g in v.children(parent, 0, 1000).items {
                if s.format == "bolt" {
                    v.keys(g.index, None, 100)
                        .unwrap_or_else(|e| panic!("{name}: keys of {}: {e}", g.path));
                    calls += 1;
                }
                parents.push(Some(g.index));
                calls += 1;
            }
            calls += 1;
        }
        if let Some(r) = &s.facts.revlog {
            assert!(r.revisions > 0, "{name}");
            v.entries(i64::try_from(r.revisions).unwrap() - 1, 100, true)
                .unwrap_or_else(|e| panic!("{name}: entries: {e}"));
            v.entries(0, 100, false).unwrap_or_else(|e| panic!("{name}: entries: {e}"));
            calls += 2;
        }
        if let Some(r) = &s.facts.rrd {
            for i in 0..r.rras.len() {
                v.rra_rows(u32::try_from(i).unwrap(), 0, 100)
                    .unwrap_or_else(|e| panic!("{name}: rra {i}: {e}"));
                calls += 1;
            }
        }
    }
    let after = prints(dir.path());
    let diff = differences(&before, &after);
    assert!(diff.is_empty(), "files changed:\n{}", diff.join("\n"));
    eprintln!(
        "{calls} view calls on {} files left them byte-identical, same mtime and ctime",
        after.len()
    );
}
