//! Medians, ranges and pair-by-pair ratios of timing samples.

use serde::Serialize;

/// Median and range of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// How many samples went in.
    pub n: usize,
    /// Middle sample (mean of the two middle ones for an even count).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
}

/// The samples in order; `None` for none or a NaN among them (a NaN has no place in an order).
fn sorted(samples: &[f64]) -> Option<Vec<f64>> {
    if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    Some(v)
}

impl Summary {
    /// The summary of `samples`; `None` for none or a NaN among them.
    pub fn of(samples: &[f64]) -> Option<Self> {
        let v = sorted(samples)?;
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { f64::midpoint(v[n / 2 - 1], v[n / 2]) };
        Some(Self { n, median, min: v[0], max: v[n - 1] })
    }

    /// `f(median) [f(min)–f(max)]`: the summary in any unit.
    pub fn shown(&self, f: impl Fn(f64) -> String) -> String {
        format!("{} [{}–{}]", f(self.median), f(self.min), f(self.max))
    }

    /// `4.32 s [4.10–4.55]` (time samples).
    pub fn secs(&self) -> String {
        self.shown(fmt_secs)
    }

    /// `12 [10–14]` (counts: pages, frames).
    pub fn counts(&self) -> String {
        self.shown(|x| format!("{x:.0}"))
    }

    /// `0.95× [0.90–1.02]` (ratio samples).
    pub fn ratio(&self) -> String {
        format!("{:.2}× [{:.2}–{:.2}]", self.median, self.min, self.max)
    }
}

/// The `q`-quantile (0–1) by the nearest-rank rule: the smallest sample
/// with at least `q` of them at or below it; `None` as [`Summary::of`].
pub fn nearest_rank(samples: &[f64], q: f64) -> Option<f64> {
    let v = sorted(samples)?;
    #[expect(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rank = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).max(1);
    Some(v[rank.min(v.len()) - 1])
}

/// `a / b` for each pair whose `b` is positive, and how many pairs had no
/// ratio (a time below the other tool's printing resolution).
pub fn pair_ratios(pairs: &[(f64, f64)]) -> (Vec<f64>, usize) {
    let ok = |&(a, b): &(f64, f64)| b > 0.0 && a.is_finite() && b.is_finite();
    let ratios: Vec<f64> = pairs.iter().filter(|p| ok(p)).map(|(a, b)| a / b).collect();
    let skipped = pairs.len() - ratios.len();
    (ratios, skipped)
}

/// `f(x)`, or `—` when there is none: an empty table cell.
pub fn or_dash<T>(x: Option<T>, f: impl FnOnce(T) -> String) -> String {
    x.map_or_else(|| "—".to_owned(), f)
}

/// The median of `samples` alone; `None` as [`Summary::of`].
pub fn median(samples: &[f64]) -> Option<f64> {
    Summary::of(samples).map(|s| s.median)
}

/// [`Summary::secs`], `—` when there is none.
pub fn opt_secs(s: Option<&Summary>) -> String {
    or_dash(s, Summary::secs)
}

/// [`Summary::ratio`], `—` when there is none.
pub fn opt_ratio(s: Option<&Summary>) -> String {
    or_dash(s, Summary::ratio)
}

/// `1` for the base a ratio column is relative to, else [`opt_ratio`].
pub fn one_or(base: bool, ratios: Option<Summary>) -> String {
    if base { "1".to_owned() } else { opt_ratio(ratios.as_ref()) }
}

/// `x` with `digits` decimals and `unit` (`1.25×`), `—` for none.
pub fn fixed(x: Option<f64>, digits: usize, unit: &str) -> String {
    or_dash(x, |x| format!("{x:.digits$}{unit}"))
}

/// A count, `—` when there is none.
pub fn opt_count(n: Option<u64>) -> String {
    or_dash(n, |n| n.to_string())
}

/// A time (`123 ms`), `—` when there is none.
pub fn opt_time(secs: Option<f64>) -> String {
    or_dash(secs, fmt_secs)
}

/// The median time alone (`123 ms`), `—` when there is none.
pub fn opt_median(s: Option<&Summary>) -> String {
    or_dash(s, |s| fmt_secs(s.median))
}

/// A duration in s, ms or µs with 3 significant digits where that makes
/// sense: `4.32 s`, `123 ms`, `1.23 ms`, `45.6 µs`.
pub fn fmt_secs(s: f64) -> String {
    if s == 0.0 {
        return "0 s".to_owned();
    }
    let (v, unit) = match s.abs() {
        a if a >= 1.0 => (s, "s"),
        a if a >= 1e-3 => (s * 1e3, "ms"),
        _ => (s * 1e6, "µs"),
    };
    let digits = match v.abs() {
        a if a >= 100.0 => 0,
        a if a >= 10.0 => 1,
        _ => 2,
    };
    format!("{v:.digits$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_quantiles() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s, Summary { n: 4, median: 2.5, min: 1.0, max: 4.0 });
        assert_eq!(Summary::of(&[3.0, 1.0, 2.0]).unwrap().median, 2.0);
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.95), Some(19.0));
        assert_eq!(nearest_rank(&v, 0.5), Some(10.0));
        assert_eq!(nearest_rank(&[3.0, 1.0, 2.0, 5.0, 4.0], 0.95), Some(5.0));
        assert_eq!(nearest_rank(&[7.0], 0.0), Some(7.0));
        assert_eq!(nearest_rank(&[f64::NAN], 0.5), None);
    }

    #[test]
    fn ratios_are_pair_by_pair() {
        let (r, skipped) = pair_ratios(&[(1.0, 2.0), (3.0, 1.0), (1.0, 0.0)]);
        assert_eq!((r, skipped), (vec![0.5, 3.0], 1));
        // The median of ratios is not the ratio of medians.
        let (r, _) = pair_ratios(&[(1.0, 1.0), (2.0, 10.0), (10.0, 2.0)]);
        assert_eq!(Summary::of(&r).unwrap().median, 1.0);
    }

    #[test]
    fn cells_print_with_units_or_a_dash() {
        for (s, want) in [(4.3219, "4.32 s"), (31.24, "31.2 s"), (0.1234, "123 ms")] {
            assert_eq!(fmt_secs(s), want);
        }
        assert_eq!(fmt_secs(0.001_234), "1.23 ms");
        assert_eq!(fmt_secs(0.000_045_6), "45.6 µs");
        assert_eq!(fmt_secs(0.0), "0 s");
        let s = Summary::of(&[0.5, 0.25, 1.5]).unwrap();
        assert_eq!(opt_secs(Some(&s)), "500 ms [250 ms–1.50 s]");
        assert_eq!(opt_median(Some(&s)), "500 ms");
        let r = Summary::of(&[0.9, 1.0, 1.02]).unwrap();
        assert_eq!(opt_ratio(Some(&r)), "1.00× [0.90–1.02]");
        assert_eq!([opt_secs(None), opt_ratio(None), opt_median(None)], ["—", "—", "—"]);
    }
}
