//! `mapwise revlog …`: Mercurial revlog indexes, printed as hg prints them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use mapwise_core::revlog::{DebugRow, DebugStyle, Index, PrintError, debug_row};
use mapwise_native::engine::revlog::{
    self, HgConfig, IndexFile, Load, LogRow, Options, Repo, Revlog, check_data_file,
};
use mapwise_native::os::map::Advice;
use mapwise_view::fmt::hex;
use serde::Serialize;

use crate::out::Out;

/// `mapwise revlog [-R REPO] COMMAND …`: the repository may be given
/// before the subcommand, where hg's global option goes (`hg -R REPO
/// debugindex FILE`), as well as after it.
#[derive(Debug, Args)]
pub struct RevlogArgs {
    #[command(flatten)]
    repo: RepoArg,
    #[command(subcommand)]
    command: RevlogCommand,
}

/// `-R REPO`, before the subcommand (for any of them) or after it.
#[derive(Debug, Args)]
pub struct RepoArg {
    /// The repository root (holding `.hg`) or a store directory, as hg's
    /// global `-R`/`--repository` (`mercurial/commands.py`
    /// `globalopts`), before or after the subcommand; the last one given
    /// wins, as in hg. Default: the repository holding the current
    /// directory.
    #[arg(short = 'R', long = "repository", value_name = "REPO", overrides_with = "repository")]
    repository: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum RevlogCommand {
    /// List the newest revisions as `hg log -l N -T '{rev}\n'` does
    /// (tip first), reading only the tail of a mapped changelog index.
    Log(LogArgs),
    /// Print a revlog index as `hg debugindex` does: `-c`, `-m` or a
    /// tracked file's name in the repository holding the current
    /// directory (or `-R`); `--index PATH` reads any `.i` file.
    Debugindex(DebugindexArgs),
}

/// Options shared by the subcommands.
#[derive(Debug, Args)]
pub struct Common {
    /// hg configuration, `section.name=value` (repeatable). Index loading
    /// follows `experimental.mmapindexthreshold=SIZE` (hg ≤ 6.8) or
    /// `storage.revlog.mmap.index=BOOL` and
    /// `storage.revlog.mmap.index:size-threshold=SIZE` (hg ≥ 6.9); with
    /// neither the index is read whole. Sizes as hg parses them (`4k`,
    /// `1.5MB`, `100`).
    #[arg(long = "config", value_name = "SECTION.NAME=VALUE")]
    config: Vec<String>,
    /// madvise advice for a mapped index: normal, random, sequential,
    /// willneed, hugepage or none. Default: random for `log` (it reads the header
    /// and the tail only, so a cold fault should not read the device's
    /// whole read-ahead window around each; hg gives no advice: pass
    /// `none` to match it), none for `debugindex` (it reads every entry).
    #[arg(long, value_name = "ADVICE")]
    advice: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Repository root (holding `.hg`) or a store directory; default: the
    /// repository holding the current directory.
    #[arg(conflicts_with = "repository")]
    repo: Option<PathBuf>,
    #[command(flatten)]
    repository: RepoArg,
    /// Show hidden (obsolete) changesets too, as `hg log --hidden`.
    /// Without it the list is hg's `visible` view: obsolete changesets
    /// (from `.hg/store/obsstore`) and archived ones are left out unless
    /// public, pinned (working-directory parent, bookmark, local tag) or
    /// an ancestor of a visible draft.
    #[arg(long)]
    hidden: bool,
    /// Show at most N revisions.
    #[arg(short = 'l', long = "limit", value_name = "N", allow_negative_numbers = true)]
    limit: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Args)]
pub struct DebugindexArgs {
    /// A tracked file's name, relative to the repository root (its
    /// filelog), as hg takes it. A path into `.hg/store` is not a tracked
    /// file: hg (and mapwise) say "cannot give path to non-revlog"; use
    /// `--index` for those.
    file: Option<String>,
    #[command(flatten)]
    repository: RepoArg,
    /// Read this index file (`.i`) directly, inside a repository or not
    /// (what `hg debugrevlogindex PATH` accepts).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["file", "changelog", "manifest", "repository"])]
    index: Option<PathBuf>,
    /// The changelog.
    #[arg(short = 'c', long = "changelog", conflicts_with_all = ["file", "manifest"])]
    changelog: bool,
    /// The manifest.
    #[arg(short = 'm', long = "manifest", conflicts_with = "file")]
    manifest: bool,
    /// Add hg's verbose columns (hg `-v`).
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Every column and full 40-digit nodes (hg `--debug`).
    #[arg(long, visible_alias = "full")]
    debug: bool,
    #[command(flatten)]
    common: Common,
}

/// Run one `mapwise revlog` subcommand; returns its exit status, or an
/// error for `main` to print (exit 2).
pub fn run(args: RevlogArgs) -> Result<ExitCode> {
    let global = args.repo.repository.as_deref();
    let (json, result) = match args.command {
        RevlogCommand::Log(a) => (a.common.json, log(&a, global)),
        RevlogCommand::Debugindex(a) => (a.common.json, debugindex(&a, global)),
    };
    crate::out::json_errors(json, result)
}

/// Open the repository at `path`, or the one holding the current
/// directory (hg's `-R`, else its discovery from the working directory).
fn open_repo(path: Option<&Path>) -> Result<Repo> {
    Ok(match path {
        Some(p) => Repo::open(p)?,
        None => Repo::discover(std::env::current_dir()?)?,
    })
}

/// Pretty JSON and a newline on stdout; a closed pipe is an error the
/// caller (`main`) treats as success.
fn print_json(v: &impl Serialize) -> Result<()> {
    use std::fmt::Write as _;
    let mut out = Out::new();
    let text = serde_json::to_string_pretty(v)?;
    let _ = writeln!(out, "{text}");
    out.finish()?;
    Ok(())
}

/// The load options from `--config`, with `--advice` or `default_advice`
/// for a mapping.
fn load_options(common: &Common, default_advice: Option<Advice>) -> Result<Options> {
    let mut opts = HgConfig::parse(&common.config)?.index_load()?;
    opts.advice = match common.advice.as_deref() {
        None => default_advice,
        Some("none") => None,
        Some(name) => Some(Advice::from_name(name).ok_or_else(|| {
            anyhow::anyhow!(
                "unknown advice {name:?} (normal, random, sequential, willneed, hugepage, none)"
            )
        })?),
    };
    Ok(opts)
}

fn threshold(opts: &Options) -> Option<u64> {
    match opts.load {
        Load::Auto { threshold } => Some(threshold),
        Load::Read | Load::Mmap => None,
    }
}

/// What every JSON report says about the index file.
#[derive(Debug, Serialize)]
struct IndexInfo {
    index: String,
    index_bytes: u64,
    load: revlog::Loaded,
    populate: bool,
    /// madvise advice given to a mapping (`none` when read, or none given).
    advice: &'static str,
    threshold: Option<u64>,
    version: u16,
    inline: bool,
    generaldelta: bool,
    revisions: u32,
    data_file_bytes: Option<u64>,
}

impl IndexInfo {
    fn of(file: &IndexFile, index: &Index<'_, [u8]>, opts: &Options, data: Option<u64>) -> Self {
        let mapped = file.loaded() == revlog::Loaded::Mmap;
        IndexInfo {
            index: file.path().display().to_string(),
            index_bytes: file.size(),
            load: file.loaded(),
            populate: mapped && opts.populate,
            advice: match opts.advice {
                Some(a) if mapped => a.name(),
                _ => "none",
            },
            threshold: threshold(opts),
            version: index.version().number(),
            inline: index.is_inline(),
            generaldelta: index.is_generaldelta(),
            revisions: index.len(),
            data_file_bytes: data,
        }
    }
}

#[derive(Debug, Serialize)]
struct LogEntry {
    rev: i32,
    node: String,
    linkrev: i32,
    p1: i32,
    p2: i32,
    parents: Vec<String>,
}

impl From<&LogRow> for LogEntry {
    fn from(r: &LogRow) -> Self {
        LogEntry {
            rev: r.rev,
            node: hex(&r.node),
            linkrev: r.linkrev,
            p1: r.p1,
            p2: r.p2,
            parents: r.parents.iter().map(|p| hex(p)).collect(),
        }
    }
}

fn log(a: &LogArgs, global: Option<&Path>) -> Result<ExitCode> {
    let limit = match a.limit.as_deref().map(python_int) {
        None => None,
        Some(None) => bail!("limit must be a positive integer"),
        Some(Some(n)) if n <= 0 => bail!("limit must be positive"),
        Some(Some(n)) => Some(n.unsigned_abs()),
    };
    let opts = load_options(&a.common, Some(Advice::Random))?;
    // A `-R` after the subcommand comes last on the command line: it wins
    // over one before it, as in hg. The positional REPO is ours (hg's
    // `log` takes file patterns there), so with a `-R` before the
    // subcommand it is as ambiguous as with one after it (a clap
    // conflict).
    let path = match (&a.repository.repository, &a.repo, global) {
        (Some(r), _, _) => Some(r.as_path()),
        (None, Some(p), Some(g)) => bail!(
            "the repository is given twice: -R {} and REPO {} (give one)",
            g.display(),
            p.display()
        ),
        (None, p, g) => p.as_deref().or(g),
    };
    let repo = open_repo(path)?;
    let file = repo.open_index(&Revlog::Changelog, &opts)?;
    let index = file.index()?;
    let hidden = if a.hidden { revlog::Hidden::default() } else { revlog::hidden(&repo, &index)? };
    let rows = revlog::log(&index, limit, &hidden)
        .map_err(|source| revlog::Error::Format { path: file.path().to_owned(), source })?;
    let data = data_file_or_warn(check_data_file(&file, &index, rows.iter().map(|r| r.rev)))?;
    if a.common.json {
        #[derive(Serialize)]
        struct Report {
            repo: String,
            /// `visible` (hg's default view) or `all` (`--hidden`).
            view: &'static str,
            /// Changesets the view hides.
            hidden_count: usize,
            #[serde(flatten)]
            info: IndexInfo,
            entries: Vec<LogEntry>,
        }
        let rep = Report {
            repo: repo.path().display().to_string(),
            view: if a.hidden { "all" } else { "visible" },
            hidden_count: hidden.len(),
            info: IndexInfo::of(&file, &index, &opts, data),
            entries: rows.iter().map(LogEntry::from).collect(),
        };
        print_json(&rep)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = Out::new();
    for r in &rows {
        use std::fmt::Write as _;
        if writeln!(out, "{}", r.rev).is_err() {
            break;
        }
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// One `hg debugindex --debug -Tjson` item, with numbers as numbers and
/// full nodes.
#[derive(Debug, Serialize)]
struct DebugEntry {
    rev: i32,
    rank: i32,
    linkrev: i32,
    nodeid: String,
    #[serde(rename = "p1-rev")]
    p1_rev: i32,
    #[serde(rename = "p1-nodeid")]
    p1_nodeid: String,
    #[serde(rename = "p2-rev")]
    p2_rev: i32,
    #[serde(rename = "p2-nodeid")]
    p2_nodeid: String,
    #[serde(rename = "full-size")]
    full_size: i32,
    #[serde(rename = "delta-base")]
    delta_base: i32,
    flags: u16,
    #[serde(rename = "comp-mode")]
    comp_mode: u8,
    #[serde(rename = "data-offset")]
    data_offset: u64,
    #[serde(rename = "chunk-size")]
    chunk_size: u32,
    #[serde(rename = "sd-comp-mode")]
    sd_comp_mode: &'static str,
    #[serde(rename = "sidedata-offset")]
    sidedata_offset: u64,
    #[serde(rename = "sd-chunk-size")]
    sd_chunk_size: u32,
}

impl From<&DebugRow> for DebugEntry {
    fn from(r: &DebugRow) -> Self {
        DebugEntry {
            rev: r.rev,
            rank: r.rank,
            linkrev: r.linkrev,
            nodeid: hex(&r.nodeid),
            p1_rev: r.p1_rev,
            p1_nodeid: hex(&r.p1_nodeid),
            p2_rev: r.p2_rev,
            p2_nodeid: hex(&r.p2_nodeid),
            full_size: r.full_size,
            delta_base: r.delta_base,
            flags: r.flags,
            comp_mode: r.comp_mode,
            data_offset: r.data_offset,
            chunk_size: r.chunk_size,
            sd_comp_mode: r.sd_comp_mode,
            sidedata_offset: r.sidedata_offset,
            sd_chunk_size: r.sd_chunk_size,
        }
    }
}

/// hg's message when `openstorage` finds no revlog (a name that is not a
/// tracked file's, an empty changelog, no argument).
const NON_REVLOG: &str = "cannot give path to non-revlog";

/// The revlog `a` names, as hg's `openstorage` resolves it: `-c`, `-m`,
/// or a tracked file's filelog (`localrepo.file` drops a leading `/`);
/// `None` for `--index`.
fn which(a: &DebugindexArgs) -> Result<Option<Revlog>> {
    if a.index.is_some() {
        return Ok(None);
    }
    Ok(Some(match (a.changelog, a.manifest, &a.file) {
        (true, _, _) => Revlog::Changelog,
        (_, true, _) => Revlog::Manifest,
        (_, _, Some(f)) => Revlog::File(f.strip_prefix('/').unwrap_or(f).to_owned()),
        (false, false, None) => bail!(NON_REVLOG),
    }))
}

fn debugindex(a: &DebugindexArgs, global: Option<&Path>) -> Result<ExitCode> {
    if let (Some(index), Some(g)) = (&a.index, global) {
        // As clap refuses `--index` with a `-R` after the subcommand.
        bail!(
            "--index {} reads a file by its path: it takes no repository (-R {})",
            index.display(),
            g.display()
        );
    }
    let configured = load_options(&a.common, None)?;
    // hg maps only the changelog and the manifest (`mmaplargeindex`).
    let (file, opts) = match which(a)? {
        Some(w) => {
            let opts = if w.maps_large_index() { configured } else { Options::default() };
            // The `-R` after the subcommand is the later one: it wins.
            let repo = open_repo(a.repository.repository.as_deref().or(global))?;
            let file = repo.open_index(&w, &opts)?;
            if file.index()?.is_empty() {
                // `openstorage`: an empty or missing revlog is no revlog.
                bail!(NON_REVLOG);
            }
            (file, opts)
        }
        None => {
            let path = a.index.as_deref().unwrap_or(Path::new(""));
            let named = path.file_name().and_then(|n| n.to_str());
            let opts = if matches!(named, Some("00changelog.i" | "00manifest.i")) {
                configured
            } else {
                Options::default()
            };
            (IndexFile::open(path, &opts)?, opts)
        }
    };
    let index = file.index()?;
    let data = data_file_or_warn(check_data_file(&file, &index, 0..=index.tip()))?;
    if a.common.json {
        let mut entries = Vec::with_capacity(index.len() as usize);
        for rev in 0..=index.tip() {
            let row = debug_row(&index, rev)
                .map_err(|source| revlog::Error::Format { path: file.path().to_owned(), source })?;
            entries.push(DebugEntry::from(&row));
        }
        #[derive(Serialize)]
        struct Report {
            #[serde(flatten)]
            info: IndexInfo,
            entries: Vec<DebugEntry>,
        }
        let rep = Report { info: IndexInfo::of(&file, &index, &opts, data), entries };
        print_json(&rep)?;
        return Ok(ExitCode::SUCCESS);
    }
    let style = DebugStyle { verbose: a.verbose || a.debug, full_nodes: a.debug };
    let mut out = Out::new();
    match mapwise_core::revlog::write_debugindex(&mut out, &index, style) {
        Ok(()) => out.finish()?,
        Err(PrintError::Write) => {
            return Err(out
                .finish()
                .err()
                .map_or_else(|| anyhow::anyhow!("write failed"), Into::into));
        }
        Err(PrintError::Format(e)) => {
            out.finish()?;
            return Err(anyhow::Error::new(e).context(format!("{}", file.path().display())));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A data file too short for a listed revision's chunk is a warning, not
/// a failure: what `log` and `debugindex` print comes from the index
/// alone, and hg prints it too (`hg log -T '{rev}'`, `hg debugindex`),
/// failing only when it reads that changeset's data. Its size is then
/// not reported.
fn data_file_or_warn(checked: Result<Option<u64>, revlog::Error>) -> Result<Option<u64>> {
    match checked {
        Err(e @ revlog::Error::DataFile { .. }) => {
            eprintln!("warning: {e} (hg fails only when it reads that revision's data)");
            Ok(None)
        }
        Ok(len) => Ok(len),
        Err(e) => Err(e.into()),
    }
}

/// hg's `int(opts['limit'])`: Python's `int` of a string, which allows
/// surrounding white space, a sign, and single underscores between
/// digits, and has no upper bound (here clamped to `i64`'s range, more
/// revisions than any revlog holds). `None` when it is not an integer.
fn python_int(text: &str) -> Option<i64> {
    let t = text.trim();
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let ok = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.bytes().all(|c| c.is_ascii_digit() || c == b'_');
    if !ok {
        return None;
    }
    let magnitude = digits
        .bytes()
        .filter(u8::is_ascii_digit)
        .try_fold(0i64, |v, c| v.checked_mul(10)?.checked_add(i64::from(c - b'0')))
        .unwrap_or(i64::MAX);
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::python_int;

    #[test]
    fn limits_read_as_python_reads_them() {
        assert_eq!(python_int(" 3"), Some(3));
        assert_eq!(python_int("+3\n"), Some(3));
        assert_eq!(python_int("1_0"), Some(10));
        assert_eq!(python_int("-1"), Some(-1));
        assert_eq!(python_int("99999999999999999999999"), Some(i64::MAX));
        for bad in ["3x", "", "_1", "1__0", "1_", "0x10", "- 1", "3.0"] {
            assert_eq!(python_int(bad), None, "{bad:?}");
        }
    }
}
