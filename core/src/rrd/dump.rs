//! `rrdtool dump`: the XML text of a file, byte for byte as rrdtool 1.7.2
//! writes it (`rrd_dump.c: rrd_dump_cb_r`).

use core::fmt::{self, Write};

use super::cfmt::rrd_e10;
use super::format::{Cf, DsType, Header, VALUE_SIZE, cdp, le, rra_par};
use super::rpn;
use crate::error::Error;
use crate::source::PageSource;

/// Why printing stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrintError {
    /// The file is damaged or could not be read (the first fault met).
    Format(Error),
    /// The output sink refused a write.
    Write,
}

impl From<Error> for PrintError {
    fn from(e: Error) -> Self {
        PrintError::Format(e)
    }
}

impl From<fmt::Error> for PrintError {
    fn from(_: fmt::Error) -> Self {
        PrintError::Write
    }
}

impl fmt::Display for PrintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrintError::Format(e) => write!(f, "{e}"),
            PrintError::Write => f.write_str("error writing output"),
        }
    }
}

/// The prologue of the XML (`dump --header`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DumpHeader {
    /// `<?xml …?>` and the DTD reference (rrdtool's default, `dtd`).
    #[default]
    Dtd,
    /// `<?xml …?>` and the XML schema reference (`xsd`).
    Xsd,
    /// No prologue (`none`, `--no-header`).
    None,
}

fn num(out: &mut impl Write, tag: &str, v: f64, indent: &str) -> fmt::Result {
    if v.is_nan() {
        writeln!(out, "{indent}<{tag}>NaN</{tag}>")
    } else {
        writeln!(out, "{indent}<{tag}>{}</{tag}>", rrd_e10(v))
    }
}

/// Write the dump of the file whose header is `h` and whose bytes are
/// `src`. `localtime` formats a time as rrdtool's comments show it
/// (`strftime("%Y-%m-%d %H:%M:%S %Z")` of `localtime_r`).
///
/// # Errors
/// [`PrintError::Format`] when a row cannot be read, [`PrintError::Write`]
/// when `out` refuses.
pub fn write_dump<S: PageSource + ?Sized, W: Write>(
    out: &mut W,
    h: &Header<'_>,
    src: &S,
    header: DumpHeader,
    localtime: &dyn Fn(i64) -> alloc::string::String,
) -> Result<(), PrintError> {
    match header {
        DumpHeader::Dtd => {
            out.write_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n")?;
            out.write_str(
                "<!DOCTYPE rrd SYSTEM \"https://oss.oetiker.ch/rrdtool/rrdtool.dtd\">\n",
            )?;
            out.write_str("<!-- Round Robin Database Dump -->\n")?;
            out.write_str("<rrd>\n")?;
        }
        DumpHeader::Xsd => {
            out.write_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n")?;
            out.write_str("<!-- Round Robin Database Dump -->\n")?;
            out.write_str(
                "<rrd xmlns=\"https://oss.oetiker.ch/rrdtool/rrdtool-dump.xml\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"\n",
            )?;
            out.write_str(
                "\txsi:schemaLocation=\"https://oss.oetiker.ch/rrdtool/rrdtool-dump.xml https://oss.oetiker.ch/rrdtool/rrdtool-dump.xsd\">\n",
            )?;
        }
        DumpHeader::None => {
            out.write_str("<!-- Round Robin Database Dump -->\n")?;
            out.write_str("<rrd>\n")?;
        }
    }
    let version = if h.version() <= 3 { "0003" } else { h.version_str() };
    writeln!(out, "\t<version>{version}</version>")?;
    let step = h.pdp_step();
    writeln!(out, "\t<step>{step}</step> <!-- Seconds -->")?;
    let last_up = h.last_up();
    write!(out, "\t<lastupdate>{last_up}</lastupdate> <!-- {} -->\n\n", localtime(last_up))?;
    let names: alloc::vec::Vec<&str> = h.dss().iter().map(|d| d.name.as_str()).collect();
    for (i, d) in h.dss().iter().enumerate() {
        out.write_str("\t<ds>\n")?;
        writeln!(out, "\t\t<name> {} </name>", d.name)?;
        writeln!(out, "\t\t<type> {} </type>", d.kind.name())?;
        if d.kind == DsType::Compute {
            writeln!(out, "\t\t<cdef> {} </cdef>", rpn::to_text(&d.rpn, &names))?;
        } else {
            writeln!(out, "\t\t<minimal_heartbeat>{}</minimal_heartbeat>", h.heartbeat(i))?;
            num(out, "min", h.ds_min(i), "\t\t")?;
            num(out, "max", h.ds_max(i), "\t\t")?;
        }
        out.write_str("\n\t\t<!-- PDP Status -->\n")?;
        writeln!(
            out,
            "\t\t<last_ds>{}</last_ds>",
            alloc::string::String::from_utf8_lossy(h.last_ds(i))
        )?;
        num(out, "value", h.pdp_value(i), "\t\t")?;
        writeln!(out, "\t\t<unknown_sec> {} </unknown_sec>", h.pdp_unknown_sec(i))?;
        out.write_str("\t</ds>\n\n")?;
    }
    out.write_str("\t<!-- Round Robin Archives -->\n")?;
    let ds_cnt = h.ds_cnt();
    for (i, r) in h.rras().iter().enumerate() {
        out.write_str("\t<rra>\n")?;
        writeln!(out, "\t\t<cf>{}</cf>", r.cf.name())?;
        write!(
            out,
            "\t\t<pdp_per_row>{}</pdp_per_row> <!-- {} seconds -->\n\n",
            r.pdp_cnt,
            r.pdp_cnt.wrapping_mul(step)
        )?;
        out.write_str("\t\t<params>\n")?;
        let e = |slot: usize| rrd_e10(h.rra_par_f64(i, slot));
        let u = |slot: usize| h.rra_par_u64(i, slot);
        match r.cf {
            Cf::HwPredict | Cf::MhwPredict => {
                writeln!(out, "\t\t<hw_alpha>{}</hw_alpha>", e(rra_par::HW_ALPHA))?;
                writeln!(out, "\t\t<hw_beta>{}</hw_beta>", e(rra_par::HW_BETA))?;
                writeln!(
                    out,
                    "\t\t<dependent_rra_idx>{}</dependent_rra_idx>",
                    u(rra_par::DEPENDENT)
                )?;
            }
            Cf::Seasonal | Cf::DevSeasonal => {
                writeln!(out, "\t\t<seasonal_gamma>{}</seasonal_gamma>", e(rra_par::GAMMA))?;
                writeln!(
                    out,
                    "\t\t<seasonal_smooth_idx>{}</seasonal_smooth_idx>",
                    u(rra_par::SMOOTH_IDX)
                )?;
                if h.version() >= 4 {
                    writeln!(
                        out,
                        "\t\t<smoothing_window>{}</smoothing_window>",
                        e(rra_par::SMOOTHING_WINDOW)
                    )?;
                }
                writeln!(
                    out,
                    "\t\t<dependent_rra_idx>{}</dependent_rra_idx>",
                    u(rra_par::DEPENDENT)
                )?;
            }
            Cf::Failures => {
                writeln!(out, "\t\t<delta_pos>{}</delta_pos>", e(rra_par::DELTA_POS))?;
                writeln!(out, "\t\t<delta_neg>{}</delta_neg>", e(rra_par::DELTA_NEG))?;
                writeln!(out, "\t\t<window_len>{}</window_len>", u(rra_par::WINDOW_LEN))?;
                writeln!(
                    out,
                    "\t\t<failure_threshold>{}</failure_threshold>",
                    u(rra_par::THRESHOLD)
                )?;
                writeln!(
                    out,
                    "\t\t<dependent_rra_idx>{}</dependent_rra_idx>",
                    u(rra_par::DEPENDENT)
                )?;
            }
            Cf::DevPredict => {
                writeln!(
                    out,
                    "\t\t<dependent_rra_idx>{}</dependent_rra_idx>",
                    u(rra_par::DEPENDENT)
                )?;
            }
            Cf::Average | Cf::Min | Cf::Max | Cf::Last => {
                writeln!(out, "\t\t<xff>{}</xff>", e(rra_par::XFF))?;
            }
        }
        out.write_str("\t\t</params>\n")?;
        out.write_str("\t\t<cdp_prep>\n")?;
        for ds in 0..ds_cnt {
            out.write_str("\t\t\t<ds>\n")?;
            let f = |slot: usize| h.cdp_f64(i, ds, slot);
            num(out, "primary_value", f(cdp::PRIMARY), "\t\t\t")?;
            num(out, "secondary_value", f(cdp::SECONDARY), "\t\t\t")?;
            match r.cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    num(out, "intercept", f(cdp::HW_INTERCEPT), "\t\t\t")?;
                    num(out, "last_intercept", f(cdp::HW_LAST_INTERCEPT), "\t\t\t")?;
                    num(out, "slope", f(cdp::HW_SLOPE), "\t\t\t")?;
                    num(out, "last_slope", f(cdp::HW_LAST_SLOPE), "\t\t\t")?;
                    writeln!(
                        out,
                        "\t\t\t<nan_count>{}</nan_count>",
                        h.cdp_u64(i, ds, cdp::NULL_COUNT)
                    )?;
                    writeln!(
                        out,
                        "\t\t\t<last_nan_count>{}</last_nan_count>",
                        h.cdp_u64(i, ds, cdp::LAST_NULL_COUNT)
                    )?;
                }
                Cf::Seasonal | Cf::DevSeasonal => {
                    num(out, "seasonal", f(cdp::SEASONAL), "\t\t\t")?;
                    num(out, "last_seasonal", f(cdp::LAST_SEASONAL), "\t\t\t")?;
                    writeln!(
                        out,
                        "\t\t\t<init_flag>{}</init_flag>",
                        h.cdp_u64(i, ds, cdp::INIT_SEASONAL)
                    )?;
                }
                Cf::DevPredict => {}
                Cf::Failures => {
                    out.write_str("\t\t\t<history>")?;
                    let w = usize::try_from(h.rra_par_u64(i, rra_par::WINDOW_LEN)).unwrap_or(0);
                    for &b in h.cdp_bytes(i, ds).iter().take(w) {
                        write!(out, "{}", b as i8)?;
                    }
                    out.write_str("</history>\n")?;
                }
                Cf::Average | Cf::Min | Cf::Max | Cf::Last => {
                    num(out, "value", f(cdp::VAL), "\t\t\t")?;
                    writeln!(
                        out,
                        "\t\t\t<unknown_datapoints>{}</unknown_datapoints>",
                        h.cdp_u64(i, ds, cdp::UNKN_PDP_CNT)
                    )?;
                }
            }
            out.write_str("\t\t\t</ds>\n")?;
        }
        out.write_str("\t\t</cdp_prep>\n")?;
        out.write_str("\t\t<database>\n")?;
        let span = r.pdp_cnt.wrapping_mul(step);
        let end = (last_up as u64).wrapping_sub(last_up as u64 % span) as i64;
        let oldest = -((r.rows - 1) as i64);
        let mut row = h.cur_row(i);
        let row_len = usize::try_from(h.geometry().row_len()).unwrap_or(0);
        for k in 0..r.rows {
            row += 1;
            if row >= r.rows {
                row = 0;
            }
            let timer = oldest.wrapping_add(k as i64);
            let now =
                end.wrapping_add(timer.wrapping_mul(r.pdp_cnt as i64).wrapping_mul(step as i64));
            write!(out, "\t\t\t<!-- {} / {now} --> <row>", localtime(now))?;
            let bytes = src.read_at(h.row_offset(i, row), row_len)?;
            for k in 0..ds_cnt {
                let v = le::f64_at(&bytes, k as u64 * VALUE_SIZE);
                if v.is_nan() {
                    out.write_str("<v>NaN</v>")?;
                } else {
                    write!(out, "<v>{}</v>", rrd_e10(v))?;
                }
            }
            out.write_str("</row>\n")?;
        }
        out.write_str("\t\t</database>\n\t</rra>\n")?;
    }
    out.write_str("</rrd>\n")?;
    Ok(())
}
