//! The operating system layer: every system call and mapping the engines
//! and observers make, behind small safe functions.
//!
//! Each `unsafe` block here has a `SAFETY:` comment saying why it is
//! sound; a function whose soundness rests on its caller (a mapping that
//! nobody may truncate) is an `unsafe fn` with a `# Safety` section.

pub mod heap;
pub mod io;
pub mod map;
pub mod residency;
