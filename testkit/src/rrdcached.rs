//! rrdcached for tests: a daemon of the test's own ([`Daemon`]), started
//! in a temporary directory and killed and reaped on drop whatever the
//! test's outcome, and the daemon's own answers (`PENDING`) read with a
//! raw socket. Install the Debian package `rrdcached` before starting one
//! (`install::ensure(&[Need::Rrdcached])`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One rrdcached process, killed and waited for on drop.
pub struct Daemon {
    child: Child,
    /// `unix:/…/sock` or `127.0.0.1:PORT`.
    pub addr: String,
    /// The daemon's base directory (`-b`, with `-B`): the RRDs live here.
    pub base: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// rrdcached's TCP port when an address names none (rrd_client.c).
const DEFAULT_PORT: u16 = 42217;

impl Daemon {
    /// A daemon on a UNIX socket.
    pub fn unix() -> Daemon {
        Daemon::start(None)
    }

    /// A daemon on loopback TCP, on a port that was free a moment ago
    /// (tried again on another port if the daemon does not come up), never
    /// rrdcached's default port 42217, which tests expect nobody to hold.
    pub fn tcp() -> Daemon {
        for _ in 0..10 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("free port");
            if port == DEFAULT_PORT {
                continue;
            }
            if let Some(d) = Daemon::try_start(Some(port)) {
                return d;
            }
        }
        panic!("rrdcached did not come up on loopback TCP");
    }

    fn start(port: Option<u16>) -> Daemon {
        Daemon::try_start(port).expect("rrdcached did not come up")
    }

    fn try_start(port: Option<u16>) -> Option<Daemon> {
        // Short paths: a UNIX socket name has at most 107 bytes.
        let dir = tempfile::Builder::new().prefix("mw-rrdc").tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonicalize");
        let (base, journal) = (root.join("base"), root.join("journal"));
        std::fs::create_dir_all(&base).expect("mkdir");
        std::fs::create_dir_all(&journal).expect("mkdir");
        let listen = match port {
            Some(p) => format!("127.0.0.1:{p}"),
            None => format!("unix:{}", root.join("sock").display()),
        };
        let child = Command::new("rrdcached")
            .arg("-l")
            .arg(&listen)
            .arg("-j")
            .arg(&journal)
            .arg("-b")
            .arg(&base)
            .arg("-B")
            .arg("-F")
            .args(["-w", "3600", "-f", "7200"])
            .arg("-p")
            .arg(root.join("pid"))
            .arg("-g")
            .env("TZ", "UTC")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn rrdcached");
        let mut d = Daemon { child, addr: listen, base, _dir: dir };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if d.child.try_wait().ok().flatten().is_some() {
                return None;
            }
            if d.ping() {
                return Some(d);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// `PING` answers `0 PONG`.
    fn ping(&self) -> bool {
        self.raw("PING\n").is_some_and(|r| r.starts_with("0 "))
    }

    /// One request line, the reply as text (read until the daemon's reply
    /// is complete: the status line and the lines it announces).
    pub fn raw(&self, line: &str) -> Option<String> {
        let mut s: Box<dyn ReadWrite> = match self.addr.strip_prefix("unix:") {
            Some(p) => Box::new(std::os::unix::net::UnixStream::connect(p).ok()?),
            None => Box::new(std::net::TcpStream::connect(&self.addr).ok()?),
        };
        s.write_all(line.as_bytes()).ok()?;
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some(first) = text.lines().next()
                && text.contains('\n')
            {
                let n: i64 = first.split_whitespace().next().and_then(|w| w.parse().ok())?;
                if n <= 0 || text.lines().count() as i64 > n {
                    return Some(text);
                }
            }
            if Instant::now() > deadline {
                return None;
            }
            let k = s.read(&mut buf).ok()?;
            if k == 0 {
                return Some(String::from_utf8_lossy(&got).into_owned());
            }
            got.extend_from_slice(&buf[..k]);
        }
    }

    /// The updates the daemon holds for `name` (in the base directory),
    /// from its `PENDING` reply.
    pub fn pending(&self, name: &str) -> Vec<String> {
        let r =
            self.raw(&format!("PENDING {}\n", self.base.join(name).display())).expect("PENDING");
        r.lines().skip(1).map(str::to_owned).collect()
    }

    /// Copy `src` into the base directory as `name` (mode 0644).
    pub fn put(&self, src: &Path, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let to = self.base.join(name);
        std::fs::copy(src, &to).expect("copy into the daemon's base");
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        to
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}
