//! Buffered stdout that the core's `fmt::Write` printers can use.

use std::fmt;
use std::io::{self, BufWriter, Stdout, Write};
use std::process::ExitCode;

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

/// The README's promise for `--json`: when a subcommand asked for JSON
/// fails (other than by a closed pipe), print `{"error": "..."}` on
/// stdout and exit 2; otherwise pass the result through.
pub fn json_errors(json: bool, result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    use std::fmt::Write as _;
    match result {
        Err(e) if json && !is_broken_pipe(&e) => {
            let mut out = Out::new();
            let _ = writeln!(out, "{}", serde_json::json!({ "error": format!("{e:#}") }));
            out.finish()?;
            Ok(ExitCode::from(2))
        }
        r => r,
    }
}
