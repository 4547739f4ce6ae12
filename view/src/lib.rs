//! `mapwise-view`: what the terminal front end (`inspector`) and the
//! browser viewer (`mapwise-wasm`) both show, computed once.
//!
//! * [`fmt`]: bytes as hex, sizes for people, RRD values as rrdtool prints
//!   them.
//! * [`palette`]: the colour of each page kind (an xterm palette index,
//!   and its CSS colour for the page).
//! * [`residency`]: how much of a map cell is in the page cache, the one
//!   four-level rule, and its map glyphs.
//! * [`totals`]: bytes, regions and pages per kind ([`totals::KindTotal`]).
//! * [`describe`]: the structures in a byte range of a revlog or an RRD as
//!   titled field lists ([`describe::Item`]).
//!
//! Everything is computed from `mapwise-core`'s layouts and decoders over
//! any [`PageSource`](mapwise_core::PageSource): no I/O, no system calls,
//! and it builds for `wasm32-unknown-unknown`. Bad input gives an error
//! or a "?" in the text, never a panic.
#![forbid(unsafe_code)]

pub mod describe;
pub mod fmt;
pub mod palette;
pub mod residency;
pub mod totals;
