//! The number formats rrdtool prints, byte for byte.
//!
//! Two different `%0.10e` are in play:
//! * glibc's `printf` (`fetch`, `info`, `updatev` output via
//!   `rrd_info_print`): the exact decimal value rounded to nearest-even, a
//!   NaN printed as `nan` or `-nan` after its sign bit — [`c_e10`];
//! * rrdtool's bundled `rrd_snprintf` (every number of `dump`, through
//!   `CB_FMTS`): a portable formatter (`rrd_snprintf.c: fmtflt`) that
//!   scales the value by powers of ten in (on Debian's build) double
//!   arithmetic and rounds the fraction half-up, so its last digit can
//!   differ from glibc's — [`rrd_e10`] redoes that arithmetic.

// rrdtool's C conversions (double to unsigned long, unsigned long to int,
// …) are reproduced on purpose: they decide the bytes of the result.
#![expect(clippy::cast_possible_truncation)]

use alloc::string::String;
use core::fmt::Write;

/// glibc `%0.10e` of `v`.
#[must_use]
pub fn c_e10(v: f64) -> String {
    c_exp(v, 10)
}

/// glibc `%.{prec}e` of `v`.
#[must_use]
pub fn c_exp(v: f64, prec: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let mut s = String::new();
    let _ = write!(s, "{v:.prec$e}");
    // Rust writes `1.5e3` / `1.5e-3`; C writes `1.5e+03` / `1.5e-03`.
    if let Some(e) = s.find('e') {
        let (mant, exp) = s.split_at(e);
        let exp = exp.get(1..).unwrap_or("0");
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        let mut out = String::with_capacity(s.len() + 2);
        out.push_str(mant);
        out.push('e');
        out.push(sign);
        if digits.len() < 2 {
            out.push('0');
        }
        out.push_str(digits);
        return out;
    }
    s
}

/// glibc `%f` (`%lf`) of `v`: six decimals.
#[must_use]
pub fn fixed6(v: f64) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let mut s = String::new();
    let _ = write!(s, "{v:.6}");
    s
}

fn pow10(e: i32) -> f64 {
    // rrd_snprintf.c: mypow10, one rounding per factor of ten; the table
    // holds exactly those products and quotients.
    let i = e.unsigned_abs() as usize;
    let table = if e >= 0 { &POW10_UP } else { &POW10_DOWN };
    match table.get(i) {
        Some(&r) => r,
        None => pow10_slow(e),
    }
}

/// mypow10 as rrd_snprintf.c computes it: `e` multiplications (or
/// divisions) by ten, each rounded.
const fn pow10_slow(mut e: i32) -> f64 {
    let mut r = 1.0f64;
    while e > 0 {
        r *= 10.0;
        e -= 1;
    }
    while e < 0 {
        r /= 10.0;
        e += 1;
    }
    r
}

/// Exponents `getexponent` can return: -308 ..= 308.
const POW10_LEN: usize = 309;

const fn pow10_table(up: bool) -> [f64; POW10_LEN] {
    let mut t = [1.0f64; POW10_LEN];
    let mut i = 1;
    while i < POW10_LEN {
        let e = i as i32;
        t[i] = pow10_slow(if up { e } else { -e });
        i += 1;
    }
    t
}

/// `pow10(k)` for k in 0..=308, as mypow10 rounds it.
static POW10_UP: [f64; POW10_LEN] = pow10_table(true);
/// `pow10(-k)` for k in 0..=308, as mypow10 rounds it.
static POW10_DOWN: [f64; POW10_LEN] = pow10_table(false);

/// rrd_snprintf.c's `getexponent` (`value` finite, ≥ 0): scale by ten
/// until `1 <= tmp < 10`, rounding each step, at most down to -308 and up
/// to 308 — step by step, as rrdtool does.
fn getexponent_slow(value: f64) -> i32 {
    let mut exponent: i32 = 0;
    let mut tmp = value;
    while tmp < 1.0 && tmp > 0.0 && {
        exponent -= 1;
        exponent >= -307
    } {
        tmp *= 10.0;
    }
    while tmp >= 10.0 && {
        exponent += 1;
        exponent <= 308
    } {
        tmp /= 10.0;
    }
    exponent
}

/// [`getexponent_slow`] without its up to 600 steps: the decade of
/// `value` read against the table. The steps' rounding errors add up to
/// less than 4e-14 relative (308 roundings of 2^-53), so wherever `value`
/// lies further than 1e-12 (relative) from both ends of its decade the
/// stepwise answer is the decade; nearer an end, and below 1e-300 (where
/// rrdtool's bound of -308 and subnormal steps come in), it takes the
/// steps.
fn getexponent(value: f64) -> i32 {
    const MARGIN: f64 = 1e-12;
    if value == 0.0 || value < 1e-300 {
        return getexponent_slow(value);
    }
    let bits = value.to_bits();
    let e2 = ((bits >> 52) & 0x7ff) as i32 - 1023;
    // log10(2) ≈ 0.30103: within one of the decade; the loops fix it.
    let mut e = (e2 * 30_103).div_euclid(100_000);
    while e > -300 && value < pow10(e) {
        e -= 1;
    }
    while e < 308 && value >= pow10(e + 1) {
        e += 1;
    }
    let lo = pow10(e);
    let hi = if e < 308 { pow10(e + 1) } else { f64::INFINITY };
    if value < lo * (1.0 + MARGIN) || value > hi * (1.0 - MARGIN) {
        return getexponent_slow(value);
    }
    e
}

/// `fmtflt`'s `cast`: truncation, with `UINTMAX_MAX` for anything larger.
fn cast(v: f64) -> u64 {
    if v >= 18_446_744_073_709_551_615.0 { u64::MAX } else { v as u64 }
}

/// `fmtflt`'s `myround`: round half up.
fn myround(v: f64) -> u64 {
    let i = cast(v);
    if v - (i as f64) < 0.5 { i } else { i.wrapping_add(1) }
}

/// rrdtool's `rrd_snprintf("%0.10e", v)` (`rrd_snprintf.c: fmtflt`), the
/// format of every number in `rrdtool dump`.
#[must_use]
pub fn rrd_e10(v: f64) -> String {
    rrd_exp(v, 10)
}

/// rrdtool's `rrd_snprintf("%.{prec}e", v)` for `prec <= 19`. Debian's
/// build has no `HAVE_LONG_DOUBLE`, so `LDOUBLE` is `double`: every
/// scaling step rounds to double, and the exponent search stops at
/// `DBL_MIN_10_EXP` (-307), which prints subnormals as `0.x…e-308`.
#[must_use]
pub fn rrd_exp(v: f64, prec: u32) -> String {
    let negative = v < 0.0;
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if negative { "-inf".into() } else { "inf".into() };
    }
    let prec = prec.min(19);
    let value = v.abs();
    let mut exponent = getexponent(value);
    let ufvalue = value / pow10(exponent);
    let mut intpart = cast(ufvalue);
    let mask = 10u64.pow(prec);
    let mut fracpart = myround(mask as f64 * (ufvalue - intpart as f64));
    if fracpart >= mask {
        intpart = intpart.wrapping_add(1);
        fracpart = 0;
        if intpart == 10 {
            intpart = 1;
            exponent += 1;
        }
    }
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let _ = write!(out, "{intpart}");
    if prec > 0 {
        out.push('.');
        if fracpart == 0 {
            for _ in 0..prec {
                out.push('0');
            }
        } else {
            let _ = write!(out, "{fracpart:0width$}", width = prec as usize);
        }
    }
    let (esign, e) = if exponent < 0 { ('-', -exponent) } else { ('+', exponent) };
    let _ = write!(out, "e{esign}{e:02}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_style() {
        assert_eq!(c_e10(1.0), "1.0000000000e+00");
        assert_eq!(c_e10(-1234.5), "-1.2345000000e+03");
        assert_eq!(c_e10(1e-300), "1.0000000000e-300");
        assert_eq!(c_e10(f64::from_bits(0xFFF8_0000_0000_0000)), "-nan");
        assert_eq!(c_e10(f64::NAN.copysign(1.0)), "nan");
        assert_eq!(c_e10(f64::NEG_INFINITY), "-inf");
        assert_eq!(c_e10(0.0), "0.0000000000e+00");
        assert_eq!(fixed6(1.5), "1.500000");
    }

    #[test]
    fn rrd_snprintf_style() {
        assert_eq!(rrd_e10(1.0), "1.0000000000e+00");
        assert_eq!(rrd_e10(0.5), "5.0000000000e-01");
        assert_eq!(rrd_e10(-300.0), "-3.0000000000e+02");
        assert_eq!(rrd_e10(0.0), "0.0000000000e+00");
        assert_eq!(rrd_e10(-0.0), "0.0000000000e+00");
        assert_eq!(rrd_e10(1e-300), "1.0000000000e-300");
        assert_eq!(rrd_e10(8.642135e130), "8.6421350000e+130");
    }

    /// A small deterministic generator (xorshift64*), so the test needs
    /// no dependency and always sees the same values.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// The table and the decade shortcut give what rrdtool's step-by-step
    /// loops give: on random bit patterns (every exponent), on values a
    /// few ulps either side of every power of ten, and at the ends.
    #[test]
    fn shortcuts_agree_with_the_steps() {
        for e in -308..=308 {
            assert_eq!(pow10(e).to_bits(), pow10_slow(e).to_bits(), "pow10({e})");
        }
        let check = |v: f64| {
            if v.is_finite() && v >= 0.0 {
                assert_eq!(getexponent(v), getexponent_slow(v), "{v:e} ({:#x})", v.to_bits());
            }
        };
        let mut st = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            check(f64::from_bits(xorshift(&mut st) & !(1 << 63)));
        }
        for e in -320..=309 {
            let p = pow10_slow(e);
            for d in -40i64..=40 {
                check(f64::from_bits(p.to_bits().wrapping_add_signed(d)));
            }
            check(p * (1.0 + 1e-12));
            check(p * (1.0 - 1e-12));
        }
        for v in [
            0.0,
            f64::MIN_POSITIVE,
            5e-324,
            1e-300,
            9.999_999_999_999e-301,
            f64::MAX,
            1.0,
            10.0,
            9.999_999_999_999_999,
        ] {
            check(v);
        }
    }
}
