//! `cargo xtask wasm` builds the browser viewer; `cargo xtask serve`
//! serves it on 127.0.0.1.
//!
//! The build: `cargo build --target wasm32-unknown-unknown --release -p
//! mapwise-wasm`; then the wasm-bindgen CLI at exactly the version
//! `wasm/Cargo.toml` pins (`--target web`; the CLI and the crate must
//! match), both the target and the CLI installed when missing by
//! `mapwise_testkit::install` (`cargo install wasm-bindgen-cli --version
//! =X`); then `wasm-opt` when npm's `binaryen` is there (never Debian's
//! binaryen 108, whose modules Chromium rejects); then the static files of
//! `wasm/www` beside the generated `pkg/`: one directory that any static
//! server can serve.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use mapwise_testkit::install::{self, Need};

/// The wasm target.
pub const TARGET: &str = install::WASM_TARGET;

/// Long help of `cargo xtask wasm`.
pub const WASM_HELP: &str = "\
Builds the browser viewer into <target dir>/wasm/site (--out DIR overrides):
index.html, app.js, worker.js, style.css from wasm/www, and pkg/ with the
module made by wasm-bindgen --target web. Steps, each skipped when there is
nothing to do:
  rustup target add wasm32-unknown-unknown          (when the target is missing)
  cargo install wasm-bindgen-cli --version =X       (when wasm-bindgen X is not
                                                     on PATH or in ~/.cargo/bin;
                                                     X is pinned in wasm/Cargo.toml;
                                                     takes ~10 minutes once)
  cargo build --target wasm32-unknown-unknown --release -p mapwise-wasm
  wasm-bindgen --target web --out-dir SITE/pkg mapwise_wasm.wasm
  wasm-opt -O2 (only npm's binaryen: $WASM_OPT, target/npm/node_modules/.bin,
               or a wasm-opt on PATH outside /usr/bin; --no-opt skips it)
The target dir is $CARGO_TARGET_DIR, else target/ in the workspace.
Open the viewer with `cargo xtask serve` (a module worker cannot start from
file:// pages).";

/// Long help of `cargo xtask serve`.
pub const SERVE_HELP: &str = "\
Builds the viewer (as `cargo xtask wasm`; --no-build skips it) and serves
the site on http://127.0.0.1:PORT/ (default 8000; --port 0 picks a free
port) with the right MIME types (application/wasm, text/javascript) and no
caching, until interrupted. Prints `serving DIR at URL` once listening.
Files are read by the browser from your disk; nothing is uploaded.";

/// `cargo xtask wasm` options.
#[derive(Debug, Default, Args)]
pub struct WasmArgs {
    /// Directory for the site (default: `<target dir>/wasm/site`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Skip wasm-opt even when npm's binaryen is installed.
    #[arg(long)]
    pub no_opt: bool,
}

/// `cargo xtask serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Serve this directory instead of building the site.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Serve the site as last built, without building.
    #[arg(long)]
    pub no_build: bool,
}

/// The workspace root (xtask lives one level below it).
fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// `$CARGO_TARGET_DIR`, else `target/` in the workspace.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let d = PathBuf::from(d);
            if d.is_absolute() { d } else { root.join(d) }
        }
        _ => root.join("target"),
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Run `cmd`; an error naming it unless it exits 0.
fn run(cmd: &mut Command) -> Result<()> {
    let desc = format!("{cmd:?}");
    let status = cmd.status().with_context(|| format!("cannot run {desc}"))?;
    if !status.success() {
        bail!("{desc} failed ({status})");
    }
    Ok(())
}

fn on_path(tool: &str) -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(tool)).filter(|f| f.is_file()).collect())
        .unwrap_or_default()
}

/// npm's wasm-opt, if there is one (never Debian's).
fn find_wasm_opt(root: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WASM_OPT") {
        return Some(PathBuf::from(p));
    }
    let npm = root.join("target/npm/node_modules/.bin/wasm-opt");
    if npm.is_file() {
        return Some(npm);
    }
    // Debian's binaryen (108 in bookworm) installs /usr/bin/wasm-opt and
    // produces modules Chromium rejects.
    on_path("wasm-opt").into_iter().find(|p| !p.starts_with("/usr/bin") && !p.starts_with("/bin"))
}

/// Build the site; returns its directory.
///
/// # Errors
/// When a step fails (each error names its command).
pub fn build(args: &WasmArgs) -> Result<PathBuf> {
    let root = workspace_root();
    let target = target_dir(&root);
    // The wasm32 target and the pinned wasm-bindgen CLI, through the
    // workspace's one installer (mapwise-testkit), as the tests and
    // `.ci/run` install them.
    install::try_ensure(&[Need::WasmTarget]).map_err(anyhow::Error::msg)?;
    let version = install::pinned_bindgen().map_err(anyhow::Error::msg)?;
    let bindgen = install::wasm_bindgen().map_err(anyhow::Error::msg)?;
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "--target",
        TARGET,
        "-p",
        "mapwise-wasm",
    ]))?;
    let module = target.join(TARGET).join("release/mapwise_wasm.wasm");
    let site = args.out.clone().unwrap_or_else(|| target.join("wasm/site"));
    let pkg = site.join("pkg");
    fs::create_dir_all(&pkg).with_context(|| format!("cannot create {}", pkg.display()))?;
    run(Command::new(&bindgen).args(["--target", "web", "--out-dir"]).arg(&pkg).arg(&module))?;
    let bg = pkg.join("mapwise_wasm_bg.wasm");
    match find_wasm_opt(&root).filter(|_| !args.no_opt) {
        Some(opt) => {
            let tmp = pkg.join("mapwise_wasm_bg.opt.wasm");
            run(Command::new(&opt)
                .args([
                    "-O2",
                    "--enable-bulk-memory",
                    "--enable-nontrapping-float-to-int",
                    "--enable-sign-ext",
                    "--enable-mutable-globals",
                    "--enable-reference-types",
                    "--enable-multivalue",
                ])
                .arg(&bg)
                .arg("-o")
                .arg(&tmp))?;
            fs::rename(&tmp, &bg)?;
            eprintln!("xtask: optimised with {}", opt.display());
        }
        None if !args.no_opt => {
            eprintln!(
                "xtask: no wasm-opt from npm's binaryen found; the module is not optimised further (fine)"
            );
        }
        None => {}
    }
    let www = root.join("wasm/www");
    for entry in fs::read_dir(&www).with_context(|| format!("cannot read {}", www.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            fs::copy(entry.path(), site.join(entry.file_name()))
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    let size = fs::metadata(&bg).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "xtask: viewer built in {} (module {} KiB, wasm-bindgen {version})",
        site.display(),
        size / 1024
    );
    println!("{}", site.display());
    Ok(site)
}

/// Serve the site until interrupted.
///
/// # Errors
/// When the build fails or the port cannot be bound.
pub fn serve(args: &ServeArgs) -> Result<()> {
    let dir = match (&args.dir, args.no_build) {
        (Some(d), _) => d.clone(),
        (None, true) => target_dir(&workspace_root()).join("wasm/site"),
        (None, false) => build(&WasmArgs::default())?,
    };
    if !dir.join("index.html").is_file() {
        bail!("{} has no index.html: build the viewer with `cargo xtask wasm`", dir.display());
    }
    let listener = TcpListener::bind(("127.0.0.1", args.port))
        .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
    let addr = listener.local_addr()?;
    println!("serving {} at http://{addr}/", dir.display());
    std::io::stdout().flush()?;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let dir = dir.clone();
        std::thread::spawn(move || {
            if let Err(e) = handle(stream, &dir) {
                eprintln!("serve: {e}");
            }
        });
    }
    Ok(())
}

/// MIME type by file extension.
#[must_use]
pub fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "ts" => "text/plain; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The file under `dir` that URL path `target` names; `None` for paths
/// that leave `dir` or are not plain names.
#[must_use]
pub fn resolve(dir: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    let mut bytes = Vec::new();
    let mut it = path.bytes();
    while let Some(b) = it.next() {
        if b == b'%' {
            let hi = it.next()?;
            let lo = it.next()?;
            let h = std::str::from_utf8(&[hi, lo]).ok()?.to_string();
            bytes.push(u8::from_str_radix(&h, 16).ok()?);
        } else {
            bytes.push(b);
        }
    }
    let path = String::from_utf8(bytes).ok()?;
    if path.contains('\\') || path.contains('\0') {
        return None;
    }
    let rel = Path::new(path.trim_start_matches('/'));
    let mut out = dir.to_path_buf();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if path.ends_with('/') || out == dir {
        out.push("index.html");
    }
    Some(out)
}

fn respond(
    s: &mut TcpStream,
    status: &str,
    mime: &str,
    body: &[u8],
    head: bool,
) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: {mime}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if !head {
        s.write_all(body)?;
    }
    s.flush()
}

fn handle(stream: TcpStream, dir: &Path) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.by_ref().take(8192).read_line(&mut line)?;
    // Skip the headers.
    let mut header = String::new();
    for _ in 0..100 {
        header.clear();
        if reader.by_ref().take(8192).read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    let mut s = stream;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let head = method == "HEAD";
    if method != "GET" && !head {
        return respond(
            &mut s,
            "405 Method Not Allowed",
            "text/plain",
            b"only GET and HEAD\n",
            false,
        );
    }
    match resolve(dir, target).filter(|p| p.is_file()) {
        Some(path) => match fs::read(&path) {
            Ok(body) => respond(&mut s, "200 OK", mime(&path), &body, head),
            Err(_) => respond(&mut s, "403 Forbidden", "text/plain", b"cannot read\n", head),
        },
        None => respond(&mut s, "404 Not Found", "text/plain", b"not found\n", head),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_site() {
        let d = Path::new("/site");
        assert_eq!(resolve(d, "/"), Some(PathBuf::from("/site/index.html")));
        assert_eq!(resolve(d, "/app.js?x=1"), Some(PathBuf::from("/site/app.js")));
        assert_eq!(
            resolve(d, "/pkg/mapwise_wasm_bg.wasm"),
            Some(PathBuf::from("/site/pkg/mapwise_wasm_bg.wasm"))
        );
        assert_eq!(resolve(d, "/a%20b.txt"), Some(PathBuf::from("/site/a b.txt")));
        assert_eq!(resolve(d, "/../etc/passwd"), None);
        assert_eq!(resolve(d, "/pkg/%2e%2e/%2e%2e/x"), None);
        assert_eq!(resolve(d, "/%zz"), None);
        assert_eq!(mime(Path::new("m.wasm")), "application/wasm");
        assert!(mime(Path::new("app.js")).starts_with("text/javascript"));
    }

    #[test]
    fn the_pin_is_read_from_the_manifest() {
        let v = mapwise_testkit::install::pinned_bindgen().expect("pinned");
        assert!(v.starts_with("0.2."), "{v}");
    }
}
