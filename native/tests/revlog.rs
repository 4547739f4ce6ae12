//! `mapwise_native::engine::revlog` against Mercurial 6.3: the corpus hg
//! made (offsets, layouts and store names of every index), hg's own size
//! parser (through its Python), and the kernel (mincore) for what a mapped
//! `log -l 5` touches. The `mapwise revlog` command line is tested in
//! `cli/tests/revlog.rs`.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use mapwise_core::detect::detect;
use mapwise_core::layout::{Format, Kind};
use mapwise_core::revlog::{Index, LayoutOptions, layout};
use mapwise_native::engine::revlog::{
    Hidden, IndexFile, Load, Loaded, Options, StoreEncoding, log, size_to_int,
};
use mapwise_native::os::map::Advice;
use mapwise_native::os::residency;
use mapwise_testkit::corpus::REVLOG_INDEXES;
use mapwise_testkit::run_with_stdin;

use crate::support::{assert_same_text, hg_python, revlog_testdata, tempdir, testdata};

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

use mapwise_view::fmt::hex;

/// Our values in the layout of `hg debugrevlogindex -v` (`debugcommands.py`,
/// `debugrevlogindex`, format 0, verbose), which prints each revision's
/// data offset and stored length.
fn revlogindex_text(index: &Index<'_, [u8]>) -> String {
    let short = |n: &[u8; 20]| hex(&n[..6]);
    let mut out = String::from("   rev    offset  length linkrev nodeid       p1           p2\n");
    for rev in 0..=index.tip() {
        let e = index.entry(rev).unwrap();
        let (p1, p2) = index.checked_parents(&e).unwrap();
        out.push_str(&format!(
            "{rev:>6} {:>9} {:>7} {:>7} {} {} {}\n",
            e.data_offset(),
            e.compressed_len(),
            e.link_rev(),
            short(e.node()),
            short(&index.node(p1).unwrap()),
            short(&index.node(p2).unwrap()),
        ));
    }
    out
}

#[test]
fn corpus_offsets_and_layout_are_hgs() {
    for name in REVLOG_INDEXES {
        let bytes = read(&revlog_testdata(name));
        let index = Index::open(&bytes[..]).unwrap();
        let want = revlog_testdata(&format!("{name}.debugrevlogindex.txt"));
        if want.exists() {
            assert_same_text(
                &format!("debugrevlogindex -v {name}"),
                revlogindex_text(&index).as_bytes(),
                &read(&want),
            );
        }
        assert_eq!(detect(&bytes[..]), Format::Revlog, "{name}");
        // The layout covers the file: entries, and inline chunks where
        // hg's offsets put them (data offset + one entry per revision).
        let data_len = mapwise_native::engine::revlog::data_path(&revlog_testdata(name))
            .and_then(|d| std::fs::metadata(d).ok())
            .map(|m| m.len());
        let l = layout(&bytes[..], LayoutOptions { data_len });
        assert!(l.layout.problems.is_empty(), "{name}: {:?}", l.layout.problems);
        assert_eq!(l.revisions, u64::from(index.len()));
        let mut at = 0;
        for r in &l.layout.regions {
            assert_eq!(r.offset, at, "{name}: contiguous");
            at = r.end();
            let rev = i32::try_from(r.id).unwrap();
            let e = index.entry(rev).unwrap();
            match r.kind {
                Kind::Entry => assert_eq!(Some(r.offset), e.position()),
                Kind::Chunk => {
                    assert!(index.is_inline());
                    assert_eq!(r.offset, e.data_offset() + 64 * (r.id + 1));
                    assert_eq!(r.len, u64::from(e.compressed_len()));
                }
                k => panic!("{name}: unexpected {k:?}"),
            }
        }
        assert_eq!(at, bytes.len() as u64, "{name}: covered");
    }
    // `hg debugrevlog -c`: format, flags, revisions, total chunk bytes.
    let summary = text(&read(&revlog_testdata("00changelog.debugrevlog.txt")));
    let field = |k: &str| {
        summary
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| v.trim_start_matches([' ', ':']).trim().to_string())
            .unwrap()
    };
    let bytes = read(&revlog_testdata("00changelog.i"));
    let l = layout(&bytes[..], LayoutOptions::default());
    let h = l.header.unwrap();
    assert_eq!(field("format"), h.version.number().to_string());
    assert_eq!(field("flags"), if h.is_inline() { "inline" } else { "(none)" });
    assert_eq!(field("revisions"), l.revisions.to_string());
    assert_eq!(field("chunks size"), l.data_bytes.to_string());
    // Neither a data file nor a bbolt file is taken for an index.
    assert_ne!(detect(&read(&revlog_testdata("data/big.txt.d"))[..]), Format::Revlog);
    assert_eq!(detect(&read(&testdata("small.db"))[..]), Format::Bolt);
}

#[test]
fn corpus_store_names_are_hgs() {
    // The fncache lists tracked paths; hg stored each under its encoded
    // name, which must be a file of the corpus.
    let fncache = text(&read(&revlog_testdata("fncache")));
    assert!(fncache.lines().count() >= 5);
    for line in fncache.lines() {
        let enc = StoreEncoding::Dotencode.encode(line.as_bytes());
        let p = revlog_testdata(&text(&enc));
        assert!(p.is_file(), "{line} -> {} is not in the store", p.display());
    }
}

#[test]
fn sizes_are_parsed_as_hg_parses_them() {
    let inputs = [
        "30",
        "2.2kb",
        "6M",
        "42.5 kb",
        "7 MB",
        "4k",
        " 1G ",
        "1gb",
        "1.5b",
        "1.5",
        "1_000",
        "1e3k",
        "-1k",
        "+2k",
        "kb",
        "b",
        "",
        "infk",
        "nank",
        "0x10",
        "1__0",
        "_1",
        "1_",
        ".5k",
        "5.k",
        "1e",
        "4 k",
        "somevalue",
        "12kB",
        "3MB ",
        "007",
    ];
    let script = "import sys\nfrom mercurial import util\n\
        for s in sys.stdin.read().split('\\n')[:-1]:\n\
        \x20   try:\n\
        \x20       print(util.sizetoint(s.encode()))\n\
        \x20   except Exception:\n\
        \x20       print('error')\n";
    let input: String = inputs.iter().map(|i| format!("{i}\n")).collect();
    let out = run_with_stdin(hg_python().args(["-c", script]), input.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hgs = text(&out.stdout);
    for (i, want) in inputs.iter().zip(hgs.lines()) {
        let ours = size_to_int(i).map_or_else(|| "error".to_string(), |v| v.to_string());
        assert_eq!(ours, want, "sizetoint({i:?})");
    }
    assert_eq!(hgs.lines().count(), inputs.len());
}

/// One v1 entry of a synthetic non-inline changelog.
fn synthetic_entry(rev: u32) -> [u8; 64] {
    let mut e = [0u8; 64];
    let offset_flags = if rev == 0 {
        1u64 << 32 // the version header: v1, no flags
    } else {
        (u64::from(rev) * 64) << 16
    };
    e[0..8].copy_from_slice(&offset_flags.to_be_bytes());
    let r = i32::try_from(rev).unwrap();
    for (i, v) in [64, 64, r, r, r - 1, -1].into_iter().enumerate() {
        e[8 + 4 * i..12 + 4 * i].copy_from_slice(&v.to_be_bytes());
    }
    e[32..36].copy_from_slice(&(rev + 1).to_be_bytes());
    e[36..52].fill(0xab);
    e
}

#[test]
fn mapped_log_touches_only_the_tail() {
    // A changelog index of a million revisions (64 MB): too many for hg
    // to make in a test, so its entries are written here, shaped like
    // hg's (non-inline, linear). The peer is the kernel: mincore says
    // which pages `log -l 5` brought into the page cache.
    const REVS: u32 = 1_000_000;
    let dir = tempdir();
    let path = dir.path().join("00changelog.i");
    {
        let mut w = std::io::BufWriter::new(File::create(&path).unwrap());
        for rev in 0..REVS {
            w.write_all(&synthetic_entry(rev)).unwrap();
        }
        w.into_inner().unwrap().sync_all().unwrap();
    }
    let f = File::open(&path).unwrap();
    let evict = || {
        residency::evict(&f, 0, residency::TO_EOF).unwrap();
        let r = residency::sample(&f).unwrap();
        assert!(r.trust.is_known(), "mincore must tell the truth (run as the file's owner)");
        assert_eq!(r.resident_pages, 0, "eviction failed: is {} on tmpfs?", dir.path().display());
    };

    evict();
    let opts = Options {
        load: Load::Auto { threshold: 4096 },
        populate: false,
        // No read-around, so a fault brings in only its own page.
        advice: Some(Advice::Random),
    };
    let file = IndexFile::open(&path, &opts).unwrap();
    assert_eq!(file.loaded(), Loaded::Mmap);
    let index = file.index().unwrap();
    assert_eq!(index.len(), REVS);
    let rows = log(&index, Some(5), &Hidden::default()).unwrap();
    let revs: Vec<i32> = rows.iter().map(|r| r.rev).collect();
    assert_eq!(revs, [999_999, 999_998, 999_997, 999_996, 999_995]);
    let r = residency::sample(&f).unwrap();
    let last = r.total_pages - 1;
    let resident: Vec<u64> = (0..r.total_pages).filter(|&p| r.is_resident(p)).collect();
    assert!(r.is_resident(0), "the header page is read");
    assert!(r.is_resident(last), "the tail page is read");
    assert!(
        resident.iter().all(|&p| p == 0 || p + 1 >= last),
        "pages other than the header and the tail are resident: {:?} of {}",
        &resident[..resident.len().min(20)],
        r.total_pages
    );
    drop(index);
    drop(file);

    // Read whole: every byte is read. The kernel's count of the bytes this
    // thread read is the peer; the page cache is not, because this
    // machine's reclaimer may evict a page between the read and a sample.
    evict();
    let before = thread_rchar();
    let file = IndexFile::open(&path, &Options::default()).unwrap();
    let read = thread_rchar() - before;
    assert_eq!(file.loaded(), Loaded::Read);
    assert_eq!(log(&file.index().unwrap(), Some(5), &Hidden::default()).unwrap().len(), 5);
    let len = f.metadata().unwrap().len();
    assert!(
        (len..len + 4096).contains(&read),
        "the read path read {read} bytes of a {len}-byte index"
    );
}

/// Bytes this thread has read through read(2) and its kin: `rchar` in
/// `/proc/thread-self/io` (proc(5)), counted by the kernel.
fn thread_rchar() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    let line = io.lines().find_map(|l| l.strip_prefix("rchar: ")).unwrap();
    line.parse().unwrap()
}
