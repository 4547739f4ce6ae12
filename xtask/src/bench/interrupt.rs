//! Ctrl-C without half-written output.
//!
//! SIGINT, SIGTERM and SIGHUP only raise a flag. A terminal's Ctrl-C also
//! reaches the child being timed (same process group), which dies at once;
//! xtask notices the flag when that child returns (or between chunks of its
//! own I/O), unwinds with [`Interrupted`], and every guard on the way out
//! removes what it created (temporary files, the sparse file). Reports are
//! written only at the very end, to temporary names renamed into place.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs the flag-raising handler for SIGINT, SIGTERM and SIGHUP.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `sigaction` is zero-initialisable plain data; the handler
        // only does an atomic store, which is async-signal-safe; SA_RESTART
        // keeps blocking waits for children going.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&raw mut act.sa_mask);
            libc::sigaction(sig, &raw const act, std::ptr::null_mut());
        }
    }
}

/// Whether a signal has arrived.
pub fn raised() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// `Err(Interrupted)` once a signal has arrived.
pub fn check() -> Result<(), Interrupted> {
    if raised() { Err(Interrupted) } else { Ok(()) }
}

/// The error a bench unwinds with after Ctrl-C.
#[derive(Debug, Clone, Copy)]
pub struct Interrupted;

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// Whether an error chain came from an interruption.
pub fn is_interrupted(e: &anyhow::Error) -> bool {
    raised() || e.chain().any(|c| c.is::<Interrupted>())
}
