//! Digests of tree pages: everything the structural walk ([`super::walk`])
//! takes from the bytes of one branch or leaf page, without the bytes.
//!
//! The walk reads a page, digests it, and replays the digest: the page's
//! own region, its problems in the order the walk finds them, its children
//! and sub-buckets to descend into. A digest depends only on the page's
//! bytes and on the bounds its parent puts on its keys (`lo`, `hi`), so a
//! reader that keeps digests of pages it has read (the settling reader in
//! `mapwise-native`, which follows a writer's commits) can replay a whole
//! tree again without reading a page twice: the walk over kept digests is
//! the same walk, with the same output, as the walk over the file.
//!
//! Bounds are passed as hashes of the bounding keys ([`key_hash`]): a kept
//! digest records the [`context`] it was made under, and is used again only
//! under the same one. The keys themselves are needed only while making a
//! digest, when the parent page is at hand.
//!
//! Memory: a leaf page with only plain key/value elements and no problem
//! (nearly every leaf) costs the 40 bytes of [`Digest`]; a branch page 16
//! bytes more per child; problems and sub-buckets are kept as found.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::error::{At, Error};

use super::file::MAX_DEPTH;
use super::meta::fnv1a64;
use super::page::{BRANCH_PAGE, BUCKET_LEAF_FLAG, BucketHeader, Page, PageHeader};

/// The hash of "no bound" (a bucket's root page, the last child of a
/// root, an element whose key cannot be read). [`key_hash`] never returns
/// it.
pub const NO_BOUND: u64 = 0;

/// Hash of a bounding key: FNV-1a 64 (`meta.go`'s checksum function)
/// with a final mix, never [`NO_BOUND`].
#[must_use]
pub fn key_hash(key: &[u8]) -> u64 {
    match mix(fnv1a64(key) ^ (key.len() as u64).rotate_left(32)) {
        NO_BOUND => 1,
        h => h,
    }
}

/// splitmix64's finaliser: spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The context a page is digested under: its bounds (hashes, [`NO_BOUND`]
/// for none) and whether keys are checked ([`super::WalkOptions`]).
#[must_use]
pub fn context(lo: u64, hi: u64, check_keys: bool) -> u64 {
    mix(lo ^ mix(hi ^ u64::from(check_keys).wrapping_mul(0x9e37_79b9_7f4a_7c15)))
}

/// A bound on the keys of a page: the hash of the bounding key
/// ([`NO_BOUND`] for none) and, when the page above is at hand, the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound<'k> {
    /// [`key_hash`] of the key, or [`NO_BOUND`].
    pub hash: u64,
    /// The key, when known.
    pub key: Option<&'k [u8]>,
}

impl<'k> Bound<'k> {
    /// No bound.
    pub const NONE: Bound<'static> = Bound { hash: NO_BOUND, key: None };

    /// The bound `key`, hashed.
    #[must_use]
    pub fn of(key: &'k [u8]) -> Bound<'k> {
        Bound { hash: key_hash(key), key: Some(key) }
    }

    /// The key to compare with: `None` for no bound (and for a bound
    /// whose key is not at hand, which only kept digests see).
    fn key(self) -> Option<&'k [u8]> {
        if self.hash == NO_BOUND { None } else { self.key }
    }
}

/// One branch element of a digested branch page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Child {
    /// The element's `pgid`.
    pub pgid: u64,
    /// [`key_hash`] of the element's key ([`NO_BOUND`] when the element
    /// cannot be read: then the previous child has no upper bound, as the
    /// walk over the page finds).
    pub key: u64,
}

/// What an element of a page adds to the walk besides plain keys and
/// children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rare {
    /// A problem; `incomplete` when it may hide part of the tree (pages
    /// not reached are then `unknown`, not free).
    Problem {
        /// The problem.
        error: Error,
        /// Part of the tree may be lost behind it.
        incomplete: bool,
    },
    /// A sub-bucket entry of a leaf page.
    Bucket(Box<SubBucket>),
}

/// A sub-bucket entry of a leaf (or inline) page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubBucket {
    /// The bucket's name.
    pub key: Box<[u8]>,
    /// Its header (`root`, `sequence`).
    pub header: BucketHeader,
    /// Where the element is (`At::Element` or `At::Inline` of the host).
    pub at: At,
    /// The inline bucket's page, digested, when `header.root` is 0 and it
    /// could be read (else the problem precedes this entry).
    pub inline: Option<Box<Digest>>,
}

/// The rarer parts of a digest, boxed so a plain leaf costs nothing more.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Body {
    /// Branch elements, in element order.
    children: Vec<Child>,
    /// Indices of branch elements the walk does not descend into (their
    /// problem is in `rare`).
    skipped: Vec<u32>,
    /// Problems and sub-buckets with the element index at which the walk
    /// meets them, in the order it meets them.
    rare: Vec<(u32, Rare)>,
    /// Entries of `rare` that come from the key-order check, which the
    /// walk makes before the element loop, even of an inline page nested
    /// too deep for the loop.
    pre: u32,
    /// Bytes in use when they do not fit the digest's `u32` (a run of
    /// over 4 GiB, only in a damaged file).
    used: u64,
}

/// What the walk takes from one branch or leaf page (or an inline bucket's
/// page): see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    /// The header's `flags` (branch or leaf).
    pub flags: u16,
    /// The header's `count` (elements).
    pub count: u16,
    /// The header's `overflow` (pages after the first in the run).
    pub overflow: u32,
    /// Plain key/value elements (leaf pages; at most `count`).
    pub keys: u16,
    /// Bytes in use ([`Page::used_bytes`], see [`Digest::used`]), when
    /// they fit; else in the body.
    used: u32,
    /// `used` is in the body. (Also what lets a `Digest` in an enum need
    /// no separate tag: the settling reader holds half a million.)
    used_big: bool,
    /// The [`context`] it was made under.
    pub context: u64,
    body: Option<Box<Body>>,
}

impl Digest {
    /// Digest `page` (a branch or leaf page that [`super::BoltFile::tree_page`]
    /// accepted, or an inline bucket's page) under the bounds `lo` and
    /// `hi`, checking key order when `check_keys`.
    #[must_use]
    pub fn of(page: &Page<'_>, lo: Bound<'_>, hi: Bound<'_>, check_keys: bool) -> Digest {
        Digest::nested(page, lo, hi, check_keys, 0)
    }

    fn nested(
        page: &Page<'_>,
        lo: Bound<'_>,
        hi: Bound<'_>,
        check_keys: bool,
        level: u32,
    ) -> Digest {
        let mut body = Body::default();
        if check_keys {
            key_problems(page, lo.key(), hi.key(), |error| {
                body.rare.push((0, Rare::Problem { error, incomplete: false }));
            });
        }
        body.pre = u32::try_from(body.rare.len()).unwrap_or(u32::MAX);
        let mut keys = 0u32;
        if page.header.flags == BRANCH_PAGE {
            branch_elements(page, &mut body);
        } else {
            keys = leaf_elements(page, &mut body, check_keys, level);
        }
        let used = page.used_bytes();
        let used32 = u32::try_from(used).ok();
        if used32.is_none() {
            body.used = used;
        }
        let plain = body.children.is_empty()
            && body.rare.is_empty()
            && body.skipped.is_empty()
            && used32.is_some();
        Digest {
            flags: page.header.flags,
            count: page.header.count,
            overflow: page.header.overflow,
            used: used32.unwrap_or(u32::MAX),
            used_big: used32.is_none(),
            context: context(lo.hash, hi.hash, check_keys),
            // Plain elements are some of the page's `count`.
            keys: u16::try_from(keys).unwrap_or(u16::MAX),
            body: (!plain).then(|| Box::new(body)),
        }
    }

    /// Bytes in use ([`Page::used_bytes`]).
    #[must_use]
    pub fn used(&self) -> u64 {
        if self.used_big {
            self.body.as_ref().map_or(u64::from(self.used), |b| b.used)
        } else {
            u64::from(self.used)
        }
    }

    /// The page header these fields come from, with `id` set to `pgid`.
    #[must_use]
    pub fn header(&self, pgid: u64) -> PageHeader {
        PageHeader { id: pgid, flags: self.flags, count: self.count, overflow: self.overflow }
    }

    /// Whether it is a branch page's.
    #[must_use]
    pub fn is_branch(&self) -> bool {
        self.flags == BRANCH_PAGE
    }

    /// Branch elements in order (empty for a leaf).
    #[must_use]
    pub fn children(&self) -> &[Child] {
        self.body.as_ref().map_or(&[], |b| &b.children)
    }

    /// Whether branch element `index` is descended into.
    #[must_use]
    pub fn descends(&self, index: usize) -> bool {
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        self.body.as_ref().is_none_or(|b| !b.skipped.contains(&index))
    }

    /// Problems and sub-buckets with the element index where the walk
    /// meets them, in order.
    #[must_use]
    pub fn rare(&self) -> &[(u32, Rare)] {
        self.body.as_ref().map_or(&[], |b| &b.rare)
    }

    /// How many leading entries of [`Digest::rare`] come from the
    /// key-order check.
    #[must_use]
    pub fn pre(&self) -> usize {
        self.body.as_ref().map_or(0, |b| b.pre as usize)
    }

    /// Page ids this page points to: its children, and the roots of its
    /// page-backed sub-buckets (and of those in its inline buckets).
    pub fn edges(&self) -> impl Iterator<Item = u64> + '_ {
        let children = self
            .children()
            .iter()
            .enumerate()
            .filter(|(i, _)| self.descends(*i))
            .map(|(_, c)| c.pgid);
        let mut roots = Vec::new();
        self.bucket_refs(&mut roots);
        children.chain(roots.into_iter().map(|(root, _)| root))
    }

    /// The page-backed sub-buckets this page names (its own and those in
    /// its inline buckets): each root page id and where its entry is.
    pub fn bucket_refs(&self, out: &mut Vec<(u64, At)>) {
        for (_, r) in self.rare() {
            if let Rare::Bucket(b) = r {
                match &b.inline {
                    Some(d) => d.bucket_refs(out),
                    None if b.header.root != 0 => out.push((b.header.root, b.at)),
                    None => {}
                }
            }
        }
    }

    /// Heap bytes this digest holds besides itself (for memory budgets).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.body.as_ref().map_or(0, |b| {
            core::mem::size_of::<Body>()
                + b.children.capacity() * core::mem::size_of::<Child>()
                + b.skipped.capacity() * 4
                + b.rare.capacity() * core::mem::size_of::<(u32, Rare)>()
                + b.rare
                    .iter()
                    .map(|(_, r)| match r {
                        Rare::Bucket(s) => {
                            core::mem::size_of::<SubBucket>()
                                + s.key.len()
                                + s.inline
                                    .as_ref()
                                    .map_or(0, |d| core::mem::size_of::<Digest>() + d.heap_bytes())
                        }
                        Rare::Problem { .. } => 0,
                    })
                    .sum::<usize>()
        })
    }
}

fn problem(body: &mut Body, index: usize, error: Error, incomplete: bool) {
    let index = u32::try_from(index).unwrap_or(u32::MAX);
    body.rare.push((index, Rare::Problem { error, incomplete }));
}

fn branch_elements(page: &Page<'_>, body: &mut Body) {
    body.children.reserve_exact(page.count());
    for i in 0..page.count() {
        let skip = |body: &mut Body| body.skipped.push(u32::try_from(i).unwrap_or(u32::MAX));
        let e = match page.branch(i) {
            Ok(e) => e,
            Err(err) => {
                body.children.push(Child { pgid: 0, key: NO_BOUND });
                skip(body);
                problem(body, i, err, true);
                continue;
            }
        };
        let key = page.bytes().get(e.key.clone()).unwrap_or_default();
        body.children.push(Child { pgid: e.child, key: key_hash(key) });
        if e.child == page.pgid {
            skip(body);
            problem(
                body,
                i,
                Error::Reused { at: page.element_at_loc(i), field: "pgid", pgid: page.pgid },
                false,
            );
        }
    }
}

/// The element loop of a leaf (or inline) page; returns its plain keys.
fn leaf_elements(page: &Page<'_>, body: &mut Body, check_keys: bool, level: u32) -> u32 {
    let inline = matches!(page.at, At::Inline { .. });
    let mut keys = 0u32;
    for i in 0..page.count() {
        let e = match page.leaf(i) {
            Ok(e) => e,
            Err(err) => {
                // Maybe a bucket entry: its tree would be lost.
                problem(body, i, err, true);
                continue;
            }
        };
        if e.flags & !BUCKET_LEAF_FLAG != 0 {
            problem(
                body,
                i,
                Error::Invalid {
                    at: page.element_at_loc(i),
                    field: "flags",
                    value: u64::from(e.flags),
                    expected: "0 (key/value) or 0x01 (bucket)",
                },
                false,
            );
        }
        if !e.is_bucket() {
            keys = keys.saturating_add(1);
            continue;
        }
        if inline {
            problem(
                body,
                i,
                Error::Invalid {
                    at: page.at,
                    field: "flags",
                    value: u64::from(e.flags),
                    expected: "no sub-buckets in an inline bucket (bbolt never writes one)",
                },
                false,
            );
        }
        let key = page.bytes().get(e.key.clone()).unwrap_or_default();
        let value = page.bytes().get(e.value.clone()).unwrap_or_default();
        let header = match BucketHeader::parse(value, page.element_at_loc(i)) {
            Ok(h) => h,
            Err(err) => {
                problem(body, i, err, true);
                continue;
            }
        };
        let mut inline_digest = None;
        if header.root == 0 {
            match page.inline_page(i, &e) {
                // Deeper than the walk's frame bound can never be replayed.
                Ok(ip) if level <= MAX_DEPTH * 4 => {
                    inline_digest = Some(Box::new(Digest::nested(
                        &ip,
                        Bound::NONE,
                        Bound::NONE,
                        check_keys,
                        level + 1,
                    )));
                }
                Ok(_) => {}
                Err(err) => {
                    // The entry still names a bucket: the walk adds it
                    // before it meets the fault.
                    push_bucket(body, i, key, header, page.element_at_loc(i), None);
                    problem(body, i, err, true);
                    continue;
                }
            }
        }
        push_bucket(body, i, key, header, page.element_at_loc(i), inline_digest);
    }
    keys
}

fn push_bucket(
    body: &mut Body,
    i: usize,
    key: &[u8],
    header: BucketHeader,
    at: At,
    inline: Option<Box<Digest>>,
) {
    body.rare.push((
        u32::try_from(i).unwrap_or(u32::MAX),
        Rare::Bucket(Box::new(SubBucket { key: key.into(), header, at, inline })),
    ));
}

/// The walk's key checks of one page: keys non-empty and strictly
/// ascending, the first not below `lo`, every one below `hi` (bbolt's
/// `Tx.Check` ordering rules, `tx_check.go`), each fault handed to
/// `problem` in element order.
pub fn key_problems(
    page: &Page<'_>,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    mut problem: impl FnMut(Error),
) {
    let mut prev: Option<&[u8]> = None;
    for i in 0..page.count() {
        let Ok(key) = page.key(i) else { continue };
        let at = page.element_at_loc(i);
        if key.is_empty() {
            problem(Error::Invalid { at, field: "ksize", value: 0, expected: "a non-empty key" });
        }
        if let Some(p) = prev {
            if key <= p {
                problem(Error::KeyOrder {
                    at,
                    why: if key == p {
                        "duplicates the previous key"
                    } else {
                        "smaller than the previous key"
                    },
                });
            }
        } else if lo.is_some_and(|lo| key < lo) {
            problem(Error::KeyOrder { at, why: "smaller than the parent branch element's key" });
        }
        if hi.is_some_and(|hi| key >= hi) {
            problem(Error::KeyOrder { at, why: "not below the next parent branch element's key" });
        }
        prev = Some(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_never_say_no_bound_and_contexts_differ() {
        assert_ne!(key_hash(b""), NO_BOUND);
        assert_ne!(key_hash(b"a"), key_hash(b"b"));
        assert_ne!(key_hash(b"\0"), key_hash(b"\0\0"));
        let (a, b) = (key_hash(b"a"), key_hash(b"b"));
        assert_ne!(context(a, b, true), context(b, a, true));
        assert_ne!(context(a, b, true), context(a, b, false));
        assert_ne!(context(NO_BOUND, NO_BOUND, true), context(a, NO_BOUND, true));
        assert_eq!(core::mem::size_of::<Digest>(), 32);
    }
}
