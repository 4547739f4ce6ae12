//! `cargo xtask bench revlog`: `log -l 5` over a changelog index
//! read whole vs mapped, warm and cold, on indexes of 1k, 100k and 1M
//! revisions, ours (`mapwise revlog log`) beside `hg log -l 5` with the
//! matching `--config`; then ours read vs mmap across index sizes, to find
//! where mapping starts to win (the recommended `mmapindexthreshold`).
//!
//! The 1k and 100k repositories are made by hg (the revlog peer's
//! `gen-repo`); the 1M one cannot be (hg needs hours), so its changelog is
//! synthesised here in the v1 format ([`SynthChangelog`]) inside a
//! repository made by `hg init`, and checked with hg itself (`debugindex`
//! samples, `debugdata`, `log`, `verify`). The smaller synthetic indexes of
//! the size sweep are prefixes of it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result, bail};
use mapwise_native::os::map::{Advice, FileMap};
use serde::{Deserialize, Serialize};

use super::charts::{self, ChartFile, RatioBar};
use super::limits::{self, Limit};
use super::machine::{self, Machine};
use super::output::{self, Table, TempPath};
use super::pagecache;
use super::proc::{Cmd, tail};
use super::schedule::{self, CacheState, Pair, Prepared, Side};
use super::stats::{Summary, at_most_verdict, fmt_secs, opt_ratio, opt_secs, pair_ratios};
use super::traces::{TraceInfo, Traces};
use super::units::{human_size, pct, utc_human};
use super::{CommonArgs, Progress, Workspace, interrupt, path_arg};

/// Long help of `cargo xtask bench revlog`.
pub const HELP: &str = "\
Makes the repositories once (cached in target/bench/files/, keyed by
size): 1k and 100k revisions with the revlog peer
  peers/revlog/peer gen-repo DIR --revs N
(100k takes 2–6 min the first time), and 1M revisions synthesised by
xtask: `hg init`, then a v1 changelog (00changelog.i + .d) of empty
changesets with consistent nodes (SHA-1 of parents and text), parents,
linkrevs and offsets, checked once with hg (debugindex -c rows at the
start, middle and end against the bytes written, the whole debugindex
text against ours, debugdata, `hg log -l 5` with the default template,
which reads and hash-checks the texts, and `hg verify` on a prefix). The
smaller synthetic indexes of the sweep are prefixes of that changelog.

Then, in each cell (size × read/mmap × warm/cold), after --warmup untimed
pairs, runs ours and hg alternately (A B, B A, …, --runs pairs):
  target/release/mapwise revlog log -l 5 REPO --config …
  HGRCPATH= HGPLAIN=1 hg log -l 5 -T '{rev}\\n' -R REPO --config …
with the same --config on both: read = storage.revlog.mmap.index=no,
mmap = experimental.mmapindexthreshold=0 (hg ≤ 6.8; with hg ≥ 6.9
storage.revlog.mmap.index=yes and :size-threshold=0, which also
pre-populates). cold: xtask fsyncs and posix_fadvise(DONTNEED)s the
repository's changelog files before every single run; warm: xtask reads
them once before every run. Both outputs must be the 5 tip revisions.
Residency of 00changelog.i after each run (mincore) shows how much of the
index the run pulled in. Once per cell, untimed: ours with --json (which
load it used) and hg with an extension that reports util.mmapread.

Then the two targets: ours mmap at 1M vs ours mmap at 1k, alternated pair
by pair (target ≤ 1.2×, warm and cold), and the threshold sweep: ours
mmap vs ours read (alternated) on synthetic indexes of 256 to 1M
revisions (16 KiB to 61 MiB), warm and cold, --sweep-runs pairs each,
plus the same loads modelled inside xtask (open, fstat, read(2) whole or
mmap, the 5 tip entries and their parents' nodes touched, µs
resolution). The crossover (the smallest size from which mmap wins at
every larger size, by ours' process times where they differ by more than
5 %, else by the model) is printed as the recommended
`--config experimental.mmapindexthreshold=` (the larger of the warm and
cold crossovers), beside hg 6.9's 1 MB.

Every timed process run is traced: the residency of its 00changelog.i
every 50 ms (traces/ in the report directory; `inspector replay
traces/T.trace --file REPO/.hg/store/00changelog.i` plays one); the
model's in-xtask loads are not (a sampling thread would be part of what
they time). Charts beside REPORT.md: ratios.svg (ours/hg per matrix
cell) and residency-cold-<repository>.svg (the index's residency during
the first timed cold run, read vs mmap, ours vs hg). The report quotes
the seed's published figures (D477's `hg log -l 5` table, 2017, and the
2018 proposal's `perfindex` numbers on a 60 MB index) beside this run's,
says what matches and why, and gives the physical limits: a cold
O_DIRECT and a cached read() of the largest changelog index.

  cargo xtask bench revlog [--quick | --full | --tiny] [--runs 5]
                           [--warmup 1] [--sweep-runs N] [--out DIR]
  --quick (default): the matrix, the size check and the sweep (7 sizes,
  20 pairs), about a minute once the repositories are cached (the first
  run makes them: minutes for hg's 100k, about 2 min for the 1M
  synthesis and its checks).
  --full: 13 sweep sizes (64 to 1M revisions), 50 pairs, and hg in the
  sweep too.
  --tiny: a smoke run (CI), every table, chart and trace on tiny inputs:
  hg's 1k repository and a 5000-revision synthetic changelog (the 1M
  one's synthesis and hg checks), sweep 256/1024/5000, 2 pairs; about
  20 s once built. Its times mean nothing.";

/// `-l 5`.
const LIMIT: u32 = 5;
/// Target: ours mmap at 1M ≤ this × ours at 1k.
const SIZE_TARGET: f64 = 1.2;
/// hg 6.9's `storage.revlog.mmap.index:size-threshold` default.
const HG_DEFAULT_THRESHOLD: u64 = 1 << 20;
/// Bytes of a v1 index entry.
const ENTRY: usize = 64;
/// Revisions of the matrix: the issue's 1k, 100k (both made by hg) and 1M
/// (synthesised).
const HG_SIZES: [u32; 2] = [1000, 100_000];
const BIG: u32 = 1_000_000;
/// Sweep sizes (synthetic, plus [`BIG`]): 16 KiB … 16 MiB of index.
const SWEEP_QUICK: [u32; 6] = [256, 1024, 4096, 16_384, 65_536, 262_144];
/// Added by --full.
const SWEEP_FULL_EXTRA: [u32; 7] = [64, 512, 2048, 8192, 32_768, 131_072, 524_288];
/// `--tiny`: one small hg-made repository, and a synthetic changelog of
/// 5000 revisions (a 312.5 KiB index) made by the same synthesis and
/// checks as the 1M one; the sweep is two prefixes of it.
const TINY_HG_SIZES: [u32; 1] = [1000];
const TINY_BIG: u32 = 5000;
const TINY_SWEEP: [u32; 2] = [256, 1024];
/// The record each cached repository carries.
const MADE: &str = "bench-made.json";

/// The sizes and counts of one run, from `--tiny`, `--full` and
/// `--sweep-runs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// `tiny`, `quick` or `full`.
    pub preset: &'static str,
    /// Revisions of the hg-made repositories of the matrix, ascending.
    pub hg_sizes: Vec<u32>,
    /// Revisions of the synthesised changelog (the matrix's largest).
    pub big: u32,
    /// Revisions of every sweep size, ascending, `big` included.
    pub sweep: Vec<u32>,
    /// Pairs per sweep and size-check cell.
    pub sweep_runs: u64,
    /// Whether hg runs in the sweep too.
    pub hg_sweep: bool,
}

impl Plan {
    /// `--tiny` wins over `--full`; `sweep_runs` overrides the preset's
    /// count (tiny 2, quick 20, full 50).
    #[must_use]
    pub fn new(tiny: bool, full: bool, sweep_runs: Option<u64>) -> Plan {
        let (preset, hg_sizes, big, mut sweep, default_runs): (_, &[u32], _, Vec<u32>, _) = if tiny
        {
            ("tiny", &TINY_HG_SIZES, TINY_BIG, TINY_SWEEP.to_vec(), 2)
        } else if full {
            let mut v = SWEEP_QUICK.to_vec();
            v.extend(SWEEP_FULL_EXTRA);
            ("full", &HG_SIZES, BIG, v, 50)
        } else {
            ("quick", &HG_SIZES, BIG, SWEEP_QUICK.to_vec(), 20)
        };
        sweep.push(big);
        sweep.sort_unstable();
        sweep.dedup();
        Plan {
            preset,
            hg_sizes: hg_sizes.to_vec(),
            big,
            sweep,
            sweep_runs: sweep_runs.unwrap_or(default_runs),
            hg_sweep: full && !tiny,
        }
    }
}

/// `bench revlog` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The quick run (the default): matrix, size check, 7-size sweep of 20
    /// pairs.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// 13 sweep sizes, 50 pairs each, and hg in the sweep.
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

// ---------------------------------------------------------------------
// SHA-1 and the synthetic changelog (pure).

use sha1::Digest as _;
/// SHA-1 for revlog nodeids (the `sha1` crate; no security claim).
pub use sha1::Sha1;

/// A 20-byte nodeid.
pub type Node = [u8; 20];

/// hg's nodeid (`storageutil.hashrevisionsha1`): SHA-1 of the two parent
/// nodes, smaller first, then the text.
pub fn revlog_node(p1: &Node, p2: &Node, text: &[u8]) -> Node {
    let (a, b) = if p1 <= p2 { (p1, p2) } else { (p2, p1) };
    let mut s = Sha1::default();
    s.update(a);
    s.update(b);
    s.update(text);
    s.finalize().into()
}

pub use mapwise_view::fmt::hex;

/// The text of synthetic changeset `rev`: hg's changelog format
/// (`changelog.add`) for a changeset without files: manifest (the null
/// manifest, as hg writes for a file-less commit on an empty manifest),
/// user, `time tz`, no file lines, a blank line, the description.
pub fn synth_text(rev: u32) -> Vec<u8> {
    format!("{}\nbench\n{rev} 0\n\nr{rev}", "0".repeat(40)).into_bytes()
}

/// One revlog v1 index entry (`>Qiiiiii20s12x`). For rev 0 the first four
/// bytes are the version header (the offset of rev 0 is always 0).
#[expect(clippy::too_many_arguments)]
pub fn v1_entry(
    rev: u32,
    offset: u64,
    flags: u16,
    stored_len: u32,
    full_len: u32,
    base: i32,
    link: i32,
    parents: (i32, i32),
    node: &Node,
    header: u32,
) -> [u8; ENTRY] {
    let mut e = [0u8; ENTRY];
    e[0..8].copy_from_slice(&((offset << 16) | u64::from(flags)).to_be_bytes());
    if rev == 0 {
        e[0..4].copy_from_slice(&header.to_be_bytes());
    }
    e[8..12].copy_from_slice(&stored_len.to_be_bytes());
    e[12..16].copy_from_slice(&full_len.to_be_bytes());
    e[16..20].copy_from_slice(&base.to_be_bytes());
    e[20..24].copy_from_slice(&link.to_be_bytes());
    e[24..28].copy_from_slice(&parents.0.to_be_bytes());
    e[28..32].copy_from_slice(&parents.1.to_be_bytes());
    e[32..52].copy_from_slice(node);
    e
}

/// A synthetic linear changelog, one revision at a time: v1, not inline,
/// no generaldelta (hg's changelog format), every revision a full text
/// stored uncompressed (`u` + text, as hg stores texts that do not
/// compress), data offsets contiguous, linkrev = rev, p1 = rev − 1.
#[derive(Debug, Clone, Default)]
pub struct SynthChangelog {
    next: u32,
    offset: u64,
    prev: Node,
}

impl SynthChangelog {
    /// The next revision's index entry and data chunk.
    pub fn next_rev(&mut self) -> ([u8; ENTRY], Vec<u8>) {
        let rev = self.next;
        let text = synth_text(rev);
        let node = revlog_node(&self.prev, &[0; 20], &text);
        let mut chunk = Vec::with_capacity(text.len() + 1);
        chunk.push(b'u');
        chunk.extend_from_slice(&text);
        let full = u32::try_from(text.len()).unwrap_or(u32::MAX);
        let stored = full + 1;
        let r = i32::try_from(rev).unwrap_or(i32::MAX);
        let entry = v1_entry(
            rev,
            self.offset,
            0,
            stored,
            full,
            r,
            r,
            (r - 1, -1),
            &node,
            1, // REVLOGV1, no flags
        );
        self.offset += u64::from(stored);
        self.prev = node;
        self.next += 1;
        (entry, chunk)
    }

    /// `revs` revisions into two writers: the index and the data file.
    /// Returns (index bytes, data bytes).
    pub fn write(
        revs: u32,
        index: &mut impl std::io::Write,
        data: &mut impl std::io::Write,
        mut every: impl FnMut(u32) -> Result<()>,
    ) -> Result<(u64, u64)> {
        let mut s = Self::default();
        for rev in 0..revs {
            let (e, c) = s.next_rev();
            index.write_all(&e)?;
            data.write_all(&c)?;
            if rev % 65_536 == 0 {
                every(rev)?;
            }
        }
        Ok((u64::from(revs) * ENTRY as u64, s.offset))
    }
}

/// What `hg debugindex -c` prints for one revision: rev, linkrev and the
/// 12-hex short nodes of the revision and its parents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IndexRow {
    /// Revision.
    pub rev: i64,
    /// Link revision.
    pub linkrev: i64,
    /// Short node.
    pub node: String,
    /// First parent's short node.
    pub p1: String,
    /// Second parent's short node.
    pub p2: String,
}

/// One data row of `hg debugindex -c` (header and other lines: `None`).
pub fn parse_index_row(line: &str) -> Option<IndexRow> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let [rev, linkrev, node, p1, p2] = w.as_slice() else {
        return None;
    };
    let hexish = |s: &&str| s.len() == 12 && s.bytes().all(|b| b.is_ascii_hexdigit());
    if !(hexish(node) && hexish(p1) && hexish(p2)) {
        return None;
    }
    Some(IndexRow {
        rev: rev.parse().ok()?,
        linkrev: linkrev.parse().ok()?,
        node: (*node).to_owned(),
        p1: (*p1).to_owned(),
        p2: (*p2).to_owned(),
    })
}

/// The row a non-inline v1 index holds for `rev`, decoded from its bytes
/// as hg's `debugindex` shows it.
pub fn index_row(index: &[u8], rev: u32) -> Option<IndexRow> {
    let at = usize::try_from(rev).ok()?.checked_mul(ENTRY)?;
    let e = index.get(at..at + ENTRY)?;
    let int = |r: std::ops::Range<usize>| i32::from_be_bytes(e[r].try_into().unwrap_or([0; 4]));
    let short = |node: &[u8]| hex(&node[..6]);
    let parent_node = |p: i32| -> Option<String> {
        if p < 0 {
            return Some("0".repeat(12));
        }
        let at = usize::try_from(p).ok()? * ENTRY;
        index.get(at + 32..at + 38).map(hex)
    };
    Some(IndexRow {
        rev: i64::from(rev),
        linkrev: i64::from(int(20..24)),
        node: short(&e[32..52]),
        p1: parent_node(int(24..28))?,
        p2: parent_node(int(28..32))?,
    })
}

/// Revisions to sample: the first five, five in the middle, the last five.
pub fn sample_revs(revs: u32) -> Vec<u32> {
    let mid = revs / 2;
    let mut v: Vec<u32> = (0..5)
        .chain(mid.saturating_sub(2)..mid + 3)
        .chain(revs.saturating_sub(5)..revs)
        .filter(|&r| r < revs)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// What `log -l N -T '{rev}\n'` prints for a linear repository of `revs`
/// revisions.
pub fn expected_log(revs: u32, limit: u32) -> String {
    (revs.saturating_sub(limit)..revs)
        .rev()
        .fold(String::new(), |mut s, r| {
            let _ = writeln!(s, "{r}");
            s
        })
}

/// `(major, minor)` from `hg --version`'s first line,
/// `Mercurial Distributed SCM (version 6.3.2)`.
pub fn parse_hg_version(line: &str) -> Option<(u32, u32)> {
    let v = line.split("version ").nth(1)?;
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// `6.3.2` from `hg --version`'s first line.
pub fn hg_version_number(line: &str) -> Option<&str> {
    let v = line.split("version ").nth(1)?;
    Some(v.trim_end_matches(')').trim())
}

/// How the changelog index is loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Read whole.
    Read,
    /// Mapped.
    Mmap,
}

impl Mode {
    /// `read` / `mmap`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Mmap => "mmap",
        }
    }
}

/// The `--config` arguments selecting `mode`, given to ours and hg alike:
/// the keys the installed hg reads (`experimental.mmapindexthreshold` up
/// to 6.8, `storage.revlog.mmap.index*` from 6.9), threshold 0 = map
/// every changelog and manifest index.
pub fn config_args(mode: Mode, hg: (u32, u32)) -> Vec<String> {
    let new = hg >= (6, 9);
    let kv: &[&str] = match mode {
        Mode::Read => &["storage.revlog.mmap.index=no"],
        Mode::Mmap if new => &[
            "storage.revlog.mmap.index=yes",
            "storage.revlog.mmap.index:size-threshold=0",
        ],
        Mode::Mmap => &["experimental.mmapindexthreshold=0"],
    };
    kv.iter()
        .flat_map(|s| ["--config".to_owned(), (*s).to_owned()])
        .collect()
}

/// A size as hg's `ui.configbytes` reads it back exactly: `256k`, `1M`,
/// `1000`.
pub fn hg_size(bytes: u64) -> String {
    if bytes > 0 && bytes.is_multiple_of(1 << 20) {
        format!("{}M", bytes >> 20)
    } else if bytes > 0 && bytes.is_multiple_of(1 << 10) {
        format!("{}k", bytes >> 10)
    } else {
        bytes.to_string()
    }
}

/// Where mapping starts to win, from (index bytes, median mmap/read
/// ratio) points.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Crossover {
    /// `between` (read wins below, mmap from `from_bytes` on),
    /// `everywhere` (mmap wins at every size measured), `nowhere` (mmap
    /// does not win at the largest size).
    pub kind: &'static str,
    /// Smallest measured size from which mmap wins at every larger one.
    pub from_bytes: Option<u64>,
    /// Largest measured size where it does not.
    pub below_bytes: Option<u64>,
    /// Log-log interpolation of the ratio between those two: where it
    /// crosses 1.
    pub estimate_bytes: Option<f64>,
}

/// The crossover of `points` (any order; sizes distinct).
pub fn crossover(points: &[(u64, f64)]) -> Option<Crossover> {
    let mut p: Vec<(u64, f64)> = points
        .iter()
        .copied()
        .filter(|(b, r)| *b > 0 && r.is_finite() && *r > 0.0)
        .collect();
    if p.is_empty() {
        return None;
    }
    p.sort_by_key(|&(b, _)| b);
    let last_loss = p.iter().rposition(|&(_, r)| r >= 1.0);
    Some(match last_loss {
        None => Crossover {
            kind: "everywhere",
            from_bytes: Some(p[0].0),
            below_bytes: None,
            estimate_bytes: None,
        },
        Some(i) if i + 1 == p.len() => Crossover {
            kind: "nowhere",
            from_bytes: None,
            below_bytes: Some(p[i].0),
            estimate_bytes: None,
        },
        Some(i) => {
            let (lo, hi) = (p[i], p[i + 1]);
            #[expect(clippy::cast_precision_loss)]
            let (x0, x1) = ((lo.0 as f64).ln(), (hi.0 as f64).ln());
            let (y0, y1) = (lo.1.ln(), hi.1.ln());
            let t = if y0 > y1 { y0 / (y0 - y1) } else { 0.0 };
            Crossover {
                kind: "between",
                from_bytes: Some(hi.0),
                below_bytes: Some(lo.0),
                estimate_bytes: Some((x0 + t * (x1 - x0)).exp()),
            }
        }
    })
}

/// Ours' process ratios are a tie within this much of 1 (process
/// start-up jitters by more than the loads differ at small sizes).
const TIE: f64 = 0.05;

/// The series the recommendation uses: at each size, ours' process ratio
/// where it is decisive (`|ratio − 1| ≥ tie`), else the model's (µs
/// resolution), else the process ratio; with who decided.
pub fn combine(
    process: &[(u64, f64)],
    model: &[(u64, f64)],
    tie: f64,
) -> Vec<(u64, f64, &'static str)> {
    process
        .iter()
        .map(|&(bytes, r)| {
            let m = model.iter().find(|(b, _)| *b == bytes).map(|&(_, m)| m);
            match m {
                Some(m) if (r - 1.0).abs() < tie => (bytes, m, "model"),
                _ => (bytes, r, "ours"),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------
// Commands.

/// `hg` as the peer runs it: no user configuration, plain output.
fn hg() -> Cmd {
    Cmd::new("hg").env("HGRCPATH", "").env("HGPLAIN", "1")
}

/// A directory removed (recursively) on drop unless kept.
#[derive(Debug)]
struct TempDir {
    path: PathBuf,
    armed: bool,
}

impl TempDir {
    fn new(path: PathBuf) -> Self {
        let _ = fs::remove_dir_all(&path);
        Self { path, armed: true }
    }

    fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.armed {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

// ---------------------------------------------------------------------
// Repositories.

/// Who made a repository.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Origin {
    /// The peer's `gen-repo` (hg's own API, commit by commit).
    Hg,
    /// `hg init` + a changelog written by xtask.
    Synthetic,
}

/// A check with its outcome.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Check {
    what: String,
    ok: bool,
    detail: String,
}

/// The record kept in each cached repository (`bench-made.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Made {
    how: String,
    secs: f64,
    made_utc: String,
    hg_version: Option<String>,
    /// Checks with hg, done when it was made.
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
    fn store(&self) -> PathBuf {
        Path::new(&self.path).join(".hg").join("store")
    }

    fn index(&self) -> PathBuf {
        self.store().join("00changelog.i")
    }

    /// The changelog files (what the cold reset evicts).
    fn files(&self) -> Vec<PathBuf> {
        let d = self.store().join("00changelog.d");
        let mut v = vec![self.index()];
        if d.is_file() {
            v.push(d);
        }
        v
    }

    fn pages(&self) -> u64 {
        self.index_bytes.div_ceil(4096)
    }

    fn describe(
        path: &Path,
        revs: u32,
        origin: Origin,
        generated_now: bool,
        made: Made,
    ) -> Result<Self> {
        let store = path.join(".hg").join("store");
        let index = store.join("00changelog.i");
        let index_bytes = fs::metadata(&index)
            .with_context(|| format!("{}: no changelog", index.display()))?
            .len();
        let mut head = [0u8; 4];
        File::open(&index)?.read_exact(&mut head)?;
        let inline = u32::from_be_bytes(head) & (1 << 16) != 0;
        let data_bytes = fs::metadata(store.join("00changelog.d"))
            .ok()
            .map(|m| m.len());
        let name = format!(
            "{} ({})",
            short_count(revs),
            match origin {
                Origin::Hg => "hg",
                Origin::Synthetic => "synthetic",
            }
        );
        Ok(Self {
            name,
            path: path_arg(path),
            revs,
            origin,
            index_bytes,
            data_bytes,
            inline,
            generated_now,
            made,
        })
    }
}

/// `1k`, `100k`, `1M`, `16384`.
fn short_count(n: u32) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn read_made(dir: &Path) -> Option<Made> {
    let text = fs::read_to_string(dir.join(MADE)).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_made(dir: &Path, made: &Made) -> Result<()> {
    fs::write(dir.join(MADE), serde_json::to_string_pretty(made)? + "\n")
        .with_context(|| format!("cannot write {}", dir.join(MADE).display()))
}

/// The hg-made repository of `revs` revisions,
/// `target/bench/files/revlog-hg-<revs>`, made by the peer when missing.
fn ensure_hg_repo(
    ws: &Workspace,
    oracle: &str,
    revs: u32,
    hg_version: Option<&str>,
    progress: &Progress,
) -> Result<RepoInfo> {
    let files = ws.bench_dir().join("files");
    fs::create_dir_all(&files).with_context(|| format!("cannot create {}", files.display()))?;
    let dir = files.join(format!("revlog-hg-{revs}"));
    if dir.join(".hg").is_dir() {
        let made = read_made(&dir).unwrap_or_else(|| Made {
            how: format!(
                "{oracle} gen-repo {} --revs {revs}  # (cached; no record)",
                path_arg(&dir)
            ),
            secs: 0.0,
            made_utc: String::new(),
            hg_version: None,
            checks: Vec::new(),
        });
        return RepoInfo::describe(&dir, revs, Origin::Hg, false, made);
    }
    progress.note(&format!(
        "xtask: making {} with hg ({revs} revisions{}; cached for later runs)",
        dir.display(),
        if revs >= 50_000 {
            ", about 2 min per 100k"
        } else {
            ""
        }
    ));
    progress.set(format!("hg gen-repo --revs {revs}"));
    let tmp_path = files.join(format!(".revlog-hg-{revs}.tmp-{}", std::process::id()));
    let tmp = TempDir::new(tmp_path.clone());
    let cmd = Cmd::new(oracle.to_owned())
        .arg("gen-repo")
        .arg(path_arg(&tmp_path))
        .arg("--revs")
        .arg(revs.to_string());
    let out = cmd.run(&ws.root).context("cannot make the repository")?;
    let made = Made {
        how: format!("{}  # then renamed to {}", cmd.shell(), path_arg(&dir)),
        secs: out.wall_s,
        made_utc: utc_human(SystemTime::now()),
        hg_version: hg_version.map(str::to_owned),
        checks: vec![Check {
            what: "gen-repo output".to_owned(),
            ok: true,
            detail: out.stdout.trim().replace('\n', "; "),
        }],
    };
    write_made(&tmp_path, &made)?;
    interrupt::check()?;
    fs::rename(&tmp_path, &dir).with_context(|| format!("cannot rename into {}", dir.display()))?;
    tmp.keep();
    RepoInfo::describe(&dir, revs, Origin::Hg, true, made)
}

/// `hg init DIR` (the store layout and requirements of the installed hg).
fn hg_init(ws: &Workspace, dir: &Path) -> Result<()> {
    hg().arg("init")
        .arg(path_arg(dir))
        .run(&ws.root)
        .context("hg init")?;
    Ok(())
}

/// The synthetic repository of `revs` revisions,
/// `target/bench/files/revlog-synth-<revs>`: written by
/// [`SynthChangelog`] when `from` is `None`, else copied as a prefix of
/// `from`'s changelog; checked with hg; made under a temporary name.
fn ensure_synth_repo(
    ws: &Workspace,
    revs: u32,
    from: Option<&RepoInfo>,
    mapwise: &Path,
    hg_version: Option<&str>,
    progress: &Progress,
) -> Result<RepoInfo> {
    let files = ws.bench_dir().join("files");
    fs::create_dir_all(&files).with_context(|| format!("cannot create {}", files.display()))?;
    let dir = files.join(format!("revlog-synth-{revs}"));
    if dir.join(".hg").is_dir() {
        if let Some(made) = read_made(&dir) {
            return RepoInfo::describe(&dir, revs, Origin::Synthetic, false, made);
        }
        // No record: made by an interrupted older run; make it again.
        fs::remove_dir_all(&dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    let tmp_path = files.join(format!(".revlog-synth-{revs}.tmp-{}", std::process::id()));
    let tmp = TempDir::new(tmp_path.clone());
    let start = Instant::now();
    hg_init(ws, &tmp_path)?;
    let store = tmp_path.join(".hg").join("store");
    let how = if let Some(src) = from {
        progress.set(format!("synthetic changelog, {revs} revisions (prefix)"));
        copy_prefix(&src.store(), &store, revs)?;
        format!(
            "hg init {}; the first {revs} revisions of {}'s changelog (00changelog.i: {} bytes, 00changelog.d up to rev {revs}'s offset)",
            path_arg(&dir),
            src.path,
            u64::from(revs) * ENTRY as u64
        )
    } else {
        progress.note(&format!(
            "xtask: synthesising a {revs}-revision changelog in {} (cached for later runs)",
            dir.display()
        ));
        let mut index =
            BufWriter::with_capacity(1 << 20, File::create(store.join("00changelog.i"))?);
        let mut data =
            BufWriter::with_capacity(1 << 20, File::create(store.join("00changelog.d"))?);
        SynthChangelog::write(revs, &mut index, &mut data, |rev| {
            progress.set(format!("synthesising the changelog: rev {rev}/{revs}"));
            interrupt::check()?;
            Ok(())
        })?;
        for w in [index, data] {
            w.into_inner()
                .map_err(|e| anyhow::anyhow!("cannot write the changelog: {e}"))?
                .sync_all()?;
        }
        format!(
            "hg init {}; xtask writes 00changelog.i/.d: {revs} linear, file-less changesets (v1, not inline, \
             `u` + text chunks, text = \"<null manifest>\\nbench\\n<rev> 0\\n\\nr<rev>\")",
            path_arg(&dir)
        )
    };
    let checks = check_synth(ws, &tmp_path, revs, from.is_none(), mapwise, progress)?;
    let made = Made {
        how,
        secs: start.elapsed().as_secs_f64(),
        made_utc: utc_human(SystemTime::now()),
        hg_version: hg_version.map(str::to_owned),
        checks,
    };
    write_made(&tmp_path, &made)?;
    interrupt::check()?;
    fs::rename(&tmp_path, &dir).with_context(|| format!("cannot rename into {}", dir.display()))?;
    tmp.keep();
    RepoInfo::describe(&dir, revs, Origin::Synthetic, true, made)
}

/// The first `revs` revisions of the changelog in `src` into `dst`.
fn copy_prefix(src: &Path, dst: &Path, revs: u32) -> Result<()> {
    let index = fs::read(src.join("00changelog.i"))?;
    let n = usize::try_from(revs)? * ENTRY;
    if index.len() < n {
        bail!("{}: fewer than {revs} revisions", src.display());
    }
    let data_end = if index.len() > n {
        let mut b = [0u8; 8];
        b[2..8].copy_from_slice(&index[n..n + 6]);
        u64::from_be_bytes(b)
    } else {
        fs::metadata(src.join("00changelog.d"))?.len()
    };
    fs::write(dst.join("00changelog.i"), &index[..n])?;
    let mut from = File::open(src.join("00changelog.d"))?.take(data_end);
    let mut to = File::create(dst.join("00changelog.d"))?;
    std::io::copy(&mut from, &mut to)?;
    to.sync_all()?;
    Ok(())
}

/// hg's view of a synthetic repository. Full checks (`full`, the
/// synthesised one): debugindex samples against the bytes written, the
/// whole debugindex against ours, debugdata of the first and last
/// revision, `hg log -l 5` with the default template (reads the texts and
/// checks their hashes); always: `hg log -l 5 -T '{rev}\n'`; on small
/// repositories `hg verify`.
fn check_synth(
    ws: &Workspace,
    dir: &Path,
    revs: u32,
    full: bool,
    mapwise: &Path,
    progress: &Progress,
) -> Result<Vec<Check>> {
    let mut checks = Vec::new();
    let repo = path_arg(dir);
    let in_repo = || hg().arg("-R").arg(repo.clone());
    let log_revs = || in_repo().args(["log", "-l", "5", "-T", "{rev}\\n"]);
    let log = log_revs().run(&ws.root)?;
    let want = expected_log(revs, LIMIT);
    checks.push(Check {
        what: "hg log -l 5 -T '{rev}\\n'".to_owned(),
        ok: log.stdout == want,
        detail: format!("printed {}", log.stdout.trim().replace('\n', " ")),
    });
    if full {
        // What `{rev}` needs: with the data file moved away (in the
        // temporary directory, before it is renamed into place).
        let d = dir.join(".hg/store/00changelog.d");
        let away = dir.join(".hg/store/00changelog.d.away");
        fs::rename(&d, &away)?;
        let bare = log_revs().output(&ws.root);
        fs::rename(&away, &d)?;
        let bare = bare?;
        checks.push(Check {
            what: "what hg log -T '{rev}\\n' reads (a note, not a pass/fail check)".to_owned(),
            ok: true,
            detail: if bare.success && bare.stdout == want {
                "the index only: it prints the same with 00changelog.d moved away".to_owned()
            } else {
                format!(
                    "the data file too: without 00changelog.d it fails ({})",
                    tail(&bare.stderr, 1)
                )
            },
        });
    }
    if revs <= 20_000 {
        progress.set(format!("hg verify, {revs} revisions"));
        let v = in_repo().arg("verify").output(&ws.root)?;
        checks.push(Check {
            what: format!("hg verify ({revs} revisions)"),
            ok: v.success,
            detail: format!(
                "{}: {}",
                v.status,
                tail(&format!("{}{}", v.stdout, v.stderr), 3).replace('\n', "; ")
            ),
        });
    }
    if !full {
        return Ok(checks);
    }
    progress.set(format!("hg debugindex -c, {revs} revisions (once)"));
    let ours_di = Cmd::new(path_arg(mapwise))
        .args(["revlog", "debugindex", "-c", "-R"])
        .arg(repo.clone());
    let hg_di = in_repo().args(["debugindex", "-c"]).run(&ws.root)?;
    let index = fs::read(dir.join(".hg/store/00changelog.i"))?;
    let rows: BTreeMap<i64, IndexRow> = hg_di
        .stdout
        .lines()
        .filter_map(parse_index_row)
        .filter(|r| u32::try_from(r.rev).is_ok_and(|x| sample_revs(revs).binary_search(&x).is_ok()))
        .map(|r| (r.rev, r))
        .collect();
    let mut bad = Vec::new();
    for rev in sample_revs(revs) {
        let want = index_row(&index, rev);
        let got = rows.get(&i64::from(rev));
        if want.as_ref() != got {
            bad.push(format!("rev {rev}: hg {got:?}, written {want:?}"));
        }
    }
    let lines = hg_di.stdout.lines().count();
    checks.push(Check {
        what: "hg debugindex -c, sampled rows".to_owned(),
        ok: bad.is_empty() && lines == revs as usize + 1,
        detail: if bad.is_empty() {
            format!(
                "{} rows (revs {}) equal to the bytes written; {lines} lines in all",
                sample_revs(revs).len(),
                ranges(&sample_revs(revs))
            )
        } else {
            bad.join("; ")
        },
    });
    let ours = ours_di.run(&ws.root)?;
    checks.push(Check {
        what: "hg debugindex -c = ours (`mapwise revlog debugindex -c`)".to_owned(),
        ok: ours.stdout == hg_di.stdout,
        detail: if ours.stdout == hg_di.stdout {
            format!("identical, {} bytes", ours.stdout.len())
        } else {
            let first = ours
                .stdout
                .lines()
                .zip(hg_di.stdout.lines())
                .position(|(a, b)| a != b);
            format!("differ (first differing line: {first:?})")
        },
    });
    for rev in [0, revs - 1] {
        let d = in_repo()
            .args(["debugdata", "-c"])
            .arg(rev.to_string())
            .output(&ws.root)?;
        let want = String::from_utf8_lossy(&synth_text(rev)).into_owned();
        checks.push(Check {
            what: format!("hg debugdata -c {rev}"),
            ok: d.success && d.stdout == want,
            detail: if d.success {
                format!("{:?}", d.stdout)
            } else {
                tail(&d.stderr, 2)
            },
        });
    }
    let l = in_repo().args(["log", "-l", "2"]).output(&ws.root)?;
    checks.push(Check {
        what: "hg log -l 2 (default template: reads the texts, checks their SHA-1)".to_owned(),
        ok: l.success && l.stdout.contains(&format!("changeset:   {}:", revs - 1)),
        detail: if l.success {
            l.stdout.trim().replace('\n', "; ")
        } else {
            tail(&l.stderr, 2)
        },
    });
    Ok(checks)
}

/// `0–4, 499998–500002, 999995–999999`.
fn ranges(revs: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < revs.len() {
        let mut j = i;
        while j + 1 < revs.len() && revs[j + 1] == revs[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            revs[i].to_string()
        } else {
            format!("{}–{}", revs[i], revs[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

// ---------------------------------------------------------------------
// Runs.

/// What one side of a pair runs.
#[derive(Clone, Debug)]
enum Job {
    /// A process, timed spawn to exit; its stdout must be `expect` when
    /// given.
    Process { cmd: Cmd, expect: Option<String> },
    /// xtask's own model of ours' load of this index; `random` adds
    /// `madvise(MADV_RANDOM)` after mapping (what neither ours nor hg does).
    Model { mode: Mode, random: bool },
}

/// One side: what runs and which repository's files the reset acts on.
#[derive(Clone, Debug)]
struct SideSpec<'a> {
    who: String,
    job: Job,
    repo: &'a RepoInfo,
}

impl SideSpec<'_> {
    fn shell(&self) -> String {
        match &self.job {
            Job::Process { cmd, .. } => cmd.shell(),
            Job::Model { mode, random } => format!(
                "(in xtask) open + fstat + {} {} + touch 5 tip entries and their parents' nodes",
                match (mode, random) {
                    (Mode::Read, _) => "read(2) whole file of",
                    (Mode::Mmap, false) => "mmap(PROT_READ, MAP_SHARED) + munmap of",
                    (Mode::Mmap, true) => {
                        "mmap(PROT_READ, MAP_SHARED) + madvise(MADV_RANDOM) + munmap of"
                    }
                },
                path_arg(&self.repo.index())
            ),
        }
    }
}

/// One run.
#[derive(Debug, Serialize)]
struct Sample {
    /// Process: spawn to exit as seen by xtask. Model: the load in xtask.
    secs: f64,
    prep: Prepared,
    /// Fraction of 00changelog.i resident right after the run (mincore).
    resident_after: f64,
    /// The same in 4 KiB pages.
    resident_pages_after: u64,
    /// Output as expected (always true for the model and unchecked runs).
    output_ok: bool,
    /// The output, kept only when it was not as expected.
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
}

/// The cache reset before one run. Cold: evict the changelog files; pages
/// still under I/O (read-ahead a mapped run started just before it ended)
/// cannot be dropped yet, so a reset that leaves more than 1 % of the
/// index resident waits a little and evicts again (up to 4 times).
fn prepare(repo: &RepoInfo, state: CacheState) -> Result<Prepared> {
    let start = Instant::now();
    let files = repo.files();
    let mut resident;
    let mut attempt = 0u32;
    loop {
        for f in &files {
            match state {
                CacheState::Cold => pagecache::evict(f)?,
                CacheState::Warm => {
                    pagecache::read_whole(f, false)?;
                }
            }
        }
        resident = pagecache::resident_fraction(&repo.index())?;
        attempt += 1;
        if state == CacheState::Warm || resident <= 0.01 || attempt == 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10 << attempt));
        interrupt::check()?;
    }
    Ok(Prepared {
        state,
        prep_s: start.elapsed().as_secs_f64(),
        resident,
    })
}

fn measure(side: &SideSpec<'_>, cwd: &Path, prep: Prepared) -> Result<Sample> {
    let (secs, output_ok, output) = match &side.job {
        Job::Process { cmd, expect } => {
            let out = cmd.run(cwd)?;
            let ok = expect.as_ref().is_none_or(|e| *e == out.stdout);
            (out.wall_s, ok, (!ok).then_some(out.stdout))
        }
        Job::Model { mode, random } => {
            (model_load(&side.repo.index(), *mode, *random)?, true, None)
        }
    };
    let resident_after = pagecache::resident_fraction(&side.repo.index())?;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let resident_pages_after = (resident_after * side.repo.pages() as f64).round() as u64;
    Ok(Sample {
        secs,
        prep,
        resident_after,
        resident_pages_after,
        output_ok,
        output,
    })
}

/// xtask's model of ours' load (native/src/engine/revlog/load.rs + log.rs): open,
/// fstat, then read(2) the whole file into an exactly reserved buffer, or
/// map it `PROT_READ, MAP_SHARED` without advice; then read the header and
/// the 5 tip entries with their first parents' nodes; free or unmap; close.
/// Non-inline indexes only. With `random`, `madvise(MADV_RANDOM)` right
/// after mapping (no read-around on faults). Returns the seconds from open
/// to close.
fn model_load(path: &Path, mode: Mode, random: bool) -> Result<f64> {
    let start = Instant::now();
    let mut f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let len = usize::try_from(f.metadata()?.len())?;
    let touch = |bytes: &[u8]| -> u64 {
        let mut sum = u64::from(bytes.first().copied().unwrap_or(0));
        let revs = bytes.len() / ENTRY;
        for rev in revs.saturating_sub(LIMIT as usize)..revs {
            let e = &bytes[rev * ENTRY..(rev + 1) * ENTRY];
            sum += e[32..52].iter().map(|&b| u64::from(b)).sum::<u64>();
            let p1 = i32::from_be_bytes([e[24], e[25], e[26], e[27]]);
            if let Ok(p) = usize::try_from(p1)
                && let Some(pe) = bytes.get(p * ENTRY + 32..p * ENTRY + 52)
            {
                sum += pe.iter().map(|&b| u64::from(b)).sum::<u64>();
            }
        }
        sum
    };
    let sum = match mode {
        Mode::Read => {
            let mut v = Vec::new();
            v.try_reserve_exact(len)?;
            f.read_to_end(&mut v)?;
            touch(&v)
        }
        Mode::Mmap if len == 0 => 0,
        Mode::Mmap => {
            // SAFETY: a bench file of our own, which nothing truncates
            // while the bench runs, so no access past its end can fault.
            let map = unsafe { FileMap::shared_read_only(&f, len, false) }
                .with_context(|| format!("{}: mmap", path.display()))?;
            if random {
                map.advise(Advice::Random, 0, len)
                    .with_context(|| format!("{}: madvise", path.display()))?;
            }
            touch(map.bytes())
        }
    };
    std::hint::black_box(sum);
    drop(f);
    Ok(start.elapsed().as_secs_f64())
}

/// Summaries of a cell.
#[derive(Debug, Serialize)]
struct CellSummary {
    a: Option<Summary>,
    b: Option<Summary>,
    /// a/b, pair by pair.
    ratio: Option<Summary>,
    ratio_skipped: usize,
    /// Resident fraction of the index after the reset, all runs.
    resident: Option<Summary>,
    a_resident_after: Option<Summary>,
    b_resident_after: Option<Summary>,
    a_pages_after: Option<Summary>,
    b_pages_after: Option<Summary>,
}

fn summarize(pairs: &[Pair<Sample>]) -> CellSummary {
    let col = |f: &dyn Fn(&Sample) -> f64, a: bool| {
        let v: Vec<f64> = pairs
            .iter()
            .map(|p| f(if a { &p.a } else { &p.b }))
            .collect();
        Summary::of(&v)
    };
    let secs: Vec<(f64, f64)> = pairs.iter().map(|p| (p.a.secs, p.b.secs)).collect();
    let (ratios, ratio_skipped) = pair_ratios(&secs);
    let resident: Vec<f64> = pairs
        .iter()
        .flat_map(|p| [p.a.prep.resident, p.b.prep.resident])
        .collect();
    #[expect(clippy::cast_precision_loss)]
    let pages = |s: &Sample| s.resident_pages_after as f64;
    CellSummary {
        a: col(&|s| s.secs, true),
        b: col(&|s| s.secs, false),
        ratio: Summary::of(&ratios),
        ratio_skipped,
        resident: Summary::of(&resident),
        a_resident_after: col(&|s| s.resident_after, true),
        b_resident_after: col(&|s| s.resident_after, false),
        a_pages_after: col(&pages, true),
        b_pages_after: col(&pages, false),
    }
}

/// What a cell is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Kind {
    /// ours vs hg, one repository, one load.
    Matrix,
    /// ours mmap at 1M vs ours mmap at 1k.
    Size,
    /// ours mmap vs ours read, one repository.
    Sweep,
    /// hg mmap vs hg read, one repository (--full).
    SweepHg,
    /// xtask's model, mmap vs read.
    Model,
    /// Process start-up: `mapwise --version` vs `hg root`.
    Startup,
    /// xtask's model at 1M: mmap + MADV_RANDOM vs plain mmap.
    Advice,
}

#[derive(Debug, Serialize)]
struct CellResult {
    kind: Kind,
    label: String,
    cache: CacheState,
    mode: Option<Mode>,
    repo: String,
    revs: u32,
    index_bytes: u64,
    /// B's repository when it is not A's (the size check).
    b_repo: String,
    a: String,
    b: String,
    a_cmd: String,
    b_cmd: String,
    warmup: Vec<Pair<Sample>>,
    pairs: Vec<Pair<Sample>>,
    summary: CellSummary,
}

impl CellResult {
    fn outputs_ok(&self) -> bool {
        self.warmup
            .iter()
            .chain(&self.pairs)
            .all(|p| p.a.output_ok && p.b.output_ok)
    }
}

/// Runs and counts.
struct Runner<'a> {
    ws: &'a Workspace,
    progress: &'a Progress,
    warmup: usize,
    /// Residency traces of every timed process run.
    traces: std::cell::RefCell<Traces>,
    /// Where the temporary trace files go.
    scratch: PathBuf,
}

impl Runner<'_> {
    #[expect(clippy::too_many_arguments)]
    fn cell(
        &self,
        kind: Kind,
        label: String,
        cache: CacheState,
        mode: Option<Mode>,
        runs: usize,
        a: &SideSpec<'_>,
        b: &SideSpec<'_>,
    ) -> Result<CellResult> {
        let phase = std::cell::Cell::new("warm-up");
        let mut before = |side: Side, run: usize| {
            let s = if side == Side::A { a } else { b };
            let of = if phase.get() == "run" {
                runs
            } else {
                self.warmup
            };
            self.progress
                .set(format!("{label}: {} {run}/{of}, {}", phase.get(), s.who));
            let prep = prepare(s.repo, cache)?;
            let off = match cache {
                CacheState::Cold => prep.resident > 0.01,
                CacheState::Warm => prep.resident < 0.99,
            };
            if off {
                self.progress.note(&format!(
                    "xtask: warning: {label} {} {run} ({}) starts with {} of the index resident",
                    phase.get(),
                    s.who,
                    pct(prep.resident)
                ));
            }
            Ok(prep)
        };
        // Every timed process run is traced (00changelog.i every 50 ms);
        // the model's loads run inside xtask at µs resolution, where a
        // sampling thread would be part of what is timed, so they are not.
        let timed = |s: &SideSpec<'_>, run: usize, prep| {
            let go = || measure(s, &self.ws.root, prep);
            let traced = phase.get() == "run" && matches!(s.job, Job::Process { .. });
            let sample = if traced {
                self.traces.borrow_mut().record(
                    &self.scratch,
                    &s.repo.index(),
                    &label,
                    &s.who,
                    run,
                    go,
                )
            } else {
                go()
            };
            self.progress.inc();
            sample
        };
        let mut run_a = |run, prep| timed(a, run, prep);
        let mut run_b = |run, prep| timed(b, run, prep);
        let warmup = schedule::alternate(self.warmup, &mut before, &mut run_a, &mut run_b)?;
        phase.set("run");
        let pairs = schedule::alternate(runs, &mut before, &mut run_a, &mut run_b)?;
        let summary = summarize(&pairs);
        Ok(CellResult {
            kind,
            label,
            cache,
            mode,
            repo: a.repo.name.clone(),
            revs: a.repo.revs,
            index_bytes: a.repo.index_bytes,
            b_repo: b.repo.name.clone(),
            a: a.who.clone(),
            b: b.who.clone(),
            a_cmd: a.shell(),
            b_cmd: b.shell(),
            warmup,
            pairs,
            summary,
        })
    }
}

// ---------------------------------------------------------------------
// Load checks (untimed).

/// The fields of ours' `--json` this bench reads.
#[derive(Debug, Deserialize)]
struct OursJson {
    load: String,
    populate: bool,
    threshold: Option<u64>,
    index_bytes: u64,
    revisions: u64,
    inline: bool,
    entries: Vec<OursEntry>,
}

#[derive(Debug, Deserialize)]
struct OursEntry {
    rev: i64,
}

/// Parses `mapwise revlog log --json`.
fn parse_ours_json(stdout: &str) -> Result<OursJson, String> {
    serde_json::from_str(stdout).map_err(|e| format!("bad JSON from mapwise: {e}"))
}

/// hg's mmap decision, reported by a throw-away extension wrapping
/// `util.mmapread` (Mercurial's own test does the same).
const REPORT_MMAP_EXT: &str = "\
from mercurial import extensions, pycompat, util

def extsetup(ui):
    def wrapped(orig, fp, *args, **kwargs):
        ui.write(b\"mmap: %s\\n\" % pycompat.bytestr(fp.name))
        ui.flush()
        return orig(fp, *args, **kwargs)
    extensions.wrapfunction(util, 'mmapread', wrapped)
";

/// Whether hg's output (with the extension) reports mapping the changelog,
/// and the rest of the output.
pub fn split_mmap_report(stdout: &str) -> (bool, String) {
    let mut mapped = false;
    let mut rest = String::new();
    for line in stdout.lines() {
        if let Some(p) = line.strip_prefix("mmap: ") {
            mapped |= p.ends_with("00changelog.i");
        } else {
            rest.push_str(line);
            rest.push('\n');
        }
    }
    (mapped, rest)
}

fn load_check(
    ws: &Workspace,
    mapwise: &Path,
    ext: &Path,
    repo: &RepoInfo,
    mode: Mode,
    flags: &[String],
    with_hg: bool,
) -> Result<Vec<Check>> {
    let mut checks = Vec::new();
    let want_log = expected_log(repo.revs, LIMIT);
    let ours = Cmd::new(path_arg(mapwise))
        .args(["revlog", "log", "-l", "5"])
        .arg(repo.path.clone())
        .args(flags.iter().cloned())
        .arg("--json");
    let out = ours.run(&ws.root)?;
    let (ok, detail) = match parse_ours_json(&out.stdout) {
        Ok(j) => {
            let revs: Vec<i64> = j.entries.iter().map(|e| e.rev).collect();
            let want_revs: Vec<i64> = want_log.lines().filter_map(|l| l.parse().ok()).collect();
            (
                j.load == mode.name()
                    && revs == want_revs
                    && j.index_bytes == repo.index_bytes
                    && j.revisions == u64::from(repo.revs),
                format!(
                    "load={} populate={} threshold={} index_bytes={} revisions={} inline={} revs={revs:?}",
                    j.load,
                    j.populate,
                    j.threshold
                        .map_or_else(|| "null".to_owned(), |t| t.to_string()),
                    j.index_bytes,
                    j.revisions,
                    j.inline
                ),
            )
        }
        Err(e) => (false, e),
    };
    checks.push(Check {
        what: format!("{}, {}: ours --json", repo.name, mode.name()),
        ok,
        detail,
    });
    if with_hg {
        let hg_cmd = hg()
            .arg("-R")
            .arg(repo.path.clone())
            .arg("--config")
            .arg(format!("extensions.reportmmap={}", path_arg(ext)))
            .args(["log", "-l", "5", "-T", "{rev}\\n"])
            .args(flags.iter().cloned());
        let out = hg_cmd.run(&ws.root)?;
        let (mapped, rest) = split_mmap_report(&out.stdout);
        checks.push(Check {
            what: format!("{}, {}: hg util.mmapread", repo.name, mode.name()),
            ok: mapped == (mode == Mode::Mmap) && rest == want_log,
            detail: format!(
                "00changelog.i {}; log output {}",
                if mapped {
                    "mapped"
                } else {
                    "not mapped (read)"
                },
                if rest == want_log {
                    "as expected"
                } else {
                    "UNEXPECTED"
                }
            ),
        });
    }
    Ok(checks)
}

// ---------------------------------------------------------------------
// The bench.

/// The crossover of one series.
#[derive(Debug, Serialize)]
struct CrossoverResult {
    /// `ours`, `model`, `hg`, or `combined` (what the recommendation uses).
    source: &'static str,
    cache: CacheState,
    /// (index bytes, median mmap/read ratio).
    points: Vec<(u64, f64)>,
    /// For `combined`: which series gave each point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    decided_by: Vec<&'static str>,
    crossover: Option<Crossover>,
}

/// The threshold this run recommends.
#[derive(Debug, Serialize)]
struct Recommendation {
    bytes: Option<u64>,
    config: Option<String>,
    why: String,
}

#[derive(Debug, Serialize)]
struct Results {
    bench: &'static str,
    started_utc: String,
    finished_utc: String,
    preset: &'static str,
    runs: usize,
    warmup: usize,
    sweep_runs: usize,
    machine: Machine,
    hg_version: Option<String>,
    loadavg_end: Option<String>,
    config_read: Vec<String>,
    config_mmap: Vec<String>,
    build_commands: Vec<String>,
    repos: Vec<RepoInfo>,
    load_checks: Vec<Check>,
    cells: Vec<CellResult>,
    crossovers: Vec<CrossoverResult>,
    recommendation: Recommendation,
    outputs_agree: bool,
    /// The sizes and counts of this run.
    plan: Plan,
    /// Cold O_DIRECT and cached reads of the largest changelog index.
    limits: Vec<Limit>,
    /// Residency traces of the timed process runs (files in `traces/`).
    traces: Vec<TraceInfo>,
    /// SVG charts beside the report.
    charts: Vec<ChartFile>,
    /// The report's paragraph on the traces.
    #[serde(skip)]
    traces_paragraph: Option<String>,
}

/// Runs the bench.
#[expect(clippy::too_many_lines)]
pub fn run(ws: &Workspace, args: &Args) -> Result<ExitCode> {
    let started = SystemTime::now();
    let runs = usize::try_from(args.common.runs).context("--runs too large")?;
    let warmup = usize::try_from(args.warmup).context("--warmup too large")?;
    let plan = Plan::new(args.common.tiny, args.full, args.sweep_runs);
    let preset = plan.preset;
    let sweep_runs = usize::try_from(plan.sweep_runs).context("--sweep-runs too large")?;
    let sweep_sizes = plan.sweep.clone();
    let oracle = ws.peer("revlog")?;
    let caches = [CacheState::Warm, CacheState::Cold];
    let modes = [Mode::Read, Mode::Mmap];
    // Planned runs, for the progress bar.
    let per = |r: usize| (warmup + r) * 2;
    let matrix_runs = (plan.hg_sizes.len() + 1) * caches.len() * modes.len() * per(runs);
    let size_runs = 4 * caches.len() * per(sweep_runs);
    let sweep_cells = sweep_sizes.len() * caches.len();
    let steps = matrix_runs
        + per(runs)
        + size_runs
        + 2 * sweep_cells * per(sweep_runs)
        + if plan.hg_sweep {
            sweep_cells * per(runs)
        } else {
            0
        }
        + limits::steps(runs);
    let progress = Progress::new(steps as u64);

    // Build ours.
    let build = Cmd::cargo_release("mapwise-cli", Some("mapwise"));
    progress.set("building mapwise (release)");
    build.run(&ws.root).context("cannot build ours")?;
    let mapwise = ws.release_bin("mapwise");
    if !mapwise.is_file() {
        bail!("{} missing after the build", mapwise.display());
    }

    // Repositories. The peer installs hg when it makes one.
    let mut hg_version = machine::first_line_of("hg", &["--version", "-q"]);
    let mut repos: Vec<RepoInfo> = Vec::new();
    for &revs in &plan.hg_sizes {
        repos.push(ensure_hg_repo(
            ws,
            &oracle,
            revs,
            hg_version.as_deref(),
            &progress,
        )?);
        if hg_version.is_none() {
            hg_version = machine::first_line_of("hg", &["--version", "-q"]);
        }
    }
    let Some(hg_v) = hg_version.as_deref().and_then(parse_hg_version) else {
        bail!("cannot run `hg --version` (apt-get install mercurial)");
    };
    let big = ensure_synth_repo(
        ws,
        plan.big,
        None,
        &mapwise,
        hg_version.as_deref(),
        &progress,
    )?;
    let mut sweep_repos = Vec::new();
    for &revs in &sweep_sizes {
        if revs != plan.big {
            sweep_repos.push(ensure_synth_repo(
                ws,
                revs,
                Some(&big),
                &mapwise,
                hg_version.as_deref(),
                &progress,
            )?);
        }
    }
    repos.push(big);
    // The matrix: the hg-made repositories, smallest first, then the big
    // synthetic one.
    let hg1k = 0;
    let bigi = plan.hg_sizes.len();
    let first_sweep = repos.len();
    repos.extend(sweep_repos);
    // Sweep repositories in size order, the big one among them.
    let mut sweep_idx: Vec<usize> = (first_sweep..repos.len()).chain([bigi]).collect();
    sweep_idx.sort_by_key(|&i| repos[i].revs);
    let synth1k = sweep_idx.iter().copied().find(|&i| repos[i].revs == 1024);
    let machine = Machine::describe(&repos[bigi].index());

    let flags = |m: Mode| config_args(m, hg_v);
    let ours_log = |repo: &RepoInfo, m: Mode| Job::Process {
        cmd: Cmd::new(path_arg(&mapwise))
            .args(["revlog", "log", "-l", "5"])
            .arg(repo.path.clone())
            .args(flags(m)),
        expect: Some(expected_log(repo.revs, LIMIT)),
    };
    let hg_log = |repo: &RepoInfo, m: Mode| Job::Process {
        cmd: hg()
            .args(["log", "-l", "5", "-T", "{rev}\\n", "-R"])
            .arg(repo.path.clone())
            .args(flags(m)),
        expect: Some(expected_log(repo.revs, LIMIT)),
    };

    // Load checks, once, untimed.
    progress.set("load checks");
    let ext = TempPath::new(
        std::path::absolute(ws.bench_dir())?
            .join(format!(".revlog-reportmmap-{}.py", std::process::id())),
    );
    fs::write(ext.path(), REPORT_MMAP_EXT)?;
    let mut load_checks = Vec::new();
    for (i, repo) in repos.iter().enumerate() {
        let matrix = i < first_sweep;
        for m in modes {
            load_checks.extend(load_check(
                ws,
                &mapwise,
                ext.path(),
                repo,
                m,
                &flags(m),
                matrix || plan.hg_sweep,
            )?);
        }
    }
    drop(ext);
    for r in &repos {
        for c in &r.made.checks {
            if !c.ok {
                progress.note(&format!(
                    "xtask: warning: {}: {} failed: {}",
                    r.name, c.what, c.detail
                ));
            }
        }
    }

    let runner = Runner {
        ws,
        progress: &progress,
        warmup,
        traces: std::cell::RefCell::new(Traces::new()),
        scratch: ws.bench_dir().join("scratch"),
    };
    let mut cells = Vec::new();

    // Start-up floors.
    let startup = runner.cell(
        Kind::Startup,
        "start-up".to_owned(),
        CacheState::Warm,
        None,
        runs,
        &SideSpec {
            who: "ours".to_owned(),
            job: Job::Process {
                cmd: Cmd::new(path_arg(&mapwise)).arg("--version"),
                expect: None,
            },
            repo: &repos[hg1k],
        },
        &SideSpec {
            who: "hg".to_owned(),
            job: Job::Process {
                cmd: hg().arg("-R").arg(repos[hg1k].path.clone()).arg("root"),
                expect: None,
            },
            repo: &repos[hg1k],
        },
    )?;
    cells.push(startup);

    // The matrix.
    for repo in &repos[..first_sweep] {
        for cache in caches {
            for m in modes {
                let label = format!("{}, {}, {}", repo.name, cache.name(), m.name());
                cells.push(runner.cell(
                    Kind::Matrix,
                    label,
                    cache,
                    Some(m),
                    runs,
                    &SideSpec {
                        who: "ours".to_owned(),
                        job: ours_log(repo, m),
                        repo,
                    },
                    &SideSpec {
                        who: "hg".to_owned(),
                        job: hg_log(repo, m),
                        repo,
                    },
                )?);
            }
        }
    }

    // Target 1: ours mmap at 1M vs at 1k.
    // The 1k side: hg's (inline) mapped, the same read, the synthetic 1k
    // (the 1M one's format) mapped.
    let small: Vec<(usize, Mode)> = [(hg1k, Mode::Mmap), (hg1k, Mode::Read)]
        .into_iter()
        .chain(synth1k.map(|i| (i, Mode::Mmap)))
        .collect();
    for cache in caches {
        for &(si, sm) in &small {
            let label = format!(
                "ours mmap {} vs ours {} {}, {}",
                repos[bigi].name,
                sm.name(),
                repos[si].name,
                cache.name()
            );
            cells.push(runner.cell(
                Kind::Size,
                label,
                cache,
                Some(Mode::Mmap),
                sweep_runs,
                &SideSpec {
                    who: format!("ours mmap {}", repos[bigi].name),
                    job: ours_log(&repos[bigi], Mode::Mmap),
                    repo: &repos[bigi],
                },
                &SideSpec {
                    who: format!("ours {} {}", sm.name(), repos[si].name),
                    job: ours_log(&repos[si], sm),
                    repo: &repos[si],
                },
            )?);
        }
        // What the cold mapped 1M run pays for read-around: the model with
        // and without MADV_RANDOM.
        let model = |random| Job::Model {
            mode: Mode::Mmap,
            random,
        };
        cells.push(runner.cell(
            Kind::Advice,
            format!(
                "model mmap+MADV_RANDOM vs mmap, {}, {}",
                repos[bigi].name,
                cache.name()
            ),
            cache,
            Some(Mode::Mmap),
            sweep_runs,
            &SideSpec {
                who: "model mmap + MADV_RANDOM".to_owned(),
                job: model(true),
                repo: &repos[bigi],
            },
            &SideSpec {
                who: "model mmap".to_owned(),
                job: model(false),
                repo: &repos[bigi],
            },
        )?);
    }

    // The sweep: ours, the model, and (--full) hg; mmap = A, read = B.
    for &i in &sweep_idx {
        let repo = &repos[i];
        for cache in caches {
            let mut series: Vec<(Kind, &str, Job, Job, usize)> = vec![
                (
                    Kind::Sweep,
                    "ours",
                    ours_log(repo, Mode::Mmap),
                    ours_log(repo, Mode::Read),
                    sweep_runs,
                ),
                (
                    Kind::Model,
                    "model",
                    Job::Model {
                        mode: Mode::Mmap,
                        random: false,
                    },
                    Job::Model {
                        mode: Mode::Read,
                        random: false,
                    },
                    sweep_runs,
                ),
            ];
            if plan.hg_sweep {
                series.push((
                    Kind::SweepHg,
                    "hg",
                    hg_log(repo, Mode::Mmap),
                    hg_log(repo, Mode::Read),
                    runs,
                ));
            }
            for (kind, who, a, b, n) in series {
                let label = format!("sweep {who}, {}, {}", repo.name, cache.name());
                cells.push(runner.cell(
                    kind,
                    label,
                    cache,
                    None,
                    n,
                    &SideSpec {
                        who: format!("{who} mmap"),
                        job: a,
                        repo,
                    },
                    &SideSpec {
                        who: format!("{who} read"),
                        job: b,
                        repo,
                    },
                )?);
            }
        }
    }

    // Crossovers.
    let mut crossovers = Vec::new();
    for (kind, source) in [
        (Kind::Sweep, "ours"),
        (Kind::Model, "model"),
        (Kind::SweepHg, "hg"),
    ] {
        for cache in caches {
            let points: Vec<(u64, f64)> = cells
                .iter()
                .filter(|c| c.kind == kind && c.cache == cache)
                .filter_map(|c| c.summary.ratio.map(|r| (c.index_bytes, r.median)))
                .collect();
            if points.is_empty() {
                continue;
            }
            crossovers.push(CrossoverResult {
                source,
                cache,
                crossover: crossover(&points),
                points,
                decided_by: Vec::new(),
            });
        }
    }
    for cache in caches {
        let series = |source: &str| {
            crossovers
                .iter()
                .find(|c| c.source == source && c.cache == cache)
                .map(|c| c.points.clone())
                .unwrap_or_default()
        };
        let both = combine(&series("ours"), &series("model"), TIE);
        let points: Vec<(u64, f64)> = both.iter().map(|&(b, r, _)| (b, r)).collect();
        crossovers.push(CrossoverResult {
            source: "combined",
            cache,
            crossover: crossover(&points),
            points,
            decided_by: both.iter().map(|&(_, _, by)| by).collect(),
        });
    }
    let recommendation = recommend(&crossovers);

    // The physical limits, on the largest changelog index.
    let limits = limits::standard(&repos[bigi].index(), runs, &progress)?;

    let outputs_agree = cells.iter().all(CellResult::outputs_ok)
        && load_checks.iter().all(|c| c.ok)
        && repos.iter().all(|r| r.made.checks.iter().all(|c| c.ok));
    let finished = SystemTime::now();
    let dir = ws.report_dir(&args.common, started);
    let traces = runner.traces.into_inner();
    let mut results = Results {
        bench: "revlog",
        started_utc: utc_human(started),
        finished_utc: utc_human(finished),
        preset,
        runs,
        warmup,
        sweep_runs,
        machine,
        hg_version,
        loadavg_end: machine::loadavg(),
        config_read: flags(Mode::Read),
        config_mmap: flags(Mode::Mmap),
        build_commands: vec![build.shell()],
        repos,
        load_checks,
        cells,
        crossovers,
        recommendation,
        outputs_agree,
        plan,
        limits,
        traces: traces.list().to_vec(),
        charts: Vec::new(),
        traces_paragraph: traces.paragraph(
            "the changelog index `00changelog.i` under test (`log -T '{rev}\\n'` reads no other changelog \
             file: hg prints the same with `00changelog.d` moved away, a check made when the big synthetic \
             changelog was made)",
            Path::new(&ws.rel(&dir)),
        ),
    };
    progress.set("charts");
    results.charts = revlog_charts(&results, &traces)?;
    let report = render(&results);
    drop(progress);
    output::publish_traced(&dir, &report, &results, &traces, &results.charts)?;
    if !results.outputs_agree {
        eprintln!("xtask: an output or a check was not as expected (see the report)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The charts of the report: ours/hg per matrix cell, and for each matrix
/// repository the index's residency during the first timed cold run of
/// each tool and load.
fn revlog_charts(r: &Results, traces: &Traces) -> Result<Vec<ChartFile>> {
    let matrix: Vec<&CellResult> = r.cells.iter().filter(|c| c.kind == Kind::Matrix).collect();
    let bars: Vec<RatioBar> = matrix
        .iter()
        .filter_map(|c| Some(RatioBar::of(c.label.clone(), c.summary.ratio.as_ref()?)))
        .collect();
    let mut out = vec![ChartFile {
        file: "ratios.svg".to_owned(),
        what: format!("log -l 5 wall time, ours / {} per cell", hg_name(r)),
        svg: charts::ratios(
            &format!("revlog: log -l 5, ours / {}", hg_name(r)),
            &bars,
            None,
        )?,
    }];
    let mut repos: Vec<&str> = Vec::new();
    for c in &matrix {
        if !repos.contains(&c.repo.as_str()) {
            repos.push(&c.repo);
        }
    }
    for name in repos {
        let picks: Vec<(String, &str, String)> = matrix
            .iter()
            .filter(|c| c.repo == name && c.cache == CacheState::Cold)
            .flat_map(|c| {
                let mode = c.mode.map_or("", Mode::name);
                [("ours", "ours"), ("hg", "hg")]
                    .map(|(side, who)| (c.label.clone(), side, format!("{who}, {mode}")))
            })
            .collect();
        let title = format!("revlog, {name}, cold log -l 5: 00changelog.i in the page cache");
        if let Some(svg) = super::traces::residency_chart(traces, &title, &picks)? {
            out.push(ChartFile {
                file: format!("residency-cold-{}.svg", super::traces::slug(name)),
                what: format!(
                    "{name}: resident share of 00changelog.i during the first timed cold run, read vs mmap, \
                     ours vs hg"
                ),
                svg,
            });
        }
    }
    Ok(out)
}

/// The recommended threshold: the larger of the warm and cold crossovers
/// of the combined series (ours' process times where they are decisive,
/// the model where they tie): above it mapping costs no more than reading
/// in either state.
fn recommend(crossovers: &[CrossoverResult]) -> Recommendation {
    let ours: Vec<&CrossoverResult> = crossovers
        .iter()
        .filter(|c| c.source == "combined")
        .collect();
    let mut froms = Vec::new();
    let mut why = Vec::new();
    for c in &ours {
        match &c.crossover {
            Some(x) if x.kind == "nowhere" => why.push(format!(
                "{}: mmap does not win even at the largest index ({})",
                c.cache.name(),
                x.below_bytes.map_or_else(String::new, human_size)
            )),
            Some(x) => {
                if let Some(b) = x.from_bytes {
                    froms.push(b);
                    why.push(format!(
                        "{}: mmap wins from {} on{}",
                        c.cache.name(),
                        human_size(b),
                        if x.kind == "everywhere" {
                            " (the smallest size measured: it wins everywhere)".to_owned()
                        } else {
                            format!(
                                " (read wins or ties at {}; interpolated crossing ≈ {})",
                                x.below_bytes.map_or_else(String::new, human_size),
                                x.estimate_bytes.map_or_else(String::new, |e| {
                                    #[expect(
                                        clippy::cast_possible_truncation,
                                        clippy::cast_sign_loss
                                    )]
                                    human_size(e as u64)
                                })
                            )
                        }
                    ));
                }
            }
            None => why.push(format!("{}: no data", c.cache.name())),
        }
    }
    let bytes = froms.iter().copied().max();
    Recommendation {
        bytes,
        config: bytes.map(|b| format!("--config experimental.mmapindexthreshold={}", hg_size(b))),
        why: why.join("; "),
    }
}

// ---------------------------------------------------------------------
// The seed's published figures.

/// One figure the seed work published: what was timed, on which index,
/// in which cache state, and the time with the index read whole (before)
/// and mapped (after), in ms.
#[derive(Clone, Copy, Debug)]
struct SeedFigure {
    source: &'static str,
    timed: &'static str,
    index: &'static str,
    cache: &'static str,
    read_ms: f64,
    mmap_ms: f64,
}

/// The figures of D477 (the commit message of Mercurial changeset
/// 3c9691728237, "revlog: add option to mmap revlog index", Mark Thomas,
/// 13 Sep 2017: `hg log -l 5`, mean of 5 invocations) and of "[PATCH 4 of
/// 4] mmapindex: set default to 1MB" (Boris Feld, mercurial-devel, 2 Dec
/// 2018: perf commands on a 60 MB index, best of N runs, wall times).
const SEED: [SeedFigure; 7] = [
    SeedFigure {
        source: "D477 (2017)",
        timed: "`hg log -l 5`, mean of 5, Mercurial's own repository",
        index: "2.3 MB",
        cache: "warm",
        read_ms: 237.0,
        mmap_ms: 227.0,
    },
    SeedFigure {
        source: "D477 (2017)",
        timed: "`hg log -l 5`, mean of 5, Mercurial's own repository",
        index: "2.3 MB",
        cache: "cold",
        read_ms: 397.0,
        mmap_ms: 410.0,
    },
    SeedFigure {
        source: "D477 (2017)",
        timed: "`hg log -l 5`, mean of 5, a Facebook repository",
        index: "\"much bigger\" (not given)",
        cache: "warm",
        read_ms: 432.0,
        mmap_ms: 321.0,
    },
    SeedFigure {
        source: "D477 (2017)",
        timed: "`hg log -l 5`, mean of 5, a Facebook repository",
        index: "\"much bigger\" (not given)",
        cache: "cold",
        read_ms: 696.0,
        mmap_ms: 888.0,
    },
    SeedFigure {
        source: "1 MB default proposal (2018)",
        timed: "`hg perfindex`, best of 100 / 1060",
        index: "60 MB",
        cache: "not stated",
        read_ms: 32.023,
        mmap_ms: 0.196,
    },
    SeedFigure {
        source: "1 MB default proposal (2018)",
        timed: "`hg perfindex --rev 0`, best of 100 / 212",
        index: "60 MB",
        cache: "not stated",
        read_ms: 40.673,
        mmap_ms: 10.713,
    },
    SeedFigure {
        source: "1 MB default proposal (2018)",
        timed: "`hg perfbookmarks --clear-revlogs`, best of 56 / 68",
        index: "60 MB",
        cache: "not stated",
        read_ms: 161.339,
        mmap_ms: 123.228,
    },
];

/// Which way an mmap/read ratio points, with `tie` as the band around 1
/// where neither wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Winner {
    /// Mapping is faster (ratio < 1 − tie).
    Mmap,
    /// Reading is faster (ratio > 1 + tie).
    Read,
    /// Within the band.
    Tie,
}

impl Winner {
    /// The winner of an mmap/read `ratio`.
    #[must_use]
    pub fn of(ratio: f64, tie: f64) -> Winner {
        if ratio < 1.0 - tie {
            Winner::Mmap
        } else if ratio > 1.0 + tie {
            Winner::Read
        } else {
            Winner::Tie
        }
    }

    /// `mapping wins` / `reading wins` / `a tie, within 5 %`.
    #[must_use]
    pub fn text(self, tie: f64) -> String {
        match self {
            Winner::Mmap => "mapping wins".to_owned(),
            Winner::Read => "reading wins".to_owned(),
            Winner::Tie => format!("a tie, within {:.0} %", tie * 100.0),
        }
    }
}

/// `matches` when the seed's and this run's winners are the same, else
/// `does not match`.
#[must_use]
pub fn agreement(seed: Winner, here: Winner) -> &'static str {
    if seed == here {
        "matches"
    } else {
        "does not match"
    }
}

/// One of this run's rows of the seed table: who, what was timed, the
/// index size, the cache state and the (read, mmap) medians in seconds.
fn here_row(
    t: &mut Table,
    who: &str,
    timed: &str,
    index_bytes: u64,
    cache: CacheState,
    (read, mmap): (f64, f64),
) {
    t.row([
        who.to_owned(),
        timed.to_owned(),
        human_size(index_bytes),
        cache.name().to_owned(),
        fmt_secs(read),
        fmt_secs(mmap),
        format!("{:.3}×", mmap / read.max(1e-12)),
    ]);
}

/// The seed's figures beside this run's, and what matches.
#[expect(clippy::too_many_lines)]
fn seed_section(o: &mut String, r: &Results) {
    let _ = writeln!(o, "## The seed's published figures\n");
    let _ = writeln!(
        o,
        "The seed is Mercurial's mmap-index work: D477, \"revlog: add option to mmap revlog index\" (Mark Thomas, \
         Facebook; changeset 3c9691728237, 13 Sep 2017, which added `experimental.mmapindexthreshold`), whose \
         commit message times `hg log -l 5`, and \"[PATCH 4 of 4] mmapindex: set default to 1MB\" (Boris Feld, \
         mercurial-devel, 2 Dec 2018; not applied then: 6.3 still maps only when told, 6.9 made 1 MB the default \
         of its new key), which times hg's perf commands on a 60 MB index. Their figures, quoted as published \
         (D477 gives no size for its second repository; the 2018 patch gives no cache state), beside this run's \
         medians:\n"
    );
    let mut t = Table::new(&[
        "source",
        "timed",
        ">index",
        "cache",
        ">read",
        ">mmap",
        ">mmap/read",
    ]);
    for f in SEED {
        t.row([
            f.source.to_owned(),
            f.timed.to_owned(),
            f.index.to_owned(),
            f.cache.to_owned(),
            fmt_secs(f.read_ms / 1e3),
            fmt_secs(f.mmap_ms / 1e3),
            format!("{:.3}×", f.mmap_ms / f.read_ms),
        ]);
    }
    let matrix = |repo: &str, cache: CacheState, mode: Mode| {
        r.cells.iter().find(|c| {
            c.kind == Kind::Matrix && c.repo == repo && c.cache == cache && c.mode == Some(mode)
        })
    };
    let median = |c: Option<&CellResult>, a: bool| {
        c.and_then(|c| if a { c.summary.a } else { c.summary.b })
            .map(|s| s.median)
    };
    // (repo, cache, who, read, mmap) for every matrix repository.
    let mut here: Vec<(String, CacheState, &str, f64, f64)> = Vec::new();
    let mut repos: Vec<&RepoInfo> = Vec::new();
    for c in r.cells.iter().filter(|c| c.kind == Kind::Matrix) {
        if let Some(repo) = r.repos.iter().find(|x| x.name == c.repo)
            && !repos.iter().any(|x| x.name == repo.name)
        {
            repos.push(repo);
        }
    }
    let hg = hg_name(r);
    for repo in &repos {
        for cache in [CacheState::Warm, CacheState::Cold] {
            for (who, a) in [(hg.as_str(), false), ("ours", true)] {
                let (Some(read), Some(mmap)) = (
                    median(matrix(&repo.name, cache, Mode::Read), a),
                    median(matrix(&repo.name, cache, Mode::Mmap), a),
                ) else {
                    continue;
                };
                here_row(
                    &mut t,
                    &format!("this machine, {who}"),
                    "`log -l 5`, process wall time, median",
                    repo.index_bytes,
                    cache,
                    (read, mmap),
                );
                here.push((repo.name.clone(), cache, who, read, mmap));
            }
        }
    }
    let big = repos.last().copied();
    let model = |cache: CacheState| {
        let big = big?;
        let c = r
            .cells
            .iter()
            .find(|c| c.kind == Kind::Model && c.repo == big.name && c.cache == cache)?;
        Some((c.summary.b?.median, c.summary.a?.median))
    };
    for cache in [CacheState::Warm, CacheState::Cold] {
        if let (Some(big), Some((read, mmap))) = (big, model(cache)) {
            here_row(
                &mut t,
                "this machine, model of ours' load",
                "open, read(2) whole or mmap, 5 tip entries; in xtask, median",
                big.index_bytes,
                cache,
                (read, mmap),
            );
        }
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\nFor this run the mmap/read column is the ratio of the two cells' medians (the read and mmap cells are \
         separate cells, not pairs).\n"
    );
    let Some(big) = big else {
        return;
    };
    let find = |cache: CacheState, who: &str| {
        here.iter()
            .find(|(repo, c, w, _, _)| *repo == big.name && *c == cache && *w == who)
            .map(|&(_, _, _, read, mmap)| mmap / read.max(1e-12))
    };
    let ra = r
        .machine
        .read_ahead_kb
        .map_or_else(|| "unknown".to_owned(), |k| format!("{k} KiB"));
    let cold_mmap_pages = matrix(&big.name, CacheState::Cold, Mode::Mmap)
        .and_then(|c| c.summary.b_pages_after.map(|s| s.median));
    let mut lines = Vec::new();
    // D477's larger repository, warm and cold, against hg's largest here.
    for (cache, seed) in [
        (CacheState::Warm, 321.0 / 432.0),
        (CacheState::Cold, 888.0 / 696.0),
    ] {
        let Some(ratio) = find(cache, &hg) else {
            continue;
        };
        let (s, h) = (Winner::of(seed, TIE), Winner::of(ratio, TIE));
        let why = match (cache, h) {
            (CacheState::Warm, Winner::Mmap) => format!(
                "reading copies the whole {} index into hg's memory on every start, mapping copies nothing and \
                 `log -l 5` touches only the header and the tail",
                human_size(big.index_bytes)
            ),
            (CacheState::Warm, _) => format!(
                "at {} the copy that reading makes is small beside hg's ~100 ms of Python start-up (the start-up \
                 table), so the two loads are hard to tell apart in a process time",
                human_size(big.index_bytes)
            ),
            (CacheState::Cold, Winner::Read) => format!(
                "mapping pays its faults one at a time; D477 does not say why its cold mapped runs were slower, and \
                 here each cold fault also reads the device's read-ahead window around the page (read_ahead_kb = \
                 {ra}; {} index pages resident after a cold mapped hg run)",
                cold_mmap_pages
                    .map_or_else(|| "?".to_owned(), |p| format!("{p:.0} of {}", big.pages()))
            ),
            (CacheState::Cold, Winner::Tie) => format!(
                "here the cold load's difference is lost in hg's process time (~100 ms of Python start-up, the \
                 start-up table) on a {} index; D477 does not say why its cold mapped runs were slower \
                 (read_ahead_kb = {ra} here; {} index pages resident after a cold mapped hg run)",
                human_size(big.index_bytes),
                cold_mmap_pages
                    .map_or_else(|| "?".to_owned(), |p| format!("{p:.0} of {}", big.pages()))
            ),
            (CacheState::Cold, _) => format!(
                "here a cold read(2) of the whole index costs more than the few faults a mapped `log -l 5` takes \
                 (read_ahead_kb = {ra}; {} index pages resident after a cold mapped hg run), where D477's device \
                 (not described) made the faults the dearer part; D477 does not say why its cold mapped runs were \
                 slower",
                cold_mmap_pages
                    .map_or_else(|| "?".to_owned(), |p| format!("{p:.0} of {}", big.pages()))
            ),
        };
        lines.push(format!(
            "- **{} `hg log -l 5`**: D477's larger repository {:.2}× ({}); {hg} on the {} index here {ratio:.2}× \
             ({}): this {} — {why}.",
            cache.name(),
            seed,
            s.text(TIE),
            human_size(big.index_bytes),
            h.text(TIE),
            agreement(s, h),
        ));
    }
    // The 2018 perfindex figure against the model's warm load.
    if let Some((read, mmap)) = model(CacheState::Warm) {
        let seed = 0.196 / 32.023;
        let ratio = mmap / read.max(1e-12);
        let (s, h) = (Winner::of(seed, TIE), Winner::of(ratio, TIE));
        #[expect(clippy::cast_precision_loss)]
        let rate = big.index_bytes as f64 / read.max(1e-12) / 1e9;
        lines.push(format!(
            "- **loading the index in-process** (the 2018 `perfindex`, 60 MB: read {} vs mapped {}, {:.3}×): the \
             model's warm load of the {} index here is read {} vs mapped {} ({ratio:.3}×, {}): this {} — a mapped \
             load is a few system calls whatever the size, a read copies every byte ({rate:.1} GB/s here, the \
             seed's 32 ms for 60 MB is 1.9 GB/s; see the cached read() limit below). The seed's figure is hg's own \
             index load, parsing included; ours and hg's `log -l 5` rows above add process start-up to it.",
            fmt_secs(32.023e-3),
            fmt_secs(0.196e-3),
            seed,
            human_size(big.index_bytes),
            fmt_secs(read),
            fmt_secs(mmap),
            h.text(TIE),
            agreement(s, h),
        ));
    }
    if let Some(ratio) = find(CacheState::Warm, "ours") {
        lines.push(format!(
            "- **ours** warm on the {} index: mmap/read {ratio:.2}× ({}), without Python's start-up, so the load \
             itself shows more than in hg's times.",
            human_size(big.index_bytes),
            Winner::of(ratio, TIE).text(TIE)
        ));
    }
    if !lines.is_empty() {
        let _ = writeln!(o, "What matches and what does not:\n");
        for l in lines {
            let _ = writeln!(o, "{l}");
        }
        let _ = writeln!(o);
    }
}

// ---------------------------------------------------------------------
// The report.

/// `hg 6.3.2`.
fn hg_name(r: &Results) -> String {
    r.hg_version
        .as_deref()
        .and_then(hg_version_number)
        .map_or_else(|| "hg".to_owned(), |v| format!("hg {v}"))
}

/// `1563/1563 pages (100.0 %)` from a cell's median.
fn pages_after(pages: Option<&Summary>, frac: Option<&Summary>, total: u64) -> String {
    match (pages, frac) {
        (Some(p), Some(f)) => format!("{:.0}/{total} ({})", p.median, pct(f.median)),
        _ => "—".to_owned(),
    }
}

/// Verdict of the size-independence target.
pub fn size_verdict(ratio: Option<&Summary>) -> String {
    ratio.map_or_else(
        || "no verdict (no ratio)".to_owned(),
        |r| at_most_verdict(r, SIZE_TARGET, "", ""),
    )
}

#[expect(clippy::too_many_lines)]
fn render(r: &Results) -> String {
    let m = &r.machine;
    let na = || "unknown".to_owned();
    let mut o = String::new();
    let big = short_count(r.plan.big);
    let small = r
        .plan
        .hg_sizes
        .first()
        .map_or_else(String::new, |&n| short_count(n));
    let sizes: Vec<String> = r
        .plan
        .hg_sizes
        .iter()
        .chain([&r.plan.big])
        .map(|&n| short_count(n))
        .collect();
    let _ = writeln!(o, "# bench revlog — {}\n", r.started_utc);
    if r.plan.preset == "tiny" {
        let _ = writeln!(
            o,
            "**`--tiny`: a smoke run of the harness on tiny inputs; its times mean nothing.**\n"
        );
    }
    let _ = writeln!(
        o,
        "`log -l 5` over a Mercurial changelog whose index is read whole or mapped, warm and cold, \
         on indexes of {} revisions, **ours** (`mapwise revlog log`) beside **{}** \
         (`hg log -l 5 -T '{{rev}}\\n'`) with the same `--config`, alternating ours and hg, the order turning every pair (ours, hg; hg, ours; …); then \
         ours mapped vs read across index sizes to find where mapping starts to win. Preset {}: {} pair{} per \
         matrix cell, {} per size-check and sweep cell. Finished {}.\n",
        sizes.join(", "),
        hg_name(r),
        r.preset,
        r.runs,
        if r.runs == 1 { "" } else { "s" },
        r.sweep_runs,
        r.finished_utc
    );

    o.push_str(&m.section(
        "the repositories",
        &[("Mercurial", r.hg_version.clone())],
        r.loadavg_end.as_deref(),
    ));

    let _ = writeln!(o, "\n## Repositories\n");
    let mut t = Table::new(&[
        "repository",
        ">revisions",
        ">00changelog.i",
        "format",
        ">00changelog.d",
        "made",
    ]);
    for repo in &r.repos {
        t.row([
            format!("`{}`", repo.path),
            repo.revs.to_string(),
            format!("{} ({} B)", human_size(repo.index_bytes), repo.index_bytes),
            if repo.inline { "v1 inline" } else { "v1" }.to_owned(),
            repo.data_bytes.map_or_else(|| "—".to_owned(), human_size),
            format!(
                "{}{}",
                match repo.origin {
                    Origin::Hg => "hg (peer gen-repo)",
                    Origin::Synthetic => "synthesised",
                },
                if repo.generated_now {
                    format!(", now ({})", fmt_secs(repo.made.secs))
                } else {
                    ", cached".to_owned()
                }
            ),
        ]);
    }
    o.push_str(&t.render());
    let _ = writeln!(o, "\nHow they were made:\n");
    for repo in &r.repos {
        let _ = writeln!(o, "- {}: {}", repo.name, repo.made.how);
    }
    let _ = writeln!(
        o,
        "\nChecks of the synthetic repositories with hg (made once, when each was made):\n"
    );
    for repo in r.repos.iter().filter(|x| x.origin == Origin::Synthetic) {
        for c in &repo.made.checks {
            let _ = writeln!(
                o,
                "- {}, {}: {} — {}",
                repo.name,
                c.what,
                if c.ok { "OK" } else { "**FAIL**" },
                c.detail
            );
        }
    }

    let _ = writeln!(o, "\n## Method\n");
    let _ = writeln!(
        o,
        "- Both tools get the same `--config`: read = `{}`; mmap = `{}` (the key {} reads; threshold 0 maps \
         every changelog and manifest index). Ours maps without `MAP_POPULATE`, as hg 4.4–6.8 do, but gives \
         `madvise(MADV_RANDOM)` (its default for `log`, which reads the header and the tail only); hg gives \
         no advice, so its cold faults read the device's read-ahead window around each (`--advice none` makes \
         ours do the same; the *model* rows below show both).\n\
         - **cold**: before every single run xtask `fsync`s and `posix_fadvise(DONTNEED)`s the repository's \
         changelog files (`00changelog.i`, and `.d` when there is one); hg's Python modules and our binary stay \
         cached. **warm**: before every single run xtask reads those files once with `read(2)`. *resident after* \
         = pages of `00changelog.i` in the page cache right after the run (mincore, median): how much of the \
         index the run pulled in.\n\
         - Times are process wall times, spawn to exit as seen by xtask, median [min–max]; ratios are computed \
         **pair by pair** and shown as median [min–max]. Every output must be the 5 tip revisions, newest first.\n\
         - hg's times are dominated by Python start-up (the *start-up* table below: `hg root` opens the \
         repository without loading the changelog); ours/hg ratios are shown anyway, and *− start-up* columns \
         subtract each tool's median floor. Ours' `--json` gives no timings, so there is no in-process figure \
         from ours; the **model** rows of the sweep time the same loads inside xtask (open, fstat, `read(2)` of \
         the whole file into an exactly reserved buffer or `mmap(PROT_READ, MAP_SHARED)`, then the header, the \
         5 tip entries and their parents' nodes; free/munmap, close) to µs resolution.\n\
         - {}\n",
        r.config_read.join(" "),
        r.config_mmap.join(" "),
        hg_name(r),
        if r.warmup == 0 {
            "No warm-up pairs (`--warmup 0`).".to_owned()
        } else {
            format!(
                "Each cell starts with {} untimed warm-up pair{} (same reset before each run; raw in results.json).",
                r.warmup,
                if r.warmup == 1 { "" } else { "s" }
            )
        }
    );

    let _ = writeln!(o, "## Commands\n\nRun from the workspace root.\n\n```sh");
    for c in &r.build_commands {
        let _ = writeln!(o, "{c}");
    }
    for c in r
        .cells
        .iter()
        .filter(|c| matches!(c.kind, Kind::Matrix | Kind::Startup) && c.cache == CacheState::Warm)
    {
        let _ = writeln!(o, "{}\n{}", c.a_cmd, c.b_cmd);
    }
    let _ = writeln!(
        o,
        "# the size check and the sweep: the same ours (and, with --full, hg) commands on\n\
         # target/bench/files/revlog-synth-<revisions>; the model rows run inside xtask"
    );
    let _ = writeln!(o, "```\n");

    // Start-up.
    let startup = r.cells.iter().find(|c| c.kind == Kind::Startup);
    let floor_a = startup.and_then(|c| c.summary.a.map(|s| s.median));
    let floor_b = startup.and_then(|c| c.summary.b.map(|s| s.median));
    if let Some(c) = startup {
        let _ = writeln!(o, "## Start-up floor\n");
        let mut t = Table::new(&["command", ">wall"]);
        t.row([format!("`{}`", c.a_cmd), opt_secs(c.summary.a.as_ref())]);
        t.row([format!("`{}`", c.b_cmd), opt_secs(c.summary.b.as_ref())]);
        o.push_str(&t.render());
        let _ = writeln!(o);
    }

    // The matrix.
    let _ = writeln!(o, "## Results: ours vs hg\n");
    let mut repos_seen: Vec<&str> = Vec::new();
    for c in r.cells.iter().filter(|c| c.kind == Kind::Matrix) {
        if !repos_seen.contains(&c.repo.as_str()) {
            repos_seen.push(&c.repo);
        }
    }
    for name in repos_seen {
        let Some(repo) = r.repos.iter().find(|x| x.name == name) else {
            continue;
        };
        let _ = writeln!(
            o,
            "### {} — 00changelog.i {} ({} pages){}\n",
            repo.name,
            human_size(repo.index_bytes),
            repo.pages(),
            if repo.inline { ", inline" } else { "" }
        );
        let mut t = Table::new(&[
            "cell",
            ">ours",
            ">hg",
            ">ours/hg (per pair)",
            ">ours − start-up",
            ">hg − start-up",
            ">index resident after ours / hg (pages)",
        ]);
        for c in r
            .cells
            .iter()
            .filter(|c| c.kind == Kind::Matrix && c.repo == name)
        {
            let minus = |s: Option<&Summary>, floor: Option<f64>| match (s, floor) {
                (Some(s), Some(f)) if s.median >= f => fmt_secs(s.median - f),
                (Some(_), Some(_)) => "below the floor".to_owned(),
                _ => "—".to_owned(),
            };
            t.row([
                format!("{}, {}", c.cache.name(), c.mode.map_or("", Mode::name)),
                opt_secs(c.summary.a.as_ref()),
                opt_secs(c.summary.b.as_ref()),
                opt_ratio(c.summary.ratio.as_ref()),
                minus(c.summary.a.as_ref(), floor_a),
                minus(c.summary.b.as_ref(), floor_b),
                format!(
                    "{} / {}",
                    pages_after(
                        c.summary.a_pages_after.as_ref(),
                        c.summary.a_resident_after.as_ref(),
                        repo.pages()
                    ),
                    pages_after(
                        c.summary.b_pages_after.as_ref(),
                        c.summary.b_resident_after.as_ref(),
                        repo.pages()
                    ),
                ),
            ]);
        }
        o.push_str(&t.render());
        let _ = writeln!(o);
    }
    let _ = writeln!(
        o,
        "Warm runs start with the whole index resident, so *resident after* is 100 % there; the cold rows show \
         what each run read. A page fault on a mapping reads around the faulting page (the device's \
         read_ahead_kb = {} KiB window), so a cold mapped run reads the window around the header and the one \
         around the tail, not just two pages.\n",
        m.read_ahead_kb.map_or_else(na, |k| k.to_string())
    );

    // Target 1.
    let _ = writeln!(
        o,
        "## Target 1: ours mmap at {big} ≤ {SIZE_TARGET}× ours at {small} (independent of index size)\n"
    );
    let pages_of = |name: &str| {
        r.repos
            .iter()
            .find(|x| x.name == name)
            .map_or(0, RepoInfo::pages)
    };
    let mut t = Table::new(&[
        "cache",
        "A vs B",
        ">A",
        ">B",
        ">A/B (per pair)",
        ">index resident after A / B (pages)",
    ]);
    for c in r
        .cells
        .iter()
        .filter(|c| matches!(c.kind, Kind::Size | Kind::Advice))
    {
        t.row([
            c.cache.name().to_owned(),
            format!("{} vs {}", c.a, c.b),
            opt_secs(c.summary.a.as_ref()),
            opt_secs(c.summary.b.as_ref()),
            opt_ratio(c.summary.ratio.as_ref()),
            format!(
                "{} / {}",
                pages_after(
                    c.summary.a_pages_after.as_ref(),
                    c.summary.a_resident_after.as_ref(),
                    pages_of(&c.repo)
                ),
                pages_after(
                    c.summary.b_pages_after.as_ref(),
                    c.summary.b_resident_after.as_ref(),
                    pages_of(&c.b_repo)
                ),
            ),
        ]);
    }
    o.push_str(&t.render());
    let _ = writeln!(
        o,
        "\nThe ours rows run `mapwise revlog log -l 5 REPO` with the matrix's `--config` for each side, alternated \
         pair by pair (process wall times); the verdict is on the first row of each state (both mapped, hg's {small} \
         repository). The hg-made {small} changelog is inline (hg keeps a changelog inline while its data is under \
         128 KiB), so ours scans all its entries; the synthetic 1024-revision one has the {big} one's format. The \
         *model* rows time, inside xtask, the mapped load of the {big} index with and without \
         `madvise(MADV_RANDOM)`, which neither ours nor hg gives: without it, a cold fault reads the device's \
         read-ahead window around the faulting page ({} KiB here) at the header and again at the tail.\n",
        m.read_ahead_kb.map_or_else(na, |k| k.to_string())
    );

    // The sweep.
    let _ = writeln!(o, "## Target 2: the read-vs-mmap crossover (ours)\n");
    for (kind, title, note) in [
        (
            Kind::Sweep,
            "ours, process wall time",
            "mapwise revlog log -l 5 on synthetic changelogs (prefixes of the largest)",
        ),
        (
            Kind::Model,
            "model of ours' load inside xtask (no process start-up)",
            "the same files, the loads timed in xtask",
        ),
        (
            Kind::SweepHg,
            "hg, process wall time",
            "hg log -l 5 on the same files",
        ),
    ] {
        let cs: Vec<&CellResult> = r.cells.iter().filter(|c| c.kind == kind).collect();
        if cs.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "### {title}\n\n{note}; A = mmap, B = read, ratio = mmap/read pair by pair (< 1: mmap wins).\n"
        );
        let mut t = Table::new(&[
            ">revisions",
            ">index",
            ">warm read",
            ">warm mmap",
            ">mmap/read warm",
            ">cold read",
            ">cold mmap",
            ">mmap/read cold",
            ">cold mmap: resident after",
        ]);
        let mut sizes: Vec<(u32, u64)> = cs.iter().map(|c| (c.revs, c.index_bytes)).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for (revs, bytes) in sizes {
            let find = |cache| cs.iter().find(|c| c.revs == revs && c.cache == cache);
            let (w, c) = (find(CacheState::Warm), find(CacheState::Cold));
            let pages = bytes.div_ceil(4096);
            t.row([
                revs.to_string(),
                human_size(bytes),
                opt_secs(w.and_then(|c| c.summary.b.as_ref())),
                opt_secs(w.and_then(|c| c.summary.a.as_ref())),
                opt_ratio(w.and_then(|c| c.summary.ratio.as_ref())),
                opt_secs(c.and_then(|c| c.summary.b.as_ref())),
                opt_secs(c.and_then(|c| c.summary.a.as_ref())),
                opt_ratio(c.and_then(|c| c.summary.ratio.as_ref())),
                c.map_or_else(
                    || "—".to_owned(),
                    |c| {
                        pages_after(
                            c.summary.a_pages_after.as_ref(),
                            c.summary.a_resident_after.as_ref(),
                            pages,
                        )
                    },
                ),
            ]);
        }
        o.push_str(&t.render());
        let _ = writeln!(o);
    }
    let _ = writeln!(
        o,
        "Crossovers (the smallest size from which mmap's median ratio stays below 1 at every larger size):\n"
    );
    for c in &r.crossovers {
        let text = match &c.crossover {
            None => "no data".to_owned(),
            Some(x) if x.kind == "everywhere" => format!(
                "mmap wins at every size measured, from {} on",
                x.from_bytes.map_or_else(String::new, human_size)
            ),
            Some(x) if x.kind == "nowhere" => format!(
                "mmap does not win at the largest size ({})",
                x.below_bytes.map_or_else(String::new, human_size)
            ),
            Some(x) => format!(
                "read wins or ties up to {}, mmap wins from {} on (interpolated crossing ≈ {})",
                x.below_bytes.map_or_else(String::new, human_size),
                x.from_bytes.map_or_else(String::new, human_size),
                x.estimate_bytes.map_or_else(String::new, |e| {
                    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    human_size(e as u64)
                })
            ),
        };
        let by = if c.decided_by.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = c
                .points
                .iter()
                .zip(&c.decided_by)
                .map(|((b, r), who)| format!("{} {r:.2}× ({who})", human_size(*b)))
                .collect();
            format!(" — per size: {}", parts.join(", "))
        };
        let _ = writeln!(o, "- **{}**, {}: {text}{by}", c.source, c.cache.name());
    }
    let _ = writeln!(
        o,
        "\n*combined* is what the recommendation uses: ours' process ratio where it is decisive (more than {:.0} % \
         from 1), else the model's. At small sizes the two loads differ by a few µs while ours' process wall time \
         jitters by hundreds, so there a process median is a coin toss and the model decides.",
        TIE * 100.0
    );
    let _ = writeln!(
        o,
        "\n**Recommended threshold: {}** ({}). hg 6.9+ maps from 1 MB (`storage.revlog.mmap.index:size-threshold`, \
         {} B) and pre-populates the mapping; hg ≤ 6.8 never maps unless told.\n",
        r.recommendation.config.as_ref().map_or_else(
            || "none (keep reading whole)".to_owned(),
            |c| format!("`{c}`")
        ),
        r.recommendation.why,
        HG_DEFAULT_THRESHOLD
    );

    seed_section(&mut o, r);

    let _ = writeln!(o, "## Charts and residency traces\n");
    charts::links(&mut o, &r.charts);
    if let Some(p) = &r.traces_paragraph {
        let _ = writeln!(
            o,
            "{p} The model's loads (the *model* rows) are not traced: they run inside xtask at µs resolution, \
             where a sampling thread would be part of what they time.\n"
        );
    }
    limits::section(&mut o, &r.limits);

    // Verdicts.
    let _ = writeln!(o, "## Verdicts\n");
    for cache in [CacheState::Warm, CacheState::Cold] {
        let cs: Vec<&CellResult> = r
            .cells
            .iter()
            .filter(|c| c.kind == Kind::Size && c.cache == cache)
            .collect();
        let Some((first, rest)) = cs.split_first() else {
            continue;
        };
        let _ = writeln!(
            o,
            "- **Target 1, {}** ({} ≤ {SIZE_TARGET}× {}): {}",
            cache.name(),
            first.a,
            first.b,
            size_verdict(first.summary.ratio.as_ref())
        );
        for c in rest {
            let _ = writeln!(
                o,
                "  - for comparison, {} vs {}: {}",
                c.a,
                c.b,
                opt_ratio(c.summary.ratio.as_ref())
            );
        }
    }
    let _ = writeln!(
        o,
        "- **Target 2** (crossover measured and printed as the recommended threshold): {}",
        match (&r.recommendation.config, r.recommendation.bytes) {
            (Some(c), Some(b)) => format!(
                "DONE — `{c}` ({}; {} hg's default 1 MB)",
                human_size(b),
                match b.cmp(&HG_DEFAULT_THRESHOLD) {
                    std::cmp::Ordering::Less => "below",
                    std::cmp::Ordering::Equal => "equal to",
                    std::cmp::Ordering::Greater => "above",
                }
            ),
            _ => format!("no crossover found ({})", r.recommendation.why),
        }
    );
    let _ = writeln!(
        o,
        "- **Outputs and checks**: {}",
        if r.outputs_agree {
            "OK — every run printed the 5 tip revisions, every load check and synthetic-repository check passed".to_owned()
        } else {
            let bad: Vec<String> = r
                .load_checks
                .iter()
                .filter(|c| !c.ok)
                .map(|c| format!("{}: {}", c.what, c.detail))
                .chain(
                    r.cells
                        .iter()
                        .filter(|c| !c.outputs_ok())
                        .map(|c| format!("{}: unexpected output", c.label)),
                )
                .collect();
            format!("**FAIL** — {}", bad.join("; "))
        }
    );

    let _ = writeln!(
        o,
        "\n## Load checks (untimed, once per repository and load)\n"
    );
    for c in &r.load_checks {
        let _ = writeln!(
            o,
            "- {}: {} — {}",
            c.what,
            if c.ok { "OK" } else { "**FAIL**" },
            c.detail
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapwise_core::revlog::Index;

    #[test]
    fn sha1_vectors() {
        let h = |d: &[u8]| {
            let mut s = Sha1::default();
            s.update(d);
            hex(&s.finalize())
        };
        assert_eq!(h(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(h(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            h(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        // Fed in odd pieces: the same digest.
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut s = Sha1::default();
        for piece in data.chunks(37) {
            s.update(piece);
        }
        assert_eq!(hex(&s.finalize()), h(&data));
        assert_eq!(
            h(&[b'a'; 1_000]),
            "291e9a6c66994949b57ba5e650361e98fc36b1ba"
        );
    }

    /// hg's nodes in a real changelog (testdata, made by hg 6.3) are what
    /// `revlog_node` computes from its texts and parents.
    #[test]
    fn nodes_match_a_real_hg_changelog() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/revlog/synthetic-2000");
        let index = fs::read(root.join("00changelog.i")).unwrap();
        let data = fs::read(root.join("00changelog.d")).unwrap();
        let idx = Index::open(&index[..]).unwrap();
        for rev in [0, 1, 1000, idx.tip()] {
            let e = idx.entry(rev).unwrap();
            let (p1, p2) = idx.checked_parents(&e).unwrap();
            let (n1, n2) = (idx.node(p1).unwrap(), idx.node(p2).unwrap());
            let off = usize::try_from(e.data_offset()).unwrap();
            let chunk = &data[off..off + e.compressed_len() as usize];
            assert_eq!(chunk[0], b'u', "rev {rev}: stored uncompressed");
            assert_eq!(revlog_node(&n1, &n2, &chunk[1..]), *e.node(), "rev {rev}");
            assert_eq!(revlog_node(&n2, &n1, &chunk[1..]), *e.node(), "order");
        }
    }

    fn synth(revs: u32) -> (Vec<u8>, Vec<u8>) {
        let (mut i, mut d) = (Vec::new(), Vec::new());
        let (ib, db) = SynthChangelog::write(revs, &mut i, &mut d, |_| Ok(())).unwrap();
        assert_eq!((ib, db), (i.len() as u64, d.len() as u64));
        (i, d)
    }

    /// Core's parser (ours) reads the synthetic changelog as written.
    #[test]
    fn synthetic_changelog_parses_with_core() {
        let (index, data) = synth(300);
        assert_eq!(&index[..4], &[0, 0, 0, 1], "v1, no flags");
        let idx = Index::open(&index[..]).unwrap();
        assert_eq!(idx.len(), 300);
        assert!(!idx.is_inline());
        assert!(!idx.is_generaldelta());
        assert_eq!(idx.version().number(), 1);
        idx.check_data_len(data.len() as u64, 0..=idx.tip())
            .unwrap();
        assert!(
            idx.check_data_len(data.len() as u64 - 1, 0..=idx.tip())
                .is_err()
        );
        let mut offset = 0u64;
        let mut prev = [0u8; 20];
        for rev in 0..=idx.tip() {
            let e = idx.entry(rev).unwrap();
            let r = u32::try_from(rev).unwrap();
            let text = synth_text(r);
            assert_eq!(e.data_offset(), offset, "rev {rev}: contiguous");
            assert_eq!(e.flags(), 0);
            assert_eq!(e.compressed_len() as usize, text.len() + 1);
            assert_eq!(e.uncompressed_len() as usize, text.len());
            assert_eq!(e.base_rev(), rev, "full snapshot");
            assert_eq!(e.link_rev(), rev);
            assert_eq!(idx.checked_parents(&e).unwrap(), (rev - 1, -1));
            let off = usize::try_from(offset).unwrap();
            let chunk = &data[off..off + e.compressed_len() as usize];
            assert_eq!(chunk[0], b'u');
            assert_eq!(&chunk[1..], &text[..]);
            assert_eq!(*e.node(), revlog_node(&prev, &[0; 20], &text));
            assert_eq!(index_row(&index, r).unwrap().node, hex(&e.node()[..6]));
            prev = *e.node();
            offset += u64::from(e.compressed_len());
        }
        assert_eq!(offset, data.len() as u64);
        // Ours' `log` view of it: the tip first, parents in range.
        let rows = mapwise_core::revlog::debug_row(&idx, 299).unwrap();
        assert_eq!(
            (rows.rev, rows.linkrev, rows.p1_rev, rows.p2_rev),
            (299, 299, 298, -1)
        );
    }

    /// A prefix of the synthetic changelog is the synthetic changelog of
    /// that many revisions (the sweep's smaller indexes).
    #[test]
    fn prefixes_are_smaller_changelogs() {
        let (bi, bd) = synth(500);
        let (si, sd) = synth(123);
        assert_eq!(&bi[..si.len()], &si[..]);
        assert_eq!(&bd[..sd.len()], &sd[..]);
        // The data end is the offset field of the next entry.
        let n = 123 * ENTRY;
        let mut b = [0u8; 8];
        b[2..8].copy_from_slice(&bi[n..n + 6]);
        assert_eq!(u64::from_be_bytes(b), sd.len() as u64);
    }

    #[test]
    fn debugindex_rows() {
        let line = "999999  999999 0123456789ab 0123456789ac 000000000000";
        assert_eq!(
            parse_index_row(line),
            Some(IndexRow {
                rev: 999_999,
                linkrev: 999_999,
                node: "0123456789ab".to_owned(),
                p1: "0123456789ac".to_owned(),
                p2: "000000000000".to_owned(),
            })
        );
        assert_eq!(
            parse_index_row("   rev linkrev       nodeid    p1-nodeid    p2-nodeid"),
            None
        );
        assert_eq!(parse_index_row("1 2 3"), None);
        // The corpus' debugindex, against the bytes it was printed from.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/revlog/synthetic-2000");
        let index = fs::read(root.join("00changelog.i")).unwrap();
        let text = fs::read_to_string(root.join("00changelog.i.debugindex.txt")).unwrap();
        let rows: Vec<IndexRow> = text.lines().filter_map(parse_index_row).collect();
        assert_eq!(rows.len(), 2000);
        for rev in sample_revs(2000) {
            assert_eq!(
                index_row(&index, rev).as_ref(),
                Some(&rows[rev as usize]),
                "rev {rev}"
            );
        }
    }

    #[test]
    fn samples_and_expected_output() {
        assert_eq!(
            sample_revs(1_000_000),
            [
                0, 1, 2, 3, 4, 499_998, 499_999, 500_000, 500_001, 500_002, 999_995, 999_996,
                999_997, 999_998, 999_999
            ]
        );
        assert_eq!(sample_revs(3), [0, 1, 2]);
        assert_eq!(
            ranges(&sample_revs(1_000_000)),
            "0–4, 499998–500002, 999995–999999"
        );
        assert_eq!(
            expected_log(1_000_000, 5),
            "999999\n999998\n999997\n999996\n999995\n"
        );
        assert_eq!(expected_log(2, 5), "1\n0\n");
        assert_eq!(short_count(1_000_000), "1M");
        assert_eq!(short_count(100_000), "100k");
        assert_eq!(short_count(16_384), "16384");
    }

    #[test]
    fn hg_versions_and_flags() {
        assert_eq!(
            parse_hg_version("Mercurial Distributed SCM (version 6.3.2)"),
            Some((6, 3))
        );
        assert_eq!(
            parse_hg_version("Mercurial Distributed SCM (version 6.9rc0)"),
            Some((6, 9))
        );
        assert_eq!(
            parse_hg_version("Mercurial Distributed SCM (version 7.0.1+hg12)"),
            Some((7, 0))
        );
        assert_eq!(parse_hg_version("hg: command not found"), None);
        assert_eq!(
            hg_version_number("Mercurial Distributed SCM (version 6.3.2)"),
            Some("6.3.2")
        );
        assert_eq!(
            config_args(Mode::Mmap, (6, 3)),
            ["--config", "experimental.mmapindexthreshold=0"]
        );
        assert_eq!(
            config_args(Mode::Mmap, (7, 0)),
            [
                "--config",
                "storage.revlog.mmap.index=yes",
                "--config",
                "storage.revlog.mmap.index:size-threshold=0"
            ]
        );
        assert_eq!(
            config_args(Mode::Read, (6, 3)),
            ["--config", "storage.revlog.mmap.index=no"]
        );
        assert_eq!(hg_size(1 << 20), "1M");
        assert_eq!(hg_size(256 << 10), "256k");
        assert_eq!(hg_size(64_000_000), "62500k");
        assert_eq!(hg_size(1000), "1000");
    }

    #[test]
    fn mmap_reports() {
        let out = "mmap: /r/.hg/store/00changelog.i\n4\n3\n";
        assert_eq!(split_mmap_report(out), (true, "4\n3\n".to_owned()));
        assert_eq!(split_mmap_report("4\n3\n"), (false, "4\n3\n".to_owned()));
        let manifest_only = "mmap: /r/.hg/store/00manifest.i\n1\n";
        assert!(!split_mmap_report(manifest_only).0);
    }

    #[test]
    fn ours_json_parses() {
        let j = r#"{"repo":"r","index":"r/.hg/store/00changelog.i","index_bytes":128000,"load":"mmap",
            "populate":false,"threshold":0,"version":1,"inline":false,"generaldelta":false,
            "revisions":2000,"data_file_bytes":131778,"entries":[{"rev":1999,"node":"36",
            "linkrev":1999,"p1":1998,"p2":-1,"parents":["9e"]}]}"#;
        let p = parse_ours_json(j).unwrap();
        assert_eq!(
            (p.load.as_str(), p.threshold, p.revisions),
            ("mmap", Some(0), 2000)
        );
        assert_eq!(p.entries[0].rev, 1999);
        assert!(parse_ours_json("{\"error\": \"x\"}").is_err());
    }

    #[test]
    fn crossovers() {
        let c = crossover(&[
            (1 << 20, 0.8),
            (1 << 14, 1.05),
            (1 << 16, 1.2),
            (1 << 18, 0.9),
        ])
        .unwrap();
        assert_eq!(c.kind, "between");
        assert_eq!(
            (c.below_bytes, c.from_bytes),
            (Some(1 << 16), Some(1 << 18))
        );
        let e = c.estimate_bytes.unwrap();
        assert!(e > f64::from(1 << 16) && e < f64::from(1 << 18), "{e}");
        // A win below a loss does not count: the last loss decides.
        let c = crossover(&[(1, 0.9), (2, 1.1), (4, 0.9)]).unwrap();
        assert_eq!(c.from_bytes, Some(4));
        let c = crossover(&[(1, 0.9), (2, 0.8)]).unwrap();
        assert_eq!((c.kind, c.from_bytes), ("everywhere", Some(1)));
        let c = crossover(&[(1, 0.9), (2, 1.0)]).unwrap();
        assert_eq!(
            (c.kind, c.from_bytes, c.below_bytes),
            ("nowhere", None, Some(2))
        );
        // A tie at exactly 1 puts the estimate at the tie.
        let c = crossover(&[(100, 1.0), (10_000, 0.5)]).unwrap();
        assert!((c.estimate_bytes.unwrap() - 100.0).abs() < 1e-6);
        assert_eq!(crossover(&[]), None);
    }

    #[test]
    fn recommendation_takes_the_larger_crossover() {
        let x = |source, cache, points: Vec<(u64, f64)>| CrossoverResult {
            source,
            cache,
            crossover: crossover(&points),
            points,
            decided_by: Vec::new(),
        };
        let r = recommend(&[
            x(
                "combined",
                CacheState::Warm,
                vec![(1 << 14, 1.1), (1 << 16, 0.9)],
            ),
            x(
                "combined",
                CacheState::Cold,
                vec![(1 << 14, 1.1), (1 << 20, 1.1), (1 << 22, 0.7)],
            ),
            // Other series do not decide.
            x("ours", CacheState::Warm, vec![(1 << 30, 1.5)]),
        ]);
        assert_eq!(r.bytes, Some(1 << 22));
        assert_eq!(
            r.config.as_deref(),
            Some("--config experimental.mmapindexthreshold=4M")
        );
        let none = recommend(&[x("combined", CacheState::Warm, vec![(1, 1.5)])]);
        assert_eq!(none.bytes, None);
    }

    #[test]
    fn process_ties_defer_to_the_model() {
        let process = [(16, 1.03), (64, 0.97), (256, 0.90), (1024, 1.2)];
        let model = [(16, 1.5), (64, 0.6), (256, 1.1)];
        assert_eq!(
            combine(&process, &model, TIE),
            [
                (16, 1.5, "model"),
                (64, 0.6, "model"),
                (256, 0.90, "ours"),
                // No model point: the process ratio, tie or not.
                (1024, 1.2, "ours"),
            ]
        );
    }

    #[test]
    fn size_verdicts() {
        let s = |v: &[f64]| Summary::of(v).unwrap();
        assert!(size_verdict(Some(&s(&[0.9, 1.0, 1.1]))).starts_with("PASS — 1.00×"));
        let v = size_verdict(Some(&s(&[1.1, 1.3, 1.4])));
        assert!(
            v.starts_with("FAIL — 1.30×") && v.ends_with("straddles 1.2×"),
            "{v}"
        );
        assert!(size_verdict(None).starts_with("no verdict"));
    }

    #[test]
    fn commands_show_their_environment() {
        // hg's template turns the two characters `\\n` into a newline, as
        // when typed in a shell.
        let r = hg().args(["log", "-T", "{rev}\\n"]);
        assert_eq!(r.shell(), r"HGRCPATH= HGPLAIN=1 hg log -T '{rev}\n'");
    }

    #[test]
    fn plans_per_preset() {
        let quick = Plan::new(false, false, None);
        assert_eq!(quick.preset, "quick");
        assert_eq!(quick.hg_sizes, [1000, 100_000]);
        assert_eq!(quick.big, 1_000_000);
        assert_eq!(
            quick.sweep,
            [256, 1024, 4096, 16_384, 65_536, 262_144, 1_000_000]
        );
        assert_eq!((quick.sweep_runs, quick.hg_sweep), (20, false));
        let full = Plan::new(false, true, Some(7));
        assert_eq!(full.sweep.len(), 14);
        assert_eq!(full.sweep.first(), Some(&64));
        assert_eq!((full.sweep_runs, full.hg_sweep), (7, true));
        // --tiny wins over --full: no 100k, no 1M, a small synthesis.
        let tiny = Plan::new(true, true, None);
        assert_eq!(tiny.preset, "tiny");
        assert_eq!(tiny.hg_sizes, [1000]);
        assert_eq!(tiny.big, 5000);
        assert_eq!(tiny.sweep, [256, 1024, 5000]);
        assert_eq!((tiny.sweep_runs, tiny.hg_sweep), (2, false));
    }

    #[test]
    fn winners_and_agreement() {
        // D477's published ratios: 227/237, 410/397, 321/432, 888/696.
        assert_eq!(Winner::of(227.0 / 237.0, TIE), Winner::Tie);
        assert_eq!(Winner::of(410.0 / 397.0, TIE), Winner::Tie);
        assert_eq!(Winner::of(321.0 / 432.0, TIE), Winner::Mmap);
        assert_eq!(Winner::of(888.0 / 696.0, TIE), Winner::Read);
        assert_eq!(Winner::Tie.text(TIE), "a tie, within 5 %");
        assert_eq!(Winner::Mmap.text(TIE), "mapping wins");
        assert_eq!(agreement(Winner::Mmap, Winner::Mmap), "matches");
        assert_eq!(agreement(Winner::Read, Winner::Tie), "does not match");
    }

    #[test]
    fn seed_figures_are_as_published() {
        // The 2018 patch: perfindex 0.032023 s → 0.000196 s on 60 MB.
        let perf = SEED
            .iter()
            .find(|f| f.timed.starts_with("`hg perfindex`,"))
            .unwrap();
        assert_eq!(
            (perf.read_ms, perf.mmap_ms, perf.index),
            (32.023, 0.196, "60 MB")
        );
        assert_eq!(
            SEED.iter().filter(|f| f.source.starts_with("D477")).count(),
            4
        );
    }
}
