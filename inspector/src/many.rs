//! `inspector residency PATH... [-R] [--top N]`: residency of many files
//! and of directory trees, one line per file, then totals.
//!
//! Each regular file is measured by [`cli::measure`], the code behind the
//! one-file report, so its numbers and per-kind split are that report's.
//! Nothing reads file data to count residency (`mincore(2)` on a mapping
//! never touched), and nothing is written.
//!
//! The walk streams: one file's page bitmap lives only while its line is
//! made, a directory's names while it is listed, so memory follows the
//! largest directory (and the count of files with several names), not
//! the tree. With `--top N` only the N lines kept are held.
//!
//! What cannot be measured is listed with the reason and never counted:
//! files that cannot be opened or sampled, files whose residency the kernel
//! hides ([`Trust::Unknown`](mapwise_native::os::residency::Trust)),
//! directories that cannot be read; sockets, FIFOs and devices (no page
//! cache of their own) and symbolic links found in a tree (not followed).
//! A file with several names (hard links) is counted once, under the
//! first name met, as `vmtouch` and `du` count it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::fs::{self, Metadata};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::{self, ResidencyReport};
use crate::stats::{g3, percent, vmtouch_size};

/// The paths of a command over many files, and how trees are walked:
/// shared by `inspector residency`, `warm` and `evict`.
#[derive(Debug, Clone, clap::Args)]
pub struct TreeArgs {
    /// Files and directories. A directory lists the files in it; with
    /// `-R`, the whole tree under it.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Recurse into directories, never following symbolic links (a link
    /// given on the command line is followed) and staying on the file
    /// system of each PATH, as `du -x`, `find -xdev` and `vmtouch -F` do:
    /// a tree scan should count the tree's own cache, not that of a tmpfs,
    /// a network share or /proc mounted inside it.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Enter mount points under a PATH (other file systems), as `du` and
    /// `vmtouch` do by default.
    #[arg(long)]
    pub cross_mounts: bool,
}

/// The command line of `inspector residency`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The paths; one file alone (no `--top`) gives the one-file report.
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Keep only the N files with the most resident bytes, largest first
    /// (the totals still count every file).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    /// The file, when this is the one-file report: a single path that is
    /// a regular file (or cannot be looked at), without `--top`.
    #[must_use]
    pub fn one_file(&self) -> Option<&Path> {
        match self.tree.paths.as_slice() {
            // A path that cannot be looked at keeps the one-file error;
            // a FIFO or socket is listed, never opened.
            [p] if self.top.is_none() && fs::metadata(p).map_or(true, |m| m.is_file()) => Some(p),
            _ => None,
        }
    }
}

/// What became of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Measured: the numbers are the kernel's.
    Measured,
    /// Could not be measured: not openable, not sampled, the kernel hides
    /// its residency, a directory that cannot be read. Makes the exit
    /// status 1.
    Skipped,
    /// Not a regular file (socket, FIFO, device): it has no page cache of
    /// its own.
    NotRegular,
    /// A symbolic link found in a tree: not followed.
    Symlink,
    /// A directory not entered: another file system, or no `-R`.
    NotEntered,
    /// Another name of a file already counted (a hard link): counted
    /// once, as `vmtouch` and `du` do.
    HardLink,
    /// A directory or file listed already: a path given twice, or inside
    /// (or a link to) a directory given before it. Counted once, as `du`
    /// does.
    Repeated,
}

/// One line of the listing; in JSON, one element of `files`.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// What became of it.
    pub status: Status,
    /// What the path is: `file`, `directory`, `symlink`, `fifo`,
    /// `socket`, `char_device`, `block_device`, `unknown`.
    pub file_type: &'static str,
    /// Why it was not measured, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The path, when there is no report (the report names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The one-file report's fields, when the file could be sampled (a file
    /// whose residency is hidden has one, with its counts `null`).
    #[serde(flatten)]
    pub report: Option<ResidencyReport>,
}

impl Entry {
    /// Resident bytes, when measured.
    #[must_use]
    pub fn resident_bytes(&self) -> Option<u64> {
        self.report.as_ref().and_then(|r| r.resident_bytes)
    }

    fn path(&self) -> &str {
        self.report.as_ref().map_or_else(|| self.file.as_deref().unwrap_or(""), |r| &r.file)
    }
}

/// The totals over every measured file (not only the `--top` ones).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Totals {
    /// Files measured.
    pub files: u64,
    /// Their bytes.
    pub size: u64,
    /// Their OS pages.
    pub total_pages: u64,
    /// Their resident OS pages.
    pub resident_pages: u64,
    /// `resident_pages * page_size`.
    pub resident_bytes: u64,
    /// `100 * resident_pages / total_pages`.
    pub percent: f64,
    /// Paths skipped ([`Status::Skipped`]).
    pub skipped: u64,
    /// Sockets, FIFOs and devices.
    pub not_regular: u64,
    /// Symbolic links not followed.
    pub symlinks: u64,
    /// Directories not entered.
    pub not_entered: u64,
    /// Names of files already counted (hard links).
    pub hard_links: u64,
    /// Paths listed already ([`Status::Repeated`]).
    pub repeated: u64,
    /// Directories listed.
    pub directories: u64,
    /// RRD files measured with a hot set ([`crate::cli::HotSetReport`]).
    pub rrd_files: u64,
    /// Their hot sets' OS pages.
    pub hot_pages: u64,
    /// Of them, resident.
    pub hot_resident_pages: u64,
    /// Their resident bytes outside the hot sets.
    pub cold_resident_bytes: u64,
}

/// Where the lines go: written at once, or kept for `--top`.
struct Sink<'w> {
    out: &'w mut dyn Write,
    json: bool,
    /// With `--top N`: N and the best lines so far (a min-heap).
    top: Option<(usize, BinaryHeap<Reverse<Ranked>>)>,
    totals: Totals,
    page_size: u64,
    written: u64,
}

/// An entry ordered by resident bytes, then path (for a stable order).
struct Ranked(Entry);

impl Ranked {
    fn key(&self) -> (u64, Reverse<&str>) {
        (self.0.resident_bytes().unwrap_or(0), Reverse(self.0.path()))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ranked {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
}

impl Sink<'_> {
    fn add(&mut self, e: Entry) -> std::io::Result<()> {
        let t = &mut self.totals;
        match e.status {
            Status::Measured => {
                if let Some(r) = &e.report {
                    t.files += 1;
                    t.size += r.size;
                    t.total_pages += r.total_pages;
                    t.resident_pages += r.resident_pages.unwrap_or(0);
                    self.page_size = r.page_size;
                    if let Some(h) = &r.hot_set {
                        t.rrd_files += 1;
                        t.hot_pages += h.hot_pages;
                        t.hot_resident_pages += h.hot_resident_pages.unwrap_or(0);
                        t.cold_resident_bytes += h.cold_resident_bytes.unwrap_or(0);
                    }
                }
            }
            Status::Skipped => t.skipped += 1,
            Status::NotRegular => t.not_regular += 1,
            Status::Symlink => t.symlinks += 1,
            Status::NotEntered => t.not_entered += 1,
            Status::HardLink => t.hard_links += 1,
            Status::Repeated => t.repeated += 1,
        }
        match &mut self.top {
            Some((n, heap)) => {
                if e.status == Status::Measured {
                    heap.push(Reverse(Ranked(e)));
                    if heap.len() > *n {
                        heap.pop();
                    }
                } else if e.status == Status::Skipped {
                    // Not ranked: said at once, so that nothing is held
                    // (the totals count the rest).
                    eprintln!("inspector: {}: {}", e.path(), describe(&e));
                }
                Ok(())
            }
            None => self.write(&e),
        }
    }

    fn write(&mut self, e: &Entry) -> std::io::Result<()> {
        if self.json {
            let sep = if self.written == 0 { "\n" } else { ",\n" };
            write!(self.out, "{sep}{}", serde_json::to_string(e).map_err(std::io::Error::other)?)?;
        } else {
            self.out.write_all(line(e).as_bytes())?;
        }
        self.written += 1;
        Ok(())
    }
}

/// Run `inspector residency` over many paths, writing to `out`; the exit
/// status: 0 when every file found was measured, 1 when anything was
/// skipped (the totals are then a lower bound), as `du` and `fincore` do.
/// Sockets, FIFOs, devices, symbolic links and directories on other file
/// systems are listed but do not change it (`du` and `vmtouch` pass over
/// them without an error).
///
/// # Errors
/// When writing to `out` fails.
pub fn run(args: &Args, out: &mut dyn Write) -> std::io::Result<u8> {
    let mut sink = Sink {
        out,
        json: args.json,
        top: args.top.map(|n| (n, BinaryHeap::new())),
        totals: Totals::default(),
        page_size: mapwise_native::os::residency::os_page_size(),
        written: 0,
    };
    if args.json {
        sink.out.write_all(b"{\n\"files\": [")?;
    } else {
        sink.out.write_all(HEADER.as_bytes())?;
    }
    sink.totals.directories = measure_tree(&args.tree, &mut |e| sink.add(e))?;
    if let Some((_, heap)) = sink.top.take() {
        for Reverse(Ranked(e)) in heap.into_sorted_vec() {
            sink.write(&e)?;
        }
    }
    let mut t = std::mem::take(&mut sink.totals);
    t.resident_bytes = t.resident_pages.saturating_mul(sink.page_size);
    t.percent = percent(t.resident_pages, t.total_pages);
    if args.json {
        let totals = serde_json::to_string(&t).map_err(std::io::Error::other)?;
        writeln!(sink.out, "\n],\n\"totals\": {totals}\n}}")?;
    } else {
        sink.out.write_all(totals_line(&t, sink.page_size).as_bytes())?;
    }
    sink.out.flush()?;
    Ok(u8::from(t.skipped > 0))
}

/// The text listing's header.
const HEADER: &str = "  RESIDENT PAGES   RESIDENT       SIZE        %  FORMAT   FILE\n";

/// One line of the text listing (two when the format has kinds).
fn line(e: &Entry) -> String {
    let Some(r) = e.report.as_ref().filter(|r| r.resident_pages.is_some()) else {
        let size = e.report.as_ref().map_or_else(|| "-".into(), |r| vmtouch_size(r.size));
        let format = e.report.as_ref().map_or("-", |r| r.format);
        return format!(
            "{:>16} {:>10} {:>10} {:>8}  {:<8} {}  ({})\n",
            "-",
            "-",
            size,
            "-",
            format,
            e.path(),
            describe(e)
        );
    };
    let resident = r.resident_pages.unwrap_or(0);
    let mut s = format!(
        "{:>16} {:>10} {:>10} {:>8}  {:<8} {}\n",
        format!("{resident}/{}", r.total_pages),
        vmtouch_size(r.resident_bytes.unwrap_or(0)),
        vmtouch_size(r.size),
        format!("{}%", g3(percent(resident, r.total_pages))),
        r.format,
        r.file
    );
    if !r.kinds.is_empty() {
        let kinds: Vec<String> = r
            .kinds
            .iter()
            .map(|k| {
                let rb = k.resident_bytes.map_or_else(|| "?".into(), vmtouch_size);
                format!("{} {rb}/{}", k.kind, vmtouch_size(k.bytes))
            })
            .collect();
        s.push_str(&format!("{:>48}  resident by kind: {}\n", "", kinds.join(", ")));
    }
    if let Some(h) = &r.hot_set {
        s.push_str(&format!("{:>48}  {}\n", "", h.line()));
    }
    match (r.rrdcached_pending, &r.rrdcached_error) {
        (Some(n), _) => s.push_str(&format!("{:>48}  rrdcached: {n} updates pending\n", "")),
        (None, Some(e)) => s.push_str(&format!("{:>48}  rrdcached: {e}\n", "")),
        (None, None) => {}
    }
    s
}

/// What an entry that has no numbers is, in words.
fn describe(e: &Entry) -> String {
    let what = match e.status {
        Status::Measured => "measured",
        Status::Skipped => "skipped",
        Status::NotRegular => return format!("not a regular file: {}", e.file_type),
        Status::Symlink => "symbolic link, not followed",
        Status::NotEntered => "directory not entered",
        Status::HardLink => "hard link to a file counted under another name",
        Status::Repeated => "listed already (given twice, or under a directory listed)",
    };
    match &e.reason {
        Some(r) => format!("{what}: {r}"),
        None => what.into(),
    }
}

fn totals_line(t: &Totals, page_size: u64) -> String {
    let mut s = format!(
        "Total: {}/{} pages resident, {}/{}, {}% in {} file{}",
        t.resident_pages,
        t.total_pages,
        vmtouch_size(t.resident_pages.saturating_mul(page_size)),
        vmtouch_size(t.total_pages.saturating_mul(page_size)),
        g3(t.percent),
        t.files,
        if t.files == 1 { "" } else { "s" }
    );
    if t.rrd_files > 0 {
        s.push_str(&format!(
            "; RRD hot sets {}/{} pages resident ({}%), cold resident {} in {} RRD file{}",
            t.hot_resident_pages,
            t.hot_pages,
            g3(percent(t.hot_resident_pages, t.hot_pages)),
            vmtouch_size(t.cold_resident_bytes),
            t.rrd_files,
            if t.rrd_files == 1 { "" } else { "s" }
        ));
    }
    for (n, one, many) in [
        (t.skipped, "skipped", "skipped"),
        (t.not_regular, "not a regular file", "not regular files"),
        (t.symlinks, "symbolic link not followed", "symbolic links not followed"),
        (t.not_entered, "directory not entered", "directories not entered"),
        (t.hard_links, "hard link counted once", "hard links counted once"),
        (t.repeated, "path listed already", "paths listed already"),
    ] {
        if n > 0 {
            s.push_str(&format!("; {n} {}", if n == 1 { one } else { many }));
        }
    }
    s.push('\n');
    s
}

fn skipped(p: &Path, file_type: &'static str, reason: String) -> Entry {
    Entry {
        status: Status::Skipped,
        file_type,
        reason: Some(reason),
        file: Some(p.display().to_string()),
        report: None,
    }
}

fn repeated(p: &Path, m: &Metadata) -> Entry {
    Entry {
        status: Status::Repeated,
        file_type: type_name(m),
        reason: None,
        file: Some(p.display().to_string()),
        report: None,
    }
}

fn type_name(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_file() {
        "file"
    } else if t.is_dir() {
        "directory"
    } else if t.is_symlink() {
        "symlink"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "char_device"
    } else if t.is_block_device() {
        "block_device"
    } else {
        "unknown"
    }
}

/// What a walk found: a regular file to measure or act on, or a path
/// listed with what became of it.
pub enum Found<'a> {
    /// A regular file, met for the first time.
    File(&'a Path),
    /// Anything else: not openable, not regular, a link, a directory not
    /// entered, another name of a file already met.
    Other(Box<Entry>),
}

/// A walk over [`TreeArgs`]: it streams what it finds, holding a
/// directory's names while it is listed and the identity of files with
/// several names (hard links), which are found once, under the first name
/// met, as `vmtouch` and `du` count them.
pub struct Walker<'a> {
    args: &'a TreeArgs,
    /// Device and inode of every file met with more than one name: the
    /// only files held for the whole walk.
    linked: HashSet<(u64, u64)>,
    /// Device and inode of every directory entered, and of every file
    /// given: a path met again is not counted twice.
    entered: HashSet<(u64, u64)>,
    /// Directories listed.
    pub directories: u64,
}

impl<'a> Walker<'a> {
    /// A walk over `args`.
    #[must_use]
    pub fn new(args: &'a TreeArgs) -> Walker<'a> {
        Walker { args, linked: HashSet::new(), entered: HashSet::new(), directories: 0 }
    }

    /// Walk every path given, in order, telling `found` of each.
    ///
    /// # Errors
    /// The first error `found` returns.
    pub fn run(
        &mut self,
        found: &mut dyn FnMut(Found) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        for p in &self.args.paths {
            // A path given is followed when it is a link, as `du -D` and
            // `find -H` do: the user named it.
            match fs::metadata(p) {
                Err(e) => found(Found::Other(Box::new(skipped(
                    p,
                    "unknown",
                    format!("cannot access: {e}"),
                ))))?,
                Ok(m) if !self.entered.insert((m.dev(), m.ino())) => {
                    found(Found::Other(Box::new(repeated(p, &m))))?;
                }
                Ok(m) if m.is_dir() => {
                    self.directories += 1;
                    self.walk(p, m.dev(), found)?;
                }
                Ok(m) => self.visit(p, &m, None, found)?,
            }
        }
        Ok(())
    }

    /// List the directory `dir` (on device `dev`): its files, and with
    /// `-R` its subdirectories on the same file system, depth first, names
    /// sorted.
    fn walk(
        &mut self,
        dir: &Path,
        dev: u64,
        found: &mut dyn FnMut(Found) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut names = Vec::new();
        let unreadable = |e: std::io::Error| {
            Found::Other(Box::new(skipped(dir, "directory", format!("cannot read directory: {e}"))))
        };
        match fs::read_dir(dir) {
            Err(e) => return found(unreadable(e)),
            Ok(rd) => {
                for entry in rd {
                    match entry {
                        Ok(d) => names.push(d.file_name()),
                        Err(e) => {
                            found(unreadable(e))?;
                            break;
                        }
                    }
                }
            }
        }
        names.sort_unstable();
        for name in names {
            let p = dir.join(name);
            match fs::symlink_metadata(&p) {
                // Gone since it was listed, or not reachable.
                Err(e) => found(Found::Other(Box::new(skipped(
                    &p,
                    "unknown",
                    format!("cannot access: {e}"),
                ))))?,
                Ok(m) => self.visit(&p, &m, Some(dev), found)?,
            }
        }
        Ok(())
    }

    /// One path found (`dev`: the device of the tree it was found in;
    /// `None` for a path given on the command line).
    fn visit(
        &mut self,
        p: &Path,
        m: &Metadata,
        dev: Option<u64>,
        found: &mut dyn FnMut(Found) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let other = |e: Status, reason: Option<String>| {
            Found::Other(Box::new(Entry {
                status: e,
                file_type: type_name(m),
                reason,
                file: Some(p.display().to_string()),
                report: None,
            }))
        };
        let ft = m.file_type();
        let foreign = dev.is_some_and(|d| d != m.dev()) && !self.args.cross_mounts;
        if ft.is_symlink() {
            return found(other(Status::Symlink, None));
        }
        if ft.is_dir() {
            if !self.args.recursive {
                return found(other(Status::NotEntered, Some("-R enters it".into())));
            }
            if foreign {
                let why = "another file system (--cross-mounts enters it)".into();
                return found(other(Status::NotEntered, Some(why)));
            }
            if !self.entered.insert((m.dev(), m.ino())) {
                return found(Found::Other(Box::new(repeated(p, m))));
            }
            self.directories += 1;
            return self.walk(p, m.dev(), found);
        }
        if !ft.is_file() {
            return found(other(Status::NotRegular, None));
        }
        if foreign {
            // A file bind-mounted into the tree.
            let why = "another file system (--cross-mounts counts it)".into();
            return found(other(Status::NotEntered, Some(why)));
        }
        if m.nlink() > 1 && !self.linked.insert((m.dev(), m.ino())) {
            return found(other(Status::HardLink, None));
        }
        found(Found::File(p))
    }
}

/// Files measured together: what is held at once, as the listing streams.
const BATCH: usize = 512;

/// Threads measuring files. A file's structure is read with `O_DIRECT`,
/// which waits on the device, so more threads than cores keep it busy.
const THREADS: usize = 8;

/// Walk `tree` and measure its regular files ([`cli::measure`]) on a few
/// threads, handing every entry to `out` in walk order; returns the
/// directories listed.
///
/// # Errors
/// The first error `out` returns.
pub fn measure_tree(
    tree: &TreeArgs,
    out: &mut dyn FnMut(Entry) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    map_tree(tree, &measured, &|e| e, out)
}

/// Walk `tree`, doing `work` on each regular file on 8 threads
/// (512 files at a time) and `other` on every other entry, and hand
/// the results to `out` in walk order; returns the directories listed.
///
/// # Errors
/// The first error `out` returns.
pub fn map_tree<T: Send>(
    tree: &TreeArgs,
    work: &(dyn Fn(&Path) -> T + Sync),
    other: &dyn Fn(Entry) -> T,
    out: &mut dyn FnMut(T) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(THREADS).build().ok();
    let mut batch: Vec<Result<T, PathBuf>> = Vec::with_capacity(BATCH);
    let mut flush = |batch: &mut Vec<Result<T, PathBuf>>| -> std::io::Result<()> {
        let run = |b: &mut Vec<Result<T, PathBuf>>| {
            use rayon::prelude::*;
            b.par_iter_mut().for_each(|e| {
                if let Err(p) = e {
                    *e = Ok(work(p));
                }
            });
        };
        match &pool {
            Some(pool) => pool.install(|| run(batch)),
            None => run(batch),
        }
        for e in batch.drain(..) {
            out(e.unwrap_or_else(|p| work(&p)))?;
        }
        Ok(())
    };
    let mut walker = Walker::new(tree);
    walker.run(&mut |found| {
        batch.push(match found {
            Found::File(p) => Err(p.to_path_buf()),
            Found::Other(e) => Ok(other(*e)),
        });
        if batch.len() >= BATCH {
            flush(&mut batch)?;
        }
        Ok(())
    })?;
    flush(&mut batch)?;
    Ok(walker.directories)
}

/// A regular file measured ([`cli::measure`]), as a listing entry.
fn measured(p: &Path) -> Entry {
    match cli::measure(p) {
        Err(e) => skipped(p, "file", format!("{e:#}")),
        Ok(measured) => {
            let r = measured.report;
            // The bitmap goes here: only the report is kept.
            drop(measured.residency);
            let hidden = r.resident_pages.is_none();
            Entry {
                status: if hidden { Status::Skipped } else { Status::Measured },
                file_type: "file",
                reason: hidden.then(|| {
                    format!(
                        "the kernel hides its residency: {}",
                        r.trust_reason.as_deref().unwrap_or("trust unknown")
                    )
                }),
                file: None,
                report: Some(r),
            }
        }
    }
}
