//! Ctrl-C without half-written output: SIGINT, SIGTERM and SIGHUP only raise
//! a flag. A terminal's Ctrl-C also kills the timed child (same process
//! group); xtask notices the flag when it returns (or between chunks of its
//! own I/O), unwinds with [`Interrupted`], and every guard on the way out
//! removes what it created. Reports are written only at the very end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);

/// Installs the flag-raising handler for SIGINT, SIGTERM and SIGHUP.
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
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// Whether an error chain came from an interruption.
pub fn is_interrupted(e: &anyhow::Error) -> bool {
    raised() || e.chain().any(|c| c.is::<Interrupted>())
}
