//! Numbers about residency, shaped for people: resident bytes per page
//! kind, vmtouch's totals line, sizes and percentages.
//!
//! Everything here is pure arithmetic over a [`Layout`] and a
//! [`Residency`]; nothing reads the file.

use mapwise_core::layout::{Kind, Layout};
use mapwise_native::report::KindTotal;
use mapwise_native::residency::{Residency, os_page_size};

/// Bytes of the file range `[offset, offset + len)` that lie in resident
/// OS pages, clipped to the sampled range of `res` (bytes past the end of
/// the file are never resident).
///
/// Costs one popcount over the range's bitmap words, so it stays fast on
/// huge regions (a 64 GiB file is one region when its format is unknown).
#[must_use]
pub fn resident_bytes(res: &Residency, offset: u64, len: u64) -> u64 {
    let ps = res.page_size;
    if ps == 0 || len == 0 {
        return 0;
    }
    let range_end = res.offset.saturating_add(res.len);
    let start = offset.max(res.offset);
    let end = offset.saturating_add(len).min(range_end);
    if start >= end {
        return 0;
    }
    let count = res.resident_in(start, end - start);
    if count == 0 {
        return 0;
    }
    let first = (start - res.offset) / ps;
    let last = (end - 1 - res.offset) / ps;
    let mut bytes = count.saturating_mul(ps);
    if res.is_resident(first) {
        bytes = bytes.saturating_sub(start - (res.offset + first * ps));
    }
    if res.is_resident(last) {
        let page_end = res.offset.saturating_add((last + 1).saturating_mul(ps));
        bytes = bytes.saturating_sub(page_end.saturating_sub(end));
    }
    bytes
}

/// The unit of the page map and of per-kind page counts: the format's
/// page size, or the OS page size when the format has none.
#[must_use]
pub fn unit(layout: &Layout) -> u64 {
    match layout.page_size {
        0 => os_page_size(),
        ps => u64::from(ps),
    }
}

/// Totals per kind (kinds present only, in legend order), with resident
/// bytes when `res` is given and trusted. Same fields and meaning as
/// `mapwise_native::report::kind_totals`, computed with [`resident_bytes`].
#[must_use]
pub fn kind_totals(layout: &Layout, res: Option<&Residency>) -> Vec<KindTotal> {
    let res = res.filter(|r| r.trust.is_known());
    let ps = unit(layout);
    let counts = layout.kind_counts();
    let mut resident = [0u64; Kind::ALL.len()];
    if let Some(r) = res {
        for region in &layout.regions {
            if let Some(slot) = resident.get_mut(region.kind.index()) {
                *slot = slot.saturating_add(resident_bytes(r, region.offset, region.len));
            }
        }
    }
    Kind::ALL
        .iter()
        .filter_map(|k| {
            let bytes = counts.bytes.get(k.index()).copied().unwrap_or(0);
            (bytes > 0).then(|| KindTotal {
                kind: k.name(),
                bytes,
                pages: bytes.div_ceil(ps),
                resident_bytes: res.map(|_| resident.get(k.index()).copied().unwrap_or(0)),
            })
        })
        .collect()
}

/// A size the way vmtouch prints it: bytes below 1 KiB, else whole
/// `K`, `M` or `G` (truncated, powers of 1024).
#[must_use]
pub fn vmtouch_size(bytes: u64) -> String {
    if bytes < 1024 {
        return bytes.to_string();
    }
    let k = bytes / 1024;
    if k < 1024 {
        return format!("{k}K");
    }
    let m = k / 1024;
    if m < 1024 {
        return format!("{m}M");
    }
    format!("{}G", m / 1024)
}

/// A size for people: `512 B`, `220 KiB`, `1.5 MiB`, `64 GiB`.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    let unit = UNITS.get(i).copied().unwrap_or("PiB");
    if v >= 100.0 || (v - v.round()).abs() < 0.05 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// `value` formatted like C's `%.3g` (three significant digits, trailing
/// zeros dropped, exponent form below 1e-4), as vmtouch prints percents.
#[must_use]
pub fn g3(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return if value.is_nan() {
            "nan".into()
        } else {
            "0".into()
        };
    }
    let mut exp = value.abs().log10().floor();
    // Rounding to 3 digits may carry into the next power of ten.
    let rounded = {
        let scale = 10f64.powf(2.0 - exp);
        (value * scale).round() / scale
    };
    if rounded.abs() >= 10f64.powf(exp + 1.0) {
        exp += 1.0;
    }
    if !(-4.0..3.0).contains(&exp) {
        let mantissa = value / 10f64.powf(exp);
        let m = strip_zeros(&format!("{mantissa:.2}"));
        let sign = if exp < 0.0 { '-' } else { '+' };
        return format!("{m}e{sign}{:02}", exp.abs());
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let decimals = (2.0 - exp).max(0.0) as usize;
    strip_zeros(&format!("{value:.decimals$}"))
}

fn strip_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// vmtouch's totals line for one sample, e.g.
/// `Resident Pages: 27/55  108K/220K  49.1%`; `None` when the residency
/// is not trusted.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn vmtouch_line(res: &Residency) -> Option<String> {
    let resident = res.known_resident_pages()?;
    let total = res.total_pages;
    let ps = res.page_size;
    let mut s = format!(
        "Resident Pages: {resident}/{total}  {}/{}  ",
        vmtouch_size(resident.saturating_mul(ps)),
        vmtouch_size(total.saturating_mul(ps))
    );
    if total > 0 {
        s.push_str(&g3(100.0 * resident as f64 / total as f64));
        s.push('%');
    }
    Some(s)
}

/// `part` of `whole` in percent, 0 when `whole` is 0.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// A percentage for a status line: `0%`, `<1%`, `49%`, `>99%`, `100%` —
/// never rounds a partial value to 0 or 100.
#[must_use]
pub fn short_percent(part: u64, whole: u64) -> String {
    if whole == 0 || part == 0 {
        return "0%".into();
    }
    if part >= whole {
        return "100%".into();
    }
    let p = percent(part, whole);
    if p < 1.0 {
        "<1%".into()
    } else if p > 99.0 {
        ">99%".into()
    } else {
        format!("{p:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mapwise_native::residency::Trust;

    fn res(len: u64, bits: &[u64]) -> Residency {
        let ps = 4096;
        let total = len.div_ceil(ps);
        let mut bitmap = vec![0u64; usize::try_from(total.div_ceil(64)).unwrap()];
        for &b in bits {
            bitmap[usize::try_from(b / 64).unwrap()] |= 1 << (b % 64);
        }
        Residency {
            offset: 0,
            len,
            page_size: ps,
            resident_pages: bits.len() as u64,
            bitmap,
            total_pages: total,
            trust: Trust::Known,
            cachestat: None,
        }
    }

    /// The obvious per-byte definition.
    fn naive(r: &Residency, offset: u64, len: u64) -> u64 {
        (offset..offset + len)
            .filter(|b| *b < r.len && r.is_resident(b / r.page_size))
            .count() as u64
    }

    #[test]
    fn resident_bytes_matches_naive() {
        let r = res(5 * 4096 + 100, &[0, 2, 3, 5]);
        for (o, l) in [
            (0, 100),
            (10, 4096),
            (4000, 200),
            (4096, 4096),
            (8000, 9000),
            (0, 30000),
            (20480, 100),
            (20480 + 50, 1000),
            (12288 + 5, 1),
        ] {
            assert_eq!(resident_bytes(&r, o, l), naive(&r, o, l), "{o}+{l}");
        }
        assert_eq!(resident_bytes(&r, u64::MAX - 1, 10), 0);
        assert_eq!(resident_bytes(&r, 0, 0), 0);
    }

    #[test]
    fn formats() {
        assert_eq!(vmtouch_size(1000), "1000");
        assert_eq!(vmtouch_size(225_280), "220K");
        assert_eq!(vmtouch_size(300 << 20), "300M");
        assert_eq!(vmtouch_size(64 << 30), "64G");
        assert_eq!(g3(100.0), "100");
        assert_eq!(g3(49.0909), "49.1");
        assert_eq!(g3(2.0), "2");
        assert_eq!(g3(0.0), "0");
        assert_eq!(g3(0.123_45), "0.123");
        assert_eq!(g3(99.96), "100");
        assert_eq!(g3(9.996), "10");
        assert_eq!(g3(0.000_061_035), "6.1e-05");
        assert_eq!(human_size(225_280), "220 KiB");
        assert_eq!(human_size(285_548_544), "272 MiB");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(12), "12 B");
        assert_eq!(short_percent(1, 1000), "<1%");
        assert_eq!(short_percent(999, 1000), ">99%");
        assert_eq!(short_percent(27, 55), "49%");
    }

    #[test]
    fn vmtouch_totals() {
        let r = res(55 * 4096, &(0..27).collect::<Vec<_>>());
        assert_eq!(
            vmtouch_line(&r).unwrap(),
            "Resident Pages: 27/55  108K/220K  49.1%"
        );
    }
}
