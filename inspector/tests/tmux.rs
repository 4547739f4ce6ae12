//! End to end: the real binary in a tmux session, driven by keys, its
//! screen read back with `capture-pane`, while the test reads the file
//! from outside.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{Need, bin, copy_to, need, tmpdir};

/// A tmux server of our own (`-L socket`), killed when dropped, so a
/// failing test never leaves a session behind or touches the user's tmux.
/// Shared by the end-to-end tests (`live`, `readonly`).
pub struct Tmux {
    socket: String,
    session: String,
}

impl Tmux {
    /// A detached session of `width` x `height` cells running `command`
    /// (a shell command line).
    pub fn new(width: u16, height: u16, command: &str) -> Tmux {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let name = format!("mapwise-inspector-{}-{nanos}", std::process::id());
        let t = Tmux { socket: name.clone(), session: name };
        let out = t.tmux(&[
            "new-session",
            "-d",
            "-s",
            &t.session,
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            command,
        ]);
        assert!(out.status.success(), "tmux: {}", String::from_utf8_lossy(&out.stderr));
        t
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("run tmux")
    }

    /// `send-keys`: each argument is a key name (`Enter`, `Down`) or text.
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.session];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// The pane's text now (`capture-pane -p`).
    pub fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-t", &self.session]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Poll the screen every `step` until `ok` holds, at most `tries` times.
    pub fn wait_for(
        &self,
        tries: u32,
        step: Duration,
        ok: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let mut last = String::new();
        for _ in 0..tries {
            last = self.screen();
            if ok(&last) {
                return Ok(last);
            }
            std::thread::sleep(step);
        }
        Err(last)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// The text of `path` once it ends with a newline (a shell's `echo $? >
/// FILE` has finished), polled every 50 ms for at most `timeout`.
pub fn wait_file(path: &Path, timeout: Duration) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if let Ok(s) = fs::read_to_string(path)
            && s.ends_with('\n')
        {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// `p` quoted for a POSIX shell.
pub fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

#[test]
fn evict_then_read_from_outside_updates_live() {
    need(&[Need::Tmux]);
    let dir = tmpdir();
    let file: PathBuf = copy_to(dir.path(), "etcd-small.db");
    let rc = dir.path().join("rc");
    let cmd = format!(
        "{} open {} --interval 200; echo $? > {}",
        shell_quote(Path::new(bin())),
        shell_quote(&file),
        shell_quote(&rc)
    );
    let t = Tmux::new(120, 40, &cmd);
    let step = Duration::from_millis(100);
    t.wait_for(50, step, |s| s.contains("Resident "))
        .unwrap_or_else(|s| panic!("the inspector did not start:\n{s}"));

    t.keys(&["e"]);
    t.wait_for(20, step, |s| s.contains("from the page cache? (y/n)"))
        .unwrap_or_else(|s| panic!("no evict question:\n{s}"));
    t.keys(&["y"]);
    t.wait_for(20, step, |s| s.contains("Resident 0/55 pages"))
        .unwrap_or_else(|s| panic!("not evicted:\n{s}"));

    // Read the file from outside the inspector, like `cat FILE > /dev/null`:
    // within two intervals (200 ms each) the map shows every page resident.
    let bytes = fs::read(&file).unwrap();
    assert_eq!(bytes.len(), 55 * 4096);
    let screen = t
        .wait_for(5, Duration::from_millis(200), |s| s.contains("Resident 55/55 pages 100%"))
        .unwrap_or_else(|s| panic!("the read did not show up:\n{s}"));
    assert!(screen.contains("leaf 49/49"), "{screen}");
    let map_rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.starts_with("┃ 0 ") || l.starts_with("┃24 ") || l.starts_with("┃48 "))
        .collect();
    assert_eq!(map_rows.len(), 3, "{screen}");
    assert!(
        map_rows.iter().all(|l| !l.contains('░')),
        "no page is drawn as not resident:\n{screen}"
    );

    t.keys(&["q"]);
    let code = wait_file(&rc, Duration::from_secs(5)).expect("the inspector did not exit");
    assert_eq!(code.trim(), "0");
}

#[test]
fn open_dir_lists_the_tree_opens_a_file_and_comes_back() {
    need(&[Need::Tmux]);
    let dir = tmpdir();
    let tree = dir.path().join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::copy(mapwise_testkit::testdata("bolt/small.db"), tree.join("small.db")).unwrap();
    fs::copy(mapwise_testkit::testdata("rrd/compute.rrd"), tree.join("sub/compute.rrd")).unwrap();
    let rc = dir.path().join("rc");
    let cmd = format!(
        "{} open {}; echo $? > {}",
        shell_quote(Path::new(bin())),
        shell_quote(&tree),
        shell_quote(&rc)
    );
    let t = Tmux::new(120, 30, &cmd);
    let step = Duration::from_millis(100);
    let s = t
        .wait_for(100, step, |s| s.contains("│ 2 files │"))
        .unwrap_or_else(|s| panic!("no list:\n{s}"));
    assert!(s.contains(" bolt     small.db"), "{s}");
    assert!(s.contains(" rrd      sub/compute.rrd"), "{s}");
    // By name (resident → hot set → size → name): small.db, then sub/….
    t.keys(&["s", "s", "s"]);
    let s = t
        .wait_for(20, step, |s| s.contains("sorted by name"))
        .unwrap_or_else(|s| panic!("not sorted by name:\n{s}"));
    assert!(s.find("small.db").unwrap() < s.find("sub/compute.rrd").unwrap(), "{s}");
    // Enter opens the first (the bbolt file); Esc comes back to the list.
    t.keys(&["Enter"]);
    t.wait_for(50, step, |s| s.contains("small.db │ bolt │"))
        .unwrap_or_else(|s| panic!("the file's view did not open:\n{s}"));
    t.keys(&["Escape"]);
    t.wait_for(50, step, |s| s.contains("│ 2 files │") && s.contains("sorted by name"))
        .unwrap_or_else(|s| panic!("not back at the list:\n{s}"));
    // q in a file's view quits the whole inspector.
    t.keys(&["Down", "Enter"]);
    t.wait_for(50, step, |s| s.contains("compute.rrd │ rrd │"))
        .unwrap_or_else(|s| panic!("compute.rrd did not open:\n{s}"));
    t.keys(&["q"]);
    assert_eq!(wait_file(&rc, Duration::from_secs(10)).as_deref(), Some("0\n"));
}
