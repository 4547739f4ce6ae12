//! `mapwise-wasm`: the browser viewer's WebAssembly module.
//!
//! A person with a `.db`, `.rrd` or revlog `.i` file and no Rust toolchain
//! opens `wasm/www/index.html` (served by `cargo xtask serve`), picks or
//! drops the file, and sees what `inspector` shows: the format, a page map
//! coloured by page kind, the structure, and any page decoded — read-only,
//! entirely in the browser, nothing uploaded.
//!
//! * [`blob`] — [`blob::BlobSource`], a `PageSource` over the browser's
//!   `File`/`Blob` that reads byte ranges (`Blob.slice` +
//!   `FileReaderSync`, so it runs in a Web Worker and core's synchronous
//!   reads work unchanged). Files are never read whole.
//! * [`view`] — what the page shows, computed from `mapwise-core` over
//!   any `PageSource`; plain Rust, unit-tested on the host.
//! * [`trace`] — a residency trace loaded beside the file, as per-cell
//!   residency levels of each frame (the terminal's `inspector replay`).
//! * [`bindings`] — the wasm-bindgen exports (`Viewer`, `detect`,
//!   `kinds`), results converted with serde-wasm-bindgen (`u64` as
//!   `BigInt`, maps as plain objects).
//!
//! The page itself (`www/`: `index.html`, `app.js`, `worker.js`,
//! `style.css`) is static and needs no bundler. `cargo xtask wasm` builds
//! the module and assembles the site; `wasm/tests/` drives it in headless
//! Chromium.
//!
//! **Invariant: no format logic here.** Layouts, decoded pages and values
//! come from `mapwise-core`; this crate pages and words them. It compiles
//! for the host too (wasm-bindgen's imports panic there if called), so
//! `cargo build/test/clippy --workspace` cover it.
#![forbid(unsafe_code)]

pub mod bindings;
pub mod blob;
pub mod trace;
pub mod view;
