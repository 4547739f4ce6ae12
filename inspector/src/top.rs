//! `inspector top [-n N] [--pid PID] [--cgroup PATH] [--json]`: the files
//! processes hold open or mapped, by page cache, most first: what `hcache`
//! and `pcstat -pid` show, from `/proc`.
//!
//! Files are found in `/proc/PID/fd` (regular files open) and
//! `/proc/PID/maps` (file mappings), each counted once by device and inode
//! however many processes hold it, and sampled by `mincore(2)` through
//! the process's own link (`/proc/PID/fd/N`, `/proc/PID/map_files/…`), so a
//! file deleted while held is still measured. With `--cgroup`, only the
//! processes of that cgroup and those below it (the `/proc/PID/cgroup`
//! line of cgroup v2, or of v1's memory controller), and the cgroup's
//! page cache is shown beside ours (`memory.stat`: v2's `file`, v1's
//! `total_cache`), which also counts files no process holds any more.
//! This process is left out. Processes that cannot be read (another
//! user's, gone) are counted, never guessed at.

use std::collections::{BTreeSet, HashMap};
use std::fs::{self, File};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use mapwise_native::os::residency;
use serde::Serialize;

use crate::cli::Output;
use crate::stats::{resident_cells, vmtouch_size};

/// The command line of `inspector top`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files listed.
    #[arg(short = 'n', default_value_t = 10)]
    pub n: usize,
    /// Only these processes (repeatable).
    #[arg(long)]
    pub pid: Vec<u32>,
    /// Only the processes of this cgroup (v2), e.g. `/system.slice/etcd.service`.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One file held by processes.
#[derive(Debug, Clone, Serialize)]
pub struct Held {
    /// Its path as `/proc` names it (` (deleted)` when unlinked).
    pub file: String,
    /// Size in bytes.
    pub size: u64,
    /// Resident bytes (`null` when the kernel does not say).
    pub resident_bytes: Option<u64>,
    /// The processes holding it: `PID comm`.
    pub held_by: Vec<String>,
    /// Held open (fd), mapped, or both.
    pub how: &'static str,
}

/// `inspector top --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Top {
    /// The most resident files, most first.
    pub files: Vec<Held>,
    /// Distinct files held.
    pub files_held: u64,
    /// Their resident bytes, all of them.
    pub resident_bytes: u64,
    /// Processes looked at.
    pub processes: u64,
    /// Processes whose files could not be read (another user's, gone).
    pub unreadable_processes: u64,
    /// With `--cgroup`: its page cache, `memory.stat`'s `file` (v1:
    /// `total_cache`), over its subtree.
    pub cgroup_file_bytes: Option<u64>,
}

/// A file found, and how to open it.
struct Found {
    name: String,
    /// A `/proc` link that opens it even when deleted.
    link: PathBuf,
    pids: BTreeSet<(u32, String)>,
    fd: bool,
    mapped: bool,
}

/// A cgroup as `/proc/PID/cgroup` names it: `--cgroup` takes that form or
/// the directory under `/sys/fs/cgroup` (v2) or `/sys/fs/cgroup/memory`
/// (v1).
fn cgroup_path(given: &str) -> String {
    let p = given
        .strip_prefix("/sys/fs/cgroup/memory")
        .or_else(|| given.strip_prefix("/sys/fs/cgroup"))
        .unwrap_or(given)
        .trim_end_matches('/');
    if p.starts_with('/') { p.to_owned() } else { format!("/{p}") }
}

/// The processes to look at (never this one: it holds only its own
/// binary and libraries).
fn pids(args: &Args) -> Result<Vec<u32>> {
    if !args.pid.is_empty() {
        for p in &args.pid {
            if !Path::new(&format!("/proc/{p}")).exists() {
                bail!("no process {p}");
            }
        }
        return Ok(args.pid.clone());
    }
    let me = std::process::id();
    let mut all: Vec<u32> = fs::read_dir("/proc")
        .context("cannot list /proc")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&p| p != me)
        .collect();
    if let Some(cg) = &args.cgroup {
        let want = cgroup_path(cg);
        let within = |path: &str| {
            path == want
                || path.strip_prefix(want.as_str()).is_some_and(|r| r.starts_with('/'))
                || want == "/"
        };
        all.retain(|p| {
            fs::read_to_string(format!("/proc/{p}/cgroup")).is_ok_and(|s| {
                s.lines().any(|l| {
                    // `ID:CONTROLLERS:PATH`: v2's line has no controllers,
                    // v1's memory hierarchy names `memory`.
                    let mut f = l.splitn(3, ':');
                    let (_, ctl, path) = (f.next(), f.next().unwrap_or("x"), f.next());
                    (ctl.is_empty() || ctl.split(',').any(|c| c == "memory"))
                        && path.is_some_and(within)
                })
            })
        });
    }
    Ok(all)
}

/// `inspector top`.
///
/// # Errors
/// When `/proc` cannot be listed, a `--pid` does not exist, or the cgroup
/// is not found.
pub fn top(args: &Args) -> Result<Output> {
    let cgroup_file_bytes = match &args.cgroup {
        Some(cg) => {
            // v2's `file` (counted over the subtree), else v1's memory
            // controller's `total_cache` (its subtree; `cache` is its own).
            let path = cgroup_path(cg);
            let rel = path.trim_start_matches('/');
            let v2 = Path::new("/sys/fs/cgroup").join(rel).join("memory.stat");
            let v1 = Path::new("/sys/fs/cgroup/memory").join(rel).join("memory.stat");
            let (text, key) = match fs::read_to_string(&v2) {
                Ok(t) => (t, "file "),
                Err(_) => (
                    fs::read_to_string(&v1).with_context(|| {
                        format!("no cgroup {cg}: neither {} nor {}", v2.display(), v1.display())
                    })?,
                    "total_cache ",
                ),
            };
            text.lines().find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
        }
        None => None,
    };
    let pids = pids(args)?;
    let mut found: HashMap<(u64, u64), Found> = HashMap::new();
    let mut unreadable = 0u64;
    for &pid in &pids {
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let who = (pid, comm.trim().to_owned());
        let mut ok = false;
        if let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) {
            ok = true;
            for e in fds.flatten() {
                let link = e.path();
                let Ok(m) = fs::metadata(&link) else { continue };
                if !m.is_file() {
                    continue;
                }
                let name =
                    fs::read_link(&link).map(|p| p.display().to_string()).unwrap_or_default();
                let f = found.entry((m.dev(), m.ino())).or_insert_with(|| Found {
                    name,
                    link: link.clone(),
                    pids: BTreeSet::new(),
                    fd: false,
                    mapped: false,
                });
                f.pids.insert(who.clone());
                f.fd = true;
            }
        }
        if let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) {
            ok = true;
            for line in maps.lines() {
                // start-end perms offset dev inode path
                let mut cols = line.splitn(6, ' ');
                let (Some(range), _, _, _, Some(inode), Some(path)) =
                    (cols.next(), cols.next(), cols.next(), cols.next(), cols.next(), cols.next())
                else {
                    continue;
                };
                let path = path.trim_start();
                if inode == "0" || !path.starts_with('/') {
                    continue;
                }
                let link = PathBuf::from(format!("/proc/{pid}/map_files/{range}"));
                let Ok(m) = fs::metadata(&link).or_else(|_| fs::metadata(path)) else { continue };
                if !m.is_file() {
                    continue;
                }
                let f = found.entry((m.dev(), m.ino())).or_insert_with(|| Found {
                    name: path.to_owned(),
                    link,
                    pids: BTreeSet::new(),
                    fd: false,
                    mapped: false,
                });
                f.pids.insert(who.clone());
                f.mapped = true;
            }
        }
        unreadable += u64::from(!ok);
    }
    let mut held: Vec<Held> = found
        .into_values()
        .map(|f| {
            let opened = File::open(&f.link).or_else(|_| File::open(&f.name));
            let res = opened.ok().and_then(|file| residency::sample(&file).ok());
            Held {
                file: f.name,
                size: res.as_ref().map_or(0, |r| r.offset + r.len),
                resident_bytes: res
                    .as_ref()
                    .and_then(|r| r.known_resident_pages().map(|n| n * r.page_size)),
                held_by: f.pids.into_iter().map(|(p, c)| format!("{p} {c}")).collect(),
                how: match (f.fd, f.mapped) {
                    (true, true) => "open+mapped",
                    (true, false) => "open",
                    _ => "mapped",
                },
            }
        })
        .collect();
    held.sort_by(|a, b| {
        b.resident_bytes.unwrap_or(0).cmp(&a.resident_bytes.unwrap_or(0)).then(a.file.cmp(&b.file))
    });
    let total: u64 = held.iter().filter_map(|h| h.resident_bytes).sum();
    let files_held = held.len() as u64;
    held.truncate(args.n);
    let top = Top {
        files: held,
        files_held,
        resident_bytes: total,
        processes: pids.len() as u64,
        unreadable_processes: unreadable,
        cgroup_file_bytes,
    };
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&top)?;
        s.push('\n');
        s
    } else {
        text(&top)
    };
    Ok(Output { text, code: 0, layout_json: None })
}

fn text(t: &Top) -> String {
    let mut s =
        String::from("  RESIDENT       SIZE        %  HOW          HELD BY              FILE\n");
    for h in &t.files {
        let (res, pct) = resident_cells(h.resident_bytes, h.size);
        let mut by = h.held_by.first().cloned().unwrap_or_default();
        if h.held_by.len() > 1 {
            by.push_str(&format!(" +{}", h.held_by.len() - 1));
        }
        s.push_str(&format!(
            "{res:>10} {:>10} {pct:>8}  {:<12} {by:<20} {}\n",
            vmtouch_size(h.size),
            h.how,
            h.file
        ));
    }
    let n = |k: u64, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    s.push_str(&format!(
        "Total: {} resident in {} held by {}",
        vmtouch_size(t.resident_bytes),
        n(t.files_held, "file", "files"),
        n(t.processes, "process", "processes")
    ));
    if t.unreadable_processes > 0 {
        s.push_str(&format!(" ({} not readable: another user's, or gone)", t.unreadable_processes));
    }
    if let Some(c) = t.cgroup_file_bytes {
        s.push_str(&format!("; the cgroup's page cache (memory.stat): {}", vmtouch_size(c)));
    }
    s.push('\n');
    s
}
