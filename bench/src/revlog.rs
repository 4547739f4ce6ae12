//! `cargo xtask bench revlog`: `log -l 5` over a changelog index read
//! whole vs mapped, ours (`mapwise revlog log`) vs `hg log -l 5` with the
//! same `--config`, warm and cold, on 1k and 100k revisions (made by hg)
//! and 1M (synthesised, encoded by core's `V1Entry`, checked with hg);
//! then ours read vs mmap across index sizes, for the recommended
//! `mmapindexthreshold`. Every cell is data run by [`cell::run`]; the
//! report is the typed [`Report`].

use std::fs::{self, File};
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, bail};
use mapwise_core::revlog::{FLAG_INLINE_DATA, Index, NULL_NODE, Node, REVLOGV1, V1Entry};
use mapwise_native::os::map::{Advice, FileMap};
use mapwise_view::fmt::hex;
use serde::{Deserialize, Serialize};
use sha1::{Digest as _, Sha1};

use super::cell::{self, CellRuns, Contender, Metrics, Tracing, both};
use super::charts::{self, ChartFile};
use super::limits::{self, Limit};
use super::machine::{self, Machine, Stamp};
use super::output::{self, TempPath};
use super::proc::{Cmd, Output, tail};
use super::report::Role::{Other, Ours, Peer, Ratio};
use super::report::{
    Bound, Outcome, Report, Role, Table, Verdict, cell_table, fill, judge, paragraph, say,
};
use super::schedule::CacheState::{self, Cold, Warm};
use super::stats::{Summary, fmt_secs};
use super::traces::{self, TraceInfo, Traces};
use super::units::{human_size, pct, plural, ranges, utc_human};
use super::{CommonArgs, Progress, Workspace, interrupt, path_arg};

/// Long help of `cargo xtask bench revlog`.
pub const HELP: &str = include_str!("text/revlog-help.txt");

/// `-l 5`.
const LIMIT: u32 = 5;
/// hg's `log -l 5 -T '{rev}\n'` (the template prints one revision a line).
const LOG_T: [&str; 5] = ["log", "-l", "5", "-T", "{rev}\\n"];
/// Target: ours mmap at the largest size ≤ this × ours at 1k.
const SIZE_TARGET: f64 = 1.2;
/// hg 6.9's `storage.revlog.mmap.index:size-threshold` default.
const HG_DEFAULT_THRESHOLD: u64 = 1 << 20;
/// Ours' process ratios within this much of 1 are a tie ([`combine`]):
/// process start-up jitters by more than the loads differ at small sizes.
const TIE: f64 = 0.05;
/// The record each cached repository carries.
const MADE: &str = "bench-made.json";
const CACHES: [CacheState; 2] = [Warm, Cold];
/// How the changelog index is loaded: read whole or mapped.
type Mode = &'static str;
const MODES: [Mode; 2] = ["read", "mmap"];

/// `[("name", name), …]` as `&str`s, the variables of [`say`] and [`fill`].
macro_rules! vars {
    ($($k:ident),*) => { &[$((stringify!($k), AsRef::<str>::as_ref(&$k))),*] };
}

/// The report's prose ([`say`]).
const NOTES: &str = include_str!("text/revlog-notes.md");

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
        let preset = if tiny {
            "tiny"
        } else if full {
            "full"
        } else {
            "quick"
        };
        let (hg_sizes, big) =
            if tiny { (vec![1000], 5000) } else { (vec![1000, 100_000], 1_000_000) };
        // Powers of two: quick 256 to 256k by fours, full 64 and 256 to 512k.
        let (exponents, runs): (Vec<u32>, u64) = match preset {
            "tiny" => (vec![8, 10], 2),
            "quick" => ((8..=18).step_by(2).collect(), 20),
            _ => (std::iter::once(6).chain(8..20).collect(), 50),
        };
        let mut sweep: Vec<u32> = exponents.iter().map(|e| 1 << e).chain([big]).collect();
        sweep.sort_unstable();
        let sweep_runs = sweep_runs.unwrap_or(runs);
        Plan { preset, hg_sizes, big, sweep, sweep_runs, hg_sweep: preset == "full" }
    }

    /// Every repository: the hg-made ones, the big one, the rest of the sweep.
    fn repos(&self) -> Vec<(u32, Origin)> {
        let hg = self.hg_sizes.iter().map(|&n| (n, "hg"));
        let rest = self.sweep.iter().filter(|&&n| n != self.big);
        let synth = std::iter::once(&self.big).chain(rest);
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

/// A linear changelog as hg writes one (v1, not inline, texts stored `u` + text).
#[derive(Debug, Clone, Default)]
struct SynthChangelog {
    next: u32,
    offset: u64,
    prev: Node,
}

impl SynthChangelog {
    /// The next revision's index entry and data chunk.
    fn next_rev(&mut self) -> (V1Entry, Vec<u8>) {
        let rev = i32::try_from(self.next).unwrap_or(i32::MAX);
        let text = synth_text(self.next);
        let full = i32::try_from(text.len()).unwrap_or(i32::MAX);
        let node = revlog_node(&self.prev, &NULL_NODE, &text);
        let e = V1Entry {
            data_offset: self.offset,
            flags: 0,
            compressed_len: full.unsigned_abs() + 1,
            uncompressed_len: full,
            base_rev: rev,
            link_rev: rev,
            p1: rev - 1,
            p2: -1,
            node,
        };
        self.offset += u64::from(e.compressed_len);
        (self.prev, self.next) = (node, self.next + 1);
        (e, [&b"u"[..], &text].concat())
    }

    /// `revs` revisions into `index` (rev 0 with the v1 header) and
    /// `data`, calling `every(rev)` every 65536 revisions.
    fn write(
        revs: u32,
        index: &mut impl std::io::Write,
        data: &mut impl std::io::Write,
        mut every: impl FnMut(u32) -> Result<()>,
    ) -> Result<()> {
        let mut s = Self::default();
        for rev in 0..revs {
            let (e, chunk) = s.next_rev();
            let bytes = if rev == 0 { e.encode_first(u32::from(REVLOGV1)) } else { e.encode() };
            index.write_all(&bytes)?;
            data.write_all(&chunk)?;
            if rev % 65_536 == 0 {
                every(rev)?;
            }
        }
        Ok(())
    }
}

/// One data row of `hg debugindex -c` (rev, linkrev, three short nodes)
/// joined by single spaces; `None` for other lines.
fn index_row(line: &str) -> Option<String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let hexish = |s: &&str| s.len() == 12 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let revs = w.iter().take(2).all(|n| n.parse::<u32>().is_ok());
    (w.len() == 5 && revs && w[2..].iter().all(hexish)).then(|| w.join(" "))
}

/// The rows (as [`index_row`]) hg must show for `revs` (ascending) of the synthetic changelog.
fn synth_rows(revs: &[u32]) -> Vec<String> {
    let (mut s, mut out, null) = (SynthChangelog::default(), vec![], "0".repeat(12));
    let mut p1 = null.clone();
    for rev in 0..=revs.last().copied().unwrap_or(0) {
        let node = hex(&s.next_rev().0.node[..6]);
        if revs.contains(&rev) {
            out.push(format!("{rev} {rev} {node} {p1} {null}"));
        }
        p1 = node;
    }
    out
}

/// Revisions to sample: the first five, five in the middle, the last five.
fn sample_revs(revs: u32) -> Vec<u32> {
    let mid = revs / 2;
    let picks = (0..5).chain(mid.saturating_sub(2)..mid + 3);
    let v: std::collections::BTreeSet<u32> = picks.chain(revs.saturating_sub(5)..revs).collect();
    v.into_iter().filter(|&r| r < revs).collect()
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

/// `6.3.2` from `Mercurial Distributed SCM (version 6.3.2)`.
fn hg_version_number(line: &str) -> Option<&str> {
    Some(line.split("version ").nth(1)?.trim_end_matches(')').trim())
}

/// `(major, minor)` from `hg --version`'s first line.
fn parse_hg_version(line: &str) -> Option<(u32, u32)> {
    let mut parts = hg_version_number(line)?.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
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

/// A size as hg's `ui.configbytes` reads it back exactly: `256k`, `1M`.
fn hg_size(b: u64) -> String {
    match b {
        0 => "0".to_owned(),
        b if b.is_multiple_of(1 << 20) => format!("{}M", b >> 20),
        b if b.is_multiple_of(1 << 10) => format!("{}k", b >> 10),
        b => b.to_string(),
    }
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
    let Some(x) = x else {
        return "no data".to_owned();
    };
    let (from, below) = (size(x.from_bytes), size(x.below_bytes));
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let at = size(x.estimate_bytes.map(|e| e as u64));
    match x.kind {
        "everywhere" => format!("mmap wins at every size measured, from {from} on"),
        "nowhere" => format!("mmap does not win at the largest size ({below})"),
        _ => format!(
            "read wins or ties up to {below}, mmap wins from {from} on (interpolated crossing ≈ {at})"
        ),
    }
}

/// Per size, ours' process ratio where decisive, else the model's; with who decided.
fn combine(
    process: &[(u64, f64)],
    model: &[(u64, f64)],
    tie: f64,
) -> Vec<(u64, f64, &'static str)> {
    let model_at = |bytes| model.iter().find(|(b, _)| *b == bytes).map(|&(_, m)| m);
    let one = |&(bytes, r): &(u64, f64)| match model_at(bytes) {
        Some(m) if (r - 1.0).abs() < tie => (bytes, m, "model"),
        _ => (bytes, r, "ours"),
    };
    process.iter().map(one).collect()
}

/// `mapping wins`, `reading wins`, or `a tie, within 5 %` (`tie` of 1).
fn winner(ratio: f64, tie: f64) -> String {
    match ratio {
        r if r < 1.0 - tie => "mapping wins".to_owned(),
        r if r > 1.0 + tie => "reading wins".to_owned(),
        _ => format!("a tie, within {:.0} %", tie * 100.0),
    }
}

// Repositories.

/// `hg` as the peer runs it: no user configuration, plain output.
fn hg() -> Cmd {
    Cmd::new("hg").env("HGRCPATH", "").env("HGPLAIN", "1")
}

/// Who made a repository: `hg` (the peer's `gen-repo`) or `synthetic` (xtask).
type Origin = &'static str;

/// `1k (hg)`, `1M (synthetic)`.
fn repo_name((revs, origin): (u32, Origin)) -> String {
    format!("{} ({origin})", short_count(revs))
}

/// A check with its outcome.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Check {
    what: String,
    ok: bool,
    detail: String,
}

fn check(what: impl Into<String>, ok: bool, detail: impl Into<String>) -> Check {
    Check { what: what.into(), ok, detail: detail.into() }
}

impl Check {
    /// `{of}what: OK — detail`, for the report's lists.
    fn line(&self, of: &str) -> String {
        let ok = if self.ok { "OK" } else { "**FAIL**" };
        format!("{of}{}: {ok} — {}", self.what, self.detail)
    }
}

/// The record kept in each cached repository, with hg's checks of it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Made {
    how: String,
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

/// `target/bench/files/revlog-<hg|synth>-<revs>`, cached or made by `make(tmp, dir)`.
fn ensure_repo(
    ws: &Workspace,
    (revs, origin): (u32, Origin),
    hg: Option<&str>,
    make: impl FnOnce(&Path, &Path) -> Result<(String, Vec<Check>)>,
) -> Result<RepoInfo> {
    let tag = if origin == "hg" { "hg" } else { "synth" };
    let dir = ws.bench_dir().join("files").join(format!("revlog-{tag}-{revs}"));
    let record =
        || -> Option<Made> { serde_json::from_str(&fs::read_to_string(dir.join(MADE)).ok()?).ok() };
    if record().is_none() {
        // No record: made by an interrupted older run; make it again.
        let _ = fs::remove_dir_all(&dir);
    }
    let generated_now = output::make_once(&dir, |tmp| {
        let start = Instant::now();
        let (how, checks) = make(tmp, &dir)?;
        let secs = start.elapsed().as_secs_f64();
        let (made_utc, hg_version) = (utc_human(SystemTime::now()), hg.map(str::to_owned));
        let made = Made { how, secs, made_utc, hg_version, checks };
        Ok(fs::write(tmp.join(MADE), serde_json::to_string_pretty(&made)? + "\n")?)
    })?;
    let made = record().with_context(|| format!("{}: no readable {MADE}", dir.display()))?;
    let index = dir.join(".hg/store/00changelog.i");
    let no = || format!("{}: no changelog", index.display());
    let index_bytes = fs::metadata(&index).with_context(no)?.len();
    let mut head = [0u8; 4];
    File::open(&index)?.read_exact(&mut head)?;
    Ok(RepoInfo {
        name: repo_name((revs, origin)),
        path: path_arg(&dir),
        revs,
        origin,
        index_bytes,
        data_bytes: fs::metadata(index.with_extension("d")).ok().map(|m| m.len()),
        inline: u32::from_be_bytes(head) & FLAG_INLINE_DATA != 0,
        generated_now,
        made,
    })
}

/// Makes a repository in `tmp`: by the peer, or synthesised (`full`: the big one, every check).
fn make_repo(
    ws: &Workspace,
    (revs, origin): (u32, Origin),
    (peer, mapwise): (&str, &Path),
    full: bool,
    p: &Progress,
    (tmp, dir): (&Path, &Path),
) -> Result<(String, Vec<Check>)> {
    let (at, shown) = (dir.display(), ws.rel(dir));
    if origin == "hg" {
        let slow = if revs >= 50_000 { ", about 2 min per 100k" } else { "" };
        p.note(&format!(
            "xtask: making {at} with hg ({revs} revisions{slow}; cached for later runs)"
        ));
        p.set(format!("hg gen-repo --revs {revs}"));
        let cmd = Cmd::new(peer).args(["gen-repo", &path_arg(tmp), "--revs", &revs.to_string()]);
        let out = cmd.run(&ws.root).context("cannot make the repository")?;
        let how = format!("{}  # then renamed to {shown}", cmd.shell());
        return Ok((how, vec![check("gen-repo output", true, said(&out, 0))]));
    }
    hg().args(["init", &path_arg(tmp)]).run(&ws.root).context("hg init")?;
    let store = tmp.join(".hg/store");
    p.note(&format!("xtask: synthesising {revs} revisions in {at} (cached for later runs)"));
    let open = |n| File::create(store.join(n)).map(|f| BufWriter::with_capacity(1 << 20, f));
    let (mut index, mut data) = (open("00changelog.i")?, open("00changelog.d")?);
    SynthChangelog::write(revs, &mut index, &mut data, |rev| {
        p.set(format!("synthesising the changelog: rev {rev}/{revs}"));
        Ok(interrupt::check()?)
    })?;
    for w in [index, data] {
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    let how = format!(
        "hg init {shown}; xtask writes 00changelog.i/.d: {revs} linear, file-less changesets (v1, not \
         inline, `u` + text chunks, text = \"<null manifest>\\nbench\\n<rev> 0\\n\\nr<rev>\")"
    );
    Ok((how, check_synth(ws, tmp, revs, full, mapwise, p)?))
}

/// hg's checks of a synthetic repository (`full`: the synthesised one, every check).
fn check_synth(
    ws: &Workspace,
    dir: &Path,
    revs: u32,
    full: bool,
    mapwise: &Path,
    p: &Progress,
) -> Result<Vec<Check>> {
    let run =
        |args: &[&str]| hg().arg("-R").arg(path_arg(dir)).args(args.to_vec()).output(&ws.root);
    let want = expected_log(revs, LIMIT);
    let log = run(&LOG_T)?;
    let printed = format!("printed {}", log.stdout.trim().replace('\n', " "));
    let mut checks = vec![check("hg log -l 5 -T '{rev}\\n'", log.stdout == want, printed)];
    if full {
        // What `{rev}` needs: the same log with the data file moved away
        // (in the temporary directory, before it is renamed into place).
        let d = dir.join(".hg/store/00changelog.d");
        fs::rename(&d, d.with_extension("away"))?;
        let bare = run(&LOG_T);
        fs::rename(d.with_extension("away"), &d)?;
        let bare = bare?;
        let detail = if bare.success && bare.stdout == want {
            "the index only: it prints the same with 00changelog.d moved away".to_owned()
        } else {
            let why = tail(&bare.stderr, 1);
            format!("the data file too: without 00changelog.d it fails ({why})")
        };
        let what = "what hg log -T '{rev}\\n' reads (a note, not a pass/fail check)";
        checks.push(check(what, true, detail));
    }
    if revs <= 20_000 {
        p.set(format!("hg verify, {revs} revisions"));
        let v = run(&["verify"])?;
        let out = tail(&format!("{}{}", v.stdout, v.stderr), 3).replace('\n', "; ");
        let detail = format!("{}: {out}", v.status);
        checks.push(check(format!("hg verify ({revs} revisions)"), v.success, detail));
    }
    if !full {
        return Ok(checks);
    }
    p.set(format!("hg debugindex -c, {revs} revisions (once)"));
    let hg_di = run(&["debugindex", "-c"])?.stdout;
    let samples = sample_revs(revs);
    let rows: Vec<String> = hg_di.lines().filter_map(index_row).collect();
    let wrong = |(want, &rev): (String, &u32)| {
        let got = rows.get(rev as usize);
        (got != Some(&want)).then(|| format!("rev {rev}: hg {got:?}, written {want:?}"))
    };
    let bad: Vec<String> =
        synth_rows(&samples).into_iter().zip(&samples).filter_map(wrong).collect();
    let (n, lines, at) = (samples.len(), hg_di.lines().count(), ranges(&samples));
    let detail = if bad.is_empty() {
        format!("{n} rows (revs {at}) equal to the bytes written; {lines} lines in all")
    } else {
        bad.join("; ")
    };
    let ok = bad.is_empty() && lines == revs as usize + 1;
    checks.push(check("hg debugindex -c, sampled rows", ok, detail));
    let ours = Cmd::new(path_arg(mapwise)).args(["revlog", "debugindex", "-c", "-R"]);
    let ours = ours.arg(path_arg(dir)).run(&ws.root)?.stdout;
    let detail = if ours == hg_di {
        format!("identical, {} bytes", ours.len())
    } else {
        let first = ours.lines().zip(hg_di.lines()).position(|(a, b)| a != b);
        format!("differ (first differing line: {first:?})")
    };
    let what = "hg debugindex -c = ours (`mapwise revlog debugindex -c`)";
    checks.push(check(what, ours == hg_di, detail));
    for rev in [0, revs - 1] {
        let d = run(&["debugdata", "-c", &rev.to_string()])?;
        let ok = d.success && d.stdout.as_bytes() == synth_text(rev);
        let detail = if d.success { format!("{:?}", d.stdout) } else { tail(&d.stderr, 2) };
        checks.push(check(format!("hg debugdata -c {rev}"), ok, detail));
    }
    let l = run(&["log", "-l", "2"])?;
    let ok = l.success && l.stdout.contains(&format!("changeset:   {}:", revs - 1));
    let what = "hg log -l 2 (default template: reads the texts, checks their SHA-1)";
    checks.push(check(what, ok, said(&l, 2)));
    Ok(checks)
}

/// `o`'s stdout on one line when it succeeded, else its stderr's last `n` lines.
fn said(o: &Output, n: usize) -> String {
    if o.success { o.stdout.trim().replace('\n', "; ") } else { tail(&o.stderr, n) }
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
#[derive(Clone, Debug)]
struct Spec {
    kind: Kind,
    label: String,
    cache: CacheState,
    mode: Option<Mode>,
    runs: usize,
    sides: [Side; 2],
}

/// Every cell in run order: start-up, matrix, size check, sweep (`repos`: [`Plan::repos`]).
fn specs(plan: &Plan, repos: &[(u32, Origin)], runs: usize, sweep_runs: usize) -> Vec<Spec> {
    let name = |i: usize| repo_name(repos[i]);
    let side = |who: &str, job, repo| Side { who: who.to_owned(), job, repo };
    let mut out = Vec::new();
    let mut add = |kind, label, cache, mode, a, b| {
        let long = matches!(kind, Kind::Matrix | Kind::Startup | Kind::SweepHg);
        let runs = if long { runs } else { sweep_runs };
        out.push(Spec { kind, label, cache, mode, runs, sides: [a, b] });
    };
    let (a, b) = (side("ours", Task::OursVersion, 0), side("hg", Task::HgRoot, 0));
    add(Kind::Startup, "start-up".to_owned(), Warm, None, a, b);
    let big = plan.hg_sizes.len();
    for (r, cache, m) in
        (0..=big).flat_map(|r| CACHES.into_iter().flat_map(move |c| MODES.map(|m| (r, c, m))))
    {
        let label = format!("{}, {}, {m}", name(r), cache.name());
        let (a, b) = (side("ours", Task::Ours(m), r), side("hg", Task::Hg(m), r));
        add(Kind::Matrix, label, cache, Some(m), a, b);
    }
    // The 1k side: hg's (inline) mapped and read, and the synthetic 1024
    // (the big one's format) mapped.
    let synth1k = repos.iter().position(|&r| r == (1024, "synthetic"));
    let small: Vec<(usize, Mode)> =
        [(0, "mmap"), (0, "read")].into_iter().chain(synth1k.map(|i| (i, "mmap"))).collect();
    for cache in CACHES {
        for &(s, m) in &small {
            let a = side(&format!("ours mmap {}", name(big)), Task::Ours("mmap"), big);
            let b = side(&format!("ours {m} {}", name(s)), Task::Ours(m), s);
            let label = format!("{} vs {}, {}", a.who, b.who, cache.name());
            add(Kind::Size, label, cache, Some("mmap"), a, b);
        }
        // What a cold mapped run pays for read-around.
        let label = format!("model mmap+MADV_RANDOM vs mmap, {}, {}", name(big), cache.name());
        let a = side("model mmap + MADV_RANDOM", Task::Model("mmap", true), big);
        let b = side("model mmap", Task::Model("mmap", false), big);
        add(Kind::Advice, label, cache, Some("mmap"), a, b);
    }
    let mut series = vec![
        (Kind::Sweep, "ours", Task::Ours("mmap"), Task::Ours("read")),
        (Kind::Model, "model", Task::Model("mmap", false), Task::Model("read", false)),
    ];
    if plan.hg_sweep {
        series.push((Kind::SweepHg, "hg", Task::Hg("mmap"), Task::Hg("read")));
    }
    let mut sweep: Vec<usize> = (big..repos.len()).collect();
    sweep.sort_by_key(|&i| repos[i].0);
    for (r, cache) in sweep.into_iter().flat_map(|r| CACHES.map(|c| (r, c))) {
        for &(kind, who, a, b) in &series {
            let label = format!("sweep {who}, {}, {}", name(r), cache.name());
            let (a, b) = (side(&format!("{who} mmap"), a, r), side(&format!("{who} read"), b, r));
            add(kind, label, cache, None, a, b);
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
        let map = unsafe { FileMap::shared_read_only(&f, len, false) }
            .with_context(|| format!("{}: mmap", path.display()))?;
        if random {
            map.advise(Advice::Random, 0, len)
                .with_context(|| format!("{}: madvise", path.display()))?;
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
        let (p, flags) = (repo.path.as_str(), |m| config_args(m, self.hg_v));
        let ours = || Cmd::new(&self.mapwise);
        match job {
            Task::Ours(m) => ours().args(["revlog", "log", "-l", "5", p]).args(flags(m)),
            Task::Hg(m) => hg().args(LOG_T).args(["-R", p]).args(flags(m)),
            Task::OursVersion => ours().arg("--version"),
            Task::HgRoot => hg().args(["-R", p, "root"]),
            Task::Model(..) => unreachable!("the model runs inside xtask"),
        }
    }

    /// `s` as a contender on its repository's index, every `log` output read as its tip.
    fn contender(&self, s: &Side) -> Contender {
        let repo = &self.repos[s.repo];
        let c = match s.job {
            Task::Model(mode, random) => {
                let load = match (mode, random) {
                    ("read", _) => "read(2) whole file of",
                    (_, false) => "mmap(PROT_READ, MAP_SHARED) + munmap of",
                    (_, true) => "mmap(PROT_READ, MAP_SHARED) + madvise(MADV_RANDOM) + munmap of",
                };
                let index = repo.index();
                let what = format!(
                    "(in xtask) open + fstat + {load} {} + touch 5 tip entries and their parents' nodes",
                    path_arg(&index)
                );
                let work = move || {
                    Ok(Metrics::from([("wall_s".to_owned(), model_load(&index, mode, random)?)]))
                };
                Contender::in_process(&s.who, what, Rc::new(work))
            }
            Task::Ours(_) | Task::Hg(_) => Contender::new(&s.who, self.cmd(s.job, repo), |o| {
                Ok(Metrics::from([("tip".to_owned(), log_tip(&o.stdout))]))
            }),
            _ => Contender::new(&s.who, self.cmd(s.job, repo), |_| Ok(Metrics::new())),
        };
        c.on(vec![repo.index()])
    }
}

/// A finished cell: what it compared and its runs.
#[derive(Debug, Serialize)]
struct CellResult {
    kind: Kind,
    mode: Option<Mode>,
    sides: [Side; 2],
    #[serde(flatten)]
    runs: CellRuns,
}

impl CellResult {
    /// Whether every `log` printed its repository's 5 tip revisions.
    fn outputs_ok(&self, repos: &[RepoInfo]) -> bool {
        let tip = |i: usize| f64::from(repos[self.sides[i].repo].revs) - 1.0;
        let mut runs = self.runs.warmup.iter().chain(&self.runs.rounds);
        runs.all(|r| {
            r.results.iter().enumerate().all(|(i, x)| x.get("tip").is_none_or(|t| t == tip(i)))
        })
    }

    fn median(&self, i: usize) -> Option<f64> {
        self.runs.summary(i, "wall_s").map(|s| s.median)
    }

    /// A/B, round by round.
    fn ratios(&self) -> Option<Summary> {
        self.runs.ratio(0, 1, "wall_s").0
    }

    /// `2/1563 (0.1 %)`: side `i`'s median index pages resident after a run.
    fn pages(&self, repos: &[RepoInfo], i: usize) -> String {
        let total = repos[self.sides[i].repo].pages();
        #[expect(clippy::cast_precision_loss)]
        let of = |f: Summary| format!("{:.0}/{total} ({})", f.median * total as f64, pct(f.median));
        self.runs.summary(i, "resident_after").map_or("—".into(), of)
    }
}

// Load checks (untimed).

/// Whether hg's output (with text/revlog-reportmmap.py, which reports
/// `util.mmapread`) says it mapped the changelog, and the rest of it.
fn split_mmap_report(stdout: &str) -> (bool, String) {
    let (maps, rest): (Vec<&str>, _) = stdout.lines().partition(|l| l.starts_with("mmap: "));
    let mapped = maps.iter().any(|l| l.ends_with("00changelog.i"));
    (mapped, rest.iter().map(|l| format!("{l}\n")).collect())
}

/// Whether ours' `--json` on `repo` says it used `mode` and read the
/// index whole and right; and what it says.
fn ours_json(stdout: &str, repo: &RepoInfo, mode: Mode) -> (bool, String) {
    let j: serde_json::Value = match serde_json::from_str(stdout) {
        Ok(j) => j,
        Err(e) => return (false, format!("bad JSON from mapwise: {e}")),
    };
    let field = |k: &str| j[k].as_str().map_or_else(|| j[k].to_string(), str::to_owned);
    let entries = j["entries"].as_array().map(Vec::as_slice).unwrap_or_default();
    let revs: Vec<i64> = entries.iter().filter_map(|e| e["rev"].as_i64()).collect();
    let want = expected_log(repo.revs, LIMIT);
    let ok = field("load") == mode
        && revs.iter().map(|r| format!("{r}\n")).collect::<String>() == want
        && j["index_bytes"].as_u64() == Some(repo.index_bytes)
        && j["revisions"].as_u64() == Some(u64::from(repo.revs));
    let keys = ["load", "populate", "threshold", "index_bytes", "revisions", "inline"];
    let shown: Vec<String> = keys.iter().map(|k| format!("{k}={}", field(k))).collect();
    (ok, format!("{} revs={revs:?}", shown.join(" ")))
}

/// Ours' `--json` and (`with_hg`) hg's `util.mmapread` on `repo` in `mode`.
fn load_check(
    ctx: &Ctx,
    ws: &Workspace,
    ext: &str,
    (repo, mode): (&RepoInfo, Mode),
    with_hg: bool,
) -> Result<Vec<Check>> {
    let of = format!("{}, {mode}", repo.name);
    let out = ctx.cmd(Task::Ours(mode), repo).arg("--json").run(&ws.root)?;
    let (ok, detail) = ours_json(&out.stdout, repo, mode);
    let mut checks = vec![check(format!("{of}: ours --json"), ok, detail)];
    if with_hg {
        let ext = format!("extensions.reportmmap={ext}");
        let out = ctx.cmd(Task::Hg(mode), repo).args(["--config", &ext]).run(&ws.root)?;
        let (mapped, rest) = split_mmap_report(&out.stdout);
        let as_expected = rest == expected_log(repo.revs, LIMIT);
        let how = if mapped { "mapped" } else { "not mapped (read)" };
        let log = if as_expected { "as expected" } else { "UNEXPECTED" };
        let ok = mapped == (mode == "mmap") && as_expected;
        let detail = format!("00changelog.i {how}; log output {log}");
        checks.push(check(format!("{of}: hg util.mmapread"), ok, detail));
    }
    Ok(checks)
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
        self.cells.iter().filter(move |c| c.kind == kind)
    }

    /// The matrix's repositories: the hg-made ones and the synthesised one.
    fn matrix_repos(&self) -> &[RepoInfo] {
        &self.repos[..=self.plan.hg_sizes.len()]
    }

    fn big(&self) -> &RepoInfo {
        &self.repos[self.plan.hg_sizes.len()]
    }

    fn matrix(&self, repo: &RepoInfo, cache: CacheState, mode: Mode) -> Option<&CellResult> {
        let on = |c: &&CellResult| self.repos[c.sides[0].repo].name == repo.name;
        let at = |c: &&CellResult| c.runs.cache == cache && c.mode == Some(mode);
        self.of(Kind::Matrix).filter(on).find(at)
    }

    /// The device's read_ahead_kb, or `unknown`.
    fn read_ahead(&self) -> String {
        self.stamp.machine.read_ahead_kb.map_or("unknown".into(), |k| k.to_string())
    }

    /// `hg 6.3.2`.
    fn hg_name(&self) -> String {
        let v = self.hg_version.as_deref().and_then(hg_version_number);
        v.map_or_else(|| "hg".to_owned(), |v| format!("hg {v}"))
    }
}

/// Runs the bench.
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = args.common.runs()?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let plan = Plan::new(args.common.tiny, args.full, args.sweep_runs);
    let sweep_runs = usize::try_from(plan.sweep_runs).context("--sweep-runs too large")?;
    let peer = ws.peer("revlog")?;
    let planned = plan.repos();
    let specs = specs(&plan, &planned, runs, sweep_runs);
    let steps = specs.iter().map(|s| 2 * (warmup + s.runs)).sum::<usize>();
    let progress = Progress::new((1 + steps + limits::steps(runs)) as u64);
    let (build, mapwise) = ws.build_mapwise(&progress)?;

    // Repositories (the peer installs hg when it makes one), hg's first.
    let hg_line = || machine::first_line_of("hg", &["--version", "-q"]);
    let (mut hg_version, big) = (hg_line(), plan.hg_sizes.len());
    let mut repos: Vec<RepoInfo> = Vec::new();
    for &(revs, origin) in &planned {
        let tools = (peer.as_str(), Path::new(&mapwise));
        let make = |tmp: &Path, dir: &Path| {
            make_repo(ws, (revs, origin), tools, revs == plan.big, &progress, (tmp, dir))
        };
        let repo = ensure_repo(ws, (revs, origin), hg_version.as_deref(), make)?;
        repos.push(repo);
        hg_version = hg_version.or_else(hg_line);
    }
    let Some(hg_v) = hg_version.as_deref().and_then(parse_hg_version) else {
        bail!("cannot run `hg --version` (apt-get install mercurial)");
    };
    for r in &repos {
        for c in r.made.checks.iter().filter(|c| !c.ok) {
            let (name, what, detail) = (&r.name, &c.what, &c.detail);
            progress.note(&format!("xtask: warning: {name}: {what} failed: {detail}"));
        }
    }
    let ctx = Ctx { mapwise, hg_v, repos: &repos };

    progress.set("load checks");
    let ext = format!(".revlog-reportmmap-{}.py", std::process::id());
    let ext = TempPath::new(std::path::absolute(ws.bench_dir())?.join(ext));
    fs::write(ext.path(), include_str!("text/revlog-reportmmap.py"))?;
    let mut load_checks = Vec::new();
    for (i, m) in (0..repos.len()).flat_map(|i| MODES.map(|m| (i, m))) {
        let (with_hg, at) = (i <= big || plan.hg_sweep, path_arg(ext.path()));
        load_checks.extend(load_check(&ctx, ws, &at, (&repos[i], m), with_hg)?);
    }
    drop(ext);

    let tracing = Tracing::new(ws);
    let one = |s: Spec| -> Result<CellResult> {
        let contenders = s.sides.iter().map(|x| ctx.contender(x)).collect();
        let cell = cell::Cell::new(s.label, s.cache, Vec::new(), contenders, (warmup, s.runs));
        let runs = cell::run(ws, &progress, &cell, &tracing)?;
        Ok(CellResult { kind: s.kind, mode: s.mode, sides: s.sides, runs })
    };
    let cells: Vec<CellResult> = specs.into_iter().map(one).collect::<Result<_>>()?;
    let limits = limits::standard(&repos[big].index(), runs, &progress)?;
    let traces = tracing.traces.into_inner();
    let crossovers = crossovers(&cells, &repos);
    let recommendation = recommend(&crossovers);
    let outputs_agree = cells.iter().all(|c| c.outputs_ok(&repos))
        && load_checks.iter().all(|c| c.ok)
        && repos.iter().all(|r| r.made.checks.iter().all(|c| c.ok));
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
    let report =
        report(&results, traces.paragraph(&say(NOTES, "traced", &[]), Path::new(&ws.rel(&dir))));
    drop(progress);
    output::publish_traced(&dir, &report, &results, &traces, &results.charts)?;
    Ok(output::exit(results.outputs_agree, "an output or a check was not as expected"))
}

/// The crossover of each series (ours, the model, hg) in each cache
/// state, then of the combined series the recommendation uses.
fn crossovers(cells: &[CellResult], repos: &[RepoInfo]) -> Vec<CrossoverResult> {
    use Kind::{Model, Sweep, SweepHg};
    let points = |kind, cache| -> Vec<(u64, f64)> {
        let of = |c: &CellResult| Some((repos[c.sides[0].repo].index_bytes, c.ratios()?.median));
        let cells = cells.iter().filter(|c| c.kind == kind && c.runs.cache == cache);
        cells.filter_map(of).collect()
    };
    let series = [(Sweep, "ours"), (Model, "model"), (SweepHg, "hg")];
    let each = series.into_iter().flat_map(|s| CACHES.map(|c| (s, c)));
    let each = each
        .map(|((kind, source), cache)| CrossoverResult::new(source, cache, points(kind, cache)));
    let mut out: Vec<CrossoverResult> = each.filter(|c| !c.points.is_empty()).collect();
    for cache in CACHES {
        let both = combine(&points(Sweep, cache), &points(Model, cache), TIE);
        let mut c =
            CrossoverResult::new("combined", cache, both.iter().map(|&(b, r, _)| (b, r)).collect());
        c.decided_by = both.iter().map(|&(_, _, by)| by).collect();
        out.push(c);
    }
    out
}

/// The charts: ours/hg per matrix cell, and each matrix index's first cold runs.
fn revlog_charts(r: &Results, traces: &Traces) -> Result<Vec<ChartFile>> {
    let hg = r.hg_name();
    let (title, what) = (
        format!("revlog: log -l 5, ours / {hg}"),
        format!("log -l 5 wall time, ours / {hg} per cell"),
    );
    let matrix = r.of(Kind::Matrix).map(|c| &c.runs);
    let mut out = vec![ChartFile::ratios(matrix, "wall_s", (&title, &what), None)?];
    for repo in r.matrix_repos() {
        let cells = MODES.iter().filter_map(|&m| r.matrix(repo, Cold, m));
        let pick = |c: &CellResult| {
            let mode = c.mode.unwrap_or_default();
            ["ours", "hg"].map(|side| (c.runs.label.clone(), side, format!("{side}, {mode}")))
        };
        let picks: Vec<(String, &str, String)> = cells.flat_map(pick).collect();
        let name = &repo.name;
        let title = format!("revlog, {name}, cold log -l 5: 00changelog.i in the page cache");
        let file = format!("residency-cold-{}.svg", traces::slug(name));
        let what = format!(
            "{name}: resident share of 00changelog.i during the first timed cold run, read vs mmap, ours vs hg"
        );
        out.extend(traces::residency_file(traces, &file, (&title, &what), &picks)?);
    }
    Ok(out)
}

/// The larger combined crossover: above it mapping costs no more than reading.
fn recommend(crossovers: &[CrossoverResult]) -> Recommendation {
    let combined = crossovers.iter().filter(|c| c.source == "combined");
    let one =
        |c: &CrossoverResult| format!("{}: {}", c.cache.name(), describe(c.crossover.as_ref()));
    let why = combined.clone().map(one).collect::<Vec<_>>().join("; ");
    let from = |c: &CrossoverResult| c.crossover.as_ref().and_then(|x| x.from_bytes);
    let bytes = combined.filter_map(from).max();
    let config = bytes.map(|b| format!("--config experimental.mmapindexthreshold={}", hg_size(b)));
    Recommendation { bytes, config, why }
}

// The seed's published figures.

/// The seed's figures as published (its notes name the sources): source | timed |
/// index | cache | read ms | mmap ms.
const SEED: &str = include_str!("text/revlog-seed.psv");

/// [`SEED`]'s rows: the four text fields and the (read, mmap) times in ms.
fn seed_figures() -> Vec<([&'static str; 4], f64, f64)> {
    let row = |l: &'static str| {
        let f: Vec<&str> = l.split('|').collect();
        let ms = |i: usize| f[i].parse().unwrap_or(f64::NAN);
        ([f[0], f[1], f[2], f[3]], ms(4), ms(5))
    };
    SEED.lines().map(row).collect()
}

/// The seed's figures beside this run's, and what matches.
fn seed_section(rep: &mut Report, r: &Results) {
    rep.section("The seed's published figures").text(say(NOTES, "seed", &[]));
    let mut t = Table::of("source|timed|>index|cache|>read|>mmap|>mmap/read");
    let mut row = |role, head: [&str; 4], (read, mmap): (f64, f64)| {
        let times = [fmt_secs(read), fmt_secs(mmap), format!("{:.3}×", mmap / read.max(1e-12))];
        t.row_as(role, head.into_iter().map(str::to_owned).chain(times));
    };
    for (head, read, mmap) in seed_figures() {
        row(Role::Other, head, (read / 1e3, mmap / 1e3));
    }
    let (hg, big) = (r.hg_name(), r.big());
    // Side `i`'s (0 ours, 1 hg) read and mmap medians on a repository.
    let medians = |repo, cache, i| {
        let m = |mode| r.matrix(repo, cache, mode)?.median(i);
        Some((m("read")?, m("mmap")?))
    };
    let timed = "`log -l 5`, process wall time, median";
    for (repo, cache) in r.matrix_repos().iter().flat_map(|x| CACHES.map(|c| (x, c))) {
        let size = human_size(repo.index_bytes);
        for (i, role, who) in [(1, Role::Peer, hg.as_str()), (0, Role::Ours, "ours")] {
            if let Some(times) = medians(repo, cache, i) {
                row(role, [&format!("this machine, {who}"), timed, &size, cache.name()], times);
            }
        }
    }
    let size = human_size(big.index_bytes);
    let model = |cache| {
        let on =
            |c: &&CellResult| c.sides[0].repo == r.plan.hg_sizes.len() && c.runs.cache == cache;
        let c = r.of(Kind::Model).find(on)?;
        Some((c.median(1)?, c.median(0)?))
    };
    let who = "this machine, model of ours' load";
    let timed = "open, read(2) whole or mmap, 5 tip entries; in xtask, median";
    for cache in CACHES {
        if let Some(times) = model(cache) {
            row(Role::Other, [who, timed, &size, cache.name()], times);
        }
    }
    rep.table(t).text(say(NOTES, "medians", &[]));
    let ratio = |i, cache| medians(big, cache, i).map(|(read, mmap)| mmap / read.max(1e-12));
    let pages = r.matrix(big, Cold, "mmap").map_or("?".into(), |c| c.pages(&r.repos, 1));
    let pages = pages.split(' ').next().unwrap_or("?").replace('/', " of ");
    let ra_note = format!(
        "read_ahead_kb = {} KiB; {pages} index pages resident after a cold mapped hg run",
        r.read_ahead()
    );
    let mut lines = Vec::new();
    // D477's larger repository, warm and cold, against hg's largest here.
    for (cache, seed) in [(Warm, 321.0 / 432.0), (Cold, 888.0 / 696.0)] {
        let Some(here) = ratio(1, cache) else {
            continue;
        };
        let (s, h) = (winner(seed, TIE), winner(here, TIE));
        let key = format!("{}-{h}", cache.name());
        let why = paragraph(NOTES, &key)
            .unwrap_or_else(|| paragraph(NOTES, cache.name()).unwrap_or_default());
        let why = fill(why, vars![size, ra_note]);
        let unsaid = if cache == Cold {
            "; D477 does not say why its cold mapped runs were slower"
        } else {
            ""
        };
        let agree = if s == h { "matches" } else { "does not match" };
        let (seed, here, cache) = (format!("{seed:.2}"), format!("{here:.2}"), cache.name());
        lines.push(say(NOTES, "hg", vars![cache, seed, s, hg, size, here, h, agree, why, unsaid]));
    }
    // The 2018 perfindex figure against the model's warm load.
    if let Some((read, mmap)) = model(Warm) {
        let (seed, here) = (0.196 / 32.023, mmap / read.max(1e-12));
        let (s, h) = (winner(seed, TIE), winner(here, TIE));
        let agree = if s == h { "matches" } else { "does not match" };
        #[expect(clippy::cast_precision_loss)]
        let rate = format!("{:.1}", big.index_bytes as f64 / read.max(1e-12) / 1e9);
        let (read, mmap, seed, here) =
            (fmt_secs(read), fmt_secs(mmap), format!("{seed:.3}"), format!("{here:.3}"));
        lines.push(say(NOTES, "perfindex", vars![seed, size, read, mmap, here, h, agree, rate]));
    }
    if let Some(here) = ratio(0, Warm) {
        let (h, here) = (winner(here, TIE), format!("{here:.2}"));
        lines.push(say(NOTES, "ours", vars![size, here, h]));
    }
    if !lines.is_empty() {
        rep.text("What matches and what does not:").list(lines);
    }
}

// The report.

/// REPORT.md, as the typed model.
fn report(r: &Results, traces_paragraph: Option<String>) -> Report {
    use Kind::{Matrix, Model, Size, Startup, Sweep, SweepHg};
    let (hg, plan, runs, ra) = (r.hg_name(), &r.plan, r.runs, r.read_ahead());
    let (big, small) = (short_count(plan.big), short_count(plan.hg_sizes[0]));
    let mut rep = r.stamp.report();
    if plan.preset == "tiny" {
        rep.text(
            "**`--tiny`: a smoke run of the harness on tiny inputs; its times mean nothing.**",
        );
    }
    let sizes: Vec<String> = plan.hg_sizes.iter().map(|&n| short_count(n)).collect();
    let (sizes, preset, s, finished) =
        (sizes.join(", "), plan.preset, plural(runs), &r.stamp.finished_utc);
    let (runs, sweep_runs) = (runs.to_string(), plan.sweep_runs.to_string());
    rep.text(say(NOTES, "intro", vars![sizes, big, hg, preset, runs, s, sweep_runs, finished]));
    r.stamp.add_to(&mut rep, "the repositories", &[("Mercurial", r.hg_version.clone())]);

    let mut t = Table::of("repository|>revisions|>00changelog.i|format|>00changelog.d|made");
    for x in &r.repos {
        let by = if x.origin == "hg" { "hg (peer gen-repo)" } else { "synthesised" };
        let when = if x.generated_now {
            format!("now ({})", fmt_secs(x.made.secs))
        } else {
            "cached".into()
        };
        t.row([
            format!("`{}`", x.path),
            x.revs.to_string(),
            format!("{} ({} B)", human_size(x.index_bytes), x.index_bytes),
            if x.inline { "v1 inline" } else { "v1" }.to_owned(),
            x.data_bytes.map_or("—".into(), human_size),
            format!("{by}, {when}"),
        ]);
    }
    let how = r.repos.iter().map(|x| format!("{}: {}", x.name, x.made.how));
    let synth = r.repos.iter().filter(|x| x.origin == "synthetic");
    let checks = synth.flat_map(|x| x.made.checks.iter().map(|c| c.line(&format!("{}, ", x.name))));
    let made = "Checks of the synthetic repositories with hg (made once, when each was made):";
    rep.section("Repositories").table(t).text("How they were made:");
    rep.list(how).text(made).list(checks);

    let warmups = match r.warmup {
        0 => "No warm-up pairs (`--warmup 0`).".to_owned(),
        n => format!(
            "Each cell starts with {n} untimed warm-up pair{} (same reset before each run; raw in results.json).",
            plural(n)
        ),
    };
    let (read, mmap) = (r.config_read.join(" "), r.config_mmap.join(" "));
    let method = say(NOTES, "method", vars![read, mmap, hg, warmups]);
    rep.section("Method").list(method.lines());

    let shown = |c: &&CellResult| matches!(c.kind, Matrix | Startup) && c.runs.cache == CACHES[0];
    let cmds =
        r.cells.iter().filter(shown).flat_map(|c| c.runs.contenders.iter().map(|x| x.1.clone()));
    let mut code: Vec<String> = r.build_commands.iter().cloned().chain(cmds).collect();
    code.extend([
        "# the size check and the sweep: the same ours (and, with --full, hg) commands on"
            .to_owned(),
        "# target/bench/files/revlog-synth-<revisions>; the model rows run inside xtask".to_owned(),
    ]);
    rep.commands(&code);

    // Start-up floors: ours' row and hg's, compared row by row.
    let startup = r.of(Startup).next();
    let floor = |i| startup.and_then(|c| c.median(i));
    if let Some(c) = startup {
        let mut t = Table::of("command|>wall");
        for (i, role) in [(0, Role::Ours), (1, Role::Peer)] {
            t.row_as(role, [format!("`{}`", c.runs.contenders[i].1), c.runs.time(i, "wall_s")]);
        }
        rep.section("Start-up floor").table(t);
    }

    rep.section("Results: ours vs hg");
    for repo in r.matrix_repos() {
        let (name, size, pages) = (&repo.name, human_size(repo.index_bytes), repo.pages());
        let inline = if repo.inline { ", inline" } else { "" };
        let cells = CACHES.into_iter().flat_map(|k| MODES.map(|m| (k, m)));
        let cells: Vec<&CellResult> = cells.filter_map(|(k, m)| r.matrix(repo, k, m)).collect();
        let minus = |c: &&CellResult, i| match (c.median(i), floor(i)) {
            (Some(s), Some(f)) if s >= f => fmt_secs(s - f),
            (Some(_), Some(_)) => "below the floor".to_owned(),
            _ => "—".to_owned(),
        };
        let t = cell_table(
            &cells,
            &[
                ("cell", Other, &|c| {
                    format!("{}, {}", c.runs.cache.name(), c.mode.unwrap_or_default())
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
        rep.subsection(format!("{name} — 00changelog.i {size} ({pages} pages){inline}")).table(t);
    }
    rep.text(say(NOTES, "matrix", vars![ra]));

    let title = format!(
        "Target 1: ours mmap at {big} ≤ {SIZE_TARGET}× ours at {small} (independent of index size)"
    );
    let cells: Vec<&CellResult> =
        r.cells.iter().filter(|c| matches!(c.kind, Size | Kind::Advice)).collect();
    let t = cell_table(
        &cells,
        &[
            ("cache", Other, &|c| c.runs.cache.name().to_owned()),
            ("A vs B", Other, &|c| format!("{} vs {}", c.sides[0].who, c.sides[1].who)),
            (">A", Other, &|c| c.runs.time(0, "wall_s")),
            (">B", Other, &|c| c.runs.time(1, "wall_s")),
            (">A/B (per pair)", Ratio, &|c| c.runs.ratio_text("wall_s")),
            (">index resident after A / B (pages)", Other, &|c| both(|i| c.pages(&r.repos, i))),
        ],
    );
    rep.section(title).table(t).text(say(NOTES, "target1", vars![small, big, ra]));

    rep.section("Target 2: the read-vs-mmap crossover (ours)");
    let sweeps = [
        (
            Sweep,
            "ours, process wall time",
            "mapwise revlog log -l 5 on synthetic changelogs (prefixes of the largest)",
        ),
        (
            Model,
            "model of ours' load inside xtask (no process start-up)",
            "the same files, the loads timed in xtask",
        ),
        (SweepHg, "hg, process wall time", "hg log -l 5 on the same files"),
    ];
    for (kind, title, what) in sweeps {
        let cs: Vec<&CellResult> = r.of(kind).collect();
        if !cs.is_empty() {
            let ab = "A = mmap, B = read, ratio = mmap/read pair by pair (< 1: mmap wins)";
            rep.subsection(title).text(format!("{what}; {ab}.")).table(sweep_table(&cs, &r.repos));
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
    rep.text(
        "Crossovers (the smallest size from which mmap's median ratio stays below 1 at every larger size):",
    );
    let tie = format!("{:.0}", TIE * 100.0);
    rep.list(r.crossovers.iter().map(line)).text(say(NOTES, "crossover", vars![tie]));
    let rec = &r.recommendation;
    let config =
        rec.config.as_ref().map_or("none (keep reading whole)".into(), |c| format!("`{c}`"));
    let (default, why) = (HG_DEFAULT_THRESHOLD.to_string(), &rec.why);
    rep.text(say(NOTES, "recommended", vars![config, why, default]));

    seed_section(&mut rep, r);

    rep.section("Charts and residency traces");
    charts::add_images(&mut rep, &r.charts);
    if let Some(p) = traces_paragraph {
        rep.text(say(NOTES, "untraced", vars![p]));
    }
    limits::add_to(&mut rep, &r.limits);
    rep.section("Verdicts").verdicts(verdicts(r));
    let title = "Load checks (untimed, once per repository and load)";
    rep.section(title).list(r.load_checks.iter().map(|c| c.line("")));
    rep
}

/// One sweep series' table: per size, warm and cold read, mmap and their
/// ratio, and the cold mapped run's resident pages.
fn sweep_table(cs: &[&CellResult], repos: &[RepoInfo]) -> Table {
    let mut t = Table::of(
        ">revisions|>index|>warm read|>warm mmap|>mmap/read warm|>cold read|>cold mmap|\
         >mmap/read cold|>cold mmap: resident after",
    );
    let mut at: Vec<usize> = cs.iter().map(|c| c.sides[0].repo).collect();
    at.sort_by_key(|&i| repos[i].revs);
    at.dedup();
    for i in at {
        let find = |cache| cs.iter().find(|c| c.sides[0].repo == i && c.runs.cache == cache);
        let mut row = vec![repos[i].revs.to_string(), human_size(repos[i].index_bytes)];
        for c in CACHES.map(find) {
            row.extend(c.map_or_else(
                || vec!["—".into(); 3],
                |c| {
                    vec![
                        c.runs.time(1, "wall_s"),
                        c.runs.time(0, "wall_s"),
                        c.runs.ratio_text("wall_s"),
                    ]
                },
            ));
        }
        row.push(find(Cold).map_or("—".into(), |c| c.pages(repos, 0)));
        t.row(row);
    }
    t.roles(Role::Ratio, &[4, 7])
}

/// Target 1 in each cache state (its other rows as details), target 2, and the outputs and checks.
fn verdicts(r: &Results) -> Vec<Verdict> {
    let mut out = Vec::new();
    for cache in CACHES {
        let cs: Vec<&CellResult> = r.of(Kind::Size).filter(|c| c.runs.cache == cache).collect();
        let Some((first, rest)) = cs.split_first() else {
            continue;
        };
        let (a, b) = (&first.sides[0].who, &first.sides[1].who);
        let name = format!("Target 1, {}", cache.name());
        let verdict = judge(name, first.ratios().as_ref(), (SIZE_TARGET, Bound::AtMost), ("", ""));
        out.push(verdict.target(format!("{a} ≤ {SIZE_TARGET}× {b}")));
        for c in rest {
            let name = format!("for comparison, {} vs {}", c.sides[0].who, c.sides[1].who);
            out.push(Verdict::new(name, Outcome::None, c.runs.ratio_text("wall_s")).sub());
        }
    }
    let rec = &r.recommendation;
    let target2 = match (&rec.config, rec.bytes) {
        (Some(c), Some(b)) => {
            let vs = if b < HG_DEFAULT_THRESHOLD { "below" } else { "equal to" };
            let vs = if b > HG_DEFAULT_THRESHOLD { "above" } else { vs };
            let detail = format!("`{c}` ({}; {vs} hg's default 1 MB)", human_size(b));
            Verdict::new("Target 2", Outcome::Pass, detail)
        }
        _ => Verdict::new("Target 2", Outcome::None, format!("no crossover found ({})", rec.why)),
    };
    out.push(target2.target("crossover measured and printed as the recommended threshold"));
    let bad_checks =
        r.load_checks.iter().filter(|c| !c.ok).map(|c| format!("{}: {}", c.what, c.detail));
    let bad_cells = r.cells.iter().filter(|c| !c.outputs_ok(&r.repos));
    let bad_cells = bad_cells.map(|c| format!("{}: unexpected output", c.runs.label));
    let detail = if r.outputs_agree {
        "every run printed the 5 tip revisions, every load check and synthetic-repository check passed"
            .into()
    } else {
        bad_checks.chain(bad_cells).collect::<Vec<_>>().join("; ")
    };
    out.push(Verdict::new("Outputs and checks", Outcome::of(r.outputs_agree), detail));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapwise_core::revlog::debug_row;

    fn corpus(name: &str) -> Vec<u8> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/revlog");
        fs::read(root.join("synthetic-2000").join(name)).unwrap()
    }

    fn synth(revs: u32) -> (Vec<u8>, Vec<u8>) {
        let (mut i, mut d) = (Vec::new(), Vec::new());
        SynthChangelog::write(revs, &mut i, &mut d, |_| Ok(())).unwrap();
        (i, d)
    }

    /// The rows of `revs` as [`index_row`] shows them, decoded by core.
    fn core_rows(index: &[u8], revs: &[u32]) -> Vec<String> {
        let idx = Index::open(index).unwrap();
        let row = |&r: &u32| {
            let d = debug_row(&idx, i32::try_from(r).unwrap()).unwrap();
            let [n, p1, p2] = [d.nodeid, d.p1_nodeid, d.p2_nodeid].map(|n| hex(&n[..6]));
            format!("{} {} {n} {p1} {p2}", d.rev, d.linkrev)
        };
        revs.iter().map(row).collect()
    }

    /// hg 6.3's nodes in testdata are `revlog_node` of texts and parents, in either order;
    /// its `debugindex -c` rows parse and are what core decodes.
    #[test]
    fn nodes_and_debugindex_rows_match_a_real_hg_changelog() {
        let (index, data) = (corpus("00changelog.i"), corpus("00changelog.d"));
        let idx = Index::open(&index[..]).unwrap();
        for rev in [0, 1, 1000, idx.tip()] {
            let e = idx.entry(rev).unwrap();
            let (p1, p2) = idx.checked_parents(&e).unwrap();
            let (n1, n2) = (idx.node(p1).unwrap(), idx.node(p2).unwrap());
            let at = usize::try_from(e.data_offset()).unwrap();
            let chunk = &data[at..][..e.compressed_len() as usize];
            assert_eq!(chunk[0], b'u', "rev {rev}: stored uncompressed");
            assert_eq!(revlog_node(&n1, &n2, &chunk[1..]), *e.node(), "rev {rev}");
            assert_eq!(revlog_node(&n2, &n1, &chunk[1..]), *e.node(), "order");
        }
        let row = "99 99 0123456789ab 0123456789ac 000000000000";
        let spaced = format!("  {}", row.replace(' ', "  "));
        assert_eq!(index_row(&spaced).as_deref(), Some(row));
        assert_eq!(index_row("   rev linkrev nodeid p1-nodeid p2-nodeid"), None);
        assert_eq!(index_row("1 2 3"), None);
        let text = String::from_utf8(corpus("00changelog.i.debugindex.txt")).unwrap();
        let rows: Vec<String> = text.lines().filter_map(index_row).collect();
        assert_eq!(rows, core_rows(&index, &(0..2000).collect::<Vec<_>>()));
    }

    /// The synthetic changelog reads back through core as meant; a smaller one is its prefix.
    #[test]
    fn synthetic_changelog_reads_back_through_core() {
        let (index, data) = synth(300);
        assert_eq!(index[..4], [0, 0, 0, 1], "v1, no flags");
        let idx = Index::open(&index[..]).unwrap();
        assert!(!idx.is_inline() && !idx.is_generaldelta() && idx.len() == 300);
        idx.check_data_len(data.len() as u64, 0..=idx.tip()).unwrap();
        let revs: Vec<u32> = (0..300).collect();
        assert_eq!(synth_rows(&revs), core_rows(&index, &revs));
        let (e, text) = (idx.entry(299).unwrap(), synth_text(299));
        let p1 = idx.entry(298).unwrap();
        assert_eq!(*e.node(), revlog_node(p1.node(), &NULL_NODE, &text));
        let at = usize::try_from(e.data_offset()).unwrap();
        assert_eq!(data[at..], [&b"u"[..], &text].concat());
        let (prefix_i, prefix_d) = synth(123);
        assert!(index.starts_with(&prefix_i) && data.starts_with(&prefix_d));
    }

    #[test]
    fn samples_ranges_and_expected_output() {
        let s = sample_revs(1_000_000);
        assert_eq!(ranges(&s), "0–4, 499998–500002, 999995–999999");
        assert_eq!((s.len(), sample_revs(3)), (15, vec![0, 1, 2]));
        assert_eq!(expected_log(1_000_000, 2), "999999\n999998\n");
        assert_eq!(expected_log(2, 5), "1\n0\n");
        let counts = [1_000_000, 100_000, 16_384].map(short_count);
        assert_eq!(counts, ["1M", "100k", "16384"]);
        let tips = ["9\n8\n7\n6\n5\n", "1\n0\n", "9\n7\n", "9\n8\n", ""].map(log_tip);
        assert_eq!(tips, [9.0, 1.0, -1.0, -1.0, -1.0]);
    }

    #[test]
    fn hg_versions_flags_and_mmap_reports() {
        let v = |s: &str| parse_hg_version(&format!("Mercurial Distributed SCM (version {s})"));
        let got = [v("6.3.2"), v("6.9rc0"), v("7.0.1+hg12")];
        assert_eq!(got, [Some((6, 3)), Some((6, 9)), Some((7, 0))]);
        assert_eq!(parse_hg_version("hg: command not found"), None);
        assert_eq!(config_args("read", (6, 3))[0], "--config");
        let args = |m, v| config_args(m, v).join(" ").replace("--config ", "");
        assert_eq!(args("mmap", (6, 3)), "experimental.mmapindexthreshold=0");
        let new = "storage.revlog.mmap.index=yes storage.revlog.mmap.index:size-threshold=0";
        assert_eq!(args("mmap", (7, 0)), new);
        assert_eq!(args("read", (7, 0)), "storage.revlog.mmap.index=no");
        let sizes = [1 << 20, 256 << 10, 64_000_000, 1000].map(hg_size);
        assert_eq!(sizes, ["1M", "256k", "62500k", "1000"]);
        let (mapped, rest) = split_mmap_report("mmap: r/.hg/store/00changelog.i\n4\n");
        assert!(mapped && rest == "4\n");
        assert_eq!(split_mmap_report("4\n3\n"), (false, "4\n3\n".into()));
        assert!(!split_mmap_report("mmap: r/.hg/store/00manifest.i\n1\n").0);
    }

    #[test]
    fn crossovers_and_the_recommendation() {
        let points = [(1 << 20, 0.8), (1 << 14, 1.05), (1 << 16, 1.2), (1 << 18, 0.9)];
        let c = crossover(&points).unwrap();
        assert_eq!((c.kind, c.below_bytes), ("between", Some(1 << 16)));
        let e = c.estimate_bytes.unwrap();
        assert!(c.from_bytes == Some(1 << 18) && e > 65_536.0 && e < 262_144.0, "{e}");
        // A win below a loss does not count: the last loss decides.
        let c = crossover(&[(1, 0.9), (2, 1.1), (4, 0.9)]).unwrap();
        assert_eq!(c.from_bytes, Some(4));
        let c = crossover(&[(1, 0.9), (2, 0.8)]).unwrap();
        assert_eq!((c.kind, c.from_bytes), ("everywhere", Some(1)));
        let c = crossover(&[(1, 0.9), (2, 1.0)]).unwrap();
        assert_eq!((c.kind, c.from_bytes), ("nowhere", None));
        assert_eq!(describe(Some(&c)), "mmap does not win at the largest size (2 B)");
        // A tie at exactly 1 puts the estimate at the tie.
        let c = crossover(&[(100, 1.0), (10_000, 0.5)]).unwrap();
        assert!((c.estimate_bytes.unwrap() - 100.0).abs() < 1e-6);
        assert_eq!(crossover(&[]), None);
        let x = CrossoverResult::new;
        let warm = x("combined", Warm, vec![(1 << 14, 1.1), (1 << 16, 0.9)]);
        let cold = x("combined", Cold, vec![(1 << 14, 1.1), (1 << 20, 1.1), (1 << 22, 0.7)]);
        let r = recommend(&[warm, cold, x("ours", Warm, vec![(1 << 30, 1.5)])]);
        let why = "warm: read wins or ties up to 16.0 KiB, mmap wins from 64.0 KiB on";
        assert!(r.why.starts_with(why), "{}", r.why);
        assert_eq!(r.config.unwrap(), "--config experimental.mmapindexthreshold=4M");
        assert_eq!(recommend(&[x("combined", Warm, vec![(1, 1.5)])]).bytes, None);
        // Process ties defer to the model; without a model point the process decides.
        let process = [(16, 1.03), (64, 0.97), (256, 0.90), (1024, 1.2)];
        let got = combine(&process, &[(16, 1.5), (64, 0.6), (256, 1.1)], TIE);
        let (by, ratios): (Vec<&str>, Vec<f64>) = got.iter().map(|g| (g.2, g.1)).unzip();
        assert_eq!(by, ["model", "model", "ours", "ours"]);
        assert_eq!(ratios, [1.5, 0.6, 0.9, 1.2]);
    }

    #[test]
    fn winners_the_seed_and_notes() {
        // D477's published ratios: 227/237, 410/397, 321/432, 888/696.
        let w = |a: f64, b: f64| winner(a / b, TIE);
        assert_eq!([w(227., 237.), w(410., 397.)], ["a tie, within 5 %"; 2]);
        assert_eq!([w(321., 432.), w(888., 696.)], ["mapping wins", "reading wins"]);
        let seed = seed_figures();
        assert_eq!((seed.len(), seed[2].0[2]), (7, "\"much bigger\" (not given)"));
        assert_eq!((seed[4].0[2], seed[4].1, seed[4].2), ("60 MB", 32.023, 0.196));
        assert!(say(NOTES, "warm", &[("size", "1 MB")]).starts_with("at 1 MB the copy"));
        assert_eq!(paragraph(NOTES, "cold-a tie, within 5 %"), None);
    }

    #[test]
    fn plans_and_cells() {
        use Kind::{Advice, Matrix, Model, Size, Startup, Sweep, SweepHg};
        let quick = Plan::new(false, false, None);
        let want = [256, 1024, 4096, 16_384, 65_536, 262_144, 1_000_000];
        assert_eq!((quick.big, quick.sweep_runs, quick.sweep), (1_000_000, 20, want.into()));
        let full = Plan::new(false, true, Some(7));
        assert_eq!((full.sweep.len(), full.sweep[0], full.sweep_runs), (14, 64, 7));
        assert!(full.hg_sweep && full.hg_sizes == [1000, 100_000]);
        // --tiny wins over --full: no 100k, no 1M, a small synthesis.
        let tiny = Plan::new(true, true, None);
        assert_eq!((tiny.big, tiny.sweep_runs, tiny.hg_sweep), (5000, 2, false));
        let repos = tiny.repos();
        let revs: Vec<u32> = repos.iter().map(|r| r.0).collect();
        assert_eq!(
            (revs, repos[0].1, repos[1].1),
            (vec![1000, 5000, 256, 1024], "hg", "synthetic")
        );
        // Start-up, 2×2×2 matrix, 2×(3 size + 1 advice), 3 sizes × 2 caches × 2 series.
        let cells = specs(&tiny, &repos, 1, 2);
        let count = |k| cells.iter().filter(|s| s.kind == k).count();
        let kinds = [Startup, Matrix, Size, Advice, Sweep, Model, SweepHg];
        assert_eq!(kinds.map(count), [1, 8, 6, 2, 6, 6, 0]);
        assert_eq!((cells[1].runs, cells[9].runs), (1, 2));
        assert_eq!(cells[1].label, "1k (hg), warm, read");
        assert_eq!(cells[9].label, "ours mmap 5k (synthetic) vs ours mmap 1k (hg), warm");
        let at = |s: &Spec| (s.kind == Sweep).then(|| repos[s.sides[0].repo].0);
        let sweep: Vec<u32> = cells.iter().filter_map(at).collect();
        assert_eq!(sweep, [256, 256, 1024, 1024, 5000, 5000], "ascending, the big one among them");
        let cells = specs(&full, &full.repos(), 3, 2);
        let hg = |s: &Spec| (s.kind == SweepHg).then_some(s.runs);
        assert_eq!(cells.iter().filter_map(hg).collect::<Vec<_>>(), [3; 28]);
    }
}
