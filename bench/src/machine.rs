//! What machine a bench ran on: the report header and `results.json`.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::report::Table;
use super::units::{human_size, utc_human};

/// The facts that decide how page-cache numbers come out.
#[derive(Debug, Serialize)]
pub struct Machine {
    /// `model name` of the first CPU in /proc/cpuinfo.
    pub cpu_model: Option<String>,
    /// Logical CPUs online.
    pub cpus_online: Option<usize>,
    /// CPUs this process may run on (affinity, cgroup quota).
    pub cpus_available: Option<usize>,
    /// MemTotal, bytes.
    pub memory_bytes: Option<u64>,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// Mount holding the bench file.
    pub mount: Option<Mount>,
    /// Block device (`major:minor` and its sysfs name) under the file.
    pub block_device: Option<String>,
    /// Read-ahead of that device's backing-dev info, KiB.
    pub read_ahead_kb: Option<u64>,
    /// /sys/kernel/mm/transparent_hugepage/enabled, the selected value.
    pub thp_enabled: Option<String>,
    /// /sys/kernel/mm/transparent_hugepage/defrag, the selected value.
    pub thp_defrag: Option<String>,
    /// Proactive reclaim that evicts page-cache pages on its own: each
    /// running DAMON scheme; `None` without the DAMON sysfs interface.
    pub proactive_reclaim: Option<String>,
    /// Free page reporting to a VM host through a virtio balloon; `None` without a balloon.
    pub free_page_reporting: Option<String>,
    /// /proc/loadavg when the description was taken.
    pub loadavg: Option<String>,
    /// `go version`.
    pub go_version: Option<String>,
    /// `rustc -V` (the toolchain that built ours).
    pub rustc_version: Option<String>,
}

/// The mount holding a file, as `findmnt --target` (util-linux) finds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    /// `major:minor` of the mounted device.
    #[serde(rename(deserialize = "maj:min"))]
    pub dev: String,
    /// Where it is mounted.
    #[serde(rename(deserialize = "target"))]
    pub mount_point: String,
    /// File system type (`ext4`, `xfs`, `tmpfs`, …).
    pub fstype: String,
    /// Mount source (`/dev/vda`).
    pub source: String,
    /// Per-mount options.
    #[serde(rename(deserialize = "vfs-options"))]
    pub options: String,
}

/// A sysfs or procfs file, trimmed.
fn read(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_owned())
}

/// A sysfs file holding a number.
fn num(p: &Path) -> Option<u64> {
    read(p)?.parse().ok()
}

impl Machine {
    /// Describes this machine, and the storage under `file` (which must
    /// exist). Every field is best effort: `None` when it cannot be read.
    pub fn describe(file: &Path) -> Self {
        let meta = fs::metadata(file).ok();
        let dev = meta.map(|m| format!("{}:{}", libc::major(m.dev()), libc::minor(m.dev())));
        let mount = mount_of(file);
        let block_device = dev.as_ref().map(|d| {
            let link = fs::read_link(format!("/sys/dev/block/{d}")).ok();
            match link.as_ref().and_then(|l| l.file_name()) {
                Some(n) => format!("{d} ({})", n.to_string_lossy()),
                None => d.clone(),
            }
        });
        let read_ahead_kb = dev.as_ref().and_then(|d| {
            num(Path::new(&format!("/sys/class/bdi/{d}/read_ahead_kb")))
                .or_else(|| num(Path::new(&format!("/sys/dev/block/{d}/queue/read_ahead_kb"))))
        });
        let cpuinfo = read("/proc/cpuinfo");
        let thp = |f: &str| read(format!("/sys/kernel/mm/transparent_hugepage/{f}"));
        Self {
            cpu_model: cpuinfo.as_deref().and_then(|s| field(s, "model name", ':')),
            cpus_online: cpuinfo.map(|s| s.lines().filter(|l| l.starts_with("processor")).count()),
            cpus_available: std::thread::available_parallelism().ok().map(usize::from),
            memory_bytes: read("/proc/meminfo").and_then(|s| mem_total(&s)),
            kernel: read("/proc/sys/kernel/osrelease"),
            mount,
            block_device,
            read_ahead_kb,
            thp_enabled: thp("enabled").and_then(|s| bracketed(&s)),
            thp_defrag: thp("defrag").and_then(|s| bracketed(&s)),
            proactive_reclaim: damon_summary(Path::new("/sys/kernel/mm/damon/admin")),
            free_page_reporting: free_page_reporting(VIRTIO_DEVICES, PAGE_REPORTING_ORDER),
            loadavg: loadavg(),
            go_version: first_line_of("go", &["version"]),
            rustc_version: first_line_of("rustc", &["-V"]),
        }
    }
}

/// What the running DAMON kdamonds under `admin` do, one clause per scheme:
/// a `pageout` scheme evicts page-cache pages a warm run expects cached.
fn damon_summary(admin: &Path) -> Option<String> {
    let kdamonds = admin.join("kdamonds");
    let mut clauses = Vec::new();
    for k in 0..num(&kdamonds.join("nr_kdamonds"))? {
        let kd = kdamonds.join(k.to_string());
        if read(kd.join("state")).as_deref() != Some("on") {
            continue;
        }
        for c in 0..num(&kd.join("contexts/nr_contexts")).unwrap_or(1) {
            let ctx = kd.join(format!("contexts/{c}"));
            let ops = read(ctx.join("operations")).unwrap_or_else(|| "?".into());
            let aggr_us = num(&ctx.join("monitoring_attrs/intervals/aggr_us"));
            for sc in 0..num(&ctx.join("schemes/nr_schemes")).unwrap_or(0) {
                let scheme = damon_scheme(&ctx.join(format!("schemes/{sc}")), aggr_us);
                clauses.push(format!("kdamond {k} ({ops}): {scheme}"));
            }
        }
    }
    Some(if clauses.is_empty() { "none running".to_owned() } else { clauses.join("; ") })
}

/// The DAMON scheme in `dir` of a context aggregating every `aggr_us`: its action, the
/// regions it acts on, its filters and its quota.
fn damon_scheme(dir: &Path, aggr_us: Option<u64>) -> String {
    let get = |f: &str| read(dir.join(f));
    let n = |f: &str| num(&dir.join(f));
    #[expect(clippy::cast_precision_loss)]
    let secs = |us: u64| us as f64 / 1e6;
    let mut s = get("action").unwrap_or_else(|| "?".into());
    if let (Some(age), Some(aggr)) = (n("access_pattern/age/min"), aggr_us) {
        s += &format!(" of regions idle ≥ {} s", secs(age.saturating_mul(aggr)));
        if let Some(acc) = n("access_pattern/nr_accesses/max") {
            s += &format!(" (≤ {acc} access per {} s)", secs(aggr));
        }
    }
    let mut filters = Vec::new();
    for kind in ["core_filters", "ops_filters", "filters"] {
        for f in 0..n(&format!("{kind}/nr_filters")).unwrap_or(0) {
            let one = |x: &str| get(&format!("{kind}/{f}/{x}"));
            let not = if one("matching").as_deref() == Some("N") { "non-" } else { "" };
            let ty = one("type").unwrap_or_else(|| "?".into());
            let allowed = if one("allow").as_deref() == Some("Y") { "allowed" } else { "rejected" };
            filters.push(format!("{not}{ty} {allowed}"));
        }
    }
    if !filters.is_empty() {
        s += &format!(", filters {}", filters.join(", "));
    }
    let bytes = n("quotas/bytes").filter(|&b| b > 0);
    if let (Some(b), Some(ms)) = (bytes, n("quotas/reset_interval_ms")) {
        s += &format!(", quota {} per {ms} ms", human_size(b));
    }
    s
}

const VIRTIO_DEVICES: &str = "/sys/bus/virtio/devices";
const PAGE_REPORTING_ORDER: &str = "/sys/module/page_reporting/parameters/page_reporting_order";

/// Whether this machine gives freed memory back to a VM host.
pub fn reports_free_pages() -> bool {
    free_page_reporting(VIRTIO_DEVICES, PAGE_REPORTING_ORDER).is_some_and(|s| s.starts_with("on"))
}

/// Whether a virtio balloon (device 5) offers free page reporting (feature
/// bit 5): a reused reported block may cost host faults the guest cannot see.
fn free_page_reporting(devices: impl AsRef<Path>, order: impl AsRef<Path>) -> Option<String> {
    let balloon = fs::read_dir(devices)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|d| read(d.join("device")).as_deref() == Some("0x0005"))?;
    let features = read(balloon.join("features")).unwrap_or_default();
    if features.as_bytes().get(5) != Some(&b'1') {
        return Some("off".to_owned());
    }
    Some(match read(order).and_then(|o| o.parse::<u32>().ok()) {
        Some(o) if o < 40 => format!("on, free blocks of {} (order {o})", human_size(4096u64 << o)),
        _ => "on".to_owned(),
    })
}

/// What every results.json starts with: the bench, when it ran, and on what machine.
#[derive(Debug, Serialize)]
pub struct Stamp {
    /// The bench's name.
    pub bench: &'static str,
    /// Its start, UTC.
    pub started_utc: String,
    /// Its end, UTC.
    pub finished_utc: String,
    /// The machine, described before the runs.
    pub machine: Machine,
    /// The load average at the end.
    pub loadavg_end: Option<String>,
}

impl Stamp {
    /// `bench`, started at `started` on `machine`, finished now.
    #[must_use]
    pub fn new(bench: &'static str, started: std::time::SystemTime, machine: Machine) -> Self {
        let (started_utc, finished_utc) =
            (utc_human(started), utc_human(std::time::SystemTime::now()));
        Self { bench, started_utc, finished_utc, machine, loadavg_end: loadavg() }
    }

    /// The report titled `bench <name> — <start>`.
    #[must_use]
    pub fn report(&self) -> crate::report::Report {
        crate::report::Report::new(format!("bench {} — {}", self.bench, self.started_utc))
    }

    /// The report's `## Machine` section, the same in every bench: CPU, cores, memory, kernel,
    /// the file system of `files` (e.g. "the repositories") with its device and read_ahead_kb,
    /// THP, reclaim, each `(tool, version)` of `tools`, our rustc, and the load.
    pub fn add_to(
        &self,
        report: &mut crate::report::Report,
        files: &str,
        tools: &[(&str, Option<String>)],
    ) {
        let m = &self.machine;
        let mount = m.mount.as_ref().map(|mt| {
            format!("{} on {} mounted at {} ({})", mt.fstype, mt.source, mt.mount_point, mt.options)
        });
        let mut t = Table::new(&["", "this machine"]);
        let mut row = |k: &str, v: String| t.row([k.to_owned(), v]);
        row("CPU", na(m.cpu_model.as_ref()));
        let (on, avail) = (na(m.cpus_online), na(m.cpus_available));
        row("Cores", format!("{on} logical CPUs online, {avail} available to this process"));
        row("Memory", na(m.memory_bytes.map(human_size)));
        row("Kernel", na(m.kernel.as_ref()));
        row(&format!("File system of {files}"), na(mount));
        let (dev, ra) = (na(m.block_device.as_ref()), na(m.read_ahead_kb));
        row("Block device, read_ahead_kb", format!("{dev}, read_ahead_kb = {ra}"));
        let (on, defrag) = (na(m.thp_enabled.as_ref()), na(m.thp_defrag.as_ref()));
        row("THP (transparent_hugepage)", format!("enabled = {on}, defrag = {defrag}"));
        row("Proactive reclaim (DAMON)", na(m.proactive_reclaim.as_ref()));
        row("Free page reporting (VM)", na(m.free_page_reporting.as_ref()));
        for (tool, version) in tools {
            row(tool, na(version.as_ref()));
        }
        row("Rust (ours)", na(m.rustc_version.as_ref()));
        let (start, end) = (na(m.loadavg.as_ref()), na(self.loadavg_end.as_ref()));
        row("Load average", format!("{start} at start, {end} at end"));
        report.section("Machine").table(t);
    }
}

/// `v`, or `unknown`.
fn na(v: Option<impl std::fmt::Display>) -> String {
    v.map_or_else(|| "unknown".to_owned(), |v| v.to_string())
}

/// Current load average (1, 5, 15 min), for before/after notes.
fn loadavg() -> Option<String> {
    read("/proc/loadavg").map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// First line of a command's stdout, if it ran and succeeded.
pub fn first_line_of(program: &str, args: &[&str]) -> Option<String> {
    let out = super::proc::Cmd::new(program).args(args.iter().copied()).output(Path::new("."));
    let out = out.ok().filter(|o| o.success)?;
    out.stdout.lines().next().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty())
}

/// The value of the first `key` line of a `key<sep>value` listing.
fn field(text: &str, key: &str, sep: char) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(sep)?;
        (k.trim() == key).then(|| v.trim().to_owned())
    })
}

/// MemTotal of /proc/meminfo in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let v = field(meminfo, "MemTotal", ':')?;
    let mut words = v.split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// The `[selected]` word of a sysfs choice list: `always [madvise] never`.
fn bracketed(choices: &str) -> Option<String> {
    let (_, rest) = choices.split_once('[')?;
    Some(rest.split_once(']')?.0.to_owned())
}

/// The mount holding `file`.
fn mount_of(file: &Path) -> Option<Mount> {
    #[derive(Deserialize)]
    struct Found {
        filesystems: Vec<Mount>,
    }
    let cols = "MAJ:MIN,TARGET,FSTYPE,SOURCE,VFS-OPTIONS";
    let cmd = super::proc::Cmd::new("findmnt").args(["--json", "-o", cols, "--target"]);
    let out = cmd.arg(file.to_string_lossy()).output(Path::new(".")).ok().filter(|o| o.success)?;
    serde_json::from_str::<Found>(&out.stdout).ok()?.filesystems.into_iter().next()
}

/// The bbolt version the oracle README names: its first `bbolt X.Y.Z`.
pub fn bbolt_version_from_readme(readme: &str) -> Option<String> {
    readme.match_indices("bbolt ").find_map(|(i, m)| {
        let rest = &readme[i + m.len()..];
        let v: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let v = v.trim_end_matches('.');
        (v.split('.').count() >= 2 && v.split('.').all(|p| !p.is_empty())).then(|| v.to_owned())
    })
}

/// `6.3.2` from `Mercurial Distributed SCM (version 6.3.2)`.
pub fn hg_version_number(line: &str) -> Option<&str> {
    Some(line.split("version ").nth(1)?.trim_end_matches(')').trim())
}

/// `(major, minor)` from `hg --version`'s first line.
pub fn parse_hg_version(line: &str) -> Option<(u32, u32)> {
    let mut parts = hg_version_number(line)?.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_and_sysfs_texts_parse() {
        assert_eq!(parse_hg_version("Mercurial Distributed SCM (version 6.9rc0)"), Some((6, 9)));
        let cpu =
            "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\nprocessor\t: 1\nmodel name\t: x\n";
        assert_eq!(field(cpu, "model name", ':').as_deref(), Some("Intel(R) Xeon(R)"));
        assert_eq!(
            mem_total("MemTotal:       24684084 kB\nMemFree: 1 kB\n"),
            Some(24_684_084 * 1024)
        );
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(bracketed("always defer [madvise] never\n").as_deref(), Some("madvise"));
        assert_eq!(bracketed("always madvise never"), None);
        let readme = "Go bbolt (`golang-…-dev`, bbolt 1.3.6 on Debian 12)\n## Tested (bbolt 1.4.0)";
        assert_eq!(bbolt_version_from_readme(readme).as_deref(), Some("1.3.6"));
        assert_eq!(bbolt_version_from_readme("bbolt oracle. bbolt 1.4.0."), Some("1.4.0".into()));
        assert_eq!(bbolt_version_from_readme("no version"), None);
    }

    /// Writes each (path under `root`, value) as a sysfs file.
    fn sysfs(root: &Path, files: &[(&str, &str)]) {
        for (p, v) in files {
            fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
            fs::write(root.join(p), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn damon_schemes_are_described() {
        let dir = tempfile::tempdir().unwrap();
        let admin = dir.path();
        assert_eq!(damon_summary(admin), None, "no interface");
        sysfs(admin, &[("kdamonds/nr_kdamonds", "1"), ("kdamonds/0/state", "off")]);
        assert_eq!(damon_summary(admin).as_deref(), Some("none running"));
        let (c, sc) = ("kdamonds/0/contexts/0", "kdamonds/0/contexts/0/schemes/0");
        let files = [
            ("kdamonds/0/state".to_owned(), "on"),
            ("kdamonds/0/contexts/nr_contexts".to_owned(), "1"),
            (format!("{c}/operations"), "paddr"),
            (format!("{c}/monitoring_attrs/intervals/aggr_us"), "5000000"),
            (format!("{c}/schemes/nr_schemes"), "1"),
            (format!("{sc}/action"), "pageout"),
            (format!("{sc}/access_pattern/age/min"), "12"),
            (format!("{sc}/access_pattern/nr_accesses/max"), "1"),
            (format!("{sc}/ops_filters/nr_filters"), "2"),
            (format!("{sc}/ops_filters/0/type"), "anon"),
            (format!("{sc}/ops_filters/0/matching"), "N"),
            (format!("{sc}/ops_filters/1/type"), "unmapped"),
            (format!("{sc}/ops_filters/1/allow"), "Y"),
            (format!("{sc}/quotas/bytes"), "134217728"),
            (format!("{sc}/quotas/reset_interval_ms"), "1000"),
        ];
        sysfs(admin, &files.iter().map(|(p, v)| (p.as_str(), *v)).collect::<Vec<_>>());
        assert_eq!(
            damon_summary(admin).as_deref(),
            Some(
                "kdamond 0 (paddr): pageout of regions idle ≥ 60 s (≤ 1 access per 5 s), \
                 filters non-anon rejected, unmapped allowed, quota 128.0 MiB per 1000 ms"
            )
        );
    }

    #[test]
    fn free_page_reporting_is_read_from_the_balloon() {
        let dir = tempfile::tempdir().unwrap();
        let (devices, order) = (dir.path().join("devices"), dir.path().join("order"));
        let fpr = || free_page_reporting(&devices, &order);
        assert_eq!(fpr(), None, "no bus");
        sysfs(&devices, &[("virtio0/device", "0x0002")]);
        assert_eq!(fpr(), None, "no balloon");
        sysfs(&devices, &[("virtio1/device", "0x0005"), ("virtio1/features", "0110000100000000")]);
        assert_eq!(fpr().as_deref(), Some("off"));
        sysfs(&devices, &[("virtio1/features", "0110010100000000")]);
        assert_eq!(fpr().as_deref(), Some("on"));
        sysfs(dir.path(), &[("order", "9")]);
        assert_eq!(fpr().as_deref(), Some("on, free blocks of 2.0 MiB (order 9)"));
    }

    #[test]
    fn the_mount_of_a_file_is_found() {
        let m = mount_of(Path::new(env!("CARGO_MANIFEST_DIR"))).expect("findmnt");
        assert!(!m.fstype.is_empty() && m.dev.contains(':') && m.mount_point.starts_with('/'));
    }
}
