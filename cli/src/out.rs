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
        Out { w: BufWriter::with_capacity(1 << 20, io::stdout()), error: None }
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
        c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
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
/// JSON either also prints `{"error": "..."}` (and `"hint"`) on stdout,
/// as `inspector` does. A closed pipe passes through (it is not a
/// failure).
pub fn json_errors(json: bool, result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    use std::fmt::Write as _;
    match result {
        Err(e) if is_broken_pipe(&e) => Err(e),
        Err(e) => {
            let hint = e.downcast_ref::<Hinted>().map(|h| h.hint.as_str());
            let problem = hint.is_some() || e.downcast_ref::<Problem>().is_some();
            let code = if problem { ExitCode::FAILURE } else { ExitCode::from(2) };
            if json {
                let mut v = serde_json::json!({ "error": format!("{e:#}") });
                if let Some(h) = hint {
                    v["hint"] = h.into();
                }
                let mut out = Out::new();
                let _ = writeln!(out, "{v}");
                out.finish()?;
                eprintln!("mapwise: {e:#}");
                if let Some(h) = hint {
                    eprintln!("hint: {h}");
                }
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

/// Standard output buffered as C's stdio buffers it, so that lines on
/// stdout and stderr interleave as rrdtool's do when both go to one pipe
/// or file (`2>&1`): rrdtool prints its results with `printf` (a pipe or
/// file is fully buffered, a terminal line-buffered; the buffer is
/// `st_blksize` bytes, 4096 on a Linux pipe) and its `ERROR:` line with an
/// unbuffered `fprintf(stderr, …)` just before exiting. glibc writes the
/// buffer out only when a write would overfill it (then every whole
/// buffer's worth), at a newline on a terminal, and at exit; this does the
/// same, so an error printed after a short result comes before it in a
/// shared pipe, as rrdtool's does.
pub struct StdioOut {
    buf: Vec<u8>,
    cap: usize,
    line_buffered: bool,
    /// The first write error, reported by [`StdioOut::finish`].
    pub error: Option<io::Error>,
}

impl StdioOut {
    /// A buffer shaped after what stdout is (`_IO_file_doallocate`).
    pub fn new() -> StdioOut {
        use std::io::IsTerminal as _;
        let tty = io::stdout().is_terminal();
        let blk = mapwise_native::os::io::block_size(io::stdout()).unwrap_or(8192);
        StdioOut {
            buf: Vec::with_capacity(blk),
            cap: if tty { 1024 } else { blk },
            line_buffered: tty,
            error: None,
        }
    }

    fn emit(&mut self, n: usize) {
        let head: Vec<u8> = self.buf.drain(..n).collect();
        if self.error.is_none() {
            let mut out = io::stdout().lock();
            if let Err(e) = out.write_all(&head).and_then(|()| out.flush()) {
                self.error = Some(e);
            }
        }
    }

    /// Buffer `b`, writing out what stdio would write out now.
    pub fn write_bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
        if self.line_buffered && b.contains(&b'\n') {
            let n = self.buf.len();
            self.emit(n);
        } else if self.buf.len() > self.cap {
            let n = self.buf.len() / self.cap * self.cap;
            self.emit(n);
        }
    }

    /// Write out what is buffered now (`fflush(stdout)`).
    pub fn flush(&mut self) {
        let n = self.buf.len();
        self.emit(n);
    }

    /// Write out the rest (as `exit` does), returning the first error.
    pub fn finish(mut self) -> io::Result<()> {
        let n = self.buf.len();
        self.emit(n);
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl fmt::Write for StdioOut {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.write_bytes(s.as_bytes());
        if self.error.is_some() {
            return Err(fmt::Error);
        }
        Ok(())
    }
}
