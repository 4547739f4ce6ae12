//! One page decoded for display: header and elements, as `bbolt page`
//! shows them.

use alloc::vec::Vec;

use crate::error::{At, Result};
use crate::source::PageSource;

use super::file::BoltFile;
use super::freelist::FreelistIds;
use super::meta::{META_END, Meta};
use super::page::{BucketHeader, PageHeader, PageType};

/// Longest key or value prefix kept per element, in bytes.
pub const PREVIEW: usize = 64;

/// A key or value as shown: its length and its first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bytes {
    /// Full length in bytes.
    pub len: usize,
    /// The first `min(len, PREVIEW)` bytes.
    pub prefix: Vec<u8>,
}

impl Bytes {
    fn of(b: &[u8]) -> Bytes {
        Bytes { len: b.len(), prefix: b.get(..b.len().min(PREVIEW)).unwrap_or_default().to_vec() }
    }

    /// `true` when `prefix` holds the whole value.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.prefix.len() == self.len
    }
}

/// One decoded element (or an element that failed to decode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Element {
    /// A branch element: first key of the child, and the child.
    Branch {
        /// The key.
        key: Bytes,
        /// Child page id.
        child: u64,
    },
    /// A leaf key/value.
    Leaf {
        /// Element flags.
        flags: u32,
        /// The key.
        key: Bytes,
        /// The value (for a bucket, the raw bucket value).
        value: Bytes,
        /// For a bucket entry: its header, when it parses.
        bucket: Option<BucketHeader>,
    },
    /// An element the page's bytes cannot hold.
    Bad(crate::error::Error),
}

/// What a page holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// A meta page: its fields as stored, and why it fails validation
    /// (bbolt then uses the other meta page), if it does.
    Meta {
        /// The fields.
        meta: Meta,
        /// The first validation failure, `None` for a valid meta page.
        fault: Option<crate::error::MetaFault>,
    },
    /// Branch or leaf elements.
    Elements(Vec<Element>),
    /// Freelist ids (at most `limit` of them) and the total.
    Freelist {
        /// The first ids.
        ids: Vec<u64>,
        /// All ids listed.
        total: usize,
    },
    /// A page type mapwise does not decode.
    Other,
}

/// A decoded page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageDetail {
    /// The page id asked for.
    pub pgid: u64,
    /// Its header.
    pub header: PageHeader,
    /// Its type from `flags`.
    pub page_type: PageType,
    /// Byte offset in the file.
    pub offset: u64,
    /// What it holds.
    pub body: Body,
}

/// Decode page `pgid` of `file` for display, with at most `limit`
/// elements or ids.
///
/// # Errors
/// When the page cannot be read at all (past the end, id mismatch, run
/// past the end); bad elements are reported inside the detail instead.
pub fn page_detail<S: PageSource + ?Sized>(
    file: &BoltFile<'_, S>,
    pgid: u64,
    limit: usize,
) -> Result<PageDetail> {
    let offset = file.page_offset(pgid).unwrap_or(u64::MAX);
    if pgid < 2 {
        // The whole page must be in the file, as for every other page
        // (bbolt's `page` reads a page whole); the pages table needs only
        // the header.
        file.whole_page_offset(pgid)?;
        let header = file.page_header(pgid)?;
        let b = file.source().read_at(offset, META_END)?;
        let index = u8::try_from(pgid).unwrap_or(0);
        let meta = Meta::parse(&b, index).ok_or(crate::error::Error::OutOfBounds {
            at: At::Meta(index),
            field: "meta",
            offset,
            len: META_END as u64,
            size: file.len(),
        })?;
        return Ok(PageDetail {
            pgid,
            header,
            page_type: header.page_type(),
            offset,
            body: Body::Meta { meta, fault: meta.validate().err() },
        });
    }
    let page = file.read_page(pgid)?;
    let header = page.header;
    let body = match header.page_type() {
        PageType::Branch | PageType::Leaf => {
            let n = page.count().min(limit);
            let mut els = Vec::with_capacity(n);
            for i in 0..n {
                let el = if header.page_type() == PageType::Branch {
                    page.branch(i).map(|e| Element::Branch {
                        key: Bytes::of(page.bytes().get(e.key).unwrap_or_default()),
                        child: e.child,
                    })
                } else {
                    page.leaf(i).map(|e| {
                        let value = page.bytes().get(e.value.clone()).unwrap_or_default();
                        Element::Leaf {
                            flags: e.flags,
                            key: Bytes::of(page.bytes().get(e.key.clone()).unwrap_or_default()),
                            value: Bytes::of(value),
                            bucket: if e.is_bucket() {
                                BucketHeader::parse(value, page.element_at_loc(i)).ok()
                            } else {
                                None
                            },
                        }
                    })
                };
                els.push(el.unwrap_or_else(Element::Bad));
            }
            Body::Elements(els)
        }
        PageType::Freelist => match FreelistIds::parse(&page) {
            Ok(ids) => Body::Freelist { ids: ids.iter().take(limit).collect(), total: ids.len() },
            Err(e) => Body::Elements(alloc::vec![Element::Bad(e)]),
        },
        _ => Body::Other,
    };
    Ok(PageDetail { pgid, header, page_type: header.page_type(), offset, body })
}
