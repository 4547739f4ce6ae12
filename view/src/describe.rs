//! What the structures in a byte range are, as titled lists of named
//! fields: the inspector's detail pane, `inspector page` and the
//! browser's page panel for formats other than bbolt (whose pages have
//! their own richer decoder, [`mapwise_core::bolt::page_detail`]).
//!
//! Fields are named as the format's own tools name them: `hg debugindex
//! --debug` for revlog entries, `rrd_format.h` and `rrdtool info` for RRD
//! sections. Values are read through `mapwise-core`'s decoders only.

use mapwise_core::PageSource;
use mapwise_core::bolt::{Body, Bytes, Element, Meta, PageDetail};
use mapwise_core::bolt::{BoltFile, PageType};
use mapwise_core::etcd::{KEY, KeyValueRef, LEASE, Lease, META, MetaRecord, RevisionKey};
use mapwise_core::layout::{Format, Kind, Layout};
use mapwise_core::revlog::Index;
use serde::Serialize;

use crate::fmt::{bytes_text, hex, rrd_value};

/// One structure of the file, described for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// What it is, e.g. `rev 17`.
    pub title: String,
    /// Its fields in file order: name and value as text.
    pub fields: Vec<(String, String)>,
}

impl Item {
    fn new(title: impl Into<String>) -> Item {
        Item { title: title.into(), fields: Vec::new() }
    }

    fn field(mut self, name: &str, value: impl ToString) -> Item {
        self.fields.push((name.to_owned(), value.to_string()));
        self
    }
}

/// Most structures described for one range (a 4 KiB page of a revlog
/// index holds 64 entries).
pub const MAX_ITEMS: usize = 256;

/// The structures of `layout` that overlap `[offset, offset + len)` of
/// `src` (`layout` is `src`'s), described: at most [`MAX_ITEMS`], in file
/// order. bbolt files other than etcd's, and pages of an etcd db outside
/// its `key`, `meta` and `lease` buckets, give an empty list (their pages
/// have [`mapwise_core::bolt::page_detail`]); so do unknown formats.
///
/// # Errors
/// When the file's header cannot be decoded (a revlog index's first entry,
/// an RRD's header), the decoder's message as text. A structure that
/// cannot be decoded on its own is an item with a `cannot decode` field.
pub fn describe<S: PageSource + ?Sized>(
    layout: &Layout,
    src: &S,
    offset: u64,
    len: u64,
) -> Result<Vec<Item>, String> {
    match layout.format {
        Format::Revlog => revlog(layout, src, offset, len),
        Format::Rrd => rrd(layout, src, offset, len),
        Format::Bolt => etcd(layout, src, offset, len),
        _ => Ok(Vec::new()),
    }
}

/// Revlog index entries and inline data chunks in the range: each entry's
/// fields as `hg debugindex --debug` names them.
fn revlog<S: PageSource + ?Sized>(
    layout: &Layout,
    src: &S,
    offset: u64,
    len: u64,
) -> Result<Vec<Item>, String> {
    let index = Index::open(src).map_err(|e| e.to_string())?;
    let mut items = Vec::new();
    for r in layout.regions_in(offset, len).take(MAX_ITEMS) {
        let rev = i32::try_from(r.id).unwrap_or(i32::MAX);
        let item = match r.kind {
            Kind::Entry => match index.entry(rev) {
                Ok(e) => {
                    let (p1, p2) = index.parent_revs(&e);
                    Item::new(format!("rev {rev}"))
                        .field("entry at", format!("{} ({} bytes)", r.offset, r.len))
                        .field("data offset", e.data_offset())
                        .field("flags", format!("{:#06x}", e.flags()))
                        .field("compressed", format!("{} bytes", e.compressed_len()))
                        .field("uncompressed", format!("{} bytes", e.uncompressed_len()))
                        .field("delta base", e.base_rev())
                        .field("linkrev", e.link_rev())
                        .field("p1", p1)
                        .field("p2", p2)
                        .field("nodeid", hex(e.node()))
                }
                Err(e) => Item::new(format!("rev {rev}")).field("cannot decode", e),
            },
            Kind::Chunk => {
                // The first byte says how hg stored it: 'u' plain, 'x'
                // (0x78) zlib, '(' zstd, '\0' raw; `mercurial/revlog.py`.
                let first = src.read_at(r.offset, 1).ok().and_then(|b| b.first().copied());
                let how = match first {
                    Some(b'u') => "uncompressed ('u')",
                    Some(b'x') => "zlib",
                    Some(b'(') => "zstd",
                    Some(0) => "raw (starts with NUL)",
                    None => "empty",
                    Some(_) => "unknown marker",
                };
                Item::new(format!("rev {rev} data (inline)"))
                    .field("at", r.offset)
                    .field("length", format!("{} bytes", r.len))
                    .field("stored", how)
            }
            other => Item::new(other.name()).field("bytes", format!("{}..{}", r.offset, r.end())),
        };
        items.push(item);
    }
    Ok(items)
}

/// The bucket of an etcd backend db whose records a page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EtcdBucket {
    Key,
    Meta,
    Lease,
}

/// `true` when `layout` is an etcd backend db: it has the top-level
/// buckets `key` and `meta`, the rule of [`mapwise_core::etcd::EtcdDb::open`].
#[must_use]
pub fn is_etcd(layout: &Layout) -> bool {
    top_bucket(layout, KEY).is_some() && top_bucket(layout, META).is_some()
}

/// Index of the top-level bucket `name` in `layout.groups`.
fn top_bucket(layout: &Layout, name: &str) -> Option<u32> {
    let i = layout.groups.iter().position(|g| g.level == 1 && g.key == name.as_bytes())?;
    u32::try_from(i).ok()
}

/// Most characters of an etcd key or value shown.
const ETCD_TEXT: usize = 200;

/// The records on the `key`, `meta` and `lease` pages of an etcd db in
/// the range, decoded by `mapwise-core`'s etcd model: a branch element as
/// its key (a revision in `key`) and child page; a `key` leaf element
/// as its revision (`rev MAIN_SUB`, `t` for a tombstone) and its
/// `mvccpb.KeyValue` fields as `etcdctl get -w json` names them; a `meta`
/// element by its key; a `lease` element as `leasepb.Lease`'s fields. The
/// page is read as it is now: one that no longer is a leaf (the file
/// changed since its layout was read) gives one item saying so.
fn etcd<S: PageSource + ?Sized>(
    layout: &Layout,
    src: &S,
    offset: u64,
    len: u64,
) -> Result<Vec<Item>, String> {
    if !is_etcd(layout) {
        return Ok(Vec::new());
    }
    let buckets = [(KEY, EtcdBucket::Key), (META, EtcdBucket::Meta), (LEASE, EtcdBucket::Lease)]
        .map(|(name, b)| (top_bucket(layout, name), b));
    let mut file = None;
    let mut items = Vec::new();
    let mut heads = Vec::new();
    for r in layout.regions_in(offset, len) {
        let Some(bucket) = buckets.iter().find(|(g, _)| r.group.is_some() && *g == r.group) else {
            continue;
        };
        if !matches!(r.kind, Kind::Branch | Kind::Leaf | Kind::Overflow) || heads.contains(&r.head)
        {
            continue;
        }
        heads.push(r.head);
        if file.is_none() {
            file = Some(BoltFile::open(src).map_err(|e| e.to_string())?);
        }
        let Some(file) = file.as_ref() else { continue };
        let page = match file.read_page(r.head) {
            Ok(p) => p,
            Err(e) => {
                items.push(Item::new(format!("page {}", r.head)).field("cannot read", e));
                continue;
            }
        };
        let now = page.header.page_type();
        let expected = if r.kind == Kind::Branch { PageType::Branch } else { PageType::Leaf };
        if now != expected {
            let why = format!("a {} page: the file changed since it was read", now.name());
            items.push(Item::new(format!("page {}", r.head)).field("now", why));
            continue;
        }
        let bytes = page.bytes();
        for i in 0..page.count() {
            if items.len() >= MAX_ITEMS {
                return Ok(items);
            }
            let item = if now == PageType::Branch {
                page.branch(i).map(|e| {
                    let k = bytes.get(e.key).unwrap_or_default();
                    branch_item(bucket.1, k, e.child)
                })
            } else {
                page.leaf(i).map(|e| {
                    let k = bytes.get(e.key).unwrap_or_default();
                    let v = bytes.get(e.value).unwrap_or_default();
                    etcd_record(bucket.1, k, v)
                })
            };
            items.push(
                item.unwrap_or_else(|e| {
                    Item::new(format!("element {i}")).field("cannot decode", e)
                }),
            );
        }
    }
    Ok(items)
}

/// A branch element, `KEY → page CHILD`: in the `key` bucket the key is
/// a revision (`rev 24_0`).
fn branch_item(bucket: EtcdBucket, k: &[u8], child: u64) -> Item {
    let key = match (bucket, RevisionKey::parse(k)) {
        (EtcdBucket::Key, Ok(rev)) => format!("rev {rev}"),
        _ => bytes_text(k, k.len(), ETCD_TEXT),
    };
    Item::new(format!("{key} → page {child}"))
}

/// One etcd record described.
fn etcd_record(bucket: EtcdBucket, k: &[u8], v: &[u8]) -> Item {
    let text = |b: &[u8]| bytes_text(b, b.len(), ETCD_TEXT);
    match bucket {
        EtcdBucket::Key => {
            let rev = match RevisionKey::parse(k) {
                Ok(rev) => rev,
                Err(e) => return Item::new(text(k)).field("cannot decode", e),
            };
            let title = if rev.tombstone {
                format!("rev {} (tombstone)", rev.revision)
            } else {
                format!("rev {}", rev.revision)
            };
            match KeyValueRef::decode(v) {
                Ok(kv) => {
                    let item = Item::new(title)
                        .field("key", text(kv.key))
                        .field("create_revision", kv.create_revision)
                        .field("mod_revision", kv.mod_revision)
                        .field("version", kv.version)
                        .field("lease", lease_text(kv.lease))
                        .field("value", format!("{} ({} bytes)", text(kv.value), kv.value.len()));
                    match kv.check(&rev) {
                        Ok(()) => item,
                        Err(e) => item.field("fault", e),
                    }
                }
                Err(e) => Item::new(title).field("cannot decode", e),
            }
        }
        EtcdBucket::Meta => match MetaRecord::decode(k, v) {
            Ok(r) => Item::new(text(k)).field("value", meta_text(&r, v)),
            Err(e) => Item::new(text(k)).field("cannot decode", e),
        },
        EtcdBucket::Lease => match Lease::decode_record(k, v) {
            Ok(l) => Item::new(format!("lease {}", lease_text(l.id)))
                .field("TTL", format!("{} s", l.ttl))
                .field("RemainingTTL", format!("{} s", l.remaining_ttl)),
            Err(e) => Item::new(text(k)).field("cannot decode", e),
        },
    }
}

/// A lease id as etcdctl prints it in `lease list` (hex), 0 as `none`.
fn lease_text(id: i64) -> String {
    if id == 0 { "none".into() } else { format!("{id:x} ({id})") }
}

/// A `meta` record's value as text.
fn meta_text(r: &MetaRecord<'_>, raw: &[u8]) -> String {
    let text = |b: &[u8]| bytes_text(b, b.len(), ETCD_TEXT);
    match r {
        MetaRecord::ConsistentIndex(n) | MetaRecord::Term(n) => n.to_string(),
        MetaRecord::ScheduledCompactRev(rev) | MetaRecord::FinishedCompactRev(rev) => {
            format!("revision {}", rev.main)
        }
        MetaRecord::ConfState(b) | MetaRecord::StorageVersion(b) => text(b),
        MetaRecord::Other(..) => text(raw),
    }
}

/// Rows of an archive shown per region (the rest are counted).
const ROWS_SHOWN: u64 = 8;

/// The values of one row, `ds_cnt` f64s at `off`.
fn row_values<S: PageSource + ?Sized>(src: &S, off: u64, ds_cnt: usize) -> String {
    (0..ds_cnt as u64)
        .map(|d| {
            src.read_at(off.saturating_add(d * 8), 8)
                .ok()
                .and_then(|b| <[u8; 8]>::try_from(&b[..]).ok())
                .map_or_else(|| "?".into(), |b| rrd_value(f64::from_le_bytes(b)))
        })
        .collect::<Vec<_>>()
        .join("  ")
}

/// RRD header sections, preparation state and archive rows in the range,
/// named as `rrd_format.h` and `rrdtool info` name them.
fn rrd<S: PageSource + ?Sized>(
    layout: &Layout,
    src: &S,
    offset: u64,
    len: u64,
) -> Result<Vec<Item>, String> {
    use mapwise_core::rrd::Header;
    let h = Header::parse_header(src).map_err(|e| e.to_string())?;
    let ds_cnt = h.ds_cnt();
    let row_len = (ds_cnt as u64).saturating_mul(8);
    let mut items = Vec::new();
    for r in layout.regions_in(offset, len) {
        if items.len() >= MAX_ITEMS {
            break;
        }
        match (r.kind, r.id) {
            (Kind::Header, 0) => items.push(
                Item::new("stat_head")
                    .field("version", h.version_str())
                    .field("step", format!("{} s", h.pdp_step()))
                    .field("ds_cnt", ds_cnt)
                    .field("rra_cnt", h.rra_cnt()),
            ),
            (Kind::Header, 1) => {
                for (i, d) in h.dss().iter().enumerate() {
                    items.push(
                        Item::new(format!("ds[{}]", d.name))
                            .field("type", d.kind.name())
                            .field("minimal_heartbeat", format!("{} s", h.heartbeat(i)))
                            .field("min", rrd_value(h.ds_min(i)))
                            .field("max", rrd_value(h.ds_max(i))),
                    );
                }
            }
            (Kind::Header, 2) => {
                for (i, a) in h.rras().iter().enumerate() {
                    items.push(
                        Item::new(format!("rra[{i}]"))
                            .field("cf", a.cf.name())
                            .field("rows", a.rows)
                            .field("pdp_per_row", a.pdp_cnt)
                            .field("values at", a.start),
                    );
                }
            }
            (Kind::Prep, 3) => items.push(
                Item::new("live_head")
                    .field("last_update", h.last_up())
                    .field("last_update usec", h.last_up_usec()),
            ),
            (Kind::Prep, 4) => {
                for (i, d) in h.dss().iter().enumerate() {
                    items.push(
                        Item::new(format!("pdp_prep[{}]", d.name))
                            .field("last_ds", String::from_utf8_lossy(h.last_ds(i)))
                            .field("value", rrd_value(h.pdp_value(i)))
                            .field("unknown_sec", h.pdp_unknown_sec(i)),
                    );
                }
            }
            (Kind::Prep, 5) => items.push(
                Item::new("cdp_prep")
                    .field(
                        "structures",
                        format!("{} (rra × ds)", h.rra_cnt().saturating_mul(ds_cnt)),
                    )
                    .field("bytes", r.len),
            ),
            (Kind::Prep, 6) => {
                let mut it = Item::new("rra_ptr");
                for i in 0..h.rra_cnt() {
                    it = it.field(&format!("rra[{i}].cur_row"), h.cur_row(i));
                }
                items.push(it);
            }
            (Kind::Rows | Kind::CurRow, first_row) if row_len > 0 => {
                let rra = r.group.unwrap_or(0) as usize;
                let cf = h.rras().get(rra).map_or("?", |a| a.cf.name());
                // The rows of this region inside the range asked for.
                let lo = offset.max(r.offset);
                let hi = offset.saturating_add(len).min(r.end());
                let a = first_row.saturating_add((lo - r.offset) / row_len);
                let b = first_row.saturating_add(hi.saturating_sub(r.offset).div_ceil(row_len));
                let title = if r.kind == Kind::CurRow {
                    format!(
                        "rra[{rra}] {cf} cur_row {first_row} (last written; the next update writes the row after)"
                    )
                } else {
                    format!("rra[{rra}] {cf} rows {a}..{}", b.saturating_sub(1))
                };
                let mut it = Item::new(title);
                for row in a..b.min(a.saturating_add(ROWS_SHOWN)) {
                    let off = r.offset.saturating_add((row - first_row).saturating_mul(row_len));
                    it = it.field(&format!("row {row}"), row_values(src, off, ds_cnt));
                }
                if b > a.saturating_add(ROWS_SHOWN) {
                    it = it.field("…", format!("{} more rows", b - a - ROWS_SHOWN));
                }
                items.push(it);
            }
            (other, _) => items
                .push(Item::new(other.name()).field("bytes", format!("{}..{}", r.offset, r.end()))),
        }
    }
    Ok(items)
}

/// The fields of a bbolt meta page as both front ends name them, in
/// file order (`db.go`'s `meta` struct): magic, version, page size,
/// flags, root (with its sequence), freelist, hwm, txid, and the checksum
/// with its verdict (`fault`: why the page does not validate).
#[must_use]
pub fn meta_fields(m: &Meta, fault: Option<impl std::fmt::Display>) -> Vec<(String, String)> {
    let f = |n: &str, v: String| (n.to_owned(), v);
    vec![
        f("magic", format!("{:#010x}", m.magic)),
        f("version", m.version.to_string()),
        f("page size", m.page_size.to_string()),
        f("flags", format!("{:#x}", m.flags)),
        f("root", format!("{} (sequence {})", m.root, m.root_sequence)),
        f(
            "freelist",
            if m.has_freelist() { m.freelist.to_string() } else { "none (NoFreelistSync)".into() },
        ),
        f("hwm", format!("{} pages", m.hwm)),
        f("txid", m.txid.to_string()),
        f(
            "checksum",
            match fault {
                None => format!("{:016x} ok", m.checksum),
                Some(fault) => format!("{:016x} INVALID: {fault}", m.checksum),
            },
        ),
    ]
}

/// A key or value preview as shown.
#[must_use]
pub fn preview(b: &Bytes, max: usize) -> String {
    crate::fmt::bytes_text(&b.prefix, b.len, max)
}

/// A key range of an etcd db's `key` bucket as revisions, `rev 24_0..45_0`
/// (`t` marks a tombstone); `None` unless both keys are revision keys
/// ([`RevisionKey::parse`]).
#[must_use]
pub fn revision_range(first: &Bytes, last: &Bytes) -> Option<String> {
    let parse = |b: &Bytes| RevisionKey::parse(&b.prefix).ok().filter(|_| b.is_complete());
    Some(format!("rev {}..{}", parse(first)?, parse(last)?))
}

/// A key range `first..last` in at most `max` characters; the last key's
/// leading part shared with the first is left out (at a space for hex,
/// marked `…` for text), so what differs stays visible.
#[must_use]
pub fn range_text(first: &Bytes, last: &Bytes, max: usize) -> String {
    let a = preview(first, usize::MAX);
    let b = preview(last, usize::MAX);
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let tail = if a.starts_with("0x") {
        // Cut after the last space inside the shared part.
        let cut = b.chars().take(common).collect::<String>().rfind(' ').map_or(0, |i| i + 1);
        b.get(cut..).unwrap_or(&b).to_string()
    } else if common > 4 {
        let rest: String = b.chars().skip(common.saturating_sub(1)).collect();
        format!("…{rest}")
    } else {
        b
    };
    let s = format!("{a}..{tail}");
    if s.chars().count() > max {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    } else {
        s
    }
}

/// First and last key of a decoded branch or leaf page, if it has any.
#[must_use]
pub fn key_range(d: &PageDetail) -> Option<(&Bytes, &Bytes)> {
    let Body::Elements(els) = &d.body else {
        return None;
    };
    let first = els.iter().find_map(element_key)?;
    let last = els.iter().rev().find_map(element_key)?;
    Some((first, last))
}

fn element_key(e: &Element) -> Option<&Bytes> {
    match e {
        Element::Branch { key, .. } | Element::Leaf { key, .. } => Some(key),
        Element::Bad(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(v: &[u8]) -> Bytes {
        Bytes { len: v.len(), prefix: v.to_vec() }
    }

    #[test]
    fn ranges_drop_the_shared_start() {
        let k = |rev: u8| {
            let mut v = vec![0u8; 17];
            v[7] = rev;
            v[8] = b'_';
            v
        };
        assert_eq!(range_text(&b(&k(0x18)), &b(&k(0x2d)), 80), "0x00*7 185f 00*8..2d5f 00*8");
        assert_eq!(range_text(&b(&k(0x18)), &b(&k(0x2d)), 20), "0x00*7 185f 00*8..2…");
        assert_eq!(
            range_text(&b(b"/registry/pods/a"), &b(b"/registry/pods/zz"), 80),
            "\"/registry/pods/a\"..…/zz\""
        );
        assert_eq!(range_text(&b(b"a"), &b(b"b"), 80), "\"a\"..\"b\"");
    }

    #[test]
    fn revlog_entries_as_hg_names_them() {
        let bytes = mapwise_testkit::read_testdata("revlog/00changelog.i");
        let src = bytes.as_slice();
        let l = mapwise_core::revlog::layout(&src, mapwise_core::revlog::LayoutOptions::default());
        let items = describe(&l.layout, &src, 0, 4096).expect("describe");
        let rev0 = items.iter().find(|i| i.title == "rev 0").expect("rev 0");
        assert_eq!(rev0.fields[0].0, "entry at");
        assert!(rev0.fields.iter().any(|(n, v)| n == "nodeid" && v.len() == 40));
        assert!(items.len() <= MAX_ITEMS);
    }

    #[test]
    fn rrd_sections_and_rows() {
        let bytes = mapwise_testkit::read_testdata("rrd/gauge.rrd");
        let src = bytes.as_slice();
        let l = mapwise_core::rrd::layout(&src, 4096);
        let items = describe(&l.layout, &src, 0, 4096).expect("describe");
        assert_eq!(items[0].title, "stat_head");
        assert!(items[0].fields.contains(&("step".into(), "300 s".into())));
        let len = l.layout.source_len;
        let all = describe(&l.layout, &src, 0, len).expect("describe");
        assert!(all.iter().any(|i| i.title.contains("cur_row")), "{all:?}");
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        let mut bytes = mapwise_testkit::read_testdata("rrd/gauge.rrd");
        let src = bytes.as_slice();
        let l = mapwise_core::rrd::layout(&src, 4096).layout;
        bytes.truncate(10);
        let short = bytes.as_slice();
        assert!(describe(&l, &short, 0, u64::MAX).is_err());
        assert!(describe(&l, &short, u64::MAX, u64::MAX).is_err());
    }
}
