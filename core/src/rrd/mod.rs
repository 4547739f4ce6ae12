//! RRDtool 1.x round-robin databases (`.rrd`), read and computed exactly
//! as rrdtool 1.7.2 does.
//!
//! See `docs/format/rrd.md` for the format in our words; facts come from
//! rrdtool 1.7.2's source (`src/rrd_format.h` for the structs, the files
//! named in each module for the algorithms).
//!
//! * [`format`]: the sections and a checked zero-copy [`Header`]
//!   (x86_64/LP64 layout; [`arch`] names any other).
//! * [`layout()`]: every byte labelled for the page map, with the pages
//!   the next update touches.
//! * [`update`] and [`hw`]: the update algorithm, byte-identical to
//!   rrdtool's, over any [`update::Rows`] store.
//! * [`create`], [`dump`], [`fetch`], [`info`]: the other commands'
//!   computations and texts.
//! * [`num`], [`cfmt`], [`rpn`]: rrdtool's number parser, decimal
//!   subtraction, printf formats and COMPUTE expressions.
//!
//! Nothing here does I/O or reads a clock: `mapwise-native` supplies the
//! file, "now", local time and the C math library.

pub mod arch;
pub mod cfmt;
pub mod create;
pub mod dump;
pub mod fetch;
pub mod format;
pub mod hw;
pub mod info;
mod layout;
pub mod num;
pub mod rpn;
pub mod update;

pub use arch::Arch;
pub use format::{Cf, DsType, Geometry, Header};
pub use layout::{
    RraArea, RrdLayout, Section, call_hot_ranges, hot_ranges, layout, rows_due, summary,
};

/// `true` when `src` starts with the `RRD\0` cookie (any architecture).
#[must_use]
pub fn sniff<S: crate::source::PageSource + ?Sized>(src: &S) -> bool {
    src.read_at(0, 4).is_ok_and(|b| *b == format::COOKIE)
}

/// The architecture of the RRD in `src` when it is not the one mapwise
/// reads (`None` for a native file or a file that is no RRD).
#[must_use]
pub fn foreign_arch<S: crate::source::PageSource + ?Sized>(src: &S) -> Option<Arch> {
    let n = src.len().min(format::STAT_HEAD_SIZE);
    let head = src.read_at(0, usize::try_from(n).unwrap_or(0)).ok()?;
    arch::detect(&head).filter(|a| *a != Arch::Native)
}

#[cfg(test)]
mod damage {
    //! Damaged corpus files never make the readers panic: random byte
    //! flips and truncations go through the header parser, the layout,
    //! dump, info, fetch and an update.

    use alloc::string::String;

    use proptest::prelude::*;

    use super::*;

    static GAUGE: &[u8] = include_bytes!("../../../testdata/rrd/gauge.rrd");
    static HW: &[u8] = include_bytes!("../../../testdata/rrd/hw.rrd");
    static COMPUTE: &[u8] = include_bytes!("../../../testdata/rrd/compute.rrd");

    fn exercise(bytes: &[u8]) {
        let l = layout(bytes, 4096);
        let mut at = 0;
        for r in &l.layout.regions {
            assert_eq!(r.offset, at, "contiguous");
            assert!(r.len > 0);
            at = r.end();
        }
        assert_eq!(at, bytes.len() as u64, "covers the file");
        if let Ok(h) = Header::parse(bytes) {
            let mut s = String::new();
            let _ = dump::write_dump(&mut s, &h, bytes, dump::DumpHeader::Dtd, &|_| String::new());
            let _ = info::write_info(&mut s, &info::info(&h, "x"));
            for cf in Cf::ALL {
                if let Ok(p) = fetch::plan(&h, cf, h.last_up() - 86400, h.last_up(), 1) {
                    let _ = fetch::values(&h, &p, bytes);
                }
            }
            let mut owned = h.into_owned();
            let mut rows = update::MemRows(bytes.to_vec());
            if let Ok(mut u) = update::Updater::new(&mut owned, &mut rows, &rpn::NoMath, 0) {
                let tmpl = update::Template::default_for(u.header());
                let clock = update::Clock { now: (0, 0), at_time: &|_| Err(String::new()) };
                for k in 1..4 {
                    let t = u.header().last_up() + 977 * k;
                    let arg =
                        alloc::format!("{t}:{}", alloc::vec!["5"; tmpl.slots.len()].join(":"));
                    if let Ok(s) = update::parse_sample(u.header(), &tmpl, &arg, &clock) {
                        let _ = u.apply(&s);
                    }
                }
                let _ = u.finish();
            }
        }
    }

    proptest! {
        #[test]
        fn flips_and_cuts_never_panic(
            which in 0usize..3,
            flips in proptest::collection::vec((0usize..1 << 16, 1u8..=255), 0..8),
            keep in 0usize..1 << 16,
        ) {
            let base = [GAUGE, HW, COMPUTE][which];
            let mut b = base.to_vec();
            for &(pos, mask) in &flips {
                let n = b.len();
                b[pos % n] ^= mask;
            }
            let mut cut = b.clone();
            cut.truncate(keep % (base.len() + 1));
            exercise(&b);
            exercise(&cut);
        }
    }
}

#[cfg(test)]
mod corpus {
    //! The update engine replays each corpus spec on its `.empty.rrd` and
    //! must give rrdtool's `.rrd` byte for byte (one `rrdtool update` per
    //! spec line, as the corpus was made; the seed as one call).

    use alloc::string::String;
    use alloc::vec::Vec;

    use super::*;

    /// Apply `calls` (each a list of arguments) to `empty`.
    pub(super) fn replay(empty: &[u8], calls: &[Vec<&str>]) -> Vec<u8> {
        let mut file = empty.to_vec();
        for args in calls {
            let h = Header::parse(&file[..]).expect("header").into_owned();
            let mut h = h;
            let mut rows = update::MemRows(file.clone());
            {
                let mut u =
                    update::Updater::new(&mut h, &mut rows, &rpn::NoMath, 0).expect("engine");
                let tmpl = update::Template::default_for(u.header());
                let clock = update::Clock { now: (0, 0), at_time: &|_| Err(String::new()) };
                for a in args {
                    let s = update::parse_sample(u.header(), &tmpl, a, &clock).expect("parse");
                    u.apply(&s).expect("apply");
                }
                u.finish().expect("smooth");
            }
            file = rows.0;
            let hl = h.bytes().len();
            file[..hl].copy_from_slice(h.bytes());
        }
        file
    }

    fn check(name: &str, empty: &[u8], spec: &str, want: &[u8]) {
        let calls: Vec<Vec<&str>> =
            spec.lines().filter(|l| !l.is_empty()).map(|l| alloc::vec![l]).collect();
        let got = replay(empty, &calls);
        if got != want {
            let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            panic!("{name}: first differing byte at {first} of {}", want.len());
        }
    }

    macro_rules! shape {
        ($t:ident, $n:literal) => {
            #[test]
            fn $t() {
                check(
                    $n,
                    include_bytes!(concat!("../../../testdata/rrd/", $n, ".empty.rrd")),
                    include_str!(concat!("../../../testdata/rrd/", $n, ".updates.txt")),
                    include_bytes!(concat!("../../../testdata/rrd/", $n, ".rrd")),
                );
            }
        };
    }

    shape!(gauge, "gauge");
    shape!(counter, "counter");
    shape!(mixed, "mixed");
    shape!(dtypes, "dtypes");
    shape!(compute, "compute");
    shape!(hw, "hw");
    shape!(mhw, "mhw");

    #[test]
    fn seed_as_one_call() {
        let spec = include_str!("../../../testdata/rrd/seed.updates.txt");
        let args: Vec<&str> = spec.lines().filter(|l| !l.is_empty()).collect();
        let got = replay(include_bytes!("../../../testdata/rrd/seed.empty.rrd"), &[args]);
        assert!(got[..] == include_bytes!("../../../testdata/rrd/seed.rrd")[..], "seed differs");
    }
}

#[cfg(test)]
mod texts {
    //! dump and fetch of the corpus files print what rrdtool printed
    //! (TZ=UTC).

    use alloc::string::String;

    use super::*;

    /// `strftime("%Y-%m-%d %H:%M:%S UTC")` of `t` (days to civil date).
    pub(super) fn utc(t: i64) -> String {
        let days = t.div_euclid(86400);
        let secs = t.rem_euclid(86400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        alloc::format!(
            "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
            secs / 3600,
            secs % 3600 / 60,
            secs % 60
        )
    }

    fn dump_of(file: &[u8]) -> String {
        let h = Header::parse(file).expect("header");
        let mut s = String::new();
        dump::write_dump(&mut s, &h, file, dump::DumpHeader::Dtd, &utc).expect("dump");
        s
    }

    fn same(what: &str, ours: &str, want: &str) {
        if ours != want {
            let line = ours.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(0);
            panic!(
                "{what}: line {}\nours: {:?}\nwant: {:?}",
                line + 1,
                ours.lines().nth(line),
                want.lines().nth(line)
            );
        }
    }

    macro_rules! shape {
        ($t:ident, $n:literal, $s:literal, $e:literal) => {
            #[test]
            fn $t() {
                let file = include_bytes!(concat!("../../../testdata/rrd/", $n, ".rrd"));
                same(
                    concat!($n, " dump"),
                    &dump_of(file),
                    include_str!(concat!("../../../testdata/rrd/", $n, ".dump.xml")),
                );
                let h = Header::parse(&file[..]).expect("header");
                let p = fetch::plan(&h, Cf::Average, $s, $e, 1).expect("plan");
                let v = fetch::values(&h, &p, &file[..]).expect("values");
                let mut s = String::new();
                fetch::write_fetch(&mut s, &h, &p, &v).expect("print");
                same(
                    concat!($n, " fetch"),
                    &s,
                    include_str!(concat!("../../../testdata/rrd/", $n, ".fetch-AVERAGE.txt")),
                );
            }
        };
    }

    shape!(gauge, "gauge", 1_600_000_142, 1_600_166_414);
    shape!(counter, "counter", 1_600_000_426, 1_600_165_332);
    shape!(mixed, "mixed", 1_600_000_366, 1_600_166_112);
    shape!(hw, "hw", 1_600_000_526, 1_600_166_100);
    shape!(compute, "compute", 1_600_000_510, 1_600_161_612);
    shape!(dtypes, "dtypes", 1_600_000_186, 1_600_166_400);
    shape!(mhw, "mhw", 1_600_000_150, 1_600_168_341);
    shape!(seed, "seed", 962_582_400, 963_273_600);
}
