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
use std::sync::{Arc, LazyLock};

/// Raised by the signal handlers that [`install`] registers.
static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// Installs the flag-raising handler for SIGINT, SIGTERM and SIGHUP
/// (signal-hook's: an atomic store, async-signal-safe).
pub fn install() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        // Without the handler Ctrl-C still stops xtask, only less tidily.
        let _ = signal_hook::flag::register(sig, Arc::clone(&INTERRUPTED));
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
