//! The one installer of what the tests, the benches and `.ci/run` need,
//! so `cargo test --workspace` works on a fresh Debian machine with Rust
//! (rustup).
//!
//! Each [`Need`] is one thing a test uses: a peer's Debian packages, a
//! tool, the wasm32 and no-std targets, the wasm-bindgen CLI at the version
//! `wasm/Cargo.toml` pins, playwright-core at the version
//! `wasm/tests/package.json` pins. [`ensure`] installs what is missing of
//! the needs given and panics with the reason when it cannot (tests fail,
//! never skip); [`try_ensure`] returns the reason instead. `.ci/run` runs
//! every need up front: `cargo run -q -p mapwise-testkit -- install`.
//!
//! * Idempotent: a need already met costs a look (the tool on `PATH`, else
//!   `dpkg-query`; `rustc --print target-libdir`; `wasm-bindgen --version`;
//!   the installed playwright-core's `package.json`), once per process.
//! * Serialised: each kind of install holds an exclusive lock while it
//!   looks again and installs, so parallel tests neither fight over dpkg nor
//!   install twice: `$TMPDIR/mapwise-apt.lock` for apt-get (the lock the
//!   rrd, revlog and mmaptest peers' own fallback installs take too), `$TMPDIR/mapwise-rust.lock`
//!   for rustup and `cargo install`, `NPM_DIR/.install.lock` for npm.
//! * Says what it installs, on stderr (`mapwise-testkit: installing …`),
//!   unbuffered so the test harness does not swallow it.
//!
//! Debian packages install with `apt-get install -y --no-install-recommends`
//! as root or through `sudo -n`; the package lists are refreshed once when
//! a first attempt fails (a fresh machine).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::Value;

/// One thing the tests use, installed by [`ensure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Need {
    /// Go and Debian's bbolt 1.3.6 and boltdb/bolt 1.3.1 sources, from which
    /// the bbolt peer (`peers/bolt/peer`) builds its programs.
    GoBbolt,
    /// Mercurial (`hg`): the revlog peer and the revlog tests.
    Mercurial,
    /// Python 3: the rrd and revlog peers' scripts, some tests' helpers.
    Python,
    /// A C compiler (`cc`): the mmaptest peer's C reconstruction.
    Cc,
    /// vmtouch: the residency peer.
    Vmtouch,
    /// util-linux's `fincore` (Debian's util-linux-extra): the second
    /// residency peer, for many files.
    Fincore,
    /// tmux: the terminal tests and the benches' live view.
    Tmux,
    /// rrdtool 1.7.2 (and its librrd): the rrd peer and the rrd tests.
    Rrdtool,
    /// rrdcached: the tests that go through the daemon.
    Rrdcached,
    /// Debian's collectd (`/usr/sbin/collectd`) with librrd for its rrdtool
    /// plugin: the RRD files of `cargo xtask bench fleet` in collectd's shapes.
    Collectd,
    /// gzip: the compressed corpus files.
    Gzip,
    /// etcd 3.4 (server and `etcdctl`): the readers tested against a real
    /// etcd under load, and the live bench's side-by-side alternative.
    Etcd,
    /// Prometheus: the scraper `inspector export` is tested with.
    Prometheus,
    /// GNU time (`/usr/bin/time`): peak RSS in `cargo xtask limits` and the
    /// benches.
    GnuTime,
    /// strace: the system calls of a commit, in the crash tests.
    Strace,
    /// util-linux (`flock`): the peers' scripts serialise their fallback
    /// installs with it.
    UtilLinux,
    /// Debian's Chromium, with fonts for the screenshots: the browser test
    /// never downloads a browser.
    Chromium,
    /// Node.js and npm: the browser test's driver.
    Node,
    /// The `wasm32-unknown-unknown` target (`rustup target add`).
    WasmTarget,
    /// A target without `std` ([`NO_STD_TARGET`]): CI builds core on it,
    /// which proves core `no_std`.
    NoStdTarget,
    /// The wasm-bindgen CLI at exactly the version `wasm/Cargo.toml` pins
    /// (`cargo install wasm-bindgen-cli --version =X`, ~10 minutes once).
    WasmBindgen,
    /// playwright-core at the version `wasm/tests/package.json` pins, in
    /// `<target dir>/npm` ([`npm_dir`]; [`playwright_in`] takes another).
    Playwright,
}

/// A Debian package and the command that shows it is there (`None`: ask
/// dpkg).
type Package = (&'static str, Option<&'static str>);

impl Need {
    /// Every need, in the order `install` with no arguments installs them.
    pub const ALL: [Need; 22] = [
        Need::GoBbolt,
        Need::Mercurial,
        Need::Python,
        Need::Cc,
        Need::Vmtouch,
        Need::Fincore,
        Need::Tmux,
        Need::Rrdtool,
        Need::Rrdcached,
        Need::Collectd,
        Need::Gzip,
        Need::Etcd,
        Need::Prometheus,
        Need::GnuTime,
        Need::Strace,
        Need::UtilLinux,
        Need::Chromium,
        Need::Node,
        Need::WasmTarget,
        Need::NoStdTarget,
        Need::WasmBindgen,
        Need::Playwright,
    ];

    /// The name `mapwise-testkit install NAME` takes.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Need::GoBbolt => "go-bbolt",
            Need::Mercurial => "mercurial",
            Need::Python => "python3",
            Need::Cc => "cc",
            Need::Vmtouch => "vmtouch",
            Need::Fincore => "fincore",
            Need::Tmux => "tmux",
            Need::Rrdtool => "rrdtool",
            Need::Rrdcached => "rrdcached",
            Need::Collectd => "collectd",
            Need::Gzip => "gzip",
            Need::Etcd => "etcd",
            Need::Prometheus => "prometheus",
            Need::GnuTime => "gnu-time",
            Need::Strace => "strace",
            Need::UtilLinux => "util-linux",
            Need::Chromium => "chromium",
            Need::Node => "node",
            Need::WasmTarget => "wasm-target",
            Need::NoStdTarget => "no-std-target",
            Need::WasmBindgen => "wasm-bindgen",
            Need::Playwright => "playwright",
        }
    }

    /// The need called `name` ([`Need::name`]).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Need> {
        Need::ALL.into_iter().find(|n| n.name() == name)
    }

    /// Its Debian packages, each with the command on `PATH` that shows it
    /// is installed (else dpkg is asked).
    fn packages(self) -> &'static [Package] {
        match self {
            Need::GoBbolt => &[
                ("golang-go", Some("go")),
                ("golang-github-coreos-bbolt-dev", None),
                ("golang-github-boltdb-bolt-dev", None),
                ("golang-golang-x-sys-dev", None),
            ],
            Need::Mercurial => &[("mercurial", Some("hg"))],
            Need::Python => &[("python3", Some("python3"))],
            Need::Cc => &[("gcc", Some("cc"))],
            Need::Vmtouch => &[("vmtouch", Some("vmtouch"))],
            Need::Fincore => &[("util-linux-extra", Some("fincore"))],
            Need::Tmux => &[("tmux", Some("tmux"))],
            Need::Rrdtool => &[("rrdtool", Some("rrdtool"))],
            Need::Rrdcached => &[("rrdcached", Some("rrdcached"))],
            // In /usr/sbin, off a user's PATH: dpkg is asked.
            Need::Collectd => &[("collectd-core", None), ("librrd8", None)],
            Need::Gzip => &[("gzip", Some("gzip"))],
            Need::Etcd => &[("etcd-server", Some("etcd")), ("etcd-client", Some("etcdctl"))],
            Need::Prometheus => &[("prometheus", Some("prometheus"))],
            Need::GnuTime => &[("time", Some("time"))],
            Need::Strace => &[("strace", Some("strace"))],
            Need::UtilLinux => &[("util-linux", Some("flock"))],
            Need::Chromium => &[("chromium", Some("chromium")), ("fonts-liberation", None)],
            Need::Node => &[("nodejs", Some("node")), ("npm", Some("npm"))],
            Need::WasmTarget | Need::NoStdTarget | Need::WasmBindgen => &[],
            // npm installs it: Node first.
            Need::Playwright => &[("nodejs", Some("node")), ("npm", Some("npm"))],
        }
    }

    /// What [`Need::name`] stands for, for `mapwise-testkit needs`.
    #[must_use]
    pub fn what(self) -> String {
        match self {
            Need::WasmTarget => format!("rustup target {WASM_TARGET}"),
            Need::NoStdTarget => format!("rustup target {NO_STD_TARGET}"),
            Need::WasmBindgen => {
                let v = pinned_bindgen().unwrap_or_else(|e| format!("? ({e})"));
                format!("cargo install wasm-bindgen-cli --version ={v}")
            }
            Need::Playwright => {
                let v = pinned_playwright().unwrap_or_else(|e| format!("? ({e})"));
                format!("npm playwright-core {v} in {}", npm_dir().display())
            }
            n => {
                let p: Vec<&str> = n.packages().iter().map(|(p, _)| *p).collect();
                format!("Debian: {}", p.join(" "))
            }
        }
    }
}

/// The wasm target the browser viewer is built for.
pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// A target with no `std` at all, on which `mapwise-core` must build.
pub const NO_STD_TARGET: &str = "x86_64-unknown-none";

/// Needs already found met by this process.
static MET: Mutex<BTreeSet<Need>> = Mutex::new(BTreeSet::new());

/// Install whatever of `needs` is missing.
///
/// # Panics
/// When something cannot be installed; the message says what to run.
pub fn ensure(needs: &[Need]) {
    if let Err(e) = try_ensure(needs) {
        panic!("{e}");
    }
}

/// [`ensure`], returning the reason instead of panicking.
///
/// # Errors
/// When something cannot be installed; the message says what to run.
pub fn try_ensure(needs: &[Need]) -> Result<(), String> {
    let todo: Vec<Need> = {
        let met = MET.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        needs.iter().copied().filter(|n| !met.contains(n)).collect()
    };
    if todo.is_empty() {
        return Ok(());
    }
    // Debian packages first, in one apt-get call (Playwright needs npm).
    let packages: Vec<Package> = todo.iter().flat_map(|n| n.packages().iter().copied()).collect();
    debian(&packages, &todo)?;
    for &n in &todo {
        match n {
            Need::WasmTarget => rust_target(WASM_TARGET)?,
            Need::NoStdTarget => rust_target(NO_STD_TARGET)?,
            Need::WasmBindgen => {
                wasm_bindgen()?;
            }
            Need::Playwright => {
                playwright_in(&npm_dir())?;
            }
            _ => {}
        }
    }
    MET.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(todo);
    Ok(())
}

/// A line on stderr that the test harness does not capture.
fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "mapwise-testkit: {msg}");
}

/// An exclusive lock on `path` while the file lives (created if missing).
fn lock(path: &Path) -> Result<File, String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.lock().map_err(|e| format!("lock {}: {e}", path.display()))?;
    Ok(f)
}

/// Our stderr, for a child's output (it must not mix into a caller's
/// stdout, which may be a report).
fn to_stderr() -> Stdio {
    std::io::stderr().as_fd().try_clone_to_owned().map_or_else(|_| Stdio::inherit(), Stdio::from)
}

/// Run `cmd` with its output on stderr; `Err` naming it unless it exits 0.
fn run(cmd: &mut Command) -> Result<(), String> {
    let desc = format!("{cmd:?}");
    let st = cmd
        .stdin(Stdio::null())
        .stdout(to_stderr())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| format!("cannot run {desc}: {e}"))?;
    if st.success() { Ok(()) } else { Err(format!("{desc} failed ({st})")) }
}

fn on_path(tool: &str) -> bool {
    crate::which(tool).is_some()
}

/// Whether dpkg says `package` is installed.
fn dpkg_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

fn package_present((package, tool): Package) -> bool {
    match tool {
        Some(t) => on_path(t),
        None => dpkg_installed(package),
    }
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// apt-get with `args`, as root or through `sudo -n`.
fn apt(args: &[&str]) -> Result<(), String> {
    let mut c = if is_root() {
        Command::new("apt-get")
    } else {
        let mut c = Command::new("sudo");
        c.args(["-n", "apt-get"]);
        c
    };
    run(c.args(args).env("DEBIAN_FRONTEND", "noninteractive"))
}

/// Install the missing ones of `packages` (needed by `needs`).
fn debian(packages: &[Package], needs: &[Need]) -> Result<(), String> {
    let missing = |ps: &[Package]| -> Vec<&'static str> {
        let mut v: Vec<&str> =
            ps.iter().filter(|p| !package_present(**p)).map(|(p, _)| *p).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    if missing(packages).is_empty() {
        return Ok(());
    }
    let _l = lock(&std::env::temp_dir().join("mapwise-apt.lock"))?;
    // Another process may have installed them while we waited.
    let todo = missing(packages);
    if todo.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = needs.iter().map(|n| n.name()).collect();
    say(&format!("installing Debian packages: {} (for {})", todo.join(" "), names.join(", ")));
    let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
    install.extend(&todo);
    let ok = apt(&install).or_else(|_| {
        say("refreshing the package lists (apt-get update) and trying again");
        apt(&["update", "-q"]).and_then(|()| apt(&install))
    });
    let still = missing(packages);
    match ok {
        Ok(()) if still.is_empty() => Ok(()),
        r => Err(format!(
            "cannot install the Debian packages {} ({}); as root: apt-get install -y {}",
            todo.join(" "),
            r.err().unwrap_or_else(|| format!("still missing: {}", still.join(" "))),
            todo.join(" ")
        )),
    }
}

/// `rustc`, run in the repository (so a toolchain file there applies).
fn rustc() -> Command {
    let mut c = Command::new("rustc");
    c.current_dir(crate::repo());
    c
}

fn has_rust_target(target: &str) -> bool {
    rustc()
        .args(["--print", "target-libdir", "--target", target])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| Path::new(String::from_utf8_lossy(&o.stdout).trim()).is_dir())
}

fn rust_lock() -> Result<File, String> {
    lock(&std::env::temp_dir().join("mapwise-rust.lock"))
}

/// Add `target` when this toolchain lacks it.
fn rust_target(target: &str) -> Result<(), String> {
    if has_rust_target(target) {
        return Ok(());
    }
    let _l = rust_lock()?;
    if has_rust_target(target) {
        return Ok(());
    }
    say(&format!("installing the {target} target (rustup target add {target})"));
    run(Command::new("rustup").current_dir(crate::repo()).args(["target", "add", target]))
        .map_err(|e| format!("{e}; run: rustup target add {target}"))
}

/// The wasm-bindgen version `wasm/Cargo.toml` pins with `=`.
///
/// # Errors
/// When the manifest cannot be read or pins no version.
pub fn pinned_bindgen() -> Result<String, String> {
    let manifest = crate::repo().join("wasm/Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("wasm-bindgen"))
        .filter_map(|rest| rest.trim_start().strip_prefix('='))
        .filter_map(|rest| rest.trim().strip_prefix("\"="))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_string)
        .next()
        .ok_or_else(|| {
            format!(
                "{} does not pin wasm-bindgen with `=` (wasm-bindgen = \"=X.Y.Z\")",
                manifest.display()
            )
        })
}

fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

/// A wasm-bindgen of exactly `version` on `PATH` or in `$CARGO_HOME/bin`.
fn find_bindgen(version: &str) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("wasm-bindgen")).collect())
        .unwrap_or_default();
    candidates.extend(cargo_home().map(|h| h.join("bin/wasm-bindgen")));
    candidates.into_iter().filter(|c| c.is_file()).find(|c| {
        Command::new(c)
            .arg("--version")
            .stderr(Stdio::null())
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout).split_whitespace().nth(1).map(str::to_string)
            })
            .as_deref()
            == Some(version)
    })
}

/// The wasm-bindgen CLI at the pinned version ([`pinned_bindgen`]),
/// installed with `cargo install` when missing.
///
/// # Errors
/// When it cannot be installed.
pub fn wasm_bindgen() -> Result<PathBuf, String> {
    let version = pinned_bindgen()?;
    if let Some(exe) = find_bindgen(&version) {
        return Ok(exe);
    }
    let _l = rust_lock()?;
    if let Some(exe) = find_bindgen(&version) {
        return Ok(exe);
    }
    say(&format!(
        "installing wasm-bindgen-cli {version} (cargo install wasm-bindgen-cli --version ={version}: \
         the version wasm/Cargo.toml pins; about 10 minutes, once)"
    ));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // `--locked` fails for this version. A target directory inherited from
    // a running cargo would make this build wait for that cargo's lock:
    // `cargo install` builds in a temporary one of its own.
    run(Command::new(cargo)
        .current_dir(std::env::temp_dir())
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .args(["install", "wasm-bindgen-cli", "--version"])
        .arg(format!("={version}")))
    .map_err(|e| format!("{e}; run: cargo install wasm-bindgen-cli --version ={version}"))?;
    find_bindgen(&version).ok_or_else(|| {
        format!(
            "wasm-bindgen {version} is still not found after \
             `cargo install wasm-bindgen-cli --version ={version}`"
        )
    })
}

/// The target directory: `$CARGO_TARGET_DIR` (relative to the repository
/// unless absolute), else `target/` in the repository.
#[must_use]
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => crate::repo().join(d),
        _ => crate::repo().join("target"),
    }
}

/// Where [`Need::Playwright`] installs: `<target dir>/npm`.
#[must_use]
pub fn npm_dir() -> PathBuf {
    target_dir().join("npm")
}

/// The playwright-core version `wasm/tests/package.json` pins, and the
/// file's text.
fn pinned_playwright_json() -> Result<(String, String), String> {
    let path = crate::repo().join("wasm/tests/package.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let version = v["dependencies"]["playwright-core"]
        .as_str()
        .ok_or_else(|| format!("{} pins no playwright-core", path.display()))?
        .to_string();
    Ok((version, text))
}

/// The playwright-core version `wasm/tests/package.json` pins.
///
/// # Errors
/// When the file cannot be read or pins none.
pub fn pinned_playwright() -> Result<String, String> {
    pinned_playwright_json().map(|(v, _)| v)
}

fn installed_playwright(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join("node_modules/playwright-core/package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["version"].as_str().map(str::to_string))
}

/// playwright-core at the pinned version ([`pinned_playwright`]) in `dir`
/// (`dir/node_modules`), installed with npm when missing or another
/// version; returns `dir`. Node.js and npm are installed first.
///
/// # Errors
/// When it cannot be installed.
pub fn playwright_in(dir: &Path) -> Result<PathBuf, String> {
    let (version, json) = pinned_playwright_json()?;
    if installed_playwright(dir).as_deref() == Some(version.as_str()) {
        return Ok(dir.to_path_buf());
    }
    try_ensure(&[Need::Node])?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let _l = lock(&dir.join(".install.lock"))?;
    if installed_playwright(dir).as_deref() == Some(version.as_str()) {
        return Ok(dir.to_path_buf());
    }
    say(&format!(
        "installing playwright-core {version} into {} (npm install; the browser is Debian's chromium)",
        dir.display()
    ));
    std::fs::write(dir.join("package.json"), json)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--no-update-notifier"])
        .current_dir(dir))?;
    match installed_playwright(dir) {
        Some(v) if v == version => Ok(dir.to_path_buf()),
        got => Err(format!(
            "npm installed playwright-core {got:?} into {}, not {version}",
            dir.display()
        )),
    }
}
