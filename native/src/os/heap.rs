//! The process heap: the two glibc allocator calls the readers need so
//! that their memory follows what they hold, not what they once held.

/// Allocations of at least this many bytes get their own mapping, returned
/// to the kernel when freed ([`bound_peaks`]).
const MMAP_THRESHOLD: i32 = 128 << 10;

/// Have glibc map every allocation of `MMAP_THRESHOLD` (128 KiB) or more on
/// its own and unmap it when freed. By default glibc raises that
/// threshold to the size of each mapped block freed (up to 32 MiB), so
/// the readers' large, short-lived buffers (a walk's runs, read batches,
/// a layout being written) come from the thread arenas afterwards and
/// their freed bytes stay resident: the live view of a 2 GiB bbolt file
/// peaked at 95 MB with the default and at 68 MB with this (its heap
/// peak is about 60 MB). Call once, at the start of `main`, before
/// threads start; a no-op elsewhere than glibc. A command that keeps what
/// it reads to its end (`inspector etcd`) leaves it out: there the bound
/// only makes each large table's growth a fresh mapping, faulted in page
/// by page.
pub fn bound_peaks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it takes no
    // pointer, and a fixed threshold changes where later blocks are
    // placed, never a live one.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Give the memory a structure read freed back to the system. Under a
/// busy writer a read carries pages between attempts (up to
/// [`crate::observe::settle::LIVE_CARRY_BUDGET`]) and frees them at its end; each
/// re-read runs on a new thread, which glibc gives its own arena, so
/// without this the live view's resident memory kept the freed pages of
/// every arena (285 MB after 20 s on a 272 MiB file, 21 MB when quiet).
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap memory to the kernel; it
    // takes no pointer and leaves every live allocation in place.
    unsafe {
        libc::malloc_trim(0);
    }
}
