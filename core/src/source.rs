//! Where the bytes come from: [`PageSource`].
//!
//! Parsers never see a file, only something that hands out byte ranges.
//! A slice (or a memory mapping, which `mapwise-native` exposes as a
//! slice) hands out borrowed sub-slices, so parsing it copies nothing; a
//! `pread` source or the browser's `Blob` reader hands out owned buffers.

use alloc::borrow::Cow;

use crate::error::{At, Error, Result};

/// Random-access, read-only bytes: a file, a mapping, a browser `Blob`.
///
/// Implementations must return exactly `len` bytes or an error; they must
/// never return bytes from outside `[0, self.len())`.
pub trait PageSource {
    /// Length of the source in bytes.
    fn len(&self) -> u64;

    /// `true` when the source holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Exactly the `len` bytes at `offset`.
    ///
    /// # Errors
    /// [`Error::OutOfBounds`] when the range is not inside the source,
    /// [`Error::Read`] when the underlying read fails.
    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>>;

    /// `true` when whoever reads through this source should stop: what it
    /// reads now would be thrown away (a reader of a file a writer changes
    /// knows the bytes are no longer of one snapshot). The bbolt walk
    /// ([`crate::bolt::walk`]) checks it before each tree page and returns
    /// what it has, marked incomplete. Never, by default.
    fn interrupted(&self) -> bool {
        false
    }
}

impl PageSource for [u8] {
    fn len(&self) -> u64 {
        self.len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        let range =
            checked_range(offset, len as u64, self.len() as u64, At::Offset(offset), "read")?;
        Ok(Cow::Borrowed(&self[range]))
    }
}

impl<S: PageSource + ?Sized> PageSource for &S {
    fn len(&self) -> u64 {
        (**self).len()
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        (**self).read_at(offset, len)
    }

    fn interrupted(&self) -> bool {
        (**self).interrupted()
    }
}

impl PageSource for alloc::vec::Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        self.as_slice().read_at(offset, len)
    }
}

/// `offset..offset + len` as a `usize` range if it lies inside `[0, size)`,
/// else [`Error::OutOfBounds`] naming `at` and `field`.
///
/// # Errors
/// [`Error::OutOfBounds`] when the range overflows or passes `size`.
pub fn checked_range(
    offset: u64,
    len: u64,
    size: u64,
    at: At,
    field: &'static str,
) -> Result<core::ops::Range<usize>> {
    match offset.checked_add(len) {
        Some(end) if end <= size => {
            let start = usize::try_from(offset).map_err(|_| oob(at, field, offset, len, size))?;
            let end = usize::try_from(end).map_err(|_| oob(at, field, offset, len, size))?;
            Ok(start..end)
        }
        _ => Err(oob(at, field, offset, len, size)),
    }
}

fn oob(at: At, field: &'static str, offset: u64, len: u64, size: u64) -> Error {
    Error::OutOfBounds { at, field, offset, len, size }
}

/// Sub-range `range` of `bytes`, keeping the borrow when `bytes` is
/// borrowed (zero-copy) and copying otherwise. The caller has checked
/// `range` against `bytes.len()`.
#[inline]
pub(crate) fn sub_cow<'s>(bytes: &Cow<'s, [u8]>, range: core::ops::Range<usize>) -> Cow<'s, [u8]> {
    match bytes {
        Cow::Borrowed(b) => Cow::Borrowed(b.get(range).unwrap_or_default()),
        Cow::Owned(v) => Cow::Owned(v.get(range).unwrap_or_default().to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_reads_are_bounded() {
        let data = [1u8, 2, 3, 4];
        let s: &[u8] = &data;
        assert_eq!(&*s.read_at(1, 2).unwrap(), &[2, 3]);
        assert!(matches!(s.read_at(3, 2), Err(Error::OutOfBounds { .. })));
        assert!(matches!(s.read_at(u64::MAX, 2), Err(Error::OutOfBounds { .. })));
        assert_eq!(&*s.read_at(4, 0).unwrap(), &[] as &[u8]);
    }
}
