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

impl Summary {
    /// `None` for no samples; NaN samples are refused (also `None`), since
    /// a NaN has no place in an order.
    pub fn of(samples: &[f64]) -> Option<Self> {
        if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { f64::midpoint(v[n / 2 - 1], v[n / 2]) };
        Some(Self { n, median, min: v[0], max: v[n - 1] })
    }

    /// `4.32 s [4.10–4.55]` (time samples).
    pub fn secs(&self) -> String {
        format!("{} [{}–{}]", fmt_secs(self.median), fmt_secs(self.min), fmt_secs(self.max))
    }

    /// `0.95× [0.90–1.02]` (ratio samples).
    pub fn ratio(&self) -> String {
        format!("{:.2}× [{:.2}–{:.2}]", self.median, self.min, self.max)
    }
}

/// The `q`-quantile (0–1) of `samples` by the nearest-rank rule: the
/// smallest sample with at least `q` of them at or below it (p95 of 5
/// samples is the largest; of 20, the 19th). `None` for no samples or a
/// NaN among them.
pub fn nearest_rank(samples: &[f64], q: f64) -> Option<f64> {
    if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    #[expect(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rank = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).max(1);
    Some(v[rank.min(v.len()) - 1])
}

/// `a / b` for each pair whose `b` is positive. A pair with `b == 0` (a
/// time below the printing resolution of the other tool) has no ratio;
/// the second value counts those.
pub fn pair_ratios(pairs: &[(f64, f64)]) -> (Vec<f64>, usize) {
    let mut skipped = 0;
    let ratios = pairs
        .iter()
        .filter_map(|&(a, b)| {
            if b > 0.0 && a.is_finite() && b.is_finite() {
                Some(a / b)
            } else {
                skipped += 1;
                None
            }
        })
        .collect();
    (ratios, skipped)
}

/// [`Summary::secs`] of a cell's times, `—` when the cell has none.
pub fn opt_secs(s: Option<&Summary>) -> String {
    s.map_or_else(|| "—".to_owned(), Summary::secs)
}

/// [`Summary::ratio`] of a cell's ratios, `—` when the cell has none.
pub fn opt_ratio(s: Option<&Summary>) -> String {
    s.map_or_else(|| "—".to_owned(), Summary::ratio)
}

/// The median time alone (`123 ms`), `—` when there is none.
pub fn opt_median(s: Option<&Summary>) -> String {
    s.map_or_else(|| "—".to_owned(), |s| fmt_secs(s.median))
}

/// A duration with its unit, 3 significant digits where that makes sense:
/// `4.32 s`, `123 ms`, `1.23 ms`, `45.6 µs`.
pub fn fmt_secs(s: f64) -> String {
    if s == 0.0 {
        return "0 s".to_owned();
    }
    let (v, unit) = scale(s);
    format!("{} {unit}", digits3(v))
}

fn scale(s: f64) -> (f64, &'static str) {
    let a = s.abs();
    if a >= 1.0 {
        (s, "s")
    } else if a >= 1e-3 {
        (s * 1e3, "ms")
    } else {
        (s * 1e6, "µs")
    }
}

fn digits3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_medians() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(s, Summary { n: 3, median: 2.0, min: 1.0, max: 3.0 });
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s, Summary { n: 4, median: 2.5, min: 1.0, max: 4.0 });
        let s = Summary::of(&[7.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (7.0, 7.0, 7.0));
    }

    #[test]
    fn empty_or_nan_has_no_summary() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.95), Some(19.0));
        assert_eq!(nearest_rank(&v, 0.5), Some(10.0));
        assert_eq!(nearest_rank(&[3.0, 1.0, 2.0, 5.0, 4.0], 0.95), Some(5.0));
        assert_eq!(nearest_rank(&[7.0], 0.0), Some(7.0));
        assert_eq!(nearest_rank(&[], 0.5), None);
        assert_eq!(nearest_rank(&[f64::NAN], 0.5), None);
    }

    #[test]
    fn ratios_are_pair_by_pair() {
        let (r, skipped) = pair_ratios(&[(1.0, 2.0), (3.0, 1.0), (1.0, 0.0)]);
        assert_eq!(r, vec![0.5, 3.0]);
        assert_eq!(skipped, 1);
        // The median of ratios is not the ratio of medians.
        let pairs = [(1.0, 1.0), (2.0, 10.0), (10.0, 2.0)];
        let (r, _) = pair_ratios(&pairs);
        assert_eq!(Summary::of(&r).unwrap().median, 1.0);
    }

    #[test]
    fn optional_cells_print_a_dash() {
        let s = Summary::of(&[0.5, 0.25, 1.5]).unwrap();
        assert_eq!(opt_secs(Some(&s)), "500 ms [250 ms–1.50 s]");
        assert_eq!(opt_secs(None), "—");
        assert_eq!(opt_median(Some(&s)), "500 ms");
        assert_eq!(opt_median(None), "—");
        let r = Summary::of(&[0.9, 1.0, 1.02]).unwrap();
        assert_eq!(opt_ratio(Some(&r)), "1.00× [0.90–1.02]");
        assert_eq!(opt_ratio(None), "—");
    }

    #[test]
    fn durations_print_with_units() {
        assert_eq!(fmt_secs(4.3219), "4.32 s");
        assert_eq!(fmt_secs(31.24), "31.2 s");
        assert_eq!(fmt_secs(0.1234), "123 ms");
        assert_eq!(fmt_secs(0.001_234), "1.23 ms");
        assert_eq!(fmt_secs(0.000_045_6), "45.6 µs");
        assert_eq!(fmt_secs(0.0), "0 s");
        let s = Summary::of(&[0.5, 0.25, 1.5]).unwrap();
        assert_eq!(s.secs(), "500 ms [250 ms–1.50 s]");
        let r = Summary::of(&[0.9, 1.0, 1.02]).unwrap();
        assert_eq!(r.ratio(), "1.00× [0.90–1.02]");
    }
}
