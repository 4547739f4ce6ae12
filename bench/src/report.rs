//! The one report model every bench builds, a list of [`Block`]s: it renders
//! REPORT.md, is stored in results.json under `"report"`, and is what `bench
//! check` validates, with each [`Table`]'s [`Role`]s declared, not guessed
//! back from Markdown.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// What a column or a row holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Anything else: a label, a shared column, notes.
    #[default]
    Other,
    /// Our tool's measurement: never empty.
    Ours,
    /// The reference implementation's measurement: never empty.
    Peer,
    /// A ratio of the two: may be missing (the peer printed 0 ms).
    Ratio,
}

/// One column: its header, its role, and whether it is right-aligned.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Header text.
    pub name: String,
    /// What its cells hold.
    #[serde(default)]
    pub role: Role,
    /// Right-aligned (numbers).
    #[serde(default)]
    pub right: bool,
}

/// One row: its cells, and its role when the table compares row by row
/// (then its first value cell, the headline, must be filled).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Cell texts, one per column.
    pub cells: Vec<String>,
    /// Whose row it is.
    #[serde(default)]
    pub role: Role,
}

/// A table with declared roles.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// The columns.
    pub columns: Vec<Column>,
    /// The rows, each as long as `columns`.
    pub rows: Vec<Row>,
    /// Physical limits of the machine: a row that could not be measured
    /// says `unavailable: <reason>`.
    #[serde(default)]
    pub limits: bool,
}

impl Table {
    /// Columns named `header`, all [`Role::Other`]; a leading `>` right-aligns a column.
    #[must_use]
    pub fn new(header: &[&str]) -> Self {
        let column = |h: &&str| Column {
            name: h.trim_start_matches('>').to_owned(),
            role: Role::Other,
            right: h.starts_with('>'),
        };
        Self { columns: header.iter().map(column).collect(), ..Self::default() }
    }

    /// Columns named in one string split at `|`: `cell | >ours | >peer`.
    #[must_use]
    pub fn of(header: &str) -> Self {
        Self::new(&header.split('|').map(str::trim).collect::<Vec<_>>())
    }

    /// Declares the columns at `idx` as `role`.
    #[must_use]
    pub fn roles(mut self, role: Role, idx: &[usize]) -> Self {
        let chosen = self.columns.iter_mut().enumerate().filter(|(i, _)| idx.contains(i));
        chosen.for_each(|(_, c)| c.role = role);
        self
    }

    /// Declares the columns at `ours` ours and those at `peer` the peer's.
    #[must_use]
    pub fn compares(self, ours: &[usize], peer: &[usize]) -> Self {
        self.roles(Role::Ours, ours).roles(Role::Peer, peer)
    }

    /// Marks the table as physical limits of the machine.
    #[must_use]
    pub fn limits(mut self) -> Self {
        self.limits = true;
        self
    }

    /// Adds a row (missing cells are left empty, extra ones dropped).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.row_as(Role::Other, cells);
    }

    /// Adds a row that is `role`'s (a row-wise comparison).
    pub fn row_as<S: Into<String>>(&mut self, role: Role, cells: impl IntoIterator<Item = S>) {
        let mut r: Vec<String> = cells.into_iter().map(Into::into).collect();
        r.resize(self.columns.len(), String::new());
        self.rows.push(Row { cells: r, role });
    }

    /// The table as Markdown, columns padded so the source reads as a table too.
    #[must_use]
    pub fn render(&self) -> String {
        let esc = |c: &String| c.replace('|', "\\|");
        let header: Vec<String> = self.columns.iter().map(|c| esc(&c.name)).collect();
        let rows: Vec<Vec<String>> =
            self.rows.iter().map(|r| r.cells.iter().map(esc).collect()).collect();
        let width = |i: usize| {
            let cells = std::iter::once(&header).chain(&rows);
            cells.map(|r| r.get(i).map_or(0, |c| c.chars().count())).max().unwrap_or(0).max(3)
        };
        let widths: Vec<usize> = (0..self.columns.len()).map(width).collect();
        let rule: Vec<String> = (widths.iter().zip(&self.columns))
            .map(|(&w, c)| if c.right { format!("{}:", "-".repeat(w - 1)) } else { "-".repeat(w) })
            .collect();
        let line = |r: &Vec<String>| {
            let cells = r.iter().zip(&widths).zip(&self.columns).map(|((c, &w), col)| {
                if col.right { format!("{c:>w$}") } else { format!("{c:<w$}") }
            });
            format!("| {} |\n", cells.collect::<Vec<_>>().join(" | "))
        };
        [&header, &rule].into_iter().chain(&rows).map(line).collect()
    }

    /// What is wrong with the table's cells, given its roles: one line
    /// per problem, naming the row by its first cell.
    #[must_use]
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.rows {
            let name = r.cells.first().map_or("", String::as_str);
            let (n, cols) = (r.cells.len(), self.columns.len());
            if n != cols {
                out.push(format!("row {name:?}: {n} cells for {cols} columns"));
                continue;
            }
            let unavailable = r.cells.iter().any(|c| c.starts_with("unavailable"));
            let headline = r.cells.get(1).filter(|c| is_placeholder(c));
            if self.limits {
                if !unavailable && headline.is_some() {
                    out.push(format!(
                        "row {name:?}: no measurement and no `unavailable: <reason>`"
                    ));
                }
                continue;
            }
            if unavailable {
                out.push(format!("row {name:?}: `unavailable` outside a limits table"));
            }
            for (c, col) in r.cells.iter().zip(&self.columns) {
                if matches!(col.role, Role::Ours | Role::Peer) && is_placeholder(c) {
                    let col = &col.name;
                    out.push(format!("row {name:?}, column {col:?}: {c:?} where a value belongs"));
                }
            }
            if let (Role::Ours | Role::Peer, Some(c)) = (r.role, headline) {
                out.push(format!("row {name:?}: its headline {c:?} is not a value"));
            }
        }
        out
    }
}

/// `template` with every `{name}` of `vars` replaced by its value: the long
/// prose of a report lives as Markdown beside the bench (`bench/src/text/`).
#[must_use]
pub fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    vars.iter().fold(template.trim_end().to_owned(), |t, (k, v)| t.replace(&format!("{{{k}}}"), v))
}

/// `&[("name", name), …]` as `&str`s: the variables of [`say`], from locals of those names.
macro_rules! vars {
    ($($k:ident),* $(,)?) => { &[$((stringify!($k), AsRef::<str>::as_ref(&$k))),*] };
}
pub(crate) use vars;

/// Paragraph `key` of a bench's prose `text` (a file of `bench/src/text/`
/// where each paragraph follows a line `@@ key`), its `{name}`s filled.
///
/// # Panics
/// When `text` has no paragraph `key` (a test checks every key asked for).
#[must_use]
pub fn say(text: &str, key: &str, vars: &[(&str, &str)]) -> String {
    let body = paragraph(text, key);
    fill(body.unwrap_or_else(|| panic!("no paragraph `@@ {key}` in the bench's prose")), vars)
}

/// Paragraph `key` of a bench's prose as written ([`say`]), if there.
#[must_use]
pub fn paragraph<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split("\n@@ ").find_map(|s| s.strip_prefix(key)?.strip_prefix('\n'))
}

/// A column of a per-cell table: header (`>` right-aligns), role, text per cell.
pub type Col<'a, C> = (&'a str, Role, &'a dyn Fn(&C) -> String);

/// A table of one row per item of `cells` and one column per `cols`.
#[must_use]
pub fn cell_table<C>(cells: &[C], cols: &[Col<'_, C>]) -> Table {
    let mut t = Table::new(&cols.iter().map(|c| c.0).collect::<Vec<_>>());
    t.columns.iter_mut().zip(cols).for_each(|(col, spec)| col.role = spec.1);
    for c in cells {
        t.row(cols.iter().map(|spec| (spec.2)(c)));
    }
    t
}

/// Whether a cell holds no value: empty, a dash, `?`, `n/a`, or NaN.
fn is_placeholder(cell: &str) -> bool {
    let c = cell.trim().trim_matches('*').trim();
    matches!(c, "" | "—" | "–" | "-" | "?" | "n/a" | "unknown") || c.contains("NaN")
}

/// The outcome of a verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The target is met.
    #[serde(rename = "PASS")]
    Pass,
    /// The target is missed.
    #[serde(rename = "FAIL")]
    Fail,
    /// Nothing to judge (no ratio).
    #[serde(rename = "no verdict")]
    None,
}

impl Outcome {
    /// `PASS` when `pass`, else `FAIL`.
    #[must_use]
    pub fn of(pass: bool) -> Self {
        if pass { Self::Pass } else { Self::Fail }
    }

    /// `PASS`, `FAIL` or `no verdict`.
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            Self::Pass => "PASS",
            Self::Fail => "FAIL",
            Self::None => "no verdict",
        }
    }
}

/// One verdict line: `- **name** (target): PASS — detail`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The cell judged.
    pub name: String,
    /// A headline verdict (name in bold) rather than a detail under one.
    pub headline: bool,
    /// The target, when the line states it (`ours ≤ 0.5× rrdtool's total`).
    #[serde(default)]
    pub target: Option<String>,
    /// PASS, FAIL or none.
    pub outcome: Outcome,
    /// The figures behind it (`0.99× (median of 9 per-pair ratios, …)`).
    pub detail: String,
}

impl Verdict {
    /// A headline verdict on `name`.
    #[must_use]
    pub fn new(name: impl Into<String>, outcome: Outcome, detail: impl Into<String>) -> Self {
        Self { name: name.into(), headline: true, target: None, outcome, detail: detail.into() }
    }

    /// The same as a detail line under a headline (name not in bold).
    #[must_use]
    pub fn sub(mut self) -> Self {
        self.headline = false;
        self
    }

    /// States the target on the line.
    #[must_use]
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = Some(target.into());
        self
    }

    /// The Markdown list item.
    #[must_use]
    pub fn line(&self) -> String {
        let name = if self.headline { format!("**{}**", self.name) } else { self.name.clone() };
        let target = self.target.as_ref().map(|t| format!(" ({t})")).unwrap_or_default();
        let detail =
            if self.detail.is_empty() { String::new() } else { format!(" — {}", self.detail) };
        format!("- {name}{target}: {}{detail}", self.outcome.word())
    }
}

/// Which side of its target a ratio must stay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The median must be at most the target (a time ratio).
    AtMost,
    /// The median must be at least the target (a rate ratio).
    AtLeast,
}

/// The verdict on `name` from the median of its round-by-round ratios
/// against `target`, the one wording of every bench: `{prefix}0.90×{suffix}
/// (median of 5 per-round ratios, range 0.80–1.10)`, plus `; the range
/// straddles 1.0×` when some rounds meet the target and some do not; no
/// ratios give [`Outcome::None`] with `no ratio`.
#[must_use]
pub fn judge(
    name: impl Into<String>,
    ratio: Option<&crate::stats::Summary>,
    (target, bound): (f64, Bound),
    (prefix, suffix): (&str, &str),
) -> Verdict {
    let Some(r) = ratio else {
        return Verdict::new(name, Outcome::None, "no ratio");
    };
    let (pass, straddles) = match bound {
        Bound::AtMost => (r.median <= target, r.min <= target && r.max > target),
        Bound::AtLeast => (r.median >= target, r.min < target && r.max >= target),
    };
    let plural = crate::units::plural(r.n);
    let mut detail = format!(
        "{prefix}{:.2}×{suffix} (median of {} per-round ratio{plural}, range {:.2}–{:.2})",
        r.median, r.n, r.min, r.max
    );
    if straddles {
        detail.push_str(&format!("; the range straddles {target:?}×"));
    }
    Verdict::new(name, Outcome::of(pass), detail)
}

/// One piece of a report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Block {
    /// `#`×level heading.
    Heading {
        /// 1 for the title, 2 for a section, 3 below.
        level: u8,
        /// Its text.
        text: String,
    },
    /// A paragraph of Markdown prose.
    Text(String),
    /// A bulleted list, one item per entry.
    List(Vec<String>),
    /// A fenced code block.
    Code {
        /// The fence's language (`sh`).
        lang: String,
        /// Its lines.
        text: String,
    },
    /// A table.
    Table(Table),
    /// An image beside the report (a chart).
    Image {
        /// What it shows.
        alt: String,
        /// Its file, relative to the report.
        file: String,
    },
    /// Verdict lines.
    Verdicts(Vec<Verdict>),
}

/// A whole report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Its blocks in order; the first is the title.
    pub blocks: Vec<Block>,
}

impl Report {
    /// A report titled `title` (the `#` heading).
    #[must_use]
    pub fn new(title: impl Into<String>) -> Self {
        Self { blocks: vec![Block::Heading { level: 1, text: title.into() }] }
    }

    fn push(&mut self, b: Block) -> &mut Self {
        self.blocks.push(b);
        self
    }

    /// Adds a `##` section heading.
    pub fn section(&mut self, text: impl Into<String>) -> &mut Self {
        self.push(Block::Heading { level: 2, text: text.into() })
    }

    /// Adds a `###` heading.
    pub fn subsection(&mut self, text: impl Into<String>) -> &mut Self {
        self.push(Block::Heading { level: 3, text: text.into() })
    }

    /// Adds a paragraph.
    pub fn text(&mut self, text: impl Into<String>) -> &mut Self {
        self.push(Block::Text(text.into()))
    }

    /// Adds a bulleted list.
    pub fn list<S: Into<String>>(&mut self, items: impl IntoIterator<Item = S>) -> &mut Self {
        self.push(Block::List(items.into_iter().map(Into::into).collect()))
    }

    /// Adds a fenced code block.
    pub fn code(&mut self, lang: &str, text: impl Into<String>) -> &mut Self {
        self.push(Block::Code { lang: lang.to_owned(), text: text.into() })
    }

    /// Adds the `## Commands` section: `lines`, run from the workspace root.
    pub fn commands(&mut self, lines: &[String]) -> &mut Self {
        let intro = "Run from the workspace root.";
        self.section("Commands").text(intro).code("sh", lines.join("\n"))
    }

    /// Adds a table.
    pub fn table(&mut self, t: Table) -> &mut Self {
        self.push(Block::Table(t))
    }

    /// Adds an image.
    pub fn image(&mut self, alt: impl Into<String>, file: impl Into<String>) -> &mut Self {
        self.push(Block::Image { alt: alt.into(), file: file.into() })
    }

    /// Adds verdict lines.
    pub fn verdicts(&mut self, v: Vec<Verdict>) -> &mut Self {
        self.push(Block::Verdicts(v))
    }

    /// Every verdict, in order.
    pub fn all_verdicts(&self) -> impl Iterator<Item = &Verdict> {
        self.blocks.iter().flat_map(|b| match b {
            Block::Verdicts(v) => v.as_slice(),
            _ => &[],
        })
    }

    /// Every table, in order, with the heading above it.
    pub fn tables(&self) -> impl Iterator<Item = (&str, &Table)> {
        let mut heading = "";
        self.blocks.iter().filter_map(move |b| match b {
            Block::Heading { text, .. } => {
                heading = text;
                None
            }
            Block::Table(t) => Some((heading, t)),
            _ => None,
        })
    }

    /// Every file the report shows (images).
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Image { file, .. } => Some(file.as_str()),
            _ => None,
        })
    }

    /// REPORT.md: blocks separated by blank lines.
    #[must_use]
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        for b in &self.blocks {
            let _ = match b {
                Block::Heading { level, text } => {
                    writeln!(o, "{} {text}", "#".repeat(usize::from(*level)))
                }
                Block::Text(t) => writeln!(o, "{}", t.trim_end()),
                Block::List(items) => items.iter().try_for_each(|i| writeln!(o, "- {i}")),
                Block::Code { lang, text } => writeln!(o, "```{lang}\n{}\n```", text.trim_end()),
                Block::Table(t) => o.write_str(&t.render()),
                Block::Image { alt, file } => writeln!(o, "![{alt}]({file})"),
                Block::Verdicts(v) => v.iter().try_for_each(|l| writeln!(o, "{}", l.line())),
            };
            o.push('\n');
        }
        o
    }

    /// What is wrong with the report: a missing title, and its tables'
    /// problems named by their heading.
    #[must_use]
    pub fn problems(&self) -> Vec<String> {
        let titled = matches!(self.blocks.first(), Some(Block::Heading { level: 1, .. }));
        let title = (!titled).then(|| "the report does not start with a title".to_owned());
        let tables = self.tables().enumerate().flat_map(|(n, (heading, t))| {
            t.problems()
                .into_iter()
                .map(move |p| format!("table {} (under {heading:?}): {p}", n + 1))
        });
        title.into_iter().chain(tables).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_render_and_check_their_roles() {
        let mut t = Table::of("cell | >ours | >Go | >ours/Go")
            .compares(&[1], &[2])
            .roles(Role::Ratio, &[3]);
        t.row(["cold", "4.32 s", "1 s", "—"]);
        t.row(["a|b", "1 ms", "2 ms"]);
        assert_eq!(
            t.render(),
            "| cell |   ours |   Go | ours/Go |\n\
             | ---- | -----: | ---: | ------: |\n\
             | cold | 4.32 s |  1 s |       — |\n\
             | a\\|b |   1 ms | 2 ms |         |\n"
        );
        assert!(t.problems().is_empty(), "{:?}", t.problems());
        t.row(["warm", "1 s", "—", "0.5×"]);
        t.row(["hot", "", "1 s"]);
        let p = t.problems();
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("\"warm\"") && p[0].contains("\"Go\""), "{p:?}");
        assert!(p[1].contains("\"hot\"") && p[1].contains("\"ours\""), "{p:?}");
    }

    #[test]
    fn rows_can_compare_and_limits_may_be_unavailable() {
        let mut t = Table::new(&["tool", ">total", ">per call"]);
        t.row_as(Role::Ours, ["ours mmap", "1 s", "—"]);
        t.row_as(Role::Peer, ["rrdtool", "?", "—"]);
        assert_eq!(t.problems().len(), 1, "{:?}", t.problems());
        let mut l = Table::new(&["what", ">time", "notes"]).limits();
        l.row(["O_DIRECT", "—", "unavailable: EINVAL on tmpfs"]);
        assert!(l.problems().is_empty());
        l.row(["cached", "—", "no reason"]);
        assert_eq!(l.problems().len(), 1);
        let mut u = Table::new(&["what", ">time"]);
        u.row(["x", "unavailable: no"]);
        assert_eq!(u.problems().len(), 1);
    }

    #[test]
    fn verdicts_judge_the_median_and_note_a_straddling_range() {
        let s = |v: &[f64]| crate::stats::Summary::of(v).unwrap();
        let v = judge("c", Some(&s(&[0.9, 1.2, 1.3])), (1.0, Bound::AtMost), ("ours ", " Go"));
        assert_eq!(
            v.line(),
            "- **c**: FAIL — ours 1.20× Go (median of 3 per-round ratios, range 0.90–1.30); the range \
             straddles 1.0×"
        );
        let v = judge("c", Some(&s(&[1.6])), (1.5, Bound::AtLeast), ("", ""));
        assert_eq!(
            v.line(),
            "- **c**: PASS — 1.60× (median of 1 per-round ratio, range 1.60–1.60)"
        );
        assert_eq!(judge("c", None, (1.0, Bound::AtMost), ("", "")).outcome, Outcome::None);
        // A range that only touches the target on the passing side does not
        // straddle it.
        let touch = |v, b| judge("c", Some(&s(v)), (1.0, b), ("", "")).detail;
        assert!(!touch(&[0.9, 1.0], Bound::AtMost).contains("straddles"));
        assert!(!touch(&[1.0, 1.1], Bound::AtLeast).contains("straddles"));
        assert!(touch(&[0.9, 1.1], Bound::AtLeast).contains("straddles"));
    }

    #[test]
    fn a_report_renders_and_reads_back_from_json() {
        let mut r = Report::new("bench x — today");
        r.text("Intro.").section("Results");
        let mut t = Table::new(&["cell", ">ours", ">peer"]).compares(&[1], &[2]);
        t.row(["cold", "1 s", "2 s"]);
        r.table(t).image("ratios", "ratios.svg").list(["a", "b"]).code("sh", "ls\n");
        r.section("Verdicts").verdicts(vec![
            Verdict::new("cold", Outcome::Pass, "0.50×").target("ours ≤ 1.0× peer"),
            Verdict::new("mode fd", Outcome::Fail, "1.2×").sub(),
        ]);
        let md = r.markdown();
        assert!(md.starts_with("# bench x — today\n\nIntro.\n\n## Results\n\n| cell |"), "{md}");
        assert!(md.contains("![ratios](ratios.svg)\n\n- a\n- b\n\n```sh\nls\n```\n\n"), "{md}");
        assert!(
            md.ends_with("- **cold** (ours ≤ 1.0× peer): PASS — 0.50×\n- mode fd: FAIL — 1.2×\n\n"),
            "{md}"
        );
        let back: Report = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.all_verdicts().count(), 2);
        assert_eq!(back.files().collect::<Vec<_>>(), ["ratios.svg"]);
        assert!(back.problems().is_empty());
        assert_eq!(fill("a {x} {y}\n", &[("x", "1"), ("y", "2")]), "a 1 2");
    }

    /// Every paragraph a bench asks for (`say(NOTES, "key"`) is in its prose, once.
    #[test]
    fn every_paragraph_asked_for_is_there_once() {
        let benches = [
            (include_str!("bolt.rs"), include_str!("text/bolt-notes.md")),
            (include_str!("bolt_scan.rs"), include_str!("text/bolt-scan-notes.md")),
            (include_str!("mmaptest.rs"), include_str!("text/mmaptest-notes.md")),
            (include_str!("revlog.rs"), include_str!("text/revlog-notes.md")),
            (include_str!("rrd.rs"), include_str!("text/rrd-report.md")),
            (include_str!("live.rs"), include_str!("text/live-notes.md")),
            (include_str!("fleet.rs"), include_str!("text/fleet-notes.md")),
        ];
        for (code, text) in benches {
            let key = |s: &'static str| {
                let s = s.trim_start().strip_prefix("NOTES,")?.trim_start().strip_prefix('"')?;
                s.split('"').next()
            };
            let keys: Vec<&str> = code.split("say(").filter_map(key).collect();
            assert!(keys.len() > 2, "{keys:?}");
            for key in keys {
                assert_eq!(text.matches(&format!("\n@@ {key}\n")).count(), 1, "{key}");
            }
        }
        assert_eq!(say("x\n@@ a\none {v}\n\n@@ b\ntwo\n", "a", &[("v", "1")]), "one 1");
    }
}
