//! Report files, written all at once at the end (temporary names renamed
//! into place, so an interrupted bench leaves no half-written report).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A path (file or directory) removed on drop unless [`TempPath::keep`] was
/// called: temporary outputs, scratch directories, files not yet complete.
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
            let _ = if self.path.is_dir() {
                fs::remove_dir_all(&self.path)
            } else {
                fs::remove_file(&self.path)
            };
        }
    }
}

/// `path` (a file or a directory) made once: when it is missing, or not
/// `valid` (an older run's, or without its record), `make(tmp)` writes it
/// (and any record of how) under a temporary name beside it, which is renamed
/// into place after, so an interrupted bench leaves nothing half-made under
/// the real name. Whether it was made now.
pub fn make_once(path: &Path, valid: bool, make: impl FnOnce(&Path) -> Result<()>) -> Result<bool> {
    if valid && path.exists() {
        return Ok(false);
    }
    drop(TempPath::new(path.to_owned()));
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = TempPath::new(path.with_file_name(format!(".{name}.tmp-{}", std::process::id())));
    drop(TempPath::new(tmp.path().to_owned())); // an interrupted run's leftover
    make(tmp.path())?;
    crate::interrupt::check()?;
    fs::rename(tmp.path(), path)
        .with_context(|| format!("cannot rename into {}", path.display()))?;
    let _ = tmp.keep();
    Ok(true)
}

/// A bench's exit status: success when `ok`, else failure, saying on
/// stderr that `what` (see the report).
pub fn exit(ok: bool, what: &str) -> std::process::ExitCode {
    if ok {
        return std::process::ExitCode::SUCCESS;
    }
    eprintln!("xtask: {what} (see the report)");
    std::process::ExitCode::FAILURE
}

/// The end of every bench: `report` as REPORT.md and `results` (a JSON
/// object) as results.json with the model under `"report"`, written into
/// `dir` after the `extra` files (charts, `traces/…`), each first to a
/// fsynced `.NAME.tmp` beside its destination, then all renamed into place
/// in order (REPORT.md last); then the report on stdout.
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
    let mut temps = Vec::with_capacity(extra.len() + 2);
    for (name, content) in
        extra.iter().chain(&[("results.json", json.as_bytes()), ("REPORT.md", markdown.as_bytes())])
    {
        let dest = dir.join(name);
        let parent = dest.parent().unwrap_or(dir);
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        let base = dest.file_name().map_or_else(|| (*name).into(), |b| b.to_string_lossy());
        let tmp = TempPath::new(parent.join(format!(".{base}.tmp")));
        fs::File::create(tmp.path())
            .and_then(|mut f| f.write_all(content).and_then(|()| f.sync_all()))
            .with_context(|| format!("cannot write {}", tmp.path().display()))?;
        temps.push((tmp, dest));
    }
    super::interrupt::check()?;
    for (tmp, dest) in temps {
        fs::rename(tmp.path(), &dest)
            .with_context(|| format!("cannot rename into {}", dest.display()))?;
        tmp.keep();
    }
    print!("{markdown}");
    eprintln!("xtask: wrote {}", dir.join("REPORT.md").display());
    Ok(())
}

/// [`publish`] with every trace of `traces` and every chart of `charts`.
pub fn publish_traced(
    dir: &Path,
    report: &crate::report::Report,
    results: &impl serde::Serialize,
    traces: &super::traces::Traces,
    charts: &[super::charts::ChartFile],
) -> Result<()> {
    let charts = charts.iter().map(super::charts::ChartFile::output);
    publish(dir, report, results, &traces.files().into_iter().chain(charts).collect::<Vec<_>>())
}
