//! `cargo xtask bench etcd`: `inspector etcd` on the db of a running etcd filled with
//! Kubernetes-like history, beside what an operator runs today to learn a defrag's gain
//! (`etcdctl snapshot save` and `bbolt compact` of the copy) and one sequential read of the
//! db; then the forecasts against a real `etcdctl defrag` and compaction.

use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

use super::cell::{self, Cell, CellRuns, Contender, Metrics, Tracing, metrics};
use super::etcd::{self, Etcd};
use super::machine::{Machine, Stamp};
use super::proc::{Cmd, Output};
use super::report::Role::{Other, Ours, Peer, Ratio};
use super::report::{Bound, Outcome, Report, Verdict, cell_table, judge, say, vars};
use super::schedule::CacheState::Cold;
use super::stats::{Summary, opt_ratio, or_dash};
use super::units::{human_size, kib};
use super::{CommonArgs, Progress, Workspace, interrupt, path_arg};

/// Long help of `cargo xtask bench etcd`.
pub const HELP: &str = include_str!("text/etcd-help.txt");
/// The report's prose ([`say`]).
const NOTES: &str = include_str!("text/etcd-notes.md");
/// Clients filling etcd at once.
const CLIENTS: usize = 4;
/// Target: ours at most this × the sequential read of the in-use pages.
const READ_TARGET: f64 = 1.2;
/// Target: ours at most this × snapshot + compact.
const ALT_TARGET: f64 = 0.1;
/// The fields of `inspector etcd --json` kept as metrics.
const FIELDS: [&str; 7] = [
    "size_bytes",
    "in_use_bytes",
    "after_defrag_bytes",
    "after_compact_defrag_bytes",
    "forecast_compact_rev",
    "revisions",
    "live_keys",
];

/// `bench etcd` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

/// `inspector etcd --json`'s [`FIELDS`].
fn parse_ours(o: &Output) -> Result<Metrics, String> {
    let v: Value = serde_json::from_str(&o.stdout).map_err(|e| format!("not JSON: {e}"))?;
    let mut m = Metrics::new();
    for k in FIELDS {
        let x = v.get(k).and_then(Value::as_f64).ok_or(format!("no `{k}`"))?;
        m.insert(k.to_owned(), x);
    }
    Ok(m)
}

/// The compact line `SRC -> DST bytes (gain=…)`: `compact_bytes` = DST.
fn parse_compact(o: &Output) -> Result<Metrics, String> {
    let line = o.stdout.lines().find(|l| l.contains(" -> ")).ok_or("no `SRC -> DST bytes`")?;
    let dst = line.split(" -> ").nth(1).and_then(|r| r.split_whitespace().next());
    let dst = dst.and_then(|d| d.parse::<f64>().ok()).ok_or(format!("not a size: {line:?}"))?;
    let written = o.written_bytes.map(|b| ("written_bytes", b as f64));
    Ok(metrics([("compact_bytes", dst)].into_iter().chain(written)))
}

/// dd's last line names the bytes it copied.
fn parse_dd(o: &Output) -> Result<Metrics, String> {
    let text = format!("{}{}", o.stdout, o.stderr);
    let line = text.lines().find(|l| l.contains("bytes") && l.contains("copied"));
    let n = line.and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok());
    n.map(|n| metrics([("read_bytes", n)])).ok_or_else(|| format!("no byte count in {text:?}"))
}

/// The db as the fill left it.
#[derive(Debug, Serialize)]
struct Db {
    path: String,
    target_bytes: u64,
    fill_s: f64,
    txns: u64,
    compact_rev: i64,
    db_size: u64,
    in_use: u64,
    revision: i64,
    etcd_version: Option<String>,
    etcd_command: String,
}

/// What the real etcd did after the runs, beside ours' forecasts.
#[derive(Debug, Serialize, Default)]
struct Real {
    defrag_bytes: u64,
    compact_rev: i64,
    compact_defrag_bytes: u64,
    forecast_defrag: Option<f64>,
    forecast_compact: Option<f64>,
}

/// Everything results.json holds; the report is rendered from it.
#[derive(Debug, Serialize)]
struct Results {
    #[serde(flatten)]
    stamp: Stamp,
    size: &'static str,
    runs: usize,
    db: Db,
    commands: Vec<String>,
    cells: Vec<CellRuns>,
    real: Real,
}

/// Fills `etcd` to `bytes` of dbSize, then compacts at three quarters of its revisions.
fn fill(etcd: &Etcd, bytes: u64, p: &Progress) -> Result<(u64, f64, i64)> {
    p.set(format!("filling etcd to {}", human_size(bytes)));
    let start = std::time::Instant::now();
    let (txns, last) = etcd
        .churn_to(bytes, 1, CLIENTS, &interrupt::raised)
        .map_err(|e| anyhow::anyhow!("filling etcd: {e}\n{}", etcd.log_tail()))?;
    interrupt::check()?;
    let secs = start.elapsed().as_secs_f64();
    let rev = last * 3 / 4;
    etcd.compact(rev, true);
    Ok((txns, secs, rev))
}

/// Runs the bench.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let (size, target) = if args.common.tiny { ("tiny", 64 << 20) } else { ("default", 2 << 30) };
    let runs = args.common.runs()?;
    etcd::ensure_installed()?;
    let peer = ws.peer("bolt")?;
    let progress = Progress::new((4 + (1 + runs) * 3) as u64);
    let build = Cmd::cargo_release("mapwise-inspector", None);
    let build_peer = Cmd::new(&peer).arg("build");
    for (what, cmd) in [("inspector (release)", &build), ("the bbolt peer", &build_peer)] {
        progress.set(format!("building {what}"));
        cmd.run(&ws.root).with_context(|| format!("cannot build {what}"))?;
        progress.inc();
    }
    let scratch = ws.bench_dir().join("scratch");
    std::fs::create_dir_all(&scratch)?;
    let etcd = etcd::start(&scratch, target * 2 + (1 << 30))?;
    let (txns, fill_s, compact_rev) = fill(&etcd, target, &progress)?;
    progress.inc();
    let status = etcd.status();
    let db_path = etcd.db();
    let db = Db {
        // As the commands take it: relative to the root they run from.
        path: ws.rel(&db_path),
        target_bytes: target,
        fill_s,
        txns,
        compact_rev,
        db_size: status.db_size,
        in_use: status.db_size_in_use,
        revision: status.revision,
        etcd_version: etcd::version(),
        etcd_command: etcd::command(&etcd),
    };
    let machine = Machine::describe(&db_path);
    progress.inc();
    let inspector = path_arg(&ws.release_bin("inspector"));
    let ours = Cmd::new(&inspector).args(["etcd", &db.path, "--json"]).metered();
    let (copy, out) = (scratch.join("etcd-snapshot.db"), scratch.join("etcd-compacted.db"));
    let (copy_s, out_s) = (path_arg(&copy), path_arg(&out));
    let alt = format!(
        "{} && {} >/dev/null && {}",
        Cmd::new("rm").args(["-f", &copy_s, &out_s]).shell(),
        etcd::snapshot_cmd(&etcd, &copy).shell(),
        Cmd::new(&peer).args(["compact", "-o", &out_s, &copy_s]).shell()
    );
    let alt = Cmd::new("sh").args(["-c", &alt]).metered();
    let count = db.db_size.div_ceil(1 << 20).to_string();
    let dd = Cmd::new("dd").args([format!("if={}", db.path).as_str(), "of=/dev/null"]);
    let dd = dd.args(["bs=1M", "iflag=direct", &format!("count={count}")]).metered();
    let contenders = vec![
        Contender::new("ours", ours, parse_ours),
        Contender::new("snapshot + compact", alt, parse_compact)
            .writing(vec![copy.clone(), out.clone()]),
        Contender::new("sequential read", dd, parse_dd),
    ];
    let spec = Cell::new("cold".to_owned(), Cold, vec![db_path.clone()], contenders, (1, runs));
    let tracing = Tracing::new(ws);
    let cells = vec![cell::run(ws, &progress, &spec, &tracing)?];
    for f in [&copy, &out] {
        let _ = std::fs::remove_file(f);
    }
    progress.set("etcdctl defrag, compaction, defrag");
    let median = |k| cells[0].median(0, k);
    let mut real = Real {
        forecast_defrag: median("after_defrag_bytes"),
        forecast_compact: median("after_compact_defrag_bytes"),
        ..Real::default()
    };
    etcd.defrag();
    real.defrag_bytes = etcd.status().db_size;
    real.compact_rev = median("forecast_compact_rev")
        .and_then(|r| i64::try_from(whole(r)).ok())
        .unwrap_or_else(|| etcd.status().revision);
    etcd.compact(real.compact_rev, true);
    etcd.defrag();
    real.compact_defrag_bytes = etcd.status().db_size;
    progress.inc();
    drop(etcd);
    let mut commands = vec![build.shell(), build_peer.shell(), db.etcd_command.clone()];
    for (_, cmd) in cells.iter().flat_map(|c| &c.contenders) {
        commands.push(cmd.clone());
    }
    commands.push("etcdctl defrag; etcdctl compaction REV; etcdctl defrag".to_owned());
    let out_dir = ws.report_dir(&args.common, started);
    let results = Results {
        stamp: Stamp::new("etcd", started, machine),
        size,
        runs,
        db,
        commands,
        cells,
        real,
    };
    drop(progress);
    super::output::publish(&out_dir, &render(&results), &results, &[])?;
    let ok = results.real.forecast_defrag.is_some();
    Ok(super::output::exit(ok, "ours gave no forecast"))
}

/// A byte count or revision carried as a metric, whole again (metrics are
/// `f64`; these are integers far below 2^53).
#[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn whole(x: f64) -> u64 {
    x.max(0.0) as u64
}

/// `forecast` against `actual`, signed, in %.
fn error(forecast: Option<f64>, actual: u64) -> Option<f64> {
    forecast.map(|f| 100.0 * (f - actual as f64) / actual.max(1) as f64)
}

fn pct(x: Option<f64>) -> String {
    or_dash(x, |e| format!("{e:+.3} %"))
}

fn bytes(b: u64) -> String {
    format!("{b} ({})", human_size(b))
}

fn render(r: &Results) -> Report {
    let (mut o, d, c) = (r.stamp.report(), &r.db, &r.cells[0]);
    let (size, runs, finished) = (r.size, r.runs.to_string(), &r.stamp.finished_utc);
    o.text(say(NOTES, "intro", vars![size, runs, finished]));
    let etcd = or_dash(d.etcd_version.clone(), |v| v);
    r.stamp.add_to(&mut o, "the db", &[("etcd", d.etcd_version.clone())]);
    let free = d.db_size.saturating_sub(d.in_use);
    let free_pct = format!("{:.1} %", 100.0 * free as f64 / d.db_size.max(1) as f64);
    let in_use_pct = format!("{:.1} %", 100.0 * d.in_use as f64 / d.db_size.max(1) as f64);
    let (command, clients, target) = (&d.etcd_command, CLIENTS.to_string(), bytes(d.target_bytes));
    let (fill_s, txns) = (format!("{:.0}", d.fill_s), d.txns.to_string());
    let (compact_rev, db_size, in_use) =
        (d.compact_rev.to_string(), bytes(d.db_size), bytes(d.in_use));
    let revision = d.revision.to_string();
    let v = vars![
        etcd,
        command,
        clients,
        target,
        fill_s,
        txns,
        compact_rev,
        db_size,
        in_use,
        free_pct,
        revision
    ];
    o.section("The db").text(say(NOTES, "db", v));
    let resident = c.resident_at_start();
    o.section("Method").text(say(NOTES, "method", vars![in_use_pct, resident]));
    o.commands(&r.commands);
    let share = d.in_use as f64 / d.db_size.max(1) as f64;
    o.section("Results").table(cell_table(
        std::slice::from_ref(c),
        &[
            ("cell", Other, &|c| c.label.clone()),
            (">ours", Ours, &|c| c.time(0, "wall_s")),
            (">snapshot + compact", Peer, &|c| c.time(1, "wall_s")),
            (">sequential read", Peer, &|c| c.time(2, "wall_s")),
            (">ours / snapshot + compact", Ratio, &|c| {
                opt_ratio(c.ratio(0, 1, "wall_s").0.as_ref())
            }),
            (">ours / sequential read", Ratio, &|c| opt_ratio(c.ratio(0, 2, "wall_s").0.as_ref())),
            (">peak RSS, ours", Ours, &|c| or_dash(c.median(0, "rss_kib"), kib)),
            (">peak RSS, snapshot + compact", Peer, &|c| or_dash(c.median(1, "rss_kib"), kib)),
            (">written, snapshot + compact", Peer, &|c| {
                or_dash(c.median(1, "written_bytes"), |b| human_size(whole(b)))
            }),
        ],
    ));
    let g = &r.real;
    let (defrag_real, compact_real) = (bytes(g.defrag_bytes), bytes(g.compact_defrag_bytes));
    let shown = |x: Option<f64>| or_dash(x, |b| bytes(whole(b)));
    let (defrag_forecast, compact_forecast) = (shown(g.forecast_defrag), shown(g.forecast_compact));
    let (defrag_err, compact_err) = (
        pct(error(g.forecast_defrag, g.defrag_bytes)),
        pct(error(g.forecast_compact, g.compact_defrag_bytes)),
    );
    let (compact_bytes, rev) = (shown(c.median(1, "compact_bytes")), g.compact_rev.to_string());
    let v = vars![
        defrag_real,
        defrag_forecast,
        defrag_err,
        compact_bytes,
        rev,
        compact_real,
        compact_forecast,
        compact_err
    ];
    o.section("Forecasts against etcd").text(say(NOTES, "forecasts", v));
    o.section("Verdicts").verdicts(verdicts(r, share));
    o
}

/// The verdicts: ours against the in-use read and against the alternative; the forecasts.
fn verdicts(r: &Results, share: f64) -> Vec<Verdict> {
    let c = &r.cells[0];
    let per_round = |den: usize, scale: f64| -> Option<Summary> {
        let each = c.rounds.iter().filter_map(|round| {
            let (a, b) = (round.results.first()?, round.results.get(den)?);
            Some(a.wall_s / (b.wall_s * scale).max(1e-9))
        });
        Summary::of(&each.collect::<Vec<_>>())
    };
    let read = judge(
        "ours vs the in-use pages' sequential read",
        per_round(2, share).as_ref(),
        (READ_TARGET, Bound::AtMost),
        ("ours ", " the sequential read's time × the in-use share"),
    );
    let alt = judge(
        "ours vs snapshot + compact",
        per_round(1, 1.0).as_ref(),
        (ALT_TARGET, Bound::AtMost),
        ("ours ", " etcdctl snapshot save + bbolt compact"),
    );
    let g = &r.real;
    let forecast = |name: &str, f, actual| {
        let e = error(f, actual);
        let outcome = e.map_or(Outcome::None, |e| Outcome::of(e.abs() <= 2.0));
        Verdict::new(name, outcome, format!("{} off etcd's dbSize", pct(e)))
            .target("within 2 % (goal 0.5 %)")
    };
    vec![
        read.target(format!("≤ {READ_TARGET}× the sequential read of the in-use pages")),
        alt.target(format!("≤ {ALT_TARGET}× snapshot + compact")),
        forecast("defrag forecast", g.forecast_defrag, g.defrag_bytes),
        forecast("compaction + defrag forecast", g.forecast_compact, g.compact_defrag_bytes),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(stdout: &str, stderr: &str) -> Output {
        Output { stdout: stdout.to_owned(), stderr: stderr.to_owned(), ..Output::default() }
    }

    #[test]
    fn the_tools_outputs_parse() {
        let m = parse_compact(&out("305422368 -> 277610496 bytes (gain=1.10x)\n", "")).unwrap();
        assert_eq!(m["compact_bytes"], 277_610_496.0);
        assert!(parse_compact(&out("Snapshot saved\n", "")).is_err());
        let dd = "292+1 records in\n292+1 records out\n305422368 bytes (305 MB, 291 MiB) copied, 0.2 s\n";
        assert_eq!(parse_dd(&out("", dd)).unwrap()["read_bytes"], 305_422_368.0);
        assert!(parse_dd(&out("", "dd: failed")).is_err());
        let json = r#"{"size_bytes": 10, "in_use_bytes": 8, "after_defrag_bytes": 7,
            "after_compact_defrag_bytes": 5, "forecast_compact_rev": 99, "revisions": 3,
            "live_keys": 2}"#;
        let m = parse_ours(&out(json, "")).unwrap();
        assert_eq!((m["after_defrag_bytes"], m["forecast_compact_rev"]), (7.0, 99.0));
        assert!(parse_ours(&out("{}", "")).is_err());
    }
}
