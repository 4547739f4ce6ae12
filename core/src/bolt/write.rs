//! Serialising bbolt pages: element arrays (branch and leaf pages,
//! inline bucket images), meta pages with their checksum, freelist pages
//! in both count encodings.
//!
//! The layouts are those the read side parses (docs/format/bolt.md §2–§8);
//! the writer's rules follow bbolt:
//! * element arrays — `internal/common/inode.go`, `WriteInodeToPage`
//!   (1.3.6: `node.go`, `node.write`): every element header first, then
//!   each element's key (and value) in element order, packed, with `pos`
//!   measured from the element's own header;
//! * meta pages — `internal/common/meta.go`, `Meta.Write`: the page id is
//!   `txid % 2`, the checksum FNV-1a 64 of the 56 bytes before it;
//! * freelist pages — `internal/freelist/shared.go`, `Write`: ids sorted,
//!   the count in the header below 0xFFFF, else 0xFFFF in the header and
//!   the count in the first 8-byte slot.
//!
//! Every function writes into a caller-provided buffer and returns an
//! error instead of panicking when the buffer is too small or a field
//! cannot hold a value.

use core::fmt;

use super::meta::{META_END, Meta};
use super::page::{
    BRANCH_PAGE, BUCKET_HEADER_SIZE, ELEMENT_SIZE, FREELIST_PAGE, LEAF_PAGE, META_PAGE,
    PAGE_HEADER_SIZE, PageHeader,
};

/// Why a page could not be serialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The buffer holds `have` bytes, the page needs `need`.
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// More elements than a page's 16-bit `count` can hold (bbolt panics
    /// with "inode overflow" at 0xFFFF, `node.write`).
    TooManyElements(usize),
    /// A key, value or offset does not fit its 32-bit field.
    FieldOverflow(&'static str),
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WriteError::BufferTooSmall { need, have } => {
                write!(f, "page buffer of {have} bytes, {need} needed")
            }
            WriteError::TooManyElements(n) => {
                write!(f, "{n} elements do not fit one page (at most 65534)")
            }
            WriteError::FieldOverflow(field) => {
                write!(f, "field {field} does not fit in 32 bits")
            }
        }
    }
}

impl core::error::Error for WriteError {}

/// One element to write: a leaf key/value (with its flags) or a branch
/// key with its child page id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementData<'a> {
    /// Leaf element flags (`BUCKET_LEAF_FLAG` for a bucket); ignored for
    /// branches.
    pub flags: u32,
    /// The key.
    pub key: &'a [u8],
    /// The value (leaves only; empty for branches).
    pub value: &'a [u8],
    /// The child page (branches only).
    pub child: u64,
}

/// Bytes a node occupies once written, as bbolt's `node.size` counts
/// them: the 16-byte header, then 16 bytes per element plus its key (and
/// value, for a leaf).
#[must_use]
pub fn node_size<'a>(leaf: bool, items: impl Iterator<Item = ElementData<'a>>) -> usize {
    items.fold(PAGE_HEADER_SIZE, |acc, e| {
        let data = if leaf { e.key.len().saturating_add(e.value.len()) } else { e.key.len() };
        acc.saturating_add(ELEMENT_SIZE).saturating_add(data)
    })
}

fn put(buf: &mut [u8], off: usize, bytes: &[u8]) -> Result<(), WriteError> {
    let have = buf.len();
    let end = off
        .checked_add(bytes.len())
        .ok_or(WriteError::BufferTooSmall { need: usize::MAX, have })?;
    buf.get_mut(off..end)
        .ok_or(WriteError::BufferTooSmall { need: end, have })?
        .copy_from_slice(bytes);
    Ok(())
}

fn u32_field(v: usize, field: &'static str) -> Result<u32, WriteError> {
    u32::try_from(v).map_err(|_| WriteError::FieldOverflow(field))
}

/// Write a page header (`id`, `flags`, `count`, `overflow`) at the start
/// of `buf`.
///
/// # Errors
/// [`WriteError::BufferTooSmall`] when `buf` is shorter than 16 bytes.
pub fn write_header(buf: &mut [u8], h: &PageHeader) -> Result<(), WriteError> {
    put(buf, 0, &h.id.to_le_bytes())?;
    put(buf, 8, &h.flags.to_le_bytes())?;
    put(buf, 10, &h.count.to_le_bytes())?;
    put(buf, 12, &h.overflow.to_le_bytes())
}

/// Write a branch or leaf page image into `buf`: header (with `id` and
/// `overflow` as given, `flags` branch or leaf, `count` = number of
/// items), the element headers, then the keys (and values) packed in
/// element order. The rest of `buf` is left as it is (callers pass zeroed
/// buffers, as bbolt does). Returns the bytes used.
///
/// # Errors
/// [`WriteError::BufferTooSmall`], [`WriteError::TooManyElements`]
/// (65535 or more items), [`WriteError::FieldOverflow`] (a key, value or
/// `pos` beyond 32 bits).
pub fn write_node<'a, I>(
    buf: &mut [u8],
    id: u64,
    overflow: u32,
    leaf: bool,
    items: I,
) -> Result<usize, WriteError>
where
    I: ExactSizeIterator<Item = ElementData<'a>>,
{
    let n = items.len();
    let count =
        u16::try_from(n).ok().filter(|&c| c < 0xFFFF).ok_or(WriteError::TooManyElements(n))?;
    write_header(
        buf,
        &PageHeader { id, flags: if leaf { LEAF_PAGE } else { BRANCH_PAGE }, count, overflow },
    )?;
    let mut data = PAGE_HEADER_SIZE + n * ELEMENT_SIZE;
    for (i, e) in items.enumerate() {
        let elem = PAGE_HEADER_SIZE + i * ELEMENT_SIZE;
        let pos = u32_field(data - elem, "pos")?;
        let ksize = u32_field(e.key.len(), "ksize")?;
        if leaf {
            let vsize = u32_field(e.value.len(), "vsize")?;
            put(buf, elem, &e.flags.to_le_bytes())?;
            put(buf, elem + 4, &pos.to_le_bytes())?;
            put(buf, elem + 8, &ksize.to_le_bytes())?;
            put(buf, elem + 12, &vsize.to_le_bytes())?;
        } else {
            put(buf, elem, &pos.to_le_bytes())?;
            put(buf, elem + 4, &ksize.to_le_bytes())?;
            put(buf, elem + 8, &e.child.to_le_bytes())?;
        }
        put(buf, data, e.key)?;
        data += e.key.len();
        if leaf {
            put(buf, data, e.value)?;
            data += e.value.len();
        }
    }
    Ok(data)
}

/// A bucket value's 16-byte header (`InBucket`: `root`, `sequence`).
#[must_use]
pub fn bucket_header(root: u64, sequence: u64) -> [u8; BUCKET_HEADER_SIZE] {
    let mut b = [0u8; BUCKET_HEADER_SIZE];
    b[..8].copy_from_slice(&root.to_le_bytes());
    b[8..].copy_from_slice(&sequence.to_le_bytes());
    b
}

/// The value bbolt stores for a new, empty bucket (`Bucket.CreateBucket`
/// writes an inline bucket with no entries): header `root = 0`,
/// `sequence = 0`, then an empty leaf page image (`id` 0, `count` 0).
#[must_use]
pub fn empty_inline_bucket() -> [u8; BUCKET_HEADER_SIZE + PAGE_HEADER_SIZE] {
    let mut b = [0u8; BUCKET_HEADER_SIZE + PAGE_HEADER_SIZE];
    b[BUCKET_HEADER_SIZE + 8..BUCKET_HEADER_SIZE + 10].copy_from_slice(&LEAF_PAGE.to_le_bytes());
    b
}

impl Meta {
    /// A meta for a new file (bbolt `DB.init`): meta page `index` holds
    /// txid `index`, root 3, freelist 2, high-water mark 4.
    #[must_use]
    pub fn new_file(page_size: u32, index: u8) -> Meta {
        let mut m = Meta {
            index,
            header_id: u64::from(index),
            header_flags: META_PAGE,
            magic: super::meta::MAGIC,
            version: super::meta::VERSION,
            page_size,
            flags: 0,
            root: 3,
            root_sequence: 0,
            freelist: 2,
            hwm: 4,
            txid: u64::from(index),
            checksum: 0,
        };
        m.checksum = m.computed_checksum();
        m
    }

    /// Write this meta as a meta page into `buf` (at least 80 bytes; the
    /// rest is left as it is): header `id = txid % 2`, `flags` 0x04, the
    /// fields, and a freshly computed checksum (bbolt `Meta.Write`).
    /// Returns the page id written (0 or 1).
    ///
    /// # Errors
    /// [`WriteError::BufferTooSmall`] when `buf` is shorter than 80 bytes.
    pub fn write_page(&self, buf: &mut [u8]) -> Result<u64, WriteError> {
        if buf.len() < META_END {
            return Err(WriteError::BufferTooSmall { need: META_END, have: buf.len() });
        }
        let id = self.txid % 2;
        write_header(buf, &PageHeader { id, flags: META_PAGE, count: 0, overflow: 0 })?;
        let body = self.checksummed_bytes();
        put(buf, PAGE_HEADER_SIZE, &body)?;
        put(buf, PAGE_HEADER_SIZE + body.len(), &super::meta::fnv1a64(&body).to_le_bytes())?;
        Ok(id)
    }
}

/// Bytes a freelist page with `n` ids needs (bbolt `freelist.size`):
/// header, the count slot when `n >= 0xFFFF`, 8 bytes per id.
#[must_use]
pub fn freelist_size(n: usize) -> usize {
    let slots = if n >= 0xFFFF { n.saturating_add(1) } else { n };
    PAGE_HEADER_SIZE.saturating_add(slots.saturating_mul(8))
}

/// Write a freelist page run into `buf`: header (`id`, `overflow` as
/// given, `flags` 0x10), then the ids as given (callers pass them sorted)
/// in the short form (count in the header) below 0xFFFF ids, else the
/// long form (header count 0xFFFF, the count in the first slot).
///
/// # Errors
/// [`WriteError::BufferTooSmall`] when the ids do not fit in `buf`.
pub fn write_freelist<I>(buf: &mut [u8], id: u64, overflow: u32, ids: I) -> Result<(), WriteError>
where
    I: ExactSizeIterator<Item = u64>,
{
    let n = ids.len();
    let need = freelist_size(n);
    if need > buf.len() {
        return Err(WriteError::BufferTooSmall { need, have: buf.len() });
    }
    let (count, mut off) = if n >= 0xFFFF {
        put(buf, PAGE_HEADER_SIZE, &(n as u64).to_le_bytes())?;
        (0xFFFF, PAGE_HEADER_SIZE + 8)
    } else {
        // n < 0xFFFF here.
        (u16::try_from(n).unwrap_or(0xFFFF), PAGE_HEADER_SIZE)
    };
    write_header(buf, &PageHeader { id, flags: FREELIST_PAGE, count, overflow })?;
    for pgid in ids {
        put(buf, off, &pgid.to_le_bytes())?;
        off += 8;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bolt::{FreelistIds, Page};
    use crate::error::At;
    use alloc::borrow::Cow;
    use alloc::vec;
    use alloc::vec::Vec;

    fn leaf(k: &'static [u8], v: &'static [u8]) -> ElementData<'static> {
        ElementData { flags: 0, key: k, value: v, child: 0 }
    }

    #[test]
    fn leaf_round_trip() {
        let items = [leaf(b"a", b"1"), leaf(b"bb", b""), leaf(b"c", b"333")];
        let size = node_size(true, items.iter().copied());
        assert_eq!(size, 16 + 3 * 16 + 1 + 1 + 2 + 1 + 3);
        let mut buf = vec![0u8; 4096];
        let used = write_node(&mut buf, 7, 0, true, items.iter().copied()).unwrap();
        assert_eq!(used, size);
        let p = Page::new(At::Page(7), 7, Cow::Borrowed(&buf)).unwrap();
        assert_eq!(p.header.id, 7);
        assert_eq!(p.count(), 3);
        for (i, it) in items.iter().enumerate() {
            let e = p.leaf(i).unwrap();
            assert_eq!(&buf[e.key.clone()], it.key);
            assert_eq!(&buf[e.value.clone()], it.value);
        }
        assert_eq!(p.used_bytes(), size as u64);
    }

    #[test]
    fn branch_round_trip_and_short_buffer() {
        let items = [
            ElementData { flags: 0, key: b"k1", value: b"", child: 9 },
            ElementData { flags: 0, key: b"k2", value: b"", child: 11 },
        ];
        let mut buf = vec![0u8; 64];
        write_node(&mut buf, 5, 0, false, items.iter().copied()).unwrap();
        let p = Page::new(At::Page(5), 5, Cow::Borrowed(&buf)).unwrap();
        assert_eq!(p.branch(1).unwrap().child, 11);
        let mut small = vec![0u8; 40];
        assert!(matches!(
            write_node(&mut small, 5, 0, false, items.iter().copied()),
            Err(WriteError::BufferTooSmall { .. })
        ));
    }

    #[test]
    fn meta_page_validates() {
        let mut m = Meta::new_file(4096, 1);
        m.txid = 7;
        m.root = 9;
        let mut buf = vec![0u8; 4096];
        assert_eq!(m.write_page(&mut buf).unwrap(), 1);
        let back = Meta::parse(&buf, 1).unwrap();
        back.validate().unwrap();
        assert_eq!(back.root, 9);
        assert_eq!(back.header_id, 1);
    }

    #[test]
    fn freelist_both_encodings() {
        let ids: Vec<u64> = (2..70_000).collect();
        let need = freelist_size(ids.len());
        assert_eq!(need, 16 + 8 * (ids.len() + 1));
        let mut buf = vec![0u8; need.div_ceil(1024) * 1024];
        write_freelist(&mut buf, 4, 0, ids.iter().copied()).unwrap();
        let p = Page::new(At::Page(4), 4, Cow::Borrowed(&buf)).unwrap();
        let f = FreelistIds::parse(&p).unwrap();
        assert_eq!(f.encoding, crate::bolt::CountEncoding::FirstSlot);
        assert!(f.iter().eq(ids.iter().copied()));

        let few = [3u64, 5, 6];
        let mut buf = vec![0u8; 1024];
        write_freelist(&mut buf, 2, 0, few.iter().copied()).unwrap();
        let p = Page::new(At::Page(2), 2, Cow::Borrowed(&buf)).unwrap();
        let f = FreelistIds::parse(&p).unwrap();
        assert_eq!(f.encoding, crate::bolt::CountEncoding::Header);
        assert!(f.iter().eq(few.iter().copied()));
    }

    #[test]
    fn empty_bucket_value_is_an_empty_inline_leaf() {
        let v = empty_inline_bucket();
        let p = Page::new(At::Page(0), 0, Cow::Borrowed(&v[16..])).unwrap();
        assert_eq!(p.header.flags, LEAF_PAGE);
        assert_eq!(p.count(), 0);
    }
}
