//! Random definitions and random update sequences, applied by rrdtool and
//! by mapwise to copies of the same file (made by `mapwise rrd create`,
//! so every case also checks that rrdtool accepts files mapwise creates):
//! the files must be byte-identical, and `dump`, `info` and `fetch` of the
//! result print the same in both. The I/O mode rotates through all four
//! from case to case; every third case passes five arguments per update
//! call (the Holt-Winters smoother runs at most once per call).
//!
//! The sequences cover gaps beyond the heartbeat, counter wraps (32-bit
//! and one 64-bit), unknowns, values outside min/max, fractional times,
//! COMPUTE data sources and Holt-Winters archives. 40 cases by default;
//! `MAPWISE_RRD_CASES=N` runs N.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use mapwise_native::engine::rrd::{CreateOptions, IoMode};
use mapwise_testkit::assert_same_bytes;
use mapwise_testkit::rrd::{apply, set_writable};
use proptest::prelude::*;
use proptest::test_runner::Config;

use super::{mw, ok, rt};
use crate::support::{assert_same_text, rrd_oracle_out, tempdir};

const TYPES: [&str; 6] = ["GAUGE", "COUNTER", "DERIVE", "ABSOLUTE", "DCOUNTER", "DDERIVE"];
const CFS: [&str; 4] = ["AVERAGE", "MIN", "MAX", "LAST"];
const XFF: [&str; 4] = ["0", "0.25", "0.5", "0.9"];

#[derive(Debug, Clone)]
struct Defs {
    step: u64,
    start: u64,
    /// (type, heartbeat in steps, bounds kind)
    ds: Vec<(usize, u64, usize)>,
    compute: bool,
    /// (cf, xff, pdps per row, rows)
    rras: Vec<(usize, usize, u64, u64)>,
    /// (multiplicative, period, rows per period, alpha, beta)
    hw: Option<(bool, u64, u64, usize, usize)>,
}

impl Defs {
    fn heartbeat(&self, i: usize) -> u64 {
        self.step * (1 + self.ds.get(i).map_or(1, |d| d.1))
    }

    fn args(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (i, &(t, _, b)) in self.ds.iter().enumerate() {
            let kind = TYPES[t];
            let bounds = match (b, kind) {
                (0, _) => "U:U",
                (1, _) => "0:U",
                (_, "GAUGE") => "-20:80",
                (_, "DERIVE" | "DDERIVE") => "-30:30",
                _ => "0:100",
            };
            v.push(format!("DS:d{i}:{kind}:{}:{bounds}", self.heartbeat(i)));
        }
        if self.compute {
            let expr = if self.ds.len() >= 2 { "d0,d1,+,2,/" } else { "d0,10,*,3,-" };
            v.push(format!("DS:cmp:COMPUTE:{expr}"));
        }
        for &(cf, xff, steps, rows) in &self.rras {
            v.push(format!("RRA:{}:{}:{steps}:{rows}", CFS[cf], XFF[xff]));
        }
        if let Some((mult, period, k, a, b)) = self.hw {
            let name = if mult { "MHWPREDICT" } else { "HWPREDICT" };
            let alpha = ["0.1", "0.5", "0.9"][a];
            let beta = ["0.0035", "0.1", "0.5"][b];
            v.push(format!("RRA:{name}:{}:{alpha}:{beta}:{period}", period * k));
        }
        v
    }
}

fn defs() -> impl Strategy<Value = Defs> {
    (
        prop_oneof![Just(1u64), Just(10), Just(60), Just(300)],
        0u64..100_000,
        prop::collection::vec((0usize..6, 1u64..4, 0usize..3), 1..=3),
        any::<bool>(),
        prop::collection::vec(
            (0usize..4, 0usize..4, prop_oneof![1u64..4, Just(6), Just(12)], 2u64..40),
            1..=4,
        ),
        prop::option::of((any::<bool>(), 2u64..10, 1u64..4, 0usize..3, 0usize..3)),
    )
        .prop_map(|(step, off, ds, compute, rras, hw)| Defs {
            step,
            start: 1_600_000_000 + off,
            ds,
            compute,
            rras,
            hw,
        })
}

/// One update: how the time moves and two random words for the values.
#[derive(Debug, Clone)]
struct Step {
    dt: u8,
    r1: u32,
    r2: u32,
    frac: bool,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (0u8..12, any::<u32>(), any::<u32>(), prop::bool::weighted(0.2))
            .prop_map(|(dt, r1, r2, frac)| Step { dt, r1, r2, frac }),
        5..120,
    )
}

/// The spec lines: strictly increasing times, values every type accepts.
fn lines(d: &Defs, steps: &[Step]) -> Vec<String> {
    let hb = (0..d.ds.len()).map(|i| d.heartbeat(i)).min().unwrap_or(d.step * 2);
    let mut t_ms: u64 = d.start * 1000;
    let mut counters: Vec<u64> = vec![4_294_967_295 - 3_000_000; d.ds.len()];
    let mut derive: Vec<i64> = vec![0; d.ds.len()];
    let mut floats: Vec<f64> = vec![1000.0; d.ds.len()];
    let mut wrapped64 = false;
    let mut out = Vec::new();
    for (n, s) in steps.iter().enumerate() {
        let r = u64::from(s.r1);
        let dt = match s.dt {
            0..=5 => 1 + r % hb.saturating_sub(1).max(1),
            6 => hb + 1 + r % (3 * hb),
            7 => d.step * (1 + r % 3),
            8 => 1,
            9 => d.step * (r % 50),
            _ => 1 + r % d.step.max(1),
        };
        t_ms += dt.max(1) * 1000;
        if s.frac {
            t_ms += u64::from(s.r2 % 1000);
        }
        let time = if t_ms.is_multiple_of(1000) {
            format!("{}", t_ms / 1000)
        } else {
            format!("{}.{:03}", t_ms / 1000, t_ms % 1000)
        };
        let mut vals = Vec::new();
        for (i, &(t, _, _)) in d.ds.iter().enumerate() {
            let w = u64::from(s.r2.rotate_left(7 * i as u32)) ^ (r << (i + 1));
            if w % 20 == 0 {
                vals.push("U".to_owned());
                continue;
            }
            let v = match TYPES[t] {
                "GAUGE" => format!("{:.4}", (w % 1_200_000) as f64 / 10_000.0 - 30.0),
                "ABSOLUTE" => format!("{}", w % 5000),
                "COUNTER" => {
                    if !wrapped64 && n == steps.len() / 2 && w % 3 == 0 {
                        wrapped64 = true;
                        counters[i] = 1200;
                        "18446744073709550000".to_owned()
                    } else {
                        let inc = if w % 37 == 0 { w % 10_000_000 } else { w % 100_000 };
                        counters[i] = (counters[i] + inc) % (1 << 32);
                        format!("{}", counters[i])
                    }
                }
                "DERIVE" => {
                    derive[i] += (w % 20_001) as i64 - 10_000;
                    format!("{}", derive[i])
                }
                "DCOUNTER" => {
                    if w % 29 == 0 {
                        floats[i] -= 50.5;
                    } else {
                        floats[i] += (w % 100_000) as f64 / 100.0;
                    }
                    format!("{:.3}", floats[i])
                }
                _ => {
                    floats[i] += ((w % 20_001) as f64 - 10_000.0) / 100.0;
                    format!("{:.3}", floats[i])
                }
            };
            vals.push(v);
        }
        out.push(format!("{time}:{}", vals.join(":")));
    }
    out
}

static CASE: AtomicUsize = AtomicUsize::new(0);

fn cases() -> u32 {
    std::env::var("MAPWISE_RRD_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(40)
}

fn run_case(dir: &Path, d: &Defs, steps: &[Step]) -> Result<(), TestCaseError> {
    let n = CASE.fetch_add(1, Ordering::Relaxed);
    let mode = IoMode::ALL[n % IoMode::ALL.len()];
    let ours = dir.join(format!("p{n}.rrd"));
    let theirs = dir.join(format!("p{n}-rrdtool.rrd"));
    let o = CreateOptions {
        step: Some(d.step.to_string()),
        start: Some(d.start.to_string()),
        seed: Some(n as u64),
        ..CreateOptions::default()
    };
    mapwise_native::engine::rrd::create(&ours, &o, &d.args())
        .map_err(|e| TestCaseError::fail(format!("create {:?}: {e}", d.args())))?;
    std::fs::copy(&ours, &theirs).expect("copy");
    set_writable(&theirs);
    let spec = lines(d, steps);
    let spec_path = dir.join(format!("p{n}.txt"));
    std::fs::write(&spec_path, spec.join("\n") + "\n").expect("spec");
    // Every third case passes 5 arguments per update call (the smoother
    // then runs at most once per 5 lines, in both).
    let batch = n % 3 == 2;
    let how = if batch { "batch:5" } else { "pipe" };
    rrd_oracle_out(&[
        "apply",
        theirs.to_str().expect("utf-8"),
        spec_path.to_str().expect("utf-8"),
        "--mode",
        how,
    ]);
    if batch {
        let o = mapwise_native::engine::rrd::UpdateOptions {
            io: mode,
            ..mapwise_native::engine::rrd::UpdateOptions::default()
        };
        for chunk in spec.chunks(5) {
            let out = mapwise_native::engine::rrd::update(&ours, &o, chunk)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            if let Some(e) = out.error {
                return Err(TestCaseError::fail(e.to_string()));
            }
        }
    } else {
        apply(&ours, &spec, mode);
    }
    let a = std::fs::read(&ours).expect("ours");
    let b = std::fs::read(&theirs).expect("theirs");
    if a != b {
        // Show the first differing dump line, then the byte.
        let da = ok("mapwise dump", &mw(dir, &["dump", ours.to_str().expect("utf-8")]));
        let db = ok("rrdtool dump", &rt(dir, &["dump", theirs.to_str().expect("utf-8")]));
        assert_same_text(&format!("dump of {:?} via {} ({how})", d.args(), mode.name()), &da, &db);
        assert_same_bytes(&format!("{:?} via {} ({how})", d.args(), mode.name()), &a, &b);
    }
    let da = ok("mapwise dump", &mw(dir, &["dump", ours.to_str().expect("utf-8")]));
    let db = ok("rrdtool dump", &rt(dir, &["dump", ours.to_str().expect("utf-8")]));
    assert_same_text(&format!("dump of {:?}", d.args()), &da, &db);
    let cf = CFS[d.rras.first().map_or(0, |r| r.0)];
    let last = ok("last", &mw(dir, &["last", ours.to_str().expect("utf-8")]));
    let last = String::from_utf8_lossy(&last).trim().to_owned();
    let start = d.start.to_string();
    let p = ours.to_str().expect("utf-8");
    for args in [&["info", p][..], &["fetch", p, cf, "-s", &start, "-e", &last]] {
        let ours_out = ok("mapwise", &mw(dir, args));
        let theirs_out = ok("rrdtool", &rt(dir, args));
        assert_same_text(&format!("{args:?} of {:?}", d.args()), &ours_out, &theirs_out);
    }
    let _ = std::fs::remove_file(&ours);
    let _ = std::fs::remove_file(&theirs);
    let _ = std::fs::remove_file(&spec_path);
    Ok(())
}

#[test]
fn random_definitions_and_updates_match_rrdtool() {
    let dir = tempdir();
    let mut runner = proptest::test_runner::TestRunner::new(Config {
        cases: cases(),
        max_shrink_iters: 200,
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::SourceParallel("proptest-regressions"),
        )),
        ..Config::default()
    });
    let r = runner.run(&(defs(), steps()), |(d, s)| run_case(dir.path(), &d, &s));
    if let Err(e) = r {
        panic!("{e}");
    }
}
