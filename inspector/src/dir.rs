//! `inspector open DIR`: the files of a tree as a sortable list (resident
//! bytes, hot set cached, size, format), from which Enter opens a file's
//! own view; leaving that view (Esc) comes back to the list.
//!
//! The tree is walked as `inspector residency -R` walks it
//! ([`measure_tree`]: no symbolic link followed, one file system) on a
//! worker thread, again every few seconds while the list is shown, so the
//! screen never waits on the disk. No drawing here: `ui::dir` draws a
//! [`DirList`].

use std::cmp::Reverse;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::event::Action;
use crate::many::{Status, TreeArgs, measure_tree};
use crate::worker::Repeated;

/// One file of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Its path.
    pub path: PathBuf,
    /// Its format (`bolt`, `rrd`, `revlog`, `unknown`).
    pub format: &'static str,
    /// Size in bytes.
    pub size: u64,
    /// Resident bytes (`None`: the kernel does not say).
    pub resident: Option<u64>,
    /// An RRD file's hot set resident, in % (`None` for other files).
    pub hot_percent: Option<f64>,
}

/// What the list is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// Most resident bytes first.
    Resident,
    /// Least of the hot set cached first (RRD files; the others last).
    Hot,
    /// Largest first.
    Size,
    /// By path.
    Name,
}

impl SortBy {
    /// The next order (`s`).
    #[must_use]
    pub fn next(self) -> SortBy {
        match self {
            SortBy::Resident => SortBy::Hot,
            SortBy::Hot => SortBy::Size,
            SortBy::Size => SortBy::Name,
            SortBy::Name => SortBy::Resident,
        }
    }

    /// Its name in the title.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SortBy::Resident => "resident",
            SortBy::Hot => "hot set cached",
            SortBy::Size => "size",
            SortBy::Name => "name",
        }
    }
}

/// A walk's result: the rows and the paths that could not be measured.
type Walked = (Vec<Row>, u64);

/// The least time between two walks, or four times the last one's.
const REWALK: Duration = Duration::from_secs(5);

/// The list's state.
#[derive(Debug)]
pub struct DirList {
    /// The directory.
    pub root: PathBuf,
    /// The files, in the current order (`None` before the first walk).
    pub rows: Option<Vec<Row>>,
    /// Paths found but not measured in the last walk.
    pub skipped: u64,
    /// The order.
    pub sort: SortBy,
    /// The row under the cursor.
    pub cursor: usize,
    /// The first row on screen.
    pub offset: usize,
    /// `false` once the user quit.
    pub running: bool,
    /// The file to open, when Enter was pressed.
    pub open: Option<PathBuf>,
    /// What went wrong last (a file that could not be opened), shown
    /// until the next key.
    pub message: Option<String>,
    walks: Repeated<Walked>,
}

impl DirList {
    /// A list of the tree under `root`; its first walk starts at once.
    #[must_use]
    pub fn new(root: PathBuf) -> DirList {
        let mut d = DirList {
            root,
            rows: None,
            skipped: 0,
            sort: SortBy::Resident,
            cursor: 0,
            offset: 0,
            running: true,
            open: None,
            message: None,
            walks: Repeated::new(REWALK),
        };
        d.walk();
        d
    }

    /// `true` while a walk runs.
    #[must_use]
    pub fn walking(&self) -> bool {
        self.walks.busy()
    }

    /// How long ago the rows shown were walked.
    #[must_use]
    pub fn age(&self) -> Option<Duration> {
        self.walks.age()
    }

    fn walk(&mut self) {
        let root = self.root.clone();
        self.walks.spawn("inspector-dir", move || walk(&root));
    }

    /// Take a finished walk, and start another when it is due; `true`
    /// when one arrived.
    pub fn tick(&mut self) -> bool {
        let mut arrived = false;
        if let Some(Some((rows, skipped))) = self.walks.poll() {
            let chosen = self.selected().map(|r| r.path.clone());
            self.rows = Some(rows);
            self.skipped = skipped;
            self.order(chosen);
            arrived = true;
        }
        if self.walks.due() {
            self.walk();
        }
        arrived
    }

    /// The row under the cursor.
    #[must_use]
    pub fn selected(&self) -> Option<&Row> {
        self.rows.as_ref()?.get(self.cursor)
    }

    /// Sort the rows, keeping the cursor on `chosen` when it is still
    /// listed.
    fn order(&mut self, chosen: Option<PathBuf>) {
        let Some(rows) = self.rows.as_mut() else { return };
        match self.sort {
            SortBy::Resident => rows.sort_by_key(|r| (Reverse(r.resident), r.path.clone())),
            SortBy::Size => rows.sort_by_key(|r| (Reverse(r.size), r.path.clone())),
            SortBy::Name => rows.sort_by(|a, b| a.path.cmp(&b.path)),
            SortBy::Hot => rows.sort_by(|a, b| {
                let key = |r: &Row| r.hot_percent.unwrap_or(f64::INFINITY);
                key(a).total_cmp(&key(b)).then_with(|| a.path.cmp(&b.path))
            }),
        }
        if let Some(c) = chosen.and_then(|p| rows.iter().position(|r| r.path == p)) {
            self.cursor = c;
        }
        self.cursor = self.cursor.min(rows.len().saturating_sub(1));
    }

    /// Apply a key, with `height` rows on screen.
    pub fn update(&mut self, action: Action, height: usize) {
        self.message = None;
        let last = self.rows.as_ref().map_or(0, |r| r.len().saturating_sub(1));
        let h = height.max(1);
        match action {
            Action::Quit | Action::Back => self.running = false,
            Action::Up => self.cursor = self.cursor.saturating_sub(1),
            Action::Down => self.cursor = (self.cursor + 1).min(last),
            Action::PageUp => self.cursor = self.cursor.saturating_sub(h),
            Action::PageDown => self.cursor = (self.cursor + h).min(last),
            Action::Home => self.cursor = 0,
            Action::End => self.cursor = last,
            Action::Enter => self.open = self.selected().map(|r| r.path.clone()),
            Action::Sort => {
                self.sort = self.sort.next();
                let chosen = self.selected().map(|r| r.path.clone());
                self.order(chosen);
            }
            Action::Refresh => self.walk(),
            _ => {}
        }
        if self.cursor < self.offset {
            self.offset = self.cursor;
        } else if self.cursor >= self.offset + h {
            self.offset = self.cursor + 1 - h;
        }
    }
}

/// Walk `root` recursively on its file system and measure each file.
fn walk(root: &Path) -> Walked {
    let args = TreeArgs { paths: vec![root.to_path_buf()], recursive: true, cross_mounts: false };
    let (mut rows, mut skipped) = (Vec::new(), 0u64);
    let _ = measure_tree(&args, &mut |e| {
        match (e.status, e.report) {
            (Status::Measured, Some(r)) => rows.push(Row {
                path: PathBuf::from(&r.file),
                format: r.format,
                size: r.size,
                resident: r.resident_bytes,
                hot_percent: r.hot_set.and_then(|h| h.hot_resident_percent),
            }),
            (Status::Skipped, _) => skipped += 1,
            _ => {}
        }
        Ok(())
    });
    (rows, skipped)
}
