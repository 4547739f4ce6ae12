//! Report files, written all at once at the end (temporary names renamed
//! into place, so an interrupted bench leaves no half-written report).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A path removed on drop unless [`TempPath::keep`] was called (a
/// directory with all it holds): temporary outputs, generated files and
/// repositories not yet complete, scratch directories, the sparse test
/// file.
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
            if self.path.is_dir() {
                let _ = fs::remove_dir_all(&self.path);
            } else {
                let _ = fs::remove_file(&self.path);
            }
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

/// The end of every bench: `report` rendered as REPORT.md, and `results`
/// as results.json with the report's model under `"report"`, written into
/// `dir` in one atomic step ([`write_all_atomically`]) after the `extra`
/// files (charts, `traces/…`); then the report on stdout and where it went
/// on stderr. Drop the progress bar first.
///
/// # Errors
/// When `results` is not a JSON object, or a file cannot be written.
pub fn publish(
    dir: &Path,
    report: &crate::report::Report,
    results: &impl serde::Serialize,
    extra: &[(&str, &[u8])],
) -> Result<()> {
    let mut json = serde_json::to_value(results)?;
    let obj = json.as_object_mut().context("results are not a JSON object")?;
    obj.insert("report".to_owned(), serde_json::to_value(report)?);
    let json = serde_json::to_string_pretty(&json)? + "\n";
    let markdown = report.markdown();
    let mut files: Vec<(&str, &[u8])> = extra.to_vec();
    files.push(("results.json", json.as_bytes()));
    files.push(("REPORT.md", markdown.as_bytes()));
    write_all_atomically(dir, &files)?;
    print!("{markdown}");
    eprintln!("xtask: wrote {}", dir.join("REPORT.md").display());
    Ok(())
}

/// [`publish`] with every trace of `traces` (`traces/…`) and every chart
/// of `charts` beside the report.
///
/// # Errors
/// As [`publish`].
pub fn publish_traced(
    dir: &Path,
    report: &crate::report::Report,
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
