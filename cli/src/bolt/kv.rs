//! `mapwise bolt buckets|keys|get|put|del`: bbolt's `buckets`, `keys`
//! and `get` (`cmd/bbolt/command/command_{buckets,keys,get}.go`), and
//! `put`/`del`, which bbolt's CLI lacks, in the same argument style.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use mapwise_native::engine::bolt::{Db, Options, WriteTx, check_summary};
use mapwise_native::os::io::QuietSource;

use super::bytefmt::{self, Format, Parse};
use super::{Problem, engine_error, lock_timeout};
use crate::out::{Hinted, Out};
use mapwise_view::fmt::hex;

/// Where the bucket names come from and how long to wait for the lock:
/// the arguments every key/value command shares.
#[derive(Debug, Args)]
pub struct Common {
    /// The bbolt file.
    file: PathBuf,
    /// How bucket names given as arguments are read: as given
    /// (`ascii-encoded`, bbolt's only way) or `hex` (for binary names).
    #[arg(long, value_enum, default_value = "ascii-encoded")]
    bucket_format: Parse,
    /// Seconds to wait for the file lock (shared for reads, exclusive for
    /// `put`/`del`); 0 waits forever (bbolt's `Timeout`).
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `buckets FILE`.
#[derive(Debug, Args)]
pub struct BucketsArgs {
    /// The bbolt file.
    file: PathBuf,
    /// How names are printed; bbolt prints the raw bytes (`bytes`).
    #[arg(long, short = 'f', value_enum, default_value = "bytes")]
    format: Format,
    /// Seconds to wait for the shared file lock; 0 waits forever.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
    /// Print JSON Lines (`{"name": HEX, "text": FORMATTED, "sequence": N}`).
    #[arg(long)]
    pub json: bool,
}

/// `keys FILE BUCKET…`.
#[derive(Debug, Args)]
pub struct KeysArgs {
    #[command(flatten)]
    pub common: Common,
    /// The bucket path: a top-level bucket, then nested bucket names.
    #[arg(required = true, value_name = "BUCKET")]
    buckets: Vec<OsString>,
    /// How keys are printed (bbolt `--format`).
    #[arg(long, short = 'f', value_enum, default_value = "auto")]
    format: Format,
}

/// `get FILE BUCKET… KEY`.
#[derive(Debug, Args)]
pub struct GetArgs {
    #[command(flatten)]
    pub common: Common,
    /// The bucket path, then the key.
    #[arg(required = true, value_name = "ARG")]
    args: Vec<OsString>,
    /// How the KEY argument is read (bbolt `--parse-format`).
    #[arg(long, value_enum, default_value = "ascii-encoded")]
    parse_format: Parse,
    /// How the value is printed (bbolt `--format`).
    #[arg(long, short = 'f', value_enum, default_value = "auto")]
    format: Format,
}

/// `put FILE BUCKET… KEY VALUE`.
#[derive(Debug, Args)]
pub struct PutArgs {
    #[command(flatten)]
    pub common: Common,
    /// The bucket path, then the key, then the value.
    #[arg(required = true, value_name = "ARG")]
    args: Vec<OsString>,
    /// How KEY and VALUE are read (as `get --parse-format`).
    #[arg(long, value_enum, default_value = "ascii-encoded")]
    parse_format: Parse,
    /// Create the buckets on the path that do not exist (bbolt
    /// `CreateBucketIfNotExists`); without it a missing bucket is an error.
    #[arg(long)]
    create_buckets: bool,
}

/// `del FILE BUCKET… KEY`.
#[derive(Debug, Args)]
pub struct DelArgs {
    #[command(flatten)]
    pub common: Common,
    /// The bucket path, then the key.
    #[arg(required = true, value_name = "ARG")]
    args: Vec<OsString>,
    /// How KEY is read (as `get --parse-format`).
    #[arg(long, value_enum, default_value = "ascii-encoded")]
    parse_format: Parse,
}

/// Open read-only as bbolt's CLI does: a shared lock, a mapping with
/// `MADV_RANDOM`.
pub fn open_read(file: &Path, timeout: f64) -> Result<Db> {
    let opts = Options { timeout: lock_timeout(timeout), ..Options::default() };
    Db::open(file, &opts).map_err(engine_error)
}

/// Open read-write: an exclusive lock. The file must exist and be a
/// bbolt file (a read-write open would otherwise create or initialise
/// it), and a file written without a freelist (`NoFreelistSync`, as
/// etcd runs) stays so: the open does not add one.
fn open_write(file: &Path, timeout: f64) -> Result<Db> {
    let src = QuietSource::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    // A file that does not parse is left to `Db::open`, which names the
    // fault as bbolt does (version mismatch, checksum, page size…) and,
    // as bbolt's `Open`, initialises a file of 0 bytes (a database whose
    // creator died before its first write).
    let has_freelist =
        mapwise_core::bolt::BoltFile::open(&src).map_or(true, |f| f.meta().has_freelist());
    drop(src);
    let opts = Options {
        timeout: lock_timeout(timeout),
        no_freelist_sync: !has_freelist,
        ..Options::read_write()
    };
    Db::open(file, &opts).map_err(engine_error)
}

/// Refuse to write to a file that fails bbolt's `Tx.Check` on the
/// snapshot the write transaction began with. Neither bbolt nor our
/// engine walks the whole tree at open, so a freelist that lists a live
/// page opens fine, and the next commit would reuse that page and
/// destroy what it holds; `put` and `del` are one-shot commands, so they
/// pay for the walk (about the cost of `mapwise bolt check`) to leave a
/// damaged file exactly as it was.
fn refuse_damaged(tx: &WriteTx<'_>, file: &Path) -> Result<()> {
    let Some(summary) = check_summary(&tx.check()) else {
        return Ok(());
    };
    Err(anyhow::Error::new(Problem(format!(
        "{}: the file fails check ({summary}); nothing written \
         (`mapwise bolt check` lists them)",
        file.display(),
    ))))
}

/// Bucket names as Go's `%q` prints them, space-separated (for errors).
fn show_path(path: &[Vec<u8>]) -> String {
    path.iter().map(|p| bytefmt::go_quote(p)).collect::<Vec<_>>().join(" ")
}

fn parse_path(args: &[OsString], how: Parse) -> Result<Vec<Vec<u8>>> {
    args.iter().map(|a| bytefmt::parse(a, how, "bucket name")).collect()
}

/// Split `BUCKET… KEY [VALUE]`: `tail` trailing arguments after the
/// bucket path.
fn split_args<'a>(
    args: &'a [OsString],
    tail: usize,
    usage: &str,
) -> Result<(&'a [OsString], &'a [OsString])> {
    if args.len() < tail {
        bail!("usage: {usage}");
    }
    let (buckets, rest) = args.split_at(args.len() - tail);
    if buckets.is_empty() {
        // bbolt `ErrBucketRequired`.
        bail!("bucket required (usage: {usage})");
    }
    Ok((buckets, rest))
}

fn key_arg(arg: &OsString, how: Parse) -> Result<Vec<u8>> {
    let key = bytefmt::parse(arg, how, "key")?;
    if key.is_empty() {
        // bbolt `ErrKeyRequired`.
        bail!("key required");
    }
    Ok(key)
}

fn bucket_not_found(path: &[Vec<u8>]) -> Problem {
    Problem(format!("bucket not found: {}", show_path(path)))
}

/// The bucket at `path` of a read transaction, or bbolt's errors. `args`
/// are the names as given and `how` how they were read: a path not found
/// that exists when the names are read as hex gets a hint to say
/// `--bucket-format hex` ([`hex_hint`]).
fn read_bucket<'t>(
    tx: &'t mapwise_native::engine::bolt::Tx<'_>,
    path: &[Vec<u8>],
    args: &[OsString],
    how: Parse,
) -> Result<mapwise_native::engine::bolt::Bucket<'t>> {
    // bbolt's `Bucket.Bucket` returns nil for a name that holds a value,
    // so its CLI says "bucket not found" for both (`findLastBucket`).
    tx.bucket_path(path).map_err(|e| match e {
        mapwise_native::engine::bolt::Error::Format(
            mapwise_core::Error::BucketNotFound | mapwise_core::Error::IncompatibleValue,
        ) => {
            let hint = hex_hint(args, how, "the bucket path", "--bucket-format", |p| {
                tx.bucket_path(p).is_ok()
            });
            with_hint(bucket_not_found(path), hint)
        }
        e => engine_error(e).context(format!("bucket {}", show_path(path))),
    })
}

/// bbolt's key-not-found message (1.3.7 and later: `cmd/bbolt/main.go`
/// `getCommand.Run`, later `command/command_get.go` `getFunc`, which
/// prefix it with "Error ").
fn key_not_found(key: &[u8]) -> Problem {
    Problem(format!("key not found for key: {} hex: \"{}\"", bytefmt::go_quote(key), hex(key)))
}

/// For arguments read as text (`how` = ascii-encoded, the default) that
/// found nothing: when every one is hex ([`bytefmt::hex_reading`]) and
/// `exists` says the bytes they spell are there, the advice to read
/// them with `flag hex`. `what` names them ("the key"). A wrong guess
/// costs one more lookup and prints nothing.
fn hex_hint(
    args: &[OsString],
    how: Parse,
    what: &str,
    flag: &str,
    exists: impl FnOnce(&[Vec<u8>]) -> bool,
) -> Option<String> {
    if how != Parse::AsciiEncoded {
        return None;
    }
    let readings: Vec<_> = args.iter().map(bytefmt::hex_reading).collect::<Option<_>>()?;
    let bytes: Vec<Vec<u8>> = readings.iter().map(|(b, ..)| b.clone()).collect();
    if !exists(&bytes) {
        return None;
    }
    let digits: Vec<&str> = readings.iter().map(|(_, d, _)| *d).collect();
    let digits = digits.join(" ");
    Some(if readings.iter().any(|(.., prefixed)| *prefixed) {
        format!(
            "{what} whose hex is {digits} exists: add {flag} hex and drop the 0x \
             (bbolt's hex reading refuses it)"
        )
    } else {
        format!("{what} whose hex is {digits} exists: add {flag} hex")
    })
}

/// `problem` with `hint`, when there is one.
fn with_hint(problem: Problem, hint: Option<String>) -> anyhow::Error {
    match hint {
        Some(hint) => anyhow::Error::new(Hinted { problem, hint }),
        None => anyhow::Error::new(problem),
    }
}

/// `buckets`: every top-level bucket name, one per line (bbolt
/// `tx.ForEach`, `string(name)`).
pub fn buckets(a: &BucketsArgs) -> Result<ExitCode> {
    let db = open_read(&a.file, a.timeout)?;
    let tx = db.begin().map_err(engine_error)?;
    let mut out = Out::new();
    tx.for_each(|name, b| {
        if a.json {
            let v = serde_json::json!({
                "name": hex(name),
                "text": bytefmt::format_text(name, a.format),
                "sequence": b.sequence(),
            });
            let _ = writeln!(out, "{v}");
        } else {
            out.write_bytes(&bytefmt::format(name, a.format));
            out.write_bytes(b"\n");
        }
        Ok::<(), mapwise_native::engine::bolt::Error>(())
    })
    .map_err(engine_error)?;
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// `keys`: every key of the bucket, sub-bucket names included, in key
/// order, one per line (bbolt `Bucket.ForEach`).
pub fn keys(a: &KeysArgs) -> Result<ExitCode> {
    let path = parse_path(&a.buckets, a.common.bucket_format)?;
    let db = open_read(&a.common.file, a.common.timeout)?;
    let tx = db.begin().map_err(engine_error)?;
    let b = read_bucket(&tx, &path, &a.buckets, a.common.bucket_format)?;
    let mut out = Out::new();
    let mut c = b.cursor();
    let mut item = c.first().map_err(|e| engine_error(e.into()))?;
    while let Some(it) = item {
        if a.common.json {
            let v = serde_json::json!({
                "key": hex(&it.key),
                "text": bytefmt::format_text(&it.key, a.format),
                "bucket": it.is_bucket(),
            });
            let _ = writeln!(out, "{v}");
        } else {
            out.write_bytes(&bytefmt::format(&it.key, a.format));
            out.write_bytes(b"\n");
        }
        if out.error.is_some() {
            break;
        }
        item = c.next().map_err(|e| engine_error(e.into()))?;
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// `get`: the value of one key (bbolt `Bucket.Get`: a sub-bucket's name
/// has no value, so it is "key not found" too).
pub fn get(a: &GetArgs) -> Result<ExitCode> {
    let (buckets, rest) = split_args(&a.args, 1, "get FILE BUCKET… KEY")?;
    let path = parse_path(buckets, a.common.bucket_format)?;
    let key = key_arg(&rest[0], a.parse_format)?;
    let db = open_read(&a.common.file, a.common.timeout)?;
    let tx = db.begin().map_err(engine_error)?;
    let b = read_bucket(&tx, &path, buckets, a.common.bucket_format)?;
    let Some(value) = b.get(&key).map_err(|e| engine_error(e.into()))? else {
        // A sub-bucket's name has no value either: no hint for it.
        let hint = hex_hint(&rest[..1], a.parse_format, "the key", "--parse-format", |k| {
            matches!(b.get(&k[0]), Ok(Some(_)))
        });
        return Err(with_hint(key_not_found(&key), hint));
    };
    let mut out = Out::new();
    if a.common.json {
        let v = serde_json::json!({
            "key": hex(&key),
            "value": hex(&value),
            "text": bytefmt::format_text(&value, a.format),
        });
        let _ = writeln!(out, "{v}");
    } else {
        out.write_bytes(&bytefmt::format(&value, a.format));
        out.write_bytes(b"\n");
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// Open `path` in `tx`, creating missing buckets when `create` is set.
fn write_bucket<'t>(
    tx: &'t mut WriteTx<'_>,
    path: &[Vec<u8>],
    create: bool,
) -> Result<mapwise_native::engine::bolt::BucketMut<'t>> {
    if create {
        for i in 0..path.len() {
            if i == 0 {
                tx.create_bucket_if_not_exists(&path[0]).map_err(|e| {
                    engine_error(e).context(format!("bucket {}", show_path(&path[..1])))
                })?;
            } else {
                tx.bucket_path(&path[..i])
                    .and_then(|mut b| b.create_bucket_if_not_exists(&path[i]).map(drop))
                    .map_err(|e| {
                        engine_error(e).context(format!("bucket {}", show_path(&path[..=i])))
                    })?;
            }
        }
    }
    tx.bucket_path(path).map_err(|e| match e {
        mapwise_native::engine::bolt::Error::BucketNotFound
        | mapwise_native::engine::bolt::Error::IncompatibleValue => bucket_not_found(path).into(),
        e => engine_error(e).context(format!("bucket {}", show_path(path))),
    })
}

/// What a `put` or `del` did, for `--json`.
fn write_report(out: &mut Out, txid: u64, path: &[Vec<u8>], key: &[u8], value: Option<&[u8]>) {
    let mut v = serde_json::json!({
        "txid": txid,
        "bucket": path.iter().map(|p| hex(p)).collect::<Vec<_>>(),
        "key": hex(key),
    });
    if let Some(value) = value {
        v["value"] = hex(value).into();
    }
    let _ = writeln!(out, "{v}");
}

/// `put`: set one key in one write transaction, committed (synced)
/// before it returns. Prints nothing (text) or what it wrote (JSON).
pub fn put(a: &PutArgs) -> Result<ExitCode> {
    let (buckets, rest) = split_args(&a.args, 2, "put FILE BUCKET… KEY VALUE")?;
    let path = parse_path(buckets, a.common.bucket_format)?;
    let key = key_arg(&rest[0], a.parse_format)?;
    let value = bytefmt::parse(&rest[1], a.parse_format, "value")?;
    let db = open_write(&a.common.file, a.common.timeout)?;
    let txid = db.update(|tx| -> Result<u64> {
        let txid = tx.id();
        refuse_damaged(tx, &a.common.file)?;
        let mut b = write_bucket(tx, &path, a.create_buckets)?;
        b.put(&key, &value).map_err(engine_error)?;
        Ok(txid)
    })?;
    db.close().map_err(engine_error)?;
    let mut out = Out::new();
    if a.common.json {
        write_report(&mut out, txid, &path, &key, Some(&value));
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// `del`: remove one key in one write transaction, committed before it
/// returns. A key that is not there is bbolt's "key not found" (exit 1,
/// nothing written), where bbolt's `Bucket.Delete` would ignore it; a
/// sub-bucket's name is "incompatible value".
pub fn del(a: &DelArgs) -> Result<ExitCode> {
    let (buckets, rest) = split_args(&a.args, 1, "del FILE BUCKET… KEY")?;
    let path = parse_path(buckets, a.common.bucket_format)?;
    let key = key_arg(&rest[0], a.parse_format)?;
    let db = open_write(&a.common.file, a.common.timeout)?;
    let txid = db.update(|tx| -> Result<u64> {
        let txid = tx.id();
        refuse_damaged(tx, &a.common.file)?;
        let mut b = write_bucket(tx, &path, false)?;
        let present = b.get(&key).map_err(engine_error)?.is_some();
        // `delete` of a sub-bucket's name fails with "incompatible value";
        // of an absent key it does nothing, and the update rolls back.
        b.delete(&key).map_err(engine_error)?;
        if !present {
            return Err(key_not_found(&key).into());
        }
        Ok(txid)
    })?;
    db.close().map_err(engine_error)?;
    let mut out = Out::new();
    if a.common.json {
        write_report(&mut out, txid, &path, &key, None);
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
