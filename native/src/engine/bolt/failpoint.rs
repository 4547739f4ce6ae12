//! A simulated crash inside a commit, for the fuzz harness and tests
//! (hidden from the documentation: not for applications).
//!
//! [`arm`] makes the calling thread's next commit stop part-way through
//! its writes, as a process killed there (or a power cut, with every write
//! that was issued reaching the disk) would leave the file: the first
//! `writes` page writes of the commit complete (each dirty run of pages is
//! one write, in page-id order, then the meta page), the next one writes
//! only its first `torn` bytes, and the commit returns an error without
//! writing anything else. The file is left exactly as the engine's own
//! write order leaves it, so a test that reopens it checks the engine, not
//! a model of it. [`take`] disarms and says where the crash hit.
//!
//! Thread-local, so tests running in parallel do not disturb each other;
//! costs one thread-local read per page write of a commit.

use std::cell::Cell;

/// Where an armed crash hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    /// Writes of the commit that completed before the crash.
    pub writes_done: u32,
    /// Whether the interrupted write was the meta page's.
    pub meta: bool,
    /// Bytes of the interrupted write that reached the file.
    pub bytes: usize,
}

#[derive(Debug, Clone, Copy)]
struct Plan {
    writes: u32,
    torn: usize,
    done: u32,
}

thread_local! {
    static PLAN: Cell<Option<Plan>> = const { Cell::new(None) };
    static FIRED: Cell<Option<Fired>> = const { Cell::new(None) };
}

/// Crash this thread's next commit after `writes` whole page writes, with
/// `torn` bytes of the next one (clamped to its length) written.
pub fn arm(writes: u32, torn: usize) {
    FIRED.with(|f| f.set(None));
    PLAN.with(|p| {
        p.set(Some(Plan { writes, torn, done: 0 }));
    });
}

/// Whether a crash is armed on this thread: a commit then writes its
/// pages itself, in page-id order, instead of handing them to its writer
/// thread as they are made, so the crash lands where the plan says.
pub(crate) fn armed() -> bool {
    PLAN.with(|p| p.get().is_some())
}

/// Disarm; where the crash hit if it did (`None`: the commit, if any,
/// had fewer writes and completed).
pub fn take() -> Option<Fired> {
    PLAN.with(|p| p.set(None));
    FIRED.with(Cell::take)
}

/// Called before each write of a commit (`len` bytes, `meta` for the meta
/// page): `None` to write it whole, or the number of bytes to write before
/// the commit must stop.
pub(crate) fn before_write(len: usize, meta: bool) -> Option<usize> {
    PLAN.with(|p| {
        let mut plan = p.get()?;
        if plan.done < plan.writes {
            plan.done += 1;
            p.set(Some(plan));
            return None;
        }
        p.set(None);
        let bytes = plan.torn.min(len);
        FIRED.with(|f| {
            f.set(Some(Fired { writes_done: plan.done, meta, bytes }));
        });
        Some(bytes)
    })
}

/// Forget a plan that did not fire (the commit ended with fewer writes).
pub(crate) fn commit_ended() {
    PLAN.with(|p| p.set(None));
}
