//! Numbers about residency, shaped for people: resident bytes per page
//! kind, vmtouch's totals line and percentages (sizes for people are
//! [`mapwise_view::fmt::human_size`]).
//!
//! Everything here is pure arithmetic over a
//! [`Layout`](mapwise_core::layout::Layout) and a
//! [`Residency`]; nothing reads the file.

use mapwise_native::os::residency::Residency;
pub use mapwise_native::report::{KindIndex, kind_totals, resident_bytes, unit};

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

/// `value` formatted like C's `%.3g` (three significant digits, trailing
/// zeros dropped, exponent form below 1e-4), as vmtouch prints percents.
#[must_use]
pub fn g3(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return if value.is_nan() { "nan".into() } else { "0".into() };
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
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
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
#[expect(clippy::cast_precision_loss)]
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
#[expect(clippy::cast_precision_loss)]
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
}

/// A file's resident bytes and the share of its pages they are, as the
/// listings print them (`1M`, `42.5%`; `?` twice when the kernel does not
/// say): the share of whole OS pages, so a full file is 100 %, never more.
#[must_use]
pub fn resident_cells(resident: Option<u64>, size: u64) -> (String, String) {
    match resident {
        Some(b) => {
            let ps = mapwise_native::os::residency::os_page_size();
            (vmtouch_size(b), format!("{}%", g3(percent(b, size.div_ceil(ps) * ps))))
        }
        None => ("?".into(), "?".into()),
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
        assert_eq!(short_percent(1, 1000), "<1%");
        assert_eq!(short_percent(999, 1000), ">99%");
        assert_eq!(short_percent(27, 55), "49%");
    }

    #[test]
    fn vmtouch_totals() {
        let r = Residency {
            offset: 0,
            len: 55 * 4096,
            page_size: 4096,
            bitmap: vec![(1 << 27) - 1],
            resident_pages: 27,
            total_pages: 55,
            trust: mapwise_native::os::residency::Trust::Known,
            cachestat: None,
        };
        assert_eq!(vmtouch_line(&r).unwrap(), "Resident Pages: 27/55  108K/220K  49.1%");
    }
}
