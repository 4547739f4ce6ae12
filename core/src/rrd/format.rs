//! The RRDtool 1.x file: its sections, their fields, and a checked,
//! zero-copy view of them ([`Header`]).
//!
//! An RRD file is the C structs of rrdtool's `src/rrd_format.h` written
//! back to back in the native layout of the machine that made it, followed
//! by the values. This module reads the x86_64 / LP64 little-endian layout
//! (also the layout of aarch64, ppc64le and riscv64): `unsigned long` and
//! `time_t` are 8 bytes, `double` is 8 bytes with 8-byte alignment. Files
//! of other layouts are recognised by [`super::arch`] and refused with an
//! error naming the architecture.
//!
//! Sizes in bytes, counts in structures, times in seconds since the epoch.

use alloc::borrow::Cow;
use alloc::vec::Vec;

use crate::error::{At, Error, Result, RrdSection};
use crate::source::PageSource;

use super::arch::{self, Arch};
use super::rpn::{self, Node};

/// The 4 bytes of `stat_head.cookie` (`RRD_COOKIE`, `"RRD"` and its NUL).
pub const COOKIE: [u8; 4] = *b"RRD\0";
/// `stat_head.float_cookie` (`FLOAT_COOKIE`, 8.642135E130): a double whose
/// exact bytes reveal byte order and floating-point format.
pub const FLOAT_COOKIE: f64 = 8.642135e130;
/// Bytes of `stat_head_t`.
pub const STAT_HEAD_SIZE: u64 = 128;
/// [`STAT_HEAD_SIZE`] as a length.
const STAT_HEAD_LEN: usize = 128;
/// [`CDP_PREP_SIZE`] as a length.
const CDP_PREP_LEN: usize = 80;
/// Bytes of `ds_def_t`.
pub const DS_DEF_SIZE: u64 = 120;
/// Bytes of `rra_def_t`.
pub const RRA_DEF_SIZE: u64 = 120;
/// Bytes of `live_head_t` (`last_up` + `last_up_usec`), versions 0003 on.
pub const LIVE_HEAD_SIZE: u64 = 16;
/// Bytes of the bare `time_t last_up` that versions 0001 and 0002 store.
pub const LEGACY_LIVE_HEAD_SIZE: u64 = 8;
/// Bytes of `pdp_prep_t`.
pub const PDP_PREP_SIZE: u64 = 112;
/// Bytes of `cdp_prep_t`.
pub const CDP_PREP_SIZE: u64 = 80;
/// Bytes of `rra_ptr_t`.
pub const RRA_PTR_SIZE: u64 = 8;
/// Bytes of one stored value (`rrd_value_t`, a double).
pub const VALUE_SIZE: u64 = 8;
/// Bytes of `ds_def.ds_nam` (`DS_NAM_SIZE`): at most 19 characters + NUL.
pub const DS_NAM_SIZE: usize = 20;
/// Bytes of `ds_def.dst` and `rra_def.cf_nam` (`DST_SIZE`, `CF_NAM_SIZE`).
pub const DST_SIZE: usize = 20;
/// Bytes of `pdp_prep.last_ds` (`LAST_DS_LEN`): at most 29 characters + NUL.
pub const LAST_DS_LEN: usize = 30;
/// Longest FAILURES window (`MAX_FAILURES_WINDOW_LEN`).
pub const MAX_FAILURES_WINDOW_LEN: u64 = 28;
/// The newest file version rrdtool 1.7.2 reads (`RRD_VERSION5`).
pub const MAX_VERSION: u32 = 5;

/// A data source type (`enum dst_en`, `rrd_format.h`; names from
/// `rrd_format.c: dst_conv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DsType {
    /// `COUNTER`: an ever-growing unsigned integer; the rate is the
    /// difference to the last reading, with 32- and 64-bit wrap repair.
    Counter,
    /// `ABSOLUTE`: a count since the last reading.
    Absolute,
    /// `GAUGE`: the rate itself.
    Gauge,
    /// `DERIVE`: like COUNTER but signed and without wrap repair.
    Derive,
    /// `COMPUTE`: computed from other data sources by an RPN expression.
    Compute,
    /// `DCOUNTER`: COUNTER over floating-point readings (file version 5).
    DCounter,
    /// `DDERIVE`: DERIVE over floating-point readings (file version 5).
    DDerive,
}

impl DsType {
    /// Every type, in `enum dst_en` order.
    pub const ALL: [DsType; 7] = [
        DsType::Counter,
        DsType::Absolute,
        DsType::Gauge,
        DsType::Derive,
        DsType::Compute,
        DsType::DCounter,
        DsType::DDerive,
    ];

    /// The name stored in `ds_def.dst`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            DsType::Counter => "COUNTER",
            DsType::Absolute => "ABSOLUTE",
            DsType::Gauge => "GAUGE",
            DsType::Derive => "DERIVE",
            DsType::Compute => "COMPUTE",
            DsType::DCounter => "DCOUNTER",
            DsType::DDerive => "DDERIVE",
        }
    }

    /// The type named `s` (exact, case-sensitive, as `dst_conv`).
    #[must_use]
    pub fn from_name(s: &[u8]) -> Option<DsType> {
        DsType::ALL.into_iter().find(|t| t.name().as_bytes() == s)
    }
}

/// A consolidation function (`enum cf_en`, `rrd_format.h`; names from
/// `rrd_format.c: rrd_cf_conv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cf {
    /// `AVERAGE`.
    Average,
    /// `MIN`.
    Min,
    /// `MAX`.
    Max,
    /// `LAST`.
    Last,
    /// `HWPREDICT`: additive Holt-Winters predictions.
    HwPredict,
    /// `SEASONAL`: seasonal coefficients of a Holt-Winters model.
    Seasonal,
    /// `DEVPREDICT`: predicted deviations.
    DevPredict,
    /// `DEVSEASONAL`: seasonal deviations.
    DevSeasonal,
    /// `FAILURES`: 1 where too many observations left the confidence band.
    Failures,
    /// `MHWPREDICT`: multiplicative Holt-Winters predictions (version 4).
    MhwPredict,
}

impl Cf {
    /// Every function, in `enum cf_en` order.
    pub const ALL: [Cf; 10] = [
        Cf::Average,
        Cf::Min,
        Cf::Max,
        Cf::Last,
        Cf::HwPredict,
        Cf::Seasonal,
        Cf::DevPredict,
        Cf::DevSeasonal,
        Cf::Failures,
        Cf::MhwPredict,
    ];

    /// The name stored in `rra_def.cf_nam`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Cf::Average => "AVERAGE",
            Cf::Min => "MIN",
            Cf::Max => "MAX",
            Cf::Last => "LAST",
            Cf::HwPredict => "HWPREDICT",
            Cf::Seasonal => "SEASONAL",
            Cf::DevPredict => "DEVPREDICT",
            Cf::DevSeasonal => "DEVSEASONAL",
            Cf::Failures => "FAILURES",
            Cf::MhwPredict => "MHWPREDICT",
        }
    }

    /// The function named `s` (exact, case-sensitive, as `rrd_cf_conv`).
    #[must_use]
    pub fn from_name(s: &[u8]) -> Option<Cf> {
        Cf::ALL.into_iter().find(|c| c.name().as_bytes() == s)
    }

    /// `true` for the Holt-Winters family (everything but AVERAGE, MIN,
    /// MAX and LAST).
    #[must_use]
    pub fn is_hw(self) -> bool {
        !matches!(self, Cf::Average | Cf::Min | Cf::Max | Cf::Last)
    }
}

/// `rra_def.par` slots (`enum rra_par_en`).
pub mod rra_par {
    /// AVERAGE/MIN/MAX/LAST: the xfiles factor (double).
    pub const XFF: usize = 0;
    /// HWPREDICT/MHWPREDICT: alpha (double).
    pub const HW_ALPHA: usize = 1;
    /// HWPREDICT/MHWPREDICT: beta (double).
    pub const HW_BETA: usize = 2;
    /// Every HW RRA: index of the RRA it depends on (unsigned long).
    pub const DEPENDENT: usize = 3;
    /// HWPREDICT/MHWPREDICT: seasonal period (stored as a double).
    pub const PERIOD: usize = 4;
    /// SEASONAL/DEVSEASONAL: gamma (double).
    pub const GAMMA: usize = 1;
    /// SEASONAL/DEVSEASONAL: smoothing window, a fraction of the period
    /// (double; used from version 4 on).
    pub const SMOOTHING_WINDOW: usize = 2;
    /// SEASONAL/DEVSEASONAL: the row after which the smoother runs
    /// (unsigned long).
    pub const SMOOTH_IDX: usize = 4;
    /// FAILURES: upper band width in deviations (double).
    pub const DELTA_POS: usize = 1;
    /// FAILURES: lower band width in deviations (double).
    pub const DELTA_NEG: usize = 2;
    /// FAILURES: window length (unsigned long).
    pub const WINDOW_LEN: usize = 4;
    /// FAILURES: violations in the window that make a failure
    /// (unsigned long).
    pub const THRESHOLD: usize = 5;
}

/// `cdp_prep.scratch` slots (`enum cdp_par_en`).
pub mod cdp {
    /// Running consolidated value (double).
    pub const VAL: usize = 0;
    /// Unknown PDPs in the running value (unsigned long).
    pub const UNKN_PDP_CNT: usize = 1;
    /// HWPREDICT: intercept; SEASONAL: coefficient; DEVSEASONAL:
    /// deviation (double).
    pub const HW_INTERCEPT: usize = 2;
    /// The previous value of slot 2 (double).
    pub const HW_LAST_INTERCEPT: usize = 3;
    /// HWPREDICT: slope (double).
    pub const HW_SLOPE: usize = 4;
    /// HWPREDICT: previous slope (double).
    pub const HW_LAST_SLOPE: usize = 5;
    /// HWPREDICT: NaN count; SEASONAL/DEVSEASONAL: burn-in counter
    /// (`CDP_init_seasonal`) (unsigned long).
    pub const NULL_COUNT: usize = 6;
    /// HWPREDICT: previous NaN count (unsigned long).
    pub const LAST_NULL_COUNT: usize = 7;
    /// The value written to the first row an update fills (double).
    pub const PRIMARY: usize = 8;
    /// The value written to further rows of the same update (double).
    pub const SECONDARY: usize = 9;
    /// SEASONAL/DEVSEASONAL: coefficient (alias of slot 2).
    pub const SEASONAL: usize = HW_INTERCEPT;
    /// SEASONAL/DEVSEASONAL: previous coefficient (alias of slot 3).
    pub const LAST_SEASONAL: usize = HW_LAST_INTERCEPT;
    /// SEASONAL/DEVSEASONAL burn-in counter (alias of slot 6).
    pub const INIT_SEASONAL: usize = NULL_COUNT;
}

/// Where each section of a file lies, from its counts and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// File format version, 1 to 5 (`stat_head.version`).
    pub version: u32,
    /// Data sources (`stat_head.ds_cnt`).
    pub ds_cnt: usize,
    /// Archives, implicit Holt-Winters ones included (`stat_head.rra_cnt`).
    pub rra_cnt: usize,
    /// Seconds per primary data point (`stat_head.pdp_step`).
    pub pdp_step: u64,
    /// Offset of the first `ds_def_t` (always 128).
    pub ds_def: u64,
    /// Offset of the first `rra_def_t`.
    pub rra_def: u64,
    /// Offset of `live_head_t` (or of the bare `last_up` before version 3).
    pub live_head: u64,
    /// Bytes of the live head: 16, or 8 before version 3.
    pub live_head_len: u64,
    /// Offset of the first `pdp_prep_t`.
    pub pdp_prep: u64,
    /// Offset of the first `cdp_prep_t`.
    pub cdp_prep: u64,
    /// Offset of the first `rra_ptr_t`.
    pub rra_ptr: u64,
    /// Bytes of the header; the values start here (`rrd_file->header_len`).
    pub header_len: u64,
    /// Bytes a whole file has: header plus every value. rrdtool refuses
    /// shorter files ("is too small") and ignores bytes past this.
    pub file_len: u64,
}

impl Geometry {
    /// Section offsets for these counts, with every size checked for
    /// overflow (`None` when a count makes the header larger than `u64`).
    #[must_use]
    pub fn of(version: u32, ds_cnt: u64, rra_cnt: u64, pdp_step: u64) -> Option<Geometry> {
        let ds_def = STAT_HEAD_SIZE;
        let rra_def = ds_def.checked_add(ds_cnt.checked_mul(DS_DEF_SIZE)?)?;
        let live_head = rra_def.checked_add(rra_cnt.checked_mul(RRA_DEF_SIZE)?)?;
        let live_head_len = if version < 3 { LEGACY_LIVE_HEAD_SIZE } else { LIVE_HEAD_SIZE };
        let pdp_prep = live_head.checked_add(live_head_len)?;
        let cdp_prep = pdp_prep.checked_add(ds_cnt.checked_mul(PDP_PREP_SIZE)?)?;
        let cdp_cnt = rra_cnt.checked_mul(ds_cnt)?;
        let rra_ptr = cdp_prep.checked_add(cdp_cnt.checked_mul(CDP_PREP_SIZE)?)?;
        let header_len = rra_ptr.checked_add(rra_cnt.checked_mul(RRA_PTR_SIZE)?)?;
        Some(Geometry {
            version,
            ds_cnt: usize::try_from(ds_cnt).ok()?,
            rra_cnt: usize::try_from(rra_cnt).ok()?,
            pdp_step,
            ds_def,
            rra_def,
            live_head,
            live_head_len,
            pdp_prep,
            cdp_prep,
            rra_ptr,
            header_len,
            file_len: header_len,
        })
    }

    /// Offset of `ds_def[i]`.
    #[must_use]
    pub fn ds_def_at(&self, i: usize) -> u64 {
        self.ds_def + i as u64 * DS_DEF_SIZE
    }

    /// Offset of `rra_def[i]`.
    #[must_use]
    pub fn rra_def_at(&self, i: usize) -> u64 {
        self.rra_def + i as u64 * RRA_DEF_SIZE
    }

    /// Offset of `pdp_prep[i]`.
    #[must_use]
    pub fn pdp_prep_at(&self, i: usize) -> u64 {
        self.pdp_prep + i as u64 * PDP_PREP_SIZE
    }

    /// Offset of `cdp_prep[rra * ds_cnt + ds]`.
    #[must_use]
    pub fn cdp_prep_at(&self, rra: usize, ds: usize) -> u64 {
        self.cdp_prep + (rra as u64 * self.ds_cnt as u64 + ds as u64) * CDP_PREP_SIZE
    }

    /// Offset of `rra_ptr[i]`.
    #[must_use]
    pub fn rra_ptr_at(&self, i: usize) -> u64 {
        self.rra_ptr + i as u64 * RRA_PTR_SIZE
    }

    /// Bytes of one row (one value per data source).
    #[must_use]
    pub fn row_len(&self) -> u64 {
        self.ds_cnt as u64 * VALUE_SIZE
    }
}

/// Little-endian field readers and writers that never panic: reads past
/// the end give 0, writes past the end do nothing. [`Header`] checks every
/// structure against its bytes before handing out accessors, so these
/// defaults are never reached for a parsed header.
pub mod le {
    /// The u64 at `off`.
    #[must_use]
    pub fn u64_at(b: &[u8], off: u64) -> u64 {
        usize::try_from(off)
            .ok()
            .and_then(|o| b.get(o..o.checked_add(8)?))
            .and_then(|s| <[u8; 8]>::try_from(s).ok())
            .map_or(0, u64::from_le_bytes)
    }

    /// The i64 at `off`.
    #[must_use]
    pub fn i64_at(b: &[u8], off: u64) -> i64 {
        u64_at(b, off) as i64
    }

    /// The f64 at `off`.
    #[must_use]
    pub fn f64_at(b: &[u8], off: u64) -> f64 {
        f64::from_bits(u64_at(b, off))
    }

    /// Store `v` at `off`.
    pub fn put_u64(b: &mut [u8], off: u64, v: u64) {
        if let Some(s) = usize::try_from(off).ok().and_then(|o| b.get_mut(o..o.checked_add(8)?)) {
            s.copy_from_slice(&v.to_le_bytes());
        }
    }

    /// Store `v` at `off`.
    pub fn put_f64(b: &mut [u8], off: u64, v: f64) {
        put_u64(b, off, v.to_bits());
    }

    /// The bytes `[off, off + len)`, or an empty slice.
    #[must_use]
    pub fn bytes_at(b: &[u8], off: u64, len: usize) -> &[u8] {
        usize::try_from(off).ok().and_then(|o| b.get(o..o.checked_add(len)?)).unwrap_or_default()
    }

    /// The bytes `[off, off + len)` for writing, or an empty slice.
    pub fn bytes_at_mut(b: &mut [u8], off: u64, len: usize) -> &mut [u8] {
        usize::try_from(off)
            .ok()
            .and_then(|o| b.get_mut(o..o.checked_add(len)?))
            .unwrap_or_default()
    }

    /// A C string: the bytes before the first NUL.
    #[must_use]
    pub fn cstr(b: &[u8]) -> &[u8] {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        b.get(..end).unwrap_or_default()
    }
}

/// Decoded facts about one data source, checked at parse time.
#[derive(Debug, Clone, PartialEq)]
pub struct DsInfo {
    /// Name (`ds_def.ds_nam`).
    pub name: alloc::string::String,
    /// Type (`ds_def.dst`).
    pub kind: DsType,
    /// The compiled expression of a COMPUTE data source.
    pub rpn: Vec<Node>,
}

/// Decoded facts about one archive, checked at parse time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RraInfo {
    /// Consolidation function (`rra_def.cf_nam`).
    pub cf: Cf,
    /// Rows (`rra_def.row_cnt`), at least 1.
    pub rows: u64,
    /// PDPs per row (`rra_def.pdp_cnt`), at least 1.
    pub pdp_cnt: u64,
    /// Offset of the RRA's first value.
    pub start: u64,
}

/// A checked view of an RRD header: the bytes `[0, header_len)` and the
/// decoded definitions.
///
/// Borrowed from a slice or mapping it copies nothing; [`Header::into_owned`]
/// gives a header the update engine may change. Every structure lies inside
/// the bytes and every count, index and row pointer has been checked, so
/// the accessors below cannot fail.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    bytes: Cow<'a, [u8]>,
    geo: Geometry,
    ds: Vec<DsInfo>,
    rra: Vec<RraInfo>,
}

fn at(section: RrdSection, index: u64) -> At {
    At::Rrd { section, index }
}

fn invalid(
    section: RrdSection,
    index: u64,
    field: &'static str,
    value: u64,
    expected: &'static str,
) -> Error {
    Error::Invalid { at: at(section, index), field, value, expected }
}

/// `atoi` of a C string as glibc's (`strtol` base 10, saturating at the
/// `long` limits): optional blanks and sign, then digits; 0 when there are
/// none.
pub(crate) fn c_atoi(s: &[u8]) -> i64 {
    super::num::strtol(s, 10).0
}

impl<'a> Header<'a> {
    /// Read and check the header of the RRD file in `src`, and that the
    /// file holds every value (rrdtool's `rrd_open`).
    ///
    /// # Errors
    /// As [`Header::parse_header`]; and [`Error::OutOfBounds`] at
    /// `rrd values[i]` (field `row_cnt`) when the file is shorter than
    /// header plus values (rrdtool: "is too small").
    pub fn parse<S: PageSource + ?Sized>(src: &'a S) -> Result<Header<'a>> {
        let h = Header::parse_header(src)?;
        let size = src.len();
        if h.geo.file_len > size {
            let last = h.rra.len().saturating_sub(1) as u64;
            return Err(Error::OutOfBounds {
                at: at(RrdSection::Values, last),
                field: "row_cnt",
                offset: h.geo.header_len,
                len: h.geo.file_len - h.geo.header_len,
                size,
            });
        }
        Ok(h)
    }

    /// Read and check only the header (the values may be missing), in
    /// rrdtool's order: each section must fit ("reached EOF while loading
    /// header"), then the cookie, the float cookie (a foreign architecture
    /// is named), the version; then mapwise's own checks (see
    /// `docs/format/rrd.md`, "what the parser rejects").
    ///
    /// # Errors
    /// [`Error::OutOfBounds`] at the first section that does not fit,
    /// [`Error::Invalid`] for a bad cookie, version or field,
    /// [`Error::Unsupported`] for a file of another architecture.
    pub fn parse_header<S: PageSource + ?Sized>(src: &'a S) -> Result<Header<'a>> {
        let size = src.len();
        let head = src.read_at(0, STAT_HEAD_LEN).map_err(|e| match e {
            Error::OutOfBounds { .. } => Error::OutOfBounds {
                at: at(RrdSection::StatHead, 0),
                field: "stat_head",
                offset: 0,
                len: STAT_HEAD_SIZE,
                size,
            },
            other => other,
        })?;
        if head.get(..4) != Some(&COOKIE[..]) {
            return Err(invalid(
                RrdSection::StatHead,
                0,
                "cookie",
                u64::from(u32::from_le_bytes(
                    head.get(..4).and_then(|s| s.try_into().ok()).unwrap_or([0; 4]),
                )),
                "the bytes \"RRD\\0\" (an RRD file)",
            ));
        }
        if le::f64_at(&head, 16).to_bits() != FLOAT_COOKIE.to_bits() {
            return Err(match arch::detect(&head) {
                Some(a) if a != Arch::Native => {
                    Error::Unsupported { at: at(RrdSection::StatHead, 0), what: a.refusal() }
                }
                _ => invalid(
                    RrdSection::StatHead,
                    0,
                    "float_cookie",
                    le::u64_at(&head, 16),
                    "8.642135e130 (bytes 2f 25 c0 c7 43 2b 1f 5b)",
                ),
            });
        }
        // rrdtool goes on with a 32-bit ARM file (same float cookie) and
        // fails later on a huge ds_cnt; mapwise names the layout.
        if let Some(
            a @ (Arch::LittleEndian32 | Arch::BigEndian32 | Arch::BigEndian64 | Arch::I386),
        ) = arch::detect(&head)
        {
            return Err(Error::Unsupported { at: at(RrdSection::StatHead, 0), what: a.refusal() });
        }
        let vbytes = le::cstr(le::bytes_at(&head, 4, 5));
        let version = c_atoi(vbytes);
        if version > i64::from(MAX_VERSION) {
            return Err(invalid(
                RrdSection::StatHead,
                0,
                "version",
                version as u64,
                "0001 to 0005 (rrdtool 1.7 reads no newer version)",
            ));
        }
        if version < 1 {
            return Err(invalid(
                RrdSection::StatHead,
                0,
                "version",
                version as u64,
                "0001 to 0005",
            ));
        }
        let version = u32::try_from(version).unwrap_or(0);
        let ds_cnt = le::u64_at(&head, 24);
        let rra_cnt = le::u64_at(&head, 32);
        let pdp_step = le::u64_at(&head, 40);
        drop(head);

        // Section by section, as rrd_open: the first that does not fit names
        // itself.
        let oob = |section: RrdSection, field: &'static str, offset: u64, len: Option<u64>| {
            Error::OutOfBounds {
                at: at(section, 0),
                field,
                offset,
                len: len.unwrap_or(u64::MAX),
                size,
            }
        };
        let ds_len = ds_cnt.checked_mul(DS_DEF_SIZE);
        let ds_end = ds_len.and_then(|l| l.checked_add(STAT_HEAD_SIZE));
        if ds_end.is_none_or(|e| e > size) {
            return Err(oob(RrdSection::DsDef, "ds_cnt", STAT_HEAD_SIZE, ds_len));
        }
        let geo = Geometry::of(version, ds_cnt, rra_cnt, pdp_step);
        let Some(mut geo) = geo else {
            return Err(oob(RrdSection::RraDef, "rra_cnt", ds_end.unwrap_or(0), None));
        };
        for (section, field, off, end) in [
            (RrdSection::RraDef, "rra_cnt", geo.rra_def, geo.live_head),
            (RrdSection::LiveHead, "live_head", geo.live_head, geo.pdp_prep),
            (RrdSection::PdpPrep, "ds_cnt", geo.pdp_prep, geo.cdp_prep),
            (RrdSection::CdpPrep, "rra_cnt", geo.cdp_prep, geo.rra_ptr),
            (RrdSection::RraPtr, "rra_cnt", geo.rra_ptr, geo.header_len),
        ] {
            if end > size {
                return Err(oob(section, field, off, Some(end - off)));
            }
        }
        let header_len = usize::try_from(geo.header_len)
            .map_err(|_| oob(RrdSection::RraPtr, "rra_cnt", geo.rra_ptr, None))?;
        let bytes = src.read_at(0, header_len)?;

        if ds_cnt == 0 {
            return Err(invalid(RrdSection::StatHead, 0, "ds_cnt", 0, "at least one data source"));
        }
        if rra_cnt == 0 {
            return Err(invalid(RrdSection::StatHead, 0, "rra_cnt", 0, "at least one archive"));
        }
        if pdp_step == 0 {
            return Err(invalid(
                RrdSection::StatHead,
                0,
                "pdp_step",
                0,
                "at least 1 second (rrdtool divides by it)",
            ));
        }

        let mut ds = Vec::with_capacity(geo.ds_cnt);
        for i in 0..geo.ds_cnt {
            let off = geo.ds_def_at(i);
            let raw_name = le::bytes_at(&bytes, off, DS_NAM_SIZE);
            if !raw_name.contains(&0) {
                return Err(invalid(
                    RrdSection::DsDef,
                    i as u64,
                    "ds_nam",
                    0,
                    "a NUL-terminated name of at most 19 bytes",
                ));
            }
            let name = le::cstr(raw_name);
            let name = core::str::from_utf8(name).map_err(|_| {
                invalid(
                    RrdSection::DsDef,
                    i as u64,
                    "ds_nam",
                    0,
                    "a name in UTF-8 (rrdtool writes [a-zA-Z0-9_-])",
                )
            })?;
            let raw_dst = le::bytes_at(&bytes, off + 20, DST_SIZE);
            let kind = DsType::from_name(le::cstr(raw_dst)).ok_or_else(|| {
                invalid(
                    RrdSection::DsDef,
                    i as u64,
                    "dst",
                    0,
                    "GAUGE, COUNTER, DERIVE, ABSOLUTE, DCOUNTER, DDERIVE or COMPUTE",
                )
            })?;
            let rpn = if kind == DsType::Compute {
                let nodes = rpn::decode(le::bytes_at(&bytes, off + 40, 80)).map_err(
                    |(field, value, expected)| {
                        invalid(RrdSection::DsDef, i as u64, field, value, expected)
                    },
                )?;
                if let Some(bad) = nodes.iter().find_map(|n| match *n {
                    Node::Variable(v) if usize::from(v) >= i => Some(v),
                    _ => None,
                }) {
                    return Err(invalid(
                        RrdSection::DsDef,
                        i as u64,
                        "par[DS_cdef]",
                        u64::from(bad),
                        "variables that name data sources defined before this one",
                    ));
                }
                nodes
            } else {
                Vec::new()
            };
            ds.push(DsInfo { name: name.into(), kind, rpn });
        }

        let mut rra = Vec::with_capacity(geo.rra_cnt);
        let mut start = geo.header_len;
        for i in 0..geo.rra_cnt {
            let off = geo.rra_def_at(i);
            let cf = Cf::from_name(le::cstr(le::bytes_at(&bytes, off, DST_SIZE))).ok_or_else(|| {
                invalid(RrdSection::RraDef,
                    i as u64,
                    "cf_nam",
                    0,
                    "AVERAGE, MIN, MAX, LAST, HWPREDICT, MHWPREDICT, SEASONAL, DEVSEASONAL, DEVPREDICT or FAILURES",
                )
            })?;
            let rows = le::u64_at(&bytes, off + 24);
            let pdp_cnt = le::u64_at(&bytes, off + 32);
            if rows == 0 {
                return Err(invalid(RrdSection::RraDef, i as u64, "row_cnt", 0, "at least 1 row"));
            }
            if pdp_cnt == 0 {
                return Err(invalid(
                    RrdSection::RraDef,
                    i as u64,
                    "pdp_cnt",
                    0,
                    "at least 1 PDP per row (rrdtool divides by it)",
                ));
            }
            if pdp_cnt.checked_mul(pdp_step).is_none_or(|s| s > i64::MAX as u64) {
                return Err(invalid(
                    RrdSection::RraDef,
                    i as u64,
                    "pdp_cnt",
                    pdp_cnt,
                    "a row length (pdp_cnt * pdp_step) that fits in time_t",
                ));
            }
            rra.push(RraInfo { cf, rows, pdp_cnt, start });
            let len = rows
                .checked_mul(geo.row_len())
                .and_then(|l| start.checked_add(l))
                .ok_or_else(|| oob(RrdSection::Values, "row_cnt", start, None))?;
            start = len;
        }
        geo.file_len = start;

        let h = Header { bytes, geo, ds, rra };
        h.check_rras()?;
        Ok(h)
    }

    /// The dependencies between Holt-Winters archives, the FAILURES
    /// window and every `cur_row`.
    fn check_rras(&self) -> Result<()> {
        let n = self.rra.len();
        let cf_of = |i: u64| {
            usize::try_from(i).ok().filter(|&i| i < n).and_then(|i| self.rra.get(i)).map(|r| r.cf)
        };
        for (i, r) in self.rra.iter().enumerate() {
            let idx = i as u64;
            let dep = self.rra_par_u64(i, rra_par::DEPENDENT);
            let need = |want: &[Cf], expected: &'static str| -> Result<()> {
                match cf_of(dep) {
                    Some(c) if want.contains(&c) => Ok(()),
                    _ => Err(invalid(
                        RrdSection::RraDef,
                        idx,
                        "par[RRA_dependent_rra_idx]",
                        dep,
                        expected,
                    )),
                }
            };
            match r.cf {
                Cf::HwPredict | Cf::MhwPredict => {
                    need(&[Cf::Seasonal], "the index of a SEASONAL archive")?
                }
                Cf::Seasonal | Cf::DevSeasonal => {
                    need(
                        &[Cf::HwPredict, Cf::MhwPredict],
                        "the index of a HWPREDICT or MHWPREDICT archive",
                    )?;
                }
                Cf::DevPredict => need(&[Cf::DevSeasonal], "the index of a DEVSEASONAL archive")?,
                Cf::Failures => {
                    need(&[Cf::DevSeasonal], "the index of a DEVSEASONAL archive")?;
                    let w = self.rra_par_u64(i, rra_par::WINDOW_LEN);
                    if w > MAX_FAILURES_WINDOW_LEN {
                        return Err(invalid(
                            RrdSection::RraDef,
                            idx,
                            "par[RRA_window_len]",
                            w,
                            "at most 28 (MAX_FAILURES_WINDOW_LEN)",
                        ));
                    }
                }
                Cf::Average | Cf::Min | Cf::Max | Cf::Last => {}
            }
            let cur = self.cur_row(i);
            if cur >= r.rows {
                return Err(invalid(
                    RrdSection::RraPtr,
                    idx,
                    "cur_row",
                    cur,
                    "a row of the archive (less than row_cnt)",
                ));
            }
        }
        Ok(())
    }

    /// A header that owns its bytes (for the update engine).
    #[must_use]
    pub fn into_owned(self) -> Header<'static> {
        Header {
            bytes: Cow::Owned(self.bytes.into_owned()),
            geo: self.geo,
            ds: self.ds,
            rra: self.rra,
        }
    }

    /// The header bytes `[0, header_len)`.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Section offsets and counts.
    #[must_use]
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// The file version (1 to 5).
    #[must_use]
    pub fn version(&self) -> u32 {
        self.geo.version
    }

    /// The version string as stored (`stat_head.version`, e.g. `0003`).
    #[must_use]
    pub fn version_str(&self) -> &str {
        core::str::from_utf8(le::cstr(le::bytes_at(&self.bytes, 4, 5))).unwrap_or("")
    }

    /// Number of data sources.
    #[must_use]
    pub fn ds_cnt(&self) -> usize {
        self.geo.ds_cnt
    }

    /// Number of archives.
    #[must_use]
    pub fn rra_cnt(&self) -> usize {
        self.geo.rra_cnt
    }

    /// Seconds per PDP.
    #[must_use]
    pub fn pdp_step(&self) -> u64 {
        self.geo.pdp_step
    }

    /// Data source `i` (`i < ds_cnt`; out of range gives the last).
    #[must_use]
    pub fn ds(&self, i: usize) -> &DsInfo {
        // ds is never empty once parsed.
        self.ds.get(i).or(self.ds.last()).unwrap_or(&EMPTY_DS)
    }

    /// Every data source.
    #[must_use]
    pub fn dss(&self) -> &[DsInfo] {
        &self.ds
    }

    /// Archive `i` (`i < rra_cnt`; out of range gives the last).
    #[must_use]
    pub fn rra(&self, i: usize) -> &RraInfo {
        self.rra.get(i).or(self.rra.last()).unwrap_or(&EMPTY_RRA)
    }

    /// Every archive.
    #[must_use]
    pub fn rras(&self) -> &[RraInfo] {
        &self.rra
    }

    /// The index of the data source called `name` (`ds_match`).
    #[must_use]
    pub fn ds_index(&self, name: &str) -> Option<usize> {
        self.ds.iter().position(|d| d.name == name)
    }

    /// `ds_def[i].par[DS_mrhb_cnt]`: the minimal heartbeat in seconds.
    #[must_use]
    pub fn heartbeat(&self, i: usize) -> u64 {
        le::u64_at(&self.bytes, self.geo.ds_def_at(i) + 40)
    }

    /// `ds_def[i].par[DS_min_val]` (NaN: no minimum).
    #[must_use]
    pub fn ds_min(&self, i: usize) -> f64 {
        le::f64_at(&self.bytes, self.geo.ds_def_at(i) + 48)
    }

    /// `ds_def[i].par[DS_max_val]` (NaN: no maximum).
    #[must_use]
    pub fn ds_max(&self, i: usize) -> f64 {
        le::f64_at(&self.bytes, self.geo.ds_def_at(i) + 56)
    }

    /// `rra_def[i].par[slot]` read as a double.
    #[must_use]
    pub fn rra_par_f64(&self, i: usize, slot: usize) -> f64 {
        le::f64_at(&self.bytes, self.geo.rra_def_at(i) + 40 + 8 * slot as u64)
    }

    /// `rra_def[i].par[slot]` read as an unsigned long.
    #[must_use]
    pub fn rra_par_u64(&self, i: usize, slot: usize) -> u64 {
        le::u64_at(&self.bytes, self.geo.rra_def_at(i) + 40 + 8 * slot as u64)
    }

    /// `live_head.last_up`: time of the last update, seconds.
    #[must_use]
    pub fn last_up(&self) -> i64 {
        le::i64_at(&self.bytes, self.geo.live_head)
    }

    /// `live_head.last_up_usec` (0 before version 3).
    #[must_use]
    pub fn last_up_usec(&self) -> i64 {
        if self.geo.version < 3 { 0 } else { le::i64_at(&self.bytes, self.geo.live_head + 8) }
    }

    /// `pdp_prep[i].last_ds`: the last input string of data source `i`.
    #[must_use]
    pub fn last_ds(&self, i: usize) -> &[u8] {
        le::cstr(le::bytes_at(&self.bytes, self.geo.pdp_prep_at(i), LAST_DS_LEN))
    }

    /// `pdp_prep[i].scratch[PDP_unkn_sec_cnt]`: unknown seconds of the PDP
    /// being built.
    #[must_use]
    pub fn pdp_unknown_sec(&self, i: usize) -> u64 {
        le::u64_at(&self.bytes, self.geo.pdp_prep_at(i) + 32)
    }

    /// `pdp_prep[i].scratch[PDP_val]`: rate × seconds gathered so far.
    #[must_use]
    pub fn pdp_value(&self, i: usize) -> f64 {
        le::f64_at(&self.bytes, self.geo.pdp_prep_at(i) + 40)
    }

    /// `cdp_prep[rra * ds_cnt + ds].scratch[slot]` read as a double.
    #[must_use]
    pub fn cdp_f64(&self, rra: usize, ds: usize, slot: usize) -> f64 {
        le::f64_at(&self.bytes, self.geo.cdp_prep_at(rra, ds) + 8 * slot as u64)
    }

    /// `cdp_prep[rra * ds_cnt + ds].scratch[slot]` read as an unsigned long.
    #[must_use]
    pub fn cdp_u64(&self, rra: usize, ds: usize, slot: usize) -> u64 {
        le::u64_at(&self.bytes, self.geo.cdp_prep_at(rra, ds) + 8 * slot as u64)
    }

    /// The 80 bytes of `cdp_prep[rra * ds_cnt + ds]` (FAILURES keeps its
    /// violation history there as one byte per step).
    #[must_use]
    pub fn cdp_bytes(&self, rra: usize, ds: usize) -> &[u8] {
        le::bytes_at(&self.bytes, self.geo.cdp_prep_at(rra, ds), CDP_PREP_LEN)
    }

    /// `rra_ptr[i].cur_row`: the row the last update wrote.
    #[must_use]
    pub fn cur_row(&self, i: usize) -> u64 {
        le::u64_at(&self.bytes, self.geo.rra_ptr_at(i))
    }

    /// Offset of the value of data source `ds` in row `row` of RRA `rra`.
    #[must_use]
    pub fn value_offset(&self, rra: usize, row: u64, ds: usize) -> u64 {
        let r = self.rra(rra);
        r.start + row * self.geo.row_len() + ds as u64 * VALUE_SIZE
    }

    /// Offset of row `row` of RRA `rra`.
    #[must_use]
    pub fn row_offset(&self, rra: usize, row: u64) -> u64 {
        self.value_offset(rra, row, 0)
    }
}

impl Header<'static> {
    fn buf(&mut self) -> &mut [u8] {
        self.bytes.to_mut()
    }

    /// Set `live_head` (the usec part only from version 3 on).
    pub fn set_last_up(&mut self, secs: i64, usec: i64) {
        let off = self.geo.live_head;
        let v3 = self.geo.version >= 3;
        let b = self.buf();
        le::put_u64(b, off, secs as u64);
        if v3 {
            le::put_u64(b, off + 8, usec as u64);
        }
    }

    /// Set `pdp_prep[i].last_ds` as `strncpy(last_ds, s, LAST_DS_LEN - 1)`
    /// does: at most 29 bytes, the rest of the field NUL.
    pub fn set_last_ds(&mut self, i: usize, s: &[u8]) {
        let off = self.geo.pdp_prep_at(i);
        let field = le::bytes_at_mut(self.buf(), off, LAST_DS_LEN);
        let s = le::cstr(s);
        let n = s.len().min(LAST_DS_LEN - 1);
        for (k, b) in field.iter_mut().enumerate().take(LAST_DS_LEN - 1) {
            *b = if k < n { s.get(k).copied().unwrap_or(0) } else { 0 };
        }
        if let Some(last) = field.get_mut(LAST_DS_LEN - 1) {
            *last = 0;
        }
    }

    /// Set `pdp_prep[i].scratch[PDP_unkn_sec_cnt]`.
    pub fn set_pdp_unknown_sec(&mut self, i: usize, v: u64) {
        let off = self.geo.pdp_prep_at(i) + 32;
        le::put_u64(self.buf(), off, v);
    }

    /// Set `pdp_prep[i].scratch[PDP_val]`.
    pub fn set_pdp_value(&mut self, i: usize, v: f64) {
        let off = self.geo.pdp_prep_at(i) + 40;
        le::put_f64(self.buf(), off, v);
    }

    /// Set `cdp_prep[..].scratch[slot]` as a double.
    pub fn set_cdp_f64(&mut self, rra: usize, ds: usize, slot: usize, v: f64) {
        let off = self.geo.cdp_prep_at(rra, ds) + 8 * slot as u64;
        le::put_f64(self.buf(), off, v);
    }

    /// Set `cdp_prep[..].scratch[slot]` as an unsigned long.
    pub fn set_cdp_u64(&mut self, rra: usize, ds: usize, slot: usize, v: u64) {
        let off = self.geo.cdp_prep_at(rra, ds) + 8 * slot as u64;
        le::put_u64(self.buf(), off, v);
    }

    /// The 80 bytes of a `cdp_prep_t`, for writing.
    pub fn cdp_bytes_mut(&mut self, rra: usize, ds: usize) -> &mut [u8] {
        let off = self.geo.cdp_prep_at(rra, ds);
        le::bytes_at_mut(self.buf(), off, CDP_PREP_LEN)
    }

    /// Set `rra_ptr[i].cur_row`.
    pub fn set_cur_row(&mut self, i: usize, row: u64) {
        let off = self.geo.rra_ptr_at(i);
        le::put_u64(self.buf(), off, row);
    }

    /// The state an update changes (`live_head` to the end of `rra_ptr`),
    /// for saving before and restoring after a failed argument.
    #[must_use]
    pub fn state(&self) -> Vec<u8> {
        le::bytes_at(
            &self.bytes,
            self.geo.live_head,
            usize::try_from(self.geo.header_len - self.geo.live_head).unwrap_or(0),
        )
        .to_vec()
    }

    /// [`Header::state`] into `out` (its allocation is reused).
    pub fn state_into(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(le::bytes_at(
            &self.bytes,
            self.geo.live_head,
            usize::try_from(self.geo.header_len - self.geo.live_head).unwrap_or(0),
        ));
    }

    /// Put back what [`Header::state`] returned.
    pub fn restore_state(&mut self, saved: &[u8]) {
        let off = self.geo.live_head;
        let dst = le::bytes_at_mut(self.buf(), off, saved.len());
        if dst.len() == saved.len() {
            dst.copy_from_slice(saved);
        }
    }
}

static EMPTY_DS: DsInfo =
    DsInfo { name: alloc::string::String::new(), kind: DsType::Gauge, rpn: Vec::new() };

static EMPTY_RRA: RraInfo = RraInfo { cf: Cf::Average, rows: 1, pdp_cnt: 1, start: 0 };
