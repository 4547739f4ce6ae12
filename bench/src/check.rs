//! `cargo xtask bench check DIR`: the harness's own test of a report
//! directory, against the report model ([`crate::report`]) that
//! results.json stores: nothing is parsed back from Markdown.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use flate2::read::GzDecoder;
use serde_json::Value;

use crate::report::{Block, Report, Verdict};

/// Long help of `cargo xtask bench check`.
pub const HELP: &str = include_str!("text/check-help.txt");

/// `bench check` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A report directory (`target/bench/<stamp>`, or a `bench all`
    /// directory with one sub-directory per bench).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
}

/// What a check found: problems (`FILE[:LINE]: what`) and what it read.
#[derive(Debug, Default)]
struct DirCheck {
    problems: Vec<String>,
    reports: usize,
    tables: usize,
    files: usize,
}

impl DirCheck {
    fn add(&mut self, file: &Path, line: Option<usize>, what: impl std::fmt::Display) {
        self.problems.push(problem(file, line, what));
    }
}

/// A problem as `bench check` prints it: `FILE[:LINE]: what`.
fn problem(file: &Path, line: Option<usize>, what: impl std::fmt::Display) -> String {
    let at = line.map(|l| format!(":{l}")).unwrap_or_default();
    format!("{}{at}: {what}", file.display())
}

/// Runs `cargo xtask bench check DIR`: a bad report is exit status 1 with its problems listed.
pub fn run(args: &Args) -> Result<ExitCode> {
    anyhow::ensure!(args.dir.is_dir(), "{} is not a directory", args.dir.display());
    let mut c = DirCheck::default();
    check_one(&args.dir, &mut c);
    for p in &c.problems {
        println!("{p}");
    }
    if c.problems.is_empty() {
        let (r, t, f) = (c.reports, c.tables, c.files);
        eprintln!("xtask: bench check: {r} report(s), {t} table(s), {f} file(s): OK");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("xtask: bench check: {} problem(s) in {} report(s)", c.problems.len(), c.reports);
        Ok(ExitCode::FAILURE)
    }
}

/// `dir`'s results.json (or results.json.gz: a published run gzips a large one) as JSON and
/// its report model, or what is wrong with it.
pub fn read_report(dir: &Path) -> Result<(Value, Report), String> {
    let (plain, gz) = (dir.join("results.json"), dir.join("results.json.gz"));
    let path = if !plain.exists() && gz.exists() { gz } else { plain };
    let at = |line, what: String| problem(&path, line, what);
    let text = match path.extension() == Some("gz".as_ref()) {
        true => fs::File::open(&path).and_then(|f| std::io::read_to_string(GzDecoder::new(f))),
        false => fs::read_to_string(&path),
    };
    let text = text.map_err(|e| at(None, format!("cannot read: {e}")))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| at(Some(e.line()), format!("does not parse: {e}")))?;
    let model =
        v.get("report").ok_or_else(|| at(None, "holds no report model (`report`)".into()))?;
    let report = serde_json::from_value(model.clone())
        .map_err(|e| at(None, format!("its report does not read back: {e}")))?;
    Ok((v, report))
}

/// Checks the report in `dir` and every sub-directory holding one.
fn check_one(dir: &Path, c: &mut DirCheck) {
    c.reports += 1;
    match read_report(dir) {
        Ok((v, report)) => check_report(dir, &v, &report, c),
        Err(p) => c.problems.push(p),
    }
    let entries = fs::read_dir(dir).into_iter().flatten().flatten();
    let mut subs: Vec<PathBuf> = entries
        .map(|e| e.path())
        .filter(|p| p.join("results.json").exists() || p.join("results.json.gz").exists())
        .collect();
    subs.sort();
    for s in subs {
        check_one(&s, c);
    }
}

/// The model, REPORT.md against it, its files and traces, and an index.
fn check_report(dir: &Path, v: &Value, report: &Report, c: &mut DirCheck) {
    // Problems of the model are named against results.json, even gzipped.
    let json_path = dir.join("results.json");
    let report_path = dir.join("REPORT.md");
    c.tables += report.tables().count();
    for p in report.problems() {
        c.add(&json_path, None, p);
    }
    match fs::read_to_string(&report_path) {
        Ok(text) => {
            let want = report.markdown();
            if want != text {
                let line = want.lines().zip(text.lines()).position(|(a, b)| a != b);
                let line = line.unwrap_or_else(|| want.lines().count().min(text.lines().count()));
                let what = "is not the rendering of results.json's report";
                c.add(&report_path, Some(line + 1), what);
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
    // A directory without traces/ is a published run, whose traces were left out.
    if dir.join("traces").is_dir() {
        let traces = v.get("traces").and_then(Value::as_array).into_iter().flatten();
        let listed: Vec<&str> = traces.filter_map(|t| t.get("file")?.as_str()).collect();
        for t in &listed {
            c.files += 1;
            let p = dir.join(t);
            if !p.exists() {
                c.add(&json_path, None, format!("trace {t} is missing"));
            } else if let Err(e) = mapwise_native::observe::trace::read(&p) {
                c.add(&json_path, None, format!("trace {t} does not read back: {e}"));
            }
        }
        let on_disk = count_traces(&dir.join("traces"));
        if on_disk != listed.len() {
            let n = listed.len();
            c.add(&json_path, None, format!("lists {n} traces, traces/ holds {on_disk}"));
        }
    }
    if v.get("bench").and_then(Value::as_str) == Some("all") {
        check_index(dir, &json_path, v, report, c);
    }
}

/// Trace files under `dir`, recursively (a multi-file run has a directory).
fn count_traces(dir: &Path) -> usize {
    let entries = fs::read_dir(dir).into_iter().flatten().filter_map(Result::ok);
    entries
        .map(|e| match e.path() {
            p if p.is_dir() => count_traces(&p),
            p => usize::from(p.extension().is_some_and(|x| x == "trace")),
        })
        .sum()
}

/// A `bench all` index: every bench exited 0, its verdicts are its own
/// report's, and the count cell of its row says how many passed.
fn check_index(dir: &Path, json_path: &Path, v: &Value, index: &Report, c: &mut DirCheck) {
    for b in v.get("benches").and_then(Value::as_array).into_iter().flatten() {
        let name = b.get("name").and_then(Value::as_str).unwrap_or("?");
        match b.get("status").and_then(Value::as_i64) {
            Some(0) => {}
            Some(s) => c.add(json_path, None, format!("bench {name} exited with status {s}")),
            None => c.add(json_path, None, format!("bench {name} was killed by a signal")),
        }
        let listed = b.get("verdicts").and_then(|x| serde_json::from_value(x.clone()).ok());
        let listed: Vec<Verdict> = listed.unwrap_or_default();
        let sub = b.get("dir").and_then(Value::as_str).unwrap_or_default();
        let own = crate::all::verdicts(&dir.join(sub));
        if listed != own {
            let (l, o) = (listed.len(), own.len());
            let what =
                format!("bench {name}: lists {l} verdict(s), its report has {o} (or they differ)");
            c.add(json_path, None, what);
        }
        let (pass, fail) = crate::all::verdict_counts(&own);
        let count = format!("{pass} PASS, {fail} FAIL");
        let row = index.blocks.iter().find_map(|bl| match bl {
            Block::Table(t) => t.rows.iter().find(|r| r.cells.first().is_some_and(|x| x == name)),
            _ => None,
        });
        if row.is_some_and(|r| r.cells.last() != Some(&count)) {
            let what = format!("bench {name}: the count cell is not \"{count}\"");
            c.add(&dir.join("REPORT.md"), None, what);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Outcome, Role, Table};

    fn report(ours: &str) -> Report {
        let mut r = Report::new("bench x");
        let mut t = Table::of("cell | >ours | >peer | >ratio").compares(&[1], &[2]);
        t.row(["cold", ours, "2 s", "—"]);
        let mut l = Table::new(&["what", ">time", "notes"]).limits();
        l.row(["O_DIRECT", "—", "unavailable: EINVAL"]);
        r.table(t.roles(Role::Ratio, &[3])).table(l).image("ratios", "ratios.svg");
        r.verdicts(vec![
            Verdict::new("cold", Outcome::Pass, "0.5×"),
            Verdict::new("warm", Outcome::Fail, "2×"),
        ]);
        r
    }

    /// A bench directory as a bench writes it, with a chart and one trace.
    fn bench_dir(root: &Path, name: &str, r: &Report) -> PathBuf {
        let d = root.join(name);
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("ratios.svg"), "<svg/>").unwrap();
        let mut traces = crate::traces::Traces::default();
        traces.record(&d, &d.join("ratios.svg"), "cold", "ours", 1, || Ok(())).unwrap();
        let results = serde_json::json!({"bench": name, "traces": traces.list()});
        crate::output::publish_traced(&d, r, &results, &traces, &[]).unwrap();
        d
    }

    fn check(d: &Path) -> DirCheck {
        let mut c = DirCheck::default();
        check_one(d, &mut c);
        c
    }

    fn problems(d: &Path) -> Vec<String> {
        check(d).problems
    }

    #[test]
    fn a_report_is_checked_against_its_model_and_its_files() {
        let root = tempfile::tempdir().unwrap();
        let d = bench_dir(root.path(), "one", &report("1 s"));
        assert_eq!(problems(&d), Vec::<String>::new());
        assert_eq!((check(&d).tables, check(&d).files), (2, 2));
        // A hand edit of the Markdown.
        let md = fs::read_to_string(d.join("REPORT.md")).unwrap();
        fs::write(d.join("REPORT.md"), md.replace(" 1 s |", " 9 s |")).unwrap();
        assert_eq!(
            problems(&d),
            [format!(
                "{}:5: is not the rendering of results.json's report",
                d.join("REPORT.md").display()
            )]
        );
        fs::write(d.join("REPORT.md"), md).unwrap();
        fs::remove_file(d.join("ratios.svg")).unwrap();
        assert!(problems(&d)[0].contains("shows ratios.svg, which is missing"));
        fs::write(d.join("traces/cold-ours-1.trace"), b"not a trace").unwrap();
        assert!(problems(&d)[1].contains("does not read back"));
        fs::remove_file(d.join("traces/cold-ours-1.trace")).unwrap();
        let p = problems(&d);
        assert!(p[1].contains("trace traces/cold-ours-1.trace is missing"), "{p:?}");
        assert!(p[2].contains("lists 1 traces, traces/ holds 0"), "{p:?}");
        fs::write(d.join("results.json"), "{\"bench\": \"x\",\n\"charts\": [}").unwrap();
        assert!(problems(&d)[0].contains("results.json:2: does not parse"));
        fs::write(d.join("results.json"), "{\"bench\": \"x\"}").unwrap();
        assert!(problems(&d)[0].contains("holds no report model"));
        // An empty value where ours belongs.
        let p = problems(&bench_dir(root.path(), "two", &report("—")));
        assert!(p.len() == 1 && p[0].contains("column \"ours\""), "{p:?}");
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
        assert_eq!(check(&d).tables, 2);
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
