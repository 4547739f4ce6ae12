//! bbolt meta pages (pages 0 and 1).
//!
//! Facts from bbolt `internal/common/meta.go` (`Meta`, `Validate`, `Sum64`)
//! and `db.go` (`getPageSize`, `meta()`): after the 16-byte page header,
//! `magic u32 | version u32 | pageSize u32 | flags u32 | root InBucket
//! (root u64, sequence u64) | freelist u64 | pgid u64 | txid u64 |
//! checksum u64`. The checksum is FNV-1a 64 over the 56 bytes from
//! `magic` up to (not including) `checksum`.

use crate::error::MetaFault;

use super::page::{PAGE_HEADER_SIZE, u32_at, u64_at};

/// `magic` of every bbolt meta page.
pub const MAGIC: u32 = 0xED0C_DAED;
/// The only data file `version` bbolt writes and reads.
pub const VERSION: u32 = 2;
/// `freelist` value meaning "no freelist stored" (`PgidNoFreelist`,
/// written with `NoFreelistSync`).
pub const NO_FREELIST: u64 = u64::MAX;
/// Bytes from the page start to the end of the meta (header + 64).
pub const META_END: usize = PAGE_HEADER_SIZE + 64;
/// Smallest page size mapwise accepts (any size from here to
/// [`MAX_PAGE_SIZE`], not only powers of two: bbolt takes what the meta
/// page says).
pub const MIN_PAGE_SIZE: u32 = 512;
/// Largest page size mapwise accepts (bbolt probes up to 16 MiB).
pub const MAX_PAGE_SIZE: u32 = 1 << 24;

/// A decoded meta page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Which meta page this is (0 or 1).
    pub index: u8,
    /// Page header `id` (should equal `index`).
    pub header_id: u64,
    /// Page header `flags` (should be 0x04).
    pub header_flags: u16,
    /// `magic`.
    pub magic: u32,
    /// `version`.
    pub version: u32,
    /// `pageSize` in bytes.
    pub page_size: u32,
    /// `flags` (0 in practice).
    pub flags: u32,
    /// `root.root`: root page id of the top-level tree.
    pub root: u64,
    /// `root.sequence`.
    pub root_sequence: u64,
    /// `freelist`: first page of the freelist run, or [`NO_FREELIST`].
    pub freelist: u64,
    /// `pgid`: the high-water mark, pages in use (every id is below it).
    pub hwm: u64,
    /// `txid` of the transaction that wrote this meta.
    pub txid: u64,
    /// `checksum` as stored.
    pub checksum: u64,
}

/// FNV-1a 64-bit hash (the checksum bbolt uses for meta pages).
#[must_use]
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

impl Meta {
    /// Decode a meta page from its first 80 bytes.
    ///
    /// # Errors
    /// `None` when `page` is shorter than 80 bytes.
    #[must_use]
    pub fn parse(page: &[u8], index: u8) -> Option<Meta> {
        let m = PAGE_HEADER_SIZE;
        Some(Meta {
            index,
            header_id: u64_at(page, 0)?,
            header_flags: super::page::u16_at(page, 8)?,
            magic: u32_at(page, m)?,
            version: u32_at(page, m + 4)?,
            page_size: u32_at(page, m + 8)?,
            flags: u32_at(page, m + 12)?,
            root: u64_at(page, m + 16)?,
            root_sequence: u64_at(page, m + 24)?,
            freelist: u64_at(page, m + 32)?,
            hwm: u64_at(page, m + 40)?,
            txid: u64_at(page, m + 48)?,
            checksum: u64_at(page, m + 56)?,
        })
    }

    /// The 56 checksummed bytes of this meta, re-encoded.
    #[must_use]
    pub fn checksummed_bytes(&self) -> [u8; 56] {
        let mut b = [0u8; 56];
        let fields: [&[u8]; 10] = [
            &self.magic.to_le_bytes(),
            &self.version.to_le_bytes(),
            &self.page_size.to_le_bytes(),
            &self.flags.to_le_bytes(),
            &self.root.to_le_bytes(),
            &self.root_sequence.to_le_bytes(),
            &self.freelist.to_le_bytes(),
            &self.hwm.to_le_bytes(),
            &self.txid.to_le_bytes(),
            &[],
        ];
        let mut o = 0;
        for f in fields {
            if let Some(dst) = b.get_mut(o..o + f.len()) {
                dst.copy_from_slice(f);
            }
            o += f.len();
        }
        b
    }

    /// FNV-1a 64 of the checksummed bytes.
    #[must_use]
    pub fn computed_checksum(&self) -> u64 {
        fnv1a64(&self.checksummed_bytes())
    }

    /// bbolt's validation, in its order: magic, version, checksum
    /// (`Meta.Validate`). A meta page that passes is one bbolt would use,
    /// whatever its `pageSize` says: bbolt reads every page at the size it
    /// took once, from the meta page [`BoltFile::open`] names, and never
    /// looks at the other meta page's field.
    ///
    /// # Errors
    /// The first [`MetaFault`] found.
    ///
    /// [`BoltFile::open`]: super::BoltFile::open
    pub fn validate(&self) -> Result<(), MetaFault> {
        if self.magic != MAGIC {
            return Err(MetaFault::Magic(self.magic));
        }
        if self.version != VERSION {
            return Err(MetaFault::Version(self.version));
        }
        let computed = self.computed_checksum();
        if computed != self.checksum {
            return Err(MetaFault::Checksum { stored: self.checksum, computed });
        }
        Ok(())
    }

    /// The page-size bound mapwise adds, for the meta page the file's page
    /// size is taken from: bbolt checks no page size (a file written with
    /// `Options.PageSize = 3000` is valid), so only sizes no file could use,
    /// or that would make a page larger than bbolt ever probes for, are
    /// refused.
    ///
    /// # Errors
    /// [`MetaFault::PageSize`] outside [`MIN_PAGE_SIZE`]..=[`MAX_PAGE_SIZE`].
    pub fn check_page_size(&self) -> Result<(), MetaFault> {
        if (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&self.page_size) {
            Ok(())
        } else {
            Err(MetaFault::PageSize(self.page_size))
        }
    }

    /// `true` when a freelist page is stored (not `NoFreelistSync`).
    #[must_use]
    pub fn has_freelist(&self) -> bool {
        self.freelist != NO_FREELIST
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_vectors() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
