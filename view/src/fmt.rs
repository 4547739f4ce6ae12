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
    if v.is_nan() { "NaN".into() } else { mapwise_core::rrd::cfmt::rrd_e10(v) }
}

/// Bytes as shown: printable ASCII as `"text"`; mostly printable bytes
/// as a quoted string with escapes (`"\n\x12/key"`); anything else as
/// hex with runs of four or more equal bytes folded (`0x00*7 045f 00*8`).
/// `…` marks a cut (at `max` characters, or because only a prefix of
/// `full_len` bytes is known).
#[must_use]
pub fn bytes_text(prefix: &[u8], full_len: usize, max: usize) -> String {
    let printable = prefix.iter().filter(|b| (0x20..0x7f).contains(*b)).count();
    let complete = full_len <= prefix.len();
    let mut s = String::new();
    if printable == prefix.len() || (prefix.len() >= 4 && printable * 10 >= prefix.len() * 7) {
        s.push('"');
        for &b in prefix {
            match b {
                b'"' => s.push_str("\\\""),
                b'\\' => s.push_str("\\\\"),
                b'\n' => s.push_str("\\n"),
                b'\t' => s.push_str("\\t"),
                b'\r' => s.push_str("\\r"),
                0 => s.push_str("\\0"),
                0x20..0x7f => s.push(char::from(b)),
                _ => {
                    let _ = write!(s, "\\x{b:02x}");
                }
            }
        }
        if complete {
            s.push('"');
        }
    } else {
        s.push_str("0x");
        s.push_str(&folded_hex(prefix));
    }
    let mut cut = !complete;
    if s.chars().count() > max {
        s = s.chars().take(max.saturating_sub(1)).collect();
        cut = true;
    }
    if cut {
        s.push('…');
    }
    s
}

/// Hex with runs of four or more equal bytes written `hh*n`, pieces
/// separated by spaces: `00*7 045f 00*8`.
fn folded_hex(b: &[u8]) -> String {
    let mut out = String::new();
    let mut plain = String::new();
    let mut rest = b;
    while let Some((&x, _)) = rest.split_first() {
        let run = rest.iter().take_while(|&&y| y == x).count();
        rest = rest.get(if run >= 4 { run } else { 1 }..).unwrap_or_default();
        if run >= 4 {
            if !plain.is_empty() {
                out.push_str(&plain);
                out.push(' ');
                plain.clear();
            }
            let _ = write!(out, "{x:02x}*{run} ");
        } else {
            let _ = write!(plain, "{x:02x}");
        }
    }
    out.push_str(&plain);
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_hex() {
        assert_eq!(bytes_text(b"key", 3, 20), "\"key\"");
        assert_eq!(bytes_text(b"", 0, 20), "\"\"");
        assert_eq!(bytes_text(&[0, 1, 0xff], 3, 20), "0x0001ff");
        assert_eq!(bytes_text(b"abcdefgh", 8, 5), "\"abc…");
        assert_eq!(bytes_text(b"abc", 100, 20), "\"abc…");
        assert_eq!(bytes_text(&[0; 10], 10, 8), "0x00*10");
        assert_eq!(bytes_text(&[0; 10], 10, 6), "0x00*…");
        let etcd = [0, 0, 0, 0, 0, 0, 0, 4, b'_', 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(bytes_text(&etcd, 17, 40), "0x00*7 045f 00*8");
        assert_eq!(bytes_text(b"\n\x12/oracle/key", 13, 40), "\"\\n\\x12/oracle/key\"");
        assert_eq!(bytes_text(b"a\"b\\", 4, 40), "\"a\\\"b\\\\\"");
    }

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
