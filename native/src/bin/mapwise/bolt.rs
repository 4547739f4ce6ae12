//! `mapwise bolt …`

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mapwise_core::bolt::{
    BoltFile, DumpError, Record, WalkOptions, freelist_info, visit, walk, write_hex, write_record,
};
use mapwise_native::bolt::{Db, Options};
use mapwise_native::io::QuietSource;
use mapwise_native::report;

use crate::out::Out;

/// `println!` into an [`Out`]: a closed pipe ends the output quietly
/// instead of panicking.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

#[derive(Debug, Subcommand)]
pub enum BoltCommand {
    /// Print every bucket and key/value in the canonical text form
    /// (`bucket <path> seq=<n>` / `kv <path> <key-hex> <value-hex|->`);
    /// with --json, one JSON object per line (JSON Lines). Opens the file
    /// as bbolt does: a shared lock and a mapping.
    Dump(FileArgs),
    /// Print the page table as `bbolt pages` does (ID TYPE ITEMS OVRFLW).
    /// Reads quietly (O_DIRECT, no lock, page cache untouched).
    Pages(QuietArgs),
    /// Check the structure (reachability, free pages, key order, meta
    /// pages); exit 1 with one line per problem. Reads quietly (O_DIRECT,
    /// no lock, page cache untouched).
    Check(QuietArgs),
    /// Print both meta pages, the current one and the freelist. Reads
    /// only those pages, quietly.
    Info(QuietArgs),
    /// Open read-only and walk every key of one bucket with a cursor,
    /// timing open + scan (the MAP_POPULATE experiment of bbolt#455).
    Traverse(TraverseArgs),
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
    /// madvise advice after mapping (bbolt always uses random).
    #[arg(long, default_value = "random")]
    advice: String,
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
        advice: Some(mapwise_native::map::Advice::Sequential),
        ..Options::default()
    };
    Db::open(&args.file, &opts).with_context(|| "cannot open the file as a bbolt database")
}

/// The file read quietly: O_DIRECT, no lock, nothing mapped.
fn quiet(args: &QuietArgs) -> Result<QuietSource> {
    QuietSource::open(&args.file).with_context(|| format!("cannot open {}", args.file.display()))
}

fn bolt_file<'s>(args: &QuietArgs, src: &'s QuietSource) -> Result<BoltFile<'s, QuietSource>> {
    BoltFile::open(src)
        .with_context(|| format!("{}: cannot open as a bbolt database", args.file.display()))
}

pub fn run(cmd: BoltCommand) -> Result<ExitCode> {
    let json = match &cmd {
        BoltCommand::Dump(a) => a.json,
        BoltCommand::Pages(a) | BoltCommand::Check(a) | BoltCommand::Info(a) => a.json,
        BoltCommand::Traverse(a) => a.json,
    };
    let result = match cmd {
        BoltCommand::Dump(a) => dump(&a),
        BoltCommand::Pages(a) => pages(&a),
        BoltCommand::Check(a) => check(&a),
        BoltCommand::Info(a) => info(&a),
        BoltCommand::Traverse(a) => traverse(&a),
    };
    // Scripts asking for JSON get JSON on failure too.
    crate::out::json_errors(json, result)
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    let _ = write_hex(&mut s, bytes);
    s
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
        Ok(()) => out.finish()?,
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

fn pages(a: &QuietArgs) -> Result<ExitCode> {
    let src = quiet(a)?;
    let file = bolt_file(a, &src)?;
    let walked = walk(&file, WalkOptions::default());
    let rows = report::page_rows(&file, &walked.layout);
    let mut out = Out::new();
    let _ = if a.json {
        report::write_pages_json(&mut out, rows)
    } else {
        report::write_pages_text(&mut out, rows)
    };
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

fn check(a: &QuietArgs) -> Result<ExitCode> {
    let src = quiet(a)?;
    // A file that does not open as bbolt is a failed check (exit 1), not a
    // failure to run the check (exit 2), as `inspector check` has it.
    let rep = match BoltFile::open(&src) {
        Ok(file) => report::check_report(&walk(&file, WalkOptions::default()).layout),
        Err(e) => report::CheckReport {
            ok: false,
            problems: vec![format!(
                "{}: cannot open as a bbolt database: {e}",
                a.file.display()
            )],
            warnings: Vec::new(),
            more: 0,
        },
    };
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
    Ok(if rep.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn info(a: &QuietArgs) -> Result<ExitCode> {
    let src = quiet(a)?;
    let file = &bolt_file(a, &src)?;
    let metas = report::meta_reports(file);
    let freelist = report::FreelistReport::from(freelist_info(file));
    let mut out = Out::new();
    if a.json {
        let v = serde_json::json!({
            "file_size": file.len(),
            "page_size": file.page_size(),
            "current_meta": file.current_index(),
            "txid": file.meta().txid,
            "metas": metas,
            "freelist": freelist,
        });
        outln!(out, "{}", serde_json::to_string_pretty(&v)?);
        out.finish()?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        out,
        "file_size={} page_size={}",
        file.len(),
        file.page_size()
    );
    for m in &metas {
        match &m.fault {
            Some(f) => outln!(out, "meta{}: INVALID: {f}", m.index),
            None => outln!(
                out,
                "meta{}: root={} freelist={} hwm={} txid={} checksum={}",
                m.index,
                m.root.unwrap_or(0),
                m.freelist
                    .map_or_else(|| "none".to_string(), |f| f.to_string()),
                m.hwm.unwrap_or(0),
                m.txid.unwrap_or(0),
                m.checksum.as_deref().unwrap_or("")
            ),
        }
    }
    outln!(
        out,
        "current=meta{} txid={}",
        file.current_index(),
        file.meta().txid
    );
    match freelist {
        report::FreelistReport::NotStored => {
            outln!(
                out,
                "freelist: not stored (NoFreelistSync); free pages are the unreachable ones"
            )
        }
        report::FreelistReport::Stored {
            page,
            overflow,
            ids,
            encoding,
        } => outln!(
            out,
            "freelist: page={page} overflow={overflow} ids={ids} encoding={encoding}"
        ),
        report::FreelistReport::Unreadable { page } => {
            outln!(out, "freelist: page={page} unreadable")
        }
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

fn traverse(a: &TraverseArgs) -> Result<ExitCode> {
    use mapwise_native::map::Advice;
    use mapwise_native::residency;
    let advice = Advice::from_name(&a.advice).with_context(|| {
        format!(
            "unknown advice {:?} (normal, random, sequential, willneed)",
            a.advice
        )
    })?;
    let size = std::fs::metadata(&a.file)
        .with_context(|| a.file.display().to_string())?
        .len();
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
    let db = Db::open(&a.file, &opts)?;
    let opened = start.elapsed();
    let (mut keys, mut value_bytes, mut x) = (0u64, 0u64, 0u8);
    {
        let tx = db.begin()?;
        let bucket = tx
            .bucket_path(&path)
            .with_context(|| format!("bucket {:?}", a.bucket))?;
        let mut c = bucket.cursor();
        let mut item = c.first()?;
        while let Some(it) = item {
            keys += 1;
            value_bytes += it.value.len() as u64;
            if a.touch {
                x = it.value.iter().fold(x, |acc, b| acc ^ b);
            }
            item = c.next()?;
        }
    }
    let took = start.elapsed();
    drop(db);
    let scan = took - opened;
    let mut out = Out::new();
    if a.json {
        let v = serde_json::json!({
            "file_bytes": size, "populate": a.populate, "cold": a.cold, "touch": a.touch,
            "mlock": a.mlock, "advice": advice.name(), "open_s": opened.as_secs_f64(),
            "traverse_s": scan.as_secs_f64(), "took_s": took.as_secs_f64(), "keys": keys,
            "value_bytes": value_bytes,
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
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
