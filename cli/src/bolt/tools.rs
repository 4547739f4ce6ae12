//! `mapwise bolt stats` and `mapwise bolt compact`: bbolt's
//! `cmd/bbolt/command/command_stats.go` and `command_compact.go`.

use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use mapwise_native::engine::bolt::{BucketStats, Options};

use super::kv::open_read;
use super::{engine_error, lock_timeout};
use crate::out::Out;

/// `stats FILE [PREFIX]`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The bbolt file.
    file: PathBuf,
    /// Count only the top-level buckets whose names start with these
    /// bytes (bbolt's optional second argument); all when absent.
    prefix: Option<std::ffi::OsString>,
    /// Seconds to wait for the shared file lock; 0 waits forever.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// Print JSON: `buckets` (top-level buckets counted) and bbolt's
    /// `BucketStats` fields in snake case.
    #[arg(long)]
    pub json: bool,
}

/// `compact -o DST SRC`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The compacted copy to create (bbolt `-o`, `--output`). It must not
    /// exist or be empty: bbolt would open an existing database there and
    /// merge into it, which is never what a compaction wants.
    #[arg(short = 'o', long = "output", value_name = "DST")]
    output: PathBuf,
    /// The database to compact (opened read-only, left as it is).
    src: PathBuf,
    /// Commit the copy every this many bytes of keys and values (bbolt
    /// `--tx-max-size`, default 65536; 0 = one transaction).
    #[arg(long, default_value_t = 65536)]
    tx_max_size: u64,
    /// Do not fdatasync the copy's commits (bbolt `--no-sync`).
    #[arg(long)]
    no_sync: bool,
    /// Page size of the copy in bytes; 0 = the OS page size, as bbolt's
    /// `compact` (which does not keep the source's).
    #[arg(long, default_value_t = 0)]
    page_size: u32,
    /// Seconds to wait for the source's shared lock; 0 waits forever.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// Print JSON: `{"src_bytes", "dst_bytes", "gain"}`.
    #[arg(long)]
    pub json: bool,
}

/// Go's `int(float32(part) * 100.0 / float32(whole))`, 0 when `whole`
/// is 0 (bbolt's percentages are computed in float32 and truncated).
#[expect(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
fn percent(part: u64, whole: u64) -> i64 {
    if whole == 0 {
        return 0;
    }
    (part as f32 * 100.0 / whole as f32) as i64
}

/// `stats`: the aggregate of bbolt's `Bucket.Stats` over the top-level
/// buckets (matching PREFIX), in bbolt's block: page counts, tree
/// statistics, bytes allocated and used, bucket counts. The root
/// bucket's own tree (the page(s) listing the top-level buckets) is not
/// counted, as in bbolt.
pub fn stats(a: &StatsArgs) -> Result<ExitCode> {
    let prefix = a.prefix.as_ref().map_or(&[][..], |p| p.as_bytes());
    let db = open_read(&a.file, a.timeout)?;
    let tx = db.begin().map_err(engine_error)?;
    let mut s = BucketStats::default();
    let mut count = 0u64;
    tx.for_each(|name, b| {
        if name.starts_with(prefix) {
            s.add(&b.stats()?);
            count += 1;
        }
        Ok::<(), mapwise_native::engine::bolt::Error>(())
    })
    .map_err(engine_error)?;
    let mut out = Out::new();
    if a.json {
        let v = serde_json::json!({
            "buckets": count,
            "branch_page_n": s.branch_page_n,
            "branch_overflow_n": s.branch_overflow_n,
            "leaf_page_n": s.leaf_page_n,
            "leaf_overflow_n": s.leaf_overflow_n,
            "key_n": s.key_n,
            "depth": s.depth,
            "branch_alloc": s.branch_alloc,
            "branch_inuse": s.branch_inuse,
            "leaf_alloc": s.leaf_alloc,
            "leaf_inuse": s.leaf_inuse,
            "bucket_n": s.bucket_n,
            "inline_bucket_n": s.inline_bucket_n,
            "inline_bucket_inuse": s.inline_bucket_inuse,
        });
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&v)?);
        out.finish()?;
        return Ok(ExitCode::SUCCESS);
    }
    let o = &mut out;
    let _ = writeln!(o, "Aggregate statistics for {count} buckets\n");
    let _ = writeln!(o, "Page count statistics");
    let _ = writeln!(o, "\tNumber of logical branch pages: {}", s.branch_page_n);
    let _ = writeln!(o, "\tNumber of physical branch overflow pages: {}", s.branch_overflow_n);
    let _ = writeln!(o, "\tNumber of logical leaf pages: {}", s.leaf_page_n);
    let _ = writeln!(o, "\tNumber of physical leaf overflow pages: {}", s.leaf_overflow_n);
    let _ = writeln!(o, "Tree statistics");
    let _ = writeln!(o, "\tNumber of keys/value pairs: {}", s.key_n);
    let _ = writeln!(o, "\tNumber of levels in B+tree: {}", s.depth);
    let _ = writeln!(o, "Page size utilization");
    let _ = writeln!(o, "\tBytes allocated for physical branch pages: {}", s.branch_alloc);
    let _ = writeln!(
        o,
        "\tBytes actually used for branch data: {} ({}%)",
        s.branch_inuse,
        percent(s.branch_inuse, s.branch_alloc)
    );
    let _ = writeln!(o, "\tBytes allocated for physical leaf pages: {}", s.leaf_alloc);
    let _ = writeln!(
        o,
        "\tBytes actually used for leaf data: {} ({}%)",
        s.leaf_inuse,
        percent(s.leaf_inuse, s.leaf_alloc)
    );
    let _ = writeln!(o, "Bucket statistics");
    let _ = writeln!(o, "\tTotal number of buckets: {}", s.bucket_n);
    // "number on inlined" is bbolt's wording.
    let _ = writeln!(
        o,
        "\tTotal number on inlined buckets: {} ({}%)",
        s.inline_bucket_n,
        percent(s.inline_bucket_n, s.bucket_n)
    );
    let _ = writeln!(
        o,
        "\tBytes used for inlined buckets: {} ({}%)",
        s.inline_bucket_inuse,
        percent(s.inline_bucket_inuse, s.leaf_inuse)
    );
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// `compact`: copy every bucket, sequence and key of SRC into a new file
/// DST with full pages (bbolt `Compact`), then print
/// `SRC_BYTES -> DST_BYTES bytes (gain=X.XXx)`, the sizes of the two
/// files (DST's as grown by bbolt's rule, so it need not be smaller).
pub fn compact(a: &CompactArgs) -> Result<ExitCode> {
    let meta = std::fs::metadata(&a.src).with_context(|| a.src.display().to_string())?;
    let initial = meta.len();
    match std::fs::metadata(&a.output) {
        Ok(m) if m.len() > 0 => bail!(
            "{}: already exists and is not empty; compact writes a new file",
            a.output.display()
        ),
        _ => {}
    }
    let src = open_read(&a.src, a.timeout)?;
    let opts = Options {
        no_sync: a.no_sync,
        page_size: a.page_size,
        file_mode: meta.permissions().mode() & 0o777,
        timeout: lock_timeout(a.timeout),
        ..Options::read_write()
    };
    let existed = a.output.exists();
    let (_, size) = match src.compact(&a.output, &opts, a.tx_max_size) {
        Ok(sizes) => sizes,
        Err(e) => {
            // A half-written copy would pass for a finished one (it is a
            // valid bbolt file holding what was copied so far): remove
            // what this run created. (An existing output was empty.)
            if existed {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&a.output)
                    .and_then(|f| f.set_len(0));
            } else {
                let _ = std::fs::remove_file(&a.output);
            }
            return Err(engine_error(e))
                .with_context(|| format!("compact into {}", a.output.display()));
        }
    };
    if size == 0 {
        bail!("zero db size");
    }
    #[expect(clippy::cast_precision_loss)]
    let gain = initial as f64 / size as f64;
    let mut out = Out::new();
    if a.json {
        let v = serde_json::json!({ "src_bytes": initial, "dst_bytes": size, "gain": gain });
        let _ = writeln!(out, "{v}");
    } else {
        let _ = writeln!(out, "{initial} -> {size} bytes (gain={gain:.2}x)");
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
