//! [`Regions`]: a layout's regions, stored compactly.
//!
//! A 2 GiB bbolt file has about half a million page runs, and a live view
//! holds two layouts of it at once (the one on screen and the one being
//! walked). As plain [`Region`]s (64 bytes each) that is 64 MiB; stored
//! here it is about 6 MiB.
//!
//! Regions are encoded in order, each as a header byte and a few LEB128
//! varints of differences from the region before it, so the usual bbolt
//! page (the next page, one page long, in the same bucket) takes about a
//! dozen bytes. Every [`BLOCK`] regions start afresh from a zero state and
//! are indexed by their first byte and their offset, so [`Regions::get`]
//! decodes at most `BLOCK` records and a search by offset is a binary
//! search over blocks. Every value round-trips exactly, sorted or not:
//! differences are taken with wrapping arithmetic.

use alloc::vec::Vec;
use core::fmt;

use crate::layout::{Kind, Region};

/// Regions per block: the most a random access decodes.
pub const BLOCK: usize = 32;

/// Header bit: the region does not start where the one before it ended.
const GAP: u8 = 1 << 5;
/// Header bit: `head` differs from `id`.
const HEAD: u8 = 1 << 6;
/// Header bit: `run_len` differs from `len`.
const RUN: u8 = 1 << 7;
/// Header bits holding [`Kind::index`].
const KIND: u8 = 0x1f;

const _: () = assert!(Kind::ALL.len() <= KIND as usize + 1);

/// Where a block of [`BLOCK`] regions starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    /// Byte of the block's first record in `Regions::bytes`.
    pos: usize,
    /// Offset of the block's first region.
    offset: u64,
}

/// What the next record is encoded against: the region before it, or
/// zeros at a block's start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct State {
    end: u64,
    id: u64,
    group: u64,
}

/// A layout's regions in order, compactly (see the module documentation):
/// a sequence of [`Region`] values handed out by value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Regions {
    bytes: Vec<u8>,
    marks: Vec<Mark>,
    len: usize,
    state: State,
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(low7(v) | 0x80);
        v >>= 7;
    }
    out.push(low7(v));
}

/// The low seven bits of `v`.
fn low7(v: u64) -> u8 {
    u8::try_from(v & 0x7f).unwrap_or(0)
}

/// A wrapping difference as a small unsigned number: 0, -1, 1, -2, …
/// become 0, 1, 2, 3, …
fn zigzag(d: u64) -> u64 {
    (d << 1) ^ (d >> 63).wrapping_neg()
}

fn unzigzag(v: u64) -> u64 {
    (v >> 1) ^ (v & 1).wrapping_neg()
}

/// Reads records written by [`Regions::push`] from `bytes`.
#[derive(Clone)]
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    state: State,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn varint(&mut self) -> u64 {
        let mut v = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.byte();
            if shift < 64 {
                v |= u64::from(b & 0x7f) << shift;
            }
            // Past the end `byte` gives 0, which ends the number.
            if b & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
    }

    /// The next record; the caller knows one is there.
    fn next(&mut self) -> Region {
        let h = self.byte();
        let s = self.state;
        let offset = if h & GAP != 0 { s.end.wrapping_add(unzigzag(self.varint())) } else { s.end };
        let len = self.varint();
        let id = s.id.wrapping_add(unzigzag(self.varint()));
        let head = if h & HEAD != 0 { id.wrapping_sub(unzigzag(self.varint())) } else { id };
        let group = s.group.wrapping_add(unzigzag(self.varint()));
        let depth = u16::try_from(self.varint()).unwrap_or(u16::MAX);
        let items = u32::try_from(self.varint()).unwrap_or(u32::MAX);
        let used = self.varint();
        let run_len = if h & RUN != 0 { len.wrapping_add(unzigzag(self.varint())) } else { len };
        self.state = State { end: offset.wrapping_add(len), id, group };
        Region {
            offset,
            len,
            kind: Kind::ALL.get(usize::from(h & KIND)).copied().unwrap_or(Kind::Unknown),
            id,
            head,
            group: group.checked_sub(1).and_then(|g| u32::try_from(g).ok()),
            depth,
            items,
            used,
            run_len,
        }
    }
}

impl Regions {
    /// No regions.
    #[must_use]
    pub fn new() -> Regions {
        Regions::default()
    }

    /// No regions, with room for about `n` of them (12 bytes each, a
    /// bbolt page run's usual cost), so a walk that knows how many it
    /// will write does not grow the buffer by doubling.
    #[must_use]
    pub fn with_capacity(n: usize) -> Regions {
        Regions {
            bytes: Vec::with_capacity(n.saturating_mul(12)),
            marks: Vec::with_capacity(n / BLOCK + 1),
            ..Regions::default()
        }
    }

    /// Append `r` after the last region.
    pub fn push(&mut self, r: Region) {
        if self.len.is_multiple_of(BLOCK) {
            self.marks.push(Mark { pos: self.bytes.len(), offset: r.offset });
            self.state = State::default();
        }
        let s = self.state;
        let group = r.group.map_or(0, |g| u64::from(g) + 1);
        let gap = r.offset.wrapping_sub(s.end);
        let head = r.id.wrapping_sub(r.head);
        let run = r.run_len.wrapping_sub(r.len);
        let mut h = u8::try_from(r.kind.index()).unwrap_or(KIND) & KIND;
        if gap != 0 {
            h |= GAP;
        }
        if head != 0 {
            h |= HEAD;
        }
        if run != 0 {
            h |= RUN;
        }
        let out = &mut self.bytes;
        out.push(h);
        if gap != 0 {
            put(out, zigzag(gap));
        }
        put(out, r.len);
        put(out, zigzag(r.id.wrapping_sub(s.id)));
        if head != 0 {
            put(out, zigzag(head));
        }
        put(out, zigzag(group.wrapping_sub(s.group)));
        put(out, u64::from(r.depth));
        put(out, u64::from(r.items));
        put(out, r.used);
        if run != 0 {
            put(out, zigzag(run));
        }
        self.state = State { end: r.offset.wrapping_add(r.len), id: r.id, group };
        self.len += 1;
    }

    /// Number of regions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Heap bytes held.
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.marks.capacity() * core::mem::size_of::<Mark>()
    }

    /// Give back spare capacity.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.marks.shrink_to_fit();
    }

    fn reader_at_block(&self, b: usize) -> Reader<'_> {
        let pos = self.marks.get(b).map_or(self.bytes.len(), |m| m.pos);
        Reader { bytes: &self.bytes, pos, state: State::default() }
    }

    /// Region `i`, if there are more than `i`.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<Region> {
        self.iter_from(i).next()
    }

    /// The last region.
    #[must_use]
    pub fn last(&self) -> Option<Region> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    /// The regions in order.
    #[must_use]
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }

    /// The regions from index `i` on, in order (none when `i >= len`).
    #[must_use]
    pub fn iter_from(&self, i: usize) -> Iter<'_> {
        let i = i.min(self.len);
        let b = i / BLOCK;
        let mut it = Iter { reader: self.reader_at_block(b), next: b * BLOCK, len: self.len };
        while it.next < i {
            it.step();
        }
        it
    }

    /// Index of the first region ending after byte `offset`: with regions
    /// sorted and not overlapping, the one holding it or the next. Uses
    /// the block marks' offsets, so it decodes at most one block.
    #[must_use]
    pub fn first_ending_after(&self, offset: u64) -> usize {
        // Blocks starting at or before `offset`.
        let b = self.marks.partition_point(|m| m.offset <= offset);
        let Some(start) = b.checked_sub(1) else {
            return 0;
        };
        let mut i = start * BLOCK;
        for r in self.iter_from(i) {
            if r.end() > offset {
                return i;
            }
            i += 1;
        }
        i
    }

    /// The regions as plain values.
    #[must_use]
    pub fn to_vec(&self) -> Vec<Region> {
        self.iter().collect()
    }
}

impl fmt::Debug for Regions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl From<Vec<Region>> for Regions {
    fn from(v: Vec<Region>) -> Regions {
        v.into_iter().collect()
    }
}

impl<'a> FromIterator<&'a Region> for Regions {
    fn from_iter<I: IntoIterator<Item = &'a Region>>(iter: I) -> Regions {
        let mut out = Regions::new();
        for r in iter {
            out.push(*r);
        }
        out
    }
}

impl FromIterator<Region> for Regions {
    fn from_iter<I: IntoIterator<Item = Region>>(iter: I) -> Regions {
        let mut out = Regions::new();
        for r in iter {
            out.push(r);
        }
        out
    }
}

impl<'a> IntoIterator for &'a Regions {
    type Item = Region;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The regions of a [`Regions`] in order, by value.
#[derive(Clone)]
pub struct Iter<'a> {
    reader: Reader<'a>,
    next: usize,
    len: usize,
}

impl fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("next", &self.next)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Iter<'_> {
    fn step(&mut self) -> Region {
        if self.next.is_multiple_of(BLOCK) {
            self.reader.state = State::default();
        }
        self.next += 1;
        self.reader.next()
    }
}

impl Iterator for Iter<'_> {
    type Item = Region;

    fn next(&mut self) -> Option<Region> {
        (self.next < self.len).then(|| self.step())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(offset: u64, len: u64, kind: Kind, id: u64) -> Region {
        Region {
            group: Some(1),
            depth: 2,
            items: 10,
            used: 3000,
            run_len: len,
            ..Region::of(offset, len, kind, id)
        }
    }

    #[test]
    fn round_trips_every_value() {
        let mut v = Vec::new();
        for i in 0..200u64 {
            v.push(region(i * 4096, 4096, Kind::ALL[(i % 18) as usize], i));
        }
        // Odd values: gaps, overlaps, extremes, no group, head before id.
        v.push(Region {
            offset: u64::MAX - 5,
            len: u64::MAX,
            kind: Kind::Overflow,
            id: u64::MAX,
            head: 3,
            group: None,
            depth: u16::MAX,
            items: u32::MAX,
            used: u64::MAX,
            run_len: 0,
        });
        v.push(region(0, 0, Kind::Data, 0));
        v.push(Region { group: Some(u32::MAX), ..region(7, 1, Kind::Corrupt, 9) });
        let r: Regions = v.iter().collect();
        assert_eq!(r.len(), v.len());
        assert_eq!(r.to_vec(), v);
        for (i, want) in v.iter().enumerate() {
            assert_eq!(r.get(i).as_ref(), Some(want), "region {i}");
            assert_eq!(r.iter_from(i).next().as_ref(), Some(want));
        }
        assert_eq!(r.get(v.len()), None);
        assert_eq!(r.last().as_ref(), v.last());
        assert!(r.iter_from(v.len() + 5).next().is_none());
    }

    #[test]
    fn searches_by_offset() {
        let v: Vec<Region> = (0..100u64)
            .map(|i| region(i * 100, if i == 50 { 0 } else { 100 }, Kind::Leaf, i))
            .collect();
        // Make them contiguous despite the empty one.
        let mut end = 0;
        let v: Vec<Region> = v
            .into_iter()
            .map(|mut r| {
                r.offset = end;
                end += r.len;
                r
            })
            .collect();
        let r: Regions = v.iter().collect();
        for off in [0, 1, 99, 100, 4950, 4999, 5000, 5001, 9899, 9900, 20000] {
            let want = v.partition_point(|x| x.end() <= off);
            assert_eq!(r.first_ending_after(off), want, "{off}");
        }
        assert!(r.heap_bytes() < v.len() * 16);
    }
}
