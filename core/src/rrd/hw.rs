//! Holt-Winters forecasting and aberrant behaviour detection, as rrdtool
//! 1.7.2 computes it (`rrd_hw.c`, `rrd_hw_update.c`, `rrd_hw_math.c`).
//!
//! Each function here changes the `cdp_prep` of one (RRA, data source)
//! pair, reading its partner archives' state: a partner with a lower index
//! has already been updated for this step, so its `last_*` coefficients
//! are the ones that belong to the step (rrdtool's convention).

// rrdtool's C conversions (double to unsigned long, unsigned long to int,
// …) are reproduced on purpose: they decide the bytes of the result.
#![expect(clippy::cast_possible_truncation)]

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::format::{Cf, Header, cdp, rra_par};
use super::num::{self, DNAN};
use super::update::Rows;
use crate::error::Result;

/// Burn-in cycles of a SEASONAL/DEVSEASONAL archive during which every
/// wrap schedules a smoothing (`BURNIN_CYCLES`, `rrd_hw.h`).
pub const BURNIN_CYCLES: u64 = 3;

/// The additive or the multiplicative model (`hw_functions_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// HWPREDICT.
    Additive,
    /// MHWPREDICT.
    Multiplicative,
}

impl Model {
    /// The model of a HWPREDICT or MHWPREDICT archive.
    #[must_use]
    pub fn of(cf: Cf) -> Model {
        if cf == Cf::MhwPredict { Model::Multiplicative } else { Model::Additive }
    }

    /// `hw_*_calculate_prediction`; the NaN count is an `int` parameter.
    #[must_use]
    pub fn predict(self, intercept: f64, slope: f64, null_count: u64, seasonal: f64) -> f64 {
        let n = f64::from(null_count as i32);
        match self {
            Model::Additive => intercept + slope * n + seasonal,
            Model::Multiplicative => (intercept + slope * n) * seasonal,
        }
    }

    /// `hw_*_calculate_intercept` from the current intercept, slope and
    /// NaN count.
    #[must_use]
    pub fn intercept(
        self,
        alpha: f64,
        observed: f64,
        seasonal: f64,
        a: f64,
        b: f64,
        n: u64,
    ) -> f64 {
        match self {
            Model::Additive => alpha * (observed - seasonal) + (1.0 - alpha) * (a + b * n as f64),
            Model::Multiplicative => {
                if seasonal <= 0.0 {
                    return DNAN;
                }
                alpha * (observed / seasonal) + (1.0 - alpha) * (a + b * n as f64)
            }
        }
    }

    /// `hw_*_calculate_seasonality`.
    #[must_use]
    pub fn seasonality(self, gamma: f64, observed: f64, intercept: f64, seasonal: f64) -> f64 {
        match self {
            Model::Additive => gamma * (observed - intercept) + (1.0 - gamma) * seasonal,
            Model::Multiplicative => {
                if intercept <= 0.0 {
                    return DNAN;
                }
                gamma * (observed / intercept) + (1.0 - gamma) * seasonal
            }
        }
    }

    /// `hw_*_init_seasonality`.
    #[must_use]
    pub fn init_seasonality(self, seasonal: f64, intercept: f64) -> f64 {
        match self {
            Model::Additive => seasonal - intercept,
            Model::Multiplicative => {
                if intercept <= 0.0 {
                    return DNAN;
                }
                seasonal / intercept
            }
        }
    }

    /// The seasonal coefficient of "no effect": 0 or 1.
    #[must_use]
    pub fn identity(self) -> f64 {
        match self {
            Model::Additive => 0.0,
            Model::Multiplicative => 1.0,
        }
    }
}

/// `hw_calculate_slope` from the new and the last intercept.
fn slope(beta: f64, intercept: f64, last_intercept: f64, slope: f64) -> f64 {
    beta * (intercept - last_intercept) + (1.0 - beta) * slope
}

fn dep(h: &Header<'_>, rra: usize) -> usize {
    usize::try_from(h.rra_par_u64(rra, rra_par::DEPENDENT)).unwrap_or(0)
}

/// The model of the HWPREDICT/MHWPREDICT archive `hw`.
fn model_at(h: &Header<'_>, hw: usize) -> Model {
    Model::of(h.rra(hw).cf)
}

/// `update_hwpredict`: the observation is in `scratch[idx]`, the
/// prediction replaces it.
pub fn update_hwpredict(h: &mut Header<'static>, rra: usize, ds: usize, idx: usize, model: Model) {
    let a = h.cdp_f64(rra, ds, cdp::HW_INTERCEPT);
    let b = h.cdp_f64(rra, ds, cdp::HW_SLOPE);
    let n = h.cdp_u64(rra, ds, cdp::NULL_COUNT);
    h.set_cdp_f64(rra, ds, cdp::HW_LAST_INTERCEPT, a);
    h.set_cdp_f64(rra, ds, cdp::HW_LAST_SLOPE, b);
    h.set_cdp_u64(rra, ds, cdp::LAST_NULL_COUNT, n);
    let s_idx = dep(h, rra);
    let seasonal = if s_idx < rra {
        h.cdp_f64(s_idx, ds, cdp::LAST_SEASONAL)
    } else {
        h.cdp_f64(s_idx, ds, cdp::SEASONAL)
    };
    let observed = h.cdp_f64(rra, ds, idx);
    let prediction;
    if a.is_nan() || b.is_nan() || seasonal.is_nan() {
        prediction = DNAN;
        if a.is_nan() && !observed.is_nan() {
            h.set_cdp_f64(rra, ds, cdp::HW_INTERCEPT, observed);
            h.set_cdp_f64(rra, ds, cdp::HW_LAST_INTERCEPT, observed);
            h.set_cdp_f64(rra, ds, cdp::HW_SLOPE, 0.0);
            h.set_cdp_f64(rra, ds, cdp::HW_LAST_SLOPE, 0.0);
            h.set_cdp_u64(rra, ds, cdp::NULL_COUNT, 1);
            h.set_cdp_u64(rra, ds, cdp::LAST_NULL_COUNT, 1);
        }
    } else {
        prediction = model.predict(a, b, n, seasonal);
        if observed.is_nan() {
            h.set_cdp_u64(rra, ds, cdp::NULL_COUNT, n.wrapping_add(1));
        } else {
            let alpha = h.rra_par_f64(rra, rra_par::HW_ALPHA);
            let beta = h.rra_par_f64(rra, rra_par::HW_BETA);
            let new_a = model.intercept(alpha, observed, seasonal, a, b, n);
            h.set_cdp_f64(rra, ds, cdp::HW_INTERCEPT, new_a);
            h.set_cdp_f64(rra, ds, cdp::HW_SLOPE, slope(beta, new_a, a, b));
            h.set_cdp_u64(rra, ds, cdp::NULL_COUNT, 1);
        }
    }
    h.set_cdp_f64(rra, ds, idx, prediction);
}

/// `update_seasonal`: `next` is the coefficient looked up for the next
/// step.
pub fn update_seasonal(h: &mut Header<'static>, rra: usize, ds: usize, idx: usize, next: f64) {
    let hw = dep(h, rra);
    let model = model_at(h, hw);
    let seasonal = h.cdp_f64(rra, ds, cdp::SEASONAL);
    h.set_cdp_f64(rra, ds, cdp::LAST_SEASONAL, seasonal);
    h.set_cdp_f64(rra, ds, cdp::SEASONAL, next);
    let observed = h.cdp_f64(rra, ds, idx);
    if observed.is_nan() {
        h.set_cdp_f64(rra, ds, idx, seasonal);
        return;
    }
    let gamma = h.rra_par_f64(rra, rra_par::GAMMA);
    let a = h.cdp_f64(hw, ds, cdp::HW_INTERCEPT);
    let b = h.cdp_f64(hw, ds, cdp::HW_SLOPE);
    let la = h.cdp_f64(hw, ds, cdp::HW_LAST_INTERCEPT);
    let lb = h.cdp_f64(hw, ds, cdp::HW_LAST_SLOPE);
    let v = if hw < rra {
        if la.is_nan() || lb.is_nan() {
            DNAN
        } else if seasonal.is_nan() {
            model.init_seasonality(observed, la)
        } else {
            model.seasonality(gamma, observed, a, seasonal)
        }
    } else if a.is_nan() || b.is_nan() {
        model.identity()
    } else if seasonal.is_nan() {
        model.init_seasonality(observed, a)
    } else {
        let alpha = h.rra_par_f64(hw, rra_par::HW_ALPHA);
        let n = h.cdp_u64(hw, ds, cdp::NULL_COUNT);
        let intercept = model.intercept(alpha, observed, seasonal, a, b, n);
        model.seasonality(gamma, observed, intercept, seasonal)
    };
    h.set_cdp_f64(rra, ds, idx, v);
}

/// `update_devpredict`: a copy of the deviation of its DEVSEASONAL.
pub fn update_devpredict(h: &mut Header<'static>, rra: usize, ds: usize, idx: usize) {
    let d = dep(h, rra);
    let v = if d < rra {
        h.cdp_f64(d, ds, cdp::LAST_SEASONAL)
    } else {
        h.cdp_f64(d, ds, cdp::SEASONAL)
    };
    h.set_cdp_f64(rra, ds, idx, v);
}

/// `update_devseasonal`: `next` is the deviation looked up for the next
/// step.
pub fn update_devseasonal(h: &mut Header<'static>, rra: usize, ds: usize, idx: usize, next: f64) {
    let hw = dep(h, rra);
    let model = model_at(h, hw);
    let cur = h.cdp_f64(rra, ds, cdp::SEASONAL);
    h.set_cdp_f64(rra, ds, cdp::LAST_SEASONAL, cur);
    h.set_cdp_f64(rra, ds, cdp::SEASONAL, next);
    let s_idx = dep(h, hw);
    let seasonal = if s_idx < rra {
        h.cdp_f64(s_idx, ds, cdp::LAST_SEASONAL)
    } else {
        h.cdp_f64(s_idx, ds, cdp::SEASONAL)
    };
    let (a, b, n) = if hw < rra {
        (
            h.cdp_f64(hw, ds, cdp::HW_LAST_INTERCEPT),
            h.cdp_f64(hw, ds, cdp::HW_LAST_SLOPE),
            h.cdp_u64(hw, ds, cdp::LAST_NULL_COUNT),
        )
    } else {
        (
            h.cdp_f64(hw, ds, cdp::HW_INTERCEPT),
            h.cdp_f64(hw, ds, cdp::HW_SLOPE),
            h.cdp_u64(hw, ds, cdp::NULL_COUNT),
        )
    };
    if a.is_nan() || b.is_nan() || seasonal.is_nan() {
        h.set_cdp_f64(rra, ds, idx, DNAN);
        return;
    }
    let prediction = model.predict(a, b, n, seasonal);
    let observed = h.cdp_f64(rra, ds, idx);
    let last = h.cdp_f64(rra, ds, cdp::LAST_SEASONAL);
    let v = if observed.is_nan() {
        last
    } else if last.is_nan() {
        (prediction - observed).abs()
    } else {
        let gamma = h.rra_par_f64(rra, rra_par::GAMMA);
        gamma * (prediction - observed).abs() + (1.0 - gamma) * last
    };
    h.set_cdp_f64(rra, ds, idx, v);
}

/// `update_failures`: shift the violation history (one byte per step at
/// the start of the `cdp_prep`) and store 1 when the violations in the
/// window reach the threshold.
pub fn update_failures(h: &mut Header<'static>, rra: usize, ds: usize, idx: usize) {
    let dev = dep(h, rra);
    let hw = dep(h, dev);
    let s_idx = dep(h, hw);
    let model = model_at(h, hw);
    // rrdtool compares with the SEASONAL index for the DEVSEASONAL too.
    let deviation = if rra < s_idx {
        h.cdp_f64(dev, ds, cdp::SEASONAL)
    } else {
        h.cdp_f64(dev, ds, cdp::LAST_SEASONAL)
    };
    let mut violation: u8 = 0;
    if !deviation.is_nan() {
        let seasonal = if rra < s_idx {
            h.cdp_f64(s_idx, ds, cdp::SEASONAL)
        } else {
            h.cdp_f64(s_idx, ds, cdp::LAST_SEASONAL)
        };
        let prediction = if rra < hw {
            model.predict(
                h.cdp_f64(hw, ds, cdp::HW_INTERCEPT),
                h.cdp_f64(hw, ds, cdp::HW_SLOPE),
                h.cdp_u64(hw, ds, cdp::NULL_COUNT),
                seasonal,
            )
        } else {
            model.predict(
                h.cdp_f64(hw, ds, cdp::HW_LAST_INTERCEPT),
                h.cdp_f64(hw, ds, cdp::HW_LAST_SLOPE),
                h.cdp_u64(hw, ds, cdp::LAST_NULL_COUNT),
                seasonal,
            )
        };
        let observed = h.cdp_f64(rra, ds, idx);
        if observed.is_nan() {
            violation = 1;
        } else {
            let pos = h.rra_par_f64(rra, rra_par::DELTA_POS);
            let neg = h.rra_par_f64(rra, rra_par::DELTA_NEG);
            if observed > prediction + pos * deviation || observed < prediction - neg * deviation {
                violation = 1;
            }
        }
    }
    let window = h.rra_par_u64(rra, rra_par::WINDOW_LEN) as u16;
    let threshold = h.rra_par_u64(rra, rra_par::THRESHOLD);
    let arr = h.cdp_bytes_mut(rra, ds);
    let mut count: u16 = u16::from(violation);
    let mut i = usize::from(window);
    while i > 1 {
        let prev = arr.get(i - 2).copied().unwrap_or(0);
        if let Some(slot) = arr.get_mut(i - 1) {
            *slot = prev;
        }
        count = count.wrapping_add(u16::from(prev as i8 as u8));
        i -= 1;
    }
    if let Some(first) = arr.first_mut() {
        *first = violation;
    }
    let v = if u64::from(count) < threshold { 0.0 } else { 1.0 };
    h.set_cdp_f64(rra, ds, idx, v);
}

/// `erase_violations`: forget the violation history of a FAILURES
/// archive.
pub fn erase_violations(h: &mut Header<'static>, rra: usize, ds: usize) {
    if h.rra(rra).cf != Cf::Failures {
        return;
    }
    let window = usize::from(h.rra_par_u64(rra, rra_par::WINDOW_LEN) as u16);
    for b in h.cdp_bytes_mut(rra, ds).iter_mut().take(window) {
        *b = 0;
    }
}

/// `MyMod`: `val mod m` for a signed `val`, rrdtool's way (a negative
/// multiple of `m` gives `m`, not 0).
fn my_mod(val: i64, m: u64) -> u64 {
    if val < 0 { m - (val.unsigned_abs() % m) } else { val as u64 % m }
}

/// `apply_smoother`: replace every coefficient of the SEASONAL or
/// DEVSEASONAL archive `rra` with the centred moving average of its
/// `2·w + 1` neighbours (w = ⌊window/2 · period⌋, window 0.05 before
/// version 4), taken from an unmodified copy. For SEASONAL, the mean of
/// the smoothed array is then removed from it and added to the
/// HWPREDICT intercept. Nothing happens while any coefficient is NaN.
///
/// # Errors
/// When the rows cannot be read or written.
pub fn apply_smoother(h: &mut Header<'static>, rows: &mut dyn Rows, rra: usize) -> Result<()> {
    let info = *h.rra(rra);
    let row_count = info.rows;
    let len = h.ds_cnt();
    let window =
        if h.version() >= 4 { h.rra_par_f64(rra, rra_par::SMOOTHING_WINDOW) } else { 0.05 };
    let offset = num::floor(window / 2.0 * row_count as f64);
    if offset.is_nan() || offset < 1.0 {
        return Ok(());
    }
    let offset = offset as u64;
    if offset >= row_count {
        // rrdtool would read outside the archive here; mapwise does not
        // smooth such an archive.
        return Ok(());
    }
    let total = usize::try_from(row_count).unwrap_or(0) * len;
    let mut values = alloc::vec![0.0f64; total];
    rows.read(h.row_offset(rra, 0), &mut values)?;
    if values.iter().any(|v| v.is_nan()) {
        return Ok(());
    }
    let at = |k: u64, j: usize| k as usize * len + j;
    let mut queues: Vec<VecDeque<f64>> = (0..len).map(|_| VecDeque::new()).collect();
    let mut working = alloc::vec![0.0f64; len];
    let mut baseline = alloc::vec![0.0f64; len];
    for i in 0..2 * offset {
        let k = my_mod(i as i64 - offset as i64, row_count);
        for j in 0..len {
            let v = values.get(at(k, j)).copied().unwrap_or(DNAN);
            if let Some(q) = queues.get_mut(j) {
                q.push_back(v);
            }
            if let Some(w) = working.get_mut(j) {
                *w += v;
            }
        }
    }
    let copy = values.clone();
    let width = (2 * offset + 1) as f64;
    for i in offset..row_count + offset {
        for j in 0..len {
            let k = my_mod(i as i64, row_count);
            let v = copy.get(at(k, j)).copied().unwrap_or(DNAN);
            let (Some(w), Some(q)) = (working.get_mut(j), queues.get_mut(j)) else {
                continue;
            };
            *w += v;
            q.push_back(v);
            let center = my_mod(i as i64 - offset as i64, row_count);
            let smoothed = *w / width;
            if let Some(slot) = values.get_mut(at(center, j)) {
                *slot = smoothed;
            }
            if let Some(b) = baseline.get_mut(j) {
                *b += smoothed;
            }
            *w -= q.pop_front().unwrap_or(0.0);
        }
    }
    for b in &mut baseline {
        *b /= row_count as f64;
    }
    if info.cf == Cf::Seasonal {
        let hw = dep(h, rra);
        let model = model_at(h, hw);
        for (j, &base) in baseline.iter().enumerate() {
            for i in 0..row_count {
                if let Some(slot) = values.get_mut(at(i, j)) {
                    *slot = model.init_seasonality(*slot, base);
                }
            }
            let a = h.cdp_f64(hw, j, cdp::HW_INTERCEPT);
            h.set_cdp_f64(hw, j, cdp::HW_INTERCEPT, a + base);
        }
    }
    rows.write(h.row_offset(rra, 0), &values)
}
