//! What machine a bench ran on: the report header and `results.json`.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::Serialize;

use super::report::Table;
use super::units::human_size;

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
    /// running DAMON kdamond's schemes (`damon_summary`); `None` when the
    /// DAMON sysfs interface is absent.
    pub proactive_reclaim: Option<String>,
    /// Free page reporting to a VM host (`free_page_reporting`): the
    /// virtio-balloon feature and block size; `None` without a balloon.
    pub free_page_reporting: Option<String>,
    /// /proc/loadavg when the description was taken.
    pub loadavg: Option<String>,
    /// `go version`.
    pub go_version: Option<String>,
    /// `rustc -V` (the toolchain that built ours).
    pub rustc_version: Option<String>,
}

/// One line of /proc/self/mountinfo, the parts that matter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mount {
    /// `major:minor` of the mounted device.
    pub dev: String,
    /// Where it is mounted.
    pub mount_point: String,
    /// File system type (`ext4`, `xfs`, `tmpfs`, …).
    pub fstype: String,
    /// Mount source (`/dev/vda`).
    pub source: String,
    /// Per-mount options.
    pub options: String,
}

impl Machine {
    /// Describes this machine, and the storage under `file` (which must
    /// exist). Every field is best effort: `None` when it cannot be read.
    pub fn describe(file: &Path) -> Self {
        let read = |p: &str| fs::read_to_string(p).ok();
        let meta = fs::metadata(file).ok();
        let dev = meta.map(|m| format!("{}:{}", libc::major(m.dev()), libc::minor(m.dev())));
        let canonical = fs::canonicalize(file).ok();
        let mount = match (&dev, &canonical, read("/proc/self/mountinfo")) {
            (Some(d), Some(c), Some(info)) => find_mount(&info, d, &c.to_string_lossy()),
            _ => None,
        };
        let block_device = dev.as_ref().map(|d| {
            let name = fs::read_link(format!("/sys/dev/block/{d}"))
                .ok()
                .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()));
            name.map_or_else(|| d.clone(), |n| format!("{d} ({n})"))
        });
        let read_ahead_kb = dev.as_ref().and_then(|d| {
            [
                format!("/sys/class/bdi/{d}/read_ahead_kb"),
                format!("/sys/dev/block/{d}/queue/read_ahead_kb"),
            ]
            .iter()
            .find_map(|p| read(p).and_then(|s| s.trim().parse().ok()))
        });
        Self {
            cpu_model: read("/proc/cpuinfo").and_then(|s| cpu_model(&s)),
            cpus_online: read("/proc/cpuinfo")
                .map(|s| s.lines().filter(|l| l.starts_with("processor")).count()),
            cpus_available: std::thread::available_parallelism().ok().map(usize::from),
            memory_bytes: read("/proc/meminfo").and_then(|s| mem_total(&s)),
            kernel: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_owned()),
            mount,
            block_device,
            read_ahead_kb,
            thp_enabled: read("/sys/kernel/mm/transparent_hugepage/enabled")
                .and_then(|s| bracketed(&s)),
            thp_defrag: read("/sys/kernel/mm/transparent_hugepage/defrag")
                .and_then(|s| bracketed(&s)),
            proactive_reclaim: damon_summary(Path::new("/sys/kernel/mm/damon/admin")),
            free_page_reporting: free_page_reporting(
                Path::new(VIRTIO_DEVICES),
                Path::new(PAGE_REPORTING_ORDER),
            ),
            loadavg: loadavg(),
            go_version: first_line_of("go", &["version"]),
            rustc_version: first_line_of("rustc", &["-V"]),
        }
    }
}

impl Machine {
    /// The report's `## Machine` section, the same in every bench: CPU,
    /// cores, memory, kernel, the file system of `files` (e.g. "the
    /// file", "the repositories") with its block device and
    /// read_ahead_kb, THP, then each `(tool, version)` of `tools`, our
    /// rustc, and the load average at start and `loadavg_end`.
    pub fn add_to(
        &self,
        report: &mut crate::report::Report,
        files: &str,
        tools: &[(&str, Option<String>)],
        loadavg_end: Option<&str>,
    ) {
        report.section("Machine").table(self.table(files, tools, loadavg_end));
    }

    /// The table of [`Machine::add_to`].
    #[must_use]
    pub fn table(
        &self,
        files: &str,
        tools: &[(&str, Option<String>)],
        loadavg_end: Option<&str>,
    ) -> Table {
        let m = self;
        let na = || "unknown".to_owned();
        let mut t = Table::new(&["", "this machine"]);
        t.row(["CPU".to_owned(), m.cpu_model.clone().unwrap_or_else(na)]);
        t.row([
            "Cores".to_owned(),
            format!(
                "{} logical CPUs online, {} available to this process",
                m.cpus_online.map_or_else(na, |n| n.to_string()),
                m.cpus_available.map_or_else(na, |n| n.to_string())
            ),
        ]);
        t.row(["Memory".to_owned(), m.memory_bytes.map_or_else(na, human_size)]);
        t.row(["Kernel".to_owned(), m.kernel.clone().unwrap_or_else(na)]);
        t.row([
            format!("File system of {files}"),
            m.mount.as_ref().map_or_else(na, |mt| {
                format!(
                    "{} on {} mounted at {} ({})",
                    mt.fstype, mt.source, mt.mount_point, mt.options
                )
            }),
        ]);
        t.row([
            "Block device, read_ahead_kb".to_owned(),
            format!(
                "{}, read_ahead_kb = {}",
                m.block_device.clone().unwrap_or_else(na),
                m.read_ahead_kb.map_or_else(na, |k| k.to_string())
            ),
        ]);
        t.row([
            "THP (transparent_hugepage)".to_owned(),
            format!(
                "enabled = {}, defrag = {}",
                m.thp_enabled.clone().unwrap_or_else(na),
                m.thp_defrag.clone().unwrap_or_else(na)
            ),
        ]);
        t.row([
            "Proactive reclaim (DAMON)".to_owned(),
            m.proactive_reclaim.clone().unwrap_or_else(na),
        ]);
        t.row([
            "Free page reporting (VM)".to_owned(),
            m.free_page_reporting.clone().unwrap_or_else(na),
        ]);
        for (tool, version) in tools {
            t.row([(*tool).to_owned(), version.clone().unwrap_or_else(na)]);
        }
        t.row(["Rust (ours)".to_owned(), m.rustc_version.clone().unwrap_or_else(na)]);
        t.row([
            "Load average".to_owned(),
            format!(
                "{} at start, {} at end",
                m.loadavg.clone().unwrap_or_else(na),
                loadavg_end.map_or_else(na, ToOwned::to_owned)
            ),
        ]);
        t
    }
}

/// What the running DAMON kdamonds under `admin`
/// (`/sys/kernel/mm/damon/admin`) do to memory, one clause per scheme:
/// `kdamond 0 (paddr): pageout of regions idle ≥ 60 s (≤ 1 access per
/// 5 s), filters anon rejected, unmapped allowed, quota 128 MiB per
/// 1000 ms`. A `pageout` scheme on physical memory evicts page-cache pages
/// the benchmark expects to stay cached (a VM host's balloon-friendly
/// reclaim, for one), so a warm run can be partly cold. `Some("none
/// running")` when no kdamond is on; `None` without the interface.
pub fn damon_summary(admin: &Path) -> Option<String> {
    let read = |p: &Path| fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    let num = |p: &Path| read(p).and_then(|s| s.parse::<u64>().ok());
    let kdamonds = admin.join("kdamonds");
    let n = num(&kdamonds.join("nr_kdamonds"))?;
    let mut clauses = Vec::new();
    for k in 0..n {
        let kd = kdamonds.join(k.to_string());
        if read(&kd.join("state")).as_deref() != Some("on") {
            continue;
        }
        let contexts = num(&kd.join("contexts/nr_contexts")).unwrap_or(1);
        for c in 0..contexts {
            let ctx = kd.join(format!("contexts/{c}"));
            let ops = read(&ctx.join("operations")).unwrap_or_else(|| "?".into());
            let aggr_us = num(&ctx.join("monitoring_attrs/intervals/aggr_us"));
            let schemes = num(&ctx.join("schemes/nr_schemes")).unwrap_or(0);
            for sc in 0..schemes {
                let sd = ctx.join(format!("schemes/{sc}"));
                let action = read(&sd.join("action")).unwrap_or_else(|| "?".into());
                let mut clause = format!("kdamond {k} ({ops}): {action}");
                let age = num(&sd.join("access_pattern/age/min"));
                let acc = num(&sd.join("access_pattern/nr_accesses/max"));
                if let (Some(age), Some(aggr)) = (age, aggr_us) {
                    #[expect(clippy::cast_precision_loss)]
                    let secs = |us: u64| us as f64 / 1e6;
                    clause.push_str(&format!(
                        " of regions idle ≥ {} s",
                        secs(age.saturating_mul(aggr))
                    ));
                    if let Some(acc) = acc {
                        clause.push_str(&format!(" (≤ {acc} access per {} s)", secs(aggr)));
                    }
                }
                let mut filters = Vec::new();
                for kind in ["core_filters", "ops_filters", "filters"] {
                    let fd = sd.join(kind);
                    for f in 0..num(&fd.join("nr_filters")).unwrap_or(0) {
                        let one = fd.join(f.to_string());
                        let ty = read(&one.join("type")).unwrap_or_else(|| "?".into());
                        let not = if read(&one.join("matching")).as_deref() == Some("N") {
                            "non-"
                        } else {
                            ""
                        };
                        let verdict = if read(&one.join("allow")).as_deref() == Some("Y") {
                            "allowed"
                        } else {
                            "rejected"
                        };
                        filters.push(format!("{not}{ty} {verdict}"));
                    }
                }
                if !filters.is_empty() {
                    clause.push_str(&format!(", filters {}", filters.join(", ")));
                }
                let bytes = num(&sd.join("quotas/bytes")).filter(|&b| b > 0);
                let per = num(&sd.join("quotas/reset_interval_ms"));
                if let (Some(b), Some(ms)) = (bytes, per) {
                    clause.push_str(&format!(", quota {} per {ms} ms", human_size(b)));
                }
                clauses.push(clause);
            }
        }
    }
    Some(if clauses.is_empty() { "none running".to_owned() } else { clauses.join("; ") })
}

/// Where the virtio devices and the free page reporting block order are.
const VIRTIO_DEVICES: &str = "/sys/bus/virtio/devices";
const PAGE_REPORTING_ORDER: &str = "/sys/module/page_reporting/parameters/page_reporting_order";

/// Whether this machine gives freed memory back to a VM host
/// ([`free_page_reporting`] says `on…`).
pub fn reports_free_pages() -> bool {
    free_page_reporting(Path::new(VIRTIO_DEVICES), Path::new(PAGE_REPORTING_ORDER))
        .is_some_and(|s| s.starts_with("on"))
}

/// Whether this machine is a VM guest that hands its free memory back to
/// the host: a virtio-balloon device (virtio device id 5) under `devices`
/// (`/sys/bus/virtio/devices`) offering `VIRTIO_BALLOON_F_REPORTING`
/// (feature bit 5; `features` is a string of bits, bit 0 first), with the
/// block size from `order` (`page_reporting_order`, in pages): `on, free
/// blocks of 2.0 MiB (order 9)`. Reported blocks are given back to the
/// host; when the guest reuses one (a page-cache read after an eviction)
/// its first touches may cost host-side faults that the guest's fault
/// counters do not show, only its CPU time. `Some("off")` with a balloon
/// without the feature; `None` without a balloon.
pub fn free_page_reporting(devices: &Path, order: &Path) -> Option<String> {
    let read = |p: &Path| fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    let mut balloon = None;
    for entry in fs::read_dir(devices).ok()?.flatten() {
        let dir = entry.path();
        if read(&dir.join("device")).as_deref() == Some("0x0005") {
            balloon = Some(dir);
            break;
        }
    }
    let features = read(&balloon?.join("features")).unwrap_or_default();
    if features.as_bytes().get(5) != Some(&b'1') {
        return Some("off".to_owned());
    }
    Some(match read(order).and_then(|o| o.parse::<u32>().ok()) {
        Some(o) if o < 40 => format!("on, free blocks of {} (order {o})", human_size(4096u64 << o)),
        _ => "on".to_owned(),
    })
}

/// Current load average (1, 5, 15 min), for before/after notes.
pub fn loadavg() -> Option<String> {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// First line of a command's stdout, if it ran and succeeded.
pub fn first_line_of(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
}

/// `model name` of the first processor.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_owned())
    })
}

/// MemTotal in bytes.
pub fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// The `[selected]` word of a sysfs choice list: `always [madvise] never`.
pub fn bracketed(choices: &str) -> Option<String> {
    let start = choices.find('[')? + 1;
    let len = choices[start..].find(']')?;
    Some(choices[start..start + len].to_owned())
}

/// The mount holding `path` (canonical) on device `dev` (`major:minor`):
/// the longest mount point that is a path prefix, preferring entries of
/// the same device (bind mounts and overlays can share a prefix).
pub fn find_mount(mountinfo: &str, dev: &str, path: &str) -> Option<Mount> {
    let mounts: Vec<Mount> = mountinfo.lines().filter_map(parse_mountinfo_line).collect();
    let under = |m: &&Mount| {
        let mp = m.mount_point.as_str();
        mp == "/" || path == mp || path.strip_prefix(mp).is_some_and(|rest| rest.starts_with('/'))
    };
    let longest = |same_dev: bool| {
        mounts
            .iter()
            .filter(under)
            .filter(|m| !same_dev || m.dev == dev)
            .max_by_key(|m| m.mount_point.len())
            .cloned()
    };
    longest(true).or_else(|| longest(false))
}

fn parse_mountinfo_line(line: &str) -> Option<Mount> {
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split(' ').collect();
    let r: Vec<&str> = right.split(' ').collect();
    if l.len() < 6 || r.len() < 2 {
        return None;
    }
    Some(Mount {
        dev: l[2].to_owned(),
        mount_point: unescape_octal(l[4]),
        fstype: r[0].to_owned(),
        source: unescape_octal(r[1]),
        options: l[5].to_owned(),
    })
}

/// mountinfo writes space, tab, newline and backslash as `\040` etc.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = b[i + 1..i + 4].iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
            out.push(u8::try_from(v).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The bbolt version the oracle README says it drives: the first
/// `bbolt X.Y.Z` in the text (the README names it in its first paragraph
/// and in its "Tested" heading).
pub fn bbolt_version_from_readme(readme: &str) -> Option<String> {
    readme.match_indices("bbolt ").find_map(|(i, m)| {
        let rest = &readme[i + m.len()..];
        let v: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let v = v.trim_end_matches('.');
        (v.split('.').count() >= 2 && v.split('.').all(|p| !p.is_empty())).then(|| v.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_and_meminfo() {
        let cpu = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(cpu_model(cpu).as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(cpu_model("processor: 0\n"), None);
        assert_eq!(
            mem_total("MemTotal:       24684084 kB\nMemFree: 1 kB\n"),
            Some(24_684_084 * 1024)
        );
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn damon_schemes_are_described() {
        let dir = tempfile::tempdir().unwrap();
        let admin = dir.path();
        let w = |p: &str, v: &str| {
            let f = admin.join(p);
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(f, format!("{v}\n")).unwrap();
        };
        assert_eq!(damon_summary(admin), None, "no interface");
        w("kdamonds/nr_kdamonds", "1");
        w("kdamonds/0/state", "off");
        assert_eq!(damon_summary(admin).as_deref(), Some("none running"));
        w("kdamonds/0/state", "on");
        let c = "kdamonds/0/contexts/0";
        w("kdamonds/0/contexts/nr_contexts", "1");
        w(&format!("{c}/operations"), "paddr");
        w(&format!("{c}/monitoring_attrs/intervals/aggr_us"), "5000000");
        w(&format!("{c}/schemes/nr_schemes"), "1");
        let sc = format!("{c}/schemes/0");
        w(&format!("{sc}/action"), "pageout");
        w(&format!("{sc}/access_pattern/age/min"), "12");
        w(&format!("{sc}/access_pattern/nr_accesses/max"), "1");
        w(&format!("{sc}/ops_filters/nr_filters"), "2");
        w(&format!("{sc}/ops_filters/0/type"), "anon");
        w(&format!("{sc}/ops_filters/0/matching"), "Y");
        w(&format!("{sc}/ops_filters/0/allow"), "N");
        w(&format!("{sc}/ops_filters/1/type"), "unmapped");
        w(&format!("{sc}/ops_filters/1/matching"), "Y");
        w(&format!("{sc}/ops_filters/1/allow"), "Y");
        w(&format!("{sc}/quotas/bytes"), "134217728");
        w(&format!("{sc}/quotas/reset_interval_ms"), "1000");
        assert_eq!(
            damon_summary(admin).as_deref(),
            Some(
                "kdamond 0 (paddr): pageout of regions idle ≥ 60 s (≤ 1 access per 5 s), \
                 filters anon rejected, unmapped allowed, quota 128.0 MiB per 1000 ms"
            )
        );
    }

    #[test]
    fn free_page_reporting_is_read_from_the_balloon() {
        let dir = tempfile::tempdir().unwrap();
        let (devices, order) = (dir.path().join("devices"), dir.path().join("order"));
        let w = |p: &Path, v: &str| {
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, format!("{v}\n")).unwrap();
        };
        assert_eq!(free_page_reporting(&devices, &order), None, "no bus");
        w(&devices.join("virtio0/device"), "0x0002");
        assert_eq!(free_page_reporting(&devices, &order), None, "no balloon");
        w(&devices.join("virtio1/device"), "0x0005");
        // This VM's balloon: stats queue, deflate on OOM, reporting (bit 5).
        w(&devices.join("virtio1/features"), "0110000100000000");
        assert_eq!(free_page_reporting(&devices, &order).as_deref(), Some("off"));
        w(&devices.join("virtio1/features"), "0110010100000000");
        assert_eq!(free_page_reporting(&devices, &order).as_deref(), Some("on"));
        w(&order, "9");
        assert_eq!(
            free_page_reporting(&devices, &order).as_deref(),
            Some("on, free blocks of 2.0 MiB (order 9)")
        );
    }

    #[test]
    fn sysfs_choice() {
        assert_eq!(bracketed("always [madvise] never\n").as_deref(), Some("madvise"));
        assert_eq!(
            bracketed("always defer defer+madvise [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(bracketed("always madvise never"), None);
    }

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
41 27 0:38 / /mnt/my\\040disk rw,relatime - tmpfs tmpfs rw
50 27 254:0 /srv /mnt/bind rw,relatime shared:1 - ext4 /dev/vda rw
";

    #[test]
    fn mounts_by_device_and_longest_prefix() {
        let m = find_mount(MOUNTINFO, "254:0", "/home/u/repo/target/bench/files/x.db").unwrap();
        assert_eq!(
            (m.mount_point.as_str(), m.fstype.as_str(), m.source.as_str()),
            ("/", "ext4", "/dev/vda")
        );
        let m = find_mount(MOUNTINFO, "254:0", "/mnt/bind/x.db").unwrap();
        assert_eq!(m.mount_point, "/mnt/bind");
        assert_eq!(m.options, "rw,relatime");
        let m = find_mount(MOUNTINFO, "0:38", "/mnt/my disk/x").unwrap();
        assert_eq!((m.mount_point.as_str(), m.fstype.as_str()), ("/mnt/my disk", "tmpfs"));
        // A prefix of the name is not a prefix of the path.
        let m = find_mount(MOUNTINFO, "9:9", "/mnt/bindle/x").unwrap();
        assert_eq!(m.mount_point, "/");
    }

    #[test]
    fn bbolt_version_in_readme() {
        let readme = "It drives **Debian's packaged\nGo bbolt** (`golang-github-coreos-bbolt-dev`, bbolt 1.3.6 on Debian 12)\n## Tested (Debian 12, go1.19.8, bbolt 1.3.6, bolt 1.3.1)";
        assert_eq!(bbolt_version_from_readme(readme).as_deref(), Some("1.3.6"));
        assert_eq!(
            bbolt_version_from_readme("bbolt oracle. bbolt 1.4.0."),
            Some("1.4.0".to_owned())
        );
        assert_eq!(bbolt_version_from_readme("no version"), None);
    }
}
