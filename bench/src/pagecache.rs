//! The page cache around a bench file: evict, measure residency, and read
//! whole files (cached or O_DIRECT), with native's OS layer (the calls the
//! residency tests hold against vmtouch), the same way for both sides.

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use mapwise_native::os::io::{DIRECT_ALIGN, DirectBlock};
use mapwise_native::os::residency::{self, Residency};
use serde::Serialize;

use super::interrupt;
use super::schedule::CacheState;

fn open(path: &Path) -> Result<File> {
    File::open(path).with_context(|| format!("{}: cannot open", path.display()))
}

/// `path` opened and fsynced (dirty pages cannot be dropped), and its length.
fn open_synced(path: &Path) -> Result<(File, u64)> {
    let f = open(path)?;
    f.sync_all().with_context(|| format!("{}: fsync", path.display()))?;
    let len = f.metadata()?.len();
    Ok((f, len))
}

fn sample(path: &Path) -> Result<Residency> {
    residency::sample(&open(path)?).with_context(|| format!("{}: residency", path.display()))
}

/// Drops the file from the page cache: fsync, then `POSIX_FADV_DONTNEED`
/// over the whole file (mapped or locked pages stay).
pub fn evict(path: &Path) -> Result<()> {
    let (f, len) = open_synced(path)?;
    residency::evict(&f, 0, len).with_context(|| format!("{}: evict", path.display()))
}

/// What [`evict_random_until`] did.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PartialEviction {
    /// Resident fraction before.
    pub before: f64,
    /// Resident fraction after.
    pub after: f64,
    /// Blocks dropped (a block may be drawn twice).
    pub blocks: usize,
}

/// Drops random `block`-aligned ranges of the file (drawn from
/// splitmix64(`seed`)) until at most `target` (0–1) of it is resident.
/// Each round drops as many blocks as the excess would fill if every one
/// were wholly resident; after 64 rounds it stops wherever it is (pages
/// another process maps or locks stay).
pub fn evict_random_until(
    path: &Path,
    target: f64,
    block: u64,
    seed: u64,
) -> Result<PartialEviction> {
    let (f, len) = open_synced(path)?;
    let block = block.max(4096);
    let blocks_in_file = len.div_ceil(block).max(1);
    let mut rng = mapwise_native::engine::rng::SplitMix64::new(seed);
    let before = resident_fraction(path)?;
    let (mut now, mut dropped) = (before, 0usize);
    for _ in 0..64 {
        if now <= target {
            break;
        }
        #[expect(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        #[expect(clippy::cast_sign_loss)]
        let want = ((now - target) * len as f64 / block as f64).ceil().max(1.0) as u64;
        for _ in 0..want {
            let at = rng.next_u64() % blocks_in_file * block;
            residency::evict(&f, at, block)
                .with_context(|| format!("{}: evict at {at}", path.display()))?;
            dropped += 1;
        }
        now = resident_fraction(path)?;
    }
    Ok(PartialEviction { before, after: now, blocks: dropped })
}

/// Fraction (0–1) of the file's pages in the page cache, as native's
/// sampler counts them (cachestat, or mincore on a mapping it never
/// touches), so measuring does not change what is measured.
pub fn resident_fraction(path: &Path) -> Result<f64> {
    let (resident, total) = resident_count(path)?;
    #[expect(clippy::cast_precision_loss)]
    Ok(if total == 0 { 1.0 } else { resident as f64 / total as f64 })
}

/// The file's resident and total OS pages, from the same sampler (an empty file: none of none).
pub fn resident_count(path: &Path) -> Result<(u64, u64)> {
    if open(path)?.metadata()?.len() == 0 {
        return Ok((0, 0));
    }
    let r = sample(path)?;
    let resident = r.known_resident_pages().with_context(|| {
        format!("{}: the kernel does not say which pages are resident", path.display())
    })?;
    Ok((resident, r.total_pages))
}

/// The file's resident OS pages, by number, from the same sampler.
pub fn resident_pages(path: &Path) -> Result<Vec<u32>> {
    let r = sample(path)?;
    anyhow::ensure!(r.trust.is_known(), "{}: the kernel hides its residency", path.display());
    let pages = (0..r.total_pages).filter(|&p| r.is_resident(p));
    Ok(pages.filter_map(|p| u32::try_from(p).ok()).collect())
}

/// A fresh copy of `start` at `dst`, fsynced (no writeback during the loop), read, cold: evicted.
pub fn fresh_copy(start: &Path, dst: &Path, cache: CacheState) -> Result<()> {
    fs::create_dir_all(dst.parent().unwrap_or(Path::new(".")))?;
    fs::copy(start, dst).with_context(|| format!("cannot copy {}", start.display()))?;
    File::open(dst)?.sync_all()?;
    read_whole(dst, false)?;
    if cache == CacheState::Cold {
        evict(dst)?; // the trace starts where every call does
    }
    Ok(())
}

/// One timed whole-file read.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ReadPass {
    /// Bytes read (the file size).
    pub bytes: u64,
    /// Seconds from open to the last byte.
    pub secs: f64,
}

/// Reads the whole file with `read(2)` 1 MiB at a time, through the page
/// cache or, with `direct`, with `O_DIRECT` into an aligned buffer; timed
/// from open to the last byte.
pub fn read_whole(path: &Path, direct: bool) -> Result<ReadPass> {
    let mut buf = vec![DirectBlock::ZERO; (1 << 20) / DIRECT_ALIGN];
    let start = Instant::now();
    let what = if direct { "open with O_DIRECT" } else { "open" };
    let flags = if direct { libc::O_DIRECT } else { 0 };
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .with_context(|| format!("{}: {what}", path.display()))?;
    let mut bytes = 0u64;
    loop {
        let n = match f.read(DirectBlock::run_bytes_mut(&mut buf)) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("{}: read at {bytes}", path.display()));
            }
        };
        bytes += n as u64;
        interrupt::check()?;
    }
    Ok(ReadPass { bytes, secs: start.elapsed().as_secs_f64() })
}
