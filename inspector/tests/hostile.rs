//! The hostile-file table (`native/tests/hostile_cases.rs`) through the
//! inspector's subcommands: `layout`, `check` and `pages` on a sample of
//! the cases end within a time limit with exit 0, 1 or 2, never a panic,
//! and a failure names the structure and where it is. (The native suite
//! runs every case through core, `mapwise` and the writers.)

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::run;

#[path = "../../native/tests/hostile_cases.rs"]
mod cases;

#[test]
fn hostile_files_through_inspector_subcommands() {
    let started = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace");
    let all = cases::cases(root, false);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut fails = Vec::new();
    let mut ran = 0;
    for c in all.iter().step_by(13) {
        let path = dir.path().join("case");
        std::fs::write(&path, &c.bytes).expect("write");
        let p = path.to_str().expect("utf-8");
        for sub in ["layout", "check", "pages"] {
            if sub == "pages" && c.fmt != cases::Fmt::Bolt {
                continue;
            }
            ran += 1;
            let r = run(&[sub, p], Duration::from_secs(30));
            if !matches!(r.code, Some(0..=2)) || r.stderr.contains("panicked") {
                fails.push(format!(
                    "{}: inspector {sub} exited {:?}: {}",
                    c.name, r.code, r.stderr
                ));
            } else if r.code != Some(0) {
                let text = format!("{}{}", r.stderr, r.stdout);
                if !cases::names_a_place(&text) {
                    fails.push(format!(
                        "{}: inspector {sub} failed without naming a place: {}",
                        c.name,
                        text.lines().next().unwrap_or_default()
                    ));
                }
            }
        }
    }
    eprintln!(
        "hostile files through the inspector: {ran} runs in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    cases::assert_no_failures("hostile files through the inspector", &fails);
}
