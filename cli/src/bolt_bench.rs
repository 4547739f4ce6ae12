//! `mapwise bolt bench`: the bbolt peer's seeded write-then-read
//! workload (`peers/bolt/README.md`, "bench workload"), replayed
//! byte for byte in our engine, with the same printed lines and JSON keys
//! so the two can be compared line by line.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use mapwise_core::bolt::BUCKET_LEAF_FLAG;
use mapwise_native::engine::bolt::{Bucket, CursorOptions, Db, MAX_VALUE_SIZE, Options, Tx};
use mapwise_native::engine::rng::SplitMix64;
use mapwise_native::os::residency;

/// The bucket every put goes to (or below, in `-nest` modes).
const BUCKET: &[u8] = b"bench";
/// Separates the read-order stream from the key stream.
const SHUFFLE_SEED_XOR: u64 = 0x5851_F42D_4C95_7F2D;
/// bbolt's `MaxKeySize`.
const MAX_KEY_SIZE: usize = 32768;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The file to create (kept afterwards).
    file: PathBuf,
    /// Key stream and layout: seq, rnd, seq-nest, rnd-nest (`-nest`: one
    /// sub-bucket of `bench` per batch).
    #[arg(long, default_value = "seq")]
    write_mode: String,
    /// seq: cursor over every key; rnd: `Get` of every put's key in
    /// seeded shuffled order.
    #[arg(long, default_value = "seq")]
    read_mode: String,
    /// Number of puts.
    #[arg(long, default_value_t = 1000)]
    count: u64,
    /// Puts per write transaction (0 = count: one transaction).
    #[arg(long, default_value_t = 0)]
    batch_size: u64,
    /// Key size in bytes (also the sub-bucket name size in -nest modes).
    #[arg(long, default_value_t = 8)]
    key_size: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 32)]
    value_size: usize,
    /// `FillPercent` of the written buckets, in [0.1, 1.0].
    #[arg(long, default_value_t = 0.5)]
    fill_percent: f64,
    /// Seed of the rnd key stream and of the rnd read order.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// No fdatasync per commit (bbolt `NoSync`); one untimed fdatasync
    /// after the write phase.
    #[arg(long)]
    no_sync: bool,
    /// Reopen for the read phase with MAP_POPULATE.
    #[arg(long)]
    populate: bool,
    /// Evict the file from the page cache before the read phase.
    #[arg(long)]
    cold: bool,
    /// Repeat whole read passes until this many seconds have passed
    /// (upstream uses 1); 0 = one pass.
    #[arg(long, default_value_t = 0.0)]
    read_min_s: f64,
    /// Page size of the new file in bytes (0 = the OS page size).
    #[arg(long, default_value_t = 0)]
    page_size: u32,
    /// After timing, check every key's value against the workload
    /// (untimed).
    #[arg(long)]
    verify: bool,
    /// One JSON object on stdout; the text lines go to stderr.
    #[arg(long)]
    json: bool,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    force: bool,
    /// seq reads: the cursor's read-ahead window, announcing up to this
    /// many bytes of leaf pages ahead with madvise(MADV_WILLNEED) once a
    /// scan has moved through 3 leaves and 32 keys (ours only; default 4MiB; 0 = off,
    /// as bbolt).
    #[arg(long, value_name = "BYTES", default_value = "4MiB", value_parser = parse_bytes)]
    prefetch: u64,
}

impl BenchArgs {
    /// `--json` was given (errors are then printed as JSON).
    pub fn json(&self) -> bool {
        self.json
    }
}

/// `4096`, `256KiB`, `8MiB`, `1GiB` (binary units, whole numbers).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if unit.starts_with(['.', ',']) {
        return Err(format!("bad size {s:?}: whole numbers only (e.g. 1536KiB for 1.5MiB)"));
    }
    let n: u64 = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    let mult = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        u => return Err(format!("unknown unit {u:?} (B, KiB, MiB, GiB)")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("size {s:?} too large"))
}

/// The generated workload: the key stream and which item each put uses.
struct Work {
    nest: bool,
    count: usize,
    batch: usize,
    key: usize,
    value: usize,
    items: Vec<u8>,
}

impl Work {
    fn new(a: &BenchArgs, count: usize, batch: usize) -> Result<Work> {
        let nest = a.write_mode.ends_with("-nest");
        let k = a.key_size;
        let mut n = count;
        if nest {
            n += count.div_ceil(batch);
        }
        let total = n
            .checked_mul(k)
            .filter(|&t| t as u64 <= 1 << 36)
            .with_context(|| format!("key stream too large ({n} items of {k} bytes)"))?;
        let mut items = vec![0u8; total];
        if a.write_mode.starts_with("seq") {
            let width = k.min(8);
            ensure!(
                width == 8 || (n as u64) < 1u64 << (8 * width),
                "--key-size {k} too small for {n} distinct sequential keys"
            );
            for (i, it) in items.chunks_exact_mut(k).enumerate() {
                let be = (i as u64 + 1).to_be_bytes();
                it[..width].copy_from_slice(&be[8 - width..]);
            }
        } else {
            let mut rng = SplitMix64::new(a.seed);
            for it in items.chunks_exact_mut(k) {
                for chunk in it.chunks_mut(8) {
                    let be = rng.next_u64().to_be_bytes();
                    chunk.copy_from_slice(&be[..chunk.len()]);
                }
            }
        }
        Ok(Work { nest, count, batch, key: k, value: a.value_size, items })
    }

    fn item(&self, i: usize) -> &[u8] {
        &self.items[i * self.key..(i + 1) * self.key]
    }

    /// Stream item used as the key of put `p`.
    fn key_index(&self, p: usize) -> usize {
        if self.nest {
            let b = p / self.batch;
            b * (self.batch + 1) + 1 + p % self.batch
        } else {
            p
        }
    }

    /// Stream item naming the sub-bucket of batch `b` (`-nest` modes).
    fn bucket_index(&self, b: usize) -> usize {
        b * (self.batch + 1)
    }

    fn batches(&self) -> usize {
        self.count.div_ceil(self.batch)
    }
}

/// The value of put `p`: big-endian `p + 1` repeated, the last copy cut.
fn fill_value(v: &mut [u8], p: usize) {
    let be = (p as u64 + 1).to_be_bytes();
    for chunk in v.chunks_mut(8) {
        chunk.copy_from_slice(&be[..chunk.len()]);
    }
}

/// Put numbers `0..n` shuffled by Fisher–Yates driven by splitmix64
/// seeded with `seed ^ SHUFFLE_SEED_XOR`.
fn read_order(n: usize, seed: u64) -> Vec<u32> {
    // n < 2^31 (checked by `run`).
    let mut order: Vec<u32> = (0..u32::try_from(n).unwrap_or(u32::MAX)).collect();
    let mut rng = SplitMix64::new(seed ^ SHUFFLE_SEED_XOR);
    for i in (1..n).rev() {
        // The remainder is at most i, a usize.
        let j = usize::try_from(rng.next_u64() % (i as u64 + 1)).unwrap_or(0);
        order.swap(i, j);
    }
    order
}

fn write_phase(path: &Path, a: &BenchArgs, w: &Work) -> Result<(Duration, u32)> {
    let opts = Options {
        page_size: a.page_size,
        no_sync: a.no_sync,
        timeout: Some(Duration::from_secs(5)),
        file_mode: 0o644,
        ..Options::read_write()
    };
    let db = Db::open(path, &opts).with_context(|| format!("cannot create {}", path.display()))?;
    let mut v = vec![0u8; w.value];
    let start = Instant::now();
    for b in 0..w.batches() {
        let first = b * w.batch;
        let n = (w.count - first).min(w.batch);
        db.update(|tx| -> Result<()> {
            let mut top = tx.create_bucket_if_not_exists(BUCKET)?;
            top.set_fill_percent(a.fill_percent);
            let mut sub;
            let dst = if w.nest {
                sub = top.create_bucket_if_not_exists(w.item(w.bucket_index(b)))?;
                sub.set_fill_percent(a.fill_percent);
                &mut sub
            } else {
                &mut top
            };
            for p in first..first + n {
                fill_value(&mut v, p);
                dst.put(w.item(w.key_index(p)), &v)?;
            }
            Ok(())
        })
        .with_context(|| format!("write: batch {b}"))?;
    }
    let took = start.elapsed();
    if a.no_sync {
        db.sync()?;
    }
    let ps = db.page_size();
    db.close()?;
    Ok((took, ps))
}

/// One read pass; returns the number of values read.
fn read_pass(tx: &Tx<'_>, w: &Work, order: Option<&[u32]>, opts: &CursorOptions) -> Result<u64> {
    let top = tx.bucket(BUCKET)?.with_context(|| format!("bucket {:?} not found", "bench"))?;
    let mut n = 0u64;
    let Some(order) = order else {
        // One leaf scan per bucket: `bench` itself, or each sub-bucket.
        let mut scan_leaves = |b: &Bucket<'_>, name: Option<&[u8]>| -> Result<()> {
            let mut bad = None;
            tx.cursor_with(b, opts).scan(None, |k, v, flags| {
                if flags & BUCKET_LEAF_FLAG != 0 || v.len() != w.value {
                    bad = Some(format!(
                        "{}key {k:02x?}: {} ({} bytes), expected a value of {}",
                        name.map_or_else(String::new, |n| format!("bucket {n:02x?} ")),
                        if flags & BUCKET_LEAF_FLAG != 0 { "a sub-bucket" } else { "a value" },
                        v.len(),
                        w.value
                    ));
                    return false;
                }
                n += 1;
                true
            })?;
            bad.map_or(Ok(()), |e| bail!(e))
        };
        if !w.nest {
            scan_leaves(&top, None)?;
            return Ok(n);
        }
        let mut c = top.cursor();
        let mut item = c.first()?;
        while let Some(it) = item {
            ensure!(it.is_bucket(), "unexpected plain key {:02x?} in \"bench\"", &*it.key);
            let sub = top
                .bucket(&it.key)?
                .with_context(|| format!("sub-bucket {:02x?} not found", &*it.key))?;
            scan_leaves(&sub, Some(&it.key))?;
            item = c.next()?;
        }
        return Ok(n);
    };
    let subs: Vec<Bucket<'_>> = if w.nest {
        (0..w.batches())
            .map(|b| {
                let name = w.item(w.bucket_index(b));
                top.bucket(name)?.with_context(|| format!("sub-bucket {name:02x?} not found"))
            })
            .collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    for &p in order {
        let p = p as usize;
        let b = if w.nest { &subs[p / w.batch] } else { &top };
        let k = w.item(w.key_index(p));
        match b.get(k)? {
            Some(v) if v.len() == w.value => n += 1,
            _ => bail!("put {p} key {k:02x?}: missing or bad value"),
        }
    }
    Ok(n)
}

/// `--verify`: every key holds the value of the last put that wrote it,
/// and the file holds no other keys.
fn verify(db: &Db, w: &Work) -> Result<()> {
    let mut last = std::collections::HashMap::with_capacity(w.count);
    for p in 0..w.count {
        let b = if w.nest { Some(w.bucket_index(p / w.batch)) } else { None };
        last.insert((b.map(|i| w.item(i)), w.item(w.key_index(p))), p);
    }
    let tx = db.begin()?;
    let top = tx.bucket(BUCKET)?.context("bucket \"bench\" not found")?;
    let mut want = vec![0u8; w.value];
    for (&(sub, k), &p) in &last {
        let b = match sub {
            Some(name) => {
                top.bucket(name)?.with_context(|| format!("sub-bucket {name:02x?} missing"))?
            }
            None => top.clone(),
        };
        fill_value(&mut want, p);
        let v = b.get(k)?;
        ensure!(
            v.as_deref() == Some(&want[..]),
            "key {k:02x?}: value {v:02x?}, want {want:02x?} (put {p})"
        );
    }
    let total = read_pass(&tx, w, None, &CursorOptions::default())?;
    ensure!(
        total == last.len() as u64,
        "file holds {total} keys, workload wrote {} distinct keys",
        last.len()
    );
    eprintln!("verify: OK ({} distinct keys, values match)", last.len());
    Ok(())
}

/// The `--json` object: the oracle's keys in the oracle's order, then
/// ours (`prefetch`).
#[derive(serde::Serialize)]
struct JsonOut<'a> {
    write_ops: u64,
    write_s: f64,
    read_ops: u64,
    read_s: f64,
    file_bytes: u64,
    page_size: u32,
    open_s: f64,
    read_passes: u64,
    write_mode: &'a str,
    read_mode: &'a str,
    count: u64,
    batch_size: usize,
    key_size: usize,
    value_size: usize,
    fill_percent: f64,
    seed: u64,
    no_sync: bool,
    populate: bool,
    cold: bool,
    prefetch: u64,
}

/// Runs `mapwise bolt bench`.
pub fn run(a: &BenchArgs) -> Result<ExitCode> {
    ensure!(
        matches!(a.write_mode.as_str(), "seq" | "rnd" | "seq-nest" | "rnd-nest"),
        "--write-mode must be seq, rnd, seq-nest or rnd-nest"
    );
    ensure!(matches!(a.read_mode.as_str(), "seq" | "rnd"), "--read-mode must be seq or rnd");
    ensure!((1..1 << 31).contains(&a.count), "--count must be in [1, 2^31)");
    ensure!((1..=MAX_KEY_SIZE).contains(&a.key_size), "--key-size must be in [1, {MAX_KEY_SIZE}]");
    ensure!(a.value_size <= MAX_VALUE_SIZE, "--value-size must be in [0, {MAX_VALUE_SIZE}]");
    ensure!((0.1..=1.0).contains(&a.fill_percent), "--fill-percent must be in [0.1, 1.0]");
    let count = usize::try_from(a.count).context("--count too large")?;
    let batch = if a.batch_size == 0 || a.batch_size > a.count {
        count
    } else {
        usize::try_from(a.batch_size).context("--batch-size too large")?
    };
    let path = &a.file;
    if path.symlink_metadata().is_ok() {
        ensure!(a.force, "{} exists (use --force)", path.display());
        std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    let w = Work::new(a, count, batch)?;
    let order = (a.read_mode == "rnd").then(|| read_order(count, a.seed));

    let (write_dur, page_size) = write_phase(path, a, &w)?;

    if a.cold {
        let f = std::fs::File::open(path).with_context(|| path.display().to_string())?;
        residency::evict(&f, 0, residency::TO_EOF).context("evict")?;
    }
    let ropts = Options {
        mmap_flags: if a.populate { libc::MAP_POPULATE } else { 0 },
        timeout: Some(Duration::from_secs(5)),
        ..Options::default()
    };
    let copts = CursorOptions { prefetch: a.prefetch, prefetch_end: None };
    let t0 = Instant::now();
    let db = Db::open(path, &ropts).context("reopen")?;
    let open_dur = t0.elapsed();
    let (mut read_ops, mut passes) = (0u64, 0u64);
    let (read_dur, per_pass) = {
        let tx = db.begin()?;
        let start = Instant::now();
        loop {
            let n = read_pass(&tx, &w, order.as_deref(), &copts).context("read")?;
            read_ops += n;
            passes += 1;
            if start.elapsed().as_secs_f64() >= a.read_min_s {
                break (start.elapsed(), n);
            }
        }
    };
    if order.is_none() && per_pass != a.count {
        ensure!(
            a.write_mode.starts_with("rnd"),
            "read: cursor saw {per_pass} keys, expected {}",
            a.count
        );
        eprintln!(
            "bench: note: {} of {} rnd keys were duplicates (overwritten); use a larger --key-size",
            a.count - per_pass,
            a.count
        );
    }
    if a.verify {
        verify(&db, &w).context("verify")?;
    }
    db.close()?;
    drop(db);
    let size = std::fs::metadata(path)?.len();
    let rate = |ops: u64, d: Duration| {
        if d.is_zero() { 0.0 } else { ops as f64 / d.as_secs_f64() }
    };
    let lines = [
        format!(
            "write: {} ops in {:.3} s ({:.0} ops/s)",
            a.count,
            write_dur.as_secs_f64(),
            rate(a.count, write_dur)
        ),
        format!(
            "read: {read_ops} ops in {:.3} s ({:.0} ops/s)",
            read_dur.as_secs_f64(),
            rate(read_ops, read_dur)
        ),
        format!(
            "file: {size} bytes page_size={page_size} open_ro={:.3} s passes={passes} mode={}/{} count={} batch={batch} key={} value={} sync={} populate={}",
            open_dur.as_secs_f64(),
            a.write_mode,
            a.read_mode,
            a.count,
            a.key_size,
            a.value_size,
            !a.no_sync,
            a.populate
        ),
    ];
    // stdout through `Out`: a closed pipe ends the output quietly.
    let mut out = crate::out::Out::new();
    for l in &lines {
        if a.json {
            eprintln!("{l}");
        } else {
            let _ = writeln!(out, "{l}");
        }
    }
    if a.json {
        let v = JsonOut {
            write_ops: a.count,
            write_s: write_dur.as_secs_f64(),
            read_ops,
            read_s: read_dur.as_secs_f64(),
            file_bytes: size,
            page_size,
            open_s: open_dur.as_secs_f64(),
            read_passes: passes,
            write_mode: &a.write_mode,
            read_mode: &a.read_mode,
            count: a.count,
            batch_size: batch,
            key_size: a.key_size,
            value_size: a.value_size,
            fill_percent: a.fill_percent,
            seed: a.seed,
            no_sync: a.no_sync,
            populate: a.populate,
            cold: a.cold,
            prefetch: a.prefetch,
        };
        let v = serde_json::to_string(&v)?;
        let _ = writeln!(out, "{v}");
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// The key range of `mapwise bolt traverse --from/--to`.
#[derive(Debug, Default)]
pub struct ScanRange {
    /// First key (inclusive); `None`: the bucket's first key.
    pub from: Option<Vec<u8>>,
    /// End key (exclusive); `None`: to the end.
    pub to: Option<Vec<u8>>,
}

impl ScanRange {
    /// From the hex texts of `--from` and `--to`.
    ///
    /// # Errors
    /// A text that is not hex.
    pub fn parse(from: Option<&str>, to: Option<&str>) -> Result<ScanRange> {
        let hex = |t: &str| -> Result<Vec<u8>> {
            ensure!(t.len().is_multiple_of(2), "odd-length hex key {t:?}");
            (0..t.len())
                .step_by(2)
                .map(|i| {
                    u8::from_str_radix(t.get(i..i + 2).unwrap_or("x"), 16)
                        .with_context(|| format!("bad hex key {t:?}"))
                })
                .collect()
        };
        Ok(ScanRange { from: from.map(hex).transpose()?, to: to.map(hex).transpose()? })
    }
}

/// What a traverse scan saw.
#[derive(Debug, Default)]
pub struct Scanned {
    /// Keys read.
    pub keys: u64,
    /// Bytes of values read.
    pub value_bytes: u64,
    /// XOR of every value byte (with `touch`).
    pub xor: u8,
    /// OS pages of the mapping holding keys or values the scan read
    /// (collected only when asked for residency), as a bitmap.
    visited: Vec<u64>,
    page: u64,
}

impl Scanned {
    /// Nothing read yet; the pages read are recorded when `visited`.
    fn new(visited: bool) -> Scanned {
        Scanned { page: if visited { residency::os_page_size() } else { 0 }, ..Scanned::default() }
    }

    /// Count one key and its value (a sub-bucket's: empty), xor the value
    /// in when `touch`, and record the pages both span.
    #[inline]
    fn visit(&mut self, base: usize, (k, v): (&[u8], &[u8]), touch: bool) {
        self.keys += 1;
        self.value_bytes += v.len() as u64;
        if touch {
            self.xor = v.iter().fold(self.xor, |acc, b| acc ^ b);
        }
        self.mark(base, k);
        self.mark(base, v);
    }

    /// Record the OS pages `bytes` spans (nothing unless residency was
    /// asked for: inlined, that test is all a plain scan pays per key).
    #[inline]
    fn mark(&mut self, base: usize, bytes: &[u8]) {
        if self.page == 0 || bytes.is_empty() {
            return;
        }
        let start = (bytes.as_ptr().addr().wrapping_sub(base)) as u64;
        let (first, last) = (start / self.page, (start + bytes.len() as u64 - 1) / self.page);
        for p in first..=last {
            let w = (p / 64) as usize;
            if w >= self.visited.len() {
                self.visited.resize(w + 1, 0);
            }
            self.visited[w] |= 1 << (p % 64);
        }
    }

    /// The file's residency now (mincore), split by the pages the scan
    /// read.
    ///
    /// # Errors
    /// The file cannot be opened or sampled.
    pub fn residency(&self, db: &Db) -> Result<ScanResidency> {
        let f = std::fs::File::open(db.path()).context("open for mincore")?;
        let r = residency::sample(&f).context("mincore")?;
        let mut visited = 0;
        let mut resident_visited = 0;
        for (w, bits) in self.visited.iter().enumerate() {
            for b in 0..64 {
                if bits >> b & 1 == 1 {
                    visited += 1;
                    resident_visited += u64::from(r.is_resident(w as u64 * 64 + b));
                }
            }
        }
        Ok(ScanResidency {
            os_page_size: r.page_size,
            file_pages: r.total_pages,
            resident_pages: r.known_resident_pages(),
            visited_pages: visited,
            resident_visited,
            resident_outside: r.known_resident_pages().map(|n| n - resident_visited),
        })
    }
}

/// Page-cache residency after a scan (`traverse --residency`), in OS
/// pages.
#[derive(Debug, serde::Serialize)]
pub struct ScanResidency {
    /// Bytes per OS page.
    pub os_page_size: u64,
    /// OS pages of the file.
    pub file_pages: u64,
    /// Resident pages of the file; `None` when the kernel will not tell.
    pub resident_pages: Option<u64>,
    /// Pages holding keys or values the scan read (branch pages, and the
    /// headers of leaves whose items lie on other pages, not counted).
    pub visited_pages: u64,
    /// Of the visited pages, those resident.
    pub resident_visited: u64,
    /// Resident pages the scan did not read from.
    pub resident_outside: Option<u64>,
}

impl std::fmt::Display for ScanResidency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unknown = || "unknown".to_owned();
        write!(
            f,
            "residency: file_pages={} resident={} visited={} resident_visited={} resident_outside={} (os pages of {} bytes)",
            self.file_pages,
            self.resident_pages.map_or_else(unknown, |n| n.to_string()),
            self.visited_pages,
            self.resident_visited,
            self.resident_outside.map_or_else(unknown, |n| n.to_string()),
            self.os_page_size
        )
    }
}

/// The traverse scan: every key of `bucket` in `range`, through a cursor
/// with `opts`; with `visited`, records the OS pages the keys and values
/// lie on.
///
/// # Errors
/// A damaged page.
pub fn scan(
    db: &Db,
    tx: &Tx<'_>,
    bucket: &Bucket<'_>,
    opts: &CursorOptions,
    range: &ScanRange,
    touch: bool,
    visited: bool,
) -> Result<Scanned> {
    let mut s = Scanned::new(visited);
    let base = db.mapping().bytes().as_ptr().addr();
    let mut c = tx.cursor_with(bucket, opts);
    c.scan(range.from.as_deref(), |k, v, flags| {
        if range.to.as_deref().is_some_and(|end| k >= end) {
            return false;
        }
        // A sub-bucket's entry has no value for the caller (bbolt's
        // `Cursor.Next` returns nil): its bucket header and inline page
        // are neither counted nor touched.
        let v = if flags & BUCKET_LEAF_FLAG == 0 { v } else { &[] };
        s.visit(base, (k, v), touch);
        true
    })?;
    Ok(s)
}

/// `traverse --seeks`: `n` seeks of one cursor, each to `lo + x % (hi -
/// lo + 1)` as 8 bytes big-endian, `x` the next output of [`SplitMix64`]
/// seeded with `seed`, `lo` and `hi` the first 8 bytes of the bucket's
/// first and last keys (as the bbolt peer's `traverse --seeks`), each followed
/// by reading `per` keys (the one landed on included), counted as
/// [`scan`] counts.
///
/// # Errors
/// A fault met on the way.
pub fn seeks(
    db: &Db,
    tx: &Tx<'_>,
    bucket: &Bucket<'_>,
    opts: &CursorOptions,
    (n, per, seed): (u64, u64, u64),
    touch: bool,
    visited: bool,
) -> Result<Scanned> {
    let mut s = Scanned::new(visited);
    let base = db.mapping().bytes().as_ptr().addr();
    let mut c = tx.cursor_with(bucket, opts);
    // Seek keys spread over the bucket's keys: the first 8 bytes
    // (zero-padded, big-endian) of its first and last keys bound them.
    let prefix = |k: Option<&[u8]>| {
        let mut b = [0u8; 8];
        let k = k.unwrap_or_default();
        b[..k.len().min(8)].copy_from_slice(&k[..k.len().min(8)]);
        u64::from_be_bytes(b)
    };
    let lo = prefix(c.first()?.as_ref().map(|i| &i.key[..]));
    let hi = prefix(c.last()?.as_ref().map(|i| &i.key[..]));
    let mut rng = SplitMix64::new(seed);
    for _ in 0..if hi >= lo { n } else { 0 } {
        let span = (hi - lo).wrapping_add(1);
        let off = if span == 0 { rng.next_u64() } else { rng.next_u64() % span };
        let key = (lo + off).to_be_bytes();
        let mut item = c.seek(&key)?;
        for _ in 0..per {
            let Some(it) = item else { break };
            let v: &[u8] = if it.is_bucket() { &[] } else { &it.value };
            s.visit(base, (&it.key, v), touch);
            item = c.next()?;
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_repeat_the_put_number() {
        let mut v = [0u8; 11];
        fill_value(&mut v, 1);
        assert_eq!(v, [0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("256KiB"), Ok(256 << 10));
        assert_eq!(parse_bytes("8MiB"), Ok(8 << 20));
        assert!(parse_bytes("8XB").is_err());
        let e = parse_bytes("1.5MiB").unwrap_err();
        assert!(e.contains("whole numbers only"), "{e}");
    }
}
