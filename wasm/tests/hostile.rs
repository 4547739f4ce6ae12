//! The hostile-file table (`mapwise_testkit::hostile`) through the
//! browser viewer's exports, called natively on the same
//! `Viewer` the wasm bindings wrap (a bindings error is the same text in
//! a `JsError`): open, summary, the map, every page's cell and detail,
//! hex, every bucket or archive with its first keys or rows, the revlog
//! entries. No case may panic or take long; a failure names the place.

use std::path::Path;
use std::time::{Duration, Instant};

use mapwise_testkit::hostile as cases;
use mapwise_wasm::view::Viewer;

#[test]
fn hostile_files_through_the_viewer() {
    const PER_CASE: Duration = Duration::from_secs(10);
    // Pages whose detail is decoded per case: the cases are small files,
    // this bounds the odd one that claims many pages.
    const PAGES: u64 = 256;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace");
    let all = cases::cases(root, false);
    let started = Instant::now();
    let mut fails = Vec::new();
    let (mut refused, mut fatal, mut with_problems) = (0, 0, 0);
    for c in &all {
        let t0 = Instant::now();
        let place = |fails: &mut Vec<String>, what: &str, msg: &str| {
            if !cases::names_a_place(msg) {
                fails.push(format!("{}: {what} without a place: {msg}", c.name));
            }
        };
        let v = match Viewer::open(c.bytes.as_slice(), "case") {
            Ok(v) => v,
            Err(e) => {
                refused += 1;
                place(&mut fails, "open refused", &e);
                continue;
            }
        };
        let s = v.summary();
        if let Some(f) = &s.fatal {
            fatal += 1;
            place(&mut fails, "fatal", f);
        }
        if s.problem_count > 0 {
            with_problems += 1;
            for p in &s.problems {
                place(&mut fails, "problem", p);
            }
        }
        let pages = v.pages().min(PAGES);
        let cells = u32::try_from(pages).unwrap_or(0);
        if v.map(0, 1, cells).len() != usize::try_from(pages).unwrap_or(0) {
            fails.push(format!("{}: map of {pages} cells has another length", c.name));
        }
        for p in 0..pages {
            let _ = v.cell(p, 1);
            let _ = v.page(p);
        }
        if let Err(e) = v.hex(0, 64 * 1024) {
            place(&mut fails, "hex", &e);
        }
        let mut parents = vec![None];
        let mut groups = 0;
        while let Some(parent) = parents.pop() {
            for g in v.children(parent, 0, 1000).items {
                groups += 1;
                if groups > 10_000 {
                    fails.push(format!("{}: more than 10 000 groups", c.name));
                    parents.clear();
                    break;
                }
                if s.format == "bolt"
                    && let Err(e) = v.keys(g.index, None, 100)
                {
                    place(&mut fails, "keys", &e);
                }
                parents.push(Some(g.index));
            }
        }
        if let Some(r) = &s.facts.revlog {
            let last = i64::try_from(r.revisions).unwrap_or(i64::MAX) - 1;
            for (from, newest_first) in [(last, true), (0, false)] {
                if let Err(e) = v.entries(from, 100, newest_first) {
                    place(&mut fails, "entries", &e);
                }
            }
        }
        if let Some(r) = &s.facts.rrd {
            for i in 0..r.rras.len() {
                if let Err(e) = v.rra_rows(u32::try_from(i).unwrap_or(u32::MAX), 0, 100) {
                    place(&mut fails, "rra rows", &e);
                }
            }
        }
        if t0.elapsed() > PER_CASE {
            fails.push(format!(
                "{}: took {:.1} s in the viewer",
                c.name,
                t0.elapsed().as_secs_f64()
            ));
        }
    }
    eprintln!(
        "hostile files through the viewer: {} cases ({refused} refused at open, {fatal} fatal, \
         {with_problems} with problems) in {:.1} s",
        all.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        refused + fatal + with_problems > 0,
        "no case was found damaged: the table lost its teeth"
    );
    cases::assert_no_failures("hostile files through the viewer", &fails);
}
