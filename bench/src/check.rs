//! `cargo xtask bench check DIR`: the harness's own test of a report
//! directory. It parses REPORT.md and results.json (for a `bench all` run
//! the index and every bench's sub-directory) and lists every problem: a
//! malformed markdown table, an empty or placeholder cell where a table
//! compares ours with a peer, a results.json that does not parse, a chart
//! or trace the report names that is missing or unreadable, a bench of an
//! `all` run that failed.
//!
//! How a table says what it compares, from the headers the report code
//! writes (`output::Table`):
//!
//! * **column-wise**: a column whose header starts with the word `ours`
//!   (`ours`, `ours took`, `ours, ratio to mmap once`, `ours − start-up`)
//!   is ours'; one starting with a peer's name ([`PEERS`]: `Go bbolt`,
//!   `Go took`, `rrdtool`, `librrd`, `hg`, `C wall`, `etcdctl snapshot
//!   save`) is the peer's. A
//!   table with at least one of each compares them, and every cell in
//!   those columns must hold a value. Ratio columns (`ours/Go (per
//!   pair)`) and shared columns (`peak RSS ours / Go`) belong to neither:
//!   a ratio may legitimately be missing (the peer printed 0 ms).
//! * **row-wise**: a table with no such columns whose rows are labelled
//!   (first cell) `ours …` (`ours mmap`) and by a peer's name (`rrdtool`,
//!   `librrd`) compares them row by row; each of those rows must
//!   hold a value in its first value column (the headline, e.g. `total`).
//!   Other columns may say `—` where a side does not measure a thing.
//! * **limits**: a table under a heading that mentions limits (`## Physical
//!   limits`) measures the machine, not a tool: each row needs its first
//!   value column filled, or a cell `unavailable: <reason>` saying why it
//!   could not be measured. `unavailable` is accepted nowhere else.
//!
//! Placeholders are the empty cell, `—`, `–`, `-`, `?`, `n/a` and any cell
//! holding `NaN`.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use serde::Deserialize as _;

use crate::report::Report;

/// Long help of `cargo xtask bench check`.
pub const HELP: &str = "\
Checks a report directory written by `cargo xtask bench NAME` or `bench all`
(then the index and every sub-directory holding a report):
  - REPORT.md exists and every markdown table in it is well formed: a
    header, a separator line (| --- | ---: |) and rows of as many cells as
    the header, each line starting and ending with `|`;
  - every table comparing ours with a peer (columns or rows named `ours …`
    and `Go …`, `bbolt`, `rrdtool`, `librrd`, `hg`, `C …`, `etcdctl …`) has
    a value in every cell of ours' and the peer's columns (row-wise tables:
    in the first value column of those rows): not empty, `—`, `?`, `n/a`
    or NaN;
  - `unavailable: <reason>` only in limits tables (under a heading that
    mentions limits), where it stands for a row that could not be measured;
  - results.json exists and parses; every chart and trace it lists
    (`charts`, `traces`) exists, and each trace reads back as a trace;
  - every file the report links to (images, links) exists, and a sentence
    `N traces in `DIR/`` matches N trace files in DIR;
  - in a `bench all` index, every bench exited with status 0.
Prints one line per problem (FILE:LINE: table …, row …: what) and exits 1
when there is any; prints a summary on stderr and exits 0 otherwise.

  cargo xtask bench check DIR";

/// Names that mark a peer's column or row (first word, case-insensitive).
pub const PEERS: [&str; 9] = [
    "go",
    "bbolt",
    "rrdtool",
    "librrd",
    "hg",
    "mercurial",
    "c",
    "etcd",
    "etcdctl",
];

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
    /// The table: its ordinal in the file and the heading above it.
    pub table: Option<String>,
    /// The row: its first cell.
    pub row: Option<String>,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, ":")?;
        if let Some(t) = &self.table {
            write!(f, " {t}")?;
            if self.row.is_none() {
                write!(f, ":")?;
            }
        }
        if let Some(r) = &self.row {
            write!(
                f,
                "{} row {r:?}:",
                if self.table.is_some() { "," } else { "" }
            )?;
        }
        write!(f, " {}", self.what)
    }
}

/// What [`check_markdown`] found in one REPORT.md.
#[derive(Debug, Default)]
pub struct MarkdownCheck {
    /// Problems found in the text alone.
    pub problems: Vec<Problem>,
    /// Tables seen.
    pub tables: usize,
    /// What each table was checked as, in order.
    pub kinds: Vec<TableKind>,
    /// Relative link and image targets: (line, target without `#…`).
    pub links: Vec<(usize, String)>,
    /// Sentences `N traces in `DIR/``: (line, N, DIR).
    pub trace_claims: Vec<(usize, usize, String)>,
}

/// What a table was checked as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    /// Malformed: only its shape was checked.
    Malformed,
    /// Compares nothing: shape only.
    Plain,
    /// Ours and a peer in columns.
    Columns,
    /// Ours and a peer in rows.
    Rows,
    /// Under a limits heading.
    Limits,
}

/// What a whole directory check found.
#[derive(Debug, Default)]
pub struct DirCheck {
    /// Every problem, in the order found.
    pub problems: Vec<Problem>,
    /// Reports (REPORT.md files) read.
    pub reports: usize,
    /// Tables checked.
    pub tables: usize,
    /// Files the reports and results named that were looked at.
    pub files: usize,
}

/// Runs `cargo xtask bench check DIR`.
///
/// # Errors
/// Never for a bad report (that is exit status 1 with the problems
/// listed); only when DIR is not a directory.
pub fn run(args: &Args) -> Result<ExitCode> {
    anyhow::ensure!(
        args.dir.is_dir(),
        "{} is not a directory",
        args.dir.display()
    );
    let c = check_dir(&args.dir);
    for p in &c.problems {
        println!("{p}");
    }
    if c.problems.is_empty() {
        eprintln!(
            "xtask: bench check: {} report(s), {} table(s), {} linked file(s): OK",
            c.reports, c.tables, c.files
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "xtask: bench check: {} problem(s) in {} report(s)",
            c.problems.len(),
            c.reports
        );
        Ok(ExitCode::FAILURE)
    }
}

/// Checks the report in `dir` and, recursively, every sub-directory
/// holding a REPORT.md or results.json (a `bench all` run). File names in
/// the problems start with `dir` as given.
#[must_use]
pub fn check_dir(dir: &Path) -> DirCheck {
    let mut c = DirCheck::default();
    check_one(dir, &mut c);
    c
}

fn problem(file: &Path, what: impl Into<String>) -> Problem {
    Problem {
        file: file.display().to_string(),
        line: None,
        table: None,
        row: None,
        what: what.into(),
    }
}

fn check_one(dir: &Path, c: &mut DirCheck) {
    let report_path = dir.join("REPORT.md");
    let json_path = dir.join("results.json");
    let json = match fs::read_to_string(&json_path) {
        Ok(t) => match serde_json::from_str::<serde_json::Value>(&t) {
            Ok(v) => Some(v),
            Err(e) => {
                c.problems.push(Problem {
                    line: Some(e.line()),
                    ..problem(&json_path, format!("does not parse: {e}"))
                });
                None
            }
        },
        Err(e) => {
            c.problems
                .push(problem(&json_path, format!("cannot read: {e}")));
            None
        }
    };
    let model = json.as_ref().and_then(|v| v.get("report"));
    match (fs::read_to_string(&report_path), model) {
        (Ok(text), Some(model)) => {
            c.reports += 1;
            check_model(dir, &report_path, &json_path, &text, model, c);
        }
        (Ok(text), None) => {
            c.reports += 1;
            check_text(dir, &report_path, &text, c);
        }
        (Err(e), _) => c
            .problems
            .push(problem(&report_path, format!("cannot read: {e}"))),
    }
    if let Some(v) = &json {
        check_results(dir, &json_path, v, c);
    }
    // Sub-reports (a `bench all` run), in name order.
    let mut subs: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && (p.join("REPORT.md").exists() || p.join("results.json").exists()))
        .collect();
    subs.sort();
    for s in subs {
        check_one(&s, c);
    }
}

/// A report written from the model: results.json's `"report"` reads back
/// as a [`Report`], its tables keep their declared roles
/// ([`Report::problems`]), REPORT.md is exactly its rendering, and every
/// image it shows exists.
fn check_model(
    dir: &Path,
    report_path: &Path,
    json_path: &Path,
    text: &str,
    model: &serde_json::Value,
    c: &mut DirCheck,
) {
    let report = match Report::deserialize(model) {
        Ok(r) => r,
        Err(e) => {
            c.problems.push(problem(
                json_path,
                format!("its report does not read back: {e}"),
            ));
            return;
        }
    };
    c.tables += report.tables().count();
    for p in report.problems() {
        c.problems.push(problem(json_path, p));
    }
    if report.markdown() != text {
        let line = report
            .markdown()
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1);
        c.problems.push(Problem {
            line,
            ..problem(report_path, "is not the rendering of results.json's report")
        });
    }
    for f in report.files() {
        c.files += 1;
        if !dir.join(f).exists() {
            c.problems
                .push(problem(report_path, format!("shows {f}, which is missing")));
        }
    }
}

/// A report without a model (older runs): its Markdown tables, links and
/// trace counts, read back from the text.
fn check_text(dir: &Path, report_path: &Path, text: &str, c: &mut DirCheck) {
    let md = check_markdown(&report_path.display().to_string(), text);
    c.tables += md.tables;
    c.problems.extend(md.problems);
    for (line, target) in &md.links {
        c.files += 1;
        if !dir.join(target).exists() {
            c.problems.push(Problem {
                line: Some(*line),
                ..problem(report_path, format!("links to {target}, which is missing"))
            });
        }
    }
    for (line, n, tdir) in &md.trace_claims {
        let found = count_traces(&dir.join(tdir));
        if found != *n {
            c.problems.push(Problem {
                line: Some(*line),
                ..problem(
                    report_path,
                    format!("says {n} traces in {tdir}, which holds {found}"),
                )
            });
        }
    }
}

/// The files results.json lists (`charts`: names; `traces`: objects with
/// `file`, or names) exist, traces read back; an `all` index's benches
/// all exited with 0.
fn check_results(dir: &Path, json_path: &Path, v: &serde_json::Value, c: &mut DirCheck) {
    let names = |key: &str| -> Vec<String> {
        v.get(key)
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| {
                        x.as_str()
                            .or_else(|| x.get("file").and_then(serde_json::Value::as_str))
                            .map(str::to_owned)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    for chart in names("charts") {
        c.files += 1;
        let p = dir.join(&chart);
        match fs::metadata(&p) {
            Ok(m) if m.len() > 0 => {}
            Ok(_) => c
                .problems
                .push(problem(json_path, format!("chart {chart} is empty"))),
            Err(_) => c
                .problems
                .push(problem(json_path, format!("chart {chart} is missing"))),
        }
    }
    for trace in names("traces") {
        c.files += 1;
        let p = dir.join(&trace);
        if !p.exists() {
            c.problems
                .push(problem(json_path, format!("trace {trace} is missing")));
        } else if let Err(e) = mapwise_native::observe::trace::read(&p) {
            c.problems.push(problem(
                json_path,
                format!("trace {trace} does not read back: {e}"),
            ));
        }
    }
    if v.get("bench").and_then(serde_json::Value::as_str) == Some("all") {
        for b in v
            .get("benches")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = b
                .get("name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("?");
            match b.get("status").and_then(serde_json::Value::as_i64) {
                Some(0) => {}
                Some(s) => c.problems.push(problem(
                    json_path,
                    format!("bench {name} exited with status {s}"),
                )),
                None => c.problems.push(problem(
                    json_path,
                    format!("bench {name} was killed by a signal"),
                )),
            }
            if let Some(d) = b.get("dir").and_then(serde_json::Value::as_str) {
                match fs::read_to_string(dir.join(d).join("REPORT.md")) {
                    Ok(sub) => index_agrees(dir, json_path, name, b, &sub, c),
                    Err(_) => c.problems.push(problem(
                        json_path,
                        format!("bench {name} has no report in {d}"),
                    )),
                }
            }
        }
    }
}

/// An `all` index says what its benches' reports say: the verdict lines
/// results.json lists for bench `name` (`b`) are those of its report
/// (`sub`), each is on the index page, and the page's count cell for the
/// bench matches them.
fn index_agrees(
    dir: &Path,
    json_path: &Path,
    name: &str,
    b: &serde_json::Value,
    sub: &str,
    c: &mut DirCheck,
) {
    let want = super::all::verdicts(sub);
    let listed: Vec<String> = b
        .get("verdicts")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if listed != want {
        c.problems.push(problem(
            json_path,
            format!(
                "bench {name}: lists {} verdict(s), its report has {} (or they differ)",
                listed.len(),
                want.len()
            ),
        ));
    }
    let index_path = dir.join("REPORT.md");
    let Ok(index) = fs::read_to_string(&index_path) else {
        return; // already a problem of its own
    };
    for v in &want {
        if !index.contains(v.as_str()) {
            c.problems.push(problem(
                &index_path,
                format!("bench {name}: verdict not on the index: {v}"),
            ));
        }
    }
    let (pass, fail) = super::all::verdict_counts(&want);
    let count = format!("{pass} PASS, {fail} FAIL");
    let row = index.lines().find(|l| {
        l.strip_prefix('|')
            .is_some_and(|r| r.trim_start().starts_with(&format!("{name} ")))
    });
    if row.is_some_and(|r| r.contains("PASS,") && !r.contains(&count)) {
        c.problems.push(problem(
            &index_path,
            format!("bench {name}: the count cell is not \"{count}\""),
        ));
    }
}

fn count_traces(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, |rd| {
        rd.filter_map(std::result::Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".trace"))
            .count()
    })
}

/// What a cell says.
#[derive(Debug, PartialEq, Eq)]
enum Cell {
    Value,
    Placeholder,
    /// `unavailable: <reason>`; the flag says whether a reason follows.
    Unavailable(bool),
}

fn classify_cell(cell: &str) -> Cell {
    let t = cell
        .trim()
        .trim_matches(|c| c == '*' || c == '_' || c == '`')
        .trim();
    if let Some(rest) = t.to_lowercase().strip_prefix("unavailable") {
        let reason = rest.trim_start_matches(':').trim();
        return Cell::Unavailable(!reason.is_empty());
    }
    if matches!(t, "" | "—" | "–" | "-" | "?" | "??" | "n/a" | "N/A") || t.contains("NaN") {
        Cell::Placeholder
    } else {
        Cell::Value
    }
}

/// Whose a header or row label is: its first word, lower-cased (words end
/// at white space, `,`, `(` or `:`; `ours/Go` is one word, a ratio).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Ours,
    Peer,
    Neither,
}

fn side_of(label: &str) -> Side {
    let t = label.trim().trim_start_matches(['*', '_', '`', '>']);
    let word: String = t
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | '(' | ':' | '*' | '`'))
        .collect::<String>()
        .to_lowercase();
    if word == "ours" {
        Side::Ours
    } else if PEERS.contains(&word.as_str()) {
        Side::Peer
    } else {
        Side::Neither
    }
}

/// Splits a table line into trimmed cells (`\|` is a literal `|`); an
/// error when it does not end with an unescaped `|`.
fn split_row(line: &str) -> Result<Vec<String>, String> {
    let t = line.trim();
    let inner = t.strip_prefix('|').unwrap_or(t);
    let Some(inner) = inner.strip_suffix('|').filter(|i| !i.ends_with('\\')) else {
        return Err("the line does not end with `|`".to_owned());
    };
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cur).trim().to_owned()),
            _ => cur.push(ch),
        }
    }
    cells.push(cur.trim().to_owned());
    Ok(cells)
}

fn is_separator(cells: &[String]) -> bool {
    !cells.is_empty()
        && cells.iter().all(|c| {
            let d = c.strip_prefix(':').unwrap_or(c);
            let d = d.strip_suffix(':').unwrap_or(d);
            !d.is_empty() && d.chars().all(|x| x == '-')
        })
}

/// One markdown table: (line number, line) of each of its lines.
struct RawTable<'a> {
    ordinal: usize,
    heading: String,
    lines: Vec<(usize, &'a str)>,
}

/// Checks the text of one REPORT.md (`file` names it in the problems):
/// every table's shape and, for tables comparing ours with a peer, their
/// cells (see the module documentation); collects the relative links and
/// the trace sentences for [`check_dir`] to look up.
#[must_use]
pub fn check_markdown(file: &str, text: &str) -> MarkdownCheck {
    let mut out = MarkdownCheck::default();
    let mut heading = String::from("(top of the file)");
    let mut in_fence = false;
    let mut tables: Vec<RawTable<'_>> = Vec::new();
    let mut current: Option<RawTable<'_>> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            tables.extend(current.take());
            continue;
        }
        if in_fence {
            continue;
        }
        scan_links(n, line, &mut out);
        if trimmed.starts_with('|') {
            current
                .get_or_insert_with(|| RawTable {
                    ordinal: tables.len() + 1,
                    heading: heading.clone(),
                    lines: Vec::new(),
                })
                .lines
                .push((n, line));
            continue;
        }
        tables.extend(current.take());
        if trimmed.starts_with('#') {
            heading = trimmed.trim().to_owned();
        }
    }
    tables.extend(current);
    out.tables = tables.len();
    for t in &tables {
        let kind = check_table(file, t, &mut out.problems);
        out.kinds.push(kind);
    }
    out
}

/// Relative `[..](target)` / `![..](target)` links outside inline code,
/// and `N traces in `DIR`` sentences.
fn scan_links(n: usize, line: &str, out: &mut MarkdownCheck) {
    // Inline code spans are dropped for the links (a command line may hold
    // `[a](b)`), but the trace sentence names its directory in one.
    let mut plain = String::new();
    for (k, part) in line.split('`').enumerate() {
        if k % 2 == 0 {
            plain.push_str(part);
        }
        plain.push(' ');
    }
    let mut rest = plain.as_str();
    while let Some(pos) = rest.find("](") {
        let after = &rest[pos + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        let target = target.split('#').next().unwrap_or("");
        let external = target.contains("://") || target.starts_with("mailto:");
        if !target.is_empty() && !external {
            out.links.push((n, target.to_owned()));
        }
        rest = &after[end..];
    }
    let mut rest = line;
    while let Some(pos) = rest.find(" traces in `") {
        let count = rest[..pos]
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|d| d.parse::<usize>().ok());
        let after = &rest[pos + " traces in `".len()..];
        if let (Some(count), Some(end)) = (count, after.find('`')) {
            out.trace_claims.push((n, count, after[..end].to_owned()));
        }
        rest = after;
    }
}

fn check_table(file: &str, t: &RawTable<'_>, problems: &mut Vec<Problem>) -> TableKind {
    let name = format!("table {} under {:?}", t.ordinal, t.heading);
    let at = |line: usize, row: Option<&str>, what: String| Problem {
        file: file.to_owned(),
        line: Some(line),
        table: Some(name.clone()),
        row: row.map(str::to_owned),
        what,
    };
    let mut rows: Vec<(usize, Vec<String>)> = Vec::new();
    for &(n, line) in &t.lines {
        match split_row(line) {
            Ok(cells) => rows.push((n, cells)),
            Err(e) => problems.push(at(n, None, e)),
        }
    }
    let Some((head_line, header)) = rows.first().cloned() else {
        return TableKind::Malformed;
    };
    let width = header.len();
    let body_start = match rows.get(1) {
        Some((_, cells)) if is_separator(cells) => 2,
        Some((n, _)) => {
            problems.push(at(
                *n,
                None,
                "no header separator line (| --- | --- |) after the header".to_owned(),
            ));
            1
        }
        None => {
            problems.push(at(
                head_line,
                None,
                "a header with no separator line and no rows".to_owned(),
            ));
            return TableKind::Malformed;
        }
    };
    if body_start == 2 && rows[1].1.len() != width {
        problems.push(at(
            rows[1].0,
            None,
            format!(
                "the separator has {} cells, the header {width}",
                rows[1].1.len()
            ),
        ));
    }
    let body = &rows[body_start..];
    let mut ragged = false;
    for (n, cells) in body {
        if cells.len() != width {
            ragged = true;
            problems.push(at(
                *n,
                cells.first().map(String::as_str),
                format!("{} cells, the header has {width}", cells.len()),
            ));
        }
    }
    if ragged || rows.len() != t.lines.len() {
        return TableKind::Malformed;
    }
    let limits = t.heading.to_lowercase().contains("limits");
    let ours_cols: Vec<usize> = (0..width)
        .filter(|&i| side_of(&header[i]) == Side::Ours)
        .collect();
    let peer_cols: Vec<usize> = (0..width)
        .filter(|&i| side_of(&header[i]) == Side::Peer)
        .collect();
    let column_wise = !ours_cols.is_empty() && !peer_cols.is_empty();
    let row_sides: Vec<Side> = body.iter().map(|(_, c)| side_of(&c[0])).collect();
    let row_wise = !column_wise
        && width > 1
        && row_sides.contains(&Side::Ours)
        && row_sides.contains(&Side::Peer);
    if column_wise && body.is_empty() {
        problems.push(at(
            head_line,
            None,
            "compares ours with a peer but has no rows".to_owned(),
        ));
    }
    for ((n, cells), side) in body.iter().zip(&row_sides) {
        let label = cells[0].as_str();
        let unavailable_with_reason = cells
            .iter()
            .any(|c| classify_cell(c) == Cell::Unavailable(true));
        for (i, cell) in cells.iter().enumerate() {
            match classify_cell(cell) {
                Cell::Unavailable(_) if !limits => problems.push(at(
                    *n,
                    Some(label),
                    format!(
                        "column {:?} says {cell:?}: `unavailable` belongs in limits tables only",
                        header[i]
                    ),
                )),
                Cell::Unavailable(false) => problems.push(at(
                    *n,
                    Some(label),
                    format!("column {:?} says unavailable without a reason", header[i]),
                )),
                Cell::Placeholder
                    if column_wise && (ours_cols.contains(&i) || peer_cols.contains(&i)) =>
                {
                    problems.push(at(
                        *n,
                        Some(label),
                        format!(
                            "{} column {:?} has no value ({cell:?})",
                            if ours_cols.contains(&i) {
                                "ours'"
                            } else {
                                "the peer's"
                            },
                            header[i]
                        ),
                    ));
                }
                _ => {}
            }
        }
        let headline = cells.get(1).map(|c| classify_cell(c));
        if row_wise && *side != Side::Neither && headline == Some(Cell::Placeholder) {
            problems.push(at(
                *n,
                Some(label),
                format!(
                    "{} row has no value in its first value column {:?} ({:?})",
                    if *side == Side::Ours {
                        "ours'"
                    } else {
                        "the peer's"
                    },
                    header[1],
                    cells[1]
                ),
            ));
        }
        if limits && width > 1 && headline == Some(Cell::Placeholder) && !unavailable_with_reason {
            problems.push(at(
                *n,
                Some(label),
                format!(
                    "limits row has no value in {:?} ({:?}) and no `unavailable: <reason>`",
                    header[1], cells[1]
                ),
            ));
        }
    }
    if limits {
        TableKind::Limits
    } else if column_wise {
        TableKind::Columns
    } else if row_wise {
        TableKind::Rows
    } else {
        TableKind::Plain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real reports, copied from runs of each bench on the project's
    /// machine (testdata/bench/README.md says which).
    const BOLT_SCAN: &str = include_str!("../../testdata/bench/bolt-scan.REPORT.md");
    const BOLT: &str = include_str!("../../testdata/bench/bolt.REPORT.md");
    const RRD: &str = include_str!("../../testdata/bench/rrd.REPORT.md");
    const REVLOG: &str = include_str!("../../testdata/bench/revlog.REPORT.md");
    const MMAPTEST: &str = include_str!("../../testdata/bench/mmaptest.REPORT.md");
    const LIVE: &str = include_str!("../../testdata/bench/live.REPORT.md");

    fn problems(text: &str) -> Vec<String> {
        check_markdown("REPORT.md", text)
            .problems
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// `text` with the first occurrence of `from` replaced (which must be
    /// there).
    fn edit(text: &str, from: &str, to: &str) -> String {
        assert!(text.contains(from), "fixture lacks {from:?}");
        text.replacen(from, to, 1)
    }

    #[test]
    fn real_reports_pass() {
        for (name, text) in [
            ("bolt-scan", BOLT_SCAN),
            ("bolt", BOLT),
            ("rrd", RRD),
            ("revlog", REVLOG),
            ("mmaptest", MMAPTEST),
            ("live", LIVE),
        ] {
            assert_eq!(problems(text), Vec::<String>::new(), "{name}");
        }
    }

    #[test]
    fn real_reports_declare_their_comparisons() {
        use TableKind::{Columns, Limits, Plain, Rows};
        let kinds = |t| check_markdown("", t).kinds;
        // Machine, results, split, the seed's figures, limits, residency.
        assert_eq!(kinds(BOLT_SCAN), [Plain, Columns, Columns, Plain, Limits]);
        // Machine, verdicts, puts/gets, scans, range scans.
        assert_eq!(kinds(BOLT), [Plain, Plain, Columns, Columns, Plain]);
        let rrd = kinds(RRD);
        assert_eq!(rrd.iter().filter(|k| **k == Rows).count(), 8, "{rrd:?}");
        assert_eq!(rrd.iter().filter(|k| **k == Columns).count(), 1, "{rrd:?}");
        assert!(kinds(REVLOG).contains(&Columns));
        let mm = kinds(MMAPTEST);
        assert_eq!(mm.last(), Some(&Limits));
        assert_eq!(mm.iter().filter(|k| **k == Columns).count(), 6, "{mm:?}");
        // bench live: ours beside etcdctl in the last table only.
        let live = kinds(LIVE);
        assert_eq!(live.last(), Some(&Columns), "{live:?}");
        assert_eq!(
            live.iter().filter(|k| **k == Columns).count(),
            1,
            "{live:?}"
        );
        // The links of a real report: its two charts.
        let md = check_markdown("", BOLT_SCAN);
        let links: Vec<&str> = md.links.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(links, ["ratios.svg", "residency-cold.svg"]);
        assert_eq!(md.trace_claims.len(), 1);
        assert_eq!(
            (md.trace_claims[0].1, md.trace_claims[0].2.as_str()),
            (56, "traces/")
        );
    }

    #[test]
    fn an_empty_peer_cell_fails() {
        let bad = edit(
            BOLT_SCAN,
            "| cold, plain mmap   |    6.32 s [6.07 s–6.76 s] |    6.20 s [5.71 s–6.57 s] |",
            "| cold, plain mmap   |    6.32 s [6.07 s–6.76 s] |                         — |",
        );
        let p = problems(&bad);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with(
                "REPORT.md:55: table 2 under \"## Results: took = open + scan\", row \"cold, plain mmap\": \
                 the peer's column \"Go bbolt\""
            ),
            "{}",
            p[0]
        );
    }

    #[test]
    fn empty_or_questioned_ours_cells_fail() {
        for to in ["", "?", "n/a", "NaN s"] {
            let bad = edit(
                BOLT,
                "| seq puts, seq gets | 607k [551k–656k] |",
                &format!("| seq puts, seq gets | {to} |"),
            );
            let p = problems(&bad);
            assert_eq!(p.len(), 1, "{to:?}: {p:?}");
            assert!(p[0].contains("ours' column \"ours puts/s\""), "{}", p[0]);
        }
        // C's column in mmaptest, a row-wise peer row in rrd.
        let bad = edit(
            MMAPTEST,
            "|    38.2 µs |   59.2 ms | 61.3 ms |",
            "|    38.2 µs |   59.2 ms |  |",
        );
        assert!(problems(&bad)[0].contains("the peer's column \"C wall\""));
        let bad = edit(
            RRD,
            "| librrd           | 6.24 ms [4.95 ms–7.38 ms] |",
            "| librrd           | — |",
        );
        let p = problems(&bad);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].contains("row \"librrd\": the peer's row has no value"),
            "{}",
            p[0]
        );
        let bad = edit(
            RRD,
            "| ours mmap        | 593 ms [513 ms–627 ms] |",
            "| ours mmap        | ? |",
        );
        assert!(problems(&bad)[0].contains("ours' row"));
        // etcdctl is a peer: bench live's alternative.
        let bad = edit(
            LIVE,
            "|   370 ms | 2.05 s [1.73 s–2.62 s] |",
            "|   370 ms | — |",
        );
        let p = problems(&bad);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].contains("the peer's column \"etcdctl snapshot save\""),
            "{}",
            p[0]
        );
        // A ratio may be missing: Go printed 0 ms.
        let ok = edit(
            BOLT_SCAN,
            "|  1.05× [0.95–1.11] |",
            "|                  — |",
        );
        assert_eq!(problems(&ok), Vec::<String>::new());
    }

    #[test]
    fn malformed_tables_fail() {
        // A ragged row.
        let bad = edit(BOLT_SCAN, " |  1.05× [0.95–1.11] |", " |");
        let p = problems(&bad);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("3 cells, the header has 4"), "{}", p[0]);
        // A missing separator line.
        let bad = edit(
            BOLT_SCAN,
            "| ------------------ | ------------------------: | ------------------------: | -----------------: |\n",
            "",
        );
        assert!(
            problems(&bad)[0].contains("no header separator"),
            "{:?}",
            problems(&bad)
        );
        // A row cut short of its closing `|`.
        let bad = edit(
            RRD,
            "|          438 [438–438] of 438 |\n",
            "|          438 [438–438] of 438\n",
        );
        assert!(
            problems(&bad)
                .iter()
                .any(|p| p.contains("does not end with `|`"))
        );
        // A separator of the wrong width.
        let bad = edit(
            BOLT,
            "| ------------------------------------------------- | -------------------- |",
            "| --- |",
        );
        assert!(
            problems(&bad)
                .iter()
                .any(|p| p.contains("the separator has"))
        );
        // Tables in code blocks are text.
        let fenced = "```\n| a |\n| b | c |\n```\n";
        assert_eq!(problems(fenced), Vec::<String>::new());
    }

    #[test]
    fn unavailable_only_in_limits_tables() {
        let limits = edit(
            MMAPTEST,
            "| memcpy 64.0 MiB                                    | 38.0 ms [37.4 ms–42.2 ms] |    7.06 [6.35–7.18] |         10.44 | copy_from_slice",
            "| memcpy 64.0 MiB                                    | — | — | — | unavailable: no memory for it; copy_from_slice",
        );
        assert_eq!(problems(&limits), Vec::<String>::new());
        let no_reason = edit(
            &limits,
            "unavailable: no memory for it; copy_from_slice (libc memcpy) between two 64.0 MiB buffers, 4 times per pass, in xtask",
            "unavailable:",
        );
        let p = problems(&no_reason);
        assert!(
            p.iter().any(|p| p.contains("unavailable without a reason")),
            "{p:?}"
        );
        let no_word = edit(
            &limits,
            "unavailable: no memory for it;",
            "nothing measured;",
        );
        assert!(problems(&no_word)[0].contains("limits row has no value in \"time per pass\""));
        let elsewhere = edit(
            BOLT_SCAN,
            "|    6.20 s [5.71 s–6.57 s] |",
            "| unavailable: oracle broken |",
        );
        assert!(problems(&elsewhere)[0].contains("belongs in limits tables only"));
    }

    #[test]
    fn problems_name_file_table_and_row() {
        let p = Problem {
            file: "d/REPORT.md".into(),
            line: Some(7),
            table: Some("table 2 under \"## X\"".into()),
            row: Some("cold".into()),
            what: "bad".into(),
        };
        assert_eq!(
            p.to_string(),
            "d/REPORT.md:7: table 2 under \"## X\", row \"cold\": bad"
        );
        let p = Problem {
            line: None,
            table: None,
            row: None,
            ..p
        };
        assert_eq!(p.to_string(), "d/REPORT.md: bad");
    }

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

    /// A bench directory: the bolt-scan report with its charts, one trace
    /// (the report's count set to 1) and a results.json listing them.
    fn bench_dir(root: &Path, name: &str) -> PathBuf {
        let d = root.join(name);
        fs::create_dir_all(d.join("traces")).unwrap();
        fs::write(
            d.join("REPORT.md"),
            BOLT_SCAN.replace("56 traces in", "1 traces in"),
        )
        .unwrap();
        for c in ["ratios.svg", "residency-cold.svg"] {
            fs::write(d.join(c), "<svg/>").unwrap();
        }
        fs::write(d.join("traces/cold-ours-1.trace"), trace_bytes()).unwrap();
        fs::write(
            d.join("results.json"),
            r#"{"bench": "bolt-scan", "charts": ["ratios.svg", "residency-cold.svg"],
                "traces": [{"file": "traces/cold-ours-1.trace", "run": 1}]}"#,
        )
        .unwrap();
        d
    }

    fn dir_problems(d: &Path) -> Vec<String> {
        check_dir(d)
            .problems
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn directories_are_checked_with_their_files() {
        let root = std::env::temp_dir().join(format!("xtask-check-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let d = bench_dir(&root, "one");
        let c = check_dir(&d);
        assert_eq!(dir_problems(&d), Vec::<String>::new());
        assert_eq!((c.reports, c.tables), (1, 5));

        fs::remove_file(d.join("residency-cold.svg")).unwrap();
        let p = dir_problems(&d);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].ends_with("REPORT.md:95: links to residency-cold.svg, which is missing"),
            "{}",
            p[0]
        );
        assert!(
            p[1].ends_with("results.json: chart residency-cold.svg is missing"),
            "{}",
            p[1]
        );
        fs::write(d.join("residency-cold.svg"), "<svg/>").unwrap();

        fs::write(d.join("traces/cold-ours-1.trace"), b"not a trace").unwrap();
        let p = dir_problems(&d);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].contains("trace traces/cold-ours-1.trace does not read back"),
            "{}",
            p[0]
        );
        fs::remove_file(d.join("traces/cold-ours-1.trace")).unwrap();
        let p = dir_problems(&d);
        assert!(
            p.iter()
                .any(|p| p.contains("says 1 traces in traces/, which holds 0")),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|p| p.contains("trace traces/cold-ours-1.trace is missing")),
            "{p:?}"
        );
        fs::write(d.join("traces/cold-ours-1.trace"), trace_bytes()).unwrap();

        fs::write(
            d.join("results.json"),
            "{\"bench\": \"bolt-scan\",\n\"charts\": [}",
        )
        .unwrap();
        let p = dir_problems(&d);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("results.json:2: does not parse"), "{}", p[0]);
        fs::remove_file(d.join("results.json")).unwrap();
        assert!(dir_problems(&d)[0].contains("results.json: cannot read"));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_all_run_is_checked_bench_by_bench() {
        let root = std::env::temp_dir().join(format!("xtask-check-all-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        bench_dir(&root, "bolt-scan");
        fs::create_dir_all(root.join("bolt")).unwrap();
        fs::write(root.join("bolt/results.json"), "{}").unwrap();
        // The index as `bench all` writes it: the count cell and every
        // verdict line of the bolt-scan report.
        let sub = fs::read_to_string(root.join("bolt-scan/REPORT.md")).unwrap();
        let verdicts = crate::all::verdicts(&sub);
        let (pass, fail) = crate::all::verdict_counts(&verdicts);
        assert!(pass + fail >= 2, "the fixture has verdicts");
        let index = format!(
            "# all\n\n| bench | status | report | verdicts |\n| --- | --- | --- | --- |\n\
             | bolt-scan | ok | [bolt-scan/REPORT.md](bolt-scan/REPORT.md) | {pass} PASS, {fail} FAIL |\n\
             | bolt | **exit 1** | [bolt/REPORT.md](bolt/REPORT.md) | 0 PASS, 0 FAIL |\n\n\
             ## bolt-scan\n\n{}\n",
            verdicts.join("\n")
        );
        fs::write(root.join("REPORT.md"), &index).unwrap();
        let json = serde_json::json!({"bench": "all", "benches": [
            {"name": "bolt-scan", "status": 0, "dir": "bolt-scan/", "verdicts": verdicts},
            {"name": "bolt", "status": 1, "dir": "bolt/"}]});
        fs::write(root.join("results.json"), json.to_string()).unwrap();
        let c = check_dir(&root);
        let p: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
        let r = root.display();
        assert_eq!(
            p,
            [
                format!("{r}/REPORT.md:6: links to bolt/REPORT.md, which is missing"),
                format!("{r}/results.json: bench bolt exited with status 1"),
                format!("{r}/results.json: bench bolt has no report in bolt/"),
                format!("{r}/bolt/REPORT.md: cannot read: No such file or directory (os error 2)"),
            ]
        );
        assert_eq!(c.reports, 2);

        // An index out of step with its bench: a wrong count, a verdict
        // missing from the page, one more listed in results.json.
        let stale = index
            .replace(
                &format!("{pass} PASS, {fail} FAIL"),
                &format!("{} PASS, {fail} FAIL", pass + 1),
            )
            .replace(&verdicts[0], "");
        fs::write(root.join("REPORT.md"), stale).unwrap();
        let mut more = verdicts.clone();
        more.push("- **extra**: PASS — 1.0×".to_owned());
        let json = serde_json::json!({"bench": "all", "benches": [
            {"name": "bolt-scan", "status": 0, "dir": "bolt-scan/", "verdicts": more},
            {"name": "bolt", "status": 1, "dir": "bolt/"}]});
        fs::write(root.join("results.json"), json.to_string()).unwrap();
        let p: Vec<String> = check_dir(&root)
            .problems
            .iter()
            .map(ToString::to_string)
            .collect();
        let n = verdicts.len();
        for want in [
            format!(
                "{r}/results.json: bench bolt-scan: lists {} verdict(s), its report has {n} (or they differ)",
                n + 1
            ),
            format!(
                "{r}/REPORT.md: bench bolt-scan: verdict not on the index: {}",
                verdicts[0]
            ),
            format!(
                "{r}/REPORT.md: bench bolt-scan: the count cell is not \"{pass} PASS, {fail} FAIL\""
            ),
        ] {
            assert!(p.contains(&want), "missing {want:?} in {p:#?}");
        }
        fs::remove_dir_all(&root).unwrap();
    }
}
