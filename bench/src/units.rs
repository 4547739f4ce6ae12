//! Sizes, rates and timestamps: the pure bits every bench shares.

use std::time::{SystemTime, UNIX_EPOCH};

/// Parses a byte size as people and the bbolt oracle write it: `256MiB`,
/// `2GiB`, `64M`, `1.5G`, `4096`. Units are binary (KiB = K = KB = 1024),
/// as in the oracle's own parser; case does not matter.
pub fn parse_size(text: &str) -> Result<u64, String> {
    const UNITS: [(&str, u64); 13] = [
        ("TIB", 1 << 40),
        ("GIB", 1 << 30),
        ("MIB", 1 << 20),
        ("KIB", 1 << 10),
        ("TB", 1 << 40),
        ("GB", 1 << 30),
        ("MB", 1 << 20),
        ("KB", 1 << 10),
        ("T", 1 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
        ("B", 1),
    ];
    let upper = text.trim().to_ascii_uppercase();
    let (number, mult) = UNITS
        .iter()
        .find_map(|&(suffix, mult)| upper.strip_suffix(suffix).map(|n| (n.trim(), mult)))
        .unwrap_or((upper.as_str(), 1));
    let bad = || format!("bad size {text:?} (examples: 256MiB, 2GiB, 1048576)");
    if number.is_empty() {
        return Err(bad());
    }
    if let Ok(n) = number.parse::<u64>() {
        return n.checked_mul(mult).filter(|&b| b > 0).ok_or_else(bad);
    }
    let n: f64 = number.parse().map_err(|_| bad())?;
    #[expect(clippy::cast_precision_loss)]
    let bytes = (n * mult as f64).round();
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < 2f64.powi(63)) {
        return Err(bad());
    }
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(bytes as u64)
}

/// The shortest exact spelling of a size: `256MiB`, `2GiB`, `1536KiB`,
/// `1000` (used for cache file names, so it must round-trip through
/// [`parse_size`]).
pub fn format_size(bytes: u64) -> String {
    for (suffix, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        let unit = 1u64 << shift;
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// A fraction (0–1) as a percentage with one decimal: `37.5 %`.
pub fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// A size for people with one decimal always (`272.0 MiB`), so report
/// columns line up.
pub use mapwise_view::fmt::human_size_fixed as human_size;

/// MB/s with MB = 10^6 bytes (what `dd` and disk vendors print).
pub fn mb_per_s(bytes: u64, seconds: f64) -> f64 {
    #[expect(clippy::cast_precision_loss)]
    let b = bytes as f64;
    if seconds > 0.0 { b / 1e6 / seconds } else { f64::INFINITY }
}

/// A UTC time stamp in ISO 8601 basic form, `20260514T093012Z`: sorts
/// by time and is safe in a file name.
pub fn utc_stamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, mo, d, h, mi, s) = civil_from_unix(secs);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// The same instant in extended form for the report header,
/// `2026-05-14 09:30:12 UTC`.
pub fn utc_human(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, mo, d, h, mi, s) = civil_from_unix(secs);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

/// Seconds since the Unix epoch → (year, month, day, hour, minute,
/// second) in UTC (proleptic Gregorian; H. Hinnant's `civil_from_days`).
pub fn civil_from_unix(secs: u64) -> (u64, u64, u64, u64, u64, u64) {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Sorted numbers (pages, revisions) as ranges: `0–1, 37, 391–392`;
/// `none` for none.
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn fractions_print_as_percentages() {
        assert_eq!(pct(0.375), "37.5 %");
        assert_eq!(pct(1.0), "100.0 %");
        assert_eq!(pct(0.0), "0.0 %");
    }

    #[test]
    fn sizes_parse_like_the_oracle() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("2gib"), Ok(2 << 30));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("64 MB"), Ok(64 << 20));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size("1KiB"), Ok(1024));
    }

    #[test]
    fn bad_sizes_are_refused() {
        for bad in ["", "MiB", "-1M", "0", "abc", "1.2.3G", "nanG", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn sizes_format_exactly_and_round_trip() {
        assert_eq!(format_size(256 << 20), "256MiB");
        assert_eq!(format_size(2 << 30), "2GiB");
        assert_eq!(format_size(1536 << 10), "1536KiB");
        assert_eq!(format_size(1000), "1000");
        for n in [1, 1000, 4096, 256 << 20, 3 << 29, (1 << 40) + 1] {
            assert_eq!(parse_size(&format_size(n)), Ok(n));
        }
    }

    #[test]
    fn human_sizes_and_rates() {
        assert_eq!(human_size(285_212_672), "272.0 MiB");
        assert_eq!(human_size(512), "512 B");
        assert!((mb_per_s(200_000_000, 2.0) - 100.0).abs() < 1e-9);
        assert!(mb_per_s(1, 0.0).is_infinite());
    }

    #[test]
    fn utc_stamps() {
        let t = |s| UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(utc_stamp(t(0)), "19700101T000000Z");
        // 2000-02-29 12:34:56 UTC (a leap day in a century leap year).
        assert_eq!(utc_stamp(t(951_827_696)), "20000229T123456Z");
        // 2026-05-14 09:30:12 UTC.
        assert_eq!(utc_human(t(1_778_751_012)), "2026-05-14 09:30:12 UTC");
        assert_eq!(civil_from_unix(4_102_444_799), (2099, 12, 31, 23, 59, 59));
    }
}
