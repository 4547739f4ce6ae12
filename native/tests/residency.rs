//! Integration tests of `mapwise_native::os::residency` against the kernel and
//! against vmtouch (the peer tool; `apt-get install -y vmtouch`).
//!
//! The trust test needs root (it re-runs this binary as uid 65534 with
//! `setpriv`); CI runs as root. All files live under `CARGO_TARGET_TMPDIR`.
//! Linux only: cachestat, setpriv and vmtouch's Linux behaviour are the subject.
#![cfg(target_os = "linux")]

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mapwise_testkit::install::Need;

use mapwise_native::os::residency::{
    self, Error, Residency, TO_EOF, TouchMethod, Trust, UnknownReason, cachestat, evict, lock,
    os_page_size, release_mapping, resample, sample, sample_range, touch, touch_with,
};

const MIB: u64 = 1024 * 1024;

/// Environment variable that turns [`child_reports_residency`] into the child
/// side of [`trust_follows_the_kernel_permission_rule`]: the path to sample.
const CHILD_ENV: &str = "MAPWISE_RESIDENCY_CHILD_FILE";

fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("residency-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create a scratch dir under CARGO_TARGET_TMPDIR")
}

/// Writes `len` bytes of a non-zero pattern and fsyncs, so every page is clean.
fn write_file(path: &Path, len: u64) -> File {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .expect("create test file");
    let block: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8 + 1).collect();
    let mut left = len;
    while left > 0 {
        let n = us(left.min(MIB));
        file.write_all(&block[..n]).expect("write test file");
        left -= n as u64;
    }
    file.sync_all().expect("fsync test file");
    file
}

/// Opens `path` read-only with `POSIX_FADV_RANDOM`, so plain reads bring in
/// (almost) only the pages they read.
fn open_random(path: &Path) -> File {
    let file = File::open(path).expect("open test file");
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Random).expect("fadvise RANDOM");
    file
}

/// `n` as `usize` (test sizes always fit).
fn us(n: u64) -> usize {
    usize::try_from(n).expect("test size fits usize")
}

fn read_span(file: &File, offset: u64, len: u64) {
    let mut buf = vec![0u8; us(len)];
    file.read_exact_at(&mut buf, offset).expect("read test file");
}

/// Runs vmtouch and returns its "Resident Pages: R/T".
fn vmtouch(args: &[&str], path: &Path) -> (u64, u64) {
    mapwise_testkit::install::ensure(&[Need::Vmtouch]);
    let out = Command::new("vmtouch").args(args).arg(path).output().unwrap_or_else(|e| {
        panic!(
            "cannot run vmtouch ({e}); this test compares against it: apt-get install -y vmtouch"
        )
    });
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "vmtouch failed: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Resident Pages:"))
        .unwrap_or_else(|| panic!("no 'Resident Pages:' line in vmtouch output:\n{text}"));
    let counts = field.split_whitespace().next().unwrap_or("");
    let (r, t) = counts.split_once('/').unwrap_or_else(|| panic!("bad vmtouch counts {counts:?}"));
    (r.parse().expect("resident count"), t.parse().expect("total count"))
}

/// Samples until two samples around `probe` agree (read-ahead has settled),
/// then returns the settled sample and what `probe` saw in between.
fn settled<T>(mut take: impl FnMut() -> Residency, mut probe: impl FnMut() -> T) -> (Residency, T) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let before = take();
        let seen = probe();
        let after = take();
        if before == after {
            return (after, seen);
        }
        assert!(Instant::now() < deadline, "residency did not settle within 5 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until no read of `file` is in flight: cachestat(2) counts pages
/// still being read in, mincore(2) only up-to-date ones, so the two agree
/// (twice in a row) once read-ahead has landed.
fn quiesce(file: &File) -> Residency {
    let (r, stat) = settled(|| sample(file).unwrap(), || cachestat(file, 0, 0).unwrap());
    if stat.cache == r.resident_pages {
        return r;
    }
    std::thread::sleep(Duration::from_millis(20));
    quiesce(file)
}

fn bits(r: &Residency) -> Vec<bool> {
    (0..r.total_pages).map(|p| r.is_resident(p)).collect()
}

#[test]
fn matches_vmtouch_after_partial_reads() {
    let dir = scratch_dir();
    let path = dir.path().join("data");
    let file = write_file(&path, 8 * MIB);
    let page = os_page_size();
    let total = 8 * MIB / page;

    evict(&file, 0, TO_EOF).unwrap();
    let cold = sample(&file).unwrap();
    assert_eq!((cold.resident_pages, cold.total_pages), (0, total));
    assert_eq!(vmtouch(&[], &path), (0, total));

    let reader = open_random(&path);
    read_span(&reader, 2 * MIB, MIB);
    read_span(&reader, 6 * MIB + 5, 10);

    let (r, seen) = settled(|| sample(&file).unwrap(), || vmtouch(&[], &path));
    assert_eq!(seen, (r.resident_pages, r.total_pages), "vmtouch disagrees");
    assert_eq!(r.trust, Trust::Known);
    assert!(r.resident_pages > MIB / page && r.resident_pages < total, "{r:?}");
    let first = 2 * MIB / page;
    assert!((first..first + MIB / page).all(|p| r.is_resident(p)));
    assert!(r.is_resident(6 * MIB / page));
    assert_eq!(r.resident_in(2 * MIB, MIB), MIB / page);
    // The one-page probe of a mapping (a prefetching cursor's "already
    // cached?") says the same, page for page, and `false` past the end.
    // SAFETY: the test's own temporary file; nothing truncates or writes
    // it while the mapping lives.
    let map = unsafe { mapwise_native::os::map::Mapping::map(&file, &Default::default()) }.unwrap();
    for p in 0..total {
        assert_eq!(map.is_resident(p * page + 7), r.is_resident(p), "page {p}");
    }
    assert!(!map.is_resident(8 * MIB) && !map.is_resident(u64::MAX));

    // A page-aligned sub-range against `vmtouch -p START-END` (end exclusive).
    let (sub, seen) = settled(
        || sample_range(&file, 2 * MIB - 8 * page, MIB).unwrap(),
        || vmtouch(&["-p", &format!("{}-{}", 2 * MIB - 8 * page, 3 * MIB - 8 * page)], &path),
    );
    assert_eq!(seen, (sub.resident_pages, sub.total_pages));
    assert_eq!(sub.offset, 2 * MIB - 8 * page);
    assert_eq!(sub.total_pages, MIB / page);
    // The sub-range's bits are the whole-file bits at the same pages.
    let whole = bits(&r);
    let start = us(sub.offset / page);
    assert_eq!(bits(&sub), whole[start..start + us(sub.total_pages)].to_vec());
}

#[test]
fn evict_touch_and_lock_change_residency() {
    let dir = scratch_dir();
    let path = dir.path().join("data");
    let file = write_file(&path, 8 * MIB);
    let page = os_page_size();
    let total = 8 * MIB / page;
    let resident = |f: &File| sample(f).unwrap().resident_pages;

    evict(&file, 0, TO_EOF).unwrap();
    assert_eq!(resident(&file), 0, "evict of a clean file leaves nothing");
    assert_eq!(cachestat(&file, 0, 0).unwrap().cache, 0);

    let touched = touch(&file, 0, TO_EOF).unwrap();
    assert_eq!(touched, residency::Touched { method: TouchMethod::PopulateRead, pages: total });
    assert_eq!(resident(&file), total);

    evict(&file, 0, TO_EOF).unwrap();
    assert_eq!(resident(&file), 0);
    let touched = touch_with(&file, 0, TO_EOF, TouchMethod::Pread).unwrap();
    assert_eq!(touched, residency::Touched { method: TouchMethod::Pread, pages: total });
    assert_eq!(resident(&file), total);

    // Locked pages survive eviction; nothing else does.
    evict(&file, 0, TO_EOF).unwrap();
    let locked = lock(&file, MIB, MIB).unwrap();
    assert_eq!((locked.offset(), locked.len(), locked.pages()), (MIB, MIB, MIB / page));
    // The faults of mlock start read-around beyond the locked range; let that
    // I/O land, or the evict below cannot drop pages still being read.
    let r = quiesce(&file);
    assert!(r.resident_in(MIB, MIB) == MIB / page, "{r:?}");
    evict(&file, 0, TO_EOF).unwrap();
    let r = sample(&file).unwrap();
    assert_eq!(r.resident_pages, MIB / page, "exactly the locked pages stay");
    assert_eq!(r.resident_in(MIB, MIB), MIB / page);
    drop(locked);
    evict(&file, 0, TO_EOF).unwrap();
    assert_eq!(resident(&file), 0, "dropping Locked releases the pages");

    // Partial, unaligned touch: whole pages from the rounded-down offset.
    let t = touch(&file, 3 * page + 100, 2 * page).unwrap();
    assert_eq!(t.pages, 3);
    let r = sample(&file).unwrap();
    assert!((3..6).all(|p| r.is_resident(p)), "{:?}", &r.bitmap[..1]);
    evict(&file, 0, TO_EOF).unwrap();
}

#[test]
fn release_mapping_lets_evict_drop_mapped_pages() {
    let dir = scratch_dir();
    let path = dir.path().join("data");
    let file = write_file(&path, 4 * MIB);
    let page = os_page_size();
    evict(&file, 0, TO_EOF).unwrap();

    // SAFETY: the test owns the file and neither truncates nor writes it while
    // the mapping lives.
    let map = unsafe { memmap2::MmapOptions::new().offset(MIB).len(us(MIB)).map(&file) }.unwrap();
    let sum: u64 = map.iter().step_by(us(page)).map(|b| u64::from(*b)).sum();
    // Read-around may still be landing; pages under I/O cannot be evicted.
    quiesce(&file);
    evict(&file, 0, TO_EOF).unwrap();
    let r = sample(&file).unwrap();
    assert!(r.resident_in(MIB, MIB) == MIB / page, "mapped pages survive evict: {r:?}");

    release_mapping(&map).unwrap();
    evict(&file, 0, TO_EOF).unwrap();
    assert_eq!(sample(&file).unwrap().resident_pages, 0);
    // The mapping still reads the same data (faulted back in).
    let again: u64 = map.iter().step_by(us(page)).map(|b| u64::from(*b)).sum();
    assert_eq!(sum, again);
    drop(map);

    // A private (copy-on-write) mapping is refused: DONTNEED would discard it.
    // SAFETY: as above.
    let private =
        unsafe { memmap2::MmapOptions::new().len(us(page)).map_copy_read_only(&file) }.unwrap();
    match release_mapping(&private) {
        Err(Error::Release { source, .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::InvalidInput);
        }
        other => panic!("private mapping not refused: {other:?}"),
    }
    evict(&file, 0, TO_EOF).unwrap();
}

#[test]
fn cachestat_agrees_with_mincore() {
    let dir = scratch_dir();
    let path = dir.path().join("data");
    let mut file = write_file(&path, 8 * MIB);
    let page = os_page_size();
    evict(&file, 0, TO_EOF).unwrap();

    let reader = open_random(&path);
    read_span(&reader, 0, 3 * MIB);
    read_span(&reader, 5 * MIB, page);
    let (r, stat) = settled(|| sample(&file).unwrap(), || cachestat(&file, 0, 0).unwrap());
    assert!(r.resident_pages > 3 * MIB / page);
    assert_eq!(stat.cache, r.resident_pages, "cachestat vs mincore: {stat:?} {r:?}");
    assert_eq!(r.cachestat.map(|c| c.cache), Some(r.resident_pages));
    assert_eq!((stat.dirty, stat.writeback), (0, 0));
    // Sub-range counts agree as well.
    let sub = sample_range(&file, 0, 4 * MIB).unwrap();
    assert_eq!(cachestat(&file, 0, 4 * MIB).unwrap().cache, sub.resident_pages);

    // A write makes pages dirty until fsync.
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(7 * MIB)).unwrap();
    file.write_all(&vec![7u8; us(page)]).unwrap();
    let dirty = cachestat(&file, 7 * MIB, page).unwrap();
    assert_eq!(dirty.cache, 1);
    assert!(dirty.dirty + dirty.writeback >= 1, "{dirty:?}");
    file.sync_all().unwrap();
    let clean = cachestat(&file, 7 * MIB, page).unwrap();
    assert_eq!((clean.dirty, clean.writeback), (0, 0));
    evict(&file, 0, TO_EOF).unwrap();
}

#[test]
fn windows_of_a_large_sparse_file() {
    // 600 MiB + 1 page + 100 bytes: three 256 MiB mincore windows, the last
    // one partial, the last page partial.
    let dir = scratch_dir();
    let path = dir.path().join("sparse");
    let page = os_page_size();
    let len = 600 * MIB + page + 100;
    let file = File::create(&path).unwrap();
    file.set_len(len).unwrap();
    drop(file);
    let file = open_random(&path);
    evict(&file, 0, TO_EOF).unwrap();

    let window = 256 * MIB;
    let offsets = [0, window - page, window, 2 * window + 2 * page, len - 1];
    for &at in &offsets {
        read_span(&file, at, 1);
    }
    let (r, (seen, stat)) = settled(
        || sample(&file).unwrap(),
        || (vmtouch(&["-m", "1G"], &path), cachestat(&file, 0, 0).unwrap()),
    );
    assert_eq!(r.total_pages, len.div_ceil(page));
    assert_eq!(r.len, len);
    assert_eq!(r.bitmap.len() as u64, r.total_pages.div_ceil(64));
    assert_eq!(seen, (r.resident_pages, r.total_pages), "vmtouch disagrees");
    assert_eq!(stat.cache, r.resident_pages);
    for &at in &offsets {
        assert!(r.is_resident(at / page), "page of byte {at} not resident");
    }
    // Range samples across window borders agree with the whole-file bitmap.
    let whole = bits(&r);
    for (start, span) in
        [(window - 3 * page, 6 * page), (2 * window - page, 2 * page), (len - 2 * page, 10 * page)]
    {
        let sub = sample_range(&file, start, span).unwrap();
        let first = us(start / page);
        assert_eq!(bits(&sub), whole[first..first + us(sub.total_pages)].to_vec(), "at {start}");
    }
    evict(&file, 0, TO_EOF).unwrap();
}

#[test]
fn edge_cases_do_not_panic() {
    let dir = scratch_dir();
    let page = os_page_size();
    assert!(page.is_power_of_two() && page >= 4096);

    let empty_path = dir.path().join("empty");
    let empty = File::create(&empty_path).unwrap();
    let r = sample(&empty).unwrap();
    assert_eq!((r.len, r.total_pages, r.resident_pages, r.bitmap.len()), (0, 0, 0, 0));
    assert_eq!(r.trust, Trust::Known);
    assert_eq!(touch(&empty, 0, TO_EOF).unwrap().pages, 0);
    assert_eq!(lock(&empty, 0, TO_EOF).unwrap().pages(), 0);
    evict(&empty, 0, TO_EOF).unwrap();

    let path = dir.path().join("data");
    let file = write_file(&path, 3 * page + 10);
    for (offset, len) in
        [(0, 0), (4 * page, 1), (u64::MAX, u64::MAX), (u64::MAX - 1, 2), (3 * page + 10, TO_EOF)]
    {
        let r = sample_range(&file, offset, len).unwrap();
        assert_eq!((r.len, r.total_pages), (0, 0), "({offset}, {len})");
        assert!(!r.is_resident(0));
        assert_eq!(r.resident_in(0, u64::MAX), 0);
        evict(&file, offset, len).unwrap();
        assert_eq!(touch(&file, offset, len).unwrap().pages, 0);
    }
    // Unaligned offset rounds down; the end clips to the file.
    let r = sample_range(&file, page + 1, u64::MAX - 5).unwrap();
    assert_eq!((r.offset, r.len, r.total_pages), (page, 2 * page + 10, 3));
    // The kernel may accept or refuse such a range; neither panics.
    if let Ok(stat) = cachestat(&file, u64::MAX, u64::MAX) {
        assert_eq!(stat.cache, 0);
    }

    // Not readable / not mappable: errors, not panics.
    let write_only = OpenOptions::new().write(true).open(&path).unwrap();
    match sample(&write_only) {
        Err(Error::Mmap { source, .. }) => assert_eq!(source.raw_os_error(), Some(libc::EACCES)),
        other => panic!("write-only fd: {other:?}"),
    }
    let err = sample(&File::open(dir.path()).unwrap()).unwrap_err();
    assert!(err.to_string().starts_with("mmap(2) of file bytes"), "{err}");
}

#[test]
fn truncation_while_sampling_does_not_crash() {
    let dir = scratch_dir();
    let path = dir.path().join("data");
    let file = write_file(&path, 8 * MIB);
    let page = os_page_size();
    let stop = Arc::new(AtomicBool::new(false));
    let samplers: Vec<_> = (0..2)
        .map(|i| {
            let stop = Arc::clone(&stop);
            let file = file.try_clone().unwrap();
            std::thread::spawn(move || {
                let mut rounds = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let r = if i == 0 { sample(&file) } else { sample_range(&file, MIB, 4 * MIB) };
                    let r = r.expect("sample during truncation");
                    assert!(r.total_pages <= 8 * MIB / page && r.resident_pages <= r.total_pages);
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    let writer = OpenOptions::new().write(true).open(&path).unwrap();
    let deadline = Instant::now() + Duration::from_millis(400);
    let mut cycles = 0;
    while Instant::now() < deadline {
        writer.set_len(page / 2).unwrap();
        writer.set_len(0).unwrap();
        writer.set_len(8 * MIB).unwrap();
        writer.write_all_at(&[1u8; 4096], 5 * MIB).unwrap();
        cycles += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for s in samplers {
        assert!(s.join().expect("sampler thread panicked") > 0);
    }
    assert!(cycles > 0);
    writer.sync_all().unwrap();
    evict(&file, 0, TO_EOF).unwrap();
}

/// True when uid 65534 can reach `path`: every ancestor searchable by others
/// and the file itself has the `other` bits in `want`.
fn other_can(path: &Path, want: u32) -> Result<(), String> {
    let mode =
        |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode()).map_err(|e| e.to_string());
    if mode(path)? & want != want {
        return Err(format!("{} lacks o+{want:o}", path.display()));
    }
    for dir in path.ancestors().skip(1) {
        if dir.as_os_str().is_empty() {
            continue;
        }
        if mode(dir)? & 0o001 == 0 {
            return Err(format!("directory {} is not searchable by others", dir.display()));
        }
    }
    Ok(())
}

#[test]
fn trust_follows_the_kernel_permission_rule() {
    assert!(
        rustix::process::geteuid().is_root(),
        "this test needs root: it samples a root-owned file as uid 65534 via setpriv to check \
         that a non-owner without write permission gets Trust::Unknown (CI runs as root)"
    );
    let dir = scratch_dir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = dir.path().join("root-owned");
    let file = write_file(&path, 4 * MIB);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let page = os_page_size();
    let total = 4 * MIB / page;
    evict(&file, 0, TO_EOF).unwrap();
    read_span(&open_random(&path), 0, MIB);

    // As root (owner, CAP_FOWNER): the truth, a quarter resident.
    let root = File::open(&path).unwrap();
    let mine = sample(&root).unwrap();
    assert_eq!(mine.trust, Trust::Known);
    assert_eq!(residency::mincore_trust(&root), Trust::Known);
    assert!(mine.cachestat.is_some());
    assert!(mine.resident_pages >= MIB / page && mine.resident_pages < total, "{mine:?}");
    assert_eq!(mine.known_resident_pages(), Some(mine.resident_pages));

    // As nobody: the kernel refuses cachestat and mincore claims everything.
    let exe = std::env::current_exe().unwrap();
    let reach = other_can(&path, 0o004).and_then(|()| other_can(&exe, 0o005));
    if let Err(why) = reach {
        panic!("uid 65534 cannot reach the test file or binary: {why}; make them accessible");
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args(["--exact", "child_reports_residency", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run setpriv (util-linux) ({e})"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("CHILD ").map(|(_, report)| report))
        .unwrap_or_else(|| panic!("child printed no report:\n{stdout}\n{stderr}"));
    let expected = format!(
        "euid=65534 trust={:?} mincore_trust={:?} cachestat=none known=none resident={total} total={total}",
        Trust::Unknown(UnknownReason::CachestatDenied),
        Trust::Unknown(UnknownReason::NoWritePermission),
    );
    assert_eq!(line, expected);
    evict(&file, 0, TO_EOF).unwrap();
}

/// Child side of [`trust_follows_the_kernel_permission_rule`]; does nothing
/// unless `MAPWISE_RESIDENCY_CHILD_FILE` names a file to sample.
#[test]
fn child_reports_residency() {
    let Some(path) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let file = File::open(&path).expect("child: open file");
    let r = sample(&file).expect("child: sample");
    println!(
        "CHILD euid={} trust={:?} mincore_trust={:?} cachestat={} known={} resident={} total={}",
        rustix::process::geteuid().as_raw(),
        r.trust,
        residency::mincore_trust(&file),
        if r.cachestat.is_some() { "some" } else { "none" },
        r.known_resident_pages().map_or("none".to_string(), |n| n.to_string()),
        r.resident_pages,
        r.total_pages,
    );
}

/// A trace recorded around a read and an eviction shows both, frame by
/// frame, and follows the path when another file is renamed over it.
#[test]
fn a_trace_records_reads_evictions_and_replacement() {
    use mapwise_native::observe::trace::{Recorder, read};
    let dir = scratch_dir();
    let path = dir.path().join("traced.bin");
    let out = dir.path().join("run.trace");
    let file = write_file(&path, 8 * MIB);
    evict(&file, 0, TO_EOF).unwrap();
    quiesce(&file);
    let page = os_page_size();
    let rec = Recorder::start(&path, &out, "test run", Duration::from_millis(5)).unwrap();
    let read_pages = 2 * MIB / page;
    // Until the recorder has taken a frame that `seen` accepts (frames are
    // written as they are taken): a fixed pause is not enough when the
    // test suite leaves the recorder thread little CPU.
    let wait_for = |seen: &dyn Fn(&mapwise_core::trace::Trace) -> bool| {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if read(&out).is_ok_and(|t| seen(&t)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    std::thread::sleep(Duration::from_millis(40));
    // With POSIX_FADV_RANDOM a read brings in just what it reads.
    read_span(&open_random(&path), 0, 2 * MIB);
    quiesce(&file);
    wait_for(&|t| t.frames.iter().any(|f| f.resident_pages() == read_pages));
    evict(&file, 0, TO_EOF).unwrap();
    quiesce(&file);
    wait_for(&|t| {
        t.frames
            .iter()
            .skip_while(|f| f.resident_pages() == 0)
            .any(|f| f.file_len == 8 * MIB && f.resident_pages() == 0)
    });
    let other = dir.path().join("other.bin");
    drop(write_file(&other, MIB));
    std::fs::rename(&other, &path).unwrap();
    let sum = rec.stop().unwrap();

    let trace = read(&out).unwrap();
    assert_eq!(trace.header.path, path.display().to_string());
    assert_eq!(trace.header.label, "test run");
    assert_eq!(trace.header.os_page_size, page);
    assert_eq!(trace.header.interval_us, 5_000);
    assert!(!trace.truncated_tail);
    assert_eq!(sum.frames, trace.frames.len() as u64);
    assert_eq!(sum.bytes, std::fs::metadata(&out).unwrap().len());
    assert!(trace.frames.len() >= 6, "{} frames", trace.frames.len());
    let first = &trace.frames[0];
    assert_eq!((first.file_len, first.resident_pages()), (8 * MIB, 0));
    // Some frame shows exactly the pages read, and only those.
    let warm = trace
        .frames
        .iter()
        .find(|f| f.resident_pages() == read_pages)
        .expect("a frame with the 2 MiB read resident");
    assert_eq!(warm.resident_between(0, read_pages), read_pages);
    assert_eq!(sum.max_resident_pages, read_pages);
    // After it, a frame of the same file with nothing resident (evicted).
    let after = trace.frames.iter().skip_while(|f| f.resident_pages() == 0);
    assert!(
        after.clone().any(|f| f.file_len == 8 * MIB && f.resident_pages() == 0),
        "no evicted frame after the read"
    );
    // The last frame is the replacement file (1 MiB, just written).
    let last = trace.frames.last().unwrap();
    assert_eq!(last.file_len, MIB);
    for w in trace.frames.windows(2) {
        assert!(w[0].t_us <= w[1].t_us);
    }
}

/// Large folios (docs/residency.md, "Large folios"): the page cache may
/// hold a file in multi-page folios (naturally aligned, power-of-two runs
/// of pages), and residency then changes a folio at a time. `mincore(2)`
/// still answers per OS page, but `POSIX_FADV_DONTNEED` on a range drops
/// only the folios that lie wholly inside it: one page of a larger folio
/// stays, and the smallest aligned block around a page whose eviction
/// drops anything is that page's whole folio.
///
/// The file is read front to back with plain `read(2)` (default advice),
/// as a reader would, so read-ahead builds the folios. Where the kernel
/// drops single pages everywhere (no large folios for this file system or
/// kernel), the test says so and skips; where it shows larger steps, it
/// asserts that every step is exactly one aligned block, never a stray
/// page outside the range asked for.
#[test]
fn residency_changes_in_folio_sized_steps() {
    use std::io::Read;
    let dir = scratch_dir();
    let path = dir.path().join("data");
    let file = write_file(&path, 8 * MIB);
    let page = os_page_size();
    let total = 8 * MIB / page;

    evict(&file, 0, TO_EOF).unwrap();
    let mut reader = File::open(&path).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    while reader.read(&mut buf).expect("read the file") > 0 {}
    let base = quiesce(&file);
    assert_eq!(base.resident_pages, total, "a whole read leaves the file resident");

    // Pages in the back half, where read-ahead has ramped up, and not
    // near each other: each probe only evicts blocks around its own page.
    let probes = [total / 2 + 5, 5 * total / 8 + 3, 3 * total / 4 + 9, total - 7];
    let mut steps = Vec::new();
    for probe in probes {
        let mut n = 1;
        let (start, dropped) = loop {
            let start = probe / n * n;
            let before = sample(&file).unwrap();
            evict(&file, start * page, n * page).unwrap();
            let after = sample(&file).unwrap();
            let dropped: Vec<u64> =
                (0..total).filter(|&p| before.is_resident(p) && !after.is_resident(p)).collect();
            if !dropped.is_empty() {
                break (start, dropped);
            }
            n *= 2;
            assert!(
                n <= 2 * MIB / page,
                "DONTNEED of every aligned block up to 2 MiB around page {probe} dropped nothing"
            );
        };
        // Whatever the folio size, nothing outside the range asked for goes.
        assert!(
            dropped.iter().all(|p| (start..start + n).contains(p)),
            "DONTNEED of pages {start}..{} dropped {dropped:?}",
            start + n
        );
        // The block is the first one that held a whole folio around the
        // probe: all of it goes, as one step.
        assert_eq!(
            dropped,
            (start..start + n).collect::<Vec<_>>(),
            "DONTNEED of the aligned block {start}..{} dropped only part of it",
            start + n
        );
        steps.push((probe, n));
    }
    eprintln!("folio steps (page, pages dropped together): {steps:?}");
    if steps.iter().all(|&(_, n)| n == 1) {
        eprintln!(
            "SKIPPED: this kernel dropped single pages at every probe (no multi-page folios \
             in this file's page cache); nothing to show"
        );
    }
}

/// `resample` asks mincore only about blocks that may have changed; after
/// each of a run of evictions, locks and reads it gives the same bits as a
/// fresh sample and the counts vmtouch gives.
#[test]
fn a_resample_equals_a_fresh_sample() {
    let dir = scratch_dir();
    let path = dir.path().join("data");
    let page = os_page_size();
    let len = 10 * MIB + 5 * page;
    let file = write_file(&path, len);
    read_span(&file, 0, len);
    let mut prev = quiesce(&file);
    assert_eq!(prev.resident_pages, prev.total_pages, "a whole read leaves it resident");
    let mut locked = None;
    type Step<'a> = (&'a str, &'a dyn Fn(&File) -> Option<residency::Locked>);
    let steps: [Step; 7] = [
        ("nothing", &|_| None),
        ("evict one page", &|f| {
            evict(f, 3 * MIB + 7 * page, page).unwrap();
            None
        }),
        ("evict the tail", &|f| {
            evict(f, 10 * MIB, TO_EOF).unwrap();
            None
        }),
        ("read it back", &|f| {
            read_span(f, 0, 10 * MIB + 5 * os_page_size());
            None
        }),
        ("lock 1 MiB in the middle", &|f| Some(lock(f, 4 * MIB + 8 * page, MIB).unwrap())),
        ("evict all around the lock", &|f| {
            evict(f, 0, TO_EOF).unwrap();
            None
        }),
        ("read a stretch", &|f| {
            read_span(f, MIB, 2 * MIB);
            None
        }),
    ];
    for (what, step) in steps {
        if let Some(l) = step(&file) {
            locked = Some(l);
        }
        let fresh = quiesce(&file);
        let again = resample(&file, &prev).unwrap();
        assert_eq!(bits(&again), bits(&fresh), "after {what}");
        assert_eq!(again.resident_pages, fresh.resident_pages, "after {what}");
        assert_eq!(
            vmtouch(&[], &path),
            (again.resident_pages, again.total_pages),
            "vmtouch after {what}"
        );
        prev = again;
    }
    drop(locked);
    // A sample of another size is not used.
    let longer = OpenOptions::new().append(true).open(&path).unwrap();
    longer.write_all_at(&[1; 4096], len).unwrap();
    longer.sync_all().unwrap();
    evict(&file, 0, TO_EOF).unwrap();
    let r = resample(&file, &prev).unwrap();
    assert_eq!(r.total_pages, prev.total_pages + 1);
    assert_eq!(bits(&r), bits(&quiesce(&file)), "after growing");
}

/// A file that grew after its structure was read: the per-kind totals of
/// the old layout and a new residency sample cover every page vmtouch
/// counts, once (the grown part as `unused`), resident ones included.
#[test]
fn kind_totals_of_a_grown_file_cover_what_vmtouch_counts() {
    let dir = scratch_dir();
    let path = dir.path().join("grown.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/bolt/etcd-small.db"),
        &path,
    )
    .expect("copy etcd-small.db");
    let snap =
        mapwise_native::observe::watch::read_snapshot(&path, Default::default()).expect("read");
    assert!(snap.error.is_none(), "{:?}", snap.error);
    let grown = 40 * os_page_size();
    {
        let f = OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all_at(&vec![7u8; usize::try_from(grown).unwrap()], snap.layout.source_len)
            .expect("grow");
        f.sync_all().expect("sync");
    }
    let file = File::open(&path).expect("open");
    evict(&file, 0, TO_EOF).expect("evict");
    // Part of the old pages and part of the grown ones cached.
    let mut buf = vec![0u8; 12 * 4096];
    file.read_exact_at(&mut buf, 0).expect("read head");
    file.read_exact_at(&mut buf, snap.layout.source_len + 8 * 4096).expect("read tail");
    let res = sample(&file).expect("sample");
    let (resident, total) = vmtouch(&[], &path);
    let totals = mapwise_native::report::kind_totals(&snap.layout, Some(&res));
    let pages: u64 = totals.iter().map(|k| k.pages).sum();
    let resident_pages: u64 = totals.iter().filter_map(|k| k.resident_pages).sum();
    assert_eq!(pages, total, "kind pages vs vmtouch's total: {totals:?}");
    assert_eq!(resident_pages, resident, "kind resident pages vs vmtouch's: {totals:?}");
    let unused = totals.iter().find(|k| k.kind == "unused").expect("unused");
    assert!(unused.pages >= grown / 4096, "{unused:?}");
}
