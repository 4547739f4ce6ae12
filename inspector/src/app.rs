//! The inspector's state: what is shown ([`Data`]), where the user is
//! (selection, focus, scroll, zoom, expanded buckets) and what happened
//! last. No drawing here, and no I/O except through a [`Target`] that the
//! caller passes in: the live [`Watch`] in `inspector open`, a replayed
//! trace, or fixed data in the tests.

use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use mapwise_core::bolt::PageDetail;
use mapwise_core::layout::{Format, Group, Kind, Layout, Region};
use mapwise_native::observe::watch::{Done, Effect, Job, JobKind, Refreshed, Snapshot, Watch};
use mapwise_native::os::residency::{FileAdvice, Residency, TO_EOF};
use mapwise_view::describe::Item;
pub use mapwise_view::residency::Residence;
use mapwise_view::totals::KindTotal;
use ratatui::layout::{Position, Rect};

use crate::describe::{self, Line, Tone, Widths};
use crate::etcd::{PrefixReport, Prefixes};
use crate::event::Action;
use crate::stats;
use crate::ui;

mod advise;
mod detail;
mod map;
mod prefixes;
mod tree;

use advise::{AdviseKey, AdvisePane};
use detail::DetailPane;
use map::{MapKey, MapPane};
use prefixes::PrefixPane;
use tree::TreePane;

/// Most elements decoded per page (a page's `count` is a `u16`, so this
/// is all of them).
pub const DETAIL_LIMIT: usize = u16::MAX as usize;

/// `/` segments the prefix pane groups etcd keys by (`inspector etcd`'s
/// default `--depth`).
pub const PREFIX_DEPTH: usize = 2;

/// Decoded pages kept; the cache is emptied when it grows past this.
const DETAIL_CACHE: usize = 1024;

/// Where the app's data comes from and where its actions go.
///
/// [`Watch`] is the real one, [`crate::replay::Replay`] plays a recorded trace,
/// and the tests implement it over fixed data.
pub trait Target {
    /// Check the file, collect a finished re-read, sample residency again.
    fn refresh(&mut self) -> Refreshed;
    /// [`Target::refresh`] the user asked for: a changed file is re-read
    /// at once, not after the pause between automatic re-reads.
    fn refresh_now(&mut self) -> Refreshed {
        self.refresh()
    }
    /// The latest structure snapshot.
    fn snapshot(&self) -> &Snapshot;
    /// The latest residency sample.
    fn residency(&self) -> Option<&Residency>;
    /// A problem with the file right now (vanished, unreadable).
    fn problem(&self) -> Option<&str>;
    /// `true` while the structure is being re-read.
    fn rereading(&self) -> bool;
    /// `true` while the file's pages are locked in memory by us.
    fn is_locked(&self) -> bool;
    /// Decode page `pgid` (all its elements).
    ///
    /// # Errors
    /// Why the page cannot be decoded, as text.
    fn page_detail(&self, pgid: u64) -> Result<PageDetail, String>;
    /// Describe the structures overlapping `[offset, offset + len)`
    /// (formats other than bbolt).
    ///
    /// # Errors
    /// Why they cannot be decoded, as text.
    fn describe(&self, offset: u64, len: u64) -> Result<Vec<Item>, String>;
    /// Bring the whole file into the page cache; returns what changed,
    /// re-sampled.
    ///
    /// # Errors
    /// The failure, as text.
    fn touch(&mut self) -> Result<Effect, String>;
    /// Drop the whole file from the page cache; returns what changed,
    /// re-sampled (pages mapped or locked elsewhere stay).
    ///
    /// # Errors
    /// The failure, as text.
    fn evict(&mut self) -> Result<Effect, String>;
    /// Give the kernel `advice` (`posix_fadvise`) about the file bytes
    /// `[offset, offset + len)`; returns the range's residency before and
    /// after, re-sampled once it settled.
    ///
    /// # Errors
    /// The failure, as text.
    fn advise(&mut self, advice: FileAdvice, offset: u64, len: u64) -> Result<Effect, String>;
    /// Lock (or, when locked, unlock) the file in memory; returns whether
    /// it is locked now.
    ///
    /// # Errors
    /// The failure, as text.
    fn toggle_lock(&mut self) -> Result<bool, String>;
    /// Touch, evict or advise `[offset, offset + len)` as a [`Job`] that runs
    /// on a worker thread while the screen keeps drawing ([`Target::finish`]
    /// takes its result back). `None`: this target acts at once, through
    /// [`Target::touch`], [`Target::evict`] and [`Target::advise`].
    fn job(&mut self, _kind: JobKind, _offset: u64, _len: u64) -> Option<Result<Job, String>> {
        None
    }
    /// Take back a finished [`Job`]'s residency sample; returns its effect.
    ///
    /// # Errors
    /// The job's failure, as text.
    fn finish(&mut self, done: Done) -> Result<Effect, String> {
        done.effect
    }
    /// Steer playback (replays only): returns what happened, as text.
    ///
    /// # Errors
    /// A live target has no playback; the default says so.
    fn playback(&mut self, _cmd: Playback) -> Result<String, String> {
        Err("play, step and speed work in `inspector replay TRACE`; this view is live".into())
    }
    /// The playback position shown in the status line (`None`: live).
    fn clock(&self) -> Option<String> {
        None
    }
    /// How current the structure shown is (a followed bbolt file: "as of
    /// txid N, 0.8 s ago").
    fn structure_age(&self) -> Option<String> {
        None
    }
    /// Why no structure newer than the one shown settled, when none could.
    fn live_note(&self) -> Option<String> {
        None
    }
    /// `true` while a replay plays (a live view never does).
    fn is_playing(&self) -> bool {
        false
    }
    /// Count an etcd db's key prefixes of `depth` `/` segments
    /// ([`crate::etcd::prefixes`]) on a worker; the answer comes on the
    /// channel. `None`: this target cannot (a replayed trace).
    fn etcd_prefixes(&mut self, _depth: usize) -> Option<Receiver<Prefixes>> {
        None
    }
}

/// A playback command of a replayed trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Playback {
    /// Play or pause.
    Toggle,
    /// One frame back (pauses).
    StepBack,
    /// One frame forward (pauses).
    StepForward,
    /// Half the speed.
    Slower,
    /// Double the speed.
    Faster,
}

impl Target for Watch {
    fn refresh(&mut self) -> Refreshed {
        Watch::refresh(self)
    }
    fn refresh_now(&mut self) -> Refreshed {
        Watch::refresh_now(self)
    }
    fn snapshot(&self) -> &Snapshot {
        Watch::snapshot(self)
    }
    fn residency(&self) -> Option<&Residency> {
        Watch::residency(self)
    }
    fn problem(&self) -> Option<&str> {
        Watch::problem(self)
    }
    fn rereading(&self) -> bool {
        Watch::rereading(self)
    }
    fn is_locked(&self) -> bool {
        Watch::is_locked(self)
    }
    fn page_detail(&self, pgid: u64) -> Result<PageDetail, String> {
        Watch::page_detail(self, pgid, DETAIL_LIMIT)
    }
    fn describe(&self, offset: u64, len: u64) -> Result<Vec<Item>, String> {
        Watch::describe(self, offset, len)
    }
    fn touch(&mut self) -> Result<Effect, String> {
        Watch::touch(self, 0, TO_EOF)
    }
    fn evict(&mut self) -> Result<Effect, String> {
        Watch::evict(self, 0, TO_EOF)
    }
    fn advise(&mut self, advice: FileAdvice, offset: u64, len: u64) -> Result<Effect, String> {
        Watch::advise(self, offset, len, advice)
    }
    fn toggle_lock(&mut self) -> Result<bool, String> {
        Watch::toggle_lock(self)
    }
    fn job(&mut self, kind: JobKind, offset: u64, len: u64) -> Option<Result<Job, String>> {
        Some(Watch::job(self, kind, offset, len))
    }
    fn finish(&mut self, done: Done) -> Result<Effect, String> {
        Watch::finish(self, done)
    }
    fn structure_age(&self) -> Option<String> {
        Watch::structure_age(self)
    }
    fn live_note(&self) -> Option<String> {
        Watch::live_note(self).map(str::to_owned)
    }
    fn etcd_prefixes(&mut self, depth: usize) -> Option<Receiver<Prefixes>> {
        Some(crate::etcd::spawn_prefixes(Watch::path(self).to_path_buf(), depth))
    }
}

/// What the screen is drawn from: one structure snapshot and one
/// residency sample, plus the file's state. A plain struct, so tests can
/// build it without a live file.
#[derive(Debug, Clone)]
pub struct Data {
    /// The file's structure.
    pub snapshot: Snapshot,
    /// Which of its OS pages are in the page cache (`None` before the
    /// first sample, or when sampling failed).
    pub residency: Option<Residency>,
    /// A problem with the file right now (vanished, unreadable).
    pub problem: Option<String>,
    /// `true` while a background re-read of the structure runs.
    pub rereading: bool,
    /// `true` while the file is locked in memory by the inspector.
    pub locked: bool,
    /// Playback position of a replayed trace (`None`: live).
    pub clock: Option<String>,
    /// How current the structure is ([`Target::structure_age`]).
    pub age: Option<String>,
    /// Why no newer structure settled ([`Target::live_note`]).
    pub live_note: Option<String>,
}

impl Data {
    /// Data of a snapshot and a residency sample.
    #[must_use]
    pub fn new(snapshot: Snapshot, residency: Option<Residency>) -> Data {
        Data {
            snapshot,
            residency,
            problem: None,
            rereading: false,
            locked: false,
            clock: None,
            age: None,
            live_note: None,
        }
    }

    /// Everything `target` holds now.
    #[must_use]
    pub fn from_target(target: &dyn Target) -> Data {
        Data {
            snapshot: target.snapshot().clone(),
            residency: target.residency().cloned(),
            problem: target.problem().map(str::to_owned),
            rereading: target.rereading(),
            locked: target.is_locked(),
            clock: target.clock(),
            age: target.structure_age(),
            live_note: target.live_note(),
        }
    }

    /// The layout drawn.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.snapshot.layout
    }
}

/// Which pane receives movement keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// The page map.
    Map,
    /// The bucket tree.
    Tree,
    /// The decoded page.
    Detail,
}

/// What is drawn over the panes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    /// Nothing.
    None,
    /// The key list.
    Help,
    /// "evict FILE from the page cache? (y/n)"
    ConfirmEvict,
    /// The advise menu: an advice and a range ([`App::advise_menu`]).
    Advise,
}

/// One cell of the page map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    /// First page of the cell.
    pub first: u64,
    /// Pages in the cell.
    pub pages: u64,
    /// The kind drawn ([`Layout::cell_kind`]): corrupt if any byte is,
    /// else a marker kind present (cur_row, header, prep), else the kind
    /// with most bytes in the cell.
    pub kind: Kind,
    /// How much is resident.
    pub residence: Residence,
    /// Resident OS pages in the cell.
    pub resident: u64,
    /// OS pages of the cell inside the current file.
    pub os_pages: u64,
}

/// Shape of the page map inside its border.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Where the grid's first cell is drawn.
    pub origin: Position,
    /// Columns for row labels (page id of the row's first cell).
    pub label_width: u16,
    /// Characters per cell (2 when the whole file fits at that width).
    pub cell_width: u16,
    /// Cells per row.
    pub cols: u64,
    /// Rows on screen.
    pub rows: u64,
}

/// A row of the structure tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeRow {
    /// A bucket (index into `Layout::groups`).
    Group(u32),
    /// A branch or leaf page run of the bucket above (index into
    /// `Layout::regions`).
    Run(usize),
}

/// The result of the last action, shown in the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// What happened.
    pub text: String,
    /// `true` for a failure.
    pub error: bool,
}

impl Message {
    fn info(text: impl Into<String>) -> Option<Message> {
        Some(Message { text: text.into(), error: false })
    }
    fn error(text: impl Into<String>) -> Option<Message> {
        Some(Message { text: text.into(), error: true })
    }
}

/// What the status line says of rrdcached, and the question in flight.
#[derive(Debug)]
struct Rrdcached {
    /// The RRD file asked about.
    path: std::path::PathBuf,
    /// When the last question went out.
    at: Instant,
    /// The reply to the question in flight.
    reply: Option<Receiver<Option<String>>>,
    /// The last reply's line.
    shown: Option<String>,
}

/// A touch, evict or advise under way, and how its result is worded.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Deed {
    Touch,
    Evict,
    Lock,
    /// The advice, and the range it covers in words.
    Advise(FileAdvice, String),
}

impl Deed {
    /// The status line while it runs.
    fn doing(&self) -> String {
        match self {
            Deed::Touch => "touching…".into(),
            Deed::Evict => "evicting…".into(),
            Deed::Lock => "locking…".into(),
            // Without the scope: "DONTNEED on page 1 …" begins the result, which
            // whoever waits for it must not mistake this for.
            Deed::Advise(a, _) => format!("advising {}…", a.name()),
        }
    }

    /// The status line once it finished.
    fn done(&self, result: Result<Effect, String>) -> Option<Message> {
        match (self, result) {
            (Deed::Touch, Ok(e)) => Message::info(touch_text(&e)),
            (Deed::Touch, Err(e)) => Message::error(format!("touch failed: {e}")),
            (Deed::Evict, Ok(e)) => Message::info(evict_text(&e)),
            (Deed::Evict, Err(e)) => Message::error(format!("evict failed: {e}")),
            // The whole file's OS pages, as counted in the sample it took.
            (Deed::Lock, Ok(e)) => Message::info(format!(
                "locked {} pages in memory (mlock); L again to unlock",
                e.pages
            )),
            (Deed::Lock, Err(e)) => Message::error(format!("lock failed: {e}")),
            (Deed::Advise(a, scope), Ok(e)) => Message::info(advise_text(*a, scope, &e)),
            (Deed::Advise(a, _), Err(e)) => {
                Message::error(format!("advise {} failed: {e}", a.name()))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Map,
    Tree,
    Other,
}

/// All state of the inspector.
#[derive(Debug)]
pub struct App {
    label: String,
    interval: Duration,
    data: Data,
    focus: Focus,
    overlay: Overlay,
    running: bool,
    /// The user quit (not went back): see [`App::quit_all`].
    quit_all: bool,
    message: Option<Message>,
    size: (u16, u16),
    totals: Vec<KindTotal>,
    /// What the totals need of the layout shown, made once per snapshot.
    kind_index: stats::KindIndex,
    /// The selected page: the map's, which the tree and detail follow.
    selected: u64,
    /// The page map pane.
    map: MapPane,
    /// The structure tree pane.
    tree: TreePane,
    /// The advise menu.
    advise: AdvisePane,
    /// The detail pane.
    detail: DetailPane,
    /// An etcd db's key prefixes, shown instead of the tree.
    prefixes: PrefixPane,
    /// An RRD file asked about in rrdcached (`RRDCACHED_ADDRESS`).
    rrdcached: Option<Rrdcached>,
    /// The touch, evict or advise running on a worker, and where its
    /// result will come.
    job: Option<(Deed, Receiver<Done>)>,
}

impl App {
    /// An app showing `data` for the file called `label`, refreshed every
    /// `interval`, on an 80x24 screen until [`App::resize`] says otherwise.
    #[must_use]
    pub fn new(label: impl Into<String>, data: Data, interval: Duration) -> App {
        let mut app = App {
            label: label.into(),
            interval,
            data,
            focus: Focus::Map,
            overlay: Overlay::None,
            running: true,
            quit_all: false,
            message: None,
            size: (80, 24),
            totals: Vec::new(),
            kind_index: stats::KindIndex::default(),
            selected: 0,
            map: MapPane::default(),
            tree: TreePane::default(),
            advise: AdvisePane::default(),
            detail: DetailPane::default(),
            prefixes: PrefixPane::default(),
            rrdcached: None,
            job: None,
        };
        app.on_new_snapshot();
        app.totals = app.kind_index.totals(app.layout(), app.data.residency.as_ref());
        app
    }

    // ----- read access (for drawing) -----

    /// The file as named in the title.
    #[must_use]
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The refresh interval.
    #[must_use]
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// What is drawn.
    #[must_use]
    pub fn data(&self) -> &Data {
        &self.data
    }

    /// The layout drawn.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.data.snapshot.layout
    }

    /// The focused pane.
    #[must_use]
    pub fn focus(&self) -> Focus {
        self.focus
    }

    /// The overlay shown.
    #[must_use]
    pub fn overlay(&self) -> Overlay {
        self.overlay
    }

    /// `false` once the user quit or went back (Esc).
    #[must_use]
    pub fn running(&self) -> bool {
        self.running
    }

    /// `true` when the user quit (`q`, Ctrl-C) rather than went back
    /// (Esc): a view opened from a list ends the list too.
    #[must_use]
    pub fn quit_all(&self) -> bool {
        self.quit_all
    }

    fn quit(&mut self) {
        self.running = false;
        self.quit_all = true;
    }

    /// The last action's result.
    #[must_use]
    pub fn message(&self) -> Option<&Message> {
        self.message.as_ref()
    }

    /// Resident bytes per kind (kinds present only).
    #[must_use]
    pub fn totals(&self) -> &[KindTotal] {
        &self.totals
    }

    /// The screen size the app lays itself out for.
    #[must_use]
    pub fn area(&self) -> Rect {
        Rect::new(0, 0, self.size.0, self.size.1)
    }

    /// The selected page.
    #[must_use]
    pub fn selected(&self) -> u64 {
        self.selected
    }

    /// Rows of the structure tree.
    #[must_use]
    pub fn tree_rows(&self) -> &[TreeRow] {
        &self.tree.rows
    }

    /// Index of the tree row under the cursor.
    #[must_use]
    pub fn tree_cursor(&self) -> usize {
        self.tree.cursor
    }

    /// Index of the first tree row on screen.
    #[must_use]
    pub fn tree_offset(&self) -> usize {
        self.tree.offset
    }

    /// `true` when the bucket's page runs are listed.
    #[must_use]
    pub fn is_expanded(&self, group: u32) -> bool {
        self.layout().group(group).is_some_and(|g| self.tree.expanded.contains(&g.path))
    }

    /// Branch/leaf page runs of an expanded bucket (indices into the
    /// regions), by depth then offset; empty for a bucket not expanded.
    #[must_use]
    pub fn runs_of(&self, group: u32) -> &[usize] {
        self.tree.runs_of(group)
    }

    /// `true` when the bucket has branch or leaf page runs to list.
    #[must_use]
    pub fn has_runs(&self, group: u32) -> bool {
        usize::try_from(group)
            .ok()
            .and_then(|g| self.tree.has_runs.get(g))
            .copied()
            .unwrap_or(false)
    }

    /// First line of the detail pane on screen.
    #[must_use]
    pub fn detail_scroll(&self) -> usize {
        self.detail.scroll
    }

    /// A decoded page, when fetched.
    #[must_use]
    pub fn detail(&self, pgid: u64) -> Option<&Result<PageDetail, String>> {
        self.detail.details.get(&pgid)
    }

    /// `true` when pages can be decoded (a bbolt file whose metas open).
    #[must_use]
    pub fn decodable(&self) -> bool {
        self.data.snapshot.format == Format::Bolt && self.data.snapshot.bolt.is_some()
    }

    /// `true` when the detail pane describes the selected page's
    /// structures generically (revlog entries, ...).
    #[must_use]
    pub fn describable(&self) -> bool {
        let s = &self.data.snapshot;
        (s.format == Format::Revlog && s.revlog.is_some())
            || (s.format == Format::Rrd && s.rrd.is_some())
    }

    /// `true` for an etcd backend db, whose records the detail pane
    /// decodes ([`mapwise_view::describe::is_etcd`]).
    #[must_use]
    pub fn is_etcd(&self) -> bool {
        self.decodable() && mapwise_view::describe::is_etcd(self.layout())
    }

    /// `true` while the etcd prefix pane replaces the structure tree.
    #[must_use]
    pub fn prefixes_open(&self) -> bool {
        self.prefixes.open
    }

    /// The etcd key prefixes (most bytes first): `None` while the first
    /// count runs, else the prefixes or why they could not be counted.
    #[must_use]
    pub fn prefix_rows(&self) -> Option<Result<&[PrefixReport], &str>> {
        self.prefixes.rows.as_ref().map(|r| r.as_deref().map_err(String::as_str))
    }

    /// `true` while prefixes are being counted.
    #[must_use]
    pub fn prefixes_counting(&self) -> bool {
        self.prefixes.count.busy()
    }

    /// How long ago the prefixes shown were counted, once they were.
    #[must_use]
    pub fn prefixes_age(&self) -> Option<Duration> {
        self.prefixes.count.age()
    }

    /// Index of the prefix row under the cursor, and of the first on screen.
    #[must_use]
    pub fn prefix_cursor(&self) -> (usize, usize) {
        (self.prefixes.cursor, self.prefixes.offset)
    }

    /// The prefix under the cursor while the prefix pane is open: its
    /// pages are marked on the map.
    #[must_use]
    pub fn marked_prefix(&self) -> Option<&PrefixReport> {
        self.prefixes.open.then(|| self.prefixes.selected()).flatten()
    }

    /// `true` when map pages `[first, first + n)` hold a page of the
    /// marked prefix ([`App::marked_prefix`]).
    #[must_use]
    pub fn is_marked(&self, first: u64, n: u64) -> bool {
        self.marked_prefix().is_some_and(|p| {
            let i = p.pages.partition_point(|&x| x < first);
            p.pages.get(i).is_some_and(|&x| x < first.saturating_add(n))
        })
    }

    /// Resident and total OS pages of the page runs holding `prefix`'s
    /// revisions, from the current sample (`None` without a trusted one).
    #[must_use]
    pub fn prefix_residency(&self, prefix: &PrefixReport) -> Option<(u64, u64)> {
        let r = self.data.residency.as_ref().filter(|r| r.trust.is_known())?;
        let unit = self.unit();
        let os = r.page_size.max(1);
        let (mut resident, mut total) = (0, 0);
        for &pgid in &prefix.pages {
            let offset = pgid.saturating_mul(unit);
            let len = self.layout().region_at(offset).map_or(unit, |g| g.run_len.max(unit));
            resident += r.resident_in(offset, len);
            total += len.div_ceil(os);
        }
        Some((resident, total))
    }

    // ----- geometry of the page map -----

    /// Bytes per map page: the format's page size, or the OS page size.
    #[must_use]
    pub fn unit(&self) -> u64 {
        stats::unit(self.layout())
    }

    /// Bytes the map covers: the most of the layout, the file as sampled
    /// now (when it grew since) and what the format's header says the
    /// file spans ([`Snapshot::expected_len`]). Whatever lies past the
    /// file's current end is drawn as past the end of the file, so a
    /// truncated file shows the pages it lost.
    #[must_use]
    pub fn map_len(&self) -> u64 {
        let sampled = self.data.residency.as_ref().map_or(0, |r| r.offset.saturating_add(r.len));
        self.layout().source_len.max(sampled).max(self.data.snapshot.expected_len)
    }

    /// Bytes the file holds now: as sampled, else as read for the layout.
    #[must_use]
    pub fn file_len(&self) -> u64 {
        self.data
            .residency
            .as_ref()
            .map_or_else(|| self.layout().source_len, |r| r.offset.saturating_add(r.len))
    }

    /// Pages the map shows.
    #[must_use]
    pub fn pages(&self) -> u64 {
        self.map_len().div_ceil(self.unit().max(1))
    }

    /// The map's grid for the current screen size.
    #[must_use]
    pub fn grid(&self) -> Grid {
        let screen = ui::screen(self, self.area());
        self.grid_in(ui::inner(screen.map))
    }

    /// The map's grid inside `inner` (the map pane without its border).
    #[must_use]
    pub fn grid_in(&self, inner: Rect) -> Grid {
        let pages = self.pages();
        let digits = u16::try_from(pages.saturating_sub(1).max(1).to_string().len()).unwrap_or(20);
        let label_width = (digits + 1).min(inner.width / 3);
        let avail = u64::from(inner.width.saturating_sub(label_width)).max(1);
        let rows = u64::from(inner.height).max(1);
        let round = |n: u64| if n >= 16 { n / 8 * 8 } else { n.max(1) };
        let wide = round(avail / 2);
        let (cell_width, cols) = if avail >= 8 && pages <= wide.saturating_mul(rows) {
            (2, wide)
        } else {
            (1, round(avail))
        };
        Grid {
            origin: Position::new(inner.x.saturating_add(label_width), inner.y),
            label_width,
            cell_width,
            cols,
            rows,
        }
    }

    /// Pages per cell when the whole file fits on screen.
    #[must_use]
    pub fn fit_pages_per_cell(&self) -> u64 {
        let g = self.grid();
        self.pages().div_ceil(g.cols.saturating_mul(g.rows).max(1)).max(1)
    }

    /// Pages per map cell now.
    #[must_use]
    pub fn pages_per_cell(&self) -> u64 {
        self.map.pages_per_cell(self.fit_pages_per_cell())
    }

    /// Cells the whole file takes at the current zoom.
    #[must_use]
    pub fn cell_count(&self) -> u64 {
        self.pages().div_ceil(self.pages_per_cell())
    }

    /// First map row on screen.
    #[must_use]
    pub fn scroll_row(&self) -> u64 {
        self.map.scroll_row
    }

    /// Cell `index` of the map (counting from the file's start), or
    /// `None` past the last page.
    #[must_use]
    pub fn cell(&self, index: u64) -> Option<Cell> {
        self.cells(index, 1).pop()
    }

    /// Up to `count` cells from cell `first` on (fewer at the end of the
    /// file), at the current zoom.
    #[must_use]
    pub fn cells(&self, first: u64, count: u64) -> Vec<Cell> {
        let ppc = self.pages_per_cell();
        let pages = self.pages();
        let unit = self.unit();
        let map_len = self.map_len();
        let mut bounds = Vec::new();
        for index in first..first.saturating_add(count) {
            let Some(first_page) = index.checked_mul(ppc).filter(|p| *p < pages) else {
                break;
            };
            let n = ppc.min(pages - first_page);
            let start = first_page.saturating_mul(unit);
            let end = start.saturating_add(n.saturating_mul(unit)).min(map_len);
            bounds.push((first_page, n, start, end));
        }
        let ranges: Vec<(u64, u64)> = bounds.iter().map(|b| (b.2, b.3)).collect();
        let kinds = {
            let mut cache = self.map.cell_kinds.borrow_mut();
            if cache.0 == ranges {
                cache.1.clone()
            } else if let [one] = ranges[..] {
                // One cell (the selected one): from the screen's, if there.
                let known = cache.0.binary_search(&one).ok();
                vec![
                    known
                        .and_then(|i| cache.1.get(i).copied())
                        .or_else(|| self.kind_index.cell_kinds(self.layout(), &[one]).pop())
                        .unwrap_or(Kind::Data),
                ]
            } else {
                cache.1 = self.kind_index.cell_kinds(self.layout(), &ranges);
                cache.0 = ranges;
                cache.1.clone()
            }
        };
        let mut out = Vec::with_capacity(bounds.len());
        for ((first_page, n, start, end), kind) in bounds.into_iter().zip(kinds) {
            let (residence, resident, os_pages) = self.residence_in(start, end);
            out.push(Cell { first: first_page, pages: n, kind, residence, resident, os_pages });
        }
        out
    }

    /// Residency of file bytes `[start, end)`: how much, resident OS
    /// pages, OS pages inside the current file.
    #[must_use]
    pub fn residence_in(&self, start: u64, end: u64) -> (Residence, u64, u64) {
        let Some(r) = &self.data.residency else {
            return (Residence::Unknown, 0, 0);
        };
        let ps = r.page_size.max(1);
        let s = start.max(r.offset);
        let e = end.min(r.offset.saturating_add(r.len));
        if s >= e {
            return (Residence::PastEof, 0, 0);
        }
        let os_pages = (e - 1 - r.offset) / ps - (s - r.offset) / ps + 1;
        if !r.trust.is_known() {
            return (Residence::Unknown, 0, os_pages);
        }
        let resident = r.resident_in(s, e - s);
        (Residence::of(resident, os_pages), resident, os_pages)
    }

    /// Where the cell holding `page` is drawn, when it is on screen.
    #[must_use]
    pub fn cell_position(&self, page: u64) -> Option<Position> {
        let g = self.grid();
        let cell = page / self.pages_per_cell();
        let row = cell / g.cols.max(1);
        let col = cell % g.cols.max(1);
        let top = self.map.scroll_row;
        if row < top || row >= top.saturating_add(g.rows) {
            return None;
        }
        let x = u16::try_from(col.saturating_mul(u64::from(g.cell_width))).ok()?;
        let y = u16::try_from(row - top).ok()?;
        Some(Position::new(g.origin.x.checked_add(x)?, g.origin.y.checked_add(y)?))
    }

    // ----- selection -----

    /// Index of the region holding the selected page.
    #[must_use]
    pub fn selected_region_index(&self) -> Option<usize> {
        self.layout().region_index_at(self.selected.saturating_mul(self.unit()))
    }

    /// The region holding the selected page.
    #[must_use]
    pub fn selected_region(&self) -> Option<Region> {
        self.selected_region_index().and_then(|i| self.layout().regions.get(i))
    }

    /// The page the detail pane decodes: the selected page, or the head
    /// of its run when it is an overflow page.
    #[must_use]
    pub fn detail_page(&self) -> u64 {
        match self.selected_region() {
            Some(r) if r.kind == Kind::Overflow => r.head,
            _ => self.selected,
        }
    }

    /// The bucket owning the selected page's run.
    #[must_use]
    pub fn selected_group(&self) -> Option<&Group> {
        let r = self.region_of_page(self.detail_page())?;
        r.group.and_then(|g| self.layout().group(g))
    }

    fn region_of_page(&self, page: u64) -> Option<Region> {
        self.layout().region_at(page.saturating_mul(self.unit()))
    }

    fn select_page(&mut self, page: u64, origin: Origin) {
        let last = self.pages().saturating_sub(1);
        self.selected = page.min(last);
        self.detail.scroll = 0;
        self.ensure_map_visible();
        if origin != Origin::Tree {
            self.reveal_in_tree();
        }
    }

    fn ensure_map_visible(&mut self) {
        let g = self.grid();
        let cols = g.cols.max(1);
        let row = self.selected / self.pages_per_cell() / cols;
        let total_rows = self.cell_count().div_ceil(cols);
        self.map.show_row(row, g.rows, total_rows);
    }

    fn move_cells(&mut self, delta: i64) {
        let ppc = self.pages_per_cell();
        let cells = self.cell_count();
        if cells == 0 {
            return;
        }
        let next = MapPane::step(self.selected / ppc, delta, cells);
        self.select_page(next.saturating_mul(ppc), Origin::Map);
    }

    // ----- structure tree -----

    fn tree_height(&self) -> usize {
        let s = ui::screen(self, self.area());
        usize::from(ui::inner(s.tree).height).max(1)
    }

    fn rebuild_rows(&mut self) {
        self.tree.rebuild(&self.data.snapshot.layout);
        self.ensure_tree_visible();
    }

    fn ensure_tree_visible(&mut self) {
        let h = self.tree_height();
        self.tree.show_cursor(h);
    }

    /// The page a tree row stands for.
    #[must_use]
    pub fn row_page(&self, row: TreeRow) -> Option<u64> {
        match row {
            TreeRow::Group(gi) if self.data.snapshot.format == Format::Rrd => {
                // An archive: the page holding its current row.
                let cur = self
                    .layout()
                    .regions
                    .iter()
                    .find(|r| r.group == Some(gi) && r.kind == Kind::CurRow)?;
                Some(cur.offset / self.unit().max(1))
            }
            TreeRow::Group(g) => {
                let g = self.layout().group(g)?;
                if g.root != 0 { Some(g.root) } else { g.host }
            }
            TreeRow::Run(i) => self.layout().regions.get(i).map(|r| r.id),
        }
    }

    fn set_tree_cursor(&mut self, cursor: usize) {
        if self.tree.rows.is_empty() {
            return;
        }
        self.tree.cursor = cursor.min(self.tree.rows.len() - 1);
        self.ensure_tree_visible();
        if let Some(page) = self.tree.rows.get(self.tree.cursor).and_then(|r| self.row_page(*r)) {
            self.select_page(page, Origin::Tree);
        }
    }

    /// Move the tree cursor to the selected page's run (or its bucket
    /// when the bucket is collapsed).
    fn reveal_in_tree(&mut self) {
        let Some(idx) = self.selected_region_index() else {
            return;
        };
        let layout = self.layout();
        let Some(mut region) = layout.regions.get(idx) else {
            return;
        };
        let mut idx = idx;
        if region.kind == Kind::Overflow
            && let Some(h) = layout.region_index_at(region.head.saturating_mul(self.unit()))
        {
            idx = h;
            region = match layout.regions.get(h) {
                Some(r) => r,
                None => return,
            };
        }
        if !matches!(region.kind, Kind::Branch | Kind::Leaf) {
            return;
        }
        let Some(g) = region.group else { return };
        let found = self
            .tree
            .rows
            .iter()
            .position(|r| *r == TreeRow::Run(idx))
            .or_else(|| self.tree.rows.iter().position(|r| *r == TreeRow::Group(g)));
        if let Some(c) = found {
            self.tree.cursor = c;
            self.ensure_tree_visible();
        }
    }

    fn group_of_row(&self, row: TreeRow) -> Option<u32> {
        match row {
            TreeRow::Group(g) => Some(g),
            TreeRow::Run(i) => self.layout().regions.get(i).and_then(|r| r.group),
        }
    }

    fn set_expanded(&mut self, group: u32, on: bool) {
        let Some(path) = self.layout().group(group).map(|g| g.path.clone()) else {
            return;
        };
        if on {
            self.tree.expanded.insert(path);
        } else {
            self.tree.expanded.remove(&path);
        }
        self.tree.runs = self.tree.expanded_runs(&self.data.snapshot.layout);
        self.rebuild_rows();
    }

    // ----- detail -----

    fn detail_height(&self) -> usize {
        let s = ui::screen(self, self.area());
        usize::from(ui::inner(s.detail).height).max(1)
    }

    /// Key and value widths for the detail pane.
    #[must_use]
    pub fn detail_widths(&self) -> Widths {
        let s = ui::screen(self, self.area());
        let w = usize::from(ui::inner(s.detail).width);
        let key = (w.saturating_sub(6) * 2 / 5).max(8);
        // Index (5) + key + " = " (3) + value + " (NNNN B)" (8).
        Widths { key, value: w.saturating_sub(key + 16).max(8) }
    }

    /// The detail pane's lines: where the selection is and what it holds,
    /// then the decoded page.
    #[must_use]
    pub fn detail_lines(&self) -> Vec<Line> {
        let mut out = self.selection_lines();
        if self.describable() {
            out.push(Line::default());
            match self.detail.items.get(&self.selected) {
                None => out.push(Line::of(Tone::Dim, "decoding…")),
                Some(Err(e)) => out.push(Line::of(Tone::Bad, format!("cannot decode: {e}"))),
                Some(Ok(items)) => out.extend(describe::item_lines(items)),
            }
            return out;
        }
        if !self.decodable() {
            return out;
        }
        out.push(Line::default());
        if self.selected_region().is_some_and(|r| r.kind == Kind::Unused) {
            // Past the high-water mark bbolt has written no page yet:
            // whatever bytes are there are not a page to decode.
            out.push(Line::of(Tone::Dim, "no page here yet: file space past the high-water mark"));
            return out;
        }
        // An etcd record page shows its records decoded instead of bytes.
        let records = match self.detail.items.get(&self.selected) {
            Some(Ok(items)) if !items.is_empty() => Some(items),
            _ => None,
        };
        match (self.detail.details.get(&self.detail_page()), records) {
            (None, _) => out.push(Line::of(Tone::Dim, "decoding…")),
            (Some(Err(e)), _) => out.push(Line::of(Tone::Bad, format!("cannot decode: {e}"))),
            (Some(Ok(d)), Some(items)) => {
                out.extend(describe::header_lines(d));
                out.extend(describe::item_lines(items));
            }
            (Some(Ok(d)), None) => out.extend(describe::page_lines(d, self.detail_widths())),
        }
        out
    }

    fn selection_lines(&self) -> Vec<Line> {
        let mut out = Vec::new();
        let page = self.selected;
        let pages = self.pages();
        if pages == 0 {
            out.push(Line::of(Tone::Dim, "empty file"));
            return out;
        }
        let ppc = self.pages_per_cell();
        let unit = self.unit();
        let cell_first = page / ppc * ppc;
        let cell_last = (cell_first + ppc).min(pages) - 1;
        let region = self.selected_region();
        let kind = region.map_or(Kind::Data, |r| r.kind);
        let phrase = if region.is_none() && page.saturating_mul(unit) >= self.file_len() {
            "past the end of the file (the header says it is longer: truncated?)"
        } else {
            let stored = !matches!(
                self.data.snapshot.bolt.as_ref().map(|b| &b.freelist),
                Some(mapwise_native::report::FreelistReport::NotStored)
            );
            kind_phrase(kind, stored)
        };
        let head = Line::of(Tone::Head, format!("page {page}"))
            .and(Tone::Dim, format!(" of {pages}"))
            .and(Tone::Text, format!(" · {phrase}"));
        out.push(head);
        if let Some(r) = region {
            out.extend(self.region_lines(&r));
        }
        let start = page.saturating_mul(unit);
        let (res, resident, os) = self.residence_in(start, start.saturating_add(unit));
        out.push(residence_line("page", res, resident, os));
        if ppc > 1 {
            let (res, resident, os) = self.residence_in(
                cell_first.saturating_mul(unit),
                (cell_last + 1).saturating_mul(unit),
            );
            out.push(residence_line(&format!("cell {cell_first}–{cell_last}"), res, resident, os));
        }
        if kind == Kind::Corrupt {
            let needle = format!("page {page}");
            for p in self
                .layout()
                .problems
                .iter()
                .map(ToString::to_string)
                .filter(|p| p.contains(&format!("{needle}:")) || p.contains(&format!("{needle} ")))
                .take(3)
            {
                out.push(Line::of(Tone::Bad, p));
            }
        }
        out
    }

    fn region_lines(&self, r: &Region) -> Vec<Line> {
        let mut out = Vec::new();
        let unit = self.unit().max(1);
        let group = r.group.and_then(|g| self.layout().group(g));
        match r.kind {
            Kind::Branch | Kind::Leaf => {
                let mut l = Line::of(Tone::Label, "bucket ")
                    .and(Tone::Key, group_name(group))
                    .and(Tone::Label, " · depth ")
                    .and(Tone::Text, r.depth.to_string());
                l = l
                    .and(Tone::Label, " · items ")
                    .and(Tone::Text, r.items.to_string())
                    .and(Tone::Label, " · fill ")
                    .and(Tone::Text, format!("{:.0}%", r.fill() * 100.0));
                out.push(l);
                let run_pages = r.run_len.div_ceil(unit);
                if run_pages > 1 {
                    out.push(
                        Line::of(Tone::Label, "run ")
                            .and(Tone::Text, format!("{}–{}", r.id, r.id + run_pages - 1))
                            .and(Tone::Dim, format!(" ({run_pages} pages)")),
                    );
                }
            }
            Kind::Overflow => {
                out.push(
                    Line::of(Tone::Label, "continuation of the run headed by ")
                        .and(Tone::Link, format!("page {}", r.head)),
                );
            }
            Kind::Freelist => {
                out.push(Line::of(Tone::Label, "ids listed ").and(Tone::Text, r.items.to_string()));
            }
            Kind::Free | Kind::Pending | Kind::Unreachable | Kind::Unused | Kind::Data => {
                let first = r.offset / unit;
                let last = r.end().div_ceil(unit).saturating_sub(1);
                if last > first {
                    out.push(
                        Line::of(Tone::Label, "stretch ")
                            .and(Tone::Text, format!("{first}–{last}"))
                            .and(Tone::Dim, format!(" ({} pages)", last - first + 1)),
                    );
                }
            }
            _ => {}
        }
        out
    }

    /// Pages whose decoding the screen needs and that are not cached: the
    /// detail page and the tree's visible page runs.
    #[must_use]
    pub fn wanted_details(&self) -> Vec<u64> {
        if !self.decodable() {
            return Vec::new();
        }
        let mut want = vec![self.detail_page()];
        let h = self.tree_height();
        for row in self.tree.rows.iter().skip(self.tree.offset).take(h) {
            if let TreeRow::Run(i) = row
                && let Some(r) = self.layout().regions.get(*i)
            {
                want.push(r.id);
            }
        }
        want.retain(|p| !self.detail.details.contains_key(p));
        want.dedup();
        want
    }

    /// Decode the pages the screen needs ([`App::wanted_details`]) and
    /// keep them until the structure changes.
    pub fn fetch_details(&mut self, target: &dyn Target) {
        if self.describable() || self.is_etcd() {
            let unit = self.unit();
            let offset = self.selected.saturating_mul(unit);
            self.detail.keep_items(self.selected, || target.describe(offset, unit));
        }
        let want = self.wanted_details();
        self.detail.keep_details(want, |p| target.page_detail(p));
    }

    // ----- updates -----

    /// The terminal now has `width` columns and `height` rows.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.size = (width, height);
        self.ensure_map_visible();
        self.ensure_tree_visible();
        self.clamp_detail_scroll();
    }

    /// One interval passed: refresh from `target`.
    pub fn tick(&mut self, target: &mut dyn Target) {
        self.poll_jobs(target);
        self.poll_prefixes(target);
        let was_playing = target.is_playing();
        let r = target.refresh();
        self.sync(target, r.new_snapshot);
        if r.replaced {
            self.message = Message::info(
                "the file was replaced (a new file renamed over it, as etcd's defrag does); \
                 reading the new one",
            );
        }
        self.ask_rrdcached(false);
        if was_playing && !target.is_playing() {
            self.message = Message::info("at the last frame; Space plays it again from the start");
        }
    }

    /// Show on the status line what rrdcached holds for the RRD file at
    /// `path` ("N updates pending in rrdcached"), asked now and then at
    /// most once a second while the file is an RRD and `RRDCACHED_ADDRESS`
    /// names a daemon. Only `PENDING` is sent: nothing is flushed. The
    /// question goes out on a thread of its own, so a slow daemon never
    /// holds up the view.
    pub fn watch_rrdcached(&mut self, path: std::path::PathBuf) {
        self.rrdcached = Some(Rrdcached { path, at: Instant::now(), reply: None, shown: None });
        self.ask_rrdcached(true);
    }

    /// The status line's rrdcached fact, when there is one.
    #[must_use]
    pub fn rrdcached(&self) -> Option<&str> {
        self.rrdcached.as_ref().and_then(|r| r.shown.as_deref())
    }

    fn ask_rrdcached(&mut self, now: bool) {
        let rrd = self.data.snapshot.format == Format::Rrd;
        let Some(r) = self.rrdcached.as_mut() else {
            return;
        };
        if let Some(rx) = &r.reply {
            match rx.try_recv() {
                Ok(line) => {
                    r.shown = line;
                    r.reply = None;
                }
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => r.reply = None,
            }
        }
        if !rrd {
            r.shown = None;
            return;
        }
        if !now && r.at.elapsed() < Duration::from_secs(1) {
            return;
        }
        r.at = Instant::now();
        let (tx, rx) = mpsc::channel();
        let path = r.path.clone();
        let spawned =
            std::thread::Builder::new().name("inspector-rrdcached".into()).spawn(move || {
                let p = mapwise_native::engine::rrd::cached::pending_in_env(
                    &path,
                    Duration::from_millis(500),
                );
                // The view may have gone meanwhile; nobody to tell.
                let _ = tx.send(mapwise_native::report::rrdcached_line(&p));
            });
        if spawned.is_ok() {
            r.reply = Some(rx);
        }
    }

    /// Copy what `target` holds now; the structure too when
    /// `new_snapshot`.
    pub fn sync(&mut self, target: &dyn Target, new_snapshot: bool) {
        if new_snapshot {
            self.data.snapshot = target.snapshot().clone();
        }
        self.data.residency = target.residency().cloned();
        self.data.problem = target.problem().map(str::to_owned);
        self.data.rereading = target.rereading();
        self.data.locked = target.is_locked();
        self.data.clock = target.clock();
        self.data.age = target.structure_age();
        self.data.live_note = target.live_note();
        if new_snapshot {
            self.on_new_snapshot();
        }
        self.totals = self.kind_index.totals(self.layout(), self.data.residency.as_ref());
        let last = self.pages().saturating_sub(1);
        if self.selected > last {
            self.select_page(last, Origin::Other);
        }
    }

    fn on_new_snapshot(&mut self) {
        self.detail.forget();
        self.prefixes.stale = true;
        self.map.forget_kinds();
        // One pass over the regions for the totals' index and the tree's
        // "has pages" marks.
        let mut has_runs = vec![false; self.layout().groups.len()];
        self.kind_index = stats::KindIndex::of_visiting(self.layout(), |r| {
            if let (Some(g), Kind::Branch | Kind::Leaf) = (r.group, r.kind)
                && let Some(has) = usize::try_from(g).ok().and_then(|g| has_runs.get_mut(g))
            {
                *has = true;
            }
        });
        self.tree.has_runs = has_runs;
        self.tree.runs = self.tree.expanded_runs(&self.data.snapshot.layout);
        self.rebuild_rows();
        let last = self.pages().saturating_sub(1);
        self.selected = self.selected.min(last);
        self.ensure_map_visible();
        if self.focus != Focus::Tree {
            self.reveal_in_tree();
        }
    }

    /// Apply one user action; actions that change the file's residency
    /// go through `target`.
    pub fn update(&mut self, action: Action, target: &mut dyn Target) {
        if let Action::Resize(w, h) = action {
            self.resize(w, h);
            return;
        }
        match self.overlay {
            Overlay::ConfirmEvict => {
                self.overlay = Overlay::None;
                match action {
                    Action::Yes => self.evict(target),
                    Action::Quit => self.quit(),
                    _ => self.message = Message::info("evict cancelled"),
                }
                return;
            }
            Overlay::Help => {
                match action {
                    Action::Quit => self.quit(),
                    Action::Back | Action::Help => self.overlay = Overlay::None,
                    _ => {}
                }
                return;
            }
            Overlay::Advise => {
                match self.advise.key(action) {
                    AdviseKey::Quit => self.quit(),
                    AdviseKey::Apply => {
                        self.overlay = Overlay::None;
                        self.advise(target);
                    }
                    AdviseKey::Cancel => {
                        self.overlay = Overlay::None;
                        self.message = Message::info("advise cancelled");
                    }
                    AdviseKey::Stay => {}
                }
                return;
            }
            Overlay::None => {}
        }
        match action {
            Action::Quit => self.quit(),
            Action::Back => self.running = false,
            Action::FocusNext => {
                self.focus = match self.focus {
                    Focus::Map => Focus::Tree,
                    Focus::Tree => Focus::Detail,
                    Focus::Detail => Focus::Map,
                };
            }
            Action::FocusPrev => {
                self.focus = match self.focus {
                    Focus::Map => Focus::Detail,
                    Focus::Tree => Focus::Map,
                    Focus::Detail => Focus::Tree,
                };
            }
            Action::Up
            | Action::Down
            | Action::Left
            | Action::Right
            | Action::PageUp
            | Action::PageDown
            | Action::Home
            | Action::End
            | Action::Enter => match self.focus {
                Focus::Map => self.map_key(action),
                Focus::Tree if self.prefixes.open => self.prefix_key(action),
                Focus::Tree => self.tree_key(action),
                Focus::Detail => self.detail_key(action),
            },
            Action::Touch => self.act(target, JobKind::Touch, (0, TO_EOF), Deed::Touch),
            Action::Evict => self.overlay = Overlay::ConfirmEvict,
            Action::Advise => self.overlay = Overlay::Advise,
            Action::Lock if !target.is_locked() => {
                self.act(target, JobKind::Lock, (0, TO_EOF), Deed::Lock);
            }
            Action::Lock => {
                self.message = match target.toggle_lock() {
                    Ok(true) => Message::info(format!(
                        "locked {} pages in memory (mlock); L again to unlock",
                        target.residency().map_or(0, |r| r.total_pages)
                    )),
                    Ok(false) => Message::info("unlocked (pages stay cached until evicted)"),
                    Err(e) => Message::error(format!("lock failed: {e}")),
                };
                self.sync(target, false);
            }
            Action::Refresh => {
                let r = target.refresh_now();
                self.sync(target, r.new_snapshot);
                if self.prefixes.open && self.prefixes.stale {
                    self.count_prefixes(target);
                }
                self.message = Message::info(if r.reread_started {
                    "refreshed; file changed, re-reading its structure"
                } else {
                    "refreshed"
                });
            }
            Action::ZoomIn => {
                self.map.zoom_in(self.pages_per_cell());
                self.after_zoom();
            }
            Action::ZoomOut => {
                let (ppc, fit) = (self.pages_per_cell(), self.fit_pages_per_cell());
                self.map.zoom_out(ppc, fit);
                self.after_zoom();
            }
            Action::Help => self.overlay = Overlay::Help,
            Action::Prefixes => self.toggle_prefixes(target),
            Action::Play(cmd) => {
                self.message = match target.playback(cmd) {
                    Ok(text) => Message::info(text),
                    Err(e) => Message::error(e),
                };
                self.sync(target, false);
            }
            Action::Yes | Action::No | Action::Sort | Action::Resize(..) => {}
        }
    }

    fn after_zoom(&mut self) {
        let ppc = self.pages_per_cell();
        self.message = Message::info(if self.map.zoom.is_none() {
            // Fitted to the file, which may grow: no count to go stale.
            "zoom: the whole file".to_string()
        } else if ppc == 1 {
            "zoom: 1 page per cell".to_string()
        } else {
            format!("zoom: {ppc} pages per cell")
        });
        // Centre the selection after a zoom.
        let g = self.grid();
        let row = self.selected / ppc / g.cols.max(1);
        self.map.centre_row(row, g.rows);
        self.ensure_map_visible();
    }

    fn evict(&mut self, target: &mut dyn Target) {
        self.act(target, JobKind::Evict, (0, TO_EOF), Deed::Evict);
    }

    /// Start `kind` on `[offset, offset + len)`: on a worker when `target`
    /// hands out a [`Job`] (the status line says it is under way until
    /// [`App::poll_jobs`] applies its result), else at once.
    fn act(
        &mut self,
        target: &mut dyn Target,
        kind: JobKind,
        (offset, len): (u64, u64),
        deed: Deed,
    ) {
        if let Some((running, _)) = &self.job {
            self.message = Message::info(format!("still {}", running.doing()));
            return;
        }
        match target.job(kind, offset, len) {
            None => {
                let result = match kind {
                    JobKind::Touch => target.touch(),
                    JobKind::Evict => target.evict(),
                    JobKind::Advise(advice) => target.advise(advice, offset, len),
                    JobKind::Lock => target.toggle_lock().map(|_| Effect {
                        offset,
                        len,
                        pages: target.residency().map_or(0, |r| r.total_pages),
                        before: None,
                        after: None,
                        released_lock: false,
                    }),
                };
                self.message = deed.done(result);
            }
            Some(Err(e)) => self.message = deed.done(Err(e)),
            Some(Ok(job)) => {
                let (tx, rx) = mpsc::channel();
                let spawned =
                    std::thread::Builder::new().name("inspector-act".into()).spawn(move || {
                        // The app may have quit meanwhile; nobody to tell.
                        let _ = tx.send(job.run());
                    });
                match spawned {
                    Ok(_) => {
                        self.message = Message::info(deed.doing());
                        self.job = Some((deed, rx));
                    }
                    Err(e) => self.message = deed.done(Err(format!("no worker thread: {e}"))),
                }
            }
        }
        // Our lock may be released already (evict, DONTNEED).
        self.sync(target, false);
    }

    /// `true` while a touch, evict or advise runs on a worker.
    #[must_use]
    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    /// Apply the result of the touch, evict or advise running on a worker,
    /// when it has come; returns `true` when it had.
    pub fn poll_jobs(&mut self, target: &mut dyn Target) -> bool {
        let result = match &self.job {
            None => return false,
            Some((_, rx)) => match rx.try_recv() {
                Ok(done) => target.finish(done),
                Err(TryRecvError::Empty) => return false,
                Err(TryRecvError::Disconnected) => Err("its worker thread died".into()),
            },
        };
        if let Some((deed, _)) = self.job.take() {
            self.message = deed.done(result);
        }
        self.sync(target, false);
        true
    }

    /// Wait for the touch, evict or advise running on a worker, then apply
    /// its result: what quitting does, so that a job the user started is
    /// never left half done. `false` when none was running.
    pub fn wait_jobs(&mut self, target: &mut dyn Target) -> bool {
        let result = match &self.job {
            None => return false,
            Some((_, rx)) => match rx.recv() {
                Ok(done) => target.finish(done),
                Err(_) => Err("its worker thread died".into()),
            },
        };
        if let Some((deed, _)) = self.job.take() {
            self.message = deed.done(result);
        }
        true
    }

    /// Before quitting: when a job runs on a worker, say on the status
    /// line that the view goes once it is done, and return `true`.
    pub fn finishing(&mut self) -> bool {
        let Some((deed, _)) = &self.job else {
            return false;
        };
        self.message = Message::info(format!("{} quitting when it is done", deed.doing()));
        true
    }

    /// The advise menu's state: the advice chosen and whether it applies to
    /// the whole file (else to the selected map cell).
    #[must_use]
    pub fn advise_menu(&self) -> (FileAdvice, bool) {
        self.advise.choice()
    }

    /// The selected map cell's pages (first, last) and file bytes
    /// `(offset, len)`, clipped to the file's current length.
    #[must_use]
    pub fn selected_cell_range(&self) -> ((u64, u64), (u64, u64)) {
        let ppc = self.pages_per_cell().max(1);
        let unit = self.unit().max(1);
        let first = self.selected / ppc * ppc;
        let last = first.saturating_add(ppc).min(self.pages()).saturating_sub(1).max(first);
        let start = first.saturating_mul(unit);
        let end = last.saturating_add(1).saturating_mul(unit).min(self.file_len());
        ((first, last), (start, end.saturating_sub(start)))
    }

    /// What the advise menu's range choice covers, in words.
    #[must_use]
    pub fn advise_scope(&self, whole: bool) -> String {
        if whole {
            return "the whole file".into();
        }
        let ((first, last), (offset, len)) = self.selected_cell_range();
        let pages =
            if first == last { format!("page {first}") } else { format!("pages {first}–{last}") };
        format!("{pages} (bytes {offset}..{})", offset.saturating_add(len))
    }

    fn advise(&mut self, target: &mut dyn Target) {
        let (advice, whole) = self.advise_menu();
        let (offset, len) = if whole { (0, TO_EOF) } else { self.selected_cell_range().1 };
        let scope = self.advise_scope(whole);
        if len == 0 {
            self.message = Message::error(format!(
                "{} not given: {scope} lies past the end of the file",
                advice.name()
            ));
            self.sync(target, false);
        } else {
            let kind = JobKind::Advise(advice);
            self.act(target, kind, (offset, len), Deed::Advise(advice, scope));
        }
    }

    fn map_key(&mut self, action: Action) {
        let g = self.grid();
        match MapPane::key(action, g.cols, g.rows) {
            Some(MapKey::Cells(delta)) => self.move_cells(delta),
            Some(MapKey::Page(page)) => self.select_page(page, Origin::Map),
            Some(MapKey::Open) => {
                let group = self.region_of_page(self.detail_page()).and_then(|r| {
                    matches!(r.kind, Kind::Branch | Kind::Leaf).then_some(r.group)?
                });
                if let Some(g) = group {
                    self.set_expanded(g, true);
                    self.reveal_in_tree();
                    self.focus = Focus::Tree;
                } else {
                    self.message = Message::info("this page belongs to no bucket tree");
                }
            }
            None => {}
        }
    }

    fn tree_key(&mut self, action: Action) {
        let h = self.tree_height();
        let cur = self.tree.cursor;
        let row = self.tree.rows.get(cur).copied();
        match action {
            Action::Up => self.set_tree_cursor(cur.saturating_sub(1)),
            Action::Down => self.set_tree_cursor(cur.saturating_add(1)),
            Action::PageUp => self.set_tree_cursor(cur.saturating_sub(h)),
            Action::PageDown => self.set_tree_cursor(cur.saturating_add(h)),
            Action::Home => self.set_tree_cursor(0),
            Action::End => self.set_tree_cursor(usize::MAX),
            Action::Enter => match row {
                Some(TreeRow::Group(g)) => {
                    let on = !self.is_expanded(g);
                    self.set_expanded(g, on);
                }
                Some(TreeRow::Run(_)) => self.focus = Focus::Map,
                None => {}
            },
            Action::Right => {
                if let Some(TreeRow::Group(g)) = row {
                    self.set_expanded(g, true);
                }
            }
            Action::Left => match row {
                Some(TreeRow::Group(g)) if self.is_expanded(g) => self.set_expanded(g, false),
                Some(r @ TreeRow::Run(_)) => {
                    if let Some(g) = self.group_of_row(r)
                        && let Some(c) = self.tree.rows.iter().position(|x| *x == TreeRow::Group(g))
                    {
                        self.set_tree_cursor(c);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn toggle_prefixes(&mut self, target: &mut dyn Target) {
        if !self.is_etcd() {
            self.message = Message::info("p lists the key prefixes of an etcd db; this is not one");
            return;
        }
        self.prefixes.open = !self.prefixes.open;
        if self.prefixes.open {
            self.focus = Focus::Tree;
            if self.prefixes.rows.is_none() || self.prefixes.stale {
                self.count_prefixes(target);
            }
        }
    }

    fn count_prefixes(&mut self, target: &mut dyn Target) {
        if self.prefixes.count.busy() {
            return;
        }
        self.prefixes.stale = false;
        match target.etcd_prefixes(PREFIX_DEPTH) {
            Some(rx) => self.prefixes.count.wait_for(rx),
            None => self.prefixes.rows = Some(Err("this view cannot count prefixes".into())),
        }
    }

    /// Take finished prefix counts, and start another once the structure
    /// changed while the pane is open; `true` when one arrived.
    pub fn poll_prefixes(&mut self, target: &mut dyn Target) -> bool {
        let arrived = self.prefixes.poll();
        if arrived {
            let h = self.tree_height().saturating_sub(1);
            self.prefixes.show_cursor(h);
        }
        if self.prefixes.open && self.prefixes.stale && self.prefixes.count.due() {
            self.count_prefixes(target);
        }
        arrived
    }

    /// Movement in the prefix pane; Enter selects the marked prefix's
    /// next page on the map after the selected one (from its first page
    /// again past the last).
    fn prefix_key(&mut self, action: Action) {
        if action == Action::Enter {
            let next = self.prefixes.selected().and_then(|p| {
                let i = p.pages.partition_point(|&x| x <= self.selected);
                p.pages.get(i).or(p.pages.first()).copied()
            });
            if let Some(page) = next {
                self.select_page(page, Origin::Other);
            }
            return;
        }
        let h = self.tree_height().saturating_sub(1);
        self.prefixes.key(action, h);
    }

    fn clamp_detail_scroll(&mut self) {
        let (lines, height) = (self.detail_lines().len(), self.detail_height());
        self.detail.clamp(lines, height);
    }

    fn detail_key(&mut self, action: Action) {
        let h = self.detail_height();
        if self.detail.scroll_key(action, h) {
            self.clamp_detail_scroll();
            return;
        }
        match action {
            Action::Left | Action::Right => {
                let Some(i) = self.selected_region_index() else {
                    return;
                };
                let regions = &self.layout().regions;
                let mut j = i;
                let next = loop {
                    j = if action == Action::Right {
                        j + 1
                    } else if j == 0 {
                        break None;
                    } else {
                        j - 1
                    };
                    match regions.get(j) {
                        Some(r) if r.kind == Kind::Overflow => {}
                        Some(r) => break Some(r.offset / self.unit().max(1)),
                        None => break None,
                    }
                };
                if let Some(p) = next {
                    self.select_page(p, Origin::Other);
                }
            }
            _ => {}
        }
        self.clamp_detail_scroll();
    }
}

/// Why evicted pages can stay resident.
pub const STAY: &str = "mapped or locked by a process, dirty, or on tmpfs";

/// Why pages of a range can stay resident after `DONTNEED` on that range:
/// [`STAY`], and large folios: the kernel drops only folios that lie wholly
/// inside the range, so a page whose folio reaches past it stays
/// (docs/residency.md, "Large folios").
const STAY_RANGE: &str = "mapped or locked by a process, dirty, on tmpfs, or part of a multi-page folio reaching past the range";

/// What an evict did, from samples before and after.
#[must_use]
pub fn evict_text(e: &Effect) -> String {
    let lock = if e.released_lock { "released our lock; " } else { "" };
    match (e.before, e.after) {
        (Some(0), Some(0)) => format!("{lock}nothing to evict: no page of the file was resident"),
        (Some(b), Some(0)) => format!("{lock}evicted {b} of {b} resident pages; none left"),
        (Some(b), Some(a)) => format!(
            "{lock}evicted {} of {b} resident pages; {a} still resident ({STAY})",
            b.saturating_sub(a)
        ),
        _ => format!(
            "{lock}asked the kernel to evict the file (posix_fadvise DONTNEED); what it \
             dropped is unknown: this user may not see the file's cache state"
        ),
    }
}

/// What a touch did, from samples before and after.
#[must_use]
pub fn touch_text(e: &Effect) -> String {
    match (e.before, e.after) {
        (Some(b), Some(a)) if a >= e.pages => {
            format!("touched the file: {a} of {} pages resident (was {b})", e.pages)
        }
        (Some(b), Some(a)) => format!(
            "touched the file, but only {a} of {} pages are resident now (was {b}): \
             the kernel dropped the others again (memory pressure?)",
            e.pages
        ),
        _ => "touched the file (read it into the cache); residency unknown: this user may \
              not see the file's cache state"
            .into(),
    }
}

/// What an advice did to `scope`, from samples before and after.
#[must_use]
pub fn advise_text(advice: FileAdvice, scope: &str, e: &Effect) -> String {
    let lock = if e.released_lock { "released our lock; " } else { "" };
    let mut s = match (e.before, e.after) {
        (Some(b), Some(a)) => format!(
            "{lock}{} on {scope}: resident {b} → {a} of {} OS pages",
            advice.name(),
            e.pages
        ),
        _ => format!(
            "{lock}{} on {scope}: accepted; residency unknown (this user may not see the \
             file's cache state)",
            advice.name()
        ),
    };
    match (advice, e.after) {
        (FileAdvice::DontNeed, Some(a)) if a > 0 => {
            let why = if e.len == TO_EOF { STAY } else { STAY_RANGE };
            s.push_str(&format!("; {a} still resident ({why})"));
        }
        (FileAdvice::WillNeed, Some(a)) if a < e.pages => s.push_str(&format!(
            "; {} not resident (read-ahead is asynchronous and gives way to memory \
             pressure)",
            e.pages - a
        )),
        (a, _) if a.per_open_file() => s.push_str(
            "; Linux keeps this advice per open file and ignores the range: it changes \
             read-ahead for the inspector's own reads only, not other processes'",
        ),
        _ => {}
    }
    s
}

/// A bucket's name as listed: the root bucket as `(root)`.
#[must_use]
pub fn group_name(group: Option<&Group>) -> String {
    match group {
        Some(g) if g.parent.is_none() => "(root)".into(),
        Some(g) => g.path.clone(),
        None => "-".into(),
    }
}

/// What a kind of page is, in a few words; `stored_freelist` is `false`
/// for a bbolt file that stores no freelist (etcd's `NoFreelistSync`),
/// whose free pages are those no tree reaches.
#[must_use]
pub fn kind_phrase(kind: Kind, stored_freelist: bool) -> &'static str {
    match kind {
        Kind::Free if !stored_freelist => {
            "free (no tree reaches it; no freelist is stored: NoFreelistSync)"
        }
        Kind::Pending if !stored_freelist => {
            "pending (the previous snapshot's tree reaches it, the current one does not)"
        }
        Kind::Meta => "meta page",
        Kind::Freelist => "freelist page",
        Kind::Branch => "branch page",
        Kind::Leaf => "leaf page",
        Kind::Overflow => "overflow page",
        Kind::Free => "free (in the freelist)",
        Kind::Pending => "pending (freed, still visible to the previous txn)",
        Kind::Unreachable => "unreachable (neither in a tree nor free: leaked)",
        Kind::Unused => "unused (past the high-water mark)",
        Kind::Unknown => "unknown (not reached: damage cut off part of the tree)",
        Kind::Entry => "revlog index entry",
        Kind::Chunk => "revlog data chunk (inline)",
        Kind::Header => "RRD definitions (stat_head, ds_def, rra_def)",
        Kind::Prep => "RRD update state (live_head, pdp/cdp prep, rra_ptr)",
        Kind::Rows => "RRD archive rows",
        Kind::CurRow => "RRD current row (the next update writes after it)",
        Kind::Corrupt => "CORRUPT",
        _ => "data (structure not known)",
    }
}

fn residence_line(what: &str, res: Residence, resident: u64, os: u64) -> Line {
    let l = Line::of(Tone::Label, format!("{what} in cache: "));
    match res {
        Residence::Unknown => l.and(Tone::Bad, "unknown"),
        Residence::PastEof => l.and(Tone::Bad, "past the end of the file"),
        _ => l
            .and(
                Tone::Text,
                match res {
                    Residence::All => "yes",
                    Residence::None => "no",
                    _ => "partly",
                },
            )
            .and(Tone::Dim, format!(" ({resident}/{os} OS pages)")),
    }
}
