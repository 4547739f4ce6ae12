//! Local time from the C library, so that time zones and DST behave as
//! in the C tools the engines reproduce (rrdtool's `rrd_parsetime.c` and
//! `rrdtool dump`): `localtime_r`, `mktime` and `strftime` on a
//! `struct tm` the caller may also edit field by field.

/// A `struct tm` with every field zero.
fn zero_tm() -> libc::tm {
    // SAFETY: `libc::tm` is a plain C struct of integers and a pointer
    // (`tm_zone`); all-zero bytes are a valid value of it.
    unsafe { std::mem::zeroed() }
}

/// `localtime_r(t)`.
#[must_use]
pub fn localtime(t: i64) -> libc::tm {
    let mut tm = zero_tm();
    localtime_into(t, &mut tm);
    tm
}

/// `localtime_r(t, tm)` into a `tm` that already holds a time, as
/// parsetime.c does for a bare number of seconds: when `t` is past what a
/// `struct tm` can hold, glibc fails part-way and leaves the fields it had
/// not reached (year, month, day) as they were, and rrdtool goes on with
/// that mixture. Doing the same keeps our answer equal to rrdtool's.
pub fn localtime_into(t: i64, tm: &mut libc::tm) {
    let tt: libc::time_t = t;
    // SAFETY: `tt` is a live local and `tm` an exclusively borrowed, valid
    // struct tm; localtime_r writes only into `tm`.
    unsafe {
        libc::localtime_r(&tt, tm);
    }
}

/// `mktime(tm)` (normalises `tm`); -1 when the time cannot be represented.
pub fn mktime(tm: &mut libc::tm) -> i64 {
    // SAFETY: `tm` is a valid, exclusively borrowed `struct tm`.
    unsafe { libc::mktime(tm) }
}

/// `strftime(fmt, tm)` into a 255-byte buffer, as text (lossy UTF-8);
/// empty when the result does not fit.
#[must_use]
pub fn strftime(fmt: &std::ffi::CStr, tm: &libc::tm) -> String {
    let mut buf = [0u8; 255];
    // SAFETY: `buf` is writable for its length, `fmt` is NUL-terminated and
    // `tm` a valid struct tm; strftime writes at most `buf.len()` bytes and
    // returns how many (0 on overflow).
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), tm) };
    String::from_utf8_lossy(buf.get(..n).unwrap_or_default()).into_owned()
}
