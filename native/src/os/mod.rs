//! The operating system layer: the system calls, mappings and C library
//! calls the engines and observers make, behind small safe functions:
//! [`map`] (mappings), [`io`] (page sources over files, `O_DIRECT`),
//! [`residency`] (mincore, cachestat and the vmtouch verbs), [`lock`]
//! (`flock` and `fcntl` locks), [`time`] (local time), [`usage`] (this
//! process's CPU time and faults), [`process`] (children: stop, reap with
//! their usage, die with us) and [`heap`] (the allocator).
//!
//! Each `unsafe` block here has a `SAFETY:` comment saying why it is
//! sound; a function whose soundness rests on its caller (a mapping that
//! nobody may truncate) is an `unsafe fn` with a `# Safety` section.

pub mod heap;
pub mod io;
pub mod lock;
pub mod map;
pub mod process;
pub mod residency;
pub mod time;
pub mod usage;
