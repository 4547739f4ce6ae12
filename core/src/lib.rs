//! Zero-copy, panic-free parsers of the page formats of mmap-backed
//! storage files: bbolt (and etcd's data model in it), RRDtool and
//! Mercurial revlog.
//!
//! The flow every front end follows: bytes from a [`PageSource`] → a
//! format parser ([`bolt`]) → a [`Layout`] of labelled regions → drawn by
//! the CLI, the terminal inspector and the browser viewer alike.
//!
//! **Architecture invariants.** This crate does no I/O of its own (it
//! reads only through [`PageSource`]), is `no_std` (with `alloc` for
//! layouts and cursors), has no `unsafe`, and never panics or trusts a
//! length, offset, page id or count read from a file: every one is checked
//! against the source, and walks are bounded by depth and by a visited set.
#![no_std]
#![forbid(unsafe_code)]

#[cfg(feature = "alloc")]
extern crate alloc;

pub mod error;

#[cfg(feature = "alloc")]
pub mod bolt;
#[cfg(feature = "alloc")]
pub mod detect;
#[cfg(feature = "alloc")]
pub mod etcd;
#[cfg(feature = "alloc")]
pub mod layout;
#[cfg(feature = "alloc")]
pub mod regions;
#[cfg(feature = "alloc")]
pub mod revlog;
#[cfg(feature = "alloc")]
pub mod rrd;
#[cfg(feature = "alloc")]
pub mod source;
#[cfg(feature = "trace")]
pub mod trace;

pub use error::{At, Error, EtcdFault, MetaFault, Result};
#[cfg(feature = "alloc")]
pub use layout::{Format, Group, Kind, Layout, Region};
#[cfg(feature = "alloc")]
pub use regions::Regions;
#[cfg(feature = "alloc")]
pub use source::PageSource;
