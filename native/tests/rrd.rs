//! `mapwise_native::engine::rrd` on the corpus rrdtool made: headers and
//! layouts against the rrd peer's independent decoder, the watcher's layout
//! of an RRD, and the pages an update plans against the pages it writes (a
//! kept handle included). The `mapwise rrd` command line is tested against
//! rrdtool in `cli/tests/rrd.rs`.

// Offsets and counts of small test files are cast freely.
#![expect(clippy::cast_possible_truncation)]

use std::path::Path;

use mapwise_core::detect::detect;
use mapwise_core::layout::{Format, Kind};
use mapwise_core::rrd::{Header, layout};
use mapwise_native::engine::rrd::IoMode;
use mapwise_testkit::assert_same_bytes;
use mapwise_testkit::rrd::{SHAPES, apply, gunzip, spec};
use serde_json::Value;

use crate::support::{rrd_oracle_out, rrd_testdata, tempdir};

fn files() -> Vec<String> {
    let mut v = Vec::new();
    for (name, _, _) in SHAPES {
        v.push(format!("{name}.empty.rrd"));
        v.push(format!("{name}.rrd"));
    }
    v
}

/// Our header and layout give the offsets, counts and state the rrd peer's
/// own decoder (`peers/rrd/peer header`, written independently in Python)
/// reads from every corpus file.
#[test]
fn headers_and_layouts_match_the_oracles_decoder() {
    for f in files() {
        let path = rrd_testdata(&f);
        let bytes = std::fs::read(&path).expect("read");
        let j: Value =
            serde_json::from_slice(&rrd_oracle_out(&["header", path.to_str().expect("utf-8")]))
                .expect("oracle JSON");
        let h = Header::parse(&bytes[..]).unwrap_or_else(|e| panic!("{f}: {e}"));
        let g = h.geometry();
        let off = |k: &str| j["offsets"][k].as_u64().unwrap_or(u64::MAX);
        assert_eq!(
            [g.ds_def, g.rra_def, g.live_head, g.pdp_prep, g.cdp_prep, g.rra_ptr, g.header_len],
            [
                off("ds_def"),
                off("rra_def"),
                off("live_head"),
                off("pdp_prep"),
                off("cdp_prep"),
                off("rra_ptr"),
                off("values")
            ],
            "{f}: offsets"
        );
        assert_eq!(Some(g.file_len), j["expected_size"].as_u64(), "{f}: size");
        assert_eq!(Some(h.version_str()), j["stat_head"]["version"].as_str(), "{f}");
        assert_eq!(Some(h.last_up()), j["live_head"]["last_up"].as_i64(), "{f}");
        assert_eq!(Some(h.last_up_usec()), j["live_head"]["last_up_usec"].as_i64(), "{f}");
        for (i, d) in h.dss().iter().enumerate() {
            let o = &j["ds"][i];
            assert_eq!(Some(d.name.as_str()), o["name"].as_str(), "{f} ds {i}");
            assert_eq!(Some(d.kind.name()), o["type"].as_str(), "{f} ds {i}");
            assert_eq!(
                Some(String::from_utf8_lossy(h.last_ds(i)).as_ref()),
                o["pdp_prep"]["last_ds"].as_str(),
                "{f} ds {i}"
            );
            assert_eq!(
                Some(h.pdp_unknown_sec(i)),
                o["pdp_prep"]["unknown_sec"].as_u64(),
                "{f} ds {i}"
            );
        }
        let l = layout(&bytes[..], 4096);
        assert!(l.fatal.is_none() && l.layout.problems.is_empty(), "{f}: {:?}", l.fatal);
        for (i, r) in h.rras().iter().enumerate() {
            let o = &j["rra"][i];
            assert_eq!(Some(r.cf.name()), o["cf"].as_str(), "{f} rra {i}");
            assert_eq!(Some(r.rows), o["row_cnt"].as_u64(), "{f} rra {i}");
            assert_eq!(Some(r.pdp_cnt), o["pdp_cnt"].as_u64(), "{f} rra {i}");
            assert_eq!(Some(h.cur_row(i)), o["cur_row"].as_u64(), "{f} rra {i}");
            let area = &l.rras[i];
            assert_eq!((area.cur_row, area.rows), (h.cur_row(i), r.rows));
            // The cur_row region sits where the row pointer says.
            let cur = l
                .layout
                .regions
                .iter()
                .find(|x| x.kind == Kind::CurRow && x.group == Some(i as u32))
                .expect("cur_row region");
            assert_eq!(cur.offset, h.row_offset(i, h.cur_row(i)), "{f} rra {i}");
            assert!(
                l.hot.iter().any(|&(o, n)| o <= cur.offset && cur.offset < o + n),
                "{f} rra {i}: the current row is hot"
            );
        }
        let names: Vec<&str> = l.sections.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["stat_head", "ds_def", "rra_def", "live_head", "pdp_prep", "cdp_prep", "rra_ptr"]
        );
        let mut at = 0;
        for r in &l.layout.regions {
            assert_eq!(r.offset, at, "{f}: contiguous regions");
            at = r.end();
        }
        assert_eq!(at, bytes.len() as u64, "{f}: the layout covers the file");
        assert_eq!(l.hot.first().map(|h| h.0), Some(0), "{f}: the header is hot");
        assert_eq!(detect(&bytes[..]), Format::Rrd);
    }
}

/// The inspector's engine reads an RRD as an RRD: its layout, no error.
#[test]
fn watch_reads_an_rrd_layout() {
    let snap =
        mapwise_native::observe::watch::read_snapshot(&rrd_testdata("hw.rrd"), Default::default())
            .expect("snapshot");
    assert_eq!(snap.format, Format::Rrd);
    assert!(snap.error.is_none(), "{:?}", snap.error);
    assert!(snap.layout.regions.iter().any(|r| r.kind == Kind::CurRow));
    let _ = Path::new("");
}

/// The pages `call_hot_ranges` plans for a call are exactly the pages of
/// the rows the call writes (told apart by how far each `cur_row` moved,
/// plus the row SEASONAL/DEVSEASONAL look up), and updates through a kept
/// `Rrd` handle give the same bytes as one open per call.
#[test]
fn planned_pages_are_the_rows_written_and_a_kept_handle_matches() {
    use mapwise_core::rrd::{Cf, call_hot_ranges};
    use mapwise_native::engine::rrd::{Rrd, UpdateOptions};
    use std::collections::BTreeSet;
    let dir = tempdir();
    let d = dir.path();
    let page = 4096u64;
    for name in ["big", "hw", "mixed", "gauge"] {
        let a = d.join(format!("{name}-a.rrd"));
        let b = d.join(format!("{name}-b.rrd"));
        let gz = rrd_testdata(&format!("{name}.empty.rrd.gz"));
        if gz.exists() {
            gunzip(&gz, &a);
        } else {
            std::fs::copy(rrd_testdata(&format!("{name}.empty.rrd")), &a).expect("copy");
        }
        std::fs::copy(&a, &b).expect("copy");
        let lines = spec(name);
        apply(&a, &lines, IoMode::Fd);
        let len = std::fs::metadata(&b).expect("len").len();
        let mut h = Rrd::open(&b, IoMode::Mmap).expect("open");
        let o = UpdateOptions::default();
        let mut hot = Vec::new();
        for l in &lines {
            let t = l.split(':').next().and_then(|s| s.parse::<f64>().ok()).expect("time").floor()
                as i64;
            let hd = h.header();
            let before: Vec<u64> = (0..hd.rra_cnt()).map(|i| hd.cur_row(i)).collect();
            call_hot_ranges(hd, Some(t), false, page, len, &mut hot);
            let full =
                (0..hd.rra_cnt()).any(|i| mapwise_core::rrd::rows_due(hd, i, t) >= hd.rra(i).rows);
            let out = h.update(&o, std::slice::from_ref(l)).expect("update");
            assert!(out.error.is_none(), "{name}: {l}: {:?}", out.error);
            if full {
                continue;
            }
            let hd = h.header();
            let mut want = BTreeSet::new();
            for (i, &b0) in before.iter().enumerate() {
                let r = hd.rra(i);
                let mut n = (hd.cur_row(i) + r.rows - b0) % r.rows;
                if n > 0 && matches!(r.cf, Cf::Seasonal | Cf::DevSeasonal) {
                    n += 1;
                }
                for k in 1..=n {
                    let row = (b0 + k) % r.rows;
                    let off = hd.row_offset(i, row);
                    for p in off / page..=(off + hd.geometry().row_len() - 1) / page {
                        want.insert(p);
                    }
                }
            }
            let got: BTreeSet<u64> =
                hot.iter().flat_map(|&(o, n)| o / page..(o + n).div_ceil(page)).collect();
            assert_eq!(got, want, "{name}: {l}: planned pages vs rows written");
        }
        h.close().expect("close");
        assert_same_bytes(
            &format!("{name} through a kept handle"),
            &std::fs::read(&b).expect("read"),
            &std::fs::read(&a).expect("read"),
        );
    }
}
