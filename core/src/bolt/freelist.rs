//! bbolt freelist pages.
//!
//! Facts from bbolt `internal/common/page.go` (`FreelistPageCount`,
//! `FreelistPageIds`) and `internal/freelist/shared.go` (`Read`, `Write`):
//! the page `count` holds the number of ids when it is below 0xFFFF;
//! otherwise `count` is 0xFFFF and the real number is the first u64 after
//! the header, the ids following it. Ids are u64 page ids, written sorted.

use crate::error::{Error, Result};

use super::page::{FREELIST_PAGE, PAGE_HEADER_SIZE, Page, u64_at};

/// How a freelist page stores its id count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountEncoding {
    /// `count` in the page header (fewer than 0xFFFF ids).
    Header,
    /// `count` = 0xFFFF, the real count in the first 8-byte slot.
    FirstSlot,
}

impl CountEncoding {
    /// Name used in text and JSON output.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            CountEncoding::Header => "count-in-header",
            CountEncoding::FirstSlot => "count-in-first-slot",
        }
    }
}

/// The ids of a freelist page, decoded lazily from its bytes.
#[derive(Debug, Clone)]
pub struct FreelistIds<'p> {
    bytes: &'p [u8],
    first: usize,
    count: usize,
    /// Which count encoding the page uses.
    pub encoding: CountEncoding,
}

impl<'p> FreelistIds<'p> {
    /// Decode the freelist page `page` (its whole run).
    ///
    /// # Errors
    /// [`Error::Invalid`] when the page is not a freelist page;
    /// [`Error::OutsidePage`] when the count says more ids than the run
    /// holds.
    pub fn parse(page: &'p Page<'_>) -> Result<FreelistIds<'p>> {
        if page.header.flags != FREELIST_PAGE {
            return Err(Error::Invalid {
                at: page.at,
                field: "flags",
                value: u64::from(page.header.flags),
                expected: "0x10 (freelist page)",
            });
        }
        let bytes = page.bytes();
        let (count, first, encoding) = if page.header.count == 0xFFFF {
            let n = u64_at(bytes, PAGE_HEADER_SIZE).ok_or(Error::OutsidePage {
                at: page.at,
                field: "count (first slot)",
                offset: PAGE_HEADER_SIZE as u64,
                len: 8,
                size: bytes.len() as u64,
            })?;
            (n, PAGE_HEADER_SIZE + 8, CountEncoding::FirstSlot)
        } else {
            (u64::from(page.header.count), PAGE_HEADER_SIZE, CountEncoding::Header)
        };
        let need = count.checked_mul(8).and_then(|b| b.checked_add(first as u64));
        match need {
            Some(n) if n <= bytes.len() as u64 => Ok(FreelistIds {
                bytes,
                first,
                count: usize::try_from(count).unwrap_or(0),
                encoding,
            }),
            _ => Err(Error::OutsidePage {
                at: page.at,
                field: "count",
                offset: first as u64,
                len: count.saturating_mul(8),
                size: bytes.len() as u64,
            }),
        }
    }

    /// Number of ids.
    #[must_use]
    pub fn len(&self) -> usize {
        self.count
    }

    /// `true` when the page lists no ids.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The ids in stored order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.count).filter_map(move |i| u64_at(self.bytes, self.first + i * 8))
    }

    /// Bytes used: header, optional count slot and ids.
    #[must_use]
    pub fn used_bytes(&self) -> u64 {
        self.first as u64 + self.count as u64 * 8
    }
}
