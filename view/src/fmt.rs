//! Bytes, sizes and values as text for people, the same in every front
//! end.
//!
//! Formats other tools must match byte for byte (bbolt's hex dumps,
//! `rrdtool dump`'s XML, `hg debugindex`) stay with their printers in
//! `mapwise-core` and the command line; these are mapwise's own.

use std::fmt::Write as _;

/// Lower-case hex of `bytes`, two digits a byte and no separator
/// (`[0x6b, 0x00]` is `6b00`; no bytes give the empty string).
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The bytes of hex text, lower or upper case, with an optional `0x` and
/// surrounding blanks; `None` for an odd number of digits or anything
/// that is not a hex digit.
#[must_use]
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    if !t.len().is_multiple_of(2) {
        return None;
    }
    (0..t.len())
        .step_by(2)
        .map(|i| t.get(i..i + 2).and_then(|p| u8::from_str_radix(p, 16).ok()))
        .collect()
}

/// Binary units above bytes, in order (powers of 1024).
const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];

/// `bytes` (at least 1 KiB) in the largest unit of [`UNITS`] that keeps
/// the figure at 1 or more: the figure and the unit.
#[expect(clippy::cast_precision_loss)]
fn scaled(bytes: u64) -> (f64, &'static str) {
    let mut v = bytes as f64 / 1024.0;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    (v, UNITS.get(i).copied().unwrap_or("PiB"))
}

/// A size in bytes for people, as the inspector's title and status lines
/// show it: bytes below 1 KiB (`512 B`), else powers of 1024 up to PiB
/// with one decimal only where it says something (`220 KiB`, `1.5 MiB`,
/// `272 MiB`: none from 100 up, or within 0.05 of a whole number).
#[must_use]
pub fn human_size(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let (v, unit) = scaled(bytes);
    if v >= 100.0 || (v - v.round()).abs() < 0.05 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// A size in bytes with one decimal always (`272.0 MiB`; bytes below
/// 1 KiB as `512 B`), powers of 1024 up to PiB: for report tables, whose
/// columns line up when every figure has its decimal.
#[must_use]
pub fn human_size_fixed(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let (v, unit) = scaled(bytes);
    format!("{v:.1} {unit}")
}

/// An RRD value (an `f64` of a row, a minimum or a PDP value) as
/// `rrdtool dump` prints one: `%.10e` through rrdtool's own printf
/// ([`mapwise_core::rrd::cfmt::rrd_e10`], `1.5494994000e+01`), and
/// unknown values (NaN) as `NaN`.
#[must_use]
pub fn rrd_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else {
        mapwise_core::rrd::cfmt::rrd_e10(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_both_ways() {
        assert_eq!(hex(b"key"), "6b6579");
        assert_eq!(hex(&[0, 0xff]), "00ff");
        assert_eq!(hex(&[]), "");
        assert_eq!(unhex("0x6b6579"), Some(b"key".to_vec()));
        assert_eq!(unhex("6B"), Some(vec![0x6b]));
        assert_eq!(unhex(" 6B "), Some(vec![0x6b]));
        assert_eq!(unhex("6"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("é1"), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(12), "12 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(225_280), "220 KiB");
        assert_eq!(human_size(285_548_544), "272 MiB");
        assert_eq!(human_size(64 << 30), "64 GiB");
        assert_eq!(human_size(u64::MAX), "16384 PiB");
        assert_eq!(human_size_fixed(512), "512 B");
        assert_eq!(human_size_fixed(285_212_672), "272.0 MiB");
        assert_eq!(human_size_fixed(3 << 40), "3.0 TiB");
    }

    #[test]
    fn rrd_values() {
        assert_eq!(rrd_value(f64::NAN), "NaN");
        assert_eq!(rrd_value(15.494_994), "1.5494994000e+01");
        assert_eq!(rrd_value(0.0), "0.0000000000e+00");
    }
}
