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

/// A failure about what the file holds (a bucket or key that is not
/// there, a value where a bucket is expected, a damaged page): exit
/// status 1, where a failure to run is 2.
#[derive(Debug)]
pub struct Problem(pub String);

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Problem {}

/// A [`Problem`] (exit status 1) with a hint: what the user most likely
/// meant. [`json_errors`] prints the problem's message, then `hint: …`
/// on a line of its own; with `--json`, `{"error": …, "hint": …}`.
#[derive(Debug)]
pub struct Hinted {
    /// The failure, printed as it is without a hint.
    pub problem: Problem,
    /// One line of advice, without the `hint: ` prefix.
    pub hint: String,
}

impl std::fmt::Display for Hinted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.problem.fmt(f)
    }
}

impl std::error::Error for Hinted {}

/// The README's promise for exit statuses and `--json`: a failure that
/// is a [`Problem`] (or [`Hinted`]) exits 1 (its message on stderr, then
/// the hint's line), any other exits 2; when the subcommand asked for
/// JSON either prints `{"error": "..."}` (and `"hint"`) on stdout
/// instead. A closed pipe passes through (it is not a failure).
pub fn json_errors(json: bool, result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    use std::fmt::Write as _;
    match result {
        Err(e) if is_broken_pipe(&e) => Err(e),
        Err(e) => {
            let hint = e.downcast_ref::<Hinted>().map(|h| h.hint.as_str());
            let problem = hint.is_some() || e.downcast_ref::<Problem>().is_some();
            let code = if problem {
                ExitCode::FAILURE
            } else {
                ExitCode::from(2)
            };
            if json {
                let mut v = serde_json::json!({ "error": format!("{e:#}") });
                if let Some(h) = hint {
                    v["hint"] = h.into();
                }
                let mut out = Out::new();
                let _ = writeln!(out, "{v}");
                out.finish()?;
                Ok(code)
            } else if problem {
                eprintln!("mapwise: {e:#}");
                if let Some(h) = hint {
                    eprintln!("hint: {h}");
                }
                Ok(code)
            } else {
                Err(e)
            }
        }
        r => r,
    }
}
