//! Time as rrdtool reads and prints it: "now", local time for `dump`
//! comments, and the at-style time specifications of `rrd_parsetime.c`
//! (`-s`/`-e` of fetch, `-b` of create, `TIME@…` updates), resolved with
//! the C library's `mktime`/`localtime_r` so that time zones and DST
//! behave as in rrdtool.

// rrd_parsetime keeps numbers in C `int`s (`struct tm` fields, deltas);
// the truncating conversions below reproduce that on purpose.
#![expect(clippy::cast_possible_truncation)]

use std::time::{SystemTime, UNIX_EPOCH};

use crate::os::time::{localtime, localtime_into, mktime, strftime};

/// The wall clock: seconds and microseconds since the epoch.
#[must_use]
pub fn now() -> (i64, i64) {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    (i64::try_from(d.as_secs()).unwrap_or(i64::MAX), i64::from(d.subsec_micros()))
}

/// `strftime("%Y-%m-%d %H:%M:%S %Z")` of `localtime_r(t)`: the comments of
/// `rrdtool dump`.
#[must_use]
pub fn local_string(t: i64) -> String {
    strftime(c"%Y-%m-%d %H:%M:%S %Z", &localtime(t))
}

/// What a time specification is relative to (`rrd_time_value_t.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeKind {
    /// An absolute time (`ABSOLUTE_TIME`).
    Absolute,
    /// `start±offset` (`RELATIVE_TO_START_TIME`).
    RelativeToStart,
    /// `end±offset` (`RELATIVE_TO_END_TIME`).
    RelativeToEnd,
    /// `epoch±offset` (`RELATIVE_TO_EPOCH`).
    RelativeToEpoch,
}

/// A parsed time specification (`rrd_time_value_t`).
#[derive(Clone, Copy)]
pub struct TimeSpec {
    /// What it is relative to.
    pub kind: TimeKind,
    /// Seconds to add after `mktime`.
    pub offset: i64,
    tm: libc::tm,
}

impl std::fmt::Debug for TimeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeSpec")
            .field("kind", &self.kind)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl TimeSpec {
    /// `mktime(tm) + offset`.
    #[must_use]
    pub fn resolve(&self) -> i64 {
        let mut tm = self.tm;
        mktime(&mut tm).wrapping_add(self.offset)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Midnight,
    Noon,
    Teatime,
    Pm,
    Am,
    Yesterday,
    Today,
    Tomorrow,
    Now,
    Start,
    End,
    Epoch,
    Seconds,
    Minutes,
    Hours,
    Days,
    Weeks,
    Months,
    Years,
    MonthsMinutes,
    Number,
    Plus,
    Minus,
    Dot,
    Colon,
    Slash,
    Id,
    Eof,
    Month(i32),
    Wday(i32),
}

const WORDS: &[(&str, Tok)] = &[
    ("midnight", Tok::Midnight),
    ("noon", Tok::Noon),
    ("teatime", Tok::Teatime),
    ("am", Tok::Am),
    ("pm", Tok::Pm),
    ("tomorrow", Tok::Tomorrow),
    ("yesterday", Tok::Yesterday),
    ("today", Tok::Today),
    ("now", Tok::Now),
    ("n", Tok::Now),
    ("start", Tok::Start),
    ("s", Tok::Start),
    ("end", Tok::End),
    ("e", Tok::End),
    ("epoch", Tok::Epoch),
    ("jan", Tok::Month(0)),
    ("feb", Tok::Month(1)),
    ("mar", Tok::Month(2)),
    ("apr", Tok::Month(3)),
    ("may", Tok::Month(4)),
    ("jun", Tok::Month(5)),
    ("jul", Tok::Month(6)),
    ("aug", Tok::Month(7)),
    ("sep", Tok::Month(8)),
    ("oct", Tok::Month(9)),
    ("nov", Tok::Month(10)),
    ("dec", Tok::Month(11)),
    ("january", Tok::Month(0)),
    ("february", Tok::Month(1)),
    ("march", Tok::Month(2)),
    ("april", Tok::Month(3)),
    ("june", Tok::Month(5)),
    ("july", Tok::Month(6)),
    ("august", Tok::Month(7)),
    ("september", Tok::Month(8)),
    ("october", Tok::Month(9)),
    ("november", Tok::Month(10)),
    ("december", Tok::Month(11)),
    ("sunday", Tok::Wday(0)),
    ("sun", Tok::Wday(0)),
    ("monday", Tok::Wday(1)),
    ("mon", Tok::Wday(1)),
    ("tuesday", Tok::Wday(2)),
    ("tue", Tok::Wday(2)),
    ("wednesday", Tok::Wday(3)),
    ("wed", Tok::Wday(3)),
    ("thursday", Tok::Wday(4)),
    ("thu", Tok::Wday(4)),
    ("friday", Tok::Wday(5)),
    ("fri", Tok::Wday(5)),
    ("saturday", Tok::Wday(6)),
    ("sat", Tok::Wday(6)),
];

const MULTIPLIERS: &[(&str, Tok)] = &[
    ("second", Tok::Seconds),
    ("seconds", Tok::Seconds),
    ("sec", Tok::Seconds),
    ("s", Tok::Seconds),
    ("minute", Tok::Minutes),
    ("minutes", Tok::Minutes),
    ("min", Tok::Minutes),
    ("m", Tok::MonthsMinutes),
    ("hour", Tok::Hours),
    ("hours", Tok::Hours),
    ("hr", Tok::Hours),
    ("h", Tok::Hours),
    ("day", Tok::Days),
    ("days", Tok::Days),
    ("d", Tok::Days),
    ("week", Tok::Weeks),
    ("weeks", Tok::Weeks),
    ("wk", Tok::Weeks),
    ("w", Tok::Weeks),
    ("month", Tok::Months),
    ("months", Tok::Months),
    ("mon", Tok::Months),
    ("year", Tok::Years),
    ("years", Tok::Years),
    ("yr", Tok::Years),
    ("y", Tok::Years),
];

/// The at(1)-style scanner and parser of `rrd_parsetime.c`, re-implemented.
struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    token: String,
    tok: Tok,
    units: bool,
    op: Tok,
    prev_multiplier: Option<Tok>,
    tv: TimeSpec,
}

/// glibc's `atol` on the digits that start `s`: `strtol` base 10, which
/// saturates at `LONG_MAX` on overflow (rrdtool's parsetime.c calls `atol`
/// on every number token; the tokens here never carry a sign).
fn atol(s: &str) -> i64 {
    s.bytes()
        .take_while(u8::is_ascii_digit)
        .try_fold(0i64, |v, c| v.checked_mul(10)?.checked_add(i64::from(c - b'0')))
        .unwrap_or(i64::MAX)
}

/// A `long` printed with `%d`, as parsetime.c's messages do: the low 32
/// bits of the value (x86_64 passes the long in a 64-bit register and
/// printf reads an int from it).
fn c_int(v: i64) -> i32 {
    v as i32
}

impl Parser<'_> {
    fn next(&mut self) -> Tok {
        while self
            .s
            .get(self.pos)
            .is_some_and(|&c| c.is_ascii_whitespace() || c == b'_' || c == b',')
        {
            self.pos += 1;
        }
        self.token.clear();
        let Some(&c) = self.s.get(self.pos) else {
            self.tok = Tok::Eof;
            return self.tok;
        };
        self.pos += 1;
        self.token.push(char::from(c));
        self.tok = if c.is_ascii_digit() {
            while let Some(&d) = self.s.get(self.pos).filter(|d| d.is_ascii_digit()) {
                self.token.push(char::from(d));
                self.pos += 1;
            }
            Tok::Number
        } else if c.is_ascii_alphabetic() {
            while let Some(&d) = self.s.get(self.pos).filter(|d| d.is_ascii_alphabetic()) {
                self.token.push(char::from(d));
                self.pos += 1;
            }
            let table = if self.units { MULTIPLIERS } else { WORDS };
            table
                .iter()
                .find(|(w, _)| w.eq_ignore_ascii_case(&self.token))
                .map_or(Tok::Id, |&(_, t)| t)
        } else {
            match c {
                b':' => Tok::Colon,
                b'.' => Tok::Dot,
                b'+' => Tok::Plus,
                b'-' => Tok::Minus,
                b'/' => Tok::Slash,
                _ => {
                    self.pos -= 1;
                    Tok::Eof
                }
            }
        };
        self.tok
    }

    fn rest(&self) -> String {
        String::from_utf8_lossy(self.s.get(self.pos..).unwrap_or_default()).into_owned()
    }

    fn expect_number(&mut self, msg: String) -> Result<(), String> {
        if self.next() == Tok::Number { Ok(()) } else { Err(msg) }
    }

    fn plus_minus(&mut self, doop: Option<Tok>) -> Result<(), String> {
        if let Some(op) = doop {
            self.op = op;
            let c = if op == Tok::Plus { '+' } else { '-' };
            self.expect_number(format!("There should be number after '{c}'"))?;
            self.prev_multiplier = None;
        }
        let mut delta = atol(&self.token) as i32;
        let mut unit = self.next();
        if unit == Tok::MonthsMinutes {
            unit = match self.prev_multiplier {
                Some(Tok::Days | Tok::Weeks | Tok::Months | Tok::Years) => Tok::Months,
                Some(Tok::Seconds | Tok::Minutes | Tok::Hours) => Tok::Minutes,
                _ if delta < 6 => Tok::Months,
                _ => Tok::Minutes,
            };
        }
        self.prev_multiplier = Some(unit);
        let sign = if self.op == Tok::Plus { 1 } else { -1 };
        let tm = &mut self.tv.tm;
        match unit {
            Tok::Years => tm.tm_year = tm.tm_year.wrapping_add(sign * delta),
            Tok::Months => tm.tm_mon = tm.tm_mon.wrapping_add(sign * delta),
            Tok::Weeks | Tok::Days => {
                if unit == Tok::Weeks {
                    delta = delta.wrapping_mul(7);
                }
                tm.tm_mday = tm.tm_mday.wrapping_add(sign * delta);
            }
            Tok::Hours => self.tv.offset += i64::from(sign * delta.wrapping_mul(3600)),
            Tok::Minutes => self.tv.offset += i64::from(sign * delta.wrapping_mul(60)),
            _ => self.tv.offset += i64::from(sign * delta),
        }
        Ok(())
    }

    fn tod(&mut self) -> Result<(), String> {
        let (pos_sv, tok_sv) = (self.pos, self.tok);
        if self.token.len() > 2 {
            return Ok(());
        }
        let mut hour = atol(&self.token) as i32;
        let mut minute = 0;
        self.next();
        if matches!(self.tok, Tok::Slash | Tok::Dot) {
            self.pos = pos_sv;
            self.tok = tok_sv;
            self.token = hour.to_string();
            return Ok(());
        }
        if self.tok == Tok::Colon {
            self.expect_number("Parsing HH:MM syntax, expecting MM as number, got none".into())?;
            minute = atol(&self.token) as i32;
            if minute > 59 {
                return Err(format!("parsing HH:MM syntax, got MM = {minute} (>59!)"));
            }
            self.next();
        }
        if matches!(self.tok, Tok::Am | Tok::Pm) {
            if hour > 12 {
                return Err("there cannot be more than 12 AM or PM hours".into());
            }
            if self.tok == Tok::Pm {
                if hour != 12 {
                    hour += 12;
                }
            } else if hour == 12 {
                hour = 0;
            }
            self.next();
        } else if hour > 23 {
            self.pos = pos_sv;
            self.tok = tok_sv;
            self.token = hour.to_string();
            return Ok(());
        }
        let tm = &mut self.tv.tm;
        tm.tm_hour = hour;
        tm.tm_min = minute;
        tm.tm_sec = 0;
        if tm.tm_hour == 24 {
            tm.tm_hour = 0;
            tm.tm_mday += 1;
        }
        Ok(())
    }

    fn assign_date(&mut self, mday: i64, mon: i64, mut year: i64) -> Result<(), String> {
        if year > 138 {
            if year > 1970 {
                year -= 1900;
            } else {
                return Err(format!("invalid year {year} (should be either 00-99 or >1900)"));
            }
        } else if (0..38).contains(&year) {
            year += 100;
        }
        if year < 70 {
            return Err("won't handle dates before epoch (01/01/1970), sorry".into());
        }
        self.tv.tm.tm_mday = mday as i32;
        self.tv.tm.tm_mon = mon as i32;
        self.tv.tm.tm_year = year as i32;
        Ok(())
    }

    fn day(&mut self) -> Result<(), String> {
        let mut year = i64::from(self.tv.tm.tm_year);
        match self.tok {
            Tok::Yesterday | Tok::Today => {
                if self.tok == Tok::Yesterday {
                    self.tv.tm.tm_mday -= 1;
                }
                self.next();
            }
            Tok::Tomorrow => {
                self.tv.tm.tm_mday += 1;
                self.next();
            }
            Tok::Month(mon) => {
                self.expect_number("the day of the month should follow month name".into())?;
                let mday = atol(&self.token);
                if self.next() == Tok::Number {
                    year = atol(&self.token);
                    self.next();
                }
                self.assign_date(mday, i64::from(mon), year)?;
            }
            Tok::Wday(w) => {
                self.tv.tm.tm_mday += w - self.tv.tm.tm_wday;
                self.next();
            }
            Tok::Number => {
                let mut mon = atol(&self.token);
                let mut mday = 0;
                if mon > 10 * 365 * 24 * 60 * 60 {
                    localtime_into(mon, &mut self.tv.tm);
                    self.next();
                    return Ok(());
                }
                if mon > 19_700_101 && mon < 24_000_101 {
                    let t = self.token.clone();
                    year = atol(t.get(..4).unwrap_or(""));
                    mon = atol(t.get(4..6).unwrap_or(""));
                    mday = atol(t.get(6..8).unwrap_or(""));
                    self.next();
                } else {
                    self.next();
                    if mon <= 31 && matches!(self.tok, Tok::Slash | Tok::Dot) {
                        let sep = self.tok;
                        let (what, c) = if sep == Tok::Dot { ("month", '.') } else { ("day", '/') };
                        self.expect_number(format!("there should be {what} number after '{c}'"))?;
                        mday = atol(&self.token);
                        if self.next() == sep {
                            self.expect_number(format!("there should be year number after '{c}'"))?;
                            year = atol(&self.token);
                            self.next();
                        }
                        if sep == Tok::Dot {
                            std::mem::swap(&mut mday, &mut mon);
                        }
                    }
                }
                mon -= 1;
                if !(0..=11).contains(&mon) {
                    return Err(format!("did you really mean month {}?", c_int(mon + 1)));
                }
                if !(1..=31).contains(&mday) {
                    return Err(format!(
                        "I'm afraid that {} is not a valid day of the month",
                        c_int(mday)
                    ));
                }
                self.assign_date(mday, mon, year)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn parse(&mut self) -> Result<(), String> {
        self.next();
        let mut hr = 0;
        match self.tok {
            Tok::Plus | Tok::Minus => {}
            Tok::Epoch | Tok::Start | Tok::End | Tok::Now => {
                let reference = self.tok;
                if reference != Tok::Now {
                    self.tv.kind = match reference {
                        Tok::Epoch => TimeKind::RelativeToEpoch,
                        Tok::Start => TimeKind::RelativeToStart,
                        _ => TimeKind::RelativeToEnd,
                    };
                    let tm = &mut self.tv.tm;
                    tm.tm_sec = 0;
                    tm.tm_min = 0;
                    tm.tm_hour = 0;
                    tm.tm_mday = 0;
                    tm.tm_mon = 0;
                    tm.tm_year = 0;
                }
                self.next();
                if !matches!(self.tok, Tok::Plus | Tok::Minus) {
                    if reference != Tok::Now {
                        return Err("'start' or 'end' MUST be followed by +|- offset".into());
                    } else if self.tok != Tok::Eof {
                        return Err("if 'now' is followed by a token it must be +|- offset".into());
                    }
                }
            }
            Tok::Number => {
                let (hour_sv, year_sv) = (self.tv.tm.tm_hour, self.tv.tm.tm_year);
                self.tv.tm.tm_hour = 30;
                self.tv.tm.tm_year = 30000;
                self.tod()?;
                self.day()?;
                if self.tv.tm.tm_hour == 30 && self.tv.tm.tm_year != 30000 {
                    self.tod()?;
                }
                if self.tv.tm.tm_hour == 30 {
                    self.tv.tm.tm_hour = hour_sv;
                }
                if self.tv.tm.tm_year == 30000 {
                    self.tv.tm.tm_year = year_sv;
                }
            }
            Tok::Month(_) => {
                self.day()?;
                if self.tok == Tok::Number {
                    self.tod()?;
                }
            }
            Tok::Teatime | Tok::Noon | Tok::Midnight => {
                if self.tok == Tok::Teatime {
                    hr += 4;
                }
                if self.tok != Tok::Midnight {
                    hr += 12;
                }
                self.tv.tm.tm_hour = hr;
                self.tv.tm.tm_min = 0;
                self.tv.tm.tm_sec = 0;
                self.next();
                self.day()?;
            }
            _ => return Err(format!("unparsable time: {}{}", self.token, self.rest())),
        }
        if matches!(self.tok, Tok::Plus | Tok::Minus) {
            self.units = true;
            while matches!(self.tok, Tok::Plus | Tok::Minus | Tok::Number) {
                if self.tok == Tok::Number {
                    self.plus_minus(None)?;
                } else {
                    self.plus_minus(Some(self.tok))?;
                }
                self.next();
            }
        }
        if self.tok != Tok::Eof {
            return Err(format!("unparsable trailing text: '...{}{}'", self.token, self.rest()));
        }
        if self.tv.kind == TimeKind::Absolute {
            let mut tm = self.tv.tm;
            if mktime(&mut tm) == -1 {
                return Err("the specified time is incorrect (out of range?)".into());
            }
        }
        Ok(())
    }
}

/// Parse an at-style time specification as `rrd_parsetime` does: `now`,
/// seconds since the epoch, `HH:MM`, dates, `yesterday`, `start`/`end`
/// with offsets like `-1d6h` (`m` is months or minutes by context).
///
/// # Errors
/// rrdtool's message for an unparsable specification.
pub fn parse(spec: &str) -> Result<TimeSpec, String> {
    let mut tm = localtime(now().0);
    tm.tm_isdst = -1;
    let mut p = Parser {
        s: spec.as_bytes(),
        pos: 0,
        token: String::new(),
        tok: Tok::Eof,
        units: false,
        op: Tok::Plus,
        prev_multiplier: None,
        tv: TimeSpec { kind: TimeKind::Absolute, offset: 0, tm },
    };
    p.parse()?;
    Ok(p.tv)
}

/// `rrd_proc_start_end`: resolve a start and an end that may refer to each
/// other (`end-1d`, `start+1h`).
///
/// # Errors
/// rrdtool's message when they refer to each other or to themselves.
pub fn start_end(start: &TimeSpec, end: &TimeSpec) -> Result<(i64, i64), String> {
    if start.kind == TimeKind::RelativeToEnd && end.kind == TimeKind::RelativeToStart {
        return Err("the start and end times cannot be specified relative to each other".into());
    }
    if start.kind == TimeKind::RelativeToStart {
        return Err("the start time cannot be specified relative to itself".into());
    }
    if end.kind == TimeKind::RelativeToEnd {
        return Err("the end time cannot be specified relative to itself".into());
    }
    let relative = |base: i64, rel: &TimeSpec| {
        let mut tm = localtime(base);
        tm.tm_mday += rel.tm.tm_mday;
        tm.tm_mon += rel.tm.tm_mon;
        tm.tm_year += rel.tm.tm_year;
        mktime(&mut tm).wrapping_add(rel.offset)
    };
    let (s, e);
    if start.kind == TimeKind::RelativeToEnd {
        e = end.resolve();
        s = relative(e, start);
    } else if end.kind == TimeKind::RelativeToStart {
        s = start.resolve();
        e = relative(s, end);
    } else {
        s = start.resolve();
        e = end.resolve();
    }
    Ok((s, e))
}

/// An `@`-style update time: [`parse`], refusing `start`/`end` references
/// as rrdtool's update does.
///
/// # Errors
/// rrdtool update's message (rrd_update.c, `get_time_from_reading`):
/// `ds time: SPEC: REASON` when the time does not parse, its own sentence
/// for a time relative to start or end.
pub fn at_time(spec: &str) -> Result<i64, String> {
    let tv = parse(spec).map_err(|e| format!("ds time: {spec}: {e}"))?;
    if matches!(tv.kind, TimeKind::RelativeToStart | TimeKind::RelativeToEnd) {
        return Err(format!(
            "specifying time relative to the 'start' or 'end' makes no sense here: {spec}"
        ));
    }
    Ok(tv.resolve())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_offsets() {
        let p = |s: &str| parse(s).map(|t| t.resolve());
        assert_eq!(p("1600000000"), Ok(1_600_000_000));
        let (s, e) = start_end(&parse("end-1d").unwrap(), &parse("1600000000").unwrap()).unwrap();
        assert_eq!((s, e), (1_600_000_000 - 86_400, 1_600_000_000));
        let (s, e) = start_end(&parse("1600000000").unwrap(), &parse("s+1h").unwrap()).unwrap();
        assert_eq!((s, e), (1_600_000_000, 1_600_003_600));
        let n = now().0;
        let t = p("now-10").unwrap();
        assert!((n - 12..=n - 8).contains(&t), "{t} vs {n}");
        assert!(parse("bogus").is_err());
        assert!(parse("start").is_err());
        assert!(at_time("end-1").is_err());
    }
}
