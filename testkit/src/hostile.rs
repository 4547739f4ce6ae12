//! The hostile-file table: damaged variants of real
//! corpus files, one [`Case`] each, built from `testdata/`. Shared by the
//! `native` suite (core parsers, the writers), the `cli` suite (the
//! `mapwise` command line), the `inspector` suite (its subcommands) and
//! the `wasm` suite (the viewer's exports).
//!
//! `full = false` gives the normal run's table (a few hundred cases, every
//! kind of damage); `full = true` adds the exhaustive sweeps (every page
//! boundary and mid-page cut of every corpus file, every byte of every
//! header), run by `cargo xtask hostile`.

#![expect(clippy::cast_possible_truncation)] // test data: wrapping on purpose

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Which parser a case is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// bbolt.
    Bolt,
    /// RRDtool.
    Rrd,
    /// Mercurial revlog index.
    Revlog,
}

/// One damaged file.
#[derive(Debug, Clone)]
pub struct Case {
    /// What was done, e.g. `small.db: meta0 root = u64::MAX (resealed)`.
    pub name: String,
    /// The format of the file it was made from.
    pub fmt: Fmt,
    /// The damaged bytes.
    pub bytes: Vec<u8>,
}

impl Case {
    /// Write the damaged bytes to `dir/case.EXT`, the format's usual
    /// extension (`db`, `rrd`, `i`); the file's path.
    ///
    /// # Panics
    /// When the file cannot be written.
    #[must_use]
    pub fn write_to(&self, dir: &Path) -> PathBuf {
        let ext = match self.fmt {
            Fmt::Bolt => "db",
            Fmt::Rrd => "rrd",
            Fmt::Revlog => "i",
        };
        let path = dir.join(format!("case.{ext}"));
        std::fs::write(&path, &self.bytes).expect("write case");
        path
    }
}

fn read(root: &Path, rel: &str) -> Vec<u8> {
    std::fs::read(root.join("testdata").join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn put(b: &mut [u8], off: usize, v: &[u8]) {
    if let Some(dst) = b.get_mut(off..off + v.len()) {
        dst.copy_from_slice(v);
    }
}

/// FNV-1a 64, as bbolt's meta checksum.
fn fnv1a64(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Recompute both meta checksums so the damage gets past them.
fn reseal(b: &mut [u8], ps: usize) {
    for m in [0, ps] {
        if b.len() >= m + 80 {
            let sum = fnv1a64(&b[m + 16..m + 72]);
            put(b, m + 72, &sum.to_le_bytes());
        }
    }
}

/// Interesting values for a field of `width` bytes.
fn values(width: usize) -> Vec<(&'static str, u64)> {
    let max = if width >= 8 { u64::MAX } else { (1u64 << (8 * width)) - 1 };
    let mut v = vec![("0", 0), ("0xFFFF", 0xFFFF), ("max", max)];
    if width >= 4 {
        v.push(("0x7FFFFFFF", 0x7FFF_FFFF));
    }
    v.retain(|&(_, x)| x <= max);
    v
}

fn set(b: &mut [u8], off: usize, width: usize, v: u64) {
    put(b, off, &v.to_le_bytes()[..width]);
}

fn cuts(name: &str, fmt: Fmt, base: &[u8], step: usize, full: bool, out: &mut Vec<Case>) {
    let mut at = Vec::new();
    let mut k = 0;
    while k < base.len() {
        at.push(k);
        at.push(k + step / 2);
        k += step;
    }
    at.extend([1, 15, 16, 20, 79, 80, 127, 128]);
    at.sort_unstable();
    at.dedup();
    at.retain(|&c| c < base.len());
    // The normal run keeps every boundary of the first pages and a
    // sample after them; the full sweep keeps all.
    let mut n = 0;
    for c in at {
        n += 1;
        if !full && c > 4 * step && n % 11 != 0 {
            continue;
        }
        out.push(Case {
            name: format!("{name}: truncated at {c}"),
            fmt,
            bytes: base[..c].to_vec(),
        });
    }
}

fn field_cases(
    name: &str,
    fmt: Fmt,
    base: &[u8],
    fields: &[(String, usize, usize)],
    fix: &dyn Fn(&mut [u8]),
    out: &mut Vec<Case>,
) {
    for (field, off, width) in fields {
        let (off, width) = (*off, *width);
        for (vn, v) in values(width) {
            let mut b = base.to_vec();
            set(&mut b, off, width, v);
            fix(&mut b);
            out.push(Case { name: format!("{name}: {field} = {vn}"), fmt, bytes: b });
        }
        for bit in [0, 7, 8 * width - 1] {
            let mut b = base.to_vec();
            if let Some(x) = b.get_mut(off + bit / 8) {
                *x ^= 1 << (bit % 8);
            }
            fix(&mut b);
            out.push(Case { name: format!("{name}: {field} bit {bit} flipped"), fmt, bytes: b });
        }
    }
}

/// Element array entries of a page as (file offset of the element,
/// flags of the page): branch elements hold the child pgid at +8, leaf
/// elements `flags, pos, ksize, vsize`.
fn page_of(b: &[u8], ps: usize, pgid: usize) -> Option<(u16, u16, usize)> {
    let h = b.get(pgid * ps..pgid * ps + 16)?;
    let flags = u16::from_le_bytes([h[8], h[9]]);
    let count = u16::from_le_bytes([h[10], h[11]]);
    Some((flags, count, pgid * ps))
}

fn u32_at(b: &[u8], off: usize) -> usize {
    b.get(off..off + 4).map_or(0, |x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as usize)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8).map_or(0, |x| {
        let mut a = [0u8; 8];
        a.copy_from_slice(x);
        u64::from_le_bytes(a)
    })
}

fn bolt(root: &Path, full: bool, out: &mut Vec<Case>) {
    for (file, ps) in [("bolt/small.db", 4096usize), ("bolt/overflow.db", 4096)] {
        let base = read(root, file);
        let name = file.trim_start_matches("bolt/");
        let pages = base.len() / ps;
        cuts(name, Fmt::Bolt, &base, ps, full, out);
        // Meta fields, each with the checksum left stale and resealed.
        let meta = [
            ("id", 0, 8),
            ("flags", 8, 2),
            ("count", 10, 2),
            ("overflow", 12, 4),
            ("magic", 16, 4),
            ("version", 20, 4),
            ("pageSize", 24, 4),
            ("meta flags", 28, 4),
            ("root", 32, 8),
            ("root sequence", 40, 8),
            ("freelist", 48, 8),
            ("pgid", 56, 8),
            ("txid", 64, 8),
            ("checksum", 72, 8),
        ];
        for m in 0..2 {
            let fields: Vec<(String, usize, usize)> =
                meta.iter().map(|&(f, o, w)| (format!("meta{m} {f}"), m * ps + o, w)).collect();
            field_cases(name, Fmt::Bolt, &base, &fields, &|_| {}, out);
            let resealed = format!("{name} (resealed)");
            field_cases(&resealed, Fmt::Bolt, &base, &fields, &|b| reseal(b, ps), out);
        }
        // Both metas pointing at the same damage (so no fallback).
        for (what, off) in [("root", 32), ("freelist", 48), ("pgid", 56)] {
            for (vn, v) in
                [("0", 0u64), ("1", 1), ("max", u64::MAX), ("past end", pages as u64 + 7)]
            {
                let mut b = base.clone();
                for m in 0..2 {
                    set(&mut b, m * ps + off, 8, v);
                }
                reseal(&mut b, ps);
                out.push(Case {
                    name: format!("{name}: both metas {what} = {vn}"),
                    fmt: Fmt::Bolt,
                    bytes: b,
                });
            }
        }
        // Every other page's header, and its elements.
        let step = if full { 1 } else { (pages / 12).max(1) };
        for pgid in (2..pages).step_by(step) {
            let Some((flags, count, off)) = page_of(&base, ps, pgid) else {
                continue;
            };
            let fields = [
                ("id", off, 8),
                ("flags", off + 8, 2),
                ("count", off + 10, 2),
                ("overflow", off + 12, 4),
            ];
            let fields: Vec<(String, usize, usize)> =
                fields.iter().map(|&(f, o, w)| (format!("page {pgid} {f}"), o, w)).collect();
            field_cases(name, Fmt::Bolt, &base, &fields, &|_| {}, out);
            let count = usize::from(count).min(if full { 4096 } else { 3 });
            for i in 0..count {
                let e = off + 16 + 16 * i;
                match flags {
                    // Branch: child pgid to itself, to a meta page, past
                    // the end, and to the page's first child (a cycle
                    // through a shared child).
                    0x01 => {
                        let first = u64_at(&base, off + 16 + 8);
                        for (vn, v) in [
                            ("itself", pgid as u64),
                            ("meta 0", 0),
                            ("max", u64::MAX),
                            ("past end", pages as u64 + 1),
                            ("first sibling", first),
                        ] {
                            let mut b = base.clone();
                            set(&mut b, e + 8, 8, v);
                            out.push(Case {
                                name: format!("{name}: page {pgid} branch {i} pgid = {vn}"),
                                fmt: Fmt::Bolt,
                                bytes: b,
                            });
                        }
                    }
                    // Leaf: pos/ksize/vsize past the run; a bucket's root
                    // pointing at itself, a meta page, past the end.
                    0x02 => {
                        for (fname, fo) in [("pos", 4), ("ksize", 8), ("vsize", 12)] {
                            for (vn, v) in [("0xFFFF", 0xFFFFu64), ("max", u64::from(u32::MAX))] {
                                let mut b = base.clone();
                                set(&mut b, e + fo, 4, v);
                                out.push(Case {
                                    name: format!("{name}: page {pgid} leaf {i} {fname} = {vn}"),
                                    fmt: Fmt::Bolt,
                                    bytes: b,
                                });
                            }
                        }
                        if u32_at(&base, e) & 1 == 1 {
                            let val = e + u32_at(&base, e + 4) + u32_at(&base, e + 8);
                            for (vn, v) in [
                                ("its own page", pgid as u64),
                                ("meta 1", 1),
                                ("max", u64::MAX),
                                ("past end", pages as u64 + 3),
                            ] {
                                let mut b = base.clone();
                                set(&mut b, val, 8, v);
                                out.push(Case {
                                    name: format!("{name}: page {pgid} bucket {i} root = {vn}"),
                                    fmt: Fmt::Bolt,
                                    bytes: b,
                                });
                            }
                        }
                    }
                    // Freelist: ids claiming the meta pages, past the end,
                    // and a 0xFFFF count whose real count is u64::MAX.
                    0x10 => {
                        for (vn, v) in [("0", 0u64), ("1", 1), ("max", u64::MAX)] {
                            let mut b = base.clone();
                            set(&mut b, e, 8, v);
                            out.push(Case {
                                name: format!("{name}: freelist page {pgid} id {i} = {vn}"),
                                fmt: Fmt::Bolt,
                                bytes: b,
                            });
                        }
                        let mut b = base.clone();
                        set(&mut b, off + 10, 2, 0xFFFF);
                        set(&mut b, off + 16, 8, u64::MAX);
                        out.push(Case {
                            name: format!(
                                "{name}: freelist page {pgid} count 0xFFFF, real count max"
                            ),
                            fmt: Fmt::Bolt,
                            bytes: b,
                        });
                    }
                    _ => {}
                }
            }
        }
    }
}

fn rrd(root: &Path, full: bool, out: &mut Vec<Case>) {
    use mapwise_core::rrd::Header;
    let files: &[&str] = if full {
        &["rrd/gauge.rrd", "rrd/hw.rrd", "rrd/seed.rrd"]
    } else {
        &["rrd/gauge.rrd", "rrd/hw.rrd"]
    };
    for file in files {
        let base = read(root, file);
        let name = file.trim_start_matches("rrd/");
        cuts(name, Fmt::Rrd, &base, 4096, full, out);
        let h = Header::parse(base.as_slice()).expect("corpus rrd parses");
        let g = h.geometry().clone();
        // Truncated at and inside every section.
        for (sec, at) in [
            ("ds_def", g.ds_def),
            ("rra_def", g.rra_def),
            ("live_head", g.live_head),
            ("pdp_prep", g.pdp_prep),
            ("cdp_prep", g.cdp_prep),
            ("rra_ptr", g.rra_ptr),
            ("values", g.header_len),
        ] {
            for c in [at, at + 4] {
                out.push(Case {
                    name: format!("{name}: truncated at {c} ({sec})"),
                    fmt: Fmt::Rrd,
                    bytes: base[..(c as usize).min(base.len())].to_vec(),
                });
            }
        }
        let mut fields: Vec<(String, usize, usize)> = vec![
            ("stat_head cookie".into(), 0, 4),
            ("stat_head version".into(), 4, 5),
            ("stat_head float_cookie".into(), 16, 8),
            ("stat_head ds_cnt".into(), 24, 8),
            ("stat_head rra_cnt".into(), 32, 8),
            ("stat_head pdp_step".into(), 40, 8),
        ];
        for i in 0..h.ds_cnt() {
            let o = g.ds_def_at(i) as usize;
            fields.push((format!("ds_def[{i}] ds_nam"), o, 8));
            fields.push((format!("ds_def[{i}] dst"), o + 20, 8));
            fields.push((format!("ds_def[{i}] heartbeat"), o + 40, 8));
        }
        for i in 0..h.rra_cnt() {
            let o = g.rra_def_at(i) as usize;
            fields.push((format!("rra_def[{i}] cf_nam"), o, 8));
            fields.push((format!("rra_def[{i}] row_cnt"), o + 24, 8));
            fields.push((format!("rra_def[{i}] pdp_cnt"), o + 32, 8));
            fields.push((format!("rra_def[{i}] par[0]"), o + 40, 8));
            fields.push((format!("rra_ptr[{i}] cur_row"), g.rra_ptr_at(i) as usize, 8));
        }
        fields.push(("live_head last_up".into(), g.live_head as usize, 8));
        fields.push(("live_head last_up_usec".into(), g.live_head as usize + 8, 8));
        for i in 0..h.ds_cnt() {
            let o = g.pdp_prep_at(i) as usize;
            fields.push((format!("pdp_prep[{i}] last_ds"), o, 8));
            fields.push((format!("pdp_prep[{i}] unknown_sec"), o + 32, 8));
        }
        field_cases(name, Fmt::Rrd, &base, &fields, &|_| {}, out);
        // Row counts whose product with ds_cnt (and the row size) passes
        // the file size, and passes u64.
        for (vn, v) in [
            ("file size", base.len() as u64),
            ("2^61", 1u64 << 61),
            ("max / ds", u64::MAX / h.ds_cnt().max(1) as u64),
        ] {
            let mut b = base.clone();
            set(&mut b, g.rra_def_at(0) as usize + 24, 8, v);
            out.push(Case {
                name: format!("{name}: rra_def[0] row_cnt = {vn} (rows past the file)"),
                fmt: Fmt::Rrd,
                bytes: b,
            });
        }
        if full {
            for off in 0..g.header_len as usize {
                let mut b = base.clone();
                b[off] ^= 0xFF;
                out.push(Case {
                    name: format!("{name}: header byte {off} inverted"),
                    fmt: Fmt::Rrd,
                    bytes: b,
                });
            }
        }
    }
}

fn revlog(root: &Path, full: bool, out: &mut Vec<Case>) {
    for file in
        ["revlog/00changelog.i", "revlog/00manifest.i", "revlog/synthetic-2000/00changelog.i"]
    {
        let mut base = read(root, file);
        if !full {
            base.truncate(24 * 1024);
        }
        let name = file.trim_start_matches("revlog/");
        cuts(name, Fmt::Revlog, &base, 64, full, out);
        let inline = base.get(1).is_some_and(|f| f & 1 == 1);
        // Entry fields of the first revisions (v1: offset_flags 0..8,
        // compressed 8..12, uncompressed 12..16, base 16..20, link 20..24,
        // p1 24..28, p2 28..32, node 32..64; all big-endian).
        let mut at = 0usize;
        let revs = if full { 64 } else { 2 };
        for rev in 0..revs {
            if at + 64 > base.len() {
                break;
            }
            let entry = [
                ("header/offset", 0usize, 8usize),
                ("flags", 6, 2),
                ("compressed length", 8, 4),
                ("uncompressed length", 12, 4),
                ("base rev", 16, 4),
                ("link rev", 20, 4),
                ("p1", 24, 4),
                ("p2", 28, 4),
            ];
            for (f, o, w) in entry {
                for (vn, v) in [
                    ("0", 0u64),
                    ("0xFFFF", 0xFFFF),
                    ("max", u64::MAX),
                    ("self", rev as u64),
                    ("-2", u64::MAX - 1),
                ] {
                    let mut b = base.clone();
                    let bytes = v.to_be_bytes();
                    put(&mut b, at + o, &bytes[8 - w..]);
                    out.push(Case {
                        name: format!("{name}: rev {rev} {f} = {vn}"),
                        fmt: Fmt::Revlog,
                        bytes: b,
                    });
                }
            }
            let clen = u32_at_be(&base, at + 8);
            at += 64 + if inline { clen } else { 0 };
        }
        if inline {
            // An inline chunk that overruns the file: the last entry's
            // compressed length grown past the end.
            let mut last = 0;
            let mut p = 0;
            while p + 64 <= base.len() {
                last = p;
                p += 64 + u32_at_be(&base, p + 8);
            }
            for (vn, v) in [("file size", base.len() as u32), ("max", u32::MAX)] {
                let mut b = base.clone();
                put(&mut b, last + 8, &v.to_be_bytes());
                out.push(Case {
                    name: format!("{name}: last inline chunk length = {vn} (overruns)"),
                    fmt: Fmt::Revlog,
                    bytes: b,
                });
            }
        }
    }
}

fn u32_at_be(b: &[u8], off: usize) -> usize {
    b.get(off..off + 4).map_or(0, |x| u32::from_be_bytes([x[0], x[1], x[2], x[3]]) as usize)
}

/// The table: every case for every format, from the repository at `root`.
#[must_use]
pub fn cases(root: &Path, full: bool) -> Vec<Case> {
    let mut out = Vec::new();
    bolt(root, full, &mut out);
    rrd(root, full, &mut out);
    revlog(root, full, &mut out);
    out
}

/// Every case of the table (`full`: the whole sweep) through `each`,
/// which gets the case's index and pushes what it finds wrong; then the
/// number of cases per format and the time on stderr, and a failure
/// listing what was found, under `what`.
pub fn sweep(what: &str, full: bool, mut each: impl FnMut(usize, &Case, &mut Vec<String>)) {
    let started = Instant::now();
    let all = cases(&crate::repo(), full);
    let mut counts = [0usize; 3];
    let mut fails = Vec::new();
    for (i, c) in all.iter().enumerate() {
        counts[c.fmt as usize] += 1;
        each(i, c, &mut fails);
    }
    eprintln!(
        "{what}: {} cases (bolt {}, rrd {}, revlog {}), {:.1} s",
        all.len(),
        counts[0],
        counts[1],
        counts[2],
        started.elapsed().as_secs_f64()
    );
    assert_no_failures(what, &fails);
}

/// Whether an error text names where the fault is: a page, element, meta
/// page, byte offset, RRD section, revision or entry.
#[must_use]
pub fn names_a_place(msg: &str) -> bool {
    const PLACES: &[&str] = &[
        "page",
        "offset",
        "meta",
        "rrd ",
        "element",
        "rev",
        "entry",
        "byte",
        "stat_head",
        "ds_def",
        "rra_def",
        "live_head",
        "pdp_prep",
        "cdp_prep",
        "rra_ptr",
        "values",
        "header",
        "too small",
        "bucket",
        "empty",
        "file size",
        "truncated",
        "too short",
        // Nothing recognised (e.g. a revlog whose revision 0 is damaged
        // fails the conservative sniff): the detected format is the answer.
        "detected format",
    ];
    let m = msg.to_ascii_lowercase();
    PLACES.iter().any(|p| m.contains(p))
}

/// Fail with the first of `fails`, if any, after `what` ran.
pub fn assert_no_failures(what: &str, fails: &[String]) {
    assert!(
        fails.is_empty(),
        "{what}: {} failures:\n{}",
        fails.len(),
        fails.iter().take(60).cloned().collect::<Vec<_>>().join("\n")
    );
}
