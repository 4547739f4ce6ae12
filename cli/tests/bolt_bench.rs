//! `mapwise bolt bench` replays the oracle's seeded workload exactly: in
//! every mode, growing the file as bbolt grows it, with page sizes that are
//! not powers of two. Nothing here is timed.

use std::path::Path;

use mapwise_testkit::bolt_model::{oracle_fast, oracle_run};

use crate::support::{assert_same_text, run_mapwise, tempdir};

fn json(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line in {text:?}"));
    serde_json::from_str(line).expect("JSON")
}

/// One workload through both benches: `mapwise bolt bench` into
/// `ours-NAME.db` and the oracle's `bench` into `go-NAME.db` under `dir`,
/// with the same `flags`; both must succeed. Returns the two paths and the
/// two standard outputs.
fn bench_both(dir: &Path, name: &str, flags: &[&str]) -> (String, String, Vec<u8>, String) {
    let path = |who: &str| dir.join(format!("{who}-{name}.db")).to_str().expect("utf-8").to_owned();
    let (ours, go) = (path("ours"), path("go"));
    let o = run_mapwise(&[&["bolt", "bench", &ours][..], flags].concat());
    assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
    let (ok, go_out, go_err) = oracle_run(&[&["bench", &go][..], flags].concat());
    assert!(ok, "oracle {name}: {go_err}");
    (ours, go, o.stdout, go_out)
}

#[test]
fn bench_replays_the_oracle_workload_in_every_mode() {
    let dir = tempdir();
    for write in ["seq", "rnd", "seq-nest", "rnd-nest"] {
        for read in ["seq", "rnd"] {
            // 2000 puts in batches of 300: a short last batch, seven
            // commits, several leaves per bucket.
            let flags = [
                "--write-mode",
                write,
                "--read-mode",
                read,
                "--count",
                "2000",
                "--batch-size",
                "300",
                "--key-size",
                "16",
                "--value-size",
                "100",
                "--verify",
                "--json",
            ];
            let (ours, go, ours_out, go_out) =
                bench_both(dir.path(), &format!("{write}-{read}"), &flags);
            let (ours, go) = (ours.as_str(), go.as_str());
            let (a, b) = (json(&ours_out), json(go_out.as_bytes()));
            for key in [
                "write_ops",
                "read_ops",
                "read_passes",
                "page_size",
                "count",
                "batch_size",
                "key_size",
                "value_size",
                "write_mode",
                "read_mode",
                "seed",
            ] {
                assert_eq!(a[key], b[key], "{write}/{read}: {key}");
            }
            assert_eq!(a["read_ops"], 2000, "{write}/{read}");
            assert_same_text(
                &format!("dump of {write}/{read}"),
                &oracle_fast(&["dump", ours]),
                &oracle_fast(&["dump", go]),
            );
            let (ok, check, _) = oracle_run(&["check", ours]);
            assert!(ok, "{write}/{read}: {check}");
            assert_eq!(
                std::fs::metadata(ours).unwrap().len(),
                std::fs::metadata(go).unwrap().len(),
                "{write}/{read}: file length"
            );
        }
    }
}

/// The file grows as bbolt 1.3.6 grows it: to the whole mapping while the
/// mapping is under 16 MiB, then (from a 16 MiB mapping on, and only when
/// the freelist's allocation raised the high-water mark) to the need +
/// 16 MiB. 40000 puts of 116 bytes pass the 16 MiB mapping.
#[test]
fn the_file_grows_as_bbolt_grows_it() {
    let dir = tempdir();
    for write in ["seq", "rnd"] {
        let flags = [
            "--write-mode",
            write,
            "--count",
            "40000",
            "--batch-size",
            "1000",
            "--key-size",
            "16",
            "--value-size",
            "100",
            "--no-sync",
        ];
        let (ours, go, _, _) = bench_both(dir.path(), write, &flags);
        let (a, b) = (std::fs::metadata(ours).unwrap().len(), std::fs::metadata(go).unwrap().len());
        assert!(b > 16 << 20, "{write}: the workload passes 16 MiB ({b})");
        assert_eq!(a, b, "{write}: file length, ours vs bbolt 1.3.6");
    }
}

/// bbolt takes any page size its options name (`PageSize = 3000` makes a
/// working file): files Go bbolt writes with such sizes read as Go reads
/// them, and ours with the same workload are the same bytes.
#[test]
fn page_sizes_that_are_not_powers_of_two_work_both_ways() {
    let dir = tempdir();
    for ps in ["3000", "1536"] {
        let flags = [
            "--write-mode",
            "rnd",
            "--count",
            "2000",
            "--batch-size",
            "300",
            "--page-size",
            ps,
            "--no-sync",
        ];
        let (ours, go, _, _) = bench_both(dir.path(), ps, &flags);
        let (ours, go) = (ours.as_str(), go.as_str());
        // Go's file, read by us as Go reads it.
        let dump = run_mapwise(&["bolt", "dump", go]);
        assert!(dump.status.success(), "{ps}: {}", String::from_utf8_lossy(&dump.stderr));
        assert_same_text(&format!("dump of Go's {ps}"), &dump.stdout, &oracle_fast(&["dump", go]));
        let check = run_mapwise(&["bolt", "check", go]);
        assert!(check.status.success(), "{ps}: {}", String::from_utf8_lossy(&check.stdout));
        // Ours, checked by Go and equal to Go's.
        let (ok, out, _) = oracle_run(&["check", ours]);
        assert!(ok, "{ps}: {out}");
        assert_eq!(std::fs::read(ours).unwrap(), std::fs::read(go).unwrap(), "{ps}: bytes");
    }
}
