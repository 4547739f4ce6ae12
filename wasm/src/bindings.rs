//! The JavaScript API (wasm-bindgen): [`Viewer`] and a few free functions.
//!
//! Results are plain JavaScript objects made by serde-wasm-bindgen with
//! every `u64`/`i64` as a `BigInt` (txids, checksums, offsets and page ids
//! survive exactly) and maps as plain objects. Arguments that are
//! positions (pages, offsets, counts) are JavaScript numbers: whole,
//! non-negative and below 2^53, else the call throws. Errors are thrown as
//! `Error` objects whose message is the text the page shows.
//!
//! Call it from a Web Worker: reads use `FileReaderSync`.
//!
//! ```js
//! import init, { Viewer } from './pkg/mapwise_wasm.js';
//! await init();
//! const v = Viewer.open(file, file.name);   // File from <input type=file>
//! const s = v.summary();                    // { format: 'bolt', size: 65536n, ... }
//! const cells = v.map(0, 1, 64);            // Uint8Array of kind indexes
//! ```

use std::rc::Rc;

use serde::Serialize;
use wasm_bindgen::prelude::*;
use web_sys::Blob;

use crate::blob::{BlobSource, SharedBlob};
use crate::view;

fn to_js<T: Serialize + ?Sized>(v: &T) -> Result<JsValue, JsError> {
    let s = serde_wasm_bindgen::Serializer::new()
        .serialize_large_number_types_as_bigints(true)
        .serialize_maps_as_objects(true);
    v.serialize(&s).map_err(|e| JsError::new(&e.to_string()))
}

/// A JavaScript number used as a position: whole, `0 <= v < 2^53`.
fn position(v: f64, what: &str) -> Result<u64, JsError> {
    const MAX: f64 = 9_007_199_254_740_992.0;
    if (0.0..MAX).contains(&v) && v.fract() == 0.0 {
        // Checked just above: whole and inside u64.
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(v as u64)
    } else {
        Err(JsError::new(&format!("{what} must be a whole number from 0 to 2^53, not {v}")))
    }
}

/// The format of `blob` by its first bytes: `bolt`, `revlog`, `rrd` or
/// `unknown`.
///
/// # Errors
/// Outside a Web Worker (no `FileReaderSync`).
#[wasm_bindgen]
pub fn detect(blob: Blob) -> Result<String, JsError> {
    let src = BlobSource::new(blob).map_err(|e| JsError::new(&format!("{e:?}")))?;
    Ok(mapwise_core::detect::detect(&src).name().to_string())
}

/// Every page kind in legend order: `[{ index, name, color }]`; a map
/// cell holds a kind's `index` (255: past the end of the file).
///
/// # Errors
/// Never in practice (serialisation).
#[wasm_bindgen]
pub fn kinds() -> Result<JsValue, JsError> {
    to_js(&view::kinds())
}

/// This module's version (the workspace version).
#[wasm_bindgen]
#[must_use]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// An opened file: call `free()` when done with it.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Viewer {
    blob: Rc<BlobSource>,
    inner: view::Viewer<SharedBlob>,
}

impl Viewer {
    /// An error, with what the browser said if a read failed.
    fn fail(&self, e: &str) -> JsError {
        fail(&self.blob, e)
    }

    fn js<T: Serialize>(&self, r: Result<T, String>) -> Result<JsValue, JsError> {
        match r {
            Ok(v) => to_js(&v),
            Err(e) => Err(self.fail(&e)),
        }
    }
}

/// `e` as a JavaScript error. When a browser read failed, say what that
/// means here: the `File` handed to the page changed on disk (or went
/// away) after it was picked, and only picking it again reads it anew.
fn fail(blob: &BlobSource, e: &str) -> JsError {
    match blob.take_last_error() {
        Some(b) => JsError::new(&format!(
            "{e}: the browser could not read the file: it changed on disk or is no longer readable since it was picked; pick it again (browser: {b})"
        )),
        None => JsError::new(e),
    }
}

#[wasm_bindgen]
impl Viewer {
    /// Open `blob` (a `File`), detect its format and label every byte.
    /// Reads the structure the walk needs, never the whole file.
    ///
    /// # Errors
    /// When the file cannot be read as its format at all (e.g. no valid
    /// bbolt meta page); the message says why.
    pub fn open(blob: Blob, name: String) -> Result<Viewer, JsError> {
        let src = Rc::new(BlobSource::new(blob).map_err(|e| {
            JsError::new(&format!(
                "cannot read files here (FileReaderSync needs a Web Worker): {e:?}"
            ))
        })?);
        let inner =
            view::Viewer::open(SharedBlob(Rc::clone(&src)), name).map_err(|e| fail(&src, &e))?;
        Ok(Viewer { blob: src, inner })
    }

    /// Header facts, kinds present with their bytes, problems.
    ///
    /// # Errors
    /// Never in practice (serialisation).
    pub fn summary(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.summary())
    }

    /// `cells` map cells of `per_cell` pages each from page `first`: a
    /// `Uint8Array` of kind indexes (see `kinds()`), 255 past the end.
    ///
    /// # Errors
    /// When a position is not a whole number below 2^53.
    pub fn map(&self, first: f64, per_cell: f64, cells: u32) -> Result<Vec<u8>, JsError> {
        Ok(self.inner.map(position(first, "first")?, position(per_cell, "per_cell")?, cells))
    }

    /// What `pages` map pages from `first` hold (for the hover text).
    ///
    /// # Errors
    /// When a position is not a whole number below 2^53.
    pub fn cell(&self, first: f64, pages: f64) -> Result<JsValue, JsError> {
        to_js(&self.inner.cell(position(first, "first")?, position(pages, "pages")?))
    }

    /// `count` sub-buckets of bucket `parent` (a group index; `undefined`
    /// for the top-level buckets) from the `start`th: `{ total, start,
    /// items }`.
    ///
    /// # Errors
    /// When `start` is not a whole number below 2^53.
    pub fn children(
        &self,
        parent: Option<u32>,
        start: f64,
        count: u32,
    ) -> Result<JsValue, JsError> {
        to_js(&self.inner.children(parent, position(start, "start")?, count))
    }

    /// `count` keys of bucket `group` from the first key `>= from_hex`
    /// (hex; `undefined` for the first key): `{ items, next }`, where
    /// `next` is the `from_hex` of the following screen.
    ///
    /// # Errors
    /// When `from_hex` is not hex, or a page on the way is damaged.
    pub fn keys(
        &self,
        group: u32,
        from_hex: Option<String>,
        count: u32,
    ) -> Result<JsValue, JsError> {
        let from = match from_hex.as_deref() {
            Some(h) => Some(
                mapwise_view::fmt::unhex(h)
                    .ok_or_else(|| JsError::new(&format!("not hex: {h:?}")))?,
            ),
            None => None,
        };
        self.js(self.inner.keys(group, from.as_deref(), count))
    }

    /// Map page `page` decoded (a bbolt page's header and elements; the
    /// described structures of other formats).
    ///
    /// # Errors
    /// When `page` is not a whole number below 2^53.
    pub fn page(&self, page: f64) -> Result<JsValue, JsError> {
        to_js(&self.inner.page(position(page, "page")?))
    }

    /// A hex dump of `len` bytes (at most 16 KiB) from `offset`: `[{ offset,
    /// hex, ascii }]`.
    ///
    /// # Errors
    /// When the bytes cannot be read.
    pub fn hex(&self, offset: f64, len: f64) -> Result<JsValue, JsError> {
        let r = self.inner.hex(position(offset, "offset")?, position(len, "len")?);
        self.js(r)
    }

    /// `count` revlog entries from revision `from`, older ones next when
    /// `newest_first`: `{ total, items, error }`.
    ///
    /// # Errors
    /// When the file is not a revlog index.
    pub fn entries(&self, from: f64, count: u32, newest_first: bool) -> Result<JsValue, JsError> {
        if !from.is_finite() || from.fract() != 0.0 || from.abs() > f64::from(i32::MAX) {
            return Err(JsError::new(&format!("from must be a revision, not {from}")));
        }
        // Checked just above: whole and inside i32.
        #[expect(clippy::cast_possible_truncation)]
        let from = from as i64;
        self.js(self.inner.entries(from, count, newest_first))
    }

    /// `count` rows of archive `rra`, newest first from the `from`th newest
    /// (0 = the current row): `{ total, items: [{ age, row, time, values }] }`
    /// with `rrdtool dump`'s times and value texts.
    ///
    /// # Errors
    /// When the file is not an RRD or a row cannot be read.
    #[wasm_bindgen(js_name = rraRows)]
    pub fn rra_rows(&self, rra: u32, from: f64, count: u32) -> Result<JsValue, JsError> {
        let r = self.inner.rra_rows(rra, position(from, "from")?, count);
        self.js(r)
    }

    /// Browser reads made so far: `{ reads, bytes, distinct }` (numbers):
    /// the reads, the bytes they fetched (a block the small cache dropped
    /// and needed again counts each time, so this can exceed the file),
    /// and the distinct file bytes fetched (at most the file's size).
    ///
    /// # Errors
    /// Never in practice (serialisation).
    pub fn reads(&self) -> Result<JsValue, JsError> {
        #[derive(Serialize)]
        struct Reads {
            reads: f64,
            bytes: f64,
            distinct: f64,
        }
        let (reads, bytes, distinct) = self.blob.stats();
        #[expect(clippy::cast_precision_loss)]
        to_js(&Reads { reads: reads as f64, bytes: bytes as f64, distinct: distinct as f64 })
    }
}

/// A residency trace (`inspector record`, `cargo xtask bench`) to play
/// over the open file's map: call `free()` when done with it.
#[wasm_bindgen]
#[derive(Debug)]
pub struct Trace {
    inner: crate::trace::TraceView,
}

#[wasm_bindgen]
impl Trace {
    /// Decode a whole trace file (traces are small: one run list per
    /// frame).
    ///
    /// # Errors
    /// Not a trace, a newer trace version, a damaged header or frame, or
    /// no frames; the message says which and where.
    pub fn parse(bytes: &[u8]) -> Result<Trace, JsError> {
        crate::trace::TraceView::parse(bytes)
            .map(|inner| Trace { inner })
            .map_err(|e| JsError::new(&e))
    }

    /// `{ path, label, os_page_size, interval_us, frames, duration_us,
    /// truncated_tail }` (u64s as BigInt).
    ///
    /// # Errors
    /// Never in practice (serialisation).
    pub fn summary(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.summary())
    }

    /// Frame `index` (clamped): `{ index, t_us, file_len, known,
    /// resident_pages, total_pages }`.
    ///
    /// # Errors
    /// When `index` is not a whole number below 2^53.
    pub fn frame(&self, index: f64) -> Result<JsValue, JsError> {
        let i = usize::try_from(position(index, "index")?).unwrap_or(usize::MAX);
        to_js(&self.inner.frame(i))
    }

    /// The frame on show `t_us` microseconds after the first.
    ///
    /// # Errors
    /// When `t_us` is not a whole number below 2^53.
    #[wasm_bindgen(js_name = frameAt)]
    pub fn frame_at(&self, t_us: f64) -> Result<u32, JsError> {
        let i = self.inner.frame_at(position(t_us, "t_us")?);
        Ok(u32::try_from(i).unwrap_or(u32::MAX))
    }

    /// Residency levels of `cells` map cells of `per_cell` map pages of
    /// `unit` bytes from map page `first`, in frame `index`: a
    /// `Uint8Array` of 0 none, 1 some, 2 more than half, 3 all, 255 past
    /// the file's end then.
    ///
    /// # Errors
    /// When a position is not a whole number below 2^53.
    pub fn levels(
        &self,
        index: f64,
        first: f64,
        per_cell: f64,
        unit: f64,
        cells: u32,
    ) -> Result<Vec<u8>, JsError> {
        Ok(self.inner.levels(
            usize::try_from(position(index, "index")?).unwrap_or(usize::MAX),
            position(first, "first")?,
            position(per_cell, "per_cell")?,
            position(unit, "unit")?,
            cells,
        ))
    }
}
