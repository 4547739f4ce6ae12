//! Sizes, rates and timestamps: the pure bits every bench shares.

use std::time::SystemTime;

/// Parses a byte size as the bbolt oracle writes it: `256MiB`, `2GiB`,
/// `64M`, `1.5G`, `4096`; units are binary (KiB = K = KB = 1024), any case.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bytes = parse_size::Config::new().with_binary().parse_size(text.trim());
    bytes
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("bad size {text:?} (examples: 256MiB, 2GiB, 1048576)"))
}

/// The shortest exact spelling of a size (`256MiB`, `1536KiB`, `1000`):
/// cache file names, so it round-trips through [`parse_size()`].
pub fn format_size(bytes: u64) -> String {
    for (suffix, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// A fraction (0–1) as a percentage with one decimal: `37.5 %`.
pub fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// A size for people with one decimal always (`272.0 MiB`), so report columns line up.
pub use mapwise_view::fmt::human_size_fixed as human_size;

/// A size of `kib` KiB for people ([`human_size`]).
#[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // sizes
pub fn kib(kib: f64) -> String {
    human_size((kib * 1024.0) as u64)
}

/// MB/s with MB = 10^6 bytes (what `dd` and disk vendors print).
pub fn mb_per_s(bytes: u64, seconds: f64) -> f64 {
    #[expect(clippy::cast_precision_loss)]
    let b = bytes as f64;
    if seconds > 0.0 { b / 1e6 / seconds } else { f64::INFINITY }
}

/// (year, month, day, hour, minute, second) of `t` in UTC.
fn civil(t: SystemTime) -> (i32, u8, u8, u8, u8, u8) {
    let d = time::OffsetDateTime::from(t);
    (d.year(), d.month().into(), d.day(), d.hour(), d.minute(), d.second())
}

/// A UTC time stamp in ISO 8601 basic form, `20260514T093012Z`: sorts by
/// time and is safe in a file name.
pub fn utc_stamp(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// The same instant for the report header, `2026-05-14 09:30:12 UTC`.
pub fn utc_human(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// Sorted numbers (pages, revisions) as ranges: `0–1, 37, 391–392`; `none` for none.
#[must_use]
pub fn ranges(v: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &p in v {
        match runs.last_mut() {
            Some((_, to)) if to.checked_add(1) == Some(p) => *to = p,
            _ => runs.push((p, p)),
        }
    }
    let text = |&(a, b): &(u32, u32)| if a == b { a.to_string() } else { format!("{a}–{b}") };
    if runs.is_empty() {
        "none".to_owned()
    } else {
        runs.iter().map(text).collect::<Vec<_>>().join(", ")
    }
}

/// `s` unless `n` is 1: the plural ending of a count's noun.
#[must_use]
pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn sizes_parse_like_the_oracle_and_round_trip() {
        for (text, n) in [("256MiB", 256 << 20), ("2gib", 2 << 30), ("64M", 64 << 20)] {
            assert_eq!(parse_size(text), Ok(n));
        }
        for (text, n) in [("64 MB", 64 << 20), ("1.5G", 3 << 29), ("4096B", 4096), ("1KiB", 1024)] {
            assert_eq!(parse_size(text), Ok(n));
        }
        for bad in ["", "MiB", "-1M", "0", "abc", "1.2.3G", "nanG", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(format_size(1536 << 10), "1536KiB");
        for n in [1, 1000, 4096, 256 << 20, 2 << 30, 3 << 29, (1 << 40) + 1] {
            assert_eq!(parse_size(&format_size(n)), Ok(n));
        }
    }

    #[test]
    fn numbers_print_for_people() {
        assert_eq!([pct(0.375), pct(1.0)], ["37.5 %", "100.0 %"]);
        assert_eq!(human_size(285_212_672), "272.0 MiB");
        assert!((mb_per_s(200_000_000, 2.0) - 100.0).abs() < 1e-9);
        assert!(mb_per_s(1, 0.0).is_infinite());
        assert_eq!(ranges(&[0, 1, 37, 391, 392]), "0–1, 37, 391–392");
        assert_eq!(ranges(&[]), "none");
        let t = |s| UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(utc_stamp(t(951_827_696)), "20000229T123456Z");
        assert_eq!(utc_human(t(1_778_751_012)), "2026-05-14 09:30:12 UTC");
    }
}
