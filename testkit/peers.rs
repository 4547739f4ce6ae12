//! Installing the peer tools tests compare against (vmtouch, tmux), so
//! `cargo test --workspace` works on a fresh Debian machine. Included by
//! the test crates with `#[path]`; not part of any library.
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
