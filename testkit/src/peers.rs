//! Installing the peer tools tests compare against (vmtouch, tmux), so
//! `cargo test --workspace` works on a fresh Debian machine, and reading
//! what a peer says of a file ([`rrdtool_info`]). Included by the test
//! crates with `#[path]`; not part of any library.
//!
//! Installs with `apt-get` as root (or `sudo -n`), serialised by a lock
//! file so parallel tests do not fight over dpkg, refreshing the package
//! lists once if the first attempt fails. Panics with the command to run
//! when it cannot install.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| Path::new(&d).join(tool).is_file()))
}

/// Make sure `tool` (from the Debian package `package`) is installed.
pub fn ensure(tool: &str, package: &str) {
    if on_path(tool) {
        return;
    }
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let apt = |args: &[&str]| {
        let mut c = if is_root {
            Command::new("apt-get")
        } else {
            let mut c = Command::new("sudo");
            c.args(["-n", "apt-get"]);
            c
        };
        c.args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .is_ok_and(|s| s.success())
    };
    // An exclusive lock serialises concurrent installs from parallel tests.
    let lock = std::env::temp_dir().join("mapwise-apt.lock");
    let _guard = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .ok()
        .filter(|f| f.lock().is_ok());
    if on_path(tool) {
        return;
    }
    let ok = apt(&["install", "-y", "--no-install-recommends", package])
        || (apt(&["update"]) && apt(&["install", "-y", "--no-install-recommends", package]));
    assert!(
        ok && on_path(tool),
        "this test needs {tool}; install it with: sudo apt-get install -y {package}"
    );
}

/// What `rrdtool info` says of an RRD's layout: header size in bytes, the
/// number of data sources, and per archive (rows, cur_row).
pub type RrdInfo = (u64, u64, Vec<(u64, u64)>);

/// `rrdtool info PATH` parsed into an [`RrdInfo`]; `None` when rrdtool
/// cannot be run or prints no `header_size`.
pub fn rrdtool_info(path: &Path) -> Option<RrdInfo> {
    let out = Command::new("rrdtool")
        .arg("info")
        .arg(path)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = ")))
            .and_then(|v| v.trim_matches('"').parse::<u64>().ok())
    };
    let ds: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ds[")?.split(']').next())
        .collect();
    let rras = (0..)
        .map_while(|i| {
            Some((
                field(&format!("rra[{i}].rows"))?,
                field(&format!("rra[{i}].cur_row"))?,
            ))
        })
        .collect();
    Some((field("header_size")?, ds.len() as u64, rras))
}
