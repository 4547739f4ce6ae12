//! `mapwise bolt …`: bbolt's command line (`cmd/bbolt` in etcd-io/bbolt)
//! with its command names, arguments and output shapes, over mapwise's
//! engine, plus mapwise's own reports (`dump` of the whole content,
//! `info`'s meta detail, `traverse`) and `put`/`del`.
//!
//! Exit status: 0 fine; 1 the file has problems or lacks what was asked
//! for (bbolt's "bucket not found", "key not found", "incompatible
//! value", a damaged file); 2 the command could not run (bad arguments,
//! "key required", "bucket required", I/O, a lock timeout). With
//! `--json` a failure prints `{"error": "..."}` on stdout.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mapwise_core::bolt::{BoltFile, DumpError, Record, visit, write_record};
use mapwise_native::engine::bolt::{Db, Options};
use mapwise_native::os::io::QuietSource;
use mapwise_native::report;
use mapwise_view::fmt::hex;

use crate::out::Out;

/// `println!` into an [`Out`]: a closed pipe ends the output quietly
/// instead of panicking.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

mod bytefmt;
mod go_print;
mod kv;
mod page;
mod tools;

pub use crate::out::Problem;

/// An engine error as the command line reports it: bbolt's named errors
/// about the content (bucket not found, incompatible value) and damage
/// (invalid database, checksum, version, a bad page) are a [`Problem`]
/// (exit 1) with the engine's message; I/O, mapping and lock timeouts are
/// failures to run (exit 2).
pub fn engine_error(e: mapwise_native::engine::bolt::Error) -> anyhow::Error {
    use mapwise_native::engine::bolt::Error as E;
    match e {
        E::BucketNotFound
        | E::IncompatibleValue
        | E::Invalid { .. }
        | E::VersionMismatch { .. }
        | E::Checksum { .. }
        | E::PageSize { .. }
        | E::Format(_)
        | E::Corrupt(_) => anyhow::Error::new(Problem(e.to_string())),
        e => anyhow::Error::new(e),
    }
}

/// `mapwise bolt` subcommands: bbolt's CLI names and output shapes
/// (etcd-io/bbolt `cmd/bbolt`: `main.go` up to 1.4,
/// `command/command_*.go` after), with `--json` everywhere. Each one's
/// help says which bbolt CLI versions print what it prints, by bbolt's
/// sources at the release tags and their binaries run on the same files;
/// where that is not Debian's bbolt 1.3.6 (the oracle's library, whose
/// CLI Debian does not ship) it says what 1.3.6 prints instead.
#[derive(Debug, Subcommand)]
pub enum BoltCommand {
    /// Print `Page Size: N` (bbolt `info`), then mapwise's detail: both
    /// meta pages, the current one and the freelist. Reads only those
    /// pages, quietly (O_DIRECT, no lock).
    ///
    /// bbolt versions: the first line is what every bbolt CLI from 1.3.6
    /// on prints; the lines after it are mapwise's.
    Info(QuietArgs),
    /// Print the top-level bucket names, one per line (bbolt `buckets`).
    ///
    /// bbolt versions: the raw names, as every bbolt CLI from 1.3.6 on
    /// prints them; `--format` is mapwise's.
    Buckets(kv::BucketsArgs),
    /// Print the keys of a bucket, one per line, sub-bucket names
    /// included (bbolt `keys FILE BUCKET…`; nested buckets as further
    /// arguments). A bucket not found gets `get`'s hint about hex names.
    ///
    /// bbolt versions: as bbolt 1.4 and later print them (`--format
    /// auto` by default). bbolt 1.3.7 to 1.3.12 print the raw bytes by
    /// default (`--format bytes` here); 1.3.6 (Debian's) takes one bucket
    /// only (it ignores further names) and prints the raw bytes.
    #[command(override_usage = "mapwise bolt keys [OPTIONS] FILE BUCKET…")]
    Keys(kv::KeysArgs),
    /// Print the value of one key (bbolt `get FILE BUCKET… KEY`). Exit 1
    /// with "bucket not found" or "key not found"; when the KEY (or the
    /// bucket names) given as text are hex for a key (bucket) that exists,
    /// a `hint:` line after it names `--parse-format hex`
    /// (`--bucket-format hex`).
    ///
    /// bbolt versions: the value as bbolt 1.4 and later print it
    /// (`--format auto` by default; 1.3.7 to 1.3.12 print the raw bytes
    /// by default, `--format bytes` here); nested buckets and
    /// `--parse-format` as in 1.3.7 and later; "key not found for key: …
    /// hex: …" is 1.3.7's and later's message without their "Error "
    /// prefix. bbolt 1.3.6 (Debian's) takes one bucket, prints the raw
    /// bytes and says only "key not found".
    #[command(override_usage = "mapwise bolt get [OPTIONS] FILE BUCKET… KEY")]
    Get(kv::GetArgs),
    /// Set one key: `put FILE BUCKET… KEY VALUE` (no bbolt CLI has
    /// `put`; same argument style as `get`). Opens read-write (exclusive
    /// lock), commits and syncs.
    #[command(override_usage = "mapwise bolt put [OPTIONS] FILE BUCKET… KEY VALUE")]
    Put(kv::PutArgs),
    /// Remove one key: `del FILE BUCKET… KEY` (no bbolt CLI has it).
    /// Exit 1 with "key not found" when it is not there (nothing written).
    #[command(override_usage = "mapwise bolt del [OPTIONS] FILE BUCKET… KEY")]
    Del(kv::DelArgs),
    /// Without page ids: every bucket and key/value in the canonical text
    /// form (`bucket <path> seq=<n>` / `kv <path> <key-hex>
    /// <value-hex|->`), opening the file as bbolt does (shared lock,
    /// mapping); a damaged freelist page is a `warning:` line on stderr
    /// after it (exit 0: readers never load the freelist). With page ids:
    /// those pages as hex, as bbolt's `dump FILE PGID…` prints them (read
    /// quietly). With --json, JSON Lines.
    ///
    /// bbolt versions: with page ids, what every bbolt CLI from 1.3.6 on
    /// prints; without, the bolt oracle's `dump` text (no bbolt CLI
    /// prints the whole content).
    Dump(DumpArgs),
    /// Check the structure (reachability, free pages, key order, meta
    /// pages); print one line per problem, then `OK` or `N errors found`
    /// (bbolt `check`), exit 1 on problems. Reads quietly (O_DIRECT,
    /// no lock, page cache untouched).
    ///
    /// bbolt versions: `OK` and `N errors found` as every bbolt CLI from
    /// 1.3.6 on prints them; the problem lines are mapwise's words, not
    /// those of bbolt's `Tx.Check`, which makes fewer checks.
    Check(QuietArgs),
    /// Print bbolt's aggregate statistics of the top-level buckets
    /// (bbolt `stats FILE [PREFIX]`).
    ///
    /// bbolt versions: the text every bbolt CLI from 1.3.6 on prints.
    #[command(override_usage = "mapwise bolt stats [OPTIONS] FILE [PREFIX]")]
    Stats(tools::StatsArgs),
    /// Print the page table as `bbolt pages` does (ID TYPE ITEMS OVRFLW).
    /// Reads quietly (O_DIRECT, no lock, page cache untouched).
    ///
    /// bbolt versions: the table every bbolt CLI from 1.3.6 on prints.
    Pages(QuietArgs),
    /// Print pages decoded as `bbolt page FILE PGID…` does: header, then
    /// meta fields, elements or freelist ids. Reads quietly.
    ///
    /// bbolt versions: as bbolt 1.3.7 and later print them (the
    /// `Overflow pages: N` line, `--all`, `--format-value`, printable
    /// values unquoted). A page that does not decode is reported in the
    /// words of bbolt's main branch after 1.5.0 ("Printing page N failed:
    /// … Continuing..."; the releases spell it "Prining"), with mapwise's
    /// reason, and one asked for by id makes the exit status 1 (bbolt's
    /// is 0). bbolt 1.3.6 (Debian's) prints no `Overflow pages:` line,
    /// quotes printable values (`%q`), has neither option and stops at
    /// the first page it cannot read.
    Page(PageArgs),
    /// Copy the database into a new compact file (bbolt `compact -o DST
    /// SRC`) and print `SRC_BYTES -> DST_BYTES bytes (gain=X.XXx)`.
    ///
    /// bbolt versions: the line every bbolt CLI from 1.3.6 on prints.
    #[command(override_usage = "mapwise bolt compact [OPTIONS] -o DST SRC")]
    Compact(tools::CompactArgs),
    // `bench` (bbolt's benchmark) belongs here, in bbolt's order; it is
    // added with its own change.
    /// Open read-only and walk every key of one bucket with a cursor,
    /// timing open + scan (the MAP_POPULATE experiment: bbolt's read-only
    /// scan with and without `MmapFlags = MAP_POPULATE`).
    ///
    /// bbolt versions: no bbolt CLI has it; the lines are the bolt
    /// oracle's `traverse` lines.
    Traverse(TraverseArgs),
    /// The bbolt peer's seeded write-then-read workload (`peers/bolt/peer bench`):
    /// batched puts, then a cursor scan or random gets, timed.
    ///
    /// bbolt versions: not bbolt's `bench` (its workload is unseeded and
    /// its lines differ); the bolt oracle's lines and JSON keys.
    Bench(crate::bolt_bench::BenchArgs),
}

/// `dump FILE [PGID…]`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    #[command(flatten)]
    file: FileArgs,
    /// Page ids to print as hex (bbolt's `dump`); none = the whole
    /// content as canonical text.
    #[arg(value_name = "PGID")]
    pages: Vec<u64>,
}

/// `page FILE PGID…`.
#[derive(Debug, Args)]
pub struct PageArgs {
    #[command(flatten)]
    file: QuietArgs,
    /// Page ids to decode.
    #[arg(value_name = "PGID", required_unless_present = "all")]
    pages: Vec<u64>,
    /// Every page from 0 to the high-water mark, a run of overflow pages
    /// once (bbolt `--all`).
    #[arg(long, conflicts_with = "pages")]
    all: bool,
    /// How leaf values are printed (bbolt `--format-value`).
    #[arg(long, value_enum, default_value = "auto")]
    format_value: bytefmt::Format,
}

#[derive(Debug, Args)]
pub struct TraverseArgs {
    /// The bbolt file.
    file: PathBuf,
    /// Bucket to scan; nested buckets as `outer/inner`.
    #[arg(long, default_value = "fake-bucket")]
    bucket: String,
    /// Seconds to wait for the shared file lock; 0 waits forever (bbolt's
    /// `Timeout`).
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// Map with MAP_POPULATE (bbolt `MmapFlags = syscall.MAP_POPULATE`).
    #[arg(long)]
    populate: bool,
    /// Evict the file from the page cache first (posix_fadvise DONTNEED).
    #[arg(long)]
    cold: bool,
    /// Read every value byte, not only what the cursor touches.
    #[arg(long)]
    touch: bool,
    /// mlock the mapping (bbolt `Mlock`).
    #[arg(long)]
    mlock: bool,
    /// madvise advice after mapping: random (bbolt's, always), normal,
    /// sequential, willneed, or hugepage (cold faults read whole 2 MiB
    /// blocks and cached 2 MiB folios map with one entry, on file systems
    /// with large folios).
    #[arg(long, default_value = "random")]
    advice: String,
    /// Read-ahead window of the cursor: once the scan has moved through 3
    /// leaves holding 32 keys, announce up to this many bytes of leaf
    /// pages ahead of it with madvise(MADV_WILLNEED), ramping up from 8
    /// leaves, nothing where the file is already cached (`256KiB`, `4MiB`,
    /// the default). 0: off, bbolt's exact I/O (its cursor, one
    /// synchronous fault per cold page).
    #[arg(long, value_name = "BYTES", default_value = "4MiB", value_parser = crate::bolt_bench::parse_bytes)]
    prefetch: u64,
    /// Range scan: start at the first key >= this one (hex).
    #[arg(long, value_name = "HEX")]
    from: Option<String>,
    /// Range scan: stop before this key (hex, exclusive); the prefetching
    /// cursor announces nothing at or past it.
    #[arg(long, value_name = "HEX")]
    to: Option<String>,
    /// Instead of the scan: this many cursor seeks to keys spread over the
    /// bucket's (splitmix64 seeded with --seed, between the first 8 bytes of
    /// its first and last keys), each followed by reading --per-seek keys
    /// (the one landed on included), as the bbolt peer's `traverse --seeks`.
    #[arg(long, value_name = "N", conflicts_with_all = ["from", "to"])]
    seeks: Option<u64>,
    /// Keys read from each seek.
    #[arg(long, value_name = "K", default_value_t = 10)]
    per_seek: u64,
    /// Seed of the seek keys.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// After the scan, sample the file's page-cache residency (mincore)
    /// and split it into the OS pages holding the keys and values the scan
    /// read and the rest.
    #[arg(long)]
    residency: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct FileArgs {
    /// The bbolt file.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Seconds to wait for the shared file lock (a writer holds an
    /// exclusive one); 0 waits forever (bbolt's `Timeout`).
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
}

#[derive(Debug, Args)]
pub struct QuietArgs {
    /// The bbolt file.
    file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// bbolt's `Timeout`: 0 waits forever.
fn lock_timeout(seconds: f64) -> Option<Duration> {
    (seconds > 0.0).then(|| Duration::from_secs_f64(seconds))
}

fn open(args: &FileArgs) -> Result<Db> {
    let opts = Options {
        timeout: lock_timeout(args.timeout),
        // A dump reads every page: let the kernel read ahead (bbolt's
        // MADV_RANDOM would make each page of a cold file its own read).
        advice: Some(mapwise_native::os::map::Advice::Sequential),
        ..Options::default()
    };
    Db::open(&args.file, &opts)
        .map_err(engine_error)
        .context("cannot open the file as a bbolt database")
}

/// A quiet read's failure as the command line reports it: a file that is
/// not bbolt is a [`Problem`] (exit 1, as every other subcommand says of
/// it); failing to open or a writer that never settles are failures to
/// run (exit 2).
fn settle_error(e: mapwise_native::observe::settle::Error) -> anyhow::Error {
    match e {
        e @ mapwise_native::observe::settle::Error::NotBolt { .. } => {
            anyhow::Error::new(Problem(e.to_string()))
        }
        e => anyhow::Error::new(e),
    }
}

/// Run one `mapwise bolt` subcommand; returns its exit status, or an
/// error for `main` to print (exit 2).
pub fn run(cmd: BoltCommand) -> Result<ExitCode> {
    let json = match &cmd {
        BoltCommand::Dump(a) => a.file.json,
        BoltCommand::Pages(a) | BoltCommand::Check(a) | BoltCommand::Info(a) => a.json,
        BoltCommand::Page(a) => a.file.json,
        BoltCommand::Buckets(a) => a.json,
        BoltCommand::Keys(a) => a.common.json,
        BoltCommand::Get(a) => a.common.json,
        BoltCommand::Put(a) => a.common.json,
        BoltCommand::Del(a) => a.common.json,
        BoltCommand::Stats(a) => a.json,
        BoltCommand::Compact(a) => a.json,
        BoltCommand::Traverse(a) => a.json,
        BoltCommand::Bench(a) => a.json(),
    };
    let result = match cmd {
        BoltCommand::Info(a) => info(&a),
        BoltCommand::Buckets(a) => kv::buckets(&a),
        BoltCommand::Keys(a) => kv::keys(&a),
        BoltCommand::Get(a) => kv::get(&a),
        BoltCommand::Put(a) => kv::put(&a),
        BoltCommand::Del(a) => kv::del(&a),
        BoltCommand::Dump(a) if a.pages.is_empty() => dump(&a.file),
        BoltCommand::Dump(a) => {
            with_quiet_file(&a.file.file, |f| page::hexdump(f, &a.pages, a.file.json))
        }
        BoltCommand::Check(a) => check(&a),
        BoltCommand::Stats(a) => tools::stats(&a),
        BoltCommand::Pages(a) => pages(&a),
        BoltCommand::Page(a) => with_quiet_file(&a.file.file, |f| {
            page::page(f, &a.pages, a.all, a.format_value, a.file.json)
        }),
        BoltCommand::Compact(a) => tools::compact(&a),
        BoltCommand::Traverse(a) => traverse(&a),
        BoltCommand::Bench(a) => crate::bolt_bench::run(&a),
    };
    // Scripts asking for JSON get JSON on failure too; a Problem exits 1.
    crate::out::json_errors(json, result)
}

/// Run `f` on `path` read quietly (O_DIRECT, no lock, nothing mapped).
fn with_quiet_file(
    path: &std::path::Path,
    f: impl FnOnce(&BoltFile<'_, QuietSource>) -> Result<ExitCode>,
) -> Result<ExitCode> {
    let src = QuietSource::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let file = BoltFile::open(&src).map_err(|e| {
        anyhow::Error::new(Problem(format!(
            "{}: cannot open as a bbolt database: {e}",
            path.display()
        )))
    })?;
    f(&file)
}

fn dump(a: &FileArgs) -> Result<ExitCode> {
    let db = open(a)?;
    let tx = db.begin()?;
    let mut out = Out::new();
    let result = visit(&tx.file(), |rec| {
        if a.json {
            let line = match rec {
                Record::Bucket { path, sequence } => serde_json::json!({
                    "type": "bucket",
                    "path": path.iter().map(|p| hex(p)).collect::<Vec<_>>(),
                    "sequence": sequence,
                }),
                Record::Kv { path, key, value } => serde_json::json!({
                    "type": "kv",
                    "path": path.iter().map(|p| hex(p)).collect::<Vec<_>>(),
                    "key": hex(key),
                    "value": hex(value),
                }),
            };
            writeln!(out, "{line}").map_err(DumpError::from)
        } else {
            write_record(&mut out, rec).map_err(DumpError::from)
        }
    });
    match result {
        Ok(()) => {
            out.finish()?;
            warn_damaged_freelist(&tx, &a.file);
        }
        Err(DumpError::Write) => {
            return Err(out
                .finish()
                .err()
                .map_or_else(|| anyhow::anyhow!("write failed"), Into::into));
        }
        Err(DumpError::Format(e)) => {
            out.finish()?;
            return Err(anyhow::Error::new(e).context(format!("{}: cannot dump", a.file.display())));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A damaged freelist page is a warning after the dump, not a failure
/// (exit status 0): the content printed is complete and is what bbolt
/// reads, as its read-only open never loads the freelist (bbolt 1.3.6
/// `db.go` `Open`; the oracle's `dump --no-precheck`, bbolt itself,
/// prints the same text and exits 0). Only a writer loads it, and on
/// such a file bbolt 1.3.6's read-write open panics (a page of another
/// type, a count past the page) or hands out pages from a bad list (an
/// id listed twice or past the high-water mark). The warning names the
/// page and the fault, in `mapwise revlog debugindex`'s style for a short
/// data file.
fn warn_damaged_freelist(tx: &mapwise_native::engine::bolt::Tx<'_>, path: &std::path::Path) {
    use mapwise_native::engine::bolt::Error;
    let Err(e) = tx.check_freelist() else {
        return;
    };
    let fault = match e {
        Error::Corrupt(detail) => detail,
        e => e.to_string(),
    };
    eprintln!(
        "warning: {}: the freelist (page {}) is damaged: {fault} (the dump is complete: \
         readers never load the freelist, bbolt's neither; a writer would fail on it or \
         reuse pages wrongly: see `mapwise bolt check`)",
        path.display(),
        tx.file().meta().freelist
    );
}

fn pages(a: &QuietArgs) -> Result<ExitCode> {
    // Settled: retried while a writer commits (see mapwise_native::observe::settle).
    let rows = report::settled_page_rows(&a.file).map_err(settle_error)?;
    let mut out = Out::new();
    let _ = if a.json {
        report::write_pages_json(&mut out, rows.iter())
    } else {
        report::write_pages_text(&mut out, rows.iter())
    };
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

fn check(a: &QuietArgs) -> Result<ExitCode> {
    // A file that does not open as bbolt is a failed check (exit 1), not a
    // failure to run the check (exit 2), as `inspector check` has it; a
    // writer committing during every read is a failure to run it (exit 2).
    let rep = report::settled_check(&a.file)?;
    let mut out = Out::new();
    if a.json {
        outln!(out, "{}", serde_json::to_string_pretty(&rep)?);
    } else {
        for w in &rep.warnings {
            outln!(out, "warning: {w}");
        }
        for p in &rep.problems {
            outln!(out, "{p}");
        }
        if rep.more > 0 {
            outln!(out, "... and {} more", rep.more);
        }
        if rep.ok {
            outln!(out, "OK");
        } else {
            outln!(out, "{} errors found", rep.problems.len() as u64 + rep.more);
        }
    }
    out.finish()?;
    Ok(if rep.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn info(a: &QuietArgs) -> Result<ExitCode> {
    let (file_size, info) = report::settled_info(&a.file).map_err(settle_error)?;
    let (metas, freelist) = (info.metas, info.freelist);
    let mut out = Out::new();
    if a.json {
        let v = serde_json::json!({
            "file_size": file_size,
            "page_size": info.page_size,
            "current_meta": info.current_meta,
            "txid": info.txid,
            "metas": metas,
            "freelist": freelist,
        });
        outln!(out, "{}", serde_json::to_string_pretty(&v)?);
        out.finish()?;
        return Ok(ExitCode::SUCCESS);
    }
    // bbolt `info` prints this one line (`command_info.go`, `db.Info()`);
    // mapwise's detail follows.
    outln!(out, "Page Size: {}", info.page_size);
    outln!(out, "file_size={file_size} page_size={}", info.page_size);
    for m in &metas {
        match &m.fault {
            Some(f) => outln!(out, "meta{}: INVALID: {f}", m.index),
            None => outln!(
                out,
                "meta{}: root={} freelist={} hwm={} txid={} checksum={}",
                m.index,
                m.root.unwrap_or(0),
                m.freelist.map_or_else(|| "none".to_string(), |f| f.to_string()),
                m.hwm.unwrap_or(0),
                m.txid.unwrap_or(0),
                m.checksum.as_deref().unwrap_or("")
            ),
        }
    }
    outln!(out, "current=meta{} txid={}", info.current_meta, info.txid);
    match freelist {
        report::FreelistReport::NotStored => {
            outln!(
                out,
                "freelist: not stored (NoFreelistSync); free pages are the unreachable ones"
            )
        }
        report::FreelistReport::Stored { page, overflow, ids, encoding } => {
            outln!(out, "freelist: page={page} overflow={overflow} ids={ids} encoding={encoding}")
        }
        report::FreelistReport::Unreadable { page } => {
            outln!(out, "freelist: page={page} unreadable")
        }
        report::FreelistReport::NotRead { page } => {
            outln!(out, "freelist: page={page} not read")
        }
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

fn traverse(a: &TraverseArgs) -> Result<ExitCode> {
    use mapwise_native::os::map::Advice;
    use mapwise_native::os::residency;
    let advice = Advice::from_name(&a.advice).with_context(|| {
        format!("unknown advice {:?} (normal, random, sequential, willneed, hugepage)", a.advice)
    })?;
    let size = std::fs::metadata(&a.file).with_context(|| a.file.display().to_string())?.len();
    if a.cold {
        let f = std::fs::File::open(&a.file).with_context(|| a.file.display().to_string())?;
        residency::evict(&f, 0, residency::TO_EOF)?;
    }
    let opts = Options {
        mmap_flags: if a.populate { libc::MAP_POPULATE } else { 0 },
        advice: Some(advice),
        mlock: a.mlock,
        timeout: lock_timeout(a.timeout),
        ..Options::default()
    };
    let path: Vec<&[u8]> = a.bucket.split('/').map(str::as_bytes).collect();
    let start = std::time::Instant::now();
    let db = Db::open(&a.file, &opts).map_err(engine_error)?;
    let opened = start.elapsed();
    let range = crate::bolt_bench::ScanRange::parse(a.from.as_deref(), a.to.as_deref())?;
    let copts = mapwise_native::engine::bolt::CursorOptions {
        prefetch: a.prefetch,
        prefetch_end: range.to.clone(),
    };
    let scanned = {
        let tx = db.begin()?;
        // A missing bucket or a damaged file is exit 1, as for `keys`.
        let bucket = tx
            .bucket_path(&path)
            .map_err(engine_error)
            .with_context(|| format!("bucket {:?}", a.bucket))?;
        match a.seeks {
            Some(n) => crate::bolt_bench::seeks(
                &db,
                &tx,
                &bucket,
                &copts,
                (n, a.per_seek, a.seed),
                a.touch,
                a.residency,
            )?,
            None => {
                crate::bolt_bench::scan(&db, &tx, &bucket, &copts, &range, a.touch, a.residency)?
            }
        }
    };
    let took = start.elapsed();
    let (keys, value_bytes, x) = (scanned.keys, scanned.value_bytes, scanned.xor);
    let residency = if a.residency { Some(scanned.residency(&db)?) } else { None };
    drop(db);
    let scan = took - opened;
    let mut out = Out::new();
    if a.json {
        let v = serde_json::json!({
            "file_bytes": size, "populate": a.populate, "cold": a.cold, "touch": a.touch,
            "mlock": a.mlock, "advice": advice.name(), "prefetch": a.prefetch, "open_s": opened.as_secs_f64(),
            "traverse_s": scan.as_secs_f64(), "took_s": took.as_secs_f64(), "keys": keys,
            "value_bytes": value_bytes, "residency": residency,
        });
        outln!(out, "{v}");
    } else {
        outln!(
            out,
            "file: {size} bytes populate={} cold={} touch={} mlock={}",
            a.populate,
            a.cold,
            a.touch,
            a.mlock
        );
        outln!(out, "open: {:.3}s", opened.as_secs_f64());
        outln!(
            out,
            "traverse: {:.3}s keys={keys} value_bytes={value_bytes} xor={x:02x}",
            scan.as_secs_f64()
        );
        outln!(out, "took: {:.3}s", took.as_secs_f64());
        if let Some(r) = &residency {
            outln!(out, "{r}");
        }
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
