//! `mapwise rrd` through a real rrdcached (Debian's 1.7.2), against
//! rrdtool 1.7.2 through the same daemon: queued updates are never lost
//! or overwritten, every read answers as rrdtool's does while updates are
//! queued, the address forms and the environment variable, `flushcached`,
//! and rrdtool's exact failure for a daemon that is down, answers with an
//! error, hangs up or never answers (the file untouched).
//!
//! Every test starts its own daemons in a temporary directory
//! (`rrdcached -g` in the foreground, writes and flushes far in the future
//! so nothing reaches the file unless asked) and a [`Daemon`] guard kills
//! and reaps each one whatever the outcome.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use mapwise_testkit::assert_same_bytes;
use mapwise_testkit::rrd::copy;

use crate::support::install::{Need, ensure};
use crate::support::rrdcached::Daemon;
use crate::support::{mapwise, rrdtool, run_limited};

/// A daemon of the test's own ([`Daemon`]), rrdcached installed first.
fn daemon(tcp: bool) -> Daemon {
    ensure(&[Need::Rrdcached]);
    if tcp { Daemon::tcp() } else { Daemon::unix() }
}

/// A daemon of the test's own, its base directory, and two copies of
/// gauge.rrd in it: `ours.rrd` for mapwise, `peer.rrd` for rrdtool.
fn twins(tcp: bool) -> (Daemon, PathBuf, PathBuf, PathBuf) {
    let d = daemon(tcp);
    let base = d.base.clone();
    let ours = put(&d, "gauge.rrd", "ours.rrd");
    let peer = put(&d, "gauge.rrd", "peer.rrd");
    (d, base, ours, peer)
}

/// Copy a corpus file into the daemon's base directory.
fn put(d: &Daemon, corpus: &str, name: &str) -> PathBuf {
    copy(corpus, &d.base, name)
}

/// `mapwise rrd ARGS` in `dir` (no `RRDCACHED_ADDRESS` unless `env`).
pub fn mw_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = mapwise();
    c.arg("rrd")
        .args(args)
        .current_dir(dir)
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env_remove("RRDCACHED_ADDRESS")
        .envs(env.iter().copied());
    run_limited(&mut c, Duration::from_secs(60))
}

/// `rrdtool ARGS` in `dir` (no `RRDCACHED_ADDRESS` unless `env`).
pub fn rt_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = rrdtool();
    c.args(args).current_dir(dir).envs(env.iter().copied());
    run_limited(&mut c, Duration::from_secs(60))
}

/// Stdout, stderr and exit status of both must be the same.
fn same(what: &str, ours: &Output, theirs: &Output) {
    let show = |o: &Output| {
        format!(
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(
        ours.stdout == theirs.stdout
            && ours.stderr == theirs.stderr
            && ours.status.code() == theirs.status.code(),
        "{what}:\n=== ours: {}\n=== rrdtool: {}",
        show(ours),
        show(theirs)
    );
    assert!(!String::from_utf8_lossy(&ours.stderr).contains("panicked"), "{what}");
}

/// The files at `a` and `b` hold the same bytes.
fn same_files(what: &str, a: &Path, b: &Path) {
    assert_same_bytes(what, &std::fs::read(a).expect("read"), &std::fs::read(b).expect("read"));
}

/// Who runs a command.
#[derive(Clone, Copy)]
enum Peer {
    Mapwise,
    Rrdtool,
}

/// `update --daemon addr file updates…` by `who`, which must succeed.
fn queue(who: Peer, dir: &Path, addr: &str, file: &str, updates: &[String]) {
    let cmd = args(&["update", "--daemon", addr, file], updates);
    must(match who {
        Peer::Mapwise => mw_env(dir, &cmd, &[]),
        Peer::Rrdtool => rt_env(dir, &cmd, &[]),
    });
}

/// `o` (a run that must succeed).
fn must(o: Output) -> Output {
    assert!(o.status.success(), "{o:?}");
    o
}

/// Each of `cmds` gives rrdtool's output (see [`both`]).
fn each_like_rrdtool(dir: &Path, cmds: &[&[&str]]) {
    for cmd in cmds {
        both(dir, cmd, &[]);
    }
}

/// Run the same command with mapwise and rrdtool, check they agree, and
/// return rrdtool's output.
fn both(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let ours = mw_env(dir, args, env);
    let theirs = rt_env(dir, args, env);
    same(&format!("{args:?} {env:?}"), &ours, &theirs);
    theirs
}

/// gauge.rrd (DS temp, load; step 300, heartbeat 600) was last updated
/// at this time.
const GAUGE_LAST: i64 = 1_600_166_414;

/// `n` updates of gauge.rrd, one step apart, from `from` steps after its
/// last update.
fn gauge_updates(from: i64, n: i64) -> Vec<String> {
    (from..from + n).map(|k| format!("{}:{}.5:{}", GAUGE_LAST + 300 * k, k % 40, 7 * k)).collect()
}

fn args<'a>(head: &[&'a str], tail: &'a [String]) -> Vec<&'a str> {
    head.iter().copied().chain(tail.iter().map(String::as_str)).collect()
}

/// Updates queued by rrdtool, then by mapwise, then flushed: the file is
/// byte for byte the one made by sending the same updates through rrdtool
/// alone (a second file in the same daemon), with nothing lost from
/// either, templates included.
#[test]
fn updates_queue_behind_rrdtools_and_flush_to_rrdtools_bytes() {
    let (d, base, ours, peer) = twins(false);
    let before = std::fs::read(&ours).expect("read");
    let first = gauge_updates(1, 5);
    let second = gauge_updates(6, 5);
    let templated: Vec<String> =
        (11..14).map(|k| format!("{}:{}", GAUGE_LAST + 300 * k, 3 * k)).collect();
    for f in ["ours.rrd", "peer.rrd"] {
        queue(Peer::Rrdtool, &base, &d.addr, f, &first);
    }
    queue(Peer::Mapwise, &base, &d.addr, "ours.rrd", &second);
    queue(Peer::Rrdtool, &base, &d.addr, "peer.rrd", &second);
    let tpl = ["update", "--daemon", &d.addr, "-t", "load"];
    must(mw_env(&base, &args(&[&tpl[..], &["ours.rrd"]].concat(), &templated), &[]));
    must(rt_env(&base, &args(&[&tpl[..], &["peer.rrd"]].concat(), &templated), &[]));
    // Queued, not written: the file is as it was; the daemon holds every
    // update, rrdtool's first.
    assert_eq!(std::fs::read(&ours).expect("read"), before);
    let pending = d.pending("ours.rrd");
    assert_eq!(pending, d.pending("peer.rrd"));
    assert_eq!(pending.len(), 13, "{pending:?}");
    assert_eq!(pending.first(), first.first());
    // A past update is refused by the daemon, in rrdtool's words.
    both(&base, &["update", "--daemon", &d.addr, "ours.rrd", &first[0]], &[]);
    must(mw_env(&base, &["flushcached", "--daemon", &d.addr, "ours.rrd"], &[]));
    must(rt_env(&base, &["flushcached", "--daemon", &d.addr, "peer.rrd"], &[]));
    assert!(d.pending("ours.rrd").is_empty());
    let (a, b) = (std::fs::read(&ours).expect("read"), std::fs::read(&peer).expect("read"));
    assert_ne!(a, before, "the flush wrote the updates");
    assert_same_bytes("flushed through the daemon", &a, &b);
}

/// While updates are queued, `info --noflush`, `last` and `first` show
/// what rrdtool shows (the stale file, the daemon's own last time); then
/// `info`, `fetch`, `lastupdate` and `dump` flush and show the queued
/// updates, as rrdtool's do. Commands run one after the other on the
/// same file, mapwise first, so each sees what rrdtool sees.
#[test]
fn reads_through_the_daemon_answer_as_rrdtools() {
    let d = daemon(false);
    let base = d.base.clone();
    put(&d, "gauge.rrd", "f.rrd");
    let a = d.addr.as_str();
    let ups = gauge_updates(1, 4);
    queue(Peer::Rrdtool, &base, a, "f.rrd", &ups);
    let stale = both(&base, &["info", "--daemon", a, "--noflush", "f.rrd"], &[]);
    both(&base, &["info", "-d", a, "-F", "f.rrd"], &[]);
    both(&base, &["last", "--daemon", a, "f.rrd"], &[]);
    both(&base, &["first", "--daemon", a, "--rraindex", "1", "f.rrd"], &[]);
    both(&base, &["first", "--daemon", a, "--rraindex", "9", "f.rrd"], &[]);
    assert_eq!(d.pending("f.rrd").len(), 4, "nothing was flushed yet");
    let fresh = both(&base, &["info", "--daemon", a, "f.rrd"], &[]);
    assert!(d.pending("f.rrd").is_empty(), "info flushed");
    let line = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.starts_with("last_update"))
            .map(str::to_owned)
    };
    assert_ne!(line(&stale), line(&fresh), "--noflush showed the file as it was");
    let window = |extra: &str| -> Vec<String> {
        ["fetch", "--daemon", a, "f.rrd", "AVERAGE", "-s", "1600165000", "-e", "1600170000"]
            .iter()
            .map(|s| (*s).to_owned())
            .chain((!extra.is_empty()).then(|| extra.to_owned()))
            .collect()
    };
    let more = gauge_updates(5, 4);
    queue(Peer::Rrdtool, &base, a, "f.rrd", &more);
    for extra in ["", "-a"] {
        let w = window(extra);
        let w: Vec<&str> = w.iter().map(String::as_str).collect();
        both(&base, &w, &[]);
    }
    // The daemon chooses the archive: rrdtool sends no resolution.
    both(
        &base,
        &[
            "fetch",
            "--daemon",
            a,
            "f.rrd",
            "MAX",
            "-r",
            "3600",
            "-s",
            "1600100000",
            "-e",
            "1600170000",
        ],
        &[],
    );
    both(&base, &["fetch", "--daemon", a, "f.rrd", "BOGUS"], &[]);
    let more = gauge_updates(9, 3);
    queue(Peer::Rrdtool, &base, a, "f.rrd", &more);
    both(&base, &["lastupdate", "--daemon", a, "f.rrd"], &[]);
    let more = gauge_updates(12, 3);
    queue(Peer::Rrdtool, &base, a, "f.rrd", &more);
    both(&base, &["dump", "--daemon", a, "f.rrd"], &[]);
    // Options rrdtool's commands do not take with a daemon.
    both(&base, &["lastupdate", "--daemon", a, "-F", "f.rrd"], &[]);
    both(&base, &["updatev", "--daemon", a, "f.rrd", "N:1:2"], &[]);
    both(&base, &["update", "--daemon", a, "-t", "load", "-s", "f.rrd", "N:1"], &[]);
    // The daemon's refusals, as rrdtool reports them.
    std::fs::write(base.join("junk.rrd"), b"not an rrd").expect("write");
    each_like_rrdtool(
        &base,
        &[
            &["info", "--daemon", a, "junk.rrd"][..],
            &["info", "--daemon", a, "-F", "nothere.rrd"],
            &["last", "--daemon", a, "junk.rrd"],
            &["first", "--daemon", a, "junk.rrd"],
            &["fetch", "--daemon", a, "junk.rrd", "AVERAGE"],
            &["lastupdate", "--daemon", a, "junk.rrd"],
            &["dump", "--daemon", a, "nothere.rrd"],
            &["info", "--daemon", a, "../outside.rrd"],
            &["info", "--daemon", a, "nodir/x.rrd"],
            &["update", "--daemon", a, "nothere.rrd", "N:1:2"],
        ],
    );
}

/// `RRDCACHED_ADDRESS` is used when no `--daemon` is given; `--daemon`
/// wins over it, `--daemon ""` means no daemon; `updatev` refuses to run
/// with the variable set (rrdtool's words; see the module doc of the
/// command line for why mapwise refuses a non-empty one too).
#[test]
fn the_environment_names_the_daemon_as_for_rrdtool() {
    let d = daemon(false);
    let base = d.base.clone();
    let f = put(&d, "gauge.rrd", "f.rrd");
    let before = std::fs::read(&f).expect("read");
    let env = [("RRDCACHED_ADDRESS", d.addr.as_str())];
    let ups = gauge_updates(1, 3);
    must(mw_env(&base, &args(&["update", "f.rrd"], &ups), &env));
    assert_eq!(std::fs::read(&f).expect("read"), before, "queued, not written");
    assert_eq!(d.pending("f.rrd"), ups);
    both(&base, &["info", "--noflush", "f.rrd"], &env);
    both(&base, &["last", "f.rrd"], &env);
    // --daemon wins: a dead address in --daemon fails the same way.
    let dead = format!("unix:{}", base.join("nobody.sock").display());
    both(&base, &["update", "--daemon", &dead, "f.rrd", "N:1:2"], &env);
    assert_eq!(d.pending("f.rrd").len(), 3);
    // An empty --daemon: no daemon at all, whatever the environment says.
    let dead_env = [("RRDCACHED_ADDRESS", dead.as_str())];
    both(&base, &["info", "--daemon", "", "f.rrd"], &dead_env);
    // updatev: rrdtool refuses when the variable is empty; mapwise also
    // when it names a daemon (rrdtool would write behind the queue).
    both(&base, &["updatev", "f.rrd", "N:1:2"], &[("RRDCACHED_ADDRESS", "")]);
    let o = mw_env(&base, &["updatev", "f.rrd", "N:1:2"], &env);
    assert_eq!(o.status.code(), Some(1));
    let want = rt_env(&base, &["updatev", "f.rrd", "N:1:2"], &[("RRDCACHED_ADDRESS", "")]);
    assert_eq!(o.stderr, want.stderr);
    assert_eq!(std::fs::read(&f).expect("read"), before);
    must(mw_env(&base, &["flushcached", "f.rrd"], &env));
    let peer = put(&d, "gauge.rrd", "peer.rrd");
    must(rt_env(&base, &args(&["update", "peer.rrd"], &ups), &[]));
    same_files("queued through RRDCACHED_ADDRESS", &f, &peer);
}

/// A daemon on loopback TCP: relative names go as given (the daemon
/// resolves them in its base directory), absolute ones are refused unless
/// `RRDCACHED_STRIPPATH` removes their start; the same results as
/// rrdtool's, default port included.
#[test]
fn a_loopback_tcp_daemon_answers_as_for_rrdtool() {
    let (d, base, ours, peer) = twins(true);
    let a = d.addr.as_str();
    let ups = gauge_updates(1, 4);
    queue(Peer::Mapwise, &base, a, "ours.rrd", &ups);
    queue(Peer::Rrdtool, &base, a, "peer.rrd", &ups);
    assert_eq!(d.pending("ours.rrd").len(), 4);
    let abs = ours.display().to_string();
    both(&base, &["info", "--daemon", a, "-F", &abs], &[]);
    let strip = [("RRDCACHED_STRIPPATH", base.to_str().expect("utf-8"))];
    both(&base, &["last", "--daemon", a, &abs], &strip);
    both(
        &base,
        &["fetch", "--daemon", a, "ours.rrd", "AVERAGE", "-s", "1600165000", "-e", "1600170000"],
        &[],
    );
    // The port is needed: nothing listens on 42217 here.
    let host = a.rsplit_once(':').map_or(a, |(h, _)| h);
    both(&base, &["update", "--daemon", host, "ours.rrd", "N:1:2"], &[]);
    must(rt_env(&base, &["flushcached", "--daemon", a, "peer.rrd"], &[]));
    same_files("flushed over TCP", &ours, &peer);
}

/// A UNIX socket with nobody listening, a missing socket, and a refused
/// TCP port: rrdtool's message and exit status for every command (reads
/// still print the file, then fail, as rrdtool's do; `create` creates the
/// file itself, as rrdtool's does), and no file changes.
#[test]
fn a_daemon_that_is_down_fails_as_for_rrdtool() {
    let dir = crate::support::tempdir();
    let d = dir.path();
    let f = copy("gauge.rrd", d, "f.rrd");
    let before = std::fs::read(&f).expect("read");
    let sock = d.join("dead.sock");
    drop(UnixListener::bind(&sock).expect("bind"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let addrs = [
        format!("unix:{}", sock.display()),
        sock.display().to_string(),
        format!("unix:{}", d.join("missing.sock").display()),
        format!("127.0.0.1:{port}"),
        "[::1".to_owned(),
    ];
    for a in &addrs {
        for cmd in [
            &["update", "--daemon", a, "f.rrd", "N:1:2"][..],
            &["update", "--daemon", a, "-t", "temp", "f.rrd", "N:1"],
            &["info", "--daemon", a, "f.rrd"],
            &["info", "--daemon", a, "--noflush", "f.rrd"],
            &["last", "--daemon", a, "f.rrd"],
            &["first", "--daemon", a, "f.rrd"],
            &["lastupdate", "--daemon", a, "f.rrd"],
            &["fetch", "--daemon", a, "f.rrd", "AVERAGE", "-s", "1600160000", "-e", "1600166414"],
            &["dump", "--daemon", a, "f.rrd"],
            &["info", "--daemon", a, "missing.rrd"],
            &["flushcached", "--daemon", a, "f.rrd"],
        ] {
            both(d, cmd, &[]);
            assert_eq!(std::fs::read(&f).expect("read"), before, "{cmd:?}");
        }
        let env = [("RRDCACHED_ADDRESS", a.as_str())];
        both(d, &["update", "f.rrd", "N:1:2"], &env);
        assert_eq!(std::fs::read(&f).expect("read"), before);
    }
    // create: rrdtool creates the file itself and succeeds.
    let dead = &addrs[0];
    let def = ["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"];
    must(mw_env(
        d,
        &args(&["create", "--daemon", dead, "new.rrd", "-b", "1600000000"], &def.map(String::from)),
        &[],
    ));
    must(rt_env(
        d,
        &args(
            &["create", "--daemon", dead, "new2.rrd", "-b", "1600000000"],
            &def.map(String::from),
        ),
        &[],
    ));
    assert!(d.join("new.rrd").is_file() && d.join("new2.rrd").is_file());
}

/// A fake daemon on a UNIX socket that reads one request and then does
/// what `reply` says; the request line it got.
fn fake(
    sock: &Path,
    reply: fn(&mut std::os::unix::net::UnixStream),
) -> std::thread::JoinHandle<Vec<u8>> {
    let l = UnixListener::bind(sock).expect("bind");
    l.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let mut got = Vec::new();
        // Give up when no client comes (a test that failed early).
        let start = Instant::now();
        let accepted = loop {
            match l.accept() {
                Ok((s, _)) => break Some(s),
                Err(_) if start.elapsed() < Duration::from_secs(20) => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => break None,
            }
        };
        if let Some(mut s) = accepted {
            let _ = s.set_nonblocking(false);
            let mut b = [0u8; 4096];
            while !got.contains(&b'\n') {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&b[..n]),
                }
            }
            reply(&mut s);
        }
        got
    })
}

/// A daemon that answers with an error, hangs up, never answers, or
/// floods: rrdtool's message where rrdtool gives one (the fake daemon is
/// run once for each), a bounded wait and bounded memory where rrdtool
/// would hang, and the file untouched every time.
#[test]
fn a_daemon_that_misbehaves_gets_rrdtools_errors_and_never_a_hang() {
    let dir = crate::support::tempdir();
    let d = dir.path();
    let f = copy("gauge.rrd", d, "f.rrd");
    let before = std::fs::read(&f).expect("read");
    let run_both = |reply: fn(&mut std::os::unix::net::UnixStream), cmd: &[&str]| {
        let sock = d.join("fake.sock");
        let mut outs = Vec::new();
        for ours in [true, false] {
            let _ = std::fs::remove_file(&sock);
            let h = fake(&sock, reply);
            let a = format!("unix:{}", sock.display());
            let full: Vec<&str> =
                cmd.iter().map(|w| if *w == "ADDR" { a.as_str() } else { w }).collect();
            let o = if ours { mw_env(d, &full, &[]) } else { rt_env(d, &full, &[]) };
            outs.push((o, h.join().expect("fake daemon")));
        }
        let (theirs, peer_req) = outs.pop().expect("rrdtool");
        let (ours, our_req) = outs.pop().expect("ours");
        same(&format!("{cmd:?}"), &ours, &theirs);
        assert_eq!(
            String::from_utf8_lossy(&our_req),
            String::from_utf8_lossy(&peer_req),
            "the request line"
        );
    };
    let refuse: fn(&mut std::os::unix::net::UnixStream) = |s| {
        let _ = s.write_all(b"-1 Go away, I am busy\n");
    };
    let hang_up: fn(&mut std::os::unix::net::UnixStream) = |_| {};
    let short: fn(&mut std::os::unix::net::UnixStream) = |s| {
        let _ = s.write_all(b"3 three lines follow\nonly one\n");
    };
    let garbage: fn(&mut std::os::unix::net::UnixStream) = |s| {
        let _ = s.write_all(b"what?\n");
    };
    for reply in [refuse, hang_up, short, garbage] {
        for cmd in [
            &["update", "--daemon", "ADDR", "f.rrd", "1600170000:1:2", "1600170300:3 4"][..],
            &["info", "--daemon", "ADDR", "f.rrd"],
            &["info", "--daemon", "ADDR", "-F", "f.rrd"],
            &["last", "--daemon", "ADDR", "f.rrd"],
            &["lastupdate", "--daemon", "ADDR", "f.rrd"],
            &[
                "fetch",
                "--daemon",
                "ADDR",
                "f.rrd",
                "AVERAGE",
                "-s",
                "1600160000",
                "-e",
                "1600166414",
            ],
            &["flushcached", "--daemon", "ADDR", "f.rrd"],
        ] {
            run_both(reply, cmd);
            assert_eq!(std::fs::read(&f).expect("read"), before, "{cmd:?}");
        }
    }
    // Silence and a flood: rrdtool would wait forever; mapwise gives up
    // after MAPWISE_RRDCACHED_TIMEOUT with rrdtool's words for a failed
    // read, within bounded memory.
    let silent: fn(&mut std::os::unix::net::UnixStream) =
        |_| std::thread::sleep(Duration::from_secs(4));
    let flood: fn(&mut std::os::unix::net::UnixStream) = |s| {
        let _ = s.write_all(b"2147483647 lines follow\n");
        let line = [b'x'; 4096];
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(4) && s.write_all(&line).is_ok() {}
    };
    for (reply, quiet) in [(silent, true), (flood, false)] {
        let sock = d.join("slow.sock");
        let _ = std::fs::remove_file(&sock);
        let h = fake(&sock, reply);
        let a = format!("unix:{}", sock.display());
        let start = Instant::now();
        let o = mw_env(
            d,
            &["update", "--daemon", &a, "f.rrd", "1600170000:1:2"],
            &[("MAPWISE_RRDCACHED_TIMEOUT", "1")],
        );
        assert!(start.elapsed() < Duration::from_secs(3), "gave up in time");
        assert_eq!(o.status.code(), Some(1));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("ERROR: request: internal error while talking to rrdcached"),
            "{err}"
        );
        // A daemon that says nothing: the wait is ours, and named.
        if quiet {
            assert!(err.contains("no answer within 1 s; MAPWISE_RRDCACHED_TIMEOUT"), "{err}");
        }
        drop(h);
        assert_eq!(std::fs::read(&f).expect("read"), before);
    }
}

/// `flushcached` writes what the daemon holds, for every file named, and
/// fails as rrdtool's does (no daemon named, a file the daemon does not
/// know, with rrdtool's odd message and its count of skipped files).
#[test]
fn flushcached_flushes_as_rrdtools() {
    let (d, base, ours, peer) = twins(false);
    let a = d.addr.as_str();
    let ups = gauge_updates(1, 6);
    for f in ["ours.rrd", "peer.rrd"] {
        queue(Peer::Rrdtool, &base, a, f, &ups);
    }
    must(mw_env(&base, &["flushcached", "--daemon", a, "ours.rrd"], &[]));
    assert!(d.pending("ours.rrd").is_empty());
    assert_eq!(d.pending("peer.rrd").len(), 6);
    must(rt_env(&base, &["flushcached", "--daemon", a, "peer.rrd"], &[]));
    same_files("flushcached", &ours, &peer);
    each_like_rrdtool(
        &base,
        &[
            &["flushcached", "ours.rrd"][..],
            &["flushcached", "--daemon", "", "ours.rrd"],
            &["flushcached", "--daemon", a],
            &["flushcached", "--daemon", a, "ours.rrd", "missing.rrd", "peer.rrd"],
            &["flushcached", "--daemon", a, "nodir/x.rrd", "ours.rrd"],
            &["flushcached", "--daemon", a, "ours.rrd", "peer.rrd"],
        ],
    );
}

/// `create` through the daemon: the daemon creates the file (rrdtool
/// sends `CREATE`), with the same header as rrdtool's through the same
/// daemon apart from the random row pointers; its refusals are
/// rrdtool's.
#[test]
fn create_goes_through_the_daemon_as_rrdtools() {
    let d = daemon(false);
    let base = d.base.clone();
    let a = d.addr.as_str();
    let defs = ["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10", "RRA:MAX:0.5:6:10"];
    for name in ["ours.rrd", "peer.rrd"] {
        let cmd = args(&["create", "--daemon", a, name, "-s", "5m", "-b", "1600000000"], &[]);
        let cmd: Vec<&str> = cmd.into_iter().chain(defs).collect();
        let o =
            if name == "ours.rrd" { mw_env(&base, &cmd, &[]) } else { rt_env(&base, &cmd, &[]) };
        assert!(o.status.success(), "{o:?}");
    }
    let info = |name: &str| -> String {
        let o = rt_env(&base, &["info", name], &[]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.contains("cur_row") && !l.starts_with("filename"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(info("ours.rrd"), info("peer.rrd"));
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        ["create", "--daemon", "ADDR", "x.rrd"].into_iter().chain(extra.iter().copied()).collect()
    };
    for cmd in [
        with(&["-O", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"]),
        with(&["DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10", "junk"]),
        with(&["DS:a:GAUGE:600:U:U"]),
        with(&["-b", "100", "DS:a:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"]),
    ] {
        std::fs::write(base.join("x.rrd"), b"exists").expect("write");
        let cmd: Vec<&str> = cmd.iter().map(|w| if *w == "ADDR" { a } else { w }).collect();
        both(&base, &cmd, &[]);
    }
}
