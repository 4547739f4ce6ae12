//! The storage engines: bbolt, RRDtool and Mercurial revlogs over real
//! files, and the read()-vs-mmap microbenchmark, each through [`crate::os`]
//! for its files, mappings and locks.

pub mod bolt;
pub mod mmaptest;
pub mod revlog;
pub mod rng;
pub mod rrd;
