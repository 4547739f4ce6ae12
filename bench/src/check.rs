//! `cargo xtask bench check DIR`: the harness's own test of a report
//! directory, against the report model ([`crate::report`]) that
//! results.json stores: nothing is parsed back from Markdown.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use crate::report::{Block, Report, Verdict};

/// Long help of `cargo xtask bench check`.
pub const HELP: &str = "\
Checks a report directory written by `cargo xtask bench NAME` or `bench all`
(then the index and every sub-directory holding a report):
  - results.json parses and holds the report's model (`report`), which
    reads back as the model;
  - REPORT.md is exactly the rendering of that model;
  - every table keeps its declared roles: a value in every cell of ours'
    and the peer's columns (and in the headline of rows that are ours or
    the peer's), not empty, `—`, `?`, `n/a`, `unknown` or NaN; `unavailable:
    <reason>` only in limits tables, where a row that could not be
    measured must say it;
  - every chart the report shows exists and is not empty, every trace
    results.json lists exists and reads back as a trace, and traces/
    holds no more and no fewer (a published run, which leaves traces/
    out, is checked without them; its results.json may be gzipped);
  - in a `bench all` index: every bench exited with status 0, its listed
    verdicts are those of its own report, and its count cell agrees.
Prints one line per problem (FILE:LINE: what) and exits 1 when there is
any; prints a summary on stderr and exits 0 otherwise.

  cargo xtask bench check DIR";

/// `bench check` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A report directory (`target/bench/<stamp>`, or a `bench all`
    /// directory with one sub-directory per bench).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
}

/// One thing wrong with a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file, as named from the directory given on the command line.
    pub file: String,
    /// 1-based line in that file, when the problem has one.
    pub line: Option<usize>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.file, self.what),
            None => write!(f, "{}: {}", self.file, self.what),
        }
    }
}

/// What [`check_dir`] found.
#[derive(Debug, Default)]
pub struct DirCheck {
    /// Every problem, in the order found.
    pub problems: Vec<Problem>,
    /// Reports read.
    pub reports: usize,
    /// Tables checked.
    pub tables: usize,
    /// Charts and traces looked at.
    pub files: usize,
}

impl DirCheck {
    fn add(&mut self, file: &Path, line: Option<usize>, what: impl Into<String>) {
        self.problems.push(Problem { file: file.display().to_string(), line, what: what.into() });
    }
}

/// Runs `cargo xtask bench check DIR`.
///
/// # Errors
/// Never for a bad report (that is exit status 1 with the problems
/// listed); only when DIR is not a directory.
pub fn run(args: &Args) -> Result<ExitCode> {
    anyhow::ensure!(args.dir.is_dir(), "{} is not a directory", args.dir.display());
    let c = check_dir(&args.dir);
    for p in &c.problems {
        println!("{p}");
    }
    if c.problems.is_empty() {
        eprintln!(
            "xtask: bench check: {} report(s), {} table(s), {} file(s): OK",
            c.reports, c.tables, c.files
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("xtask: bench check: {} problem(s) in {} report(s)", c.problems.len(), c.reports);
        Ok(ExitCode::FAILURE)
    }
}

/// Checks the report in `dir` and, recursively, every sub-directory
/// holding a results.json (a `bench all` run). File names in the problems
/// start with `dir` as given.
#[must_use]
pub fn check_dir(dir: &Path) -> DirCheck {
    let mut c = DirCheck::default();
    check_one(dir, &mut c);
    c
}

/// The text of `dir`'s results.json, or of results.json.gz (a published
/// run gzips a large one): (the file read, its text).
///
/// # Errors
/// When neither can be read, naming results.json.
pub fn results_text(dir: &Path) -> Result<(PathBuf, String), (PathBuf, String)> {
    let plain = dir.join("results.json");
    let gz = dir.join("results.json.gz");
    if !plain.exists() && gz.exists() {
        let mut text = String::new();
        return fs::File::open(&gz)
            .and_then(|f| {
                std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(f), &mut text)
            })
            .map(|_| (gz.clone(), text))
            .map_err(|e| (gz, format!("cannot read: {e}")));
    }
    fs::read_to_string(&plain)
        .map(|t| (plain.clone(), t))
        .map_err(|e| (plain, format!("cannot read: {e}")))
}

/// results.json of `dir` as JSON and its report model, or the problem.
fn read_results(dir: &Path, c: &mut DirCheck) -> Option<(serde_json::Value, Report)> {
    let (path, text) = results_text(dir).map_err(|(p, e)| c.add(&p, None, e)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| c.add(&path, Some(e.line()), format!("does not parse: {e}")))
        .ok()?;
    let Some(model) = v.get("report") else {
        c.add(&path, None, "holds no report model (`report`)");
        return None;
    };
    let report = serde_json::from_value::<Report>(model.clone())
        .map_err(|e| c.add(&path, None, format!("its report does not read back: {e}")))
        .ok()?;
    Some((v, report))
}

fn check_one(dir: &Path, c: &mut DirCheck) {
    let report_path = dir.join("REPORT.md");
    let json_path = dir.join("results.json");
    c.reports += 1;
    if let Some((v, report)) = read_results(dir, c) {
        c.tables += report.tables().count();
        for p in report.problems() {
            c.add(&json_path, None, p);
        }
        match fs::read_to_string(&report_path) {
            Ok(text) => {
                let want = report.markdown();
                if want != text {
                    let line = want.lines().zip(text.lines()).position(|(a, b)| a != b);
                    let line =
                        line.unwrap_or_else(|| want.lines().count().min(text.lines().count()));
                    c.add(
                        &report_path,
                        Some(line + 1),
                        "is not the rendering of results.json's report",
                    );
                }
            }
            Err(e) => c.add(&report_path, None, format!("cannot read: {e}")),
        }
        for f in report.files() {
            c.files += 1;
            if fs::metadata(dir.join(f)).map_or(true, |m| m.len() == 0) {
                c.add(&report_path, None, format!("shows {f}, which is missing or empty"));
            }
        }
        check_traces(dir, &json_path, &v, c);
        if v.get("bench").and_then(serde_json::Value::as_str) == Some("all") {
            check_index(dir, &json_path, &v, &report, c);
        }
    }
    let mut subs: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir() && (p.join("results.json").exists() || p.join("results.json.gz").exists())
        })
        .collect();
    subs.sort();
    for s in subs {
        check_one(&s, c);
    }
}

/// Every trace results.json lists (`traces`: objects with `file`) exists
/// and reads back, and traces/ holds exactly those. A directory without
/// traces/ at all is a published run, whose traces were left out.
fn check_traces(dir: &Path, json_path: &Path, v: &serde_json::Value, c: &mut DirCheck) {
    if !dir.join("traces").is_dir() {
        return;
    }
    let listed: Vec<&str> = v
        .get("traces")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("file").and_then(serde_json::Value::as_str))
        .collect();
    for t in &listed {
        c.files += 1;
        let p = dir.join(t);
        if !p.exists() {
            c.add(json_path, None, format!("trace {t} is missing"));
        } else if let Err(e) = mapwise_native::observe::trace::read(&p) {
            c.add(json_path, None, format!("trace {t} does not read back: {e}"));
        }
    }
    let on_disk = count_traces(&dir.join("traces"));
    if on_disk != listed.len() {
        c.add(json_path, None, format!("lists {} traces, traces/ holds {on_disk}", listed.len()));
    }
}

/// Trace files under `dir`, recursively (a multi-file run keeps one
/// directory of traces).
fn count_traces(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, |rd| {
        rd.filter_map(std::result::Result::ok)
            .map(|e| {
                let p = e.path();
                if p.is_dir() {
                    count_traces(&p)
                } else {
                    usize::from(p.extension().is_some_and(|x| x == "trace"))
                }
            })
            .sum()
    })
}

/// A `bench all` index: every bench exited 0, its verdicts are its own
/// report's, and the count cell of its row says how many passed.
fn check_index(
    dir: &Path,
    json_path: &Path,
    v: &serde_json::Value,
    index: &Report,
    c: &mut DirCheck,
) {
    for b in v.get("benches").and_then(serde_json::Value::as_array).into_iter().flatten() {
        let name = b.get("name").and_then(serde_json::Value::as_str).unwrap_or("?");
        match b.get("status").and_then(serde_json::Value::as_i64) {
            Some(0) => {}
            Some(s) => c.add(json_path, None, format!("bench {name} exited with status {s}")),
            None => c.add(json_path, None, format!("bench {name} was killed by a signal")),
        }
        let listed: Vec<Verdict> = b
            .get("verdicts")
            .and_then(|x| serde_json::from_value(x.clone()).ok())
            .unwrap_or_default();
        let sub = b.get("dir").and_then(serde_json::Value::as_str).unwrap_or_default();
        let own = crate::all::verdicts(&dir.join(sub));
        if listed != own {
            c.add(
                json_path,
                None,
                format!(
                    "bench {name}: lists {} verdict(s), its report has {} (or they differ)",
                    listed.len(),
                    own.len()
                ),
            );
        }
        let (pass, fail) = crate::all::verdict_counts(&own);
        let count = format!("{pass} PASS, {fail} FAIL");
        let row = index.blocks.iter().find_map(|bl| match bl {
            Block::Table(t) => t.rows.iter().find(|r| r.cells.first().is_some_and(|x| x == name)),
            _ => None,
        });
        if row.is_some_and(|r| r.cells.last() != Some(&count)) {
            c.add(
                &dir.join("REPORT.md"),
                None,
                format!("bench {name}: the count cell is not \"{count}\""),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Outcome, Role, Table};

    /// A real trace file's bytes: header and two frames.
    fn trace_bytes() -> Vec<u8> {
        use mapwise_core::trace::{Frame, Header, encode_frame, encode_header};
        let mut b = encode_header(&Header {
            path: "f.db".into(),
            label: "test".into(),
            os_page_size: 4096,
            interval_us: 50_000,
            started_unix_ms: 0,
        })
        .unwrap();
        for t in [0, 50_000] {
            b.extend(encode_frame(&Frame::from_bitmap(t, 8192, true, &[1], 2)).unwrap());
        }
        b
    }

    fn report(ours: &str) -> Report {
        let mut r = Report::new("bench x");
        let mut t = Table::new(&["cell", ">ours", ">peer", ">ratio"])
            .compares(&[1], &[2])
            .roles(Role::Ratio, &[3]);
        t.row(["cold", ours, "2 s", "—"]);
        let mut l = Table::new(&["what", ">time", "notes"]).limits();
        l.row(["O_DIRECT", "—", "unavailable: EINVAL"]);
        r.table(t).table(l).image("ratios", "ratios.svg");
        r.verdicts(vec![
            Verdict::new("cold", Outcome::Pass, "0.5×"),
            Verdict::new("warm", Outcome::Fail, "2×"),
        ]);
        r
    }

    /// A bench directory as `output::publish` writes it, with a
    /// chart and one trace.
    fn bench_dir(root: &Path, name: &str, r: &Report) -> PathBuf {
        let d = root.join(name);
        fs::create_dir_all(d.join("traces")).unwrap();
        fs::write(d.join("ratios.svg"), "<svg/>").unwrap();
        fs::write(d.join("traces/cold-ours-1.trace"), trace_bytes()).unwrap();
        let results =
            serde_json::json!({"bench": name, "traces": [{"file": "traces/cold-ours-1.trace"}]});
        crate::output::publish(&d, r, &results, &[]).unwrap();
        d
    }

    fn problems(d: &Path) -> Vec<String> {
        check_dir(d).problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_report_is_checked_against_its_model() {
        let root = tempfile::tempdir().unwrap();
        let d = bench_dir(root.path(), "one", &report("1 s"));
        assert_eq!(problems(&d), Vec::<String>::new());
        assert_eq!(check_dir(&d).tables, 2);

        // A hand edit of the Markdown.
        let md = fs::read_to_string(d.join("REPORT.md")).unwrap();
        fs::write(d.join("REPORT.md"), md.replace(" 1 s |", " 9 s |")).unwrap();
        let p = problems(&d);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("REPORT.md:5: is not the rendering"), "{p:?}");
        fs::write(d.join("REPORT.md"), md).unwrap();

        // An empty value where ours belongs.
        let d = bench_dir(root.path(), "two", &report("—"));
        let p = problems(&d);
        assert!(p.len() == 1 && p[0].contains("column \"ours\""), "{p:?}");
    }

    #[test]
    fn charts_and_traces_must_be_there() {
        let root = tempfile::tempdir().unwrap();
        let d = bench_dir(root.path(), "one", &report("1 s"));
        fs::remove_file(d.join("ratios.svg")).unwrap();
        assert!(problems(&d)[0].contains("shows ratios.svg, which is missing"));
        fs::write(d.join("ratios.svg"), "<svg/>").unwrap();
        fs::write(d.join("traces/cold-ours-1.trace"), b"not a trace").unwrap();
        assert!(problems(&d)[0].contains("does not read back"));
        fs::remove_file(d.join("traces/cold-ours-1.trace")).unwrap();
        let p = problems(&d);
        assert!(p.iter().any(|p| p.contains("trace traces/cold-ours-1.trace is missing")), "{p:?}");
        assert!(p.iter().any(|p| p.contains("lists 1 traces, traces/ holds 0")), "{p:?}");
        fs::write(d.join("results.json"), "{\"bench\": \"x\",\n\"charts\": [}").unwrap();
        assert!(problems(&d)[0].contains("results.json:2: does not parse"));
        fs::write(d.join("results.json"), "{\"bench\": \"x\"}").unwrap();
        assert!(problems(&d)[0].contains("holds no report model"));
    }

    #[test]
    fn a_published_run_leaves_traces_out_and_may_gzip_its_results() {
        use std::io::Write as _;
        let root = tempfile::tempdir().unwrap();
        let d = bench_dir(root.path(), "one", &report("1 s"));
        fs::remove_dir_all(d.join("traces")).unwrap();
        let json = fs::read(d.join("results.json")).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&json).unwrap();
        fs::write(d.join("results.json.gz"), gz.finish().unwrap()).unwrap();
        fs::remove_file(d.join("results.json")).unwrap();
        assert_eq!(problems(&d), Vec::<String>::new());
        assert_eq!(check_dir(&d).tables, 2);
        fs::write(d.join("results.json.gz"), b"not gzip").unwrap();
        assert!(problems(&d)[0].contains("results.json.gz: cannot read"), "{:?}", problems(&d));
    }

    #[test]
    fn an_all_run_is_checked_bench_by_bench() {
        let root = tempfile::tempdir().unwrap();
        let sub = report("1 s");
        bench_dir(root.path(), "x", &sub);
        let verdicts: Vec<Verdict> = sub.all_verdicts().cloned().collect();
        let index = |status: i32, verdicts: &[Verdict], count: &str| {
            let mut r = Report::new("all");
            let mut t = Table::new(&["bench", "verdicts"]);
            t.row(["x", count]);
            r.table(t).verdicts(verdicts.to_vec());
            let results = serde_json::json!({"bench": "all", "benches": [
                {"name": "x", "status": status, "dir": "x/", "verdicts": verdicts}]});
            crate::output::publish(root.path(), &r, &results, &[]).unwrap();
            problems(root.path())
        };
        assert_eq!(index(0, &verdicts, "1 PASS, 1 FAIL"), Vec::<String>::new());
        let p = index(1, &verdicts, "1 PASS, 1 FAIL");
        assert!(p.len() == 1 && p[0].contains("bench x exited with status 1"), "{p:?}");
        let p = index(0, &verdicts[..1], "1 PASS, 1 FAIL");
        assert!(p.len() == 1 && p[0].contains("lists 1 verdict(s), its report has 2"), "{p:?}");
        let p = index(0, &verdicts, "2 PASS, 0 FAIL");
        assert!(p.len() == 1 && p[0].contains("the count cell is not \"1 PASS, 1 FAIL\""), "{p:?}");
    }
}
