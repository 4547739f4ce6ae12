//! Report files, written all at once at the end (temporary names renamed
//! into place, so an interrupted bench leaves no half-written report), and
//! a small markdown table builder.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A path removed on drop unless [`TempPath::keep`] was called: temporary
/// outputs, generated files not yet complete, the sparse test file.
#[derive(Debug)]
pub struct TempPath {
    path: PathBuf,
    armed: bool,
}

impl TempPath {
    /// Guards `path` (which may not exist yet).
    pub fn new(path: PathBuf) -> Self {
        Self { path, armed: true }
    }

    /// The guarded path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops guarding: the path stays.
    pub fn keep(mut self) -> PathBuf {
        self.armed = false;
        std::mem::take(&mut self.path)
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        if self.armed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Writes `files` (name, content) into `dir` (created if needed; names
/// may have directory parts): every file first to `.NAME.tmp` beside its
/// destination and fsynced, then all renamed into place in
/// order (put the one people look for, REPORT.md, last).
pub fn write_all_atomically(dir: &Path, files: &[(&str, &[u8])]) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut temps = Vec::with_capacity(files.len());
    for (name, content) in files {
        // A name may have a directory part (`traces/x.trace`): the
        // temporary file sits beside its destination.
        let dest = dir.join(name);
        let parent = dest.parent().unwrap_or(dir);
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let base = dest
            .file_name()
            .map_or_else(|| (*name).to_string(), |b| b.to_string_lossy().into_owned());
        let tmp = TempPath::new(parent.join(format!(".{base}.tmp")));
        let mut f = fs::File::create(tmp.path())
            .with_context(|| format!("cannot create {}", tmp.path().display()))?;
        f.write_all(content)
            .and_then(|()| f.sync_all())
            .with_context(|| format!("cannot write {}", tmp.path().display()))?;
        temps.push((tmp, dest));
    }
    super::interrupt::check()?;
    for (tmp, dest) in temps {
        fs::rename(tmp.path(), &dest)
            .with_context(|| format!("cannot rename into {}", dest.display()))?;
        let _ = tmp.keep();
    }
    Ok(())
}

/// The end of every bench: `results` as `results.json` and `report` as
/// `REPORT.md` into `dir` (atomically, [`write_all_atomically`]), then the
/// report on stdout and where it went on stderr. Drop the progress bar
/// first. `extra` files (charts, `traces/…`) are written in the same atomic
/// step, before results.json and REPORT.md.
pub fn publish(
    dir: &Path,
    report: &str,
    results: &impl serde::Serialize,
    extra: &[(&str, &[u8])],
) -> Result<()> {
    let json = serde_json::to_string_pretty(results)? + "\n";
    let mut files: Vec<(&str, &[u8])> = extra.to_vec();
    files.push(("results.json", json.as_bytes()));
    files.push(("REPORT.md", report.as_bytes()));
    write_all_atomically(dir, &files)?;
    print!("{report}");
    eprintln!("xtask: wrote {}", dir.join("REPORT.md").display());
    Ok(())
}

/// [`publish`] with every trace of `traces` (`traces/…`) and every chart
/// of `charts` beside the report.
pub fn publish_traced(
    dir: &Path,
    report: &str,
    results: &impl serde::Serialize,
    traces: &super::traces::Traces,
    charts: &[super::charts::ChartFile],
) -> Result<()> {
    let extra: Vec<(&str, &[u8])> = traces
        .files()
        .into_iter()
        .chain(charts.iter().map(super::charts::ChartFile::output))
        .collect();
    publish(dir, report, results, &extra)
}

/// A markdown table.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Columns named `header`; a leading `>` right-aligns a column.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header
                .iter()
                .map(|h| h.trim_start_matches('>').to_owned())
                .collect(),
            right: header.iter().map(|h| h.starts_with('>')).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are left empty, extra ones dropped).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let mut r: Vec<String> = cells.into_iter().map(Into::into).collect();
        r.resize(self.header.len(), String::new());
        self.rows.push(r);
    }

    /// The table as markdown, one line per row, columns padded so the
    /// source reads as a table too.
    pub fn render(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let cells: Vec<Vec<String>> = std::iter::once(&self.header)
            .chain(&self.rows)
            .map(|r| r.iter().map(|c| esc(c)).collect())
            .collect();
        let widths: Vec<usize> = (0..self.header.len())
            .map(|i| {
                cells
                    .iter()
                    .map(|r| r[i].chars().count())
                    .max()
                    .unwrap_or(0)
                    .max(3)
            })
            .collect();
        let line = |r: &[String]| {
            let parts: Vec<String> = r
                .iter()
                .zip(&widths)
                .zip(&self.right)
                .map(|((c, &w), &right)| {
                    if right {
                        format!("{c:>w$}")
                    } else {
                        format!("{c:<w$}")
                    }
                })
                .collect();
            format!("| {} |\n", parts.join(" | "))
        };
        let mut out = line(&cells[0]);
        let rule: Vec<String> = widths
            .iter()
            .zip(&self.right)
            .map(|(&w, &right)| {
                if right {
                    format!("{}:", "-".repeat(w - 1))
                } else {
                    "-".repeat(w)
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", rule.join(" | ")));
        for r in &cells[1..] {
            out.push_str(&line(r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_render_as_markdown() {
        let mut t = Table::new(&["cell", ">ours", ">ratio"]);
        t.row(["cold", "4.32 s", "1.05×"]);
        t.row(["a|b", "1 ms"]);
        assert_eq!(
            t.render(),
            "| cell |   ours | ratio |\n\
             | ---- | -----: | ----: |\n\
             | cold | 4.32 s | 1.05× |\n\
             | a\\|b |   1 ms |       |\n"
        );
    }
}
