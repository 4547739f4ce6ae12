//! Buffered stdout that the core's `fmt::Write` printers can use.

use std::fmt;
use std::io::{self, BufWriter, Stdout, Write};

/// Buffered stdout as a `fmt::Write`, keeping the first I/O error.
pub struct Out {
    w: BufWriter<Stdout>,
    /// The first write error, reported after the printer gives up.
    pub error: Option<io::Error>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            w: BufWriter::with_capacity(1 << 20, io::stdout()),
            error: None,
        }
    }

    /// Write raw bytes (a value printed with `--format bytes` need not be
    /// UTF-8), keeping the first error as the `fmt::Write` side does.
    pub fn write_bytes(&mut self, b: &[u8]) {
        if self.error.is_none()
            && let Err(e) = self.w.write_all(b)
        {
            self.error = Some(e);
        }
    }

    /// Flush, returning the first error seen.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.w.flush()
    }
}

impl fmt::Write for Out {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.w.write_all(s.as_bytes()).map_err(|e| {
            self.error.get_or_insert(e);
            fmt::Error
        })
    }
}

/// `true` when the error is (caused by) a closed pipe: the reader went
/// away (`mapwise bolt dump f | head`), which is not a failure.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
