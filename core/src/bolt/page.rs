//! bbolt pages: the 16-byte header and the branch/leaf element arrays.
//!
//! Facts from bbolt `internal/common/page.go` (`Page`, `branchPageElement`,
//! `leafPageElement`) and `internal/common/bucket.go` (`InBucket`): every
//! page starts with `id u64 | flags u16 | count u16 | overflow u32`;
//! element arrays follow at byte 16, 16 bytes per element; an element's
//! `pos` is measured from the start of that element's own header.
//! All integers are little-endian here (bbolt writes host order; every
//! mainstream host is little-endian).

use alloc::borrow::Cow;
use core::ops::Range;

use crate::error::{At, Error, Result};
use crate::source::sub_cow;

/// Bytes of the page header (`id`, `flags`, `count`, `overflow`).
pub const PAGE_HEADER_SIZE: usize = 16;
/// Bytes of one branch or leaf element header.
pub const ELEMENT_SIZE: usize = 16;
/// Bytes of a bucket value's header (`root u64 | sequence u64`).
pub const BUCKET_HEADER_SIZE: usize = 16;
/// `flags` of a branch page.
pub const BRANCH_PAGE: u16 = 0x01;
/// `flags` of a leaf page.
pub const LEAF_PAGE: u16 = 0x02;
/// `flags` of a meta page.
pub const META_PAGE: u16 = 0x04;
/// `flags` of a freelist page.
pub const FREELIST_PAGE: u16 = 0x10;
/// Leaf element flag marking a bucket entry (`bucketLeafFlag`).
pub const BUCKET_LEAF_FLAG: u32 = 0x01;
/// Longest key bbolt accepts (`MaxKeySize`), in bytes.
pub const MAX_KEY_SIZE: usize = 32768;

/// Little-endian integer readers that never panic: `None` past the end.
pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    let s = b.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(s))
}

pub(crate) fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let s: [u8; 8] = b.get(off..off.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(s))
}

/// The type of a page, from its `flags` field. bbolt ≥ 1.3.7 requires
/// exactly one of the four values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageType {
    /// `0x01`
    Branch,
    /// `0x02`
    Leaf,
    /// `0x04`
    Meta,
    /// `0x10`
    Freelist,
    /// Anything else (the raw flags).
    Unknown(u16),
}

impl PageType {
    /// Type for a raw `flags` value.
    #[must_use]
    pub fn from_flags(flags: u16) -> PageType {
        match flags {
            BRANCH_PAGE => PageType::Branch,
            LEAF_PAGE => PageType::Leaf,
            META_PAGE => PageType::Meta,
            FREELIST_PAGE => PageType::Freelist,
            other => PageType::Unknown(other),
        }
    }

    /// Name as `bbolt pages` prints it (`unknown<XX>` for others).
    #[must_use]
    pub fn name(self) -> alloc::string::String {
        match self {
            PageType::Branch => "branch".into(),
            PageType::Leaf => "leaf".into(),
            PageType::Meta => "meta".into(),
            PageType::Freelist => "freelist".into(),
            PageType::Unknown(f) => alloc::format!("unknown<{f:02x}>"),
        }
    }
}

/// The 16-byte header at the start of every page (and of an inline
/// bucket's page image).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// `id`: the page's own id (0 inside an inline bucket).
    pub id: u64,
    /// `flags`: the page type.
    pub flags: u16,
    /// `count`: elements (branch/leaf) or free ids (freelist, 0xFFFF =
    /// count stored in the first 8-byte slot).
    pub count: u16,
    /// `overflow`: additional contiguous pages in the run.
    pub overflow: u32,
}

impl PageHeader {
    /// Parse the first 16 bytes of `b`; `None` when `b` is shorter.
    #[must_use]
    pub fn parse(b: &[u8]) -> Option<PageHeader> {
        Some(PageHeader {
            id: u64_at(b, 0)?,
            flags: u16_at(b, 8)?,
            count: u16_at(b, 10)?,
            overflow: u32_at(b, 12)?,
        })
    }

    /// The page type named by `flags`.
    #[must_use]
    pub fn page_type(&self) -> PageType {
        PageType::from_flags(self.flags)
    }
}

/// A leaf element: byte ranges of its key and value inside the page image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafElement {
    /// Element flags (`BUCKET_LEAF_FLAG` for a bucket entry).
    pub flags: u32,
    /// Key bytes within the page image.
    pub key: Range<usize>,
    /// Value bytes within the page image.
    pub value: Range<usize>,
}

impl LeafElement {
    /// `true` for a bucket entry (value = bucket header [+ inline page]).
    #[must_use]
    pub fn is_bucket(&self) -> bool {
        self.flags & BUCKET_LEAF_FLAG != 0
    }
}

/// A branch element: byte range of its key and the child page id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchElement {
    /// Key bytes within the page image (the child's first key).
    pub key: Range<usize>,
    /// `pgid` of the child page.
    pub child: u64,
}

/// A bucket value's 16-byte header (`InBucket`: `root`, `sequence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketHeader {
    /// Root page id of the bucket's tree; 0 = inline bucket (a leaf page
    /// image follows the header inside the value).
    pub root: u64,
    /// The bucket's sequence (`NextSequence`).
    pub sequence: u64,
}

impl BucketHeader {
    /// Parse a bucket value's header.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming `at` when the value is shorter than 16
    /// bytes.
    pub fn parse(value: &[u8], at: At) -> Result<BucketHeader> {
        match (u64_at(value, 0), u64_at(value, 8)) {
            (Some(root), Some(sequence)) => Ok(BucketHeader { root, sequence }),
            _ => Err(Error::Invalid {
                at,
                field: "bucket value length",
                value: value.len() as u64,
                expected: "at least 16 bytes (bucket header)",
            }),
        }
    }
}

/// A page image: a page run read from the file, or an inline bucket's
/// page inside a bucket value. Borrowed from the source when the source
/// is a slice or mapping (zero-copy), owned otherwise.
#[derive(Debug, Clone)]
pub struct Page<'s> {
    /// Where the page is, for error messages: `At::Page(pgid)` or
    /// `At::Inline { .. }`.
    pub at: At,
    /// Page id of the run (for an inline page, the host leaf's id).
    pub pgid: u64,
    /// The header.
    pub header: PageHeader,
    bytes: Cow<'s, [u8]>,
}

impl<'s> Page<'s> {
    /// Wrap page bytes whose header has been parsed. For a run,
    /// `bytes` must be the whole run (`(overflow + 1) * page size`).
    ///
    /// # Errors
    /// [`Error::OutsidePage`] when `bytes` is shorter than a header.
    pub fn new(at: At, pgid: u64, bytes: Cow<'s, [u8]>) -> Result<Page<'s>> {
        let header = PageHeader::parse(&bytes).ok_or(Error::OutsidePage {
            at,
            field: "page header",
            offset: 0,
            len: PAGE_HEADER_SIZE as u64,
            size: bytes.len() as u64,
        })?;
        Ok(Page { at, pgid, header, bytes })
    }

    /// A page image whose header the caller has parsed from `bytes`.
    #[inline]
    pub(crate) fn from_parts(
        at: At,
        pgid: u64,
        header: PageHeader,
        bytes: Cow<'s, [u8]>,
    ) -> Page<'s> {
        Page { at, pgid, header, bytes }
    }

    /// The whole page image (header included).
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The page image as the source lent it.
    #[must_use]
    pub fn cow(&self) -> &Cow<'s, [u8]> {
        &self.bytes
    }

    /// The page image with the source's lifetime, when the source lent it
    /// (a slice or a mapping); `None` for an owned copy.
    #[must_use]
    pub fn borrowed(&self) -> Option<&'s [u8]> {
        match self.bytes {
            Cow::Borrowed(b) => Some(b),
            Cow::Owned(_) => None,
        }
    }

    /// Leaf element `index` as `(flags, key range, value range)` in the
    /// page image, `None` when it lies outside (then [`Page::leaf`] names
    /// the fault). The same checks as [`Page::leaf`], without building an
    /// error.
    #[must_use]
    #[inline]
    pub fn leaf_ranges(&self, index: usize) -> Option<(u32, Range<usize>, Range<usize>)> {
        self.leaf_offsets(index).map(|(f, start, mid, end)| (f, start..mid, mid..end))
    }

    /// Number of elements (`count`).
    #[must_use]
    pub fn count(&self) -> usize {
        usize::from(self.header.count)
    }

    /// Bytes `range` of the page image, borrowed from the source when
    /// possible. The range must come from an element of this page.
    #[must_use]
    #[inline]
    pub fn slice(&self, range: Range<usize>) -> Cow<'s, [u8]> {
        sub_cow(&self.bytes, range)
    }

    /// Bytes `start..mid` and `mid..end` of the page image (a key and its
    /// value), borrowed from the source when possible, with one bounds
    /// check. The offsets must come from an element of this page.
    #[must_use]
    #[inline]
    pub fn split(&self, start: usize, mid: usize, end: usize) -> (Cow<'s, [u8]>, Cow<'s, [u8]>) {
        let pair = |b: &[u8]| -> (core::ops::Range<usize>, core::ops::Range<usize>) {
            if start <= mid && mid <= end && end <= b.len() {
                (start..mid, mid..end)
            } else {
                (0..0, 0..0)
            }
        };
        match &self.bytes {
            Cow::Borrowed(b) => {
                let (k, v) = pair(b);
                let (kb, vb) = (b.get(k).unwrap_or_default(), b.get(v).unwrap_or_default());
                (Cow::Borrowed(kb), Cow::Borrowed(vb))
            }
            Cow::Owned(o) => {
                let (k, v) = pair(o);
                (
                    Cow::Owned(o.get(k).unwrap_or_default().to_vec()),
                    Cow::Owned(o.get(v).unwrap_or_default().to_vec()),
                )
            }
        }
    }

    /// The checks a page a tree reference points to must pass (bbolt's
    /// cursor and `Bucket.pageNode` rely on them): for a page run, its
    /// `id` field says its own id; its type is branch (0x01) or leaf
    /// (0x02); the element array lies inside the run; a branch has at
    /// least one element.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming field `id`, `flags` or `count`, or
    /// [`Error::OutsidePage`] (as [`Page::check_element_array`]).
    pub fn check_tree(&self) -> Result<()> {
        if let At::Page(pgid) = self.at
            && self.header.id != pgid
        {
            return Err(Error::Invalid {
                at: self.at,
                field: "id",
                value: self.header.id,
                expected: "the page's own id",
            });
        }
        if self.header.flags != BRANCH_PAGE && self.header.flags != LEAF_PAGE {
            return Err(Error::Invalid {
                at: self.at,
                field: "flags",
                value: u64::from(self.header.flags),
                expected: "0x01 (branch) or 0x02 (leaf)",
            });
        }
        self.check_element_array()?;
        if self.header.flags == BRANCH_PAGE && self.count() == 0 {
            return Err(Error::Invalid {
                at: self.at,
                field: "count",
                value: 0,
                expected: "at least one element in a branch page",
            });
        }
        Ok(())
    }

    /// Check that `count` element headers fit in the page image.
    ///
    /// # Errors
    /// [`Error::OutsidePage`] naming field `count`.
    pub fn check_element_array(&self) -> Result<()> {
        let need = PAGE_HEADER_SIZE as u64 + self.count() as u64 * ELEMENT_SIZE as u64;
        if need > self.bytes.len() as u64 {
            return Err(Error::OutsidePage {
                at: self.at,
                field: "count",
                offset: 0,
                len: need,
                size: self.bytes.len() as u64,
            });
        }
        Ok(())
    }

    /// Offset and bytes of element header `index`. On the hot path of
    /// every cursor move: the error is only built when needed.
    #[inline]
    fn element_at(&self, index: usize) -> Result<(usize, [u8; ELEMENT_SIZE])> {
        // index < count <= 0xFFFF, so the offset cannot overflow.
        let off = PAGE_HEADER_SIZE + index.min(0xFFFF) * ELEMENT_SIZE;
        if index < self.count()
            && let Some(e) = self.bytes.get(off..off + ELEMENT_SIZE)
            && let Ok(e) = <[u8; ELEMENT_SIZE]>::try_from(e)
        {
            return Ok((off, e));
        }
        Err(Error::OutsidePage {
            at: self.element_loc(index),
            field: "element header",
            offset: off as u64,
            len: ELEMENT_SIZE as u64,
            size: self.bytes.len() as u64,
        })
    }

    fn element_loc(&self, index: usize) -> At {
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        match self.at {
            At::Inline { pgid, .. } => At::Inline { pgid, index },
            _ => At::Element { pgid: self.pgid, index },
        }
    }

    /// Where element `index` of this page is, for error messages.
    #[must_use]
    pub fn element_at_loc(&self, index: usize) -> At {
        self.element_loc(index)
    }

    /// `[start, start + len)` with `start = elem_off + pos`, checked
    /// against the page image.
    #[inline]
    fn data_range(
        &self,
        index: usize,
        elem_off: usize,
        pos: u32,
        len: u64,
        field: &'static str,
    ) -> Result<Range<usize>> {
        let start = elem_off as u64 + u64::from(pos);
        let end = start + len; // both terms < 2^33: no overflow
        if end > self.bytes.len() as u64 {
            return Err(Error::OutsidePage {
                at: self.element_loc(index),
                field,
                offset: start,
                len,
                size: self.bytes.len() as u64,
            });
        }
        // end <= bytes.len(), a usize, so neither cast truncates.
        #[expect(clippy::cast_possible_truncation)]
        Ok(start as usize..end as usize)
    }

    /// Leaf element `index` as `(flags, key start, key end = value start,
    /// value end)` offsets in the page image, or `None` when the element
    /// or its data lies outside it (then [`Page::leaf`] says why). The
    /// cursor's hot path.
    #[inline(always)]
    pub(crate) fn leaf_offsets(&self, index: usize) -> Option<(u32, usize, usize, usize)> {
        if index >= self.count() {
            return None;
        }
        let off = PAGE_HEADER_SIZE + index * ELEMENT_SIZE;
        let e: [u8; ELEMENT_SIZE] = self.bytes.get(off..off + ELEMENT_SIZE)?.try_into().ok()?;
        let flags = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        let pos = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
        let ksize = u32::from_le_bytes([e[8], e[9], e[10], e[11]]) as usize;
        let vsize = u32::from_le_bytes([e[12], e[13], e[14], e[15]]) as usize;
        // Each term is below 2^32 and `off` below 2^21: no overflow on a
        // 64-bit usize; on narrower targets checked_add keeps it exact.
        let start = off.checked_add(pos)?;
        let mid = start.checked_add(ksize)?;
        let end = mid.checked_add(vsize)?;
        (end <= self.bytes.len()).then_some((flags, start, mid, end))
    }

    /// Leaf element `index`: `flags u32 | pos u32 | ksize u32 | vsize u32`.
    ///
    /// # Errors
    /// [`Error::OutsidePage`] when the element or its key/value lie outside
    /// the page image.
    pub fn leaf(&self, index: usize) -> Result<LeafElement> {
        let (off, e) = self.element_at(index)?;
        let flags = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        let pos = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
        let ksize = u32::from_le_bytes([e[8], e[9], e[10], e[11]]);
        let vsize = u32::from_le_bytes([e[12], e[13], e[14], e[15]]);
        let total = u64::from(ksize) + u64::from(vsize);
        let kv = self.data_range(index, off, pos, total, "pos/ksize/vsize")?;
        let split = kv.start + ksize as usize;
        Ok(LeafElement { flags, key: kv.start..split, value: split..kv.end })
    }

    /// Branch element `index`: `pos u32 | ksize u32 | pgid u64`.
    ///
    /// # Errors
    /// [`Error::OutsidePage`] when the element or its key lie outside the
    /// page image.
    pub fn branch(&self, index: usize) -> Result<BranchElement> {
        let (off, e) = self.element_at(index)?;
        let pos = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        let ksize = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
        let child = u64::from_le_bytes([e[8], e[9], e[10], e[11], e[12], e[13], e[14], e[15]]);
        let key = self.data_range(index, off, pos, u64::from(ksize), "pos/ksize")?;
        Ok(BranchElement { key, child })
    }

    /// The child page id of branch element `index`, or `None` when the
    /// element header lies outside the page image. Reads only the element
    /// header (the hint path of a cursor; [`Page::branch`] checks the key
    /// too).
    #[must_use]
    pub fn branch_child(&self, index: usize) -> Option<u64> {
        let (_, e) = self.element_at(index).ok()?;
        Some(u64::from_le_bytes([e[8], e[9], e[10], e[11], e[12], e[13], e[14], e[15]]))
    }

    /// Key bytes of element `index` (branch or leaf by the page type).
    ///
    /// # Errors
    /// As [`Page::leaf`] / [`Page::branch`].
    pub fn key(&self, index: usize) -> Result<&[u8]> {
        let r = if self.header.flags == BRANCH_PAGE {
            self.branch(index)?.key
        } else {
            self.leaf(index)?.key
        };
        Ok(self.bytes.get(r).unwrap_or_default())
    }

    /// [`Page::key`] without the error: `None` when the element, its key
    /// or (for a leaf) its value lies outside the page image (then
    /// [`Page::key`] names the fault). The same checks, without building
    /// an error: the binary searches' hot path.
    #[inline(always)]
    fn key_fast(&self, index: usize) -> Option<&[u8]> {
        if index >= self.count() {
            return None;
        }
        let off = PAGE_HEADER_SIZE + index * ELEMENT_SIZE;
        let e: &[u8; ELEMENT_SIZE] = self.bytes.get(off..off + ELEMENT_SIZE)?.try_into().ok()?;
        let word = |i: usize| u32::from_le_bytes([e[i], e[i + 1], e[i + 2], e[i + 3]]) as usize;
        let (pos, ksize, vsize) = if self.header.flags == BRANCH_PAGE {
            (word(0), word(4), 0)
        } else {
            (word(4), word(8), word(12))
        };
        let start = off.checked_add(pos)?;
        let mid = start.checked_add(ksize)?;
        if mid.checked_add(vsize)? > self.bytes.len() {
            return None;
        }
        self.bytes.get(start..mid)
    }

    /// Bytes in use by the element array and the data it points to, as
    /// bbolt's node size counts them: header + Σ(element + key [+ value]).
    #[must_use]
    pub fn used_bytes(&self) -> u64 {
        let mut used = PAGE_HEADER_SIZE as u64;
        for i in 0..self.count() {
            used = used.saturating_add(ELEMENT_SIZE as u64);
            if self.header.flags == BRANCH_PAGE {
                if let Ok(b) = self.branch(i) {
                    used = used.saturating_add(b.key.len() as u64);
                }
            } else if let Ok(l) = self.leaf(i) {
                used = used.saturating_add((l.key.len() + l.value.len()) as u64);
            }
        }
        used
    }

    /// Index of the first element whose key is `>= key` (leaf search), or
    /// `count` when every key is smaller. Keys must be sorted; on a
    /// corrupt page the answer is merely wrong, never a panic.
    ///
    /// # Errors
    /// As [`Page::key`].
    pub fn lower_bound(&self, key: &[u8]) -> Result<usize> {
        let (mut lo, mut hi) = (0usize, self.count());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = match self.key_fast(mid) {
                Some(k) => k,
                None => self.key(mid)?,
            };
            if key_cmp(k, key).is_lt() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Index of the branch element to descend for `key`: the last element
    /// whose key is `<= key`, or 0 when `key` is smaller than all
    /// (bbolt `Cursor.searchPage`).
    ///
    /// # Errors
    /// As [`Page::key`].
    pub fn branch_index(&self, key: &[u8]) -> Result<usize> {
        let i = self.lower_bound(key)?;
        if i < self.count() && self.key_fast(i).map_or_else(|| self.key(i), Ok)? == key {
            return Ok(i);
        }
        Ok(i.saturating_sub(1))
    }

    /// The inline bucket page stored in leaf element `index`'s value
    /// (bucket header root = 0), borrowed when this page is.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the value is too short or the image is not
    /// a leaf page.
    pub fn inline_page(&self, index: usize, elem: &LeafElement) -> Result<Page<'s>> {
        let at = At::Inline { pgid: self.pgid, index: u32::try_from(index).unwrap_or(u32::MAX) };
        let start = elem.value.start.saturating_add(BUCKET_HEADER_SIZE);
        if start > elem.value.end || elem.value.end - start < PAGE_HEADER_SIZE {
            return Err(Error::Invalid {
                at,
                field: "bucket value length",
                value: elem.value.len() as u64,
                expected: "at least 32 bytes for an inline bucket (bucket header + page header)",
            });
        }
        let page = Page::new(at, self.pgid, self.slice(start..elem.value.end))?;
        if page.header.flags != LEAF_PAGE {
            return Err(Error::Invalid {
                at,
                field: "flags",
                value: u64::from(page.header.flags),
                expected: "0x02 (an inline bucket page is a leaf)",
            });
        }
        page.check_element_array()?;
        Ok(page)
    }
}

/// Byte-wise key order (bbolt's `bytes.Compare`), with the first eight
/// bytes compared as one big-endian word before falling back to
/// `memcmp`. Binary searches over pages compare a dozen keys per lookup;
/// inlining the common case (keys that differ in their first eight bytes)
/// saves a library call per probe.
#[inline(always)]
#[must_use]
pub fn key_cmp(a: &[u8], b: &[u8]) -> core::cmp::Ordering {
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x.cmp(&y);
        }
    }
    a.cmp(b)
}

#[cfg(test)]
#[expect(clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    /// A leaf page image with the given (key, value) pairs, laid out as
    /// bbolt writes it: headers first, then data in element order.
    pub(crate) fn leaf_image(items: &[(&[u8], &[u8], u32)]) -> Vec<u8> {
        let mut b = vec![0u8; PAGE_HEADER_SIZE + items.len() * ELEMENT_SIZE];
        b[8..10].copy_from_slice(&LEAF_PAGE.to_le_bytes());
        b[10..12].copy_from_slice(&(items.len() as u16).to_le_bytes());
        for (i, (k, v, flags)) in items.iter().enumerate() {
            let eo = PAGE_HEADER_SIZE + i * ELEMENT_SIZE;
            let pos = (b.len() - eo) as u32;
            b[eo..eo + 4].copy_from_slice(&flags.to_le_bytes());
            b[eo + 4..eo + 8].copy_from_slice(&pos.to_le_bytes());
            b[eo + 8..eo + 12].copy_from_slice(&(k.len() as u32).to_le_bytes());
            b[eo + 12..eo + 16].copy_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(k);
            b.extend_from_slice(v);
        }
        b
    }

    #[test]
    fn leaf_elements_and_search() {
        let img = leaf_image(&[(b"a", b"1", 0), (b"c", b"", 0), (b"e", b"55", 0)]);
        let p = Page::new(At::Page(3), 3, Cow::Borrowed(&img)).unwrap();
        assert_eq!(p.count(), 3);
        let e = p.leaf(2).unwrap();
        assert_eq!(&img[e.key.clone()], b"e");
        assert_eq!(&img[e.value.clone()], b"55");
        assert!(matches!(p.slice(e.value), Cow::Borrowed(b"55")));
        assert_eq!(p.lower_bound(b"b").unwrap(), 1);
        assert_eq!(p.lower_bound(b"f").unwrap(), 3);
        assert_eq!(p.used_bytes(), 16 + 3 * 16 + 6);
        assert!(p.leaf(3).is_err());
    }

    #[test]
    fn element_past_the_page_is_an_error() {
        let mut img = leaf_image(&[(b"a", b"1", 0)]);
        img[16 + 4..16 + 8].copy_from_slice(&1000u32.to_le_bytes());
        let p = Page::new(At::Page(7), 7, Cow::Borrowed(&img)).unwrap();
        let e = p.leaf(0).unwrap_err();
        assert!(
            matches!(e, Error::OutsidePage { at: At::Element { pgid: 7, index: 0 }, .. }),
            "{e}"
        );
        img[10..12].copy_from_slice(&0xFFFFu16.to_le_bytes());
        let p = Page::new(At::Page(7), 7, Cow::Borrowed(&img)).unwrap();
        assert!(p.check_element_array().is_err());
    }
}
