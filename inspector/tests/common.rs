//! Helpers shared by the test modules.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mapwise_core::bolt::WalkOptions;
use mapwise_inspector::app::{App, Data};
use mapwise_native::observe::watch::read_snapshot;
use mapwise_native::os::residency::{Residency, Trust, os_page_size};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

pub use crate::fixed::Fixed;

pub use mapwise_testkit::install::{Need, ensure as need};
pub use mapwise_testkit::peers::bolt as bolt_oracle;

/// A read-only corpus file under testdata/bolt.
pub fn testdata(name: &str) -> PathBuf {
    mapwise_testkit::testdata("bolt").join(name)
}

/// A fresh directory under the target's temporary directory.
pub fn tmpdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("inspector-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temp dir")
}

/// Copy a corpus file into `dir`, synced to disk (so that it can be
/// evicted).
pub fn copy_to(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    fs::copy(testdata(name), &to).expect("copy");
    File::open(&to).and_then(|f| f.sync_all()).expect("fsync");
    to
}

/// A residency sample of a file of `len` bytes in which OS page `i` is
/// resident when `resident(i)`.
pub fn synthetic(len: u64, trust: Trust, resident: impl Fn(u64) -> bool) -> Residency {
    let ps = os_page_size();
    let total = len.div_ceil(ps);
    let mut bitmap = vec![0u64; usize::try_from(total.div_ceil(64)).unwrap()];
    let mut n = 0;
    for i in (0..total).filter(|&i| resident(i)) {
        bitmap[usize::try_from(i / 64).unwrap()] |= 1 << (i % 64);
        n += 1;
    }
    Residency {
        offset: 0,
        len,
        page_size: ps,
        bitmap,
        resident_pages: n,
        total_pages: total,
        trust,
        cachestat: None,
    }
}

/// Fixed data for `path`: its structure read quietly, every other OS page
/// resident (even pages), its bytes for decoding.
pub fn fixed(path: &Path) -> Fixed {
    fixed_with(path, Trust::Known)
}

/// [`fixed`] with a chosen trust.
pub fn fixed_with(path: &Path, trust: Trust) -> Fixed {
    let snapshot = read_snapshot(path, WalkOptions::default()).expect("snapshot");
    let bytes = fs::read(path).expect("read");
    let res = synthetic(bytes.len() as u64, trust, |i| i % 2 == 0);
    Fixed::new(snapshot, Some(res), bytes)
}

/// An app over `target`, laid out for `width` x `height`, details fetched.
pub fn app(label: &str, target: &Fixed, width: u16, height: u16) -> App {
    let mut app = App::new(label, Data::from_target(target), Duration::from_millis(500));
    app.resize(width, height);
    app.fetch_details(target);
    app
}

/// Draw `app` on a test terminal of its size.
pub fn draw(app: &App) -> Terminal<TestBackend> {
    let area = app.area();
    let mut t = Terminal::new(TestBackend::new(area.width, area.height)).expect("terminal");
    t.draw(|f| mapwise_inspector::ui::draw(f, app)).expect("draw");
    t
}

/// The inspector binary.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inspector")
}

/// `mapwise` (`mapwise-cli`'s binary), from beside the inspector's:
/// `cargo test --workspace` builds both into one directory.
pub fn mapwise() -> PathBuf {
    let p = Path::new(bin()).with_file_name("mapwise");
    assert!(
        p.is_file(),
        "{} is missing: build it with `cargo build -p mapwise-cli --bin mapwise` \
         (`cargo test --workspace` builds it)",
        p.display()
    );
    p
}

/// What a finished run printed.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Run `inspector ARGS…`, killing it after `timeout`.
pub fn run(args: &[&str], timeout: Duration) -> Run {
    let mut child = Command::new(bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn inspector");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("inspector {args:?} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("output");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A child killed when dropped.
pub struct Kill(pub std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `vmtouch PATH`'s resident pages.
pub fn vmtouch_resident(path: &Path) -> u64 {
    let out = Command::new("vmtouch").arg(path).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.contains("Resident Pages:")).expect("vmtouch output");
    let field = line.split_whitespace().nth(2).unwrap();
    field.split('/').next().unwrap().parse().unwrap()
}

/// Lock the first 64 KiB (16 pages) of `path` in memory with `vmtouch -l`
/// (which this machine's reclaimer cannot evict) and evict the rest, so
/// that exactly those 16 pages stay resident while the lock is held.
pub fn pin_16_pages(path: &Path) -> Kill {
    // Evicted first: a large folio the writes left (up to the whole file)
    // holding a locked page could not be evicted around it.
    assert!(Command::new("vmtouch").arg("-qe").arg(path).status().unwrap().success());
    let lock = Kill(
        Command::new("vmtouch")
            .args(["-q", "-l", "-p", "0-64K"])
            .arg(path)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Locking faults pages in with read-around; what is not locked is
    // evicted again.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Command::new("vmtouch").arg("-qe").arg(path).status().unwrap().success());
        let n = vmtouch_resident(path);
        if n == 16 {
            return lock;
        }
        assert!(Instant::now() < deadline, "vmtouch -l did not lock 16 pages alone: {n}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
