//! rrdtool's own number handling, reproduced so that results match its
//! bytes: its decimal parser (`rrd_strtod.c`), its decimal string
//! subtraction for COUNTER/DERIVE (`rrd_diff.c`), its duration parser
//! (`rrd_utils.c: rrd_scaled_duration`) and the name hash of create
//! (`hash_32.c: fnv_32_str`).

// rrdtool's C conversions (double to unsigned long, unsigned long to int,
// …) are reproduced on purpose: they decide the bytes of the result.
#![expect(clippy::cast_possible_truncation)]

use alloc::string::String;
use alloc::vec::Vec;

/// C's `strtol(s, &end, base)` (glibc) for base 10 or 0 (`0x` hex, `0` octal):
/// the value (saturated at the `long` limits) and the bytes used (0 when
/// no number was read).
#[must_use]
pub fn strtol(s: &[u8], base: u32) -> (i64, usize) {
    let mut i = 0;
    while s.get(i).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut radix = if base == 0 { 10 } else { base };
    if base == 0 && s.get(i) == Some(&b'0') {
        if matches!(s.get(i + 1), Some(b'x' | b'X'))
            && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
        {
            radix = 16;
            i += 2;
        } else {
            radix = 8;
        }
    }
    let begin = i;
    let mut v: i128 = 0;
    while let Some(d) = s.get(i).and_then(|&c| char::from(c).to_digit(radix)) {
        v = (v * i128::from(radix) + i128::from(d)).min(i128::from(i64::MAX) + 1);
        i += 1;
    }
    if i == begin {
        return (0, 0);
    }
    let v = if neg { -v } else { v };
    (v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64, i)
}

/// rrdtool's NaN (`DNAN`): the x86 default NaN of a run-time `0.0/0.0`,
/// sign bit set, bytes `00 00 00 00 00 00 f8 ff` (`rrd_nan_inf.c`).
pub const DNAN: f64 = f64::from_bits(0xFFF8_0000_0000_0000);
/// rrdtool's infinity (`DINF`).
pub const DINF: f64 = f64::INFINITY;

/// `floor(x)`, exact for every double (core has no libm).
#[must_use]
pub fn floor(x: f64) -> f64 {
    if !x.is_finite() || x.abs() >= 4_503_599_627_370_496.0 {
        return x;
    }
    let t = x as i64 as f64;
    if t > x { t - 1.0 } else { t }
}

/// `ceil(x)`, exact for every double.
#[must_use]
pub fn ceil(x: f64) -> f64 {
    -floor(-x)
}

/// C's `isspace` in the "C" locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// `rrd_strtod`: the number at the start of `s` and the bytes it used;
/// `None` when there is no digit or the decimal exponent is outside
/// `DBL_MIN_EXP..=DBL_MAX_EXP` (-1021..=1024) — rrdtool then leaves the end
/// pointer at the start, which reads as "no conversion".
///
/// Not a correctly rounded parse: every mantissa digit is accumulated in a
/// double (`n = n * 10 + d`), then the value is scaled by 10^|exp| built by
/// repeated squaring, dividing for negative exponents.
#[must_use]
pub fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let mut p = 0;
    while s.get(p).copied().is_some_and(is_space) {
        p += 1;
    }
    let mut negative = false;
    match s.get(p) {
        Some(b'-') => {
            negative = true;
            p += 1;
        }
        Some(b'+') => p += 1,
        _ => {}
    }
    let mut number = 0.0f64;
    let mut exponent: i32 = 0;
    let mut num_digits = 0;
    while let Some(&c) = s.get(p).filter(|c| c.is_ascii_digit()) {
        number = number * 10.0 + f64::from(c - b'0');
        p += 1;
        num_digits += 1;
    }
    if s.get(p) == Some(&b'.') {
        p += 1;
        let mut decimals: i32 = 0;
        while let Some(&c) = s.get(p).filter(|c| c.is_ascii_digit()) {
            number = number * 10.0 + f64::from(c - b'0');
            p += 1;
            num_digits += 1;
            decimals = decimals.wrapping_add(1);
        }
        exponent = exponent.wrapping_sub(decimals);
    }
    if num_digits == 0 {
        return None;
    }
    if negative {
        number = -number;
    }
    if matches!(s.get(p), Some(b'e' | b'E')) {
        p += 1;
        let mut eneg = false;
        match s.get(p) {
            Some(b'-') => {
                eneg = true;
                p += 1;
            }
            Some(b'+') => p += 1,
            _ => {}
        }
        let mut n: i32 = 0;
        while let Some(&c) = s.get(p).filter(|c| c.is_ascii_digit()) {
            n = n.wrapping_mul(10).wrapping_add(i32::from(c - b'0'));
            p += 1;
        }
        exponent = if eneg { exponent.wrapping_sub(n) } else { exponent.wrapping_add(n) };
    }
    if !(-1021..=1024).contains(&exponent) {
        return None;
    }
    let mut p10 = 10.0f64;
    let mut n = exponent.unsigned_abs();
    while n != 0 {
        if n & 1 != 0 {
            if exponent < 0 {
                number /= p10;
            } else {
                number *= p10;
            }
        }
        n >>= 1;
        p10 *= p10;
    }
    Some((number, p))
}

/// What `rrd_strtodbl` made of a string.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Parsed {
    /// The whole string is a number (return value 2).
    Whole(f64),
    /// A number followed by other bytes, which start at the index
    /// (return value 1).
    Partial(f64, usize),
    /// No number at all (return value 0).
    Nothing,
}

/// `rrd_strtodbl`: [`strtod`], falling back to the special words when no
/// digit was read (`nan` gives a NaN with the sign bit *clear*, `-nan`
/// rrdtool's negative NaN, `inf`, `-inf`; matched on their first letters,
/// case-insensitively, so `nanx` and `infinity` count too).
#[must_use]
pub fn strtodbl(s: &[u8]) -> Parsed {
    match strtod(s) {
        Some((v, end)) if end >= s.len() => Parsed::Whole(v),
        Some((v, end)) => Parsed::Partial(v, end),
        None => {
            let starts = |w: &[u8]| {
                s.len() >= w.len() && s.iter().zip(w).all(|(a, b)| a.eq_ignore_ascii_case(b))
            };
            if starts(b"-nan") {
                Parsed::Whole(DNAN)
            } else if starts(b"nan") {
                Parsed::Whole(-DNAN)
            } else if starts(b"inf") {
                Parsed::Whole(DINF)
            } else if starts(b"-inf") {
                Parsed::Whole(-DINF)
            } else {
                Parsed::Nothing
            }
        }
    }
}

/// The error text `rrd_strtodbl` sets for `s` under the context `what`
/// (`None` when `s` is a whole number).
#[must_use]
pub fn strtodbl_error(what: &str, s: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(s);
    match strtodbl(s) {
        Parsed::Whole(_) => None,
        Parsed::Nothing => Some(alloc::format!("{what} - Cannot convert '{text}' to float")),
        Parsed::Partial(v, end) => Some(alloc::format!(
            "{what} - Converted '{text}' to {}, but cannot convert '{}'",
            super::cfmt::fixed6(v),
            String::from_utf8_lossy(s.get(end..).unwrap_or_default())
        )),
    }
}

/// `rrd_diff(a, b)`: `a - b` of two decimal integers given as strings,
/// computed digit by digit (so that 64-bit counters keep every digit) and
/// read back with [`strtod`]. Non-digits before the digits are skipped
/// (a `-` among them marks the number negative); the digits end at the
/// first non-digit. NaN when either has no digits, the signs differ, or
/// a number has more than 30 digits.
#[must_use]
pub fn diff(a: &[u8], b: &[u8]) -> f64 {
    fn digits(s: &[u8]) -> (bool, &[u8]) {
        let mut neg = false;
        let mut i = 0;
        while let Some(&c) = s.get(i) {
            if c.is_ascii_digit() || c == 0 {
                break;
            }
            if c == b'-' {
                neg = true;
            }
            i += 1;
        }
        let rest = s.get(i..).unwrap_or_default();
        let n = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        (neg, rest.get(..n).unwrap_or_default())
    }
    let (a_neg, a) = digits(a);
    let (b_neg, b) = digits(b);
    if a.is_empty() || b.is_empty() {
        return super::num::DNAN;
    }
    if a_neg != b_neg {
        return DNAN;
    }
    let m = a.len().max(b.len());
    if m > super::format::LAST_DS_LEN {
        return DNAN;
    }
    // res[0..=m+1] are blanks, res[m+2] ends the string; digits go into
    // res[2..=m+1] from the right (rrdtool's buffer layout).
    let mut res: Vec<u8> = alloc::vec![b' '; m + 3];
    if let Some(last) = res.last_mut() {
        *last = 0;
    }
    let mut c: i32 = 0;
    let digit = |s: &[u8], from_end: usize| -> Option<i32> {
        s.len().checked_sub(1 + from_end).and_then(|i| s.get(i)).map(|&d| i32::from(d))
    };
    for x in 0..m {
        let r = m + 1 - x;
        let v = match (digit(a, x), digit(b, x)) {
            (Some(da), Some(db)) => (da - c) - db + i32::from(b'0'),
            (Some(da), None) => da - c,
            (None, Some(db)) => (i32::from(b'0') - db - c) + i32::from(b'0'),
            (None, None) => i32::from(b'0') - c,
        };
        let (v, carry) = if v < i32::from(b'0') {
            (v + 10, 1)
        } else if v > i32::from(b'9') {
            (v - 10, 1)
        } else {
            (v, 0)
        };
        c = carry;
        if let Some(slot) = res.get_mut(r) {
            *slot = u8::try_from(v).unwrap_or(b'0');
        }
    }
    let parse = |res: &[u8]| -> f64 {
        let s = super::format::le::cstr(res);
        match strtodbl(s) {
            Parsed::Whole(v) => v,
            _ => DNAN,
        }
    };
    let mut result = if c != 0 {
        // The result went negative: take the ten's complement of the
        // digits and negate.
        let mut r = m + 1;
        for _ in 0..m {
            let Some(&d) = res.get(r).filter(|d| d.is_ascii_digit()) else {
                break;
            };
            let mut v = (i32::from(b'9') - i32::from(d) + c) + i32::from(b'0');
            if v > i32::from(b'9') {
                v -= 10;
                c = 1;
            } else {
                c = 0;
            }
            if let Some(slot) = res.get_mut(r) {
                *slot = u8::try_from(v).unwrap_or(b'0');
            }
            r -= 1;
        }
        let v = parse(&res);
        if v.is_nan() { DNAN } else { -v }
    } else {
        parse(&res)
    };
    if a_neg && b_neg {
        result = -result;
    }
    result
}

/// `rrd_scaled_duration(token, divisor)`: a count (plain digits, kept as
/// is) or a duration with a unit `s m h d w M y` (months count 31 days,
/// years 366) divided by `divisor` seconds. Errors carry rrdtool's words.
///
/// # Errors
/// rrdtool's message when the token is not a positive number, has
/// trailing garbage, is 0, or does not divide evenly.
pub fn scaled_duration(token: &str, divisor: u64) -> Result<u64, &'static str> {
    let b = token.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_digit) {
        return Err("value must be (suffixed) positive number");
    }
    if divisor == 0 {
        return Err("INTERNAL ERROR: Zero divisor");
    }
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut value: u64 = 0;
    for &c in b.get(..n).unwrap_or_default() {
        // strtoul saturates at ULONG_MAX.
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .unwrap_or(u64::MAX);
    }
    let mult: u64 = match b.get(n) {
        None => {
            return if value == 0 { Err("value must be positive") } else { Ok(value) };
        }
        Some(b's') => 1,
        Some(b'm') => 60,
        Some(b'h') => 3600,
        Some(b'd') => 86_400,
        Some(b'w') => 604_800,
        Some(b'M') => 2_678_400,
        Some(b'y') => 31_622_400,
        Some(_) => return Err("value has trailing garbage"),
    };
    let value = value.wrapping_mul(mult);
    if value == 0 {
        return Err("value must be positive");
    }
    if !value.is_multiple_of(divisor) {
        return Err("value would truncate when scaled");
    }
    Ok(value / divisor)
}

/// `FnvHash(name)`: 32-bit FNV-1 of the bytes of `name`, computed in
/// `unsigned long` (64 bits on LP64, so it is not reduced mod 2^32).
/// rrdtool hashes the file name as given to `create` and takes it modulo
/// the seasonal period for `seasonal_smooth_idx`.
#[must_use]
pub fn fnv_hash(name: &[u8]) -> u64 {
    let mut h: u64 = 0x811c_9dc5;
    for &b in name {
        if b == 0 {
            break;
        }
        h = h.wrapping_mul(0x0100_0193);
        h ^= u64::from(b);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtod_is_rrdtools_not_a_correct_rounding() {
        assert_eq!(strtod(b"1.5"), Some((1.5, 3)));
        assert_eq!(strtod(b"  -2e3x"), Some((-2000.0, 6)));
        assert_eq!(strtod(b"1e"), Some((1.0, 2)));
        assert_eq!(strtod(b".5"), Some((0.5, 2)));
        assert_eq!(strtod(b"e5"), None);
        assert_eq!(strtod(b"1e-1022"), None);
        // 0.3 = 3 / 10 is correctly rounded; many-digit values are not
        // always: 401 of the corpus values differ by one ulp.
        assert_eq!(strtod(b"0.3").map(|v| v.0), Some(0.3));
    }

    #[test]
    fn special_words() {
        assert!(matches!(strtodbl(b"nan"), Parsed::Whole(v) if v.is_nan() && v.is_sign_positive()));
        assert_eq!(strtol(b"  5 updates", 0), (5, 3));
        assert_eq!(strtol(b"-1 err", 0), (-1, 2));
        assert_eq!(strtol(b"0x10", 0), (16, 4));
        assert_eq!(strtol(b"010", 0), (8, 3));
        assert_eq!(strtol(b"x", 0), (0, 0));
        assert_eq!(strtol(b"99999999999999999999999", 10).0, i64::MAX);
        assert_eq!(strtol(b"-99999999999999999999999", 10).0, i64::MIN);
        assert!(matches!(strtodbl(b"-NaN"), Parsed::Whole(v) if v.to_bits() == DNAN.to_bits()));
        assert_eq!(strtodbl(b"infinity"), Parsed::Whole(f64::INFINITY));
        assert_eq!(strtodbl(b"-inf"), Parsed::Whole(f64::NEG_INFINITY));
        assert_eq!(strtodbl(b"abc"), Parsed::Nothing);
        assert_eq!(strtodbl(b"1.5x"), Parsed::Partial(1.5, 3));
        assert_eq!(strtodbl(b""), Parsed::Nothing);
    }

    #[test]
    fn decimal_subtraction() {
        assert_eq!(diff(b"1200", b"1000"), 200.0);
        assert_eq!(diff(b"1000", b"1200"), -200.0);
        assert_eq!(diff(b"-5", b"-3"), -2.0);
        assert!(diff(b"5", b"-3").is_nan());
        assert!(diff(b"", b"3").is_nan());
        assert_eq!(diff(b"18446744073709551615", b"18446744073709551610"), 5.0);
    }

    #[test]
    fn durations() {
        assert_eq!(scaled_duration("288", 300), Ok(288));
        assert_eq!(scaled_duration("1d", 300), Ok(288));
        assert_eq!(scaled_duration("5m", 300), Ok(1));
        assert!(scaled_duration("7m", 300).is_err());
        assert!(scaled_duration("0", 1).is_err());
        assert!(scaled_duration("-1", 1).is_err());
        assert!(scaled_duration("3x", 1).is_err());
    }

    #[test]
    fn fnv_of_the_corpus_name() {
        // hw.rrd's seasonal_smooth_idx is 16 with period 48 (checked
        // against the corpus file).
        assert_eq!(fnv_hash(b"hw.rrd") % 48, 16);
        assert_eq!(floor(-0.5), -1.0);
        assert_eq!(floor(2.0), 2.0);
        assert_eq!(ceil(2.1), 3.0);
    }
}
