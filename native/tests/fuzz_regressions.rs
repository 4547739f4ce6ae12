//! Every input a fuzz target once failed on (`tests/regressions/TARGET/`),
//! and every seed of the fuzz corpus (`fuzz/seeds/TARGET/`), replayed
//! through the very harness function the target runs (`fuzz/src/lib.rs`,
//! included here), so `cargo test --workspace` keeps fixed crashes fixed
//! without building libFuzzer.

use std::path::{Path, PathBuf};

use crate::harness;

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    v.sort();
    v
}

fn replay(root: &str) -> usize {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join(root);
    let mut n = 0;
    for (name, run) in harness::TARGETS {
        for path in inputs(&base.join(name)) {
            let bytes = std::fs::read(&path).expect("read input");
            eprintln!("{name}: {}", path.display());
            run(&bytes);
            n += 1;
        }
    }
    n
}

#[test]
fn fuzz_regressions_stay_fixed() {
    assert!(replay("tests/regressions") > 0, "no regression inputs found");
}

#[test]
fn fuzz_seeds_pass() {
    assert!(replay("../fuzz/seeds") > 0, "no seeds found");
}
