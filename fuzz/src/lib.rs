//! The fuzz harness of mapwise: one function per cargo-fuzz target, each
//! taking the raw input bytes.
//!
//! The targets in `fuzz_targets/` only call these, and the workspace's
//! regression test (`native/tests/fuzz_regressions.rs`) includes this file
//! with `#[path]` and replays every checked-in reproducer through the same
//! function, so a fixed crash stays fixed under `cargo test --workspace`.
//!
//! Assertions: no panic (any panic is a finding), bounded work (scans are
//! capped by what the file can hold, so an endless loop becomes a failed
//! assertion rather than a timeout) and cheap invariants (layouts cover the
//! file exactly; a walk claims no more pages than the file has; the bbolt
//! engine after a simulated crash holds exactly the last committed state).
//! Memory is bounded by libFuzzer's `-rss_limit_mb` and `-malloc_limit_mb`
//! (set by `cargo xtask fuzz`), inputs by `-max_len`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use mapwise_core::bolt::{BoltFile, Bucket, WalkOptions, dump, page_detail, pages, walk};
use mapwise_core::layout::{Format, Layout};
use mapwise_core::revlog;
use mapwise_core::rrd::{self, Cf, Header};

/// Where the engine targets put their files: tmpfs when there is one (no
/// disk I/O, no fsync cost), else the system's temporary directory.
fn scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() }
}

fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("mapwise-fuzz-")
        .tempdir_in(scratch())
        .expect("scratch directory")
}

/// A layout's regions are sorted, non-empty, contiguous and cover the
/// source exactly.
fn assert_covers(l: &Layout, len: u64) {
    let mut at = 0;
    for r in &l.regions {
        assert_eq!(r.offset, at, "regions contiguous");
        assert!(r.len > 0, "no empty region");
        at = r.end();
    }
    assert_eq!(at, len, "layout covers the file");
}

/// Describe (the inspector's detail pane) a few ranges of a layout.
fn describe_some(l: &Layout, data: &[u8]) {
    let len = data.len() as u64;
    for (off, n) in [(0, 4096), (len / 2, 4096), (len.saturating_sub(512), 512)] {
        let _ = mapwise_native::describe::describe(l, data, off, n);
    }
    let _ = mapwise_native::describe::describe(l, data, 0, len);
}

// ---------------------------------------------------------------------------
// bbolt files

/// Target `bolt_file`: a bbolt file through everything a front end does:
/// open, walk (the check), the `pages` table, the dump, page details, the
/// reports, and cursor scans in both directions with seeks.
pub fn bolt_file(data: &[u8]) {
    let Ok(file) = BoltFile::open(data) else {
        return;
    };
    let file_pages = file.file_pages();
    let ps = u64::from(file.page_size());
    let w = walk(&file, WalkOptions::default());
    assert_covers(&w.layout, data.len() as u64);
    for g in &w.layout.groups {
        assert!(g.pages <= file_pages, "a bucket with more pages than the file");
    }
    let _ = mapwise_native::report::check_report(&w.layout);
    let layout = std::sync::Arc::new(w.layout);
    let _ = mapwise_native::report::layout_report(&layout, None, None, None, None);
    let rows = mapwise_native::report::page_rows(&file, &layout).count() as u64;
    assert!(rows <= file_pages + 1, "more page rows than pages");
    let _ = pages(&file, &layout).count();
    let mut out = String::new();
    let _ = dump(&file, &mut out);
    for pgid in (0..file_pages.min(32)).chain([file_pages, u64::MAX]) {
        let _ = page_detail(&file, pgid, 64);
    }
    // Any scan yields at most one item per element the file can hold
    // (16-byte element headers); more means the cursor went round a loop.
    let cap = (file_pages + 1) * (ps / 16 + 1);
    let root = Bucket::root_of(&file);
    let mut c = root.cursor();
    let mut n = 0u64;
    let mut it = c.first();
    while let Ok(Some(item)) = it {
        n += 1;
        assert!(n <= cap, "forward scan does not end");
        if item.is_bucket()
            && let Ok(Some(b)) = c.bucket()
        {
            let mut bc = b.cursor();
            let mut m = 0u64;
            let mut x = bc.last();
            while let Ok(Some(_)) = x {
                m += 1;
                assert!(m <= cap, "backward scan does not end");
                x = bc.prev();
            }
            let _ = bc.seek(b"k");
            let _ = b.get(&item.key);
        }
        it = c.next();
    }
}

// ---------------------------------------------------------------------------
// RRD files

/// Target `rrd_file`: an RRD file through the layout (with the pages the
/// next update touches), the header parser, dump (files up to 16 KiB),
/// info, lastupdate, fetch of every CF and a few updates on an in-memory
/// copy.
pub fn rrd_file(data: &[u8]) {
    let l = rrd::layout(data, 4096);
    assert_covers(&l.layout, data.len() as u64);
    let _ = rrd::summary(&l);
    describe_some(&l.layout, data);
    let Ok(h) = Header::parse(data) else {
        return;
    };
    let _ = rrd::hot_ranges(&h, 4096, data.len() as u64);
    let mut s = String::new();
    // The harness's bound, as for fetch below: printing every value of a
    // big file was most of the target's time, and each value goes through
    // the same formatter a small file exercises (checked against rrdtool
    // by the test suite).
    if data.len() <= 16 << 10 {
        let _ =
            rrd::dump::write_dump(&mut s, &h, data, rrd::dump::DumpHeader::Dtd, &|_| String::new());
        s.clear();
    }
    let _ = rrd::info::write_info(&mut s, &rrd::info::info(&h, "x"));
    let _ = rrd::info::write_lastupdate(&mut s, &h);
    for i in 0..h.rra_cnt() {
        let _ = rrd::info::first(&h, i);
    }
    for cf in Cf::ALL {
        for (span, step) in [(86_400, 1), (3_600 * 24 * 400, 86_400)] {
            if let Ok(p) =
                rrd::fetch::plan(&h, cf, h.last_up().saturating_sub(span), h.last_up(), step)
            {
                // The harness's bound, not fetch's: big windows are slow to
                // print and prove nothing more.
                if p.rows().saturating_mul(h.ds_cnt() as u64) <= 1 << 14
                    && let Ok(v) = rrd::fetch::values(&h, &p, data)
                {
                    let _ = rrd::fetch::write_fetch(&mut s, &h, &p, &v);
                    s.clear();
                }
            }
        }
    }
    let mut owned = h.into_owned();
    let mut rows = rrd::update::MemRows(data.to_vec());
    if let Ok(mut u) = rrd::update::Updater::new(&mut owned, &mut rows, &rrd::rpn::NoMath, 0) {
        let tmpl = rrd::update::Template::default_for(u.header());
        let clock = rrd::update::Clock { now: (0, 0), at_time: &|_| Err(String::new()) };
        for k in 1..4 {
            let t = u.header().last_up().saturating_add(977 * k);
            let arg = format!("{t}:{}", vec!["5"; tmpl.slots.len()].join(":"));
            if let Ok(s) = rrd::update::parse_sample(u.header(), &tmpl, &arg, &clock) {
                let _ = u.apply(&s);
            }
        }
        let _ = u.finish();
    }
}

// ---------------------------------------------------------------------------
// revlog indexes

/// Target `revlog_index`: a revlog index through open, every entry (its
/// parents and inline chunk), the `debugindex` text, the data-length
/// check, the layout and the detail pane.
pub fn revlog_index(data: &[u8]) {
    let _ = revlog::sniff(data);
    if let Ok(index) = revlog::Index::open(data) {
        // Entries are at least 64 bytes: an index cannot claim more.
        assert!(u64::from(index.len()) <= data.len() as u64 / 64 + 1);
        for rev in -1..=index.tip() {
            if let Ok(e) = index.entry(rev) {
                let _ = index.checked_parents(&e);
                let _ = index.parent_revs(&e);
                let _ = index.chunk(rev);
            }
            let _ = revlog::debug_row(&index, rev);
        }
        let mut out = String::new();
        let _ = revlog::write_debugindex(&mut out, &index, revlog::DebugStyle::DEBUG);
        let _ = index.check_data_len(1000, 0..=index.tip());
    }
    for data_len in [None, Some(0), Some(5000), Some(u64::MAX)] {
        let l = revlog::layout(data, revlog::LayoutOptions { data_len });
        assert_covers(&l.layout, data.len() as u64);
        if data_len.is_none() {
            describe_some(&l.layout, data);
        }
    }
}

// ---------------------------------------------------------------------------
// any file

/// Target `detect_layout`: any bytes, as `inspector layout|check` and the
/// TUI see a file: written to a scratch file and read by
/// `watch::read_snapshot` (detection, the format's layout and facts), then
/// the layout, check and kind reports and the detail pane.
pub fn detect_layout(data: &[u8]) {
    let _ = mapwise_core::detect::detect(data);
    let _ = mapwise_core::detect::foreign_rrd(data);
    let _ = mapwise_core::detect::is_foreign_endian_bolt(data);
    let dir = scratch_dir();
    let path = dir.path().join("file");
    std::fs::write(&path, data).expect("scratch write");
    let snap = mapwise_native::observe::watch::read_snapshot(&path, WalkOptions::default())
        .expect("a readable file always gives a snapshot");
    assert_covers(&snap.layout, data.len() as u64);
    if snap.format == Format::Unknown {
        assert_eq!(snap.layout.regions.len(), usize::from(!data.is_empty()));
    }
    let _ = mapwise_native::report::layout_report(
        &snap.layout,
        snap.bolt.as_ref(),
        snap.revlog.as_ref(),
        snap.rrd.as_ref(),
        None,
    );
    let _ = mapwise_native::report::check_report(&snap.layout);
    let _ = mapwise_native::report::kind_totals(&snap.layout, None);
    describe_some(&snap.layout, data);
}

// ---------------------------------------------------------------------------
// input decoding for the engine targets

/// Bytes read one at a time, zero when the input runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

// ---------------------------------------------------------------------------
// the bbolt engine

type Model = BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, Vec<u8>>>;

fn bucket_name(b: u8) -> Vec<u8> {
    format!("b{}", b % 4).into_bytes()
}

fn key(b: u8) -> Vec<u8> {
    if b >= 240 {
        // Long keys: branch elements that fill pages, overflow runs.
        let mut k = format!("long{b:03}").into_bytes();
        k.resize(500 + usize::from(b - 240) * 61, b'a' + b % 26);
        k
    } else {
        format!("k{:03}", b % 96).into_bytes()
    }
}

/// A value of a length picked by `b` (empty, short, a quarter page, just
/// under a page, two pages and more), byte `i` being `(i % 251) ^ seed`.
/// Built by copying one 251-byte period: a byte-at-a-time loop under
/// coverage instrumentation was a quarter of the target's time.
fn value(b: u8, seed: u8, ps: usize) -> Vec<u8> {
    let len = match b % 8 {
        0 => 0,
        1..=4 => usize::from(b / 8),
        5 => ps / 4,
        6 => ps - 60,
        _ => ps * 2 + 17,
    };
    let mut period = [0u8; 251];
    for (i, p) in (0u8..).zip(period.iter_mut()) {
        *p = i ^ seed;
    }
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        let n = (len - v.len()).min(period.len());
        v.extend_from_slice(&period[..n]);
    }
    v
}

/// What the file holds, read with `core` (no engine involved): every
/// top-level bucket and its keys and values. Panics when the file does not
/// open or the walk finds a problem: a committed file must be clean.
fn read_model(path: &Path) -> Model {
    let bytes = std::fs::read(path).expect("read back");
    let file = BoltFile::open(bytes.as_slice()).expect("a committed file opens");
    let w = walk(&file, WalkOptions::default());
    assert!(w.layout.problems.is_empty(), "committed file has problems: {:?}", w.layout.problems);
    let mut model = Model::new();
    let root = Bucket::root_of(&file);
    let mut c = root.cursor();
    let mut it = c.first();
    while let Some(item) = it.expect("root scan") {
        assert!(item.is_bucket(), "only buckets at the top level");
        let b = c.bucket().expect("bucket").expect("bucket exists");
        let mut keys = BTreeMap::new();
        let mut bc = b.cursor();
        let mut x = bc.first();
        while let Some(kv) = x.expect("bucket scan") {
            keys.insert(kv.key.to_vec(), kv.value.to_vec());
            x = bc.next();
        }
        model.insert(item.key.to_vec(), keys);
        it = c.next();
    }
    model
}

/// Target `bolt_ops`: the bbolt engine under an arbitrary sequence of
/// bucket creates and deletes, puts, deletes, commits, rollbacks, reopens
/// and commits interrupted by a simulated crash, checked against a model.
///
/// A crash is the engine's own test hook
/// (`mapwise_native::engine::bolt::failpoint`): the commit stops after any of its
/// page writes, with any number of bytes of the next one written, and the
/// process "dies" (the handle is dropped). Reopened, the file must hold
/// exactly the previous commit (or the new one when the crash came after
/// the new meta page's 80 checksummed bytes), with a clean walk, and the
/// engine must accept it for writing.
///
/// Input: byte 0 picks the options (page size 1 KiB or 4 KiB,
/// `NoFreelistSync`), then one opcode byte and its operands per
/// operation, at most 48 operations.
pub fn bolt_ops(data: &[u8]) {
    use mapwise_native::engine::bolt::{Db, Options};

    let mut inp = Input(data);
    let o = inp.byte();
    let ps: u32 = if o & 1 == 0 { 1024 } else { 4096 };
    let opts = Options {
        page_size: ps,
        no_sync: true,
        no_freelist_sync: o & 2 != 0,
        ..Options::read_write()
    };
    let ps = ps as usize;
    let dir = scratch_dir();
    let path = dir.path().join("fuzz.db");
    let mut committed = Model::new();
    let mut ops = 0;
    'session: while !inp.is_empty() && ops < 48 {
        let db = Db::open(&path, &opts).expect("open our own file read-write");
        let mut tx = db.begin_rw().expect("begin");
        let mut model = committed.clone();
        while !inp.is_empty() && ops < 48 {
            ops += 1;
            match inp.byte() % 10 {
                0 | 1 => {
                    let name = bucket_name(inp.byte());
                    let r = tx.create_bucket(&name).map(|_| ());
                    assert_eq!(r.is_ok(), !model.contains_key(&name), "create {r:?}");
                    model.entry(name).or_default();
                }
                2 => {
                    let name = bucket_name(inp.byte());
                    let r = tx.delete_bucket(&name);
                    assert_eq!(r.is_ok(), model.remove(&name).is_some(), "delete bucket {r:?}");
                }
                3 | 4 => {
                    let name = bucket_name(inp.byte());
                    let (k, v) = (key(inp.byte()), value(inp.byte(), inp.byte(), ps));
                    let b = tx.bucket(&name).expect("bucket lookup");
                    assert_eq!(b.is_some(), model.contains_key(&name));
                    if let (Some(mut b), Some(m)) = (b, model.get_mut(&name)) {
                        b.put(&k, &v).expect("put");
                        m.insert(k, v);
                    }
                }
                5 => {
                    let name = bucket_name(inp.byte());
                    let (from, n, v) = (inp.byte(), inp.byte() % 64, inp.byte());
                    if let (Some(mut b), Some(m)) =
                        (tx.bucket(&name).expect("bucket lookup"), model.get_mut(&name))
                    {
                        for i in 0..n {
                            let (k, v) = (key(from.wrapping_add(i) % 96), value(v, i, ps));
                            b.put(&k, &v).expect("put");
                            m.insert(k, v);
                        }
                    }
                }
                6 => {
                    let name = bucket_name(inp.byte());
                    let k = key(inp.byte());
                    if let (Some(mut b), Some(m)) =
                        (tx.bucket(&name).expect("bucket lookup"), model.get_mut(&name))
                    {
                        b.delete(&k).expect("delete");
                        m.remove(&k);
                    }
                }
                7 => {
                    tx.commit().expect("commit");
                    committed = model.clone();
                    tx = db.begin_rw().expect("begin");
                }
                8 => {
                    tx.rollback();
                    model = committed.clone();
                    tx = db.begin_rw().expect("begin");
                }
                _ => {
                    // Crash during this commit (or, with the high bit
                    // clear, a plain reopen).
                    let (cut, torn_lo, torn_hi) = (inp.byte(), inp.byte(), inp.byte());
                    if cut & 0x80 == 0 {
                        drop(tx);
                        drop(db);
                        assert_eq!(read_model(&path), committed, "reopen");
                        continue 'session;
                    }
                    use mapwise_native::engine::bolt::failpoint;
                    let torn = u16::from_le_bytes([torn_lo, torn_hi]);
                    failpoint::arm(u32::from(cut & 0x7f), usize::from(torn));
                    let r = tx.commit();
                    let fired = failpoint::take();
                    drop(db);
                    // Durable unless the crash came before the new meta
                    // page's header and body (the bytes its checksum
                    // covers) were whole.
                    let durable = match fired {
                        None => {
                            r.expect("commit with no crash");
                            true
                        }
                        Some(f) => {
                            assert!(r.is_err(), "a crashed commit fails: {f:?}");
                            f.meta && f.bytes >= 80
                        }
                    };
                    if durable {
                        committed = model;
                    }
                    assert_eq!(read_model(&path), committed, "after a crash (durable {durable})");
                    continue 'session;
                }
            }
        }
        drop(tx);
    }
    if path.exists() {
        assert_eq!(read_model(&path), committed, "at the end");
    }
}

// ---------------------------------------------------------------------------
// the RRD engine

/// Largest file `rrd_ops` lets `create` write: the target is about the
/// engine's logic, not about filling tmpfs (rrdtool itself would create a
/// file of any size the arguments ask for).
const RRD_OPS_MAX_FILE: u64 = 4 << 20;

/// Target `rrd_ops`: `rrdtool create` with arbitrary options and
/// definitions, then `rrdtool update` with arbitrary arguments, on real
/// files: each must succeed or fail with rrdtool's message, never panic,
/// and an update never changes the file's length. The result goes through
/// [`rrd_file`].
///
/// Input: text, one item a line: `--step`, `--start`, then definitions
/// (`DS:…`, `RRA:…`) up to a line `--`, then update arguments (a line
/// starting `-t ` is the template, `-s` skips past updates).
pub fn rrd_ops(data: &[u8]) {
    use mapwise_native::engine::rrd::{CreateOptions, UpdateOptions, create, update};

    let text = String::from_utf8_lossy(data);
    let mut lines = text.lines();
    let step = lines.next().filter(|s| !s.is_empty()).map(str::to_owned);
    let start = lines.next().filter(|s| !s.is_empty()).map(str::to_owned);
    let mut defs = Vec::new();
    for l in lines.by_ref() {
        if l == "--" {
            break;
        }
        defs.push(l.to_owned());
    }
    let mut uo = UpdateOptions::default();
    let mut args = Vec::new();
    for l in lines.take(64) {
        if let Some(t) = l.strip_prefix("-t ") {
            uo.template = Some(t.to_owned());
        } else if l == "-s" {
            uo.skip_past = true;
        } else {
            args.push(l.to_owned());
        }
    }
    let co = CreateOptions { step, start, no_overwrite: false, seed: Some(1) };
    let dir = scratch_dir();
    let path = dir.path().join("f.rrd");
    let Ok(plan) =
        mapwise_native::engine::rrd::create::plan(&path.display().to_string(), &co, &defs)
    else {
        return;
    };
    if plan.geometry().file_len > RRD_OPS_MAX_FILE {
        return;
    }
    if create(&path, &co, &defs).is_err() {
        return;
    }
    let len = std::fs::metadata(&path).expect("created").len();
    assert_eq!(len, plan.geometry().file_len, "created file length");
    if !args.is_empty() {
        let _ = update(&path, &uo, &args);
        uo.verbose = true;
        if let Ok(out) = update(&path, &uo, &args) {
            let _ = mapwise_native::engine::rrd::update::updatev_text(&out);
        }
    }
    let bytes = std::fs::read(&path).expect("read back");
    assert_eq!(bytes.len() as u64, len, "update changed the length");
    rrd_file(&bytes);
    let mut s = String::new();
    let _ = mapwise_native::engine::rrd::dump_to(
        &path,
        mapwise_native::engine::rrd::IoMode::Fd,
        rrd::dump::DumpHeader::Dtd,
        &mut s,
    );
    let _ = writeln!(s);
}

// ---------------------------------------------------------------------------
// etcd's data model

/// What prost's decoder says of `bytes` as message `M`, against ours:
/// the same acceptance (but for groups, which prost skips and ours
/// refuses) and, when both accept, the same message.
fn same_as_prost<M: mapwise_core::etcd::prost::Message + Default + PartialEq + std::fmt::Debug>(
    bytes: &[u8],
    ours: Result<M, mapwise_core::etcd::EtcdFault>,
) {
    use mapwise_core::etcd::EtcdFault;
    match (ours, M::decode(bytes)) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "ours and prost's decoders differ"),
        (Err(_), Err(_)) => {}
        (Err(EtcdFault::Tag { why, .. }), Ok(_)) if why.starts_with("a group") => {}
        (a, b) => panic!("ours {a:?}, prost {b:?}"),
    }
}

/// Target `etcd_model`: the bytes as each of etcd's records (a revision
/// key, an `mvccpb.KeyValue`, a `leasepb.Lease` with its id key, every
/// `meta` key's value) and as a whole etcd backend db (its buckets,
/// `meta`, every revision and lease).
pub fn etcd_model(data: &[u8]) {
    use mapwise_core::etcd::prost::Message as _;
    use mapwise_core::etcd::{
        CONSISTENT_INDEX, EtcdDb, FINISHED_COMPACT_REV, KeyValueRef, Lease, MetaRecord,
        RevisionKey, SCHEDULED_COMPACT_REV, TERM,
    };
    if let Ok(k) = RevisionKey::parse(data) {
        assert_eq!(&*k.to_bytes(), data, "a revision key encodes back to its bytes");
    }
    let kv = KeyValueRef::decode(data);
    if let Ok(kv) = &kv {
        let again = kv.to_owned().encode_to_vec();
        assert_eq!(KeyValueRef::decode(&again).map(|k| k.to_owned()), Ok(kv.to_owned()));
        if let Ok(k) = RevisionKey::parse(data.get(..17).unwrap_or_default()) {
            let _ = kv.check(&k);
        }
    }
    same_as_prost(data, kv.map(|k| k.to_owned()));
    same_as_prost(data, Lease::decode_value(data));
    if data.len() >= 8 {
        let _ = Lease::decode_record(&data[..8], &data[8..]);
    }
    for key in [CONSISTENT_INDEX, TERM, SCHEDULED_COMPACT_REV, FINISHED_COMPACT_REV] {
        let _ = MetaRecord::decode(key, data);
    }

    let Ok(file) = BoltFile::open(data) else {
        return;
    };
    let Ok(db) = EtcdDb::open(&file) else {
        return;
    };
    let _ = (db.meta(), db.line(), db.cluster_version(), db.missing());
    // A scan yields at most one record per element the file can hold.
    let cap = data.len() / 16 + 1;
    let mut n = 0;
    let _ = db.revisions(|r| -> Result<(), mapwise_core::Error> {
        if let Ok(r) = r {
            assert!(!r.kv.key.is_empty(), "a checked record has a key");
        }
        n += 1;
        assert!(n <= cap, "more records than the file can hold");
        Ok(())
    });
    let mut n = 0;
    let _ = db.leases(|_| -> Result<(), mapwise_core::Error> {
        n += 1;
        assert!(n <= cap, "more leases than the file can hold");
        Ok(())
    });
}

/// A target's harness function.
pub type Target = fn(&[u8]);

/// Every target by name, for the regression replay.
pub const TARGETS: &[(&str, Target)] = &[
    ("bolt_file", bolt_file),
    ("rrd_file", rrd_file),
    ("revlog_index", revlog_index),
    ("detect_layout", detect_layout),
    ("bolt_ops", bolt_ops),
    ("rrd_ops", rrd_ops),
    ("etcd_model", etcd_model),
];
