//! Files, mappings, page-cache residency and the storage engines of mapwise.
//!
//! `mapwise-core` knows formats; this crate knows files and syscalls, in three layers.
//! [`os`] is the operating system: mappings, reads, page-cache residency, locks, local time and the allocator, each a small safe function where it can be.
//! [`engine`] is the storage engines over it: bbolt, RRDtool, Mercurial revlogs and the read()-vs-mmap benchmark.
//! [`observe`] watches files other processes own: the quiet, settled reads of a live bbolt file, the live view's snapshots and residency traces.
//! [`describe`] and [`report`] are what the command lines print; `os` and `engine` never depend on them.
//!
//! Of the crates mapwise ships, this is the only one with `unsafe` code, and it lives in [`os`], each block with a `SAFETY:` comment saying why it is sound.
//! Outside [`os`], `unsafe` only calls a function whose soundness rests on its caller, with a `SAFETY:` comment saying how the caller keeps it: an `unsafe fn` of [`os`] that maps a file, or mmaptest's SSE2 byte sum (a `#[target_feature]` function).

pub mod describe;
pub mod engine;
pub mod observe;
pub mod os;
pub mod report;
