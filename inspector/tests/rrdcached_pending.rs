//! The inspector on an RRD file that rrdcached holds updates for
//! (`RRDCACHED_ADDRESS` set): `layout` (text and `--json`) and the live
//! view report how many updates the daemon holds, from the real daemon's
//! `PENDING` reply after rrdtool queued them, and never flush or write:
//! the file keeps its bytes and the daemon keeps every update.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{Need, bin, need};
use crate::rrdcached::Daemon;
use crate::tmux::{Tmux, shell_quote, wait_file};

/// `inspector ARGS` with `RRDCACHED_ADDRESS=addr`: stdout, exit status.
fn inspector(args: &[&str], addr: &str) -> (String, Option<i32>) {
    let o = Command::new(bin())
        .args(args)
        .env("RRDCACHED_ADDRESS", addr)
        .output()
        .expect("run inspector");
    (String::from_utf8_lossy(&o.stdout).into_owned(), o.status.code())
}

/// A daemon holding `n` updates of gauge.rrd queued by rrdtool, and the
/// file's path.
fn queued(n: i64) -> (Daemon, std::path::PathBuf) {
    need(&[Need::Rrdcached]);
    need(&[Need::Rrdtool]);
    let d = Daemon::unix();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/rrd/gauge.rrd");
    let f = d.put(&src, "g.rrd");
    // gauge.rrd was last updated at 1600166414 (step 300).
    let ups: Vec<String> =
        (1..=n).map(|k| format!("{}:{k}:{}", 1_600_166_414 + 300 * k, 2 * k)).collect();
    let o = Command::new("rrdtool")
        .args(["update", "--daemon", &d.addr])
        .arg(&f)
        .args(&ups)
        .env_remove("RRDCACHED_ADDRESS")
        .output()
        .expect("rrdtool update");
    assert!(o.status.success(), "{o:?}");
    assert_eq!(d.pending("g.rrd").len() as i64, n, "rrdtool queued them");
    (d, f)
}

#[test]
fn layout_reports_the_updates_rrdcached_holds() {
    let (d, f) = queued(3);
    let before = std::fs::read(&f).expect("read");
    let p = f.to_str().expect("utf-8");
    let (text, code) = inspector(&["layout", p], &d.addr);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains(&format!("3 updates pending in rrdcached ({})", d.addr)), "{text}");
    let (json, code) = inspector(&["layout", p, "--json"], &d.addr);
    assert_eq!(code, Some(0), "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["rrdcached_pending"], 3, "{json}");
    assert!(v.get("rrdcached_error").is_none(), "{json}");
    // Read-only: the daemon still holds all three, the file is as it was.
    assert_eq!(d.pending("g.rrd").len(), 3);
    assert_eq!(std::fs::read(&f).expect("read"), before);
    // A daemon that is down: rrdtool's words for it, no count.
    let dead = format!("unix:{}", d.base.join("nobody.sock").display());
    let (json, _) = inspector(&["layout", p, "--json"], &dead);
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert!(v.get("rrdcached_pending").is_none(), "{json}");
    assert_eq!(
        v["rrdcached_error"], "Unable to connect to rrdcached: No such file or directory",
        "{json}"
    );
    // Without the variable nothing is asked.
    let o = Command::new(bin())
        .args(["layout", p, "--json"])
        .env_remove("RRDCACHED_ADDRESS")
        .output()
        .expect("run inspector");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(v.get("rrdcached_pending").is_none() && v.get("rrdcached_error").is_none());
}

#[test]
fn the_live_view_shows_the_updates_rrdcached_holds() {
    need(&[Need::Tmux]);
    let (d, f) = queued(4);
    let before = std::fs::read(&f).expect("read");
    let rc = d.base.join("rc");
    let cmd = format!(
        "RRDCACHED_ADDRESS={} {} open {} --interval 200; echo $? > {}",
        shell_quote(Path::new(&d.addr)),
        shell_quote(Path::new(bin())),
        shell_quote(&f),
        shell_quote(&rc)
    );
    let t = Tmux::new(200, 40, &cmd);
    let step = Duration::from_millis(100);
    t.wait_for(50, step, |s| s.contains("4 updates pending in rrdcached"))
        .unwrap_or_else(|s| panic!("no pending count on screen:\n{s}"));
    // One more queued by rrdtool shows up within a few refreshes.
    let o = Command::new("rrdtool")
        .args(["update", "--daemon", &d.addr])
        .arg(&f)
        .arg("1600168000:9:9")
        .output()
        .expect("rrdtool update");
    assert!(o.status.success(), "{o:?}");
    t.wait_for(50, step, |s| s.contains("5 updates pending in rrdcached"))
        .unwrap_or_else(|s| panic!("the new update did not show:\n{s}"));
    t.keys(&["q"]);
    let code = wait_file(&rc, Duration::from_secs(5)).expect("the inspector did not exit");
    assert_eq!(code.trim(), "0");
    assert_eq!(d.pending("g.rrd").len(), 5, "nothing was flushed");
    assert_eq!(std::fs::read(&f).expect("read"), before);
}
