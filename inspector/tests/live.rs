//! Files that change under the reader: a writer process
//! shrinks a file to smaller sizes, grows it back and replaces it (rename
//! over) in a loop while the real `inspector open` watches it in tmux,
//! while `inspector record` samples it, and while the non-interactive
//! subcommands and the quiet `mapwise bolt` readers read it. Nothing may
//! die of SIGBUS (the shell running the TUI would record exit status
//! 135), every run ends with a status it
//! documents, and the view follows the file: each state the test sets is
//! waited for on screen (polling, generous limits; nothing is timed).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{Need, bin, mapwise, need, run, tmpdir};
use crate::tmux::{Tmux, shell_quote, wait_file};

/// The writer: `sh -c WRITER sh FILE ORIGINAL OTHER ROUNDS SIZES [FINAL]`.
/// Each round truncates FILE to every size in SIZES (in place, same
/// inode), writes ORIGINAL's bytes back over it, grows it 40 KiB past its
/// end (zeros), and every fourth round replaces it with a copy of OTHER by
/// rename. It ends with ORIGINAL's bytes in FILE, truncated to FINAL bytes
/// when given. The 20 ms pauses give each state a chance to be seen;
/// nothing depends on it being seen.
const WRITER: &str = r#"
f=$1 orig=$2 other=$3 rounds=$4 sizes=$5 final=$6
i=0
while [ "$i" -lt "$rounds" ]; do
  for s in $sizes; do truncate -s "$s" "$f" || exit 1; sleep 0.02; done
  cat "$orig" > "$f" || exit 1; sleep 0.02
  truncate -s +40960 "$f" || exit 1; sleep 0.02
  if [ $((i % 4)) -eq 3 ]; then
    cp "$other" "$f.new" && mv -f "$f.new" "$f" || exit 1; sleep 0.02
  fi
  cat "$orig" > "$f" || exit 1
  i=$((i + 1))
done
if [ -n "$final" ]; then truncate -s "$final" "$f" || exit 1; fi
"#;

/// A copy of a corpus file (`testdata/DIR/NAME`) in `dir`, synced.
fn copy(dir: &Path, sub: &str, name: &str, as_name: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata").join(sub).join(name);
    let to = dir.join(as_name);
    fs::copy(&from, &to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    fs::File::open(&to).and_then(|f| f.sync_all()).expect("fsync");
    to
}

/// Start the writer on `file` (see [`WRITER`]).
fn writer(
    file: &Path,
    original: &Path,
    other: &Path,
    rounds: u32,
    sizes: &str,
    last: Option<u64>,
) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(WRITER)
        .arg("sh")
        .arg(file)
        .arg(original)
        .arg(other)
        .arg(rounds.to_string())
        .arg(sizes)
        .arg(last.map(|n| n.to_string()).unwrap_or_default())
        .stdin(Stdio::null());
    c
}

/// The size of `file` set in place, keeping its inode.
fn set_len(file: &Path, len: u64) {
    fs::OpenOptions::new().write(true).open(file).and_then(|f| f.set_len(len)).expect("truncate");
}

/// `file` replaced by a copy of `with`, by rename (a new inode).
fn rename_over(file: &Path, with: &Path) {
    let tmp = file.with_extension("new");
    fs::copy(with, &tmp).expect("copy");
    fs::rename(&tmp, file).expect("rename over");
}

/// `inspector open FILE --interval 100` in tmux; the shell writes the
/// inspector's exit status to `rc` when it ends (135 for SIGBUS).
fn open_tui(file: &Path, rc: &Path) -> Tmux {
    let cmd = format!(
        "{} open {} --interval 100; echo $? > {}",
        shell_quote(Path::new(bin())),
        shell_quote(file),
        shell_quote(rc)
    );
    Tmux::new(160, 40, &cmd)
}

/// Wait (polling every 100 ms, at most 30 s: a loaded two-core machine)
/// until the screen shows every text of `want` and none of `not`, with
/// the structure read again (no "re-reading…"), and the inspector is
/// still running.
fn expect(t: &Tmux, rc: &Path, what: &str, want: &[&str], not: &[&str]) -> String {
    let screen = t
        .wait_for(300, Duration::from_millis(100), |s| {
            // "re-reading…": residency is new, the structure not yet.
            want.iter().all(|w| s.contains(w))
                && !not.iter().any(|n| s.contains(n))
                && !s.contains("re-reading")
        })
        .unwrap_or_else(|s| {
            let code = fs::read_to_string(rc).unwrap_or_default();
            panic!("{what}: want {want:?}, not {not:?}; exit status {code:?}; screen:\n{s}")
        });
    assert!(!rc.exists(), "{what}: the inspector ended: {:?}", fs::read_to_string(rc));
    screen
}

/// Let the writer run to its end while the TUI watches, checking between
/// screens that the inspector is alive.
fn race(t: &Tmux, rc: &Path, mut w: Child) {
    let mut screens = 0;
    let status = loop {
        if let Some(status) = w.try_wait().expect("wait for the writer") {
            break status;
        }
        let _ = t.screen();
        screens += 1;
        assert!(
            !rc.exists(),
            "the inspector ended while the writer ran (exit status {:?}; 135 is SIGBUS):\n{}",
            fs::read_to_string(rc),
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "the writer failed: {status}");
    eprintln!("the writer ran under the TUI; {screens} screens captured meanwhile");
}

/// Quit with `q`; the inspector must exit 0.
fn quit(t: &Tmux, rc: &Path) {
    t.keys(&["q"]);
    let code = wait_file(rc, Duration::from_secs(30)).expect("the inspector did not exit");
    assert_eq!(code.trim(), "0", "exit status after q");
}

/// Cells of the map (`┃ 0 …` rows) drawn `×`, past the end of the file.
/// At 160 columns and one page per cell, a cell is two columns wide.
fn past_end_cells(screen: &str) -> usize {
    let glyphs: usize = screen
        .lines()
        .filter(|l| l.starts_with('┃'))
        .map(|l| l.chars().filter(|&c| c == '×').count())
        .sum();
    assert_eq!(glyphs % 2, 0, "half a cell drawn past the end:\n{screen}");
    glyphs / 2
}

#[test]
fn tui_follows_a_bbolt_file_shrunk_grown_and_replaced() {
    need(&[Need::Tmux]);
    let dir = tmpdir();
    let file = copy(dir.path(), "bolt", "etcd-small.db", "live.db");
    let original = copy(dir.path(), "bolt", "etcd-small.db", "original.db");
    let other = copy(dir.path(), "bolt", "small.db", "other.db");
    let rc = dir.path().join("rc");
    let t = open_tui(&file, &rc);
    // etcd-small.db: 55 pages of 4 KiB (Go bbolt's hwm), 10 buckets.
    expect(&t, &rc, "start", &["/55 pages", "10 buckets", "220 KiB"], &["TRUNCATED"]);

    // Cut mid-page: 25 pages remain (the 25th partly); the meta pages still
    // claim 55, so the rest is drawn past the end.
    set_len(&file, 100_000);
    let s = expect(
        &t,
        &rc,
        "cut to 100000 bytes",
        &["97.7 KiB TRUNCATED: the header says 220 KiB", "/25 pages"],
        &[],
    );
    assert_eq!(past_end_cells(&s), 55 - 25, "{s}");
    set_len(&file, 8192);
    let s = expect(
        &t,
        &rc,
        "cut to 8192 bytes",
        &["8 KiB TRUNCATED: the header says 220 KiB", "/2 pages"],
        &[],
    );
    assert_eq!(past_end_cells(&s), 55 - 2, "{s}");
    set_len(&file, 0);
    expect(&t, &rc, "emptied", &["empty file", "Resident 0/0 pages"], &[]);
    // Grown back in place (same inode) to the original bytes.
    fs::write(&file, fs::read(&original).unwrap()).unwrap();
    let s =
        expect(&t, &rc, "written back", &["/55 pages", "10 buckets", "220 KiB"], &["TRUNCATED"]);
    assert_eq!(past_end_cells(&s), 0, "{s}");
    // Replaced by another bbolt file (small.db: 16 pages, 7 buckets).
    rename_over(&file, &other);
    expect(
        &t,
        &rc,
        "renamed over with small.db",
        &["/16 pages", "7 buckets", "64 KiB"],
        &["TRUNCATED", "/55 pages"],
    );
    rename_over(&file, &original);
    expect(&t, &rc, "renamed back", &["/55 pages", "10 buckets"], &["TRUNCATED"]);

    // The writer loop: 12 rounds of cuts mid-page, at page boundaries, to
    // one byte and to nothing, growth past the end and renames.
    let w = writer(&file, &original, &other, 12, "100000 40960 8192 4097 1 0", None)
        .spawn()
        .expect("start the writer");
    race(&t, &rc, w);
    let s = expect(
        &t,
        &rc,
        "after the writer",
        &["/55 pages", "10 buckets", "220 KiB"],
        &["TRUNCATED"],
    );
    assert_eq!(past_end_cells(&s), 0, "{s}");
    quit(&t, &rc);
}

#[test]
fn tui_follows_an_rrd_file_shrunk_grown_and_replaced() {
    need(&[Need::Tmux]);
    let dir = tmpdir();
    // hw.rrd: rrdtool's file of 33440 bytes (9 OS pages); gauge.rrd: 9152
    // bytes (3 pages).
    let file = copy(dir.path(), "rrd", "hw.rrd", "live.rrd");
    let original = copy(dir.path(), "rrd", "hw.rrd", "original.rrd");
    let other = copy(dir.path(), "rrd", "gauge.rrd", "other.rrd");
    let rc = dir.path().join("rc");
    let t = open_tui(&file, &rc);
    expect(&t, &rc, "start", &["│ rrd │ 32.7 KiB", "/9 pages", "HWPREDICT"], &["TRUNCATED"]);
    // Cut inside the rows: the header still says 33440 bytes.
    set_len(&file, 10_000);
    let s = expect(
        &t,
        &rc,
        "cut to 10000 bytes",
        &["9.8 KiB TRUNCATED: the header says 32.7 KiB", "/3 pages"],
        &[],
    );
    assert_eq!(past_end_cells(&s), 9 - 3, "{s}");
    // Cut inside the header: no structure to claim a length.
    set_len(&file, 100);
    expect(&t, &rc, "cut to 100 bytes", &["rrd (unreadable)", "/1 pages"], &[]);
    fs::write(&file, fs::read(&original).unwrap()).unwrap();
    let s = expect(
        &t,
        &rc,
        "written back",
        &["│ rrd │ 32.7 KiB", "/9 pages"],
        &["TRUNCATED", "unreadable"],
    );
    assert_eq!(past_end_cells(&s), 0, "{s}");
    rename_over(&file, &other);
    expect(
        &t,
        &rc,
        "renamed over with gauge.rrd",
        &["│ rrd │ 8.9 KiB", "/3 pages"],
        &["TRUNCATED", "HWPREDICT"],
    );

    let w = writer(&file, &original, &other, 12, "20000 10000 4096 100 0", None)
        .spawn()
        .expect("start the writer");
    race(&t, &rc, w);
    expect(
        &t,
        &rc,
        "after the writer",
        &["│ rrd │ 32.7 KiB", "/9 pages", "HWPREDICT"],
        &["TRUNCATED", "unreadable"],
    );
    quit(&t, &rc);
}

#[test]
fn record_and_subcommands_survive_a_shrinking_writer() {
    let dir = tmpdir();
    let bolt = copy(dir.path(), "bolt", "etcd-small.db", "live.db");
    let bolt_original = copy(dir.path(), "bolt", "etcd-small.db", "original.db");
    let bolt_other = copy(dir.path(), "bolt", "small.db", "other.db");
    let rrd = copy(dir.path(), "rrd", "hw.rrd", "live.rrd");
    let rrd_original = copy(dir.path(), "rrd", "hw.rrd", "original.rrd");
    let rrd_other = copy(dir.path(), "rrd", "gauge.rrd", "other.rrd");
    let trace = dir.path().join("live.trace");

    // `inspector record` around the bolt writer: it samples every 5 ms
    // while the writer runs, and once more when it has exited, when the
    // file is cut to 3 pages (12288 bytes).
    let mut record = Command::new(bin())
        .arg("record")
        .arg(&bolt)
        .arg("-o")
        .arg(&trace)
        .args(["--interval", "5", "--"])
        .arg("sh")
        .arg("-c")
        .arg(WRITER)
        .arg("sh")
        .arg(&bolt)
        .arg(&bolt_original)
        .arg(&bolt_other)
        .arg("12")
        .arg("100000 40960 8192 4097 1 0")
        .arg("12288")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start inspector record");
    let mut rrd_writer =
        writer(&rrd, &rrd_original, &rrd_other, 12, "20000 10000 4096 100 0", None)
            .spawn()
            .expect("start the rrd writer");

    // Meanwhile, every subcommand, again and again, on both files.
    let mw = mapwise();
    let mut runs = 0;
    let mut fails = Vec::new();
    loop {
        let rrd_done = rrd_writer.try_wait().expect("wait").is_some();
        let bolt_done = record.try_wait().expect("wait").is_some();
        if rrd_done && bolt_done {
            break;
        }
        for f in [&bolt, &rrd] {
            let p = f.to_str().expect("utf-8 path");
            for args in [
                &["residency", p][..],
                &["residency", p, "--json"],
                &["layout", p, "--json"],
                &["check", p],
                &["pages", p],
                &["page", p, "0", "1"],
            ] {
                let r = run(args, Duration::from_secs(60));
                runs += 1;
                // 0 fine, 1 problems (a cut file has them), 2 could not
                // run (not bbolt at this instant, gone mid-rename); a
                // signal has no code.
                if !matches!(r.code, Some(0..=2)) || r.stderr.contains("panicked") {
                    fails.push(format!("inspector {args:?}: {:?}: {}", r.code, r.stderr));
                }
                if args.contains(&"--json")
                    && r.code == Some(0)
                    && let Err(e) = serde_json::from_str::<serde_json::Value>(&r.stdout)
                {
                    fails.push(format!("inspector {args:?}: not JSON ({e}): {}", r.stdout));
                }
            }
        }
        // And the quiet `mapwise bolt` readers (no lock, no mapping), which
        // settle their reads the same way.
        let p = bolt.to_str().expect("utf-8 path");
        for args in [["bolt", "check", p], ["bolt", "pages", p], ["bolt", "info", p]] {
            let out =
                Command::new(&mw).args(args).stdin(Stdio::null()).output().expect("run mapwise");
            runs += 1;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !matches!(out.status.code(), Some(0..=2)) || stderr.contains("panicked") {
                fails.push(format!("mapwise {args:?}: {}: {stderr}", out.status));
            }
        }
    }
    assert!(fails.is_empty(), "{runs} runs; failures:\n{}", fails.join("\n"));
    eprintln!("{runs} subcommand runs raced the writers");

    let status = rrd_writer.wait().expect("wait");
    assert!(status.success(), "the rrd writer failed: {status}");
    let out = record.wait_with_output().expect("record");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "inspector record: {stderr}");

    let t = mapwise_native::observe::trace::read(&trace).expect("the trace reads back");
    assert!(!t.truncated_tail, "the trace ends with a whole frame");
    let lens: std::collections::BTreeSet<u64> = t.frames.iter().map(|f| f.file_len).collect();
    eprintln!("{} frames; file lengths seen: {lens:?}", t.frames.len());
    // The sample taken after the writer exited sees the final cut.
    assert_eq!(t.frames.last().map(|f| f.file_len), Some(12288), "{lens:?}");
    // And the frames follow the file: a frame never claims a resident page
    // past its own length (the reader checks that), and more than one
    // length was seen.
    assert!(lens.len() > 1, "{lens:?}");
}
