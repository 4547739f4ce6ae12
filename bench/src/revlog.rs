//! `cargo xtask bench revlog`: `log -l 5` over a changelog index read whole vs mapped, ours
//! (`mapwise revlog log`) vs `hg log -l 5` with the same `--config`, warm and cold, on 1k and
//! 100k revisions (made by hg) and 1M (synthesised, encoded by core's `V1Entry`, checked with
//! hg); then ours read vs mmap across index sizes, for the recommended `mmapindexthreshold`.
//! Every cell is data run by [`cell::run`]; the report is the typed [`Report`].

use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, bail};
use mapwise_core::revlog::{FLAG_INLINE_DATA, Index, NULL_NODE, Node, REVLOGV1, V1Entry};
use mapwise_native::os::map::{Advice, FileMap};
use serde::{Deserialize, Serialize};
use sha1::{Digest as _, Sha1};

use super::cell::{self, CellRuns, Contender, Metrics, Tracing, both};
use super::charts::{self, ChartFile};
use super::limits::{self, Limit};
use super::machine::{self, Machine, Stamp, hg_version_number, parse_hg_version};
use super::output::{self, TempPath};
use super::proc::{Cmd, tail};
use super::report::Role::{Other, Ours, Peer, Ratio};
use super::report::{Bound, Outcome, Report, Table, Verdict, cell_table, judge, say, vars};
use super::schedule::CacheState::{self, Cold, Warm};
use super::stats::fmt_secs;
use super::traces::{self, TraceInfo, Traces};
use super::units::{format_size, human_size, plural, utc_human};
use super::{CommonArgs, Progress, Workspace, interrupt, path_arg};

/// Long help of `cargo xtask bench revlog`.
pub const HELP: &str = include_str!("text/revlog-help.txt");
/// The report's prose ([`say`]).
const NOTES: &str = include_str!("text/revlog-notes.md");
/// The seed's figures as published (its notes name the sources), one row a line:
/// source|timed|index|cache|read ms|mmap ms.
const SEED: &str = include_str!("text/revlog-seed.psv");
/// `-l 5`.
const LIMIT: u32 = 5;
/// hg's `log -l 5 -T '{rev}\n'` (one revision a line).
const LOG_T: [&str; 5] = ["log", "-l", "5", "-T", "{rev}\\n"];
/// Target 1: ours mmap at the largest size ≤ this × ours at 1k.
const SIZE_TARGET: f64 = 1.2;
/// hg 6.9's `storage.revlog.mmap.index:size-threshold` default.
const HG_DEFAULT_THRESHOLD: u64 = 1 << 20;
/// Ours' process ratios within this much of 1 are a tie ([`combine`]): process start-up
/// jitters by more than the loads differ at small sizes.
const TIE: f64 = 0.05;
/// The record each cached repository carries.
const MADE: &str = "bench-made.json";
const CACHES: [CacheState; 2] = [Warm, Cold];
/// How the changelog index is loaded: read whole or mapped.
type Mode = &'static str;
const MODES: [Mode; 2] = ["read", "mmap"];
/// Who made a repository: `hg` (the peer's `gen-repo`) or `synthetic` (xtask).
type Origin = &'static str;

/// The sizes and counts of one run (`big`: the synthesised repository).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
struct Plan {
    preset: &'static str,
    hg_sizes: Vec<u32>,
    big: u32,
    sweep: Vec<u32>,
    sweep_runs: u64,
    hg_sweep: bool,
}

impl Plan {
    /// `--tiny` wins over `--full`; `sweep_runs` overrides the preset's.
    fn new(tiny: bool, full: bool, sweep_runs: Option<u64>) -> Plan {
        // Sweep sizes, powers of two: quick 256 to 256k by fours, full 64 and 256 to 512k.
        let (preset, exponents, runs): (_, Vec<u32>, _) = match (tiny, full) {
            (true, _) => ("tiny", vec![8, 10], 2),
            (_, true) => ("full", std::iter::once(6).chain(8..20).collect(), 50),
            _ => ("quick", (8..=18).step_by(2).collect(), 20),
        };
        let (hg_sizes, big) =
            if tiny { (vec![1000], 5000) } else { (vec![1000, 100_000], 1_000_000) };
        let mut sweep: Vec<u32> = exponents.iter().map(|e| 1 << e).chain([big]).collect();
        sweep.sort_unstable();
        let sweep_runs = sweep_runs.unwrap_or(runs);
        Plan { preset, hg_sizes, big, sweep, sweep_runs, hg_sweep: preset == "full" }
    }

    /// Every repository: the hg-made ones, the big one, the rest of the sweep.
    fn repos(&self) -> Vec<(u32, Origin)> {
        let synth = std::iter::once(&self.big).chain(self.sweep.iter().filter(|&&n| n != self.big));
        let hg = self.hg_sizes.iter().map(|&n| (n, "hg"));
        hg.chain(synth.map(|&n| (n, "synthetic"))).collect()
    }
}

/// `bench revlog` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The quick run (the default): matrix, size check, 7-size sweep of 20 pairs.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// 14 sweep sizes, 50 pairs each, and hg in the sweep.
    #[arg(long, conflicts_with = "tiny")]
    full: bool,
    /// Pairs per cell of the sweep and of the size check (ours only, a few
    /// ms a run) [default: 20, 50 with --full, 2 with --tiny].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000), conflicts_with = "tiny")]
    sweep_runs: Option<u64>,
    /// Untimed pairs at the start of each cell (same reset before each
    /// run), kept in results.json only.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=100))]
    warmup: u64,
    #[command(flatten)]
    pub(super) common: CommonArgs,
}

// The synthetic changelog: core encodes the format, SHA-1 is ours.

/// hg's nodeid (`storageutil.hashrevisionsha1`): SHA-1 of the parents'
/// nodes in core's `node_hash_input` order, then the text.
fn revlog_node(p1: &Node, p2: &Node, text: &[u8]) -> Node {
    let mut s = Sha1::new();
    mapwise_core::revlog::node_hash_input(p1, p2).iter().for_each(|n| s.update(n));
    s.update(text);
    s.finalize().into()
}

/// Synthetic changeset `rev` in hg's changelog format without files: the
/// null manifest, user, `time tz`, a blank line, the description.
fn synth_text(rev: u32) -> Vec<u8> {
    format!("{}\nbench\n{rev} 0\n\nr{rev}", "0".repeat(40)).into_bytes()
}

/// A linear changelog of `revs` revisions as hg writes one (v1, not inline, texts stored
/// `u` + text) into `index` and `data`, calling `every(rev)` every 65536 revisions.
fn write_synth(
    revs: u32,
    (index, data): (&mut impl Write, &mut impl Write),
    mut every: impl FnMut(u32) -> Result<()>,
) -> Result<()> {
    let (mut data_offset, mut prev) = (0, NULL_NODE);
    for rev in 0..revs {
        let (text, r) = (synth_text(rev), i32::try_from(rev)?);
        let (node, len) = (revlog_node(&prev, &NULL_NODE, &text), u32::try_from(text.len())?);
        let (compressed_len, uncompressed_len) = (len + 1, len.try_into()?);
        let (flags, base_rev, link_rev, p1, p2) = (0, r, r, r - 1, -1);
        let e = V1Entry {
            data_offset,
            flags,
            compressed_len,
            uncompressed_len,
            base_rev,
            link_rev,
            p1,
            p2,
            node,
        };
        index.write_all(&if rev == 0 {
            e.encode_first(u32::from(REVLOGV1))
        } else {
            e.encode()
        })?;
        data.write_all(&[&b"u"[..], &text].concat())?;
        (data_offset, prev) = (data_offset + u64::from(compressed_len), node);
        if rev % 65_536 == 0 {
            every(rev)?;
        }
    }
    Ok(())
}

/// What `log -l N -T '{rev}\n'` prints for a linear repository of `revs`.
fn expected_log(revs: u32, limit: u32) -> String {
    (revs.saturating_sub(limit)..revs).rev().map(|r| format!("{r}\n")).collect()
}

/// The first revision `log -l 5 -T '{rev}\n'` printed when it printed the
/// tip revisions newest first, else -1.
fn log_tip(stdout: &str) -> f64 {
    let first = stdout.lines().next().and_then(|l| l.parse::<u32>().ok());
    first.filter(|&t| stdout == expected_log(t + 1, LIMIT)).map_or(-1.0, f64::from)
}

/// `1k`, `100k`, `1M`, `16384`.
fn short_count(n: u32) -> String {
    match n {
        n if n >= 1_000_000 && n.is_multiple_of(1_000_000) => format!("{}M", n / 1_000_000),
        n if n >= 1000 && n.is_multiple_of(1000) => format!("{}k", n / 1000),
        n => n.to_string(),
    }
}

/// The `--config` selecting `mode` for ours and hg alike, in the keys `hg` reads.
fn config_args(mode: Mode, hg: (u32, u32)) -> Vec<String> {
    let kv: &[&str] = match mode {
        "read" => &["storage.revlog.mmap.index=no"],
        _ if hg >= (6, 9) => {
            &["storage.revlog.mmap.index=yes", "storage.revlog.mmap.index:size-threshold=0"]
        }
        _ => &["experimental.mmapindexthreshold=0"],
    };
    kv.iter().flat_map(|s| ["--config".to_owned(), (*s).to_owned()]).collect()
}

// Where mapping starts to win.

/// Where mapping starts to win (`between`, `everywhere`, `nowhere`), log-log interpolated.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Crossover {
    kind: &'static str,
    from_bytes: Option<u64>,
    below_bytes: Option<u64>,
    estimate_bytes: Option<f64>,
}

/// The crossover of `points` (any order; sizes distinct).
fn crossover(points: &[(u64, f64)]) -> Option<Crossover> {
    let mut p: Vec<(u64, f64)> = points.to_vec();
    p.retain(|(b, r)| *b > 0 && r.is_finite() && *r > 0.0);
    p.sort_by_key(|&(b, _)| b);
    let x = |kind, from_bytes, below_bytes, estimate_bytes| {
        Some(Crossover { kind, from_bytes, below_bytes, estimate_bytes })
    };
    match p.iter().rposition(|&(_, r)| r >= 1.0) {
        _ if p.is_empty() => None,
        None => x("everywhere", Some(p[0].0), None, None),
        Some(i) if i + 1 == p.len() => x("nowhere", None, Some(p[i].0), None),
        Some(i) => {
            let (lo, hi) = (p[i], p[i + 1]);
            #[expect(clippy::cast_precision_loss)]
            let (x0, x1) = ((lo.0 as f64).ln(), (hi.0 as f64).ln());
            let (y0, y1) = (lo.1.ln(), hi.1.ln());
            let t = if y0 > y1 { y0 / (y0 - y1) } else { 0.0 };
            x("between", Some(hi.0), Some(lo.0), Some((x0 + t * (x1 - x0)).exp()))
        }
    }
}

/// The crossover in words: `read wins or ties up to 16.0 KiB, mmap wins
/// from 64.0 KiB on (interpolated crossing ≈ 52.6 KiB)`.
fn describe(x: Option<&Crossover>) -> String {
    let size = |b: Option<u64>| b.map_or_else(String::new, human_size);
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let at = |x: &Crossover| size(x.estimate_bytes.map(|e| e as u64));
    match x.map(|x| (x.kind, size(x.from_bytes), size(x.below_bytes), x)) {
        None => "no data".to_owned(),
        Some(("everywhere", f, ..)) => format!("mmap wins at every size measured, from {f} on"),
        Some(("nowhere", _, b, _)) => format!("mmap does not win at the largest size ({b})"),
        Some((_, f, b, x)) => format!(
            "read wins or ties up to {b}, mmap wins from {f} on (interpolated crossing ≈ {})",
            at(x)
        ),
    }
}

/// Per size, ours' process ratio where decisive, else the model's; with who decided.
fn combine(process: &[(u64, f64)], model: &[(u64, f64)]) -> Vec<(u64, f64, &'static str)> {
    let model_at = |bytes| model.iter().find(|(b, _)| *b == bytes).map(|&(_, m)| m);
    let one = |&(bytes, r): &(u64, f64)| match model_at(bytes) {
        Some(m) if (r - 1.0).abs() < TIE => (bytes, m, "model"),
        _ => (bytes, r, "ours"),
    };
    process.iter().map(one).collect()
}

// Repositories.

/// A check with its outcome.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Check {
    what: String,
    ok: bool,
    detail: String,
}

impl Check {
    fn new(what: impl Into<String>, ok: bool, detail: impl Into<String>) -> Check {
        Check { what: what.into(), ok, detail: detail.into() }
    }

    /// `{of}what: OK — detail`, for the report's lists.
    fn line(&self, of: &str) -> String {
        let ok = if self.ok { "OK" } else { "**FAIL**" };
        format!("{of}{}: {ok} — {}", self.what, self.detail)
    }
}

/// The record kept in each cached repository, with hg's checks of it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Made {
    secs: f64,
    made_utc: String,
    hg_version: Option<String>,
    checks: Vec<Check>,
}

#[derive(Debug, Serialize)]
struct RepoInfo {
    name: String,
    path: String,
    revs: u32,
    origin: Origin,
    index_bytes: u64,
    data_bytes: Option<u64>,
    inline: bool,
    generated_now: bool,
    made: Made,
}

impl RepoInfo {
    fn index(&self) -> PathBuf {
        Path::new(&self.path).join(".hg/store/00changelog.i")
    }

    fn pages(&self) -> u64 {
        self.index_bytes.div_ceil(4096)
    }
}

/// `target/bench/files/revlog-<hg|synth>-<revs>`, cached or made now by the peer's `gen-repo`
/// or synthesised and checked with hg (`big`: the matrix's, every check).
fn repo(
    ws: &Workspace,
    tools: (&str, &str, Option<&str>),
    (revs, origin): (u32, Origin),
    big: bool,
    p: &Progress,
) -> Result<RepoInfo> {
    let tag = if origin == "hg" { "hg" } else { "synth" };
    let dir = ws.bench_dir().join("files").join(format!("revlog-{tag}-{revs}"));
    let record = || serde_json::from_str::<Made>(&fs::read_to_string(dir.join(MADE)).ok()?).ok();
    let generated_now = output::make_once(&dir, record().is_some(), |tmp| {
        let (start, at, n) = (Instant::now(), dir.display(), revs.to_string());
        p.note(&format!("xtask: making {at} ({n} revisions by {origin}; cached for later runs)"));
        let checks = if origin == "hg" {
            p.set(format!("hg gen-repo --revs {revs} (about 2 min per 100k)"));
            let cmd = Cmd::new(tools.0).args(["gen-repo", &path_arg(tmp), "--revs", &n]);
            let out = cmd.run(&ws.root).context("cannot make the repository")?.stdout;
            vec![Check::new("gen-repo output", true, out.trim().replace('\n', "; "))]
        } else {
            Cmd::hg().args(["init", &path_arg(tmp)]).run(&ws.root).context("hg init")?;
            let store = tmp.join(".hg/store");
            let open =
                |n| File::create(store.join(n)).map(|f| BufWriter::with_capacity(1 << 20, f));
            let (mut index, mut data) = (open("00changelog.i")?, open("00changelog.d")?);
            write_synth(revs, (&mut index, &mut data), |rev| {
                p.set(format!("synthesising the changelog: rev {rev}/{revs}"));
                Ok(interrupt::check()?)
            })?;
            for w in [index, data] {
                w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            }
            check_synth(ws, tools.1, tmp, (revs, big), p)?
        };
        let (secs, made_utc) = (start.elapsed().as_secs_f64(), utc_human(SystemTime::now()));
        let made = Made { secs, made_utc, hg_version: tools.2.map(str::to_owned), checks };
        Ok(fs::write(tmp.join(MADE), serde_json::to_string_pretty(&made)? + "\n")?)
    })?;
    let made = record().with_context(|| format!("{}: no readable {MADE}", dir.display()))?;
    let index = dir.join(".hg/store/00changelog.i");
    let mut head = [0u8; 4];
    File::open(&index).and_then(|mut f| f.read_exact(&mut head)).context("no changelog")?;
    Ok(RepoInfo {
        name: format!("{} ({origin})", short_count(revs)),
        path: path_arg(&dir),
        revs,
        origin,
        index_bytes: fs::metadata(&index)?.len(),
        data_bytes: fs::metadata(index.with_extension("d")).ok().map(|m| m.len()),
        inline: u32::from_be_bytes(head) & FLAG_INLINE_DATA != 0,
        generated_now,
        made,
    })
}

/// hg's checks of a synthetic repository in `dir`: its log, `hg verify` up to 20k revisions
/// (a minute at 1M), and for the big one `hg debugindex -c` equal to ours' (core's, which reads
/// back what was written: the tests).
fn check_synth(
    ws: &Workspace,
    mapwise: &str,
    dir: &Path,
    (revs, big): (u32, bool),
    p: &Progress,
) -> Result<Vec<Check>> {
    let run = |a: &[&str]| Cmd::hg().arg("-R").arg(path_arg(dir)).args(a.to_vec()).output(&ws.root);
    let log = run(&LOG_T)?;
    let (ok, printed) =
        (log.stdout == expected_log(revs, LIMIT), log.stdout.trim().replace('\n', " "));
    let mut checks =
        vec![Check::new("hg log -l 5 -T '{rev}\\n'", ok, format!("printed {printed}"))];
    if big {
        // What `{rev}` reads, and so what the cells evict and trace: the index alone if hg
        // prints the same with the data file moved away (before the rename into place).
        let d = dir.join(".hg/store/00changelog.d");
        fs::rename(&d, d.with_extension("away"))?;
        let bare = run(&LOG_T);
        fs::rename(d.with_extension("away"), &d)?;
        let (bare, same) =
            (bare?, "the index only: it prints the same with 00changelog.d moved away");
        let detail = if bare.success && bare.stdout == log.stdout {
            same.to_owned()
        } else {
            format!("the data file too: without 00changelog.d it fails ({})", tail(&bare.stderr, 1))
        };
        let what = "what hg log -T '{rev}\\n' reads (a note, not a pass/fail check)";
        checks.push(Check::new(what, true, detail));
    }
    if revs <= 20_000 {
        p.set(format!("hg verify, {revs} revisions"));
        let v = run(&["verify"])?;
        let out = tail(&format!("{}{}", v.stdout, v.stderr), 3).replace('\n', "; ");
        let detail = format!("{}: {out}", v.status);
        checks.push(Check::new(format!("hg verify ({revs} revisions)"), v.success, detail));
    }
    if big {
        p.set(format!("hg debugindex -c, {revs} revisions (once)"));
        let hg_di = run(&["debugindex", "-c"])?.stdout;
        let ours = Cmd::new(mapwise).args(["revlog", "debugindex", "-c", "-R", &path_arg(dir)]);
        let ours = ours.run(&ws.root)?.stdout;
        let lines = hg_di.lines().count();
        let detail = match ours.lines().zip(hg_di.lines()).position(|(a, b)| a != b) {
            _ if ours == hg_di => format!("identical, {} bytes, {lines} lines", ours.len()),
            first => format!("differ (first differing line: {first:?})"),
        };
        let ok = ours == hg_di && lines == revs as usize + 1;
        let what = "hg debugindex -c = ours (`mapwise revlog debugindex -c`)";
        checks.push(Check::new(what, ok, detail));
    }
    Ok(checks)
}

// Cells, declared as data.

/// What a contender runs (the model's `true`: with MADV_RANDOM, which neither tool gives).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Task {
    Ours(Mode),
    Hg(Mode),
    Model(Mode, bool),
    OursVersion,
    HgRoot,
}

/// What a cell compares (`Size`: the big index vs 1k; `Advice`: the model ± MADV_RANDOM).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Kind {
    Matrix,
    Size,
    Sweep,
    SweepHg,
    Model,
    Startup,
    Advice,
}

/// One contender: its name, its task, its repository (an index).
#[derive(Clone, Debug, Serialize)]
struct Side {
    who: String,
    job: Task,
    repo: usize,
}

/// One cell: two contenders, `runs` rounds, each run from `cache`.
#[derive(Debug, Serialize)]
struct Spec {
    kind: Kind,
    #[serde(skip)]
    label: String,
    #[serde(skip)]
    cache: CacheState,
    mode: Option<Mode>,
    #[serde(skip)]
    runs: usize,
    sides: [Side; 2],
}

/// Every cell in run order: start-up, matrix, size check, sweep (`repos`: [`Plan::repos`]).
fn specs(plan: &Plan, repos: &[(u32, Origin)], runs: usize, sweep_runs: usize) -> Vec<Spec> {
    use Task::{Hg, Model, Ours};
    let name = |i: usize| format!("{} ({})", short_count(repos[i].0), repos[i].1);
    let side = |who: &str, job, repo| Side { who: who.to_owned(), job, repo };
    let mut out = Vec::new();
    let mut add = |kind, label, cache, mode, sides| {
        let long = matches!(kind, Kind::Matrix | Kind::Startup | Kind::SweepHg);
        let n = if long { runs } else { sweep_runs };
        out.push(Spec { kind, label, cache, mode, runs: n, sides });
    };
    let sides = [side("ours", Task::OursVersion, 0), side("hg", Task::HgRoot, 0)];
    add(Kind::Startup, "start-up".to_owned(), Warm, None, sides);
    let big = plan.hg_sizes.len();
    for r in 0..=big {
        for (cache, m) in CACHES.into_iter().flat_map(|c| MODES.map(|m| (c, m))) {
            let label = format!("{}, {}, {m}", name(r), cache.name());
            let sides = [side("ours", Ours(m), r), side("hg", Hg(m), r)];
            add(Kind::Matrix, label, cache, Some(m), sides);
        }
    }
    // The 1k side: hg's (inline) mapped and read, and the synthetic 1024 (the big one's format).
    let synth1k = repos.iter().position(|&r| r == (1024, "synthetic"));
    let small = [(0, "mmap"), (0, "read")].into_iter().chain(synth1k.map(|i| (i, "mmap")));
    let small: Vec<(usize, Mode)> = small.collect();
    for cache in CACHES {
        for &(s, m) in &small {
            let a = side(&format!("ours mmap {}", name(big)), Ours("mmap"), big);
            let b = side(&format!("ours {m} {}", name(s)), Ours(m), s);
            let label = format!("{} vs {}, {}", a.who, b.who, cache.name());
            add(Kind::Size, label, cache, Some("mmap"), [a, b]);
        }
        // What a cold mapped run pays for read-around.
        let label = format!("model mmap+MADV_RANDOM vs mmap, {}, {}", name(big), cache.name());
        let a = side("model mmap + MADV_RANDOM", Model("mmap", true), big);
        let sides = [a, side("model mmap", Model("mmap", false), big)];
        add(Kind::Advice, label, cache, Some("mmap"), sides);
    }
    let mut series = vec![
        (Kind::Sweep, "ours", Ours("mmap"), Ours("read")),
        (Kind::Model, "model", Model("mmap", false), Model("read", false)),
    ];
    if plan.hg_sweep {
        series.push((Kind::SweepHg, "hg", Hg("mmap"), Hg("read")));
    }
    let mut sweep: Vec<usize> = (big..repos.len()).collect();
    sweep.sort_by_key(|&i| repos[i].0);
    for (r, cache) in sweep.into_iter().flat_map(|r| CACHES.map(|c| (r, c))) {
        for &(kind, who, a, b) in &series {
            let label = format!("sweep {who}, {}, {}", name(r), cache.name());
            let (a, b) = (side(&format!("{who} mmap"), a, r), side(&format!("{who} read"), b, r));
            add(kind, label, cache, None, [a, b]);
        }
    }
    out
}

/// xtask's model of ours' load (native/src/engine/revlog/load.rs, log.rs), in seconds.
fn model_load(path: &Path, mode: Mode, random: bool) -> Result<f64> {
    let start = Instant::now();
    let mut f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let len = usize::try_from(f.metadata()?.len())?;
    let touch = |b: &[u8]| -> Result<u64> {
        let (idx, mut sum) = (Index::open(b)?, 0);
        for rev in (idx.tip() + 1 - LIMIT as i32).max(0)..=idx.tip() {
            let e = idx.entry(rev)?;
            let p1 = idx.node(idx.parent_revs(&e).0)?;
            sum += e.node().iter().chain(&p1).map(|&x| u64::from(x)).sum::<u64>();
        }
        Ok(sum)
    };
    let sum = if mode == "read" {
        let mut v = Vec::new();
        v.try_reserve_exact(len)?;
        f.read_to_end(&mut v)?;
        touch(&v)?
    } else if len == 0 {
        0
    } else {
        // SAFETY: a bench file of our own, which nothing truncates while
        // the bench runs, so no access past its end can fault.
        let map = unsafe { FileMap::shared_read_only(&f, len, false) }.context("mmap")?;
        if random {
            map.advise(Advice::Random, 0, len).context("madvise")?;
        }
        touch(map.bytes())?
    };
    std::hint::black_box(sum);
    drop(f);
    Ok(start.elapsed().as_secs_f64())
}

/// What builds the contenders: ours' binary, hg's version, the repositories.
struct Ctx<'a> {
    mapwise: String,
    hg_v: (u32, u32),
    repos: &'a [RepoInfo],
}

impl Ctx<'_> {
    /// The command of `job` on `repo` (the model runs none).
    fn cmd(&self, job: Task, repo: &RepoInfo) -> Cmd {
        let (p, flags, ours) = (repo.path.as_str(), |m| config_args(m, self.hg_v), &self.mapwise);
        match job {
            Task::Ours(m) => Cmd::new(ours).args(["revlog", "log", "-l", "5", p]).args(flags(m)),
            Task::Hg(m) => Cmd::hg().args(LOG_T).args(["-R", p]).args(flags(m)),
            Task::OursVersion => Cmd::new(ours).arg("--version"),
            Task::HgRoot => Cmd::hg().args(["-R", p, "root"]),
            Task::Model(..) => unreachable!("the model runs inside xtask"),
        }
    }

    /// `s` as a contender on its repository's index, every `log` output read as its tip.
    fn contender(&self, s: &Side) -> Contender {
        let (index, cmd) = (self.repos[s.repo].index(), || self.cmd(s.job, &self.repos[s.repo]));
        let c = match s.job {
            Task::Model(mode, random) => {
                let load = match (mode, random) {
                    ("read", _) => "read(2) whole",
                    (_, false) => "mmap(PROT_READ, MAP_SHARED) + munmap",
                    (_, true) => "mmap(PROT_READ, MAP_SHARED) + madvise(MADV_RANDOM) + munmap",
                };
                let at = path_arg(&index);
                let what =
                    format!("(in xtask) open + fstat + {load} {at} + touch the 5 tip entries");
                let at = index.clone();
                let work = move || Ok(cell::metrics([("wall_s", model_load(&at, mode, random)?)]));
                Contender::in_process(&s.who, what, Rc::new(work))
            }
            Task::Ours(_) | Task::Hg(_) => {
                Contender::new(&s.who, cmd(), |o| Ok(cell::metrics([("tip", log_tip(&o.stdout))])))
            }
            _ => Contender::new(&s.who, cmd(), |_| Ok(Metrics::new())),
        };
        c.on(vec![index])
    }

    /// Ours' `--json` and (`with_hg`) hg's `util.mmapread` (reported by
    /// text/revlog-reportmmap.py, at `ext`) on `repo` in `mode`: each must
    /// say it used `mode` and print the tip revisions.
    fn load_check(
        &self,
        ws: &Workspace,
        ext: &str,
        repo: &RepoInfo,
        mode: Mode,
        with_hg: bool,
    ) -> Result<Vec<Check>> {
        let (of, want) = (format!("{}, {mode}", repo.name), expected_log(repo.revs, LIMIT));
        let out = self.cmd(Task::Ours(mode), repo).arg("--json").run(&ws.root)?;
        let j: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_default();
        let field = |k: &str| j[k].as_str().map_or_else(|| j[k].to_string(), str::to_owned);
        let revs = j["entries"].as_array().into_iter().flatten().filter_map(|e| e["rev"].as_i64());
        let revs: Vec<i64> = revs.collect();
        let ok = field("load") == mode
            && revs.iter().map(|r| format!("{r}\n")).collect::<String>() == want
            && j["index_bytes"].as_u64() == Some(repo.index_bytes)
            && j["revisions"].as_u64() == Some(u64::from(repo.revs));
        let keys = ["load", "populate", "threshold", "index_bytes", "revisions", "inline"];
        let shown: Vec<String> = keys.iter().map(|k| format!("{k}={}", field(k))).collect();
        let detail = format!("{} revs={revs:?}", shown.join(" "));
        let mut checks = vec![Check::new(format!("{of}: ours --json"), ok, detail)];
        if with_hg {
            let ext = format!("extensions.reportmmap={ext}");
            let out = self.cmd(Task::Hg(mode), repo).args(["--config", &ext]).run(&ws.root)?;
            let (mapped, rest) = split_mmap_report(&out.stdout);
            let how = if mapped { "mapped" } else { "not mapped (read)" };
            let log = if rest == want { "as expected" } else { "UNEXPECTED" };
            let ok = mapped == (mode == "mmap") && rest == want;
            let detail = format!("00changelog.i {how}; log output {log}");
            checks.push(Check::new(format!("{of}: hg util.mmapread"), ok, detail));
        }
        Ok(checks)
    }
}

/// Whether hg's output says (by text/revlog-reportmmap.py) it mapped the changelog, and the rest.
fn split_mmap_report(stdout: &str) -> (bool, String) {
    let (maps, rest): (Vec<&str>, _) = stdout.lines().partition(|l| l.starts_with("mmap: "));
    let rest = rest.iter().map(|l| format!("{l}\n")).collect();
    (maps.iter().any(|l| l.ends_with("00changelog.i")), rest)
}

/// A finished cell: what it compared and its runs.
#[derive(Debug, Serialize)]
struct CellResult {
    #[serde(flatten)]
    spec: Spec,
    #[serde(flatten)]
    runs: CellRuns,
}

impl CellResult {
    /// Whether every `log` printed its repository's 5 tip revisions.
    fn outputs_ok(&self, repos: &[RepoInfo]) -> bool {
        let tip = |i: usize| f64::from(repos[self.spec.sides[i].repo].revs) - 1.0;
        let mut runs = self.runs.warmup.iter().chain(&self.runs.rounds);
        let ok = |(i, x): (usize, &cell::Run)| x.get("tip").is_none_or(|t| t == tip(i));
        runs.all(|r| r.results.iter().enumerate().all(ok))
    }

    fn median(&self, i: usize) -> Option<f64> {
        self.runs.median(i, "wall_s")
    }

    /// Side `i`'s median index pages resident after a run ([`CellRuns::resident_pages`]).
    fn pages(&self, repos: &[RepoInfo], i: usize) -> String {
        self.runs.resident_pages(i, repos[self.spec.sides[i].repo].pages())
    }
}

// The bench.

/// The crossover of one series (`combined`: what the recommendation uses).
#[derive(Debug, Serialize)]
struct CrossoverResult {
    source: &'static str,
    cache: CacheState,
    points: Vec<(u64, f64)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    decided_by: Vec<&'static str>,
    crossover: Option<Crossover>,
}

impl CrossoverResult {
    fn new(source: &'static str, cache: CacheState, points: Vec<(u64, f64)>) -> Self {
        let (crossover, decided_by) = (crossover(&points), Vec::new());
        Self { source, cache, points, decided_by, crossover }
    }
}

/// The threshold this run recommends.
#[derive(Debug, Serialize)]
struct Recommendation {
    bytes: Option<u64>,
    config: Option<String>,
    why: String,
}

/// results.json (the report's model is added under `"report"`).
#[derive(Debug, Serialize)]
struct Results {
    #[serde(flatten)]
    stamp: Stamp,
    runs: usize,
    warmup: usize,
    plan: Plan,
    hg_version: Option<String>,
    config_read: Vec<String>,
    config_mmap: Vec<String>,
    build_commands: Vec<String>,
    repos: Vec<RepoInfo>,
    load_checks: Vec<Check>,
    cells: Vec<CellResult>,
    crossovers: Vec<CrossoverResult>,
    recommendation: Recommendation,
    outputs_agree: bool,
    limits: Vec<Limit>,
    traces: Vec<TraceInfo>,
    charts: Vec<ChartFile>,
}

impl Results {
    fn of(&self, kind: Kind) -> impl Iterator<Item = &CellResult> {
        self.cells.iter().filter(move |c| c.spec.kind == kind)
    }

    /// The matrix's repositories: the hg-made ones and the synthesised one.
    fn matrix_repos(&self) -> &[RepoInfo] {
        &self.repos[..=self.plan.hg_sizes.len()]
    }

    fn matrix(&self, repo: &RepoInfo, cache: CacheState, mode: Mode) -> Option<&CellResult> {
        let at = |c: &&CellResult| c.runs.cache == cache && c.spec.mode == Some(mode);
        let on = |c: &&CellResult| self.repos[c.spec.sides[0].repo].name == repo.name;
        self.of(Kind::Matrix).filter(on).find(at)
    }

    /// `hg 6.3.2`.
    fn hg_name(&self) -> String {
        let v = self.hg_version.as_deref().and_then(hg_version_number);
        v.map_or_else(|| "hg".to_owned(), |v| format!("hg {v}"))
    }
}

/// Runs the bench.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let (started, runs) = (SystemTime::now(), args.common.runs()?);
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let plan = Plan::new(args.common.tiny, args.full, args.sweep_runs);
    let sweep_runs = usize::try_from(plan.sweep_runs).context("--sweep-runs too large")?;
    let (peer, planned) = (ws.peer("revlog")?, plan.repos());
    let specs = specs(&plan, &planned, runs, sweep_runs);
    let steps = specs.iter().map(|s| 2 * (warmup + s.runs)).sum::<usize>();
    let progress = Progress::new((1 + steps + limits::steps(runs)) as u64);
    let (build, mapwise) = ws.build_mapwise(&progress)?;

    // Repositories (the peer installs hg when it makes one), hg's first.
    let hg_line = || machine::first_line_of("hg", &["--version", "-q"]);
    let (mut hg_version, big) = (hg_line(), plan.hg_sizes.len());
    let mut repos: Vec<RepoInfo> = Vec::new();
    for &r in &planned {
        let tools = (peer.as_str(), mapwise.as_str(), hg_version.as_deref());
        repos.push(repo(ws, tools, r, r.0 == plan.big, &progress)?);
        hg_version = hg_version.or_else(hg_line);
    }
    let Some(hg_v) = hg_version.as_deref().and_then(parse_hg_version) else {
        bail!("cannot run `hg --version` (apt-get install mercurial)");
    };
    let ctx = Ctx { mapwise, hg_v, repos: &repos };

    progress.set("load checks");
    let ext = format!(".revlog-reportmmap-{}.py", std::process::id());
    let ext = TempPath::new(std::path::absolute(ws.bench_dir())?.join(ext));
    fs::write(ext.path(), include_str!("text/revlog-reportmmap.py"))?;
    let mut load_checks = Vec::new();
    for (i, m) in (0..repos.len()).flat_map(|i| MODES.map(|m| (i, m))) {
        let (with_hg, at) = (i <= big || plan.hg_sweep, path_arg(ext.path()));
        load_checks.extend(ctx.load_check(ws, &at, &repos[i], m, with_hg)?);
    }
    drop(ext);

    let tracing = Tracing::new(ws);
    let one = |s: Spec| -> Result<CellResult> {
        let contenders = s.sides.iter().map(|x| ctx.contender(x)).collect();
        let rounds = (warmup, s.runs);
        let cell = cell::Cell::new(s.label.clone(), s.cache, Vec::new(), contenders, rounds);
        Ok(CellResult { runs: cell::run(ws, &progress, &cell, &tracing)?, spec: s })
    };
    let cells: Vec<CellResult> = specs.into_iter().map(one).collect::<Result<_>>()?;
    let limits = limits::standard(&repos[big].index(), runs, &progress)?;
    let traces = tracing.traces.into_inner();
    let crossovers = crossovers(&cells, &repos);
    let recommendation = recommend(&crossovers);
    let outputs_agree = cells.iter().all(|c| c.outputs_ok(&repos))
        && load_checks.iter().chain(repos.iter().flat_map(|r| &r.made.checks)).all(|c| c.ok);
    let mut results = Results {
        stamp: Stamp::new("revlog", started, Machine::describe(&repos[big].index())),
        runs,
        warmup,
        plan,
        hg_version,
        config_read: config_args("read", hg_v),
        config_mmap: config_args("mmap", hg_v),
        build_commands: vec![build.shell()],
        repos,
        load_checks,
        cells,
        crossovers,
        recommendation,
        outputs_agree,
        limits,
        traces: traces.list().to_vec(),
        charts: Vec::new(),
    };
    progress.set("charts");
    results.charts = revlog_charts(&results, &traces)?;
    let dir = ws.report_dir(&args.common, started);
    let traced = traces.paragraph(&say(NOTES, "traced", &[]), Path::new(&ws.rel(&dir)));
    let report = report(&results, traced);
    drop(progress);
    output::publish_traced(&dir, &report, &results, &traces, &results.charts)?;
    Ok(output::exit(results.outputs_agree, "an output or a check was not as expected"))
}

/// The crossover of each series (ours, the model, hg) in each cache
/// state, then of the combined series the recommendation uses.
fn crossovers(cells: &[CellResult], repos: &[RepoInfo]) -> Vec<CrossoverResult> {
    use Kind::{Model, Sweep, SweepHg};
    let points = |kind, cache| -> Vec<(u64, f64)> {
        let at = |c: &CellResult| repos[c.spec.sides[0].repo].index_bytes;
        let of = |c: &CellResult| Some((at(c), c.runs.ratio(0, 1, "wall_s").0?.median));
        let cells = cells.iter().filter(|c| c.spec.kind == kind && c.runs.cache == cache);
        cells.filter_map(of).collect()
    };
    let series = [(Sweep, "ours"), (Model, "model"), (SweepHg, "hg")];
    let series = series.into_iter().flat_map(|s| CACHES.map(|c| (s, c)));
    let series = series.map(|((kind, source), c)| CrossoverResult::new(source, c, points(kind, c)));
    let mut out: Vec<CrossoverResult> = series.filter(|c| !c.points.is_empty()).collect();
    for cache in CACHES {
        let both = combine(&points(Sweep, cache), &points(Model, cache));
        let mut c =
            CrossoverResult::new("combined", cache, both.iter().map(|p| (p.0, p.1)).collect());
        c.decided_by = both.iter().map(|p| p.2).collect();
        out.push(c);
    }
    out
}

/// The larger combined crossover: above it mapping costs no more than reading.
fn recommend(crossovers: &[CrossoverResult]) -> Recommendation {
    let combined = crossovers.iter().filter(|c| c.source == "combined");
    let one =
        |c: &CrossoverResult| format!("{}: {}", c.cache.name(), describe(c.crossover.as_ref()));
    let why = combined.clone().map(one).collect::<Vec<_>>().join("; ");
    let bytes = combined.filter_map(|c| c.crossover.as_ref()?.from_bytes).max();
    // hg's `ui.configbytes` reads `256K`, `1M` back exactly.
    let size = |b| format_size(b).replace("iB", "");
    let config = bytes.map(|b| format!("--config experimental.mmapindexthreshold={}", size(b)));
    Recommendation { bytes, config, why }
}

/// The charts: ours/hg per matrix cell, and each matrix index's first cold runs.
fn revlog_charts(r: &Results, traces: &Traces) -> Result<Vec<ChartFile>> {
    let hg = r.hg_name();
    let title = format!("revlog: log -l 5, ours / {hg}");
    let what = format!("log -l 5 wall time, ours / {hg} per cell");
    let matrix = r.of(Kind::Matrix).map(|c| &c.runs);
    let mut out = vec![ChartFile::ratios(matrix, "wall_s", (&title, &what), None)?];
    for repo in r.matrix_repos() {
        let cells = MODES.iter().filter_map(|&m| r.matrix(repo, Cold, m));
        let pick = |c: &CellResult| {
            let mode = c.spec.mode.unwrap_or_default();
            ["ours", "hg"].map(|side| (c.runs.label.clone(), side, format!("{side}, {mode}")))
        };
        let picks: Vec<(String, &str, String)> = cells.flat_map(pick).collect();
        let (name, file) = (&repo.name, format!("residency-cold-{}.svg", traces::slug(&repo.name)));
        let title = format!("revlog, {name}, cold log -l 5: 00changelog.i in the page cache");
        let what = say(NOTES, "residency-chart", vars![name]);
        out.extend(traces::residency_file(traces, &file, (&title, &what), &picks)?);
    }
    Ok(out)
}

// The report.

/// REPORT.md, as the typed model.
fn report(r: &Results, traces: Option<String>) -> Report {
    use Kind::{Advice, Matrix, Model, Size, Startup, Sweep, SweepHg};
    let (hg, plan, ra) = (r.hg_name(), &r.plan, r.stamp.machine.read_ahead_kb);
    let ra = ra.map_or("unknown".into(), |k| k.to_string());
    let (big, small) = (short_count(plan.big), short_count(plan.hg_sizes[0]));
    let mut rep = r.stamp.report();
    if plan.preset == "tiny" {
        rep.text(say(NOTES, "tiny", &[]));
    }
    let sizes = plan.hg_sizes.iter().map(|&n| short_count(n)).collect::<Vec<_>>().join(", ");
    let (preset, s, finished) = (plan.preset, plural(r.runs), &r.stamp.finished_utc);
    let (runs, sweep_runs) = (r.runs.to_string(), plan.sweep_runs.to_string());
    rep.text(say(NOTES, "intro", vars![sizes, big, hg, preset, runs, s, sweep_runs, finished]));
    r.stamp.add_to(&mut rep, "the repositories", &[("Mercurial", r.hg_version.clone())]);

    let made = |x: &RepoInfo| {
        let by = if x.origin == "hg" { "hg (peer gen-repo)" } else { "synthesised" };
        let now = format!("now ({})", fmt_secs(x.made.secs));
        let when = if x.generated_now { now } else { "cached".into() };
        format!("{by}, {when}")
    };
    let t = cell_table(
        &r.repos,
        &[
            ("repository", Other, &|x| format!("`{}`", x.path)),
            (">revisions", Other, &|x| x.revs.to_string()),
            (">00changelog.i", Other, &|x| {
                format!("{} ({} B)", human_size(x.index_bytes), x.index_bytes)
            }),
            ("format", Other, &|x| (if x.inline { "v1 inline" } else { "v1" }).to_owned()),
            (">00changelog.d", Other, &|x| x.data_bytes.map_or("—".into(), human_size)),
            ("made", Other, &made),
        ],
    );
    let synth = r.repos.iter().filter(|x| x.origin == "synthetic");
    let checks = synth.flat_map(|x| x.made.checks.iter().map(|c| c.line(&format!("{}, ", x.name))));
    rep.section("Repositories").table(t).text(say(NOTES, "made", &[])).list(checks);

    let (read, mmap) = (r.config_read.join(" "), r.config_mmap.join(" "));
    let warmup = r.warmup.to_string();
    rep.section("Method").list(say(NOTES, "method", vars![read, mmap, hg, warmup]).lines());
    let shown = |c: &&CellResult| matches!(c.spec.kind, Matrix | Startup) && c.runs.cache == Warm;
    let cmds = r.cells.iter().filter(shown).flat_map(|c| c.runs.contenders.iter().map(|x| &x.1));
    let tail = say(NOTES, "commands", &[]);
    let code = r.build_commands.iter().chain(cmds).map(String::as_str).chain(tail.lines());
    rep.commands(&code.map(str::to_owned).collect::<Vec<_>>());

    // Start-up floors: ours' row and hg's, compared row by row.
    let startup = r.of(Startup).next();
    let floor = |i| startup.and_then(|c| c.median(i));
    if let Some(c) = startup {
        let mut t = Table::of("command|>wall");
        for (i, role) in [(0, Ours), (1, Peer)] {
            t.row_as(role, [format!("`{}`", c.runs.contenders[i].1), c.runs.time(i, "wall_s")]);
        }
        rep.section("Start-up floor").table(t);
    }

    rep.section("Results: ours vs hg");
    let minus = |c: &CellResult, i| match (c.median(i), floor(i)) {
        (Some(s), Some(f)) if s >= f => fmt_secs(s - f),
        (Some(_), Some(_)) => "below the floor".to_owned(),
        _ => "—".to_owned(),
    };
    for repo in r.matrix_repos() {
        let cells = CACHES.into_iter().flat_map(|k| MODES.map(|m| (k, m)));
        let cells: Vec<&CellResult> = cells.filter_map(|(k, m)| r.matrix(repo, k, m)).collect();
        let t = cell_table(
            &cells,
            &[
                ("cell", Other, &|c| {
                    format!("{}, {}", c.runs.cache.name(), c.spec.mode.unwrap_or("?"))
                }),
                (">ours", Ours, &|c| c.runs.time(0, "wall_s")),
                (">hg", Peer, &|c| c.runs.time(1, "wall_s")),
                (">ours/hg (per pair)", Ratio, &|c| c.runs.ratio_text("wall_s")),
                (">ours − start-up", Ours, &|c| minus(c, 0)),
                (">hg − start-up", Peer, &|c| minus(c, 1)),
                (">index resident after ours / hg (pages)", Other, &|c| {
                    both(|i| c.pages(&r.repos, i))
                }),
            ],
        );
        let (name, size, pages) = (&repo.name, human_size(repo.index_bytes), repo.pages());
        let inline = if repo.inline { ", inline" } else { "" };
        rep.subsection(format!("{name} — 00changelog.i {size} ({pages} pages){inline}")).table(t);
    }
    rep.text(say(NOTES, "matrix", vars![ra]));

    let cells = r.cells.iter().filter(|c| matches!(c.spec.kind, Size | Advice));
    let cells: Vec<&CellResult> = cells.collect();
    let t = cell_table(
        &cells,
        &[
            ("cache", Other, &|c| c.runs.cache.name().to_owned()),
            ("A vs B", Other, &|c| format!("{} vs {}", c.spec.sides[0].who, c.spec.sides[1].who)),
            (">A", Other, &|c| c.runs.time(0, "wall_s")),
            (">B", Other, &|c| c.runs.time(1, "wall_s")),
            (">A/B (per pair)", Ratio, &|c| c.runs.ratio_text("wall_s")),
            (">index resident after A / B (pages)", Other, &|c| both(|i| c.pages(&r.repos, i))),
        ],
    );
    let title = format!("Target 1: ours mmap at {big} ≤ {SIZE_TARGET}× ours at {small}");
    rep.section(format!("{title} (independent of index size)"));
    rep.table(t).text(say(NOTES, "target1", vars![small, big, ra]));

    rep.section("Target 2: the read-vs-mmap crossover (ours)");
    for (kind, key) in [(Sweep, "sweep-ours"), (Model, "sweep-model"), (SweepHg, "sweep-hg")] {
        let cs: Vec<&CellResult> = r.of(kind).collect();
        if let Some((title, what)) =
            say(NOTES, key, &[]).split_once('\n').filter(|_| !cs.is_empty())
        {
            rep.subsection(title).text(what).table(sweep_table(&cs, &r.repos));
        }
    }
    let line = |c: &CrossoverResult| {
        let by = c.points.iter().zip(&c.decided_by);
        let by: Vec<String> =
            by.map(|((b, x), who)| format!("{} {x:.2}× ({who})", human_size(*b))).collect();
        let by =
            if by.is_empty() { String::new() } else { format!(" — per size: {}", by.join(", ")) };
        format!("**{}**, {}: {}{by}", c.source, c.cache.name(), describe(c.crossover.as_ref()))
    };
    let tie = format!("{:.0}", TIE * 100.0);
    rep.text(say(NOTES, "crossovers", &[])).list(r.crossovers.iter().map(line));
    rep.text(say(NOTES, "crossover", vars![tie]));
    let rec = &r.recommendation;
    let config =
        rec.config.as_ref().map_or("none (keep reading whole)".into(), |c| format!("`{c}`"));
    let (default, why) = (HG_DEFAULT_THRESHOLD.to_string(), &rec.why);
    rep.text(say(NOTES, "recommended", vars![config, why, default]));

    rep.section("The seed's published figures").text(say(NOTES, "seed", &[])).table(seed_table(r));
    rep.text(say(NOTES, "seed-here", vars![ra]));

    charts::section(&mut rep, &r.charts, traces.map(|p| say(NOTES, "untraced", vars![p])));
    limits::add_to(&mut rep, &r.limits);
    rep.section("Verdicts").verdicts(verdicts(r));
    let checks = r.load_checks.iter().map(|c| c.line(""));
    rep.section("Load checks (untimed, once per repository and load)").list(checks);
    rep
}

/// The seed's figures as published beside this run's medians of the same loads (ours, hg,
/// the model) on the matrix's indexes.
fn seed_table(r: &Results) -> Table {
    let mut t = Table::of("source|timed|>index|cache|>read|>mmap|>mmap/read");
    let mut row = |role, head: [&str; 4], (read, mmap): (f64, f64)| {
        let times = [fmt_secs(read), fmt_secs(mmap), format!("{:.3}×", mmap / read.max(1e-12))];
        t.row_as(role, head.into_iter().map(str::to_owned).chain(times));
    };
    for f in SEED.lines().map(|l| l.split('|').collect::<Vec<_>>()) {
        let ms = |i: usize| f[i].parse::<f64>().unwrap_or(f64::NAN) / 1e3;
        row(Other, [f[0], f[1], f[2], f[3]], (ms(4), ms(5)));
    }
    let (hg, timed) =
        (format!("this machine, {}", r.hg_name()), "`log -l 5`, process wall time, median");
    for (repo, cache) in r.matrix_repos().iter().flat_map(|x| CACHES.map(|c| (x, c))) {
        let size = human_size(repo.index_bytes);
        for (i, role, who) in [(1, Peer, hg.as_str()), (0, Ours, "this machine, ours")] {
            let m = |mode| r.matrix(repo, cache, mode)?.median(i);
            if let (Some(read), Some(mmap)) = (m("read"), m("mmap")) {
                row(role, [who, timed, &size, cache.name()], (read, mmap));
            }
        }
    }
    let (big, who) = (r.plan.hg_sizes.len(), "this machine, model of ours' load");
    let timed = "open, read(2) whole or mmap, 5 tip entries; in xtask, median";
    let size = human_size(r.repos[big].index_bytes);
    for c in r.of(Kind::Model).filter(|c| c.spec.sides[0].repo == big) {
        if let (Some(read), Some(mmap)) = (c.median(1), c.median(0)) {
            row(Other, [who, timed, &size, c.runs.cache.name()], (read, mmap));
        }
    }
    t
}

/// One sweep series' table: per size, warm and cold read, mmap and their
/// ratio, and the cold mapped run's resident pages.
fn sweep_table(cs: &[&CellResult], repos: &[RepoInfo]) -> Table {
    let mut t = Table::of(
        ">revisions|>index|>warm read|>warm mmap|>mmap/read warm|>cold read|>cold mmap|\
         >mmap/read cold|>cold mmap: resident after",
    );
    let mut at: Vec<usize> = cs.iter().map(|c| c.spec.sides[0].repo).collect();
    at.sort_by_key(|&i| repos[i].revs);
    at.dedup();
    for i in at {
        let find = |cache| cs.iter().find(|c| c.spec.sides[0].repo == i && c.runs.cache == cache);
        let mut row = vec![repos[i].revs.to_string(), human_size(repos[i].index_bytes)];
        for r in CACHES.map(|k| find(k).map(|c| &c.runs)) {
            let three =
                |r: &CellRuns| [r.time(1, "wall_s"), r.time(0, "wall_s"), r.ratio_text("wall_s")];
            row.extend(r.map_or(["—".into(), "—".into(), "—".into()], three));
        }
        row.push(find(Cold).map_or("—".into(), |c| c.pages(repos, 0)));
        t.row(row);
    }
    t.roles(Ratio, &[4, 7])
}

/// Target 1 in each cache state (its other rows as details), target 2, and the outputs and checks.
fn verdicts(r: &Results) -> Vec<Verdict> {
    let mut out = Vec::new();
    for cache in CACHES {
        let cs: Vec<&CellResult> = r.of(Kind::Size).filter(|c| c.runs.cache == cache).collect();
        let Some((first, rest)) = cs.split_first() else { continue };
        let [a, b] = [0, 1].map(|i| &first.spec.sides[i].who);
        let ratio = first.runs.ratio(0, 1, "wall_s").0;
        let name = format!("Target 1, {}", cache.name());
        let verdict = judge(name, ratio.as_ref(), (SIZE_TARGET, Bound::AtMost), ("", ""));
        out.push(verdict.target(format!("{a} ≤ {SIZE_TARGET}× {b}")));
        for c in rest {
            let [a, b] = [0, 1].map(|i| &c.spec.sides[i].who);
            let name = format!("for comparison, {a} vs {b}");
            out.push(Verdict::new(name, Outcome::None, c.runs.ratio_text("wall_s")).sub());
        }
    }
    let rec = &r.recommendation;
    let target2 = match (&rec.config, rec.bytes) {
        (Some(c), Some(b)) => {
            let (at_least, above) = (b >= HG_DEFAULT_THRESHOLD, b > HG_DEFAULT_THRESHOLD);
            let vs = ["below", "equal to", "above"][usize::from(at_least) + usize::from(above)];
            let detail = format!("`{c}` ({}; {vs} hg's default 1 MB)", human_size(b));
            Verdict::new("Target 2", Outcome::Pass, detail)
        }
        _ => Verdict::new("Target 2", Outcome::None, format!("no crossover found ({})", rec.why)),
    };
    out.push(target2.target("crossover measured and printed as the recommended threshold"));
    let bad = r.load_checks.iter().chain(r.repos.iter().flat_map(|x| &x.made.checks));
    let bad = bad.filter(|c| !c.ok).map(|c| format!("{}: {}", c.what, c.detail));
    let cells = r.cells.iter().filter(|c| !c.outputs_ok(&r.repos));
    let bad = bad.chain(cells.map(|c| format!("{}: unexpected output", c.runs.label)));
    let bad = bad.collect::<Vec<_>>().join("; ");
    let detail = if r.outputs_agree { say(NOTES, "all-ok", &[]) } else { bad };
    out.push(Verdict::new("Outputs and checks", Outcome::of(r.outputs_agree), detail));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hg 6.3's nodes in testdata are `revlog_node` of their texts and parents, in either
    /// order; the synthetic changelog reads back through core as written, a smaller one its prefix.
    #[test]
    fn nodes_are_hgs_and_the_synthetic_changelog_reads_back() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/revlog/synthetic-2000");
        let [index, data] =
            ["00changelog.i", "00changelog.d"].map(|f| fs::read(root.join(f)).unwrap());
        let idx = Index::open(&index[..]).unwrap();
        for rev in [0, 1, 1000, idx.tip()] {
            let e = idx.entry(rev).unwrap();
            let (p1, p2) = idx.checked_parents(&e).unwrap();
            let (n1, n2) = (idx.node(p1).unwrap(), idx.node(p2).unwrap());
            let chunk =
                &data[usize::try_from(e.data_offset()).unwrap()..][..e.compressed_len() as usize];
            assert_eq!(chunk[0], b'u', "rev {rev}: stored uncompressed");
            assert_eq!(revlog_node(&n1, &n2, &chunk[1..]), *e.node(), "rev {rev}");
            assert_eq!(revlog_node(&n2, &n1, &chunk[1..]), *e.node(), "order");
        }
        let synth = |revs| {
            let (mut i, mut d) = (Vec::new(), Vec::new());
            write_synth(revs, (&mut i, &mut d), |_| Ok(())).unwrap();
            (i, d)
        };
        let (index, data) = synth(300);
        assert_eq!(index[..4], [0, 0, 0, 1], "v1, no flags");
        let idx = Index::open(&index[..]).unwrap();
        assert!(!idx.is_inline() && !idx.is_generaldelta() && idx.len() == 300);
        idx.check_data_len(data.len() as u64, 0..=idx.tip()).unwrap();
        let mut prev = NULL_NODE;
        for (rev, r) in (0..300).zip(0u32..) {
            let (e, text) = (idx.entry(rev).unwrap(), synth_text(r));
            assert_eq!((e.link_rev(), idx.parent_revs(&e)), (rev, (rev - 1, -1)));
            assert_eq!(*e.node(), revlog_node(&prev, &NULL_NODE, &text), "rev {rev}");
            let chunk =
                &data[usize::try_from(e.data_offset()).unwrap()..][..e.compressed_len() as usize];
            assert_eq!(chunk, [&b"u"[..], &text].concat());
            prev = *e.node();
        }
        let (prefix_i, prefix_d) = synth(123);
        assert!(index.starts_with(&prefix_i) && data.starts_with(&prefix_d));
    }

    #[test]
    fn outputs_flags_and_mmap_reports() {
        let tips = ["9\n8\n7\n6\n5\n", "1\n0\n", "9\n7\n", ""].map(log_tip);
        assert_eq!(tips, [9.0, 1.0, -1.0, -1.0]);
        let args = |m, v| config_args(m, v).join(" ").replace("--config ", "");
        assert_eq!(args("mmap", (6, 3)), "experimental.mmapindexthreshold=0");
        let new = "storage.revlog.mmap.index=yes storage.revlog.mmap.index:size-threshold=0";
        assert_eq!([args("mmap", (7, 0)), args("read", (6, 3))], [new, &args("read", (7, 0))]);
        assert_eq!(split_mmap_report("mmap: r/.hg/store/00changelog.i\n4\n"), (true, "4\n".into()));
        assert!(!split_mmap_report("mmap: r/.hg/store/00manifest.i\n1\n").0);
    }

    #[test]
    fn crossovers_and_the_recommendation() {
        let c = crossover(&[(1 << 20, 0.8), (1 << 14, 1.05), (1 << 16, 1.2), (1 << 18, 0.9)]);
        let c = c.unwrap();
        assert_eq!((c.kind, c.below_bytes, c.from_bytes), ("between", Some(65_536), Some(1 << 18)));
        assert!(c.estimate_bytes.is_some_and(|e| e > 65_536.0 && e < 262_144.0), "{c:?}");
        // A win below a loss does not count: the last loss decides.
        assert_eq!(crossover(&[(1, 0.9), (2, 1.1), (4, 0.9)]).unwrap().from_bytes, Some(4));
        assert_eq!(crossover(&[(1, 0.9), (2, 0.8)]).unwrap().kind, "everywhere");
        let c = crossover(&[(1, 0.9), (2, 1.0)]);
        assert_eq!(describe(c.as_ref()), "mmap does not win at the largest size (2 B)");
        let x = CrossoverResult::new;
        let warm = x("combined", Warm, vec![(1 << 14, 1.1), (1 << 16, 0.9)]);
        let cold = x("combined", Cold, vec![(1 << 14, 1.1), (1 << 20, 1.1), (1 << 22, 0.7)]);
        let r = recommend(&[warm, cold, x("ours", Warm, vec![(1 << 30, 1.5)])]);
        let why = "warm: read wins or ties up to 16.0 KiB, mmap wins from 64.0 KiB on";
        assert!(r.why.starts_with(why), "{}", r.why);
        assert_eq!(r.config.unwrap(), "--config experimental.mmapindexthreshold=4M");
        // Process ties defer to the model; without a model point the process decides.
        let got = combine(&[(16, 1.03), (64, 0.9), (256, 1.2)], &[(16, 1.5), (64, 1.1)]);
        assert_eq!(got, [(16, 1.5, "model"), (64, 0.9, "ours"), (256, 1.2, "ours")]);
    }

    #[test]
    fn plans_and_cells() {
        use Kind::{Advice, Matrix, Model, Size, Startup, Sweep, SweepHg};
        let quick = Plan::new(false, false, None);
        let want = [256, 1024, 4096, 16_384, 65_536, 262_144, 1_000_000];
        assert_eq!((quick.big, quick.sweep_runs, quick.sweep), (1_000_000, 20, want.into()));
        let full = Plan::new(false, true, Some(7));
        let got = (full.sweep.len(), full.sweep[0], full.sweep_runs, full.hg_sweep);
        assert_eq!(got, (14, 64, 7, true));
        // --tiny wins over --full: no 100k, no 1M, a small synthesis.
        let tiny = Plan::new(true, true, None);
        let repos = tiny.repos();
        let synth = |n| (n, "synthetic");
        assert_eq!(repos, [(1000, "hg"), synth(5000), synth(256), synth(1024)]);
        // Start-up, 2×2×2 matrix, 2×(3 size + 1 advice), 3 sizes × 2 caches × 2 series.
        let cells = specs(&tiny, &repos, 1, 2);
        let count = |k| cells.iter().filter(|s| s.kind == k).count();
        let kinds = [Startup, Matrix, Size, Advice, Sweep, Model, SweepHg];
        assert_eq!(kinds.map(count), [1, 8, 6, 2, 6, 6, 0]);
        assert_eq!(
            (cells[1].runs, cells[9].runs, &cells[1].label[..]),
            (1, 2, "1k (hg), warm, read")
        );
        assert_eq!(cells[9].label, "ours mmap 5k (synthetic) vs ours mmap 1k (hg), warm");
        let hg = |s: &Spec| (s.kind == SweepHg).then_some(s.runs);
        assert_eq!(specs(&full, &full.repos(), 3, 2).iter().filter_map(hg).count(), 28);
    }
}
