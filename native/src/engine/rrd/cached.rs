//! A client of rrdcached's line protocol, as rrdtool 1.7.2's command line
//! speaks it (`src/rrd_client.c`; the daemon's side is `src/rrd_daemon.c`,
//! the protocol is described in `doc/rrdcached.pod`).
//!
//! One request is one line: the command word, then its arguments separated
//! by one blank each, a blank or backslash inside an argument escaped with
//! a backslash (`buffer_add_string`), the whole line at most
//! [`CMD_MAX`] bytes with its newline. The reply starts with a status line
//! `N message`: a negative `N` is an error (`message` is why), `N > 0`
//! announces `N` further lines (`response_read`). Addresses are
//! `unix:/path` or `/path` (a UNIX socket) or `host`, `host:port`,
//! `[v6addr]:port` (TCP, port [`DEFAULT_PORT`] unless given;
//! `client_connect`, `connect_network`).
//!
//! Every message a failure produces is rrdtool's, word for word, so that
//! `ERROR: {error}` is the line rrdtool prints. Where rrdtool would wait
//! forever (it sets no timeout) this client gives up after
//! [`timeout`] and reports what rrdtool reports for a read that fails; a
//! reply is read in bounded pieces, at most [`MAX_REPLY_BYTES`] in all, so
//! a hostile daemon can neither hang the client nor make it allocate
//! without bound.

// rrdtool's C conversions (`long` to `int` for a reply's status and an
// info value, …) are reproduced on purpose: they decide what is printed.
#![expect(clippy::cast_possible_truncation)]

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use mapwise_core::rrd::info::InfoValue;
use mapwise_core::rrd::num::{self, DNAN, Parsed, strtol as c_strtol};

use super::{Error, strerror};

/// `RRD_CMD_MAX` (`rrd_client.h`): the longest request line, newline
/// included, and the longest reply line the client reads as one line
/// (`recvline` ends a line there and reads the rest as the next one).
pub const CMD_MAX: usize = 4096;

/// `RRDCACHED_DEFAULT_PORT` (`rrd_client.h`): the TCP port when an
/// address names none.
pub const DEFAULT_PORT: &str = "42217";

/// `ENV_RRDCACHED_ADDRESS`: the daemon's address when a command has no
/// `--daemon`.
pub const ENV_ADDRESS: &str = "RRDCACHED_ADDRESS";

/// `ENV_RRDCACHED_STRIPPATH`: a prefix removed from absolute file names
/// sent to a daemon over TCP (`get_path`).
pub const ENV_STRIPPATH: &str = "RRDCACHED_STRIPPATH";

/// Seconds one exchange with the daemon may take (connect, or a request
/// and its whole reply) before the client gives up; not an rrdtool
/// setting (rrdtool waits forever). Default [`DEFAULT_TIMEOUT`].
pub const ENV_TIMEOUT: &str = "MAPWISE_RRDCACHED_TIMEOUT";

/// The default of [`ENV_TIMEOUT`]: 60 s (a `FLUSH` waits for the daemon
/// to write the file's queued updates).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The most bytes of one reply the client keeps (status line and every
/// line announced); a reply past it is a failed read.
pub const MAX_REPLY_BYTES: usize = 128 << 20;

/// rrdtool's words when sending a request fails (`request`).
const SEND_FAILED: &str = "request: socket error (-1) while talking to rrdcached";
/// rrdtool's words when reading a reply fails (`request`).
const READ_FAILED: &str = "request: internal error while talking to rrdcached";

/// The address rrdtool 1.7.2 talks to: `--daemon` when given (the last
/// one), else `RRDCACHED_ADDRESS`; `None` when that is unset or empty
/// (`rrd_client_connect`: an empty `--daemon ""` means no daemon even
/// when the environment names one).
#[must_use]
pub fn daemon_address(option: Option<&str>) -> Option<String> {
    let addr = match option {
        Some(a) => a.to_owned(),
        None => std::env::var(ENV_ADDRESS).ok()?,
    };
    (!addr.is_empty()).then_some(addr)
}

/// [`ENV_TIMEOUT`] as a duration (seconds, fractions allowed), else
/// [`DEFAULT_TIMEOUT`].
#[must_use]
pub fn timeout() -> Duration {
    std::env::var(ENV_TIMEOUT)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs_f64(s.min(1e6)))
}

/// `true` for an address rrdtool reaches through a UNIX socket (and so
/// sends absolute, resolved file names to; `get_path`).
#[must_use]
pub fn is_unix(addr: &str) -> bool {
    addr.starts_with('/') || addr.starts_with("unix:")
}

/// The file name rrdtool sends the daemon for `file` (`get_path`).
///
/// Through a UNIX socket: the resolved absolute name (`realpath`); for a
/// file that does not exist yet, its resolved directory and its last
/// component (a name with no slash, or whose only slash is the first
/// character, is taken relative to the current directory, as rrdtool
/// does). Over TCP: a relative name as given (the daemon resolves it in
/// its base directory); an absolute one only when it starts with
/// `RRDCACHED_STRIPPATH`, which is removed with the slashes after it.
///
/// # Errors
/// `realpath(FILE): reason` when the directory does not resolve;
/// `absolute path names not allowed when talking to a remote daemon`.
/// (Where rrdtool gives up without a message: an empty name, or an
/// absolute name that `RRDCACHED_STRIPPATH` does not match, mapwise says
/// so instead of exiting 0 having sent nothing.)
pub fn daemon_path(addr: &str, file: &Path) -> Result<String, Error> {
    let name = file.to_string_lossy().into_owned();
    if !is_unix(addr) {
        if !name.starts_with('/') {
            return Ok(name);
        }
        if let Ok(strip) = std::env::var(ENV_STRIPPATH) {
            if let Some(rest) = name.strip_prefix(strip.as_str()) {
                return Ok(rest.trim_start_matches('/').to_owned());
            }
            return Err(Error::Rrdtool(format!(
                "absolute path names not allowed when talking to a remote daemon \
                 ({name} does not start with {ENV_STRIPPATH} {strip})"
            )));
        }
        return Err(Error::Rrdtool(
            "absolute path names not allowed when talking to a remote daemon".into(),
        ));
    }
    if name.is_empty() {
        return Err(Error::Rrdtool("realpath(): No such file or directory".into()));
    }
    if let Ok(p) = std::fs::canonicalize(file) {
        return Ok(p.to_string_lossy().into_owned());
    }
    let (dir, tail) = match name.rfind('/') {
        None => (".", format!("/{name}")),
        Some(0) => (".", name.clone()),
        Some(i) => (name.get(..i).unwrap_or("."), name.get(i..).unwrap_or("").to_owned()),
    };
    match std::fs::canonicalize(dir) {
        Ok(d) => Ok(format!("{}{tail}", d.to_string_lossy())),
        Err(e) => Err(Error::Rrdtool(format!("realpath({name}): {}", strerror(&e)))),
    }
}

/// One reply: the status (`int`, as rrdtool keeps it), the rest of the
/// status line, and the lines it announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Negative: an error; positive: the number of [`Reply::lines`].
    pub status: i32,
    /// The status line after the number and the blanks after it.
    pub message: String,
    /// The announced lines, without their line ends.
    pub lines: Vec<String>,
}

/// Why a request produced no reply, before rrdtool's per-command wording.
#[derive(Debug)]
enum Fail {
    /// The request line does not fit in [`CMD_MAX`] (rrdtool: `ENOBUFS`).
    TooLong,
    /// Anything else, worded already.
    Error(Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Error(e)
    }
}

/// `ENOBUFS` as `strerror` words it.
fn enobufs() -> String {
    strerror(&std::io::Error::from_raw_os_error(libc::ENOBUFS))
}

/// A connection to one daemon.
pub struct Client {
    /// The address as given (rrdtool's `sd_path`, named in its messages).
    addr: String,
    stream: Stream,
    /// Bytes received and not yet returned as lines.
    inbuf: Vec<u8>,
    limit: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("addr", &self.addr).finish_non_exhaustive()
    }
}

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_timeouts(&self, t: Duration) -> std::io::Result<()> {
        let t = Some(t.max(Duration::from_millis(1)));
        match self {
            Stream::Unix(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Stream::Tcp(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
        }
    }

    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.write_all(b),
            Stream::Tcp(s) => s.write_all(b),
        }
    }

    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(b),
            Stream::Tcp(s) => s.read(b),
        }
    }
}

/// `getaddrinfo`'s error numbers (glibc), found from the text std reports.
fn gai_code(text: &str) -> i32 {
    const CODES: &[(&str, i32)] = &[
        ("Bad value for ai_flags", -1),
        ("Name or service not known", -2),
        ("Temporary failure in name resolution", -3),
        ("Non-recoverable failure in name resolution", -4),
        ("No address associated with hostname", -5),
        ("ai_family not supported", -6),
        ("ai_socktype not supported", -7),
        ("Servname not supported for ai_socktype", -8),
        ("Address family for hostname not supported", -9),
        ("Memory allocation failure", -10),
        ("Argument buffer overflow", -12),
    ];
    CODES.iter().find(|(t, _)| text.starts_with(t)).map_or(-11, |&(_, c)| c)
}

/// The TCP port of a service: a number (glibc's `strtoul` then the low 16
/// bits), else a `tcp` entry of `/etc/services` (name or alias).
fn service_port(service: &str) -> Option<u16> {
    if service.bytes().all(|b| b.is_ascii_digit()) {
        let n = service.bytes().fold(0u64, |v, c| {
            v.checked_mul(10).and_then(|v| v.checked_add(u64::from(c - b'0'))).unwrap_or(u64::MAX)
        });
        return Some((n & 0xFFFF) as u16);
    }
    let text = std::fs::read_to_string("/etc/services").ok()?;
    text.lines().find_map(|l| {
        let l = l.split('#').next().unwrap_or("");
        let mut w = l.split_whitespace();
        let name = w.next()?;
        let (port, proto) = w.next()?.split_once('/')?;
        (proto == "tcp" && (name == service || w.any(|a| a == service)))
            .then(|| port.parse().ok())
            .flatten()
    })
}

/// Host and port of a network address (`connect_network`), or rrdtool's
/// complaint about its form.
fn split_network(addr: &str) -> Result<(String, Option<String>), String> {
    // rrdtool copies the address into NI_MAXHOST (1025) bytes.
    let mut cut = addr.len().min(1024);
    while !addr.is_char_boundary(cut) {
        cut -= 1;
    }
    let copy = addr.get(..cut).unwrap_or(addr);
    if let Some(rest) = copy.strip_prefix('[') {
        let Some(close) = rest.find(']') else {
            return Err(format!("malformed address: {addr}"));
        };
        let host = rest.get(..close).unwrap_or("").to_owned();
        let after = rest.get(close + 1..).unwrap_or("");
        return match after.strip_prefix(':') {
            Some(port) => Ok((host, Some(port.to_owned()))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(format!("garbage after address: {after}")),
        };
    }
    Ok(match copy.rfind(':') {
        Some(i) => (
            copy.get(..i).unwrap_or("").to_owned(),
            Some(copy.get(i + 1..).unwrap_or("").to_owned()),
        ),
        None => (copy.to_owned(), None),
    })
}

/// Connect to a UNIX socket with a bounded wait (`connect` honours the
/// send timeout while the daemon's backlog is full). rrdtool copies at
/// most 107 bytes of the path (`strncpy` into `sun_path`).
fn connect_unix(path: &str, limit: Duration) -> std::io::Result<UnixStream> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketType, sockopt};
    let mut bytes = path.as_bytes();
    if bytes.len() > 107 {
        bytes = bytes.get(..107).unwrap_or(bytes);
    }
    let addr = SocketAddrUnix::new(bytes)?;
    let fd = rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None)?;
    sockopt::set_socket_timeout(&fd, sockopt::Timeout::Send, Some(limit))?;
    rustix::net::connect(&fd, &addr)?;
    Ok(UnixStream::from(fd))
}

impl Client {
    /// Connect to `addr` (`rrd_client_connect`), with [`timeout`] for the
    /// connection and for each later exchange.
    ///
    /// # Errors
    /// `Unable to connect to rrdcached: REASON`, REASON being `strerror`
    /// of the failed `connect` (the last address tried), or
    /// `failed to resolve address 'HOST' (port PORT): TEXT (CODE)`,
    /// `malformed address: ADDR`, `garbage after address: REST`.
    pub fn connect(addr: &str) -> Result<Client, Error> {
        Client::connect_within(addr, timeout())
    }

    /// [`Client::connect`] with `limit` for the connection and each later
    /// exchange instead of [`timeout`].
    ///
    /// # Errors
    /// As [`Client::connect`].
    pub fn connect_within(addr: &str, limit: Duration) -> Result<Client, Error> {
        let refused =
            |why: String| Error::Rrdtool(format!("Unable to connect to rrdcached: {why}"));
        let stream = if let Some(path) =
            addr.strip_prefix("unix:").or_else(|| addr.starts_with('/').then_some(addr))
        {
            Stream::Unix(connect_unix(path, limit).map_err(|e| refused(strerror(&e)))?)
        } else {
            let (host, port) = split_network(addr).map_err(refused)?;
            let service = port.unwrap_or_else(|| DEFAULT_PORT.to_owned());
            let resolve_failed = |text: &str| {
                refused(format!(
                    "failed to resolve address '{host}' (port {service}): {text} ({})",
                    gai_code(text)
                ))
            };
            let Some(p) = service_port(&service) else {
                return Err(resolve_failed("Servname not supported for ai_socktype"));
            };
            let addrs: Vec<std::net::SocketAddr> = match (host.as_str(), p).to_socket_addrs() {
                Ok(a) => a.collect(),
                Err(e) => {
                    let text = e.to_string();
                    let text = text
                        .strip_prefix("failed to lookup address information: ")
                        .unwrap_or(&text)
                        .to_owned();
                    return Err(resolve_failed(&text));
                }
            };
            let mut last = std::io::Error::from_raw_os_error(libc::ECONNREFUSED);
            let mut found = None;
            for a in addrs {
                match TcpStream::connect_timeout(&a, limit) {
                    Ok(s) => {
                        found = Some(s);
                        break;
                    }
                    Err(e) => {
                        last = if e.kind() == std::io::ErrorKind::TimedOut {
                            std::io::Error::from_raw_os_error(libc::ETIMEDOUT)
                        } else {
                            e
                        };
                    }
                }
            }
            Stream::Tcp(found.ok_or_else(|| refused(strerror(&last)))?)
        };
        Ok(Client { addr: addr.to_owned(), stream, inbuf: Vec::new(), limit })
    }

    /// The address as given.
    #[must_use]
    pub fn address(&self) -> &str {
        &self.addr
    }

    /// [`daemon_path`] for this daemon.
    ///
    /// # Errors
    /// As [`daemon_path`].
    pub fn path_of(&self, file: &Path) -> Result<String, Error> {
        daemon_path(&self.addr, file)
    }

    /// Send one request (`words`, escaped and joined as
    /// `buffer_add_string` does) and read its reply (`request`,
    /// `response_read`). A negative status becomes the error
    /// `rrdcached@ADDRESS: MESSAGE`.
    fn request(&mut self, words: &[&str]) -> Result<Reply, Fail> {
        let mut line = Vec::with_capacity(CMD_MAX);
        for w in words {
            for &b in w.as_bytes() {
                if b == b' ' || b == b'\\' {
                    line.push(b'\\');
                }
                line.push(b);
            }
            line.push(b' ');
            if line.len() > CMD_MAX {
                return Err(Fail::TooLong);
            }
        }
        if let Some(last) = line.last_mut() {
            *last = b'\n';
        }
        let deadline = Instant::now() + self.limit;
        let sent = self.stream.set_timeouts(self.limit).and_then(|()| self.stream.write_all(&line));
        if sent.is_err() {
            // rrdtool reconnects once and sends again.
            let again = Client::connect_within(&self.addr, self.limit).ok().and_then(|c| {
                self.stream = c.stream;
                self.inbuf.clear();
                self.stream.write_all(&line).ok()
            });
            if again.is_none() {
                return Err(Fail::Error(Error::Rrdtool(SEND_FAILED.into())));
            }
        }
        // rrdtool's words; ours added when it was our timeout (rrdtool
        // waits for ever).
        let limit = self.limit;
        let read_failed = || {
            let text = if Instant::now() >= deadline {
                format!(
                    "{READ_FAILED} (no answer within {} s; {ENV_TIMEOUT} sets how long to wait)",
                    limit.as_secs_f64()
                )
            } else {
                READ_FAILED.to_owned()
            };
            Fail::Error(Error::Rrdtool(text))
        };
        let mut budget = MAX_REPLY_BYTES;
        let first = self.recv_line(deadline, &mut budget).ok_or_else(read_failed)?;
        let (status, used) = c_strtol(first.as_bytes(), 0);
        if used == 0 {
            return Err(read_failed());
        }
        // `ret->status` is an `int`.
        let status = status as i32;
        let message = first.get(used..).unwrap_or("").trim_start_matches([' ', '\t']).to_owned();
        if status < 0 {
            return Err(Fail::Error(Error::Rrdtool(format!("rrdcached@{}: {message}", self.addr))));
        }
        let mut lines = Vec::new();
        for _ in 0..status.max(0) {
            lines.push(self.recv_line(deadline, &mut budget).ok_or_else(read_failed)?);
        }
        Ok(Reply { status, message, lines })
    }

    /// One reply line without its line end (`recvline` then `chomp`): up
    /// to a newline or [`CMD_MAX`]` - 1` bytes; `None` when the daemon
    /// closed the connection, the deadline passed, or the reply outgrew
    /// `budget`.
    fn recv_line(&mut self, deadline: Instant, budget: &mut usize) -> Option<String> {
        let max = CMD_MAX - 1;
        loop {
            let scan = self.inbuf.len().min(max);
            let end = self
                .inbuf
                .get(..scan)
                .and_then(|b| b.iter().position(|&c| c == b'\n'))
                .map(|i| i + 1)
                .or((self.inbuf.len() >= max).then_some(max));
            if let Some(end) = end {
                let mut line: Vec<u8> = self.inbuf.drain(..end).collect();
                *budget = budget.checked_sub(line.len() + 32)?;
                while matches!(line.last(), Some(b'\n' | b'\r')) {
                    line.pop();
                }
                return Some(String::from_utf8_lossy(&line).into_owned());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            self.stream.set_timeouts(left).ok()?;
            let mut chunk = [0u8; CMD_MAX];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) if self.inbuf.is_empty() => return None,
                // A partial last line, as `recvline` returns it.
                Ok(0) | Err(_) => {
                    let line: Vec<u8> = std::mem::take(&mut self.inbuf);
                    *budget = budget.checked_sub(line.len() + 32)?;
                    return Some(String::from_utf8_lossy(&line).into_owned());
                }
                Ok(n) => self.inbuf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            }
        }
    }

    /// `FLUSH FILE` and the status as rrdtool's `rrd_client_flush` returns
    /// it (0 when the daemon wrote the file's queued updates, or had none;
    /// a positive number the daemon sent).
    ///
    /// # Errors
    /// A negative status (`rrdcached@ADDRESS: No such file: …`), a
    /// connection failure, a name [`daemon_path`] refuses; a request line
    /// too long is `Ok(ENOBUFS)` as in rrdtool.
    pub fn flush(&mut self, file: &Path) -> Result<i32, Error> {
        let path = self.path_of(file)?;
        match self.request(&["flush", &path]) {
            Ok(r) => Ok(r.status),
            Err(Fail::TooLong) => Ok(libc::ENOBUFS),
            Err(Fail::Error(e)) => Err(e),
        }
    }

    /// `FLUSH FILE` as the read commands do before reading
    /// (`rrdc_flush_if_daemon`).
    ///
    /// # Errors
    /// As [`Client::flush`], a positive status worded
    /// `rrdc_flush (FILE) failed: REASON`.
    pub fn flush_for_read(&mut self, file: &Path) -> Result<(), Error> {
        match self.flush(file)? {
            0 => Ok(()),
            n => Err(Error::Rrdtool(format!(
                "rrdc_flush ({}) failed: {}",
                file.display(),
                strerror(&std::io::Error::from_raw_os_error(n))
            ))),
        }
    }

    /// `UPDATE FILE V…` (`rrd_client_update`): the daemon queues the
    /// values; `N:` at the start of a value is replaced by the current time
    /// as rrdtool does (`buffer_add_value`).
    ///
    /// # Errors
    /// The daemon's refusal (`rrdcached@ADDRESS: illegal attempt …`), a
    /// connection failure, a name [`daemon_path`] refuses, or
    /// `Failed sending the values to rrdcached: REASON` (a line too long,
    /// a positive status).
    pub fn update<S: AsRef<str>>(&mut self, file: &Path, values: &[S]) -> Result<(), Error> {
        let path = self.path_of(file)?;
        let now = super::time::now().0;
        let values: Vec<String> = values
            .iter()
            .map(|v| {
                let v = v.as_ref();
                match v.strip_prefix("N:") {
                    Some(rest) => format!("{now}:{rest}"),
                    None => v.to_owned(),
                }
            })
            .collect();
        let mut words = vec!["update", path.as_str()];
        words.extend(values.iter().map(String::as_str));
        let sending =
            |why: String| Error::Rrdtool(format!("Failed sending the values to rrdcached: {why}"));
        match self.request(&words) {
            Ok(r) if r.status == 0 => Ok(()),
            Ok(r) => Err(sending(strerror(&std::io::Error::from_raw_os_error(r.status)))),
            Err(Fail::TooLong) => Err(sending(enobufs())),
            Err(Fail::Error(e)) => Err(e),
        }
    }

    /// `INFO FILE` (`rrd_client_info`): the daemon reads the file's header
    /// (not what it has queued) and sends `key type value` lines, which
    /// come back as `rrdtool info`'s pairs (types `RD_I_VAL` 0, `CNT` 1,
    /// `STR` 2, `INT` 3; the name is the daemon's). A malformed line ends
    /// the list, as in rrdtool.
    ///
    /// # Errors
    /// The daemon's refusal (`rrdcached@ADDRESS: RRD Error: …`), a
    /// connection failure, `rrdc_info: out of memory` (a line too long),
    /// `rrdc_info: BLOB objects are not supported`,
    /// `rrdc_info: Unsupported info type N`.
    pub fn info(&mut self, file: &Path) -> Result<Vec<(String, InfoValue)>, Error> {
        let path = self.path_of(file)?;
        let r = match self.request(&["info", &path]) {
            Ok(r) => r,
            Err(Fail::TooLong) => return Err(Error::Rrdtool("rrdc_info: out of memory".into())),
            Err(Fail::Error(e)) => return Err(e),
        };
        let mut out = Vec::new();
        for l in &r.lines {
            let Some((key, rest)) = l.split_once(' ') else {
                break;
            };
            if rest.is_empty() {
                break;
            }
            let kind = c_strtol(rest.as_bytes(), 10).0 as i32;
            let Some((_, value)) = rest.split_once(' ') else {
                break;
            };
            if value.is_empty() {
                break;
            }
            let v = match kind {
                0 if value.starts_with('N') => InfoValue::Val(DNAN),
                0 => InfoValue::Val(c_atof(value)),
                1 => InfoValue::Cnt(c_strtol(value.as_bytes(), 10).0 as u64),
                2 => InfoValue::Str(value.trim_end_matches(['\n', '\r']).to_owned()),
                3 => InfoValue::Int(c_strtol(value.as_bytes(), 10).0 as i32),
                4 => {
                    return Err(Error::Rrdtool("rrdc_info: BLOB objects are not supported".into()));
                }
                n => {
                    return Err(Error::Rrdtool(format!("rrdc_info: Unsupported info type {n}")));
                }
            };
            out.push((key.to_owned(), v));
        }
        Ok(out)
    }

    /// `LAST FILE` (`rrd_client_last`): the daemon's last update time of
    /// the file (queued updates included) rounded down to a multiple of
    /// the step, as 1.7.2's daemon answers; the number is read as `atol`.
    ///
    /// # Errors
    /// The daemon's refusal, a connection failure,
    /// `rrdc_last: out of memory` (a line too long).
    pub fn last(&mut self, file: &Path) -> Result<i64, Error> {
        let path = self.path_of(file)?;
        match self.request(&["last", &path]) {
            Ok(r) => Ok(c_strtol(r.message.as_bytes(), 10).0),
            Err(Fail::TooLong) => Err(Error::Rrdtool("rrdc_last: out of memory".into())),
            Err(Fail::Error(e)) => Err(e),
        }
    }

    /// `FIRST FILE RRA` (`rrd_client_first`).
    ///
    /// # Errors
    /// The daemon's refusal (`… RRD Error: invalid rraindex number`), a
    /// connection failure, `rrdc_first: out of memory`.
    pub fn first(&mut self, file: &Path, rra: u64) -> Result<i64, Error> {
        let path = self.path_of(file)?;
        let idx = rra.to_string();
        match self.request(&["first", &path, &idx]) {
            Ok(r) => Ok(c_strtol(r.message.as_bytes(), 10).0),
            Err(Fail::TooLong) => Err(Error::Rrdtool("rrdc_first: out of memory".into())),
            Err(Fail::Error(e)) => Err(e),
        }
    }

    /// `FETCH FILE CF START END` (`rrd_client_fetch`): the daemon flushes
    /// the file, fetches (choosing the archive itself: rrdtool sends no
    /// resolution) and sends the window, the names and one line per row,
    /// each value `%0.17e`, read back with rrdtool's own number parser.
    ///
    /// # Errors
    /// The daemon's refusal (`… rrd_fetch_r failed: …`), a connection
    /// failure, or `rrdc_fetch: …` for a reply of the wrong shape, in
    /// rrdtool's words.
    pub fn fetch(&mut self, file: &Path, cf: &str, start: i64, end: i64) -> Result<Fetched, Error> {
        let path = self.path_of(file)?;
        let (s, e) = (start.to_string(), end.to_string());
        let mut words = vec!["FETCH", path.as_str(), cf];
        if start > 0 {
            words.push(&s);
            if end > 0 {
                words.push(&e);
            }
        }
        let r = match self.request(&words) {
            Ok(r) => r,
            Err(Fail::TooLong) => {
                return Err(Error::Rrdtool(format!("rrdc_fetch: {}", enobufs())));
            }
            Err(Fail::Error(e)) => return Err(e),
        };
        parse_fetch(&r.lines).map_err(|m| Error::Rrdtool(format!("rrdc_fetch: {m}")))
    }

    /// `CREATE FILE [-b START] -s STEP [-O] DEF…` (`rrd_client_create_r2`):
    /// the daemon creates the file. `step` 0 lets the daemon's librrd take
    /// its default (300 s), as rrdtool sends it when `-s` is not given.
    ///
    /// # Errors
    /// The daemon's refusal (`… RRD Error: creating 'F': File exists`), a
    /// connection failure, `rrdc_create: out of memory`.
    pub fn create(
        &mut self,
        file: &Path,
        start: Option<i64>,
        step: u64,
        no_overwrite: bool,
        defs: &[String],
    ) -> Result<(), Error> {
        let path = self.path_of(file)?;
        let (b, s) = (start.map(|t| t.to_string()), step.to_string());
        let mut words = vec!["create", path.as_str()];
        if let Some(b) = &b {
            words.extend(["-b", b.as_str()]);
        }
        words.extend(["-s", s.as_str()]);
        if no_overwrite {
            words.push("-O");
        }
        words.extend(defs.iter().map(String::as_str));
        match self.request(&words) {
            Ok(_) => Ok(()),
            Err(Fail::TooLong) => Err(Error::Rrdtool("rrdc_create: out of memory".into())),
            Err(Fail::Error(e)) => Err(e),
        }
    }

    /// `PENDING FILE`: the updates the daemon holds for the file, one
    /// `TIME:V…` string each, oldest first (`handle_request_pending`).
    /// Reads only: the daemon neither writes nor flushes for it.
    ///
    /// # Errors
    /// The daemon's refusal, a connection failure, a name
    /// [`daemon_path`] refuses, a request line too long.
    pub fn pending(&mut self, file: &Path) -> Result<Vec<String>, Error> {
        let path = self.path_of(file)?;
        match self.request(&["PENDING", &path]) {
            Ok(r) => Ok(r.lines),
            Err(Fail::TooLong) => Err(Error::Rrdtool(format!("PENDING {path}: {}", enobufs()))),
            Err(Fail::Error(e)) => Err(e),
        }
    }
}

/// The updates rrdcached holds for `file` when `RRDCACHED_ADDRESS` names
/// a daemon: `None` when it is unset or empty, else the address and the
/// number of lines of the daemon's `PENDING` reply (or why it could not
/// be had), each exchange bounded by `limit`. Read-only: nothing is
/// flushed or written.
#[must_use]
pub fn pending_in_env(file: &Path, limit: Duration) -> Option<(String, Result<usize, Error>)> {
    let addr = daemon_address(None)?;
    let n = Client::connect_within(&addr, limit).and_then(|mut c| c.pending(file).map(|p| p.len()));
    Some((addr, n))
}

/// What a daemon's `FETCH` reply holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The window: rows are for `start + step` … `end`.
    pub start: i64,
    /// End of the window.
    pub end: i64,
    /// Seconds per row.
    pub step: u64,
    /// Data source names.
    pub names: Vec<String>,
    /// Values, row after row.
    pub values: Vec<f64>,
}

/// `key: value` of a reply header (`parse_header`): the key before the
/// first colon, the value after the blanks that follow it.
fn header(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    let v = v.trim_start_matches([' ', '\t']);
    (!v.is_empty()).then_some((k, v))
}

/// Read a `FETCH` reply as `rrd_client_fetch` does, with its messages.
fn parse_fetch(lines: &[String]) -> Result<Fetched, String> {
    let premature = || "Premature end of response packet".to_owned();
    let mut at = 0usize;
    let mut numeric = |name: &str| -> Result<u64, String> {
        let line = lines.get(at).ok_or_else(premature)?;
        let (k, v) = header(line).ok_or_else(|| format!("Unable to parse header `{name}'"))?;
        let (n, used) = c_strtol(v.as_bytes(), 0);
        if used == 0 {
            return Err(format!("Unable to parse header `{name}'"));
        }
        if !k.eq_ignore_ascii_case(name) {
            return Err(format!("Unexpected header line: Expected `{name}', got `{k}'"));
        }
        at += 1;
        Ok(n as u64)
    };
    if lines.is_empty() {
        return Err(premature());
    }
    let version = numeric("FlushVersion")?;
    if version != 1 {
        return Err(format!("Don't know how to handle flush format version {version}."));
    }
    if lines.len() < 5 {
        return Err(premature());
    }
    let start = numeric("Start")? as i64;
    let end = numeric("End")? as i64;
    if start >= end {
        return Err(format!(
            "Malformed start and end times: start = {}; end = {};",
            start as u64, end as u64
        ));
    }
    let step = numeric("Step")?;
    if step < 1 {
        return Err(format!("Invalid number for Step: {step}"));
    }
    let ds = numeric("DSCount")?;
    if ds < 1 {
        return Err(format!("Invalid number for DSCount: {ds}"));
    }
    let names_line = lines.get(at).ok_or_else(premature)?;
    let bad_names = || "Unable to parse header `DSName'".to_owned();
    let (k, v) = header(names_line).ok_or_else(bad_names)?;
    let names: Vec<String> = v
        .split([' ', '\t', '\r', '\n'])
        .filter(|w| !w.is_empty())
        .take(usize::try_from(ds).unwrap_or(usize::MAX))
        .map(str::to_owned)
        .collect();
    if names.len() as u64 != ds {
        return Err(bad_names());
    }
    if !k.eq_ignore_ascii_case("DSName") {
        return Err(format!("Unexpected header line: Expected `DSName', got `{k}'"));
    }
    at += 1;
    let size = ds.wrapping_mul(end.wrapping_sub(start) as u64) / step;
    if size < 1 {
        return Err("No data returned or headers invalid.".into());
    }
    let want = 6u64.wrapping_add(size / ds);
    if lines.len() as u64 != want {
        return Err(format!("Got {} lines, expected {want}", lines.len()));
    }
    let rows = (size / ds) as usize;
    let mut values = Vec::with_capacity(rows.saturating_mul(names.len()).min(lines.len() * 64));
    for line in lines.get(at..).unwrap_or_default().iter().take(rows) {
        let bad = || "Cannot parse value line".to_owned();
        let (t, rest) = header(line).ok_or_else(bad)?;
        let (_, used) = c_strtol(t.as_bytes(), 10);
        if used == 0 {
            return Err(bad());
        }
        let row: Vec<&str> = rest
            .split([' ', '\t', '\r', '\n'])
            .filter(|w| !w.is_empty())
            .take(names.len())
            .collect();
        if row.len() != names.len() {
            return Err(bad());
        }
        for w in row {
            match num::strtodbl(w.as_bytes()) {
                Parsed::Whole(v) => values.push(v),
                _ => return Err(bad()),
            }
        }
    }
    Ok(Fetched { start, end, step, names, values })
}

/// glibc's `atof`: the longest decimal number (or `inf`, `nan`) at the
/// start of `s`, correctly rounded; 0 when there is none.
#[must_use]
pub fn c_atof(s: &str) -> f64 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let b = t.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let from = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - from
    };
    let mut n = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        let word = t.get(usize::from(matches!(b.first(), Some(b'+' | b'-')))..).unwrap_or("");
        let neg = b.first() == Some(&b'-');
        let lower = word.get(..3).map(str::to_ascii_lowercase);
        let v = match lower.as_deref() {
            Some("inf") => f64::INFINITY,
            Some("nan") => f64::NAN,
            _ => return 0.0,
        };
        return if neg { -v } else { v };
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digits(&mut j) > 0 {
            i = j;
        }
    }
    t.get(..i).and_then(|n| n.parse().ok()).unwrap_or(0.0)
}

/// Map one `update --template` argument onto the file's data sources for
/// the daemon, as rrdtool does before `UPDATE` (`rrd_update.c:
/// rrd_map_template_to_values`): the time, then each data source of the
/// file (`ds_names`) in file order, its value from the template's position
/// or `U`.
///
/// # Errors
/// rrdtool's `rrd_map_template_to_values: …` messages: field counts that
/// do not match, a template longer than the file's list, names the file
/// does not have.
pub fn map_template(template: &str, ds_names: &[String], value: &str) -> Result<String, Error> {
    let count = |s: &str| {
        if s.is_empty() { 0 } else { s.split(':').count() }
    };
    let tpl: Vec<&str> =
        if template.is_empty() { Vec::new() } else { template.split(':').collect() };
    let fields: Vec<&str> = value.split(':').collect();
    let given = count(value).wrapping_sub(1);
    let err = |m: String| Error::Rrdtool(format!("rrd_map_template_to_values: {m}"));
    if tpl.len() != given {
        return Err(err(format!(
            "mismatch of number of fields in template ({}) with number of fields in values ({given})",
            tpl.len()
        )));
    }
    if tpl.len() > ds_names.len() {
        return Err(err(format!(
            "number of fields in template ({}) bigger than number of fields in rrdfile ({})",
            tpl.len(),
            ds_names.len()
        )));
    }
    let mut mapped = fields.first().copied().unwrap_or("").to_owned();
    let mut found = 0;
    for name in ds_names {
        mapped.push(':');
        match tpl.iter().position(|t| t == name) {
            Some(i) => {
                found += 1;
                mapped.push_str(fields.get(i + 1).copied().unwrap_or(""));
            }
            None => mapped.push('U'),
        }
    }
    if found != tpl.len() {
        return Err(err(format!(
            "there are fields in template ({template}) that are not in the rrdfile ({})",
            ds_names.join(":")
        )));
    }
    Ok(mapped)
}

/// `rrdtool flushcached`'s message for a file that failed (`rrd_flushcached`):
/// rrdtool formats it into the buffer the cause is read from, so the cause
/// comes out with its first bytes replaced by the message's own start
/// (glibc writes the prefix, then copies the cause from the same buffer);
/// this reproduces what rrdtool 1.7.2 prints.
#[must_use]
pub fn flushcached_failure(file: &str, cause: Option<&str>, remaining: usize) -> String {
    let prefix = format!("Flushing of file \"{file}\" failed: ");
    let cause = match cause {
        None | Some("") => "unknown error".to_owned(),
        Some(c) => format!("{prefix}{}", c.get(prefix.len()..).unwrap_or("")),
    };
    format!(
        "{prefix}{cause}. Skipping remaining {remaining} file{}.",
        if remaining == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atof_takes_the_number_at_the_start() {
        assert_eq!(c_atof("1.5000000000e+02"), 150.0);
        assert_eq!(c_atof("-inf"), f64::NEG_INFINITY);
        assert_eq!(c_atof("3e"), 3.0);
        assert_eq!(c_atof("x"), 0.0);
    }

    #[test]
    fn network_addresses_split_as_rrdtool_splits_them() {
        assert_eq!(split_network("h:1"), Ok(("h".into(), Some("1".into()))));
        assert_eq!(split_network("h"), Ok(("h".into(), None)));
        assert_eq!(split_network("[::1]:7"), Ok(("::1".into(), Some("7".into()))));
        assert_eq!(split_network("[::1"), Err("malformed address: [::1".into()));
        assert_eq!(split_network("[::1]x"), Err("garbage after address: x".into()));
    }

    #[test]
    fn fetch_replies_of_the_wrong_shape_are_refused() {
        let l = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(parse_fetch(&[]), Err("Premature end of response packet".into()));
        assert_eq!(
            parse_fetch(&l(&["FlushVersion: 2"])),
            Err("Don't know how to handle flush format version 2.".into())
        );
        let ok = l(&[
            "FlushVersion: 1",
            "Start: 100",
            "End: 300",
            "Step: 100",
            "DSCount: 1",
            "DSName: a",
            "200: 1.0e+00",
            "300: -nan",
        ]);
        let f = parse_fetch(&ok).expect("fetch");
        assert_eq!(f.values.len(), 2);
        assert!(f.values.get(1).is_some_and(|v| v.is_nan()));
        let mut short = ok.clone();
        short.pop();
        assert_eq!(parse_fetch(&short), Err("Got 7 lines, expected 8".into()));
        let huge = l(&[
            "FlushVersion: 1",
            "Start: 1",
            "End: 9223372036854775807",
            "Step: 1",
            "DSCount: 18446744073709551615",
            "DSName: a",
        ]);
        assert!(parse_fetch(&huge).is_err());
    }

    #[test]
    fn templates_map_as_rrdtool_maps_them() {
        let ds = ["temp".to_owned(), "load".to_owned()];
        assert_eq!(map_template("load", &ds, "100:5").ok(), Some("100:U:5".into()));
        assert_eq!(map_template("load:temp", &ds, "N:5:6").ok(), Some("N:6:5".into()));
        let e = map_template("nope", &ds, "100:5").err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "rrd_map_template_to_values: there are fields in template (nope) \
                 that are not in the rrdfile (temp:load)"
            )
        );
        assert!(map_template("load", &ds, "100:5:6").is_err());
    }

    #[test]
    fn flushcached_message_overlaps_as_in_rrdtool() {
        // What rrdtool 1.7.2 printed for the same cause.
        let e = "rrdcached@unix:/run/rd/sock: No such file: /srv/rrd/base/nofile.rrd.";
        assert_eq!(
            flushcached_failure("nofile.rrd", Some(e), 2),
            "Flushing of file \"nofile.rrd\" failed: Flushing of file \"nofile.rrd\" \
             failed: ile: /srv/rrd/base/nofile.rrd.. Skipping remaining 2 files."
        );
    }
}
