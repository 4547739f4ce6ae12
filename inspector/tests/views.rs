//! Every view drawn into a `TestBackend`: insta snapshots of the text, and
//! buffer assertions where colour carries meaning (page kinds, residency,
//! selection).

use std::fs;

use mapwise_core::layout::Kind;
use mapwise_inspector::app::{App, Focus, Overlay};
use mapwise_inspector::event::Action;
use mapwise_inspector::ui::{self, kind_color};
use mapwise_native::os::residency::{Trust, UnknownReason};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use crate::common::{app, draw, fixed, fixed_with, testdata, tmpdir};

/// Escape `s` for use as a literal in an insta filter (a regex).
fn literal(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Snapshot a drawn terminal, with temporary and corpus paths filtered.
fn snap(name: &str, t: &Terminal<TestBackend>) {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&literal(env!("CARGO_TARGET_TMPDIR")), "[TMP]");
    settings.add_filter(&literal(env!("CARGO_MANIFEST_DIR")), "[CRATE]");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, t.backend()));
}

/// The symbol and colours of the map cell holding `page`.
fn cell_at(app: &App, t: &Terminal<TestBackend>, page: u64) -> (String, Color, Color) {
    let pos = app.cell_position(page).expect("page on screen");
    let c = &t.backend().buffer()[(pos.x, pos.y)];
    (c.symbol().to_string(), c.fg, c.bg)
}

fn press(app: &mut App, target: &mut crate::fixed::Fixed, actions: &[Action]) {
    for a in actions {
        app.update(*a, target);
        app.fetch_details(target);
    }
}

#[test]
fn small_db_map_tree_detail() {
    let mut target = fixed(&testdata("small.db"));
    let mut app = app("small.db", &target, 120, 40);
    // Tree: (root), alpha, beta → expand beta, go to its leaf run (page 5).
    press(
        &mut app,
        &mut target,
        &[Action::FocusNext, Action::Down, Action::Down, Action::Enter, Action::Down],
    );
    assert_eq!(app.focus(), Focus::Tree);
    assert_eq!(app.selected(), 5, "the tree selects the run's page in the map");
    let t = draw(&app);
    snap("small_db_map_tree_detail", &t);

    // Kinds are coloured; residency is the glyph (even OS pages resident).
    let meta = kind_color(Kind::Meta);
    assert_eq!(cell_at(&app, &t, 0), ("█".into(), meta, Color::Reset));
    assert_eq!(cell_at(&app, &t, 1), ("░".into(), meta, Color::Reset));
    let leaf = kind_color(Kind::Leaf);
    assert_eq!(cell_at(&app, &t, 4), ("█".into(), leaf, Color::Reset));
    assert_eq!(cell_at(&app, &t, 6), ("█".into(), leaf, Color::Reset));
    let freelist = kind_color(Kind::Freelist);
    assert_eq!(cell_at(&app, &t, 11), ("░".into(), freelist, Color::Reset));
    let pending = kind_color(Kind::Pending);
    assert_eq!(cell_at(&app, &t, 2), ("█".into(), pending, Color::Reset));
    assert_eq!(cell_at(&app, &t, 3), ("░".into(), pending, Color::Reset));
    let unused = kind_color(Kind::Unused);
    assert_eq!(cell_at(&app, &t, 12), ("█".into(), unused, Color::Reset));
    // The selection: black on the kind's colour, a hollow circle because
    // page 5 (odd) is not resident.
    assert_eq!(cell_at(&app, &t, 5), ("○".into(), Color::Black, leaf));
    // Cells are two characters wide for a file this small.
    let pos = app.cell_position(0).unwrap();
    let next = &t.backend().buffer()[(pos.x + 1, pos.y)];
    assert_eq!((next.symbol(), next.fg), ("█", meta));

    // The kinds' colours are pairwise distinct.
    for (i, a) in Kind::ALL.iter().enumerate() {
        for b in Kind::ALL.iter().skip(i + 1) {
            assert_ne!(kind_color(*a), kind_color(*b), "{a:?} vs {b:?}");
        }
    }
}

#[test]
fn etcd_small_map_tree_detail() {
    let mut target = fixed(&testdata("etcd-small.db"));
    let mut app = app("etcd-small.db", &target, 120, 40);
    // End selects the last page (54, the root leaf); Left the branch 53;
    // Enter shows it in the tree, expanding the `key` bucket.
    press(&mut app, &mut target, &[Action::End, Action::Left, Action::Enter]);
    assert_eq!(app.selected(), 53);
    assert_eq!(app.focus(), Focus::Tree);
    let t = draw(&app);
    snap("etcd_small_map_tree_detail", &t);
    let branch = kind_color(Kind::Branch);
    assert_eq!(cell_at(&app, &t, 53), ("○".into(), Color::Black, branch));
    let free = kind_color(Kind::Free);
    assert_eq!(cell_at(&app, &t, 2), ("█".into(), free, Color::Reset));
    let text = format!("{}", t.backend());
    assert!(text.contains("▾ key 1000 keys"), "{text}");
    // The run rows show key ranges, decoded lazily: in etcd's `key`
    // bucket as revisions (page 3 holds keys 0x…18_0 to 0x…2d_0).
    assert!(text.contains("L 3  d2 22it 88% rev 24_0..45_0"), "{text}");
}

/// The key bucket's records of a dump by Go bbolt (`kv 6b6579 KEY VALUE`,
/// hex): revision key → value.
fn dumped_key_records(dump: &str) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    let unhex = |h: &str| mapwise_view::fmt::unhex(h).expect("dump hex");
    dump.lines()
        .filter_map(|l| l.strip_prefix("kv 6b6579 "))
        .map(|kv| kv.split_once(' ').expect("key and value"))
        .map(|(k, v)| (unhex(k), unhex(v)))
        .collect()
}

#[test]
fn etcd_records_are_decoded_in_the_detail_pane() {
    // The peers: Go bbolt's dump gives each record's bytes, and prost (not
    // mapwise's own wire walker) decodes them as `mvccpb.KeyValue`.
    use mapwise_core::etcd::prost::Message as _;
    use mapwise_core::etcd::{KeyValue, RevisionKey};
    let dumped = dumped_key_records(&fs::read_to_string(testdata("etcd-small.dump.txt")).unwrap());
    assert_eq!(dumped.len(), 1000);
    let mut target = fixed(&testdata("etcd-small.db"));
    let mut app = app("etcd-small.db", &target, 120, 40);
    // Page 3 is a leaf of the `key` bucket (its tree row in the snapshot above).
    press(&mut app, &mut target, &[Action::Right, Action::Right, Action::Right]);
    assert_eq!(app.selected(), 3);
    let lines: Vec<String> = app.detail_lines().iter().map(|l| l.text()).collect();
    let count = lines.iter().find_map(|l| l.strip_prefix("count ")).expect("page header");
    let count: usize = count.split(' ').next().unwrap().parse().unwrap();
    let titles: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].starts_with("rev ")).collect();
    assert_eq!(titles.len(), count, "one record per element: {lines:#?}");
    let (mut prev, mut seen) = (None, 0);
    for (raw, value) in &dumped {
        let rev = RevisionKey::parse(raw).unwrap();
        let title = format!("rev {}", rev.revision);
        let Some(&at) = titles.iter().find(|&&i| lines[i] == title) else { continue };
        assert!(prev.is_none_or(|p| p < at), "records in key order");
        prev = Some(at);
        seen += 1;
        let kv = KeyValue::decode(value.as_slice()).unwrap();
        let quoted = |b: &[u8]| format!("\"{}\"", String::from_utf8(b.to_vec()).unwrap());
        let want = [
            ("key", quoted(&kv.key)),
            ("create_revision", kv.create_revision.to_string()),
            ("mod_revision", kv.mod_revision.to_string()),
            ("version", kv.version.to_string()),
            ("lease", "none".into()),
            ("value", format!("{} ({} bytes)", quoted(&kv.value), kv.value.len())),
        ];
        assert_eq!(kv.lease, 0);
        for (i, (name, v)) in want.iter().enumerate() {
            assert_eq!(lines[at + 1 + i], format!("  {name:<15}  {v}"), "{title}");
        }
    }
    assert_eq!(seen, count, "every record shown is one Go bbolt dumps");
}

#[test]
fn etcd_prefix_pane_marks_a_prefix_on_the_map() {
    let dumped = dumped_key_records(&fs::read_to_string(testdata("etcd-small.dump.txt")).unwrap());
    let mut target = fixed(&testdata("etcd-small.db"));
    let mut app = app("etcd-small.db", &target, 120, 40);
    press(&mut app, &mut target, &[Action::Prefixes]);
    assert!(app.prefixes_open());
    assert_eq!(app.focus(), Focus::Tree);
    app.poll_prefixes(&mut target);
    let rows = app.prefix_rows().expect("counted").expect("an etcd db");
    // etcd-gen writes one revision of each of its keys, `/oracle/key-NNNNNN`
    // (two segments: each key is its own prefix at depth 2).
    assert_eq!(rows.len(), dumped.len());
    assert_eq!(rows.iter().map(|p| p.revisions).sum::<u64>(), dumped.len() as u64);
    // The second row: its bytes are its record's, as Go bbolt dumps it.
    press(&mut app, &mut target, &[Action::Down]);
    let p = app.marked_prefix().expect("a prefix under the cursor").clone();
    let (raw, value) = dumped
        .iter()
        .find(|(_, v)| {
            let kv = <mapwise_core::etcd::KeyValue as mapwise_core::etcd::prost::Message>::decode(
                v.as_slice(),
            )
            .unwrap();
            kv.key == p.prefix.as_bytes()
        })
        .expect("the prefix's record in the dump");
    assert_eq!(p.live_bytes, (raw.len() + value.len()) as u64);
    assert_eq!(p.pages.len(), 1, "one record, one leaf");
    // Enter selects its page on the map, which is marked, and whose
    // decoded records hold the key.
    press(&mut app, &mut target, &[Action::Enter]);
    assert_eq!(app.selected(), p.pages[0]);
    assert!(app.is_marked(p.pages[0], 1));
    assert!(!app.is_marked(0, p.pages[0]), "no page before it is marked");
    let key = format!("\"{}\"", p.prefix);
    assert!(app.detail_lines().iter().any(|l| l.text().ends_with(&key)), "{key}");
    let t = draw(&app);
    let text = format!("{}", t.backend());
    assert!(text.contains("etcd key prefixes · 1000"), "{text}");
    assert!(text.contains(&format!("■ {}", p.prefix)), "the legend names it: {text}");
    // p again: the tree is back and nothing is marked.
    press(&mut app, &mut target, &[Action::Prefixes]);
    assert!(!app.prefixes_open());
    assert!(!app.is_marked(p.pages[0], 1));
}

#[test]
fn prefix_pane_is_for_etcd_only() {
    let mut target = fixed(&testdata("small.db"));
    let mut app = app("small.db", &target, 120, 40);
    press(&mut app, &mut target, &[Action::Prefixes]);
    assert!(!app.prefixes_open());
    assert!(app.message().unwrap().text.contains("not one"));
}

#[test]
fn etcd_small_80x24() {
    let target = fixed(&testdata("etcd-small.db"));
    let app = app("etcd-small.db", &target, 80, 24);
    let t = draw(&app);
    snap("etcd_small_80x24", &t);
    let meta = kind_color(Kind::Meta);
    assert_eq!(cell_at(&app, &t, 0), ("●".into(), Color::Black, meta));
    assert_eq!(cell_at(&app, &t, 1), ("░".into(), meta, Color::Reset));
}

#[test]
fn help_overlay() {
    let mut target = fixed(&testdata("etcd-small.db"));
    let mut app = app("etcd-small.db", &target, 80, 24);
    press(&mut app, &mut target, &[Action::Help]);
    assert_eq!(app.overlay(), Overlay::Help);
    let t = draw(&app);
    snap("help_overlay", &t);
    let text = format!("{}", t.backend());
    for key in [
        "q  Ctrl-C",
        "Esc",
        "Tab",
        "hjkl",
        "PgUp",
        "Home",
        "Enter",
        "+  -",
        "evict",
        "lock",
        "refresh",
        "?  F1",
    ] {
        assert!(text.contains(key), "help lacks {key}");
    }
}

#[test]
fn evict_prompt() {
    let mut target = fixed(&testdata("etcd-small.db"));
    let mut app = app("/data/etcd/member/snap/db", &target, 80, 24);
    press(&mut app, &mut target, &[Action::Evict]);
    assert_eq!(app.overlay(), Overlay::ConfirmEvict);
    let t = draw(&app);
    snap("evict_prompt", &t);
    let text = format!("{}", t.backend());
    assert!(text.contains("evict /data/etcd/member/snap/db from the page cache? (y/n)"), "{text}");
    assert!(!text.contains("it is unlocked first"), "{text}");
    // With the file locked (L), the prompt says the lock goes first.
    press(&mut app, &mut target, &[Action::No, Action::Lock, Action::Evict]);
    assert_eq!(app.overlay(), Overlay::ConfirmEvict);
    let text = format!("{}", draw(&app).backend());
    assert!(text.contains("the file is locked in memory (L): it is unlocked first"), "{text}");
}

#[test]
fn residency_unknown() {
    let path = testdata("small.db");
    let mut target = fixed_with(&path, Trust::Unknown(UnknownReason::CachestatDenied));
    // The kernel lies to a process that may not see the truth: it says
    // every page is resident.
    if let Some(r) = &mut target.residency {
        for w in &mut r.bitmap {
            *w = u64::MAX >> (64 - r.total_pages.min(64));
        }
        r.resident_pages = r.total_pages;
    }
    let app = app("small.db", &target, 80, 24);
    let t = draw(&app);
    snap("residency_unknown", &t);
    for page in 0..16 {
        let (sym, _, _) = cell_at(&app, &t, page);
        assert_eq!(sym, "?", "page {page} must be drawn as unknown");
    }
    let text = format!("{}", t.backend());
    assert!(text.contains("residency unknown: the kernel refused cachestat(2)"), "{text}");
    assert!(text.contains("?/16 pages (unknown)"), "{text}");
    assert!(!text.contains("100%"), "unknown residency must never read as 100%");
}

#[test]
fn structure_unreadable() {
    let dir = tmpdir();
    let path = dir.path().join("corrupt.db");
    let mut bytes = fs::read(testdata("small.db")).unwrap();
    // Flip a byte of each meta page's checksummed fields (the root page id).
    bytes[16 + 16] ^= 0xff;
    bytes[4096 + 16 + 16] ^= 0xff;
    fs::write(&path, &bytes).unwrap();
    let target = fixed(&path);
    assert!(target.snapshot.error.is_some());
    let app = app("corrupt.db", &target, 80, 24);
    let t = draw(&app);
    snap("structure_unreadable", &t);
    let text = format!("{}", t.backend());
    assert!(text.contains("structure: "), "{text}");
    assert!(text.contains("structure unreadable"), "{text}");
}

#[test]
fn too_small_terminal() {
    let target = fixed(&testdata("small.db"));
    let app = app("small.db", &target, 30, 8);
    let t = draw(&app);
    assert!(format!("{}", t.backend()).contains("terminal too small"));
    // And every size from tiny to large draws without panicking.
    for (w, h) in [(1, 1), (40, 12), (41, 13), (80, 24), (200, 60), (300, 100)] {
        let target = fixed(&testdata("etcd-small.db"));
        let mut a = app_sized(&target, w, h);
        draw(&a);
        for act in [Action::ZoomIn, Action::End, Action::ZoomOut, Action::FocusNext, Action::End] {
            let mut t = target.clone();
            a.update(act, &mut t);
            let area = a.area();
            let mut term = Terminal::new(TestBackend::new(area.width, area.height)).unwrap();
            term.draw(|f| ui::draw(f, &a)).unwrap();
        }
    }
}

fn app_sized(target: &crate::fixed::Fixed, w: u16, h: u16) -> App {
    app("etcd-small.db", target, w, h)
}

fn revlog_testdata(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/revlog").join(name)
}

#[test]
fn revlog_index_map_and_entries() {
    let mut target = fixed(&revlog_testdata("00changelog.i"));
    let mut app = app("00changelog.i", &target, 120, 36);
    press(&mut app, &mut target, &[Action::Right, Action::Right]);
    let t = draw(&app);
    snap("revlog_changelog_page2", &t);
    // A page of an inline index holds entries and data chunks; its cell
    // is coloured as the kind with most bytes there, one of the two.
    let kind = app.cell(0).expect("cell 0").kind;
    assert!(matches!(kind, Kind::Entry | Kind::Chunk), "{kind:?}");
    let (_, fg, _) = cell_at(&app, &t, 0);
    assert_eq!(fg, kind_color(kind));
}

/// The structure pane of a revlog lists the entries of the selected page
/// (`l l l`, Enter: page 3): the revisions whose 64-byte entries overlap
/// it, placed where hg's `debugindex --debug` puts them (an inline
/// entry sits at `64 * rev + data-offset`).
#[test]
fn revlog_structure_lists_the_selected_pages_entries() {
    let path = revlog_testdata("00changelog.i");
    let mut target = fixed(&path);
    let mut app = app("00changelog.i", &target, 120, 60);
    press(&mut app, &mut target, &[Action::Right, Action::Right, Action::Right, Action::Enter]);
    assert_eq!(app.selected(), 3);
    let hg = fs::read_to_string(revlog_testdata("00changelog.i.debugindex-full.txt")).unwrap();
    let (start, end) = (3 * 4096u64, 4 * 4096u64);
    let revs: Vec<(u64, u64)> = hg
        .lines()
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let rev: u64 = w.first()?.parse().ok()?;
            let data_offset: u64 = w.get(12)?.parse().ok()?;
            Some((rev, 64 * rev + data_offset))
        })
        .filter(|&(_, at)| at < end && at + 64 > start)
        .collect();
    assert!(!revs.is_empty());
    let t = draw(&app);
    let text: String = t
        .backend()
        .buffer()
        .content()
        .chunks(120)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>() + "\n")
        .collect();
    let (first, last) = (revs[0].0, revs[revs.len() - 1].0);
    assert!(
        text.contains(&format!("page 3: revs {first}–{last} ({} entries)", revs.len())),
        "{text}"
    );
    // As many as the pane holds, from the first; the rest are counted.
    for (rev, at) in revs.iter().take(15) {
        assert!(text.contains(&format!(" rev {rev} @{at}")), "rev {rev} at {at}: {text}");
    }
    assert!(!text.contains("select a page on the map"), "{text}");
}

/// Every entry the detail pane shows for an index, page by page, carries
/// the fields hg's `debugindex --debug` prints for that revision.
#[test]
fn revlog_entries_described_as_hg_prints_them() {
    use mapwise_inspector::app::Target;
    let path = revlog_testdata("00changelog.i");
    let target = fixed(&path);
    let hg = fs::read_to_string(revlog_testdata("00changelog.i.debugindex-full.txt")).unwrap();
    let rows: Vec<Vec<&str>> = hg.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    let len = fs::metadata(&path).unwrap().len();
    let mut seen = 0;
    for page in 0..len.div_ceil(4096) {
        for item in target.describe(page * 4096, 4096).unwrap() {
            let Some(rev) = item.title.strip_prefix("rev ").and_then(|r| r.parse::<usize>().ok())
            else {
                continue;
            };
            let field = |name: &str| {
                item.fields
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.split_whitespace().next().unwrap_or("").to_string())
                    .unwrap_or_default()
            };
            let row = &rows[rev];
            // rev rank linkrev nodeid p1-rev p1-node p2-rev p2-node full-size
            // delta-base flags comp-mode data-offset chunk-size ...
            assert_eq!(field("linkrev"), row[2], "rev {rev}");
            assert_eq!(field("nodeid"), row[3], "rev {rev}");
            assert_eq!(field("p1"), row[4], "rev {rev}");
            assert_eq!(field("p2"), row[6], "rev {rev}");
            assert_eq!(field("uncompressed"), row[8], "rev {rev}");
            assert_eq!(field("delta base"), row[9], "rev {rev}");
            assert_eq!(field("data offset"), row[12], "rev {rev}");
            assert_eq!(field("compressed"), row[13], "rev {rev}");
            seen += 1;
        }
    }
    // A page boundary can cut an entry: it is described on both pages.
    assert!(seen >= rows.len(), "{seen} entries described, hg lists {}", rows.len());
}

fn rrd_testdata(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/rrd").join(name)
}

#[test]
fn rrd_archives_and_current_rows() {
    let mut target = fixed(&rrd_testdata("gauge.rrd"));
    let mut app = app("gauge.rrd", &target, 120, 36);
    // Focus the structure pane: its first row is rra[0]; the map follows
    // to the page of its current row.
    press(&mut app, &mut target, &[Action::FocusNext, Action::Down, Action::Up]);
    let t = draw(&app);
    snap("rrd_gauge_rra0", &t);
    assert_eq!(app.focus(), Focus::Tree);
    // Every current row is drawn in its colour, though rows fill most of
    // its page (positions from `rrdtool info`, `header_size` and rows).
    crate::common::need(&[crate::common::Need::Rrdtool]);
    let info = std::process::Command::new("rrdtool")
        .arg("info")
        .arg(rrd_testdata("gauge.rrd"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let field = |k: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = ")))
            .and_then(|v| v.parse::<u64>().ok())
    };
    if let Some(header) = field("header_size") {
        let row = 2 * 8; // gauge.rrd: two data sources
        let mut at = header;
        for i in 0.. {
            let (Some(rows), Some(cur)) =
                (field(&format!("rra[{i}].rows")), field(&format!("rra[{i}].cur_row")))
            else {
                break;
            };
            let page = (at + cur * row) / 4096;
            assert_eq!(app.cell(page).map(|c| c.kind), Some(Kind::CurRow), "rra[{i}]");
            // (The selected cell swaps to the kind's colour as background.)
            let (_, fg, bg) = cell_at(&app, &t, page);
            assert!(
                fg == kind_color(Kind::CurRow) || bg == kind_color(Kind::CurRow),
                "rra[{i}]: {fg:?} on {bg:?}"
            );
            at += rows * row;
        }
        assert_eq!(app.cell(0).map(|c| c.kind), Some(Kind::Header));
    }
}

/// The current row of every archive, as the detail pane describes it,
/// holds the values rrdtool's own dump prints as that archive's newest
/// row (the dump lists rows oldest first).
#[test]
fn rrd_current_rows_hold_what_rrdtool_dumps() {
    use mapwise_inspector::app::Target;
    for name in ["gauge", "mixed", "hw"] {
        let path = rrd_testdata(&format!("{name}.rrd"));
        let target = fixed(&path);
        let dump = fs::read_to_string(rrd_testdata(&format!("{name}.dump.xml"))).unwrap();
        // The newest row of each archive: the last <row> before </database>.
        let newest: Vec<Vec<f64>> = dump
            .split("</database>")
            .filter(|part| part.contains("<row>"))
            .map(|part| {
                let row = part.rsplit("<row>").next().unwrap();
                row.split("<v>")
                    .skip(1)
                    .map(|v| {
                        let t = v.split("</v>").next().unwrap().trim();
                        if t == "NaN" { f64::NAN } else { t.parse().unwrap() }
                    })
                    .collect()
            })
            .collect();
        let layout = &target.snapshot.layout;
        let mut checked = 0;
        for r in layout.regions.iter().filter(|r| r.kind == Kind::CurRow) {
            let rra = r.group.unwrap() as usize;
            let items = target.describe(r.offset, r.len).unwrap();
            let item = items
                .iter()
                .find(|i| {
                    i.title.starts_with(&format!("rra[{rra}]")) && i.title.contains("cur_row")
                })
                .unwrap_or_else(|| panic!("{name} rra[{rra}]: {items:?}"));
            let (_, values) = &item.fields[0];
            let ours: Vec<f64> = values
                .split_whitespace()
                .map(|v| if v == "NaN" { f64::NAN } else { v.parse().unwrap() })
                .collect();
            assert_eq!(ours.len(), newest[rra].len(), "{name} rra[{rra}]");
            for (a, b) in ours.iter().zip(&newest[rra]) {
                // rrdtool dumps 10 significant digits.
                assert!(
                    (a.is_nan() && b.is_nan()) || (a - b).abs() <= b.abs() * 1e-9,
                    "{name} rra[{rra}]: ours {a} rrdtool {b}"
                );
            }
            checked += 1;
        }
        assert_eq!(checked, newest.len(), "{name}: every archive checked");
    }
}

#[test]
fn a_truncated_bolt_file_shows_its_lost_pages_past_the_end() {
    // `truncate -s 8192 copy.db` with the inspector open: the meta pages
    // still say hwm 55, root p54, so pages 2–54 are drawn past the end.
    use mapwise_core::bolt::WalkOptions;
    use mapwise_inspector::app::{Data, Residence};
    use mapwise_native::observe::watch::Watch;
    let dir = tmpdir();
    let path = crate::common::copy_to(dir.path(), "etcd-small.db");
    let mut watch = Watch::open(&path, WalkOptions::default()).expect("watch");
    let mut app =
        App::new("copy.db", Data::from_target(&watch), std::time::Duration::from_millis(500));
    app.resize(120, 40);
    assert_eq!(app.pages(), 55);
    fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(8192).unwrap();
    let r = watch.refresh();
    assert!(r.reread_started);
    watch.settle(std::time::Duration::from_secs(10));
    app.sync(&watch, true);
    assert_eq!(app.layout().source_len, 8192, "the new structure arrived");
    assert_eq!(app.data().snapshot.expected_len, 55 * 4096);
    assert_eq!(app.pages(), 55, "the map keeps the pages the meta claims");
    assert_eq!(app.file_len(), 8192);
    for p in [0, 1] {
        assert_ne!(app.cell(p).unwrap().residence, Residence::PastEof, "{p}");
    }
    for p in [2, 30, 54] {
        assert_eq!(app.cell(p).unwrap().residence, Residence::PastEof, "{p}");
    }
    let t = draw(&app);
    for p in [2, 30, 54] {
        assert_eq!(cell_at(&app, &t, p).0, "×", "page {p}");
    }
    let text = format!("{}", t.backend());
    assert!(text.contains("8 KiB TRUNCATED: the header says 220 KiB"), "{text}");
    assert!(text.contains("× past end of file"), "legend: {text}");
}

/// A bbolt file a writer commits to every 20 ms (a busy etcd) is
/// followed commit by commit: each structure the watch shows is of one
/// snapshot (one key added per commit, so the bucket holds exactly what
/// the snapshot's txid says), says how old it is, and layouts are made at
/// a bounded pace however often the writer commits. Once the writer
/// stops, the last commit is shown.
#[test]
fn a_busy_bolt_file_is_followed_commit_by_commit() {
    use mapwise_core::bolt::WalkOptions;
    use mapwise_native::engine::bolt::{Db, Options};
    use mapwise_native::observe::watch::Watch;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let dir = tmpdir();
    let path = dir.path().join("busy.db");
    let db = Db::open(&path, &Options { no_sync: true, ..Options::read_write() }).expect("create");
    let base = 20_000u64;
    db.update(|tx| {
        let mut b = tx.create_bucket(b"b")?;
        for i in 0..base {
            b.put(&i.to_be_bytes(), &[7u8; 200])?;
        }
        Ok::<_, mapwise_native::engine::bolt::Error>(())
    })
    .expect("fill");
    let txid0 = db.begin().expect("tx").id();
    let stop = AtomicBool::new(false);
    let keys_of = |w: &Watch| {
        let s = w.snapshot();
        let keys = s.layout.groups.iter().find(|g| g.path == "b").map(|g| g.keys);
        (s.bolt.as_ref().map(|b| b.txid), keys, s.unsettled.clone(), s.as_of)
    };
    let mut watch = Watch::open(&path, WalkOptions::default()).expect("watch");
    let mut seen = Vec::new();
    let last = std::thread::scope(|sc| {
        let writer = sc.spawn(|| {
            let mut n = base;
            while !stop.load(Ordering::Relaxed) {
                db.update(|tx| {
                    let mut b = tx.bucket(b"b")?.expect("b");
                    b.put(&n.to_be_bytes(), b"appended")
                })
                .expect("commit");
                n += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            db.begin().expect("tx").id()
        });
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(4) {
            if watch.refresh().new_snapshot {
                seen.push(keys_of(&watch));
                assert!(
                    watch.structure_age().is_some_and(|a| a.starts_with("as of txid ")),
                    "{:?}",
                    watch.structure_age()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().expect("writer")
    });
    assert!(seen.len() >= 2, "newer structures arrived: {seen:?}");
    assert!(seen.len() <= 12, "layouts are paced: {} in 4 s", seen.len());
    for (txid, keys, unsettled, as_of) in &seen {
        let txid = txid.expect("bbolt");
        assert_eq!(unsettled, &None);
        assert!(as_of.is_some());
        assert_eq!(*keys, Some(base + (txid - txid0)), "txid {txid} (first {txid0})");
    }
    let start = Instant::now();
    while watch.snapshot().bolt.as_ref().map(|b| b.txid) != Some(last) {
        assert!(start.elapsed() < Duration::from_secs(10), "last commit {last} never shown");
        watch.refresh();
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(keys_of(&watch).1, Some(base + (last - txid0)));
    assert!(watch.snapshot().layout.problems.is_empty());
}

#[test]
fn a_truncated_rrd_file_shows_its_lost_pages_past_the_end() {
    // `truncate -s 10000 copy.rrd` with the inspector open: rrdtool's
    // header still describes its 33440-byte file (the length rrdtool 1.7.2
    // created it with), so OS pages 3–8 are drawn past the end.
    use mapwise_core::bolt::WalkOptions;
    use mapwise_inspector::app::{Data, Residence};
    use mapwise_native::observe::watch::Watch;
    let dir = tmpdir();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/rrd/hw.rrd");
    let path = dir.path().join("copy.rrd");
    fs::copy(&src, &path).unwrap();
    let created_len = fs::metadata(&src).unwrap().len();
    assert_eq!(created_len, 33440);
    let mut watch = Watch::open(&path, WalkOptions::default()).expect("watch");
    assert_eq!(watch.snapshot().expected_len, created_len);
    let mut app =
        App::new("copy.rrd", Data::from_target(&watch), std::time::Duration::from_millis(500));
    app.resize(120, 40);
    assert_eq!(app.pages(), 9);
    fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(10_000).unwrap();
    let r = watch.refresh();
    assert!(r.reread_started);
    watch.settle(std::time::Duration::from_secs(10));
    app.sync(&watch, true);
    assert_eq!(app.layout().source_len, 10_000, "the new structure arrived");
    assert_eq!(app.data().snapshot.expected_len, created_len);
    assert_eq!(app.pages(), 9, "the map keeps the pages the header claims");
    for p in 0..3 {
        assert_ne!(app.cell(p).unwrap().residence, Residence::PastEof, "{p}");
    }
    for p in 3..9 {
        assert_eq!(app.cell(p).unwrap().residence, Residence::PastEof, "{p}");
    }
    let t = draw(&app);
    for p in 3..9 {
        assert_eq!(cell_at(&app, &t, p).0, "×", "page {p}");
    }
    let text = format!("{}", t.backend());
    assert!(text.contains("9.8 KiB TRUNCATED: the header says 32.7 KiB"), "{text}");
}

#[test]
fn advise_menu_overlay() {
    let mut target = fixed(&testdata("small.db"));
    let mut app = app("small.db", &target, 100, 30);
    press(&mut app, &mut target, &[Action::Right, Action::Advise]);
    let t = draw(&app);
    let text = format!("{}", t.backend());
    for line in [
        "advise the kernel (posix_fadvise)",
        "▸ WILLNEED    read the range into the cache now (async)",
        "  DONTNEED    drop the range's clean, unmapped pages",
        "  NORMAL      default read-ahead (our open file only)",
        "● page 1 (bytes 4096..8192)",
        "○ the whole file",
        "↑↓ advice · ←→ range · Enter apply · Esc cancel",
    ] {
        assert!(text.contains(line), "{line:?} missing:\n{text}");
    }
    press(&mut app, &mut target, &[Action::Left, Action::Down]);
    let text = format!("{}", draw(&app).backend());
    assert!(text.contains("▸ DONTNEED"), "{text}");
    assert!(text.contains("○ page 1 (bytes 4096..8192)"), "{text}");
    assert!(text.contains("● the whole file"), "{text}");
}
