//! `rrdtool info`, `lastupdate` and `first`, as rrdtool 1.7.2 prints them
//! (`rrd_info.c: rrd_info_r`, `rrd_info_print`; `rrd_lastupdate.c`;
//! `rrd_first.c: rrd_first_r`).

use alloc::string::String;
use core::fmt::{self, Write};

use super::cfmt::c_e10;
use super::format::{Cf, DsType, Header, cdp, rra_par};
use super::rpn;

/// One `key = value` line of `rrdtool info`, typed as `rrd_info_t` types
/// its values.
#[derive(Debug, Clone, PartialEq)]
pub enum InfoValue {
    /// `RD_I_VAL`: printed `%0.10e`, or `NaN`.
    Val(f64),
    /// `RD_I_CNT`: printed `%lu`.
    Cnt(u64),
    /// `RD_I_STR`: printed in double quotes.
    Str(String),
    /// `RD_I_INT`: printed `%d`.
    Int(i32),
}

impl fmt::Display for InfoValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InfoValue::Val(v) if v.is_nan() => f.write_str("NaN"),
            InfoValue::Val(v) => f.write_str(&c_e10(*v)),
            InfoValue::Cnt(n) => write!(f, "{n}"),
            InfoValue::Str(s) => write!(f, "\"{s}\""),
            InfoValue::Int(n) => write!(f, "{n}"),
        }
    }
}

/// The `(key, value)` pairs of `rrdtool info FILE`, in rrdtool's order;
/// `filename` is the path as given on the command line.
#[must_use]
pub fn info(h: &Header<'_>, filename: &str) -> alloc::vec::Vec<(String, InfoValue)> {
    use InfoValue::{Cnt, Str, Val};
    let mut v: alloc::vec::Vec<(String, InfoValue)> = alloc::vec::Vec::new();
    let mut push = |k: String, x: InfoValue| v.push((k, x));
    push("filename".into(), Str(filename.into()));
    push("rrd_version".into(), Str(h.version_str().into()));
    push("step".into(), Cnt(h.pdp_step()));
    push("last_update".into(), Cnt(h.last_up() as u64));
    push("header_size".into(), Cnt(h.geometry().header_len));
    let names: alloc::vec::Vec<&str> = h.dss().iter().map(|d| d.name.as_str()).collect();
    for (i, d) in h.dss().iter().enumerate() {
        let n = &d.name;
        push(alloc::format!("ds[{n}].index"), Cnt(i as u64));
        push(alloc::format!("ds[{n}].type"), Str(d.kind.name().into()));
        if d.kind == DsType::Compute {
            push(alloc::format!("ds[{n}].cdef"), Str(rpn::to_text(&d.rpn, &names)));
        } else {
            push(alloc::format!("ds[{n}].minimal_heartbeat"), Cnt(h.heartbeat(i)));
            push(alloc::format!("ds[{n}].min"), Val(h.ds_min(i)));
            push(alloc::format!("ds[{n}].max"), Val(h.ds_max(i)));
        }
        push(
            alloc::format!("ds[{n}].last_ds"),
            Str(String::from_utf8_lossy(h.last_ds(i)).into_owned()),
        );
        push(alloc::format!("ds[{n}].value"), Val(h.pdp_value(i)));
        push(alloc::format!("ds[{n}].unknown_sec"), Cnt(h.pdp_unknown_sec(i)));
    }
    for (i, r) in h.rras().iter().enumerate() {
        push(alloc::format!("rra[{i}].cf"), Str(r.cf.name().into()));
        push(alloc::format!("rra[{i}].rows"), Cnt(r.rows));
        push(alloc::format!("rra[{i}].cur_row"), Cnt(h.cur_row(i)));
        push(alloc::format!("rra[{i}].pdp_per_row"), Cnt(r.pdp_cnt));
        match r.cf {
            Cf::HwPredict | Cf::MhwPredict => {
                push(alloc::format!("rra[{i}].alpha"), Val(h.rra_par_f64(i, rra_par::HW_ALPHA)));
                push(alloc::format!("rra[{i}].beta"), Val(h.rra_par_f64(i, rra_par::HW_BETA)));
            }
            Cf::Seasonal | Cf::DevSeasonal => {
                push(alloc::format!("rra[{i}].gamma"), Val(h.rra_par_f64(i, rra_par::GAMMA)));
                if h.version() >= 4 {
                    push(
                        alloc::format!("rra[{i}].smoothing_window"),
                        Val(h.rra_par_f64(i, rra_par::SMOOTHING_WINDOW)),
                    );
                }
            }
            Cf::Failures => {
                push(
                    alloc::format!("rra[{i}].delta_pos"),
                    Val(h.rra_par_f64(i, rra_par::DELTA_POS)),
                );
                push(
                    alloc::format!("rra[{i}].delta_neg"),
                    Val(h.rra_par_f64(i, rra_par::DELTA_NEG)),
                );
                push(
                    alloc::format!("rra[{i}].failure_threshold"),
                    Cnt(h.rra_par_u64(i, rra_par::THRESHOLD)),
                );
                push(
                    alloc::format!("rra[{i}].window_length"),
                    Cnt(h.rra_par_u64(i, rra_par::WINDOW_LEN)),
                );
            }
            Cf::DevPredict => {}
            Cf::Average | Cf::Min | Cf::Max | Cf::Last => {
                push(alloc::format!("rra[{i}].xff"), Val(h.rra_par_f64(i, rra_par::XFF)));
            }
        }
        for ds in 0..h.ds_cnt() {
            let f = |slot: usize| h.cdp_f64(i, ds, slot);
            match r.cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    push(
                        alloc::format!("rra[{i}].cdp_prep[{ds}].intercept"),
                        Val(f(cdp::HW_INTERCEPT)),
                    );
                    push(alloc::format!("rra[{i}].cdp_prep[{ds}].slope"), Val(f(cdp::HW_SLOPE)));
                    push(
                        alloc::format!("rra[{i}].cdp_prep[{ds}].NaN_count"),
                        Cnt(h.cdp_u64(i, ds, cdp::NULL_COUNT)),
                    );
                }
                Cf::Seasonal => {
                    push(alloc::format!("rra[{i}].cdp_prep[{ds}].seasonal"), Val(f(cdp::SEASONAL)));
                }
                Cf::DevSeasonal => {
                    push(
                        alloc::format!("rra[{i}].cdp_prep[{ds}].deviation"),
                        Val(f(cdp::SEASONAL)),
                    );
                }
                Cf::DevPredict => {}
                Cf::Failures => {
                    let w = usize::try_from(h.rra_par_u64(i, rra_par::WINDOW_LEN)).unwrap_or(0);
                    let hist: String = h
                        .cdp_bytes(i, ds)
                        .iter()
                        .take(w)
                        .map(|&b| if b == 1 { '1' } else { '0' })
                        .collect();
                    push(alloc::format!("rra[{i}].cdp_prep[{ds}].history"), Str(hist));
                }
                Cf::Average | Cf::Min | Cf::Max | Cf::Last => {
                    push(alloc::format!("rra[{i}].cdp_prep[{ds}].value"), Val(f(cdp::VAL)));
                    push(
                        alloc::format!("rra[{i}].cdp_prep[{ds}].unknown_datapoints"),
                        Cnt(h.cdp_u64(i, ds, cdp::UNKN_PDP_CNT)),
                    );
                }
            }
        }
    }
    v
}

/// Print `info` pairs as `rrd_info_print` does: `key = value` per line.
///
/// # Errors
/// When `out` refuses a write.
pub fn write_info(out: &mut impl Write, pairs: &[(String, InfoValue)]) -> fmt::Result {
    for (k, v) in pairs {
        writeln!(out, "{k} = {v}")?;
    }
    Ok(())
}

/// `rrdtool first --rraindex i`: the time of the oldest row of RRA `rra`
/// (`rrd_first_r`), or `None` when there is no such RRA.
#[must_use]
pub fn first(h: &Header<'_>, rra: usize) -> Option<i64> {
    let r = h.rras().get(rra)?;
    let span = r.pdp_cnt.wrapping_mul(h.pdp_step());
    let last = h.last_up();
    let end = (last as u64).wrapping_sub(last as u64 % span) as i64;
    let timer = -((r.rows - 1) as i64);
    Some(end.wrapping_add(timer.wrapping_mul(r.pdp_cnt as i64).wrapping_mul(h.pdp_step() as i64)))
}

/// Print `rrdtool lastupdate`: the data source names, a blank line, then
/// the last update time and each data source's last input string.
///
/// # Errors
/// When `out` refuses a write.
pub fn write_lastupdate(out: &mut impl Write, h: &Header<'_>) -> fmt::Result {
    for d in h.dss() {
        write!(out, " {}", d.name)?;
    }
    out.write_str("\n\n")?;
    write!(out, "{:>10}:", h.last_up() as u64)?;
    for i in 0..h.ds_cnt() {
        write!(out, " {}", String::from_utf8_lossy(h.last_ds(i)))?;
    }
    out.write_str("\n")
}
