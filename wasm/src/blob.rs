//! [`BlobSource`]: a [`PageSource`] over a browser `File` or `Blob`.
//!
//! Bytes are read on demand with `Blob.slice` and `FileReaderSync`, which
//! exists only inside a Web Worker; that is why the module runs there: the
//! reads are synchronous, so `mapwise-core`'s synchronous `PageSource`
//! works unchanged (parquet-viewer reads ranges the same way, but
//! asynchronously). The file is never read whole: `arrayBuffer()` of a
//! multi-gigabyte file fails in Chromium, and wasm32 memory ends at 4 GiB.
//!
//! Small reads are served from a few aligned blocks kept in memory (a walk
//! reads page after page; a revlog reads 64-byte entries), so the number
//! of browser calls stays low; the blocks bound the cache at
//! [`BLOCK`] × [`BLOCKS`] bytes.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use js_sys::Uint8Array;
use mapwise_core::{At, Error, PageSource, Result};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, FileReaderSync};

/// Bytes per cached block.
pub const BLOCK: u64 = 1024 * 1024;
/// Blocks kept.
pub const BLOCKS: usize = 8;

/// Byte ranges of a browser `Blob`, read with `FileReaderSync`.
#[derive(Debug)]
pub struct BlobSource {
    blob: Blob,
    reader: FileReaderSync,
    len: u64,
    /// Most recently used last: (block index, bytes).
    cache: RefCell<Vec<(u64, Vec<u8>)>>,
    /// What the browser said about the last failed read.
    last_error: RefCell<Option<String>>,
    reads: Cell<u64>,
    bytes_read: Cell<u64>,
    /// The file ranges fetched at least once, `[start, end)`, sorted and
    /// merged: [`BlobSource::stats`] reports their total beside the bytes
    /// fetched, which count a block again each time the cache dropped it.
    fetched: RefCell<Vec<(u64, u64)>>,
}

/// Add `[start, end)` to the sorted, merged ranges `v`.
fn add_range(v: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let first = v.partition_point(|r| r.1 < start);
    let last = v.partition_point(|r| r.0 <= end);
    if first >= last {
        v.insert(first, (start, end));
        return;
    }
    let merged = (
        v.get(first).map_or(start, |r| r.0.min(start)),
        v.get(last - 1).map_or(end, |r| r.1.max(end)),
    );
    v.splice(first..last, [merged]);
}

/// A `Blob` offset or length as JavaScript wants it. File sizes are below
/// 2^53, where `f64` is exact.
#[expect(clippy::cast_precision_loss)]
fn js_num(v: u64) -> f64 {
    v as f64
}

impl BlobSource {
    /// A source over `blob`.
    ///
    /// # Errors
    /// When `FileReaderSync` is missing (outside a Web Worker).
    pub fn new(blob: Blob) -> Result<BlobSource, JsValue> {
        let reader = FileReaderSync::new()?;
        let size = blob.size();
        // `Blob.size` is a whole number of bytes below 2^53.
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let len = if size.is_finite() && size > 0.0 { size as u64 } else { 0 };
        Ok(BlobSource {
            blob,
            reader,
            len,
            cache: RefCell::new(Vec::with_capacity(BLOCKS)),
            last_error: RefCell::new(None),
            reads: Cell::new(0),
            bytes_read: Cell::new(0),
            fetched: RefCell::new(Vec::new()),
        })
    }

    /// Browser reads so far, the bytes they returned (a block the cache
    /// dropped and needed again counts each time), and the distinct file
    /// bytes among them (at most the file's size).
    #[must_use]
    pub fn stats(&self) -> (u64, u64, u64) {
        let distinct = self.fetched.borrow().iter().map(|r| r.1 - r.0).sum();
        (self.reads.get(), self.bytes_read.get(), distinct)
    }

    /// What the browser said about the last failed read, if any; taken,
    /// so a later failure of another kind is not blamed on it.
    #[must_use]
    pub fn take_last_error(&self) -> Option<String> {
        self.last_error.borrow_mut().take()
    }

    /// Exactly `[offset, offset + len)` from the browser; the caller has
    /// checked the range.
    fn fetch(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let fail = |what: JsValue| {
            *self.last_error.borrow_mut() = Some(js_error_text(&what));
            Error::Read { offset, len, code: 0 }
        };
        let part =
            self.blob.slice_with_f64_and_f64(js_num(offset), js_num(offset + len)).map_err(fail)?;
        let buf = self.reader.read_as_array_buffer(&part).map_err(fail)?;
        let arr = Uint8Array::new(&buf);
        if u64::from(arr.length()) != len {
            *self.last_error.borrow_mut() = Some(format!(
                "short read: {} of {len} bytes (the file changed after it was chosen?)",
                arr.length()
            ));
            return Err(Error::Read { offset, len, code: 0 });
        }
        self.reads.set(self.reads.get() + 1);
        self.bytes_read.set(self.bytes_read.get() + len);
        add_range(&mut self.fetched.borrow_mut(), offset, offset + len);
        Ok(arr.to_vec())
    }
}

/// `name: message` of a JavaScript `Error` (a `DOMException` is one), else
/// the value as text.
fn js_error_text(v: &JsValue) -> String {
    match v.dyn_ref::<js_sys::Error>() {
        Some(e) => format!("{}: {}", String::from(e.name()), String::from(e.message())),
        None => v.as_string().unwrap_or_else(|| format!("{v:?}")),
    }
}

impl PageSource for BlobSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        let n = len as u64;
        let end = offset.checked_add(n).filter(|&e| e <= self.len).ok_or(Error::OutOfBounds {
            at: At::Offset(offset),
            field: "read",
            offset,
            len: n,
            size: self.len,
        })?;
        if n == 0 {
            return Ok(Cow::Owned(Vec::new()));
        }
        let block = offset / BLOCK;
        if (end - 1) / BLOCK != block {
            // Spans blocks (a large page run): read it directly.
            return self.fetch(offset, n).map(Cow::Owned);
        }
        let mut cache = self.cache.borrow_mut();
        let pos = match cache.iter().position(|(b, _)| *b == block) {
            Some(p) => p,
            None => {
                let start = block * BLOCK;
                let bytes = self.fetch(start, BLOCK.min(self.len - start))?;
                if cache.len() >= BLOCKS {
                    cache.remove(0);
                }
                cache.push((block, bytes));
                cache.len() - 1
            }
        };
        let entry = cache.remove(pos);
        let from = usize::try_from(offset - block * BLOCK).unwrap_or(usize::MAX);
        let out = entry.1.get(from..from.saturating_add(len)).map(<[u8]>::to_vec);
        cache.push(entry);
        out.map(Cow::Owned).ok_or(Error::Read { offset, len: n, code: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::add_range;

    #[test]
    fn ranges_merge() {
        let mut v = Vec::new();
        add_range(&mut v, 10, 20);
        add_range(&mut v, 30, 40);
        add_range(&mut v, 10, 20);
        assert_eq!(v, [(10, 20), (30, 40)]);
        add_range(&mut v, 0, 5);
        add_range(&mut v, 15, 35);
        assert_eq!(v, [(0, 5), (10, 40)]);
        add_range(&mut v, 5, 10);
        assert_eq!(v, [(0, 40)]);
        add_range(&mut v, 50, 60);
        assert_eq!(v.iter().map(|r| r.1 - r.0).sum::<u64>(), 50);
    }
}

/// A [`BlobSource`] shared between the viewer and the bindings (which ask
/// it what the browser said when a read fails).
#[derive(Debug, Clone)]
pub struct SharedBlob(pub std::rc::Rc<BlobSource>);

impl PageSource for SharedBlob {
    fn len(&self) -> u64 {
        self.0.len()
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        self.0.read_at(offset, len)
    }
}
