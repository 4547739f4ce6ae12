//! Files, mappings, page-cache residency and the storage engines of mapwise.
//!
//! `mapwise-core` knows formats; this crate knows files and syscalls, in three layers.
//! [`os`] is the operating system: mappings, reads, residency, locks, local time, the heap.
//! [`engine`] is the storage engines over it: bbolt, RRDtool, revlogs and mmaptest.
//! [`observe`] watches files other processes own: settled reads, live snapshots, traces.
//! [`report`] is what the command lines print.
//! [`describe`] is `mapwise-view`'s describer of byte ranges, which they print too.
//! Neither [`os`] nor [`engine`] depends on them.
//!
//! Of the crates mapwise ships, only this one has `unsafe` code, and it lives in [`os`].
//! Every `unsafe` block there has a `SAFETY:` comment saying why it is sound.
//! Outside [`os`], `unsafe` only calls a function whose soundness rests on its caller.
//! Those are the `unsafe fn`s of [`os`] that map a file, and mmaptest's SSE2 byte sum.
//! Each such call has a `SAFETY:` comment saying how the caller keeps the contract.

pub mod engine;
pub mod observe;
pub mod os;
pub mod report;

pub use mapwise_view::describe;
