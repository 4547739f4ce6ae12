//! Keys, values and bucket names on the command line, as bbolt's CLI
//! reads and prints them (`cmd/bbolt/command/utils.go`: `formatBytes`,
//! `parseBytes`, `isPrintable`, `bytesToAsciiOrHex`).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt as _;

use anyhow::{Context, Result};
use clap::ValueEnum;
use mapwise_view::fmt::hex;
use sha2::{Digest, Sha256};

/// How a key or value is printed (bbolt's `--format`, `FORMAT_MODES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The bytes as text when they are valid UTF-8 made only of printable
    /// characters, else lower-case hex (bbolt `bytesToAsciiOrHex`).
    Auto,
    /// A double-quoted string with Go's escapes (Go `%q`,
    /// `strconv.Quote`).
    AsciiEncoded,
    /// Lower-case hex.
    Hex,
    /// The raw bytes, unchanged.
    Bytes,
    /// `<redacted len:N sha256:HEX>`: the length and SHA-256, never the
    /// content.
    Redacted,
}

/// How a key or value given as an argument is read (bbolt's
/// `--parse-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Parse {
    /// The argument's bytes as given.
    AsciiEncoded,
    /// Hex digits (either case), two per byte.
    Hex,
}

/// The bytes of `arg` read as `how` says; `what` names the argument in
/// errors.
///
/// # Errors
/// Odd-length or non-hex input with [`Parse::Hex`].
pub fn parse(arg: &OsString, how: Parse, what: &str) -> Result<Vec<u8>> {
    let b = arg.as_bytes();
    match how {
        Parse::AsciiEncoded => Ok(b.to_vec()),
        Parse::Hex => {
            unhex(b).with_context(|| format!("{what} {:?} is not hex", arg.to_string_lossy()))
        }
    }
}

/// A text argument that is hex: the bytes `--parse-format hex` would read
/// from it, the hex digits to give there, and whether it had a `0x` /
/// `0X` prefix, dropped here. Hex as bbolt reads it (`parseBytes`, Go's
/// `hex.DecodeString`): an even number of hex digits of either case; Go
/// refuses the prefix, so the digits are given without it. `None` when
/// `arg` is not hex (or empty).
pub fn hex_reading(arg: &OsString) -> Option<(Vec<u8>, &str, bool)> {
    let b = arg.as_bytes();
    let (digits, prefixed) = match b.strip_prefix(b"0x").or_else(|| b.strip_prefix(b"0X")) {
        Some(rest) => (rest, true),
        None => (b, false),
    };
    let bytes = unhex(digits).filter(|v| !v.is_empty())?;
    Some((bytes, std::str::from_utf8(digits).ok()?, prefixed))
}

fn unhex(s: &[u8]) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    s.chunks_exact(2).map(|p| Some((nibble(p[0])? << 4) | nibble(p[1])?)).collect()
}

/// `b` printed as `how` says (without a newline). [`Format::Bytes`] can
/// produce bytes that are not UTF-8, hence bytes.
pub fn format(b: &[u8], how: Format) -> Vec<u8> {
    match how {
        Format::Auto => match printable(b) {
            Some(s) => s.as_bytes().to_vec(),
            None => hex(b).into_bytes(),
        },
        Format::AsciiEncoded => go_quote(b).into_bytes(),
        Format::Hex => hex(b).into_bytes(),
        Format::Bytes => b.to_vec(),
        Format::Redacted => {
            format!("<redacted len:{} sha256:{}>", b.len(), hex(&Sha256::digest(b))).into_bytes()
        }
    }
}

/// `b` as text for JSON: [`format()`] for every format but
/// [`Format::Bytes`], whose bytes are shown lossily as UTF-8.
pub fn format_text(b: &[u8], how: Format) -> String {
    String::from_utf8_lossy(&format(b, how)).into_owned()
}

/// A key as `bbolt page` prints it: `%q` when printable, else hex
/// (`cmd/bbolt/command/command_page.go`, `pagePrintLeaf`).
pub fn page_key(b: &[u8]) -> String {
    match printable(b) {
        Some(_) => go_quote(b),
        None => hex(b),
    }
}

/// `b` as a `&str` when it is valid UTF-8 and every character is
/// printable (bbolt `isPrintable`, Go's `unicode.IsPrint`: letters,
/// marks, numbers, punctuation, symbols and the ASCII space, of Go 1.19's
/// Unicode 13.0.0: [`is_print`]).
pub fn printable(b: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(b).ok()?;
    s.chars().all(is_print).then_some(s)
}

/// Go 1.19's `unicode.IsPrint(c)` (and `strconv.IsPrint`, the same set):
/// ASCII `' '..='~'`, and above ASCII the ranges of `go_print::RANGES`,
/// generated from Go itself. Code points Unicode assigned after 13.0, and
/// unassigned ones, are not printable, as for Go.
fn is_print(c: char) -> bool {
    let c = u32::from(c);
    if c < 0x80 {
        return (0x20..=0x7e).contains(&c);
    }
    let ranges = super::go_print::RANGES;
    // The last range starting at or before `c`.
    let i = ranges.partition_point(|&(lo, _)| lo <= c);
    i > 0 && c <= ranges[i - 1].1
}

/// Go's `strconv.Quote` of `b` taken as a string (what `%q` prints for a
/// `[]byte`): double quotes; `\"` and `\\`; printable characters as they
/// are; `\a \b \f \n \r \t \v`; other ASCII controls and bytes that are
/// not UTF-8 as `\xNN`; other characters as `\uNNNN` / `\UNNNNNNNN`.
pub fn go_quote(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push('"');
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if is_print(c) => out.push(c),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                c if u32::from(c) < 0x80 => {
                    let _ = write!(out, "\\x{:02x}", u32::from(c));
                }
                c if u32::from(c) < 0x1_0000 => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => {
                    let _ = write!(out, "\\U{:08x}", u32::from(c));
                }
            }
        }
        for x in chunk.invalid() {
            let _ = write!(out, "\\x{x:02x}");
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code point: ours is Go's, by running the table's generator
    /// (`xtask/gen/go_isprint.go`) with the Go toolchain the bolt oracle
    /// uses.
    #[test]
    fn is_print_is_gos_for_every_code_point() {
        mapwise_testkit::install::ensure(&[mapwise_testkit::install::Need::GoBbolt]);
        let gen_src = concat!(env!("CARGO_MANIFEST_DIR"), "/../xtask/gen/go_isprint.go");
        let out = std::process::Command::new("go")
            .args(["run", gen_src])
            .env("GO111MODULE", "off")
            .env("GOFLAGS", "")
            .env("GOTOOLCHAIN", "local")
            .output()
            .expect("go (the bolt oracle's toolchain) runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut go = vec![false; 0x11_0000];
        go[0x20..=0x7e].iter_mut().for_each(|p| *p = true);
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let (lo, hi) = line.split_once(' ').unwrap();
            let (lo, hi) =
                (usize::from_str_radix(lo, 16).unwrap(), usize::from_str_radix(hi, 16).unwrap());
            go[lo..=hi].iter_mut().for_each(|p| *p = true);
        }
        let mut checked = 0;
        for (cp, &want) in go.iter().enumerate() {
            if let Some(c) = char::from_u32(u32::try_from(cp).unwrap()) {
                assert_eq!(is_print(c), want, "U+{cp:04X}");
                checked += 1;
            }
        }
        assert_eq!(checked, 0x11_0000 - 0x800, "every scalar value");
        // Spot checks of what the old approximation got wrong: unassigned
        // (U+0378), assigned after Unicode 13 (U+1FAE0, 14.0), noncharacter.
        assert!(!is_print('\u{378}') && !is_print('\u{1fae0}') && !is_print('\u{fdd0}'));
        assert!(is_print('é') && is_print('\u{1f600}'));
    }

    #[test]
    fn formats_as_bbolt_does() {
        assert_eq!(format(b"alpha", Format::Auto), b"alpha");
        assert_eq!(format(&[0, 0xff], Format::Auto), b"00ff");
        assert_eq!(format(b"a\"b\n", Format::AsciiEncoded), b"\"a\\\"b\\n\"");
        assert_eq!(go_quote(&[0x01, 0xff, b'x']), "\"\\x01\\xffx\"");
        assert_eq!(go_quote("é\u{200b}".as_bytes()), "\"é\\u200b\"");
        assert_eq!(format(b"", Format::Hex), b"");
        assert_eq!(
            format(b"abc", Format::Redacted),
            b"<redacted len:3 sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad>"
        );
        assert_eq!(page_key(b"k 1"), "\"k 1\"");
        assert_eq!(page_key(&[0, 1]), "0001");
    }

    #[test]
    fn parses_as_bbolt_does() {
        let h = |s: &str| parse(&OsString::from(s), Parse::Hex, "key");
        assert_eq!(h("00fFaB").expect("hex"), vec![0, 0xff, 0xab]);
        assert!(h("0").is_err() && h("zz").is_err());
        assert_eq!(parse(&OsString::from("k"), Parse::AsciiEncoded, "key").expect("bytes"), b"k");
    }

    #[test]
    fn hex_readings_are_what_parse_hex_reads() {
        let r = |s: &str| hex_reading(&OsString::from(s)).map(|(b, d, p)| (b, d.to_owned(), p));
        assert_eq!(r("6b6579"), Some((b"key".to_vec(), "6b6579".into(), false)));
        assert_eq!(r("0X6B"), Some((b"k".to_vec(), "6B".into(), true)));
        for not in ["", "0x", "key", "6b6", "0x6g", "x6b"] {
            assert_eq!(r(not), None, "{not:?}");
        }
        // Without a prefix the reading is exactly `--parse-format hex`'s.
        let (bytes, ..) = r("00fFaB").expect("hex");
        let parsed = parse(&OsString::from("00fFaB"), Parse::Hex, "key").expect("hex");
        assert_eq!(bytes, parsed);
    }
}
