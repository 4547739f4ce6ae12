//! `rrdtool create`: the `DS:` and `RRA:` definitions parsed as rrdtool
//! 1.7.2 parses them (`rrd_create.c: parseDS`, `parseGENERIC_DS`,
//! `parseRRA`, `handle_dependent_rras`, `create_hw_contingent_rras`) and
//! the new file's bytes (`rrd_init_data`, `init_cdp`, `write_fh`).

// rrdtool's C conversions (double to unsigned long, unsigned long to int,
// …) are reproduced on purpose: they decide the bytes of the result.
#![expect(clippy::cast_possible_truncation)]

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::format::{
    CDP_PREP_SIZE, COOKIE, Cf, DS_DEF_SIZE, DsType, FLOAT_COOKIE, Geometry, Header,
    MAX_FAILURES_WINDOW_LEN, PDP_PREP_SIZE, RRA_DEF_SIZE, cdp, le, rra_par,
};
use super::num::{self, DNAN, Parsed};
use super::rpn::{self, Node};

/// One data source definition.
#[derive(Debug, Clone, PartialEq)]
pub struct DsDef {
    /// Name, 1 to 19 of `[-a-zA-Z0-9_]`.
    pub name: String,
    /// Type.
    pub kind: DsType,
    /// Minimal heartbeat, seconds.
    pub heartbeat: u64,
    /// Minimum rate (NaN: none).
    pub min: f64,
    /// Maximum rate (NaN: none).
    pub max: f64,
    /// The compiled expression of a COMPUTE data source.
    pub rpn: Vec<Node>,
}

/// One archive definition, its `par` slots as raw 8-byte words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RraDef {
    /// Consolidation function.
    pub cf: Cf,
    /// Rows.
    pub rows: u64,
    /// PDPs per row.
    pub pdp_cnt: u64,
    /// `rra_def.par`, each slot's bits (doubles stored by their bits).
    pub par: [u64; 10],
}

impl RraDef {
    fn set_f64(&mut self, slot: usize, v: f64) {
        if let Some(p) = self.par.get_mut(slot) {
            *p = v.to_bits();
        }
    }
    fn set_u64(&mut self, slot: usize, v: u64) {
        if let Some(p) = self.par.get_mut(slot) {
            *p = v;
        }
    }
    fn get_u64(&self, slot: usize) -> u64 {
        self.par.get(slot).copied().unwrap_or(0)
    }
    fn get_f64(&self, slot: usize) -> f64 {
        f64::from_bits(self.get_u64(slot))
    }
}

/// Everything `create` decided, before the random row pointers.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// File version: 3, or 4 with MHWPREDICT or an explicit smoothing
    /// window, or 5 with DCOUNTER/DDERIVE.
    pub version: u32,
    /// Seconds per PDP.
    pub step: u64,
    /// `live_head.last_up`.
    pub last_up: i64,
    /// Data sources.
    pub ds: Vec<DsDef>,
    /// Archives, the implicit Holt-Winters ones included.
    pub rra: Vec<RraDef>,
}

/// The `--step` of rrdtool create (`rrd_scaled_duration(…, 1)`), 300 when
/// absent.
///
/// # Errors
/// rrdtool's message ("step size: …").
pub fn parse_step(s: Option<&str>) -> Result<u64, String> {
    match s {
        None => Ok(300),
        Some(s) => num::scaled_duration(s, 1).map_err(|e| format!("step size: {e}")),
    }
}

fn atoi(s: &str) -> i64 {
    // C atoi: strtol then truncation to int.
    i64::from(super::format::c_atoi(s.as_bytes()) as i32)
}

/// Parse the definitions of `rrdtool create FILE [options] DEF…`.
/// `hash` is [`num::fnv_hash`] of the file name as given (it seeds the
/// seasonal smoothing index), `step` and `last_up` the resolved options.
///
/// # Errors
/// rrdtool's message for the first bad definition; mapwise also refuses
/// definitions whose Holt-Winters dependencies would make every update
/// fail or crash rrdtool (a period of 0, a dependency index out of range).
pub fn plan(step: u64, last_up: i64, hash: u64, defs: &[&str]) -> Result<Plan, String> {
    let mut version = 3u32;
    let mut ds: Vec<DsDef> = Vec::new();
    let mut rra: Vec<RraDef> = Vec::new();
    for def in defs {
        if let Some(d) = def.strip_prefix("DS:") {
            let parsed = parse_ds(d, &ds)?;
            if matches!(parsed.kind, DsType::DCounter | DsType::DDerive) {
                version = version.max(5);
            }
            if ds.iter().any(|x| x.name == parsed.name) {
                return Err(format!("Duplicate DS name: {}", parsed.name));
            }
            ds.push(parsed);
        } else if def.starts_with("RRA:") {
            let (r, v) = parse_rra(def, step, hash)?;
            version = version.max(v);
            rra.push(r);
            let idx = rra.len() - 1;
            if matches!(r.cf, Cf::HwPredict | Cf::MhwPredict)
                && r.get_u64(rra_par::DEPENDENT) == i32::MAX as u64
            {
                let period = r.get_f64(rra_par::PERIOD) as u16;
                if period == 0 {
                    return Err(String::from(
                        "Length of seasonal cycle must be at least 1 (rrdtool divides by it)",
                    ));
                }
                contingent(&mut rra, idx, period, hash);
            }
        } else {
            return Err(format!("can't parse argument '{def}'"));
        }
    }
    if rra.is_empty() {
        return Err(String::from("you must define at least one Round Robin Archive"));
    }
    if ds.is_empty() {
        return Err(String::from("you must define at least one Data Source"));
    }
    let p = Plan { version, step, last_up, ds, rra };
    // The definitions must give a file mapwise (and rrdtool) can update.
    let zeros = alloc::vec![0u64; p.rra.len()];
    let bytes = p.header(&zeros);
    Header::parse_header(&bytes[..])
        .map_err(|e| format!("the definitions make an unusable RRD: {e}"))?;
    Ok(p)
}

/// `create_hw_contingent_rras`: SEASONAL, DEVSEASONAL, DEVPREDICT and
/// FAILURES after the HWPREDICT/MHWPREDICT at `hw`.
fn contingent(rra: &mut Vec<RraDef>, hw: usize, period: u16, hash: u64) {
    let base = rra.len() as u64;
    let alpha = rra.get(hw).map_or(0.0, |r| r.get_f64(rra_par::HW_ALPHA));
    let hw_rows = rra.get(hw).map_or(1, |r| r.rows);
    let period = u64::from(period);
    let seasonal = |cf: Cf| {
        let mut r = RraDef { cf, rows: period, pdp_cnt: 1, par: [0; 10] };
        r.set_u64(rra_par::SMOOTH_IDX, hash % period);
        r.set_f64(rra_par::GAMMA, alpha);
        r.set_u64(rra_par::DEPENDENT, hw as u64);
        r
    };
    let s = seasonal(Cf::Seasonal);
    let d = seasonal(Cf::DevSeasonal);
    if let Some(h) = rra.get_mut(hw) {
        h.set_u64(rra_par::DEPENDENT, base);
    }
    rra.push(s);
    rra.push(d);
    let mut dp = RraDef { cf: Cf::DevPredict, rows: hw_rows, pdp_cnt: 1, par: [0; 10] };
    dp.set_u64(rra_par::DEPENDENT, hw as u64 + 2);
    rra.push(dp);
    let mut f = RraDef { cf: Cf::Failures, rows: period, pdp_cnt: 1, par: [0; 10] };
    f.set_f64(rra_par::DELTA_POS, 2.0);
    f.set_f64(rra_par::DELTA_NEG, 2.0);
    f.set_u64(rra_par::THRESHOLD, 7);
    f.set_u64(rra_par::WINDOW_LEN, 9);
    f.set_u64(rra_par::DEPENDENT, hw as u64 + 2);
    rra.push(f);
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// `parseDS` for the text after `DS:`.
fn parse_ds(def: &str, before: &[DsDef]) -> Result<DsDef, String> {
    let b = def.as_bytes();
    let bad = || String::from("invalid DS format");
    // ^(NAME)(?:=(NAME)(?:\[([0-9]+)\])?)?:([A-Z]{1,19}):(.+)$
    let n = b.iter().take_while(|&&c| is_name_char(c)).count();
    if !(1..=19).contains(&n) {
        return Err(bad());
    }
    let name = def.get(..n).ok_or_else(bad)?;
    let mut p = n;
    if b.get(p) == Some(&b'=') {
        let m = b.get(p + 1..).unwrap_or_default().iter().take_while(|&&c| is_name_char(c)).count();
        if !(1..=19).contains(&m) {
            return Err(bad());
        }
        p += 1 + m;
        if b.get(p) == Some(&b'[') {
            let k = b
                .get(p + 1..)
                .unwrap_or_default()
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if k == 0 || b.get(p + 1 + k) != Some(&b']') {
                return Err(bad());
            }
            p += k + 2;
        }
    }
    if b.get(p) != Some(&b':') {
        return Err(bad());
    }
    p += 1;
    let t = b.get(p..).unwrap_or_default().iter().take_while(|c| c.is_ascii_uppercase()).count();
    if !(1..=19).contains(&t) || b.get(p + t) != Some(&b':') {
        return Err(bad());
    }
    let dst = def.get(p..p + t).ok_or_else(bad)?;
    let args = def.get(p + t + 1..).unwrap_or("");
    if args.is_empty() {
        return Err(bad());
    }
    let kind = DsType::from_name(dst.as_bytes())
        .ok_or_else(|| format!("invalid DS type specified ({dst})"))?;
    let mut d =
        DsDef { name: name.into(), kind, heartbeat: 0, min: 0.0, max: 0.0, rpn: Vec::new() };
    if kind == DsType::Compute {
        let lookup =
            |v: &str| before.iter().position(|x| x.name == v).and_then(|i| u16::try_from(i).ok());
        d.rpn = rpn::compile(args, &lookup)?;
        return Ok(d);
    }
    let fail = |why: &str| format!("failed to parse data source {args}: {why}");
    let Some(colon) = args.find(':') else {
        return Err(fail("missing separator"));
    };
    if colon >= 32 {
        return Err(fail("heartbeat too long"));
    }
    d.heartbeat = num::scaled_duration(args.get(..colon).unwrap_or(""), 1).map_err(fail)?;
    // sscanf("%18[^:]:%18[^:]")
    let rest = args.get(colon + 1..).unwrap_or("").as_bytes();
    let a = rest.iter().take(18).take_while(|&&c| c != b':').count();
    let after = rest.get(a..).unwrap_or_default();
    let bl = after.get(1..).unwrap_or_default().iter().take(18).take_while(|&&c| c != b':').count();
    if a == 0 || after.first() != Some(&b':') || bl == 0 {
        return Err(fail("failed to extract min:max"));
    }
    let min_s = rest.get(..a).unwrap_or_default();
    let max_s = after.get(1..1 + bl).unwrap_or_default();
    let value = |s: &[u8], what: &str| -> Result<f64, String> {
        if s == b"U" {
            return Ok(DNAN);
        }
        match num::strtodbl(s) {
            Parsed::Whole(v) => Ok(v),
            _ => Err(num::strtodbl_error(what, s).unwrap_or_default()),
        }
    };
    d.min = value(min_s, "parsing min val")?;
    d.max = value(max_s, "parsing max val")?;
    if d.min >= d.max {
        return Err(fail("min must be less than max in DS definition"));
    }
    Ok(d)
}

/// `sscanf("%lf")`: the longest prefix that is a decimal number, read with
/// a correctly rounded parse (glibc's).
fn scan_lf(s: &str) -> Option<f64> {
    (1..=s.len()).rev().find_map(|end| {
        let t = s.get(..end)?;
        if !t.bytes().all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c)) {
            return None;
        }
        t.parse::<f64>().ok()
    })
}

/// `parseRRA` for a whole `RRA:…` argument; returns the definition and
/// the file version it needs.
fn parse_rra(def: &str, step: u64, hash: u64) -> Result<(RraDef, u32), String> {
    let mut r = RraDef { cf: Cf::Average, rows: 0, pdp_cnt: 1, par: [0; 10] };
    let mut version = 3u32;
    let mut token_min = 4usize;
    let mut count = 0usize;
    for (k, token) in def.get(4..).unwrap_or("").split(':').filter(|t| !t.is_empty()).enumerate() {
        count = k + 1;
        match k {
            0 => {
                let n = token.bytes().take(19).take_while(u8::is_ascii_uppercase).count();
                let name = token.get(..n).unwrap_or("");
                let cf = Cf::from_name(name.as_bytes())
                    .ok_or_else(|| format!("Unrecognized consolidation function {name}"))?;
                r.cf = cf;
                match cf {
                    Cf::HwPredict | Cf::MhwPredict => {
                        if cf == Cf::MhwPredict {
                            version = 4;
                        }
                        token_min = 5;
                        r.set_f64(rra_par::HW_ALPHA, 0.1);
                        r.set_f64(rra_par::HW_BETA, 1.0 / 288.0);
                        r.set_u64(rra_par::DEPENDENT, i32::MAX as u64);
                    }
                    Cf::Seasonal | Cf::DevSeasonal => {
                        token_min = if cf == Cf::Seasonal { 4 } else { 3 };
                        r.set_f64(rra_par::GAMMA, 0.1);
                        r.set_f64(rra_par::SMOOTHING_WINDOW, 0.05);
                        r.set_u64(rra_par::DEPENDENT, u64::MAX);
                    }
                    Cf::DevPredict => {
                        token_min = 3;
                        r.set_u64(rra_par::DEPENDENT, u64::MAX);
                    }
                    Cf::Failures => {
                        token_min = 5;
                        r.set_f64(rra_par::DELTA_POS, 2.0);
                        r.set_f64(rra_par::DELTA_NEG, 2.0);
                        r.set_u64(rra_par::WINDOW_LEN, 3);
                        r.set_u64(rra_par::THRESHOLD, 2);
                        r.set_u64(rra_par::DEPENDENT, u64::MAX);
                    }
                    Cf::Average | Cf::Min | Cf::Max | Cf::Last => {}
                }
                r.pdp_cnt = 1;
            }
            1 => {
                if r.cf.is_hw() {
                    r.rows = num::scaled_duration(token, step)
                        .map_err(|e| format!("Invalid row count {token}: {e}"))?;
                } else {
                    let x = match num::strtodbl(token.as_bytes()) {
                        Parsed::Whole(x) if (0.0..1.0).contains(&x) => x,
                        _ => return Err(String::from("Invalid xff: must be between 0 and 1")),
                    };
                    r.set_f64(rra_par::XFF, x);
                }
            }
            2 => match r.cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    let a = unit(token, "Invalid alpha: must be between 0 and 1", false)?;
                    r.set_f64(rra_par::HW_ALPHA, a);
                }
                Cf::Seasonal | Cf::DevSeasonal => {
                    let g = unit(token, "Invalid gamma: must be between 0 and 1", false)?;
                    r.set_f64(rra_par::GAMMA, g);
                    if r.rows == 0 {
                        return Err(String::from("Invalid row count: must be at least 1"));
                    }
                    r.set_u64(rra_par::SMOOTH_IDX, hash % r.rows);
                }
                Cf::Failures => {
                    let t = atoi(token);
                    r.set_u64(rra_par::THRESHOLD, t as u64);
                    if !(1..=MAX_FAILURES_WINDOW_LEN as i64).contains(&t) {
                        return Err(format!(
                            "Failure threshold is out of range {}, {}",
                            1, MAX_FAILURES_WINDOW_LEN
                        ));
                    }
                }
                Cf::DevPredict => r.set_u64(rra_par::DEPENDENT, (atoi(token) - 1) as u64),
                Cf::Average | Cf::Min | Cf::Max | Cf::Last => {
                    r.pdp_cnt = num::scaled_duration(token, step)
                        .map_err(|e| format!("Invalid step {token}: {e}"))?;
                }
            },
            3 => match r.cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    let b = unit(token, "Invalid beta: must be between 0 and 1", true)?;
                    r.set_f64(rra_par::HW_BETA, b);
                }
                Cf::Seasonal | Cf::DevSeasonal => {
                    r.set_u64(rra_par::DEPENDENT, (atoi(token) - 1) as u64)
                }
                Cf::Failures => {
                    let w = atoi(token);
                    r.set_u64(rra_par::WINDOW_LEN, w as u64);
                    if !(1..=MAX_FAILURES_WINDOW_LEN as i64).contains(&w) {
                        return Err(format!(
                            "Window length is out of range {}, {}",
                            1, MAX_FAILURES_WINDOW_LEN
                        ));
                    }
                    if r.get_u64(rra_par::WINDOW_LEN) < r.get_u64(rra_par::THRESHOLD) {
                        return Err(String::from(
                            "Window length is shorter than the failure threshold",
                        ));
                    }
                }
                Cf::DevPredict => {
                    return Err(String::from(
                        "Unexpected extra argument for consolidation function DEVPREDICT",
                    ));
                }
                Cf::Average | Cf::Min | Cf::Max | Cf::Last => {
                    r.rows = num::scaled_duration(token, step.wrapping_mul(r.pdp_cnt))
                        .map_err(|e| format!("Invalid row count {token}: {e}"))?;
                }
            },
            4 => match r.cf {
                Cf::Failures => r.set_u64(rra_par::DEPENDENT, (atoi(token) - 1) as u64),
                Cf::Seasonal | Cf::DevSeasonal => {
                    let w = token
                        .strip_prefix("smoothing-window=")
                        .and_then(scan_lf)
                        .ok_or_else(|| format!("Invalid option {token}"))?;
                    r.set_f64(rra_par::SMOOTHING_WINDOW, w);
                    version = version.max(4);
                    if !(0.0..=1.0).contains(&w) {
                        return Err(format!(
                            "Invalid smoothing-window {}: must be between 0 and 1",
                            super::cfmt::fixed6(w)
                        ));
                    }
                }
                Cf::HwPredict | Cf::MhwPredict => {
                    let period = atoi(token) as u16;
                    if u64::from(period) > r.rows {
                        return Err(String::from(
                            "Length of seasonal cycle exceeds length of HW prediction array",
                        ));
                    }
                    r.set_f64(rra_par::PERIOD, f64::from(period));
                }
                Cf::DevPredict | Cf::Average | Cf::Min | Cf::Max | Cf::Last => {
                    return Err(format!(
                        "Unexpected extra argument for consolidation function {}",
                        r.cf.name()
                    ));
                }
            },
            5 => r.set_u64(rra_par::DEPENDENT, (atoi(token) - 1) as u64),
            _ => return Err(String::from("Unknown error")),
        }
    }
    if count < token_min {
        return Err(format!("Expected at least {token_min} arguments for RRA but got {count}"));
    }
    Ok((r, version))
}

/// A parameter in (0, 1), or [0, 1] when `closed`.
fn unit(token: &str, msg: &str, closed: bool) -> Result<f64, String> {
    match num::strtodbl(token.as_bytes()) {
        Parsed::Whole(v)
            if (closed && (0.0..=1.0).contains(&v)) || (!closed && v > 0.0 && v < 1.0) =>
        {
            Ok(v)
        }
        _ => Err(String::from(msg)),
    }
}

impl Plan {
    /// The geometry of the file.
    #[must_use]
    pub fn geometry(&self) -> Geometry {
        let mut g =
            Geometry::of(self.version, self.ds.len() as u64, self.rra.len() as u64, self.step)
                .unwrap_or_else(|| Geometry::of(3, 0, 0, 1).unwrap_or(EMPTY_GEOMETRY));
        let rows: u64 = self.rra.iter().map(|r| r.rows).fold(0u64, u64::saturating_add);
        g.file_len = g.header_len.saturating_add(rows.saturating_mul(g.row_len()));
        g
    }

    /// The header bytes of the new file with these row pointers
    /// (`rrd_init_data` + `write_fh`): every byte rrdtool would write,
    /// padding zero.
    #[must_use]
    pub fn header(&self, cur_rows: &[u64]) -> Vec<u8> {
        let g = self.geometry();
        let mut b = alloc::vec![0u8; usize::try_from(g.header_len).unwrap_or(0)];
        le::bytes_at_mut(&mut b, 0, 4).copy_from_slice(&COOKIE);
        let v = format!("{:04}", self.version);
        le::bytes_at_mut(&mut b, 4, 4).copy_from_slice(v.as_bytes().get(..4).unwrap_or(b"0003"));
        le::put_f64(&mut b, 16, FLOAT_COOKIE);
        le::put_u64(&mut b, 24, self.ds.len() as u64);
        le::put_u64(&mut b, 32, self.rra.len() as u64);
        le::put_u64(&mut b, 40, self.step);
        for (i, d) in self.ds.iter().enumerate() {
            let off = g.ds_def + i as u64 * DS_DEF_SIZE;
            let name = d.name.as_bytes();
            le::bytes_at_mut(&mut b, off, name.len().min(19))
                .copy_from_slice(name.get(..name.len().min(19)).unwrap_or_default());
            let t = d.kind.name().as_bytes();
            le::bytes_at_mut(&mut b, off + 20, t.len()).copy_from_slice(t);
            if d.kind == DsType::Compute {
                le::bytes_at_mut(&mut b, off + 40, 80).copy_from_slice(&rpn::encode(&d.rpn));
            } else {
                le::put_u64(&mut b, off + 40, d.heartbeat);
                le::put_f64(&mut b, off + 48, d.min);
                le::put_f64(&mut b, off + 56, d.max);
            }
        }
        for (i, r) in self.rra.iter().enumerate() {
            let off = g.rra_def + i as u64 * RRA_DEF_SIZE;
            let t = r.cf.name().as_bytes();
            le::bytes_at_mut(&mut b, off, t.len()).copy_from_slice(t);
            le::put_u64(&mut b, off + 24, r.rows);
            le::put_u64(&mut b, off + 32, r.pdp_cnt);
            for (k, &p) in r.par.iter().enumerate() {
                le::put_u64(&mut b, off + 40 + 8 * k as u64, p);
            }
        }
        le::put_u64(&mut b, g.live_head, self.last_up as u64);
        let unkn = (self.last_up as u64) % self.step.max(1);
        for i in 0..self.ds.len() {
            let off = g.pdp_prep + i as u64 * PDP_PREP_SIZE;
            le::bytes_at_mut(&mut b, off, 1).copy_from_slice(b"U");
            le::put_u64(&mut b, off + 32, unkn);
            le::put_f64(&mut b, off + 40, DNAN);
        }
        for (ri, r) in self.rra.iter().enumerate() {
            for di in 0..self.ds.len() {
                let off = g.cdp_prep + (ri * self.ds.len() + di) as u64 * CDP_PREP_SIZE;
                let slot = |k: usize| off + 8 * k as u64;
                match r.cf {
                    Cf::HwPredict | Cf::MhwPredict => {
                        for k in [
                            cdp::HW_INTERCEPT,
                            cdp::HW_LAST_INTERCEPT,
                            cdp::HW_SLOPE,
                            cdp::HW_LAST_SLOPE,
                        ] {
                            le::put_f64(&mut b, slot(k), DNAN);
                        }
                        le::put_u64(&mut b, slot(cdp::NULL_COUNT), 1);
                        le::put_u64(&mut b, slot(cdp::LAST_NULL_COUNT), 1);
                    }
                    Cf::Seasonal | Cf::DevSeasonal => {
                        le::put_f64(&mut b, slot(cdp::SEASONAL), DNAN);
                        le::put_f64(&mut b, slot(cdp::LAST_SEASONAL), DNAN);
                        le::put_u64(&mut b, slot(cdp::INIT_SEASONAL), 1);
                    }
                    Cf::Failures => {}
                    Cf::Average | Cf::Min | Cf::Max | Cf::Last | Cf::DevPredict => {
                        le::put_f64(&mut b, slot(cdp::VAL), DNAN);
                        let span = self.step.wrapping_mul(r.pdp_cnt).max(1);
                        let n =
                            ((self.last_up as u64).wrapping_sub(unkn) % span) / self.step.max(1);
                        le::put_u64(&mut b, slot(cdp::UNKN_PDP_CNT), n);
                    }
                }
            }
        }
        for (i, &row) in cur_rows.iter().enumerate().take(self.rra.len()) {
            le::put_u64(&mut b, g.rra_ptr + 8 * i as u64, row);
        }
        b
    }
}

const EMPTY_GEOMETRY: Geometry = Geometry {
    version: 3,
    ds_cnt: 0,
    rra_cnt: 0,
    pdp_step: 1,
    ds_def: 128,
    rra_def: 128,
    live_head: 128,
    live_head_len: 16,
    pdp_prep: 144,
    cdp_prep: 144,
    rra_ptr: 144,
    header_len: 144,
    file_len: 144,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_create() {
        let p = plan(
            86400,
            962_496_000,
            num::fnv_hash(b"seed.rrd"),
            &["DS:ds0:GAUGE:86400:U:U", "RRA:AVERAGE:.5:1:10", "RRA:HWPREDICT:10:.5:.1:2"],
        )
        .unwrap();
        let cfs: Vec<_> = p.rra.iter().map(|r| r.cf).collect();
        assert_eq!(
            cfs,
            [
                Cf::Average,
                Cf::HwPredict,
                Cf::Seasonal,
                Cf::DevSeasonal,
                Cf::DevPredict,
                Cf::Failures
            ]
        );
        assert_eq!(p.geometry().file_len, 1912);
        assert_eq!(p.geometry().header_len, 1624);
    }

    #[test]
    fn bad_definitions_are_refused_in_rrdtools_words() {
        let e = |d: &str| plan(300, 1_600_000_000, 0, &["DS:a:GAUGE:600:U:U", d]).unwrap_err();
        assert_eq!(e("RRA:AVERAGE:1.5:1:10"), "Invalid xff: must be between 0 and 1");
        assert_eq!(e("RRA:FOO:0.5:1:10"), "Unrecognized consolidation function FOO");
        assert_eq!(e("RRA:AVERAGE:0.5:1"), "Expected at least 4 arguments for RRA but got 3");
        assert_eq!(e("XYZ"), "can't parse argument 'XYZ'");
        let d = |d: &str| plan(300, 1_600_000_000, 0, &[d, "RRA:AVERAGE:0.5:1:10"]).unwrap_err();
        assert_eq!(
            d("DS:a:GAUGE:600:5:1"),
            "failed to parse data source 600:5:1: min must be less than max in DS definition"
        );
        assert_eq!(d("DS:a:FOO:600:U:U"), "invalid DS type specified (FOO)");
        assert_eq!(d("DS:a b:GAUGE:600:U:U"), "invalid DS format");
    }
}
