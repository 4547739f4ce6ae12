//! Files, mappings, page-cache residency and the storage engines of mapwise.
//!
//! `mapwise-core` knows formats; this crate knows files and syscalls. It is
//! the only crate of the workspace with `unsafe` code (mmap, mincore,
//! cachestat), and every `unsafe` block says why it is sound.

pub mod bolt;
pub mod describe;
pub mod heap;
pub mod io;
pub mod map;
pub mod mmaptest;
pub mod report;
pub mod residency;
pub mod revlog;
pub mod rng;
pub mod rrd;
pub mod settle;
pub mod trace;
pub mod watch;
