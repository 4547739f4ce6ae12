//! The corpus rrdtool made, through `mapwise rrd`: every read command
//! against rrdtool's stored and live output, every update sequence replayed
//! in every I/O mode.

use std::path::Path;

use mapwise_core::rrd::Header;
use mapwise_native::engine::rrd::IoMode;
use mapwise_testkit::assert_same_bytes;
use mapwise_testkit::rrd::{SHAPES, apply, copy, gunzip, spec};

use super::{mw, ok, rt};
use crate::support::{assert_same_text, rrd_oracle_out, rrd_testdata, tempdir};

/// dump and fetch of every corpus file print exactly what rrdtool printed
/// when the corpus was made; info, last, first (every archive),
/// lastupdate, the other dump headers and fetches of every CF at several
/// resolutions print what rrdtool prints now.
#[test]
fn read_commands_print_what_rrdtool_prints() {
    let dir = tempdir();
    let d = dir.path();
    for &(name, s, e) in SHAPES {
        let file = format!("{name}.rrd");
        copy(&file, d, &file);
        let got = ok("dump", &mw(d, &["dump", &file]));
        let want = std::fs::read(rrd_testdata(&format!("{name}.dump.xml"))).expect("dump.xml");
        assert_same_text(&format!("{name} dump"), &got, &want);
        let (s, e) = (s.to_string(), e.to_string());
        let got = ok("fetch", &mw(d, &["fetch", &file, "AVERAGE", "-s", &s, "-e", &e]));
        let want =
            std::fs::read(rrd_testdata(&format!("{name}.fetch-AVERAGE.txt"))).expect("fetch");
        assert_same_text(&format!("{name} fetch"), &got, &want);

        let both = |args: &[&str]| {
            let ours = mw(d, args);
            let theirs = rt(d, args);
            assert_eq!(
                ours.status.code(),
                theirs.status.code(),
                "{name} {args:?}: {}",
                String::from_utf8_lossy(&ours.stderr)
            );
            assert_same_text(&format!("{name} {args:?}"), &ours.stdout, &theirs.stdout);
        };
        both(&["info", &file]);
        info_json_says_what_rrdtool_says(&format!("{name} info --json"), d, &file);
        both(&["last", &file]);
        both(&["lastupdate", &file]);
        both(&["dump", "-h", "xsd", &file]);
        both(&["dump", "--no-header", &file]);
        let h = std::fs::read(d.join(&file)).expect("read");
        let hdr = Header::parse(&h[..]).expect("header");
        for i in 0..hdr.rra_cnt() {
            both(&["first", &file, "--rraindex", &i.to_string()]);
        }
        let mut cfs: Vec<&str> = hdr.rras().iter().map(|r| r.cf.name()).collect();
        cfs.dedup();
        for cf in cfs {
            for r in ["1", "300", "3600", "86400"] {
                both(&["fetch", &file, cf, "-s", &s, "-e", &e, "-r", r]);
            }
            both(&["fetch", &file, cf, "-s", "end-2d", "-e", &e]);
            both(&["fetch", &file, cf, "-s", &s, "-e", "start+5h", "-a", "-r", "600"]);
        }
    }
}

/// Every corpus update sequence, one update call per line from
/// `NAME.empty.rrd`, gives rrdtool's `NAME.rrd` byte for byte in every
/// I/O mode; its dump and fetch are the stored ones.
#[test]
fn corpus_updates_are_byte_identical_in_every_io_mode() {
    let dir = tempdir();
    let d = dir.path();
    for mode in IoMode::ALL {
        for &(name, s, e) in SHAPES {
            if name == "seed" {
                continue;
            }
            let file = format!("{name}-{}.rrd", mode.name());
            let p = copy(&format!("{name}.empty.rrd"), d, &file);
            apply(&p, &spec(name), mode);
            let want = std::fs::read(rrd_testdata(&format!("{name}.rrd"))).expect("rrd");
            assert_same_bytes(
                &format!("{name} via {}", mode.name()),
                &std::fs::read(&p).expect("read"),
                &want,
            );
            if mode == IoMode::Mmap {
                let got = ok("dump", &mw(d, &["dump", &file]));
                let want =
                    std::fs::read(rrd_testdata(&format!("{name}.dump.xml"))).expect("dump.xml");
                assert_same_text(&format!("{name} dump after update"), &got, &want);
                let got = ok(
                    "fetch",
                    &mw(
                        d,
                        &["fetch", &file, "AVERAGE", "-s", &s.to_string(), "-e", &e.to_string()],
                    ),
                );
                let want = std::fs::read(rrd_testdata(&format!("{name}.fetch-AVERAGE.txt")))
                    .expect("fetch");
                assert_same_text(&format!("{name} fetch after update"), &got, &want);
            }
        }
    }
}

/// The seed: its create command's file, the nine updates of an rrdtool-1.x
/// bug report on HWPREDICT as one `updatev` call, through the command
/// line: the same output and the same file as rrdtool's (HWPREDICT/SEASONAL
/// values the report gives as correct).
#[test]
fn seed_updatev_through_the_command_line() {
    let dir = tempdir();
    let d = dir.path();
    for mode in ["mmap", "fd"] {
        let file = format!("seed-{mode}.rrd");
        copy("seed.empty.rrd", d, &file);
        let mut args = vec!["updatev", "--io", mode, file.as_str()];
        let lines = spec("seed");
        args.extend(lines.iter().map(String::as_str));
        let out = ok("updatev", &mw(d, &args));
        let want = std::fs::read(rrd_testdata("seed.updatev.txt")).expect("updatev.txt");
        assert_same_text("seed updatev", &out, &want);
        assert_same_bytes(
            "seed.rrd",
            &std::fs::read(d.join(&file)).expect("read"),
            &std::fs::read(rrd_testdata("seed.rrd")).expect("seed.rrd"),
        );
    }
}

/// The 1.7 MiB `big` shape (5 archives, 100000 rows in the first):
/// replayed from its empty file, the bytes, dump and fetch rrdtool made
/// (the stored `testdata/rrd/big.rrd` and `big.dump.xml.gz`).
#[test]
fn big_corpus_file() {
    let dir = tempdir();
    let d = dir.path();
    let p = d.join("big.rrd");
    gunzip(&rrd_testdata("big.empty.rrd.gz"), &p);
    apply(&p, &spec("big"), IoMode::Mmap);
    assert_same_bytes(
        "big.rrd",
        &std::fs::read(&p).expect("read"),
        &std::fs::read(rrd_testdata("big.rrd")).expect("big.rrd"),
    );
    gunzip(&rrd_testdata("big.dump.xml.gz"), &d.join("want.xml"));
    let got = ok("dump", &mw(d, &["dump", "big.rrd"]));
    assert_same_text("big dump", &got, &std::fs::read(d.join("want.xml")).expect("xml"));
    let got = ok(
        "fetch",
        &mw(d, &["fetch", "big.rrd", "AVERAGE", "-s", "1600000098", "-e", "1600167228"]),
    );
    assert_same_text(
        "big fetch",
        &got,
        &std::fs::read(rrd_testdata("big.fetch-AVERAGE.txt")).expect("fetch"),
    );
}

/// Numbers print as rrdtool prints them: dump through rrdtool's own
/// `rrd_snprintf` (not glibc; its last digit can differ, and subnormals
/// print as `0.x…e-308`), fetch through glibc's `printf`. 20000 values of
/// every kind (random bit patterns, decimals, dyadic ties, extremes) are
/// written into a file's rows and printed by both.
#[test]
fn numbers_print_as_rrdtool_prints_them() {
    let dir = tempdir();
    let d = dir.path();
    ok(
        "create",
        &mw(
            d,
            &[
                "create",
                "n.rrd",
                "-b",
                "1600000000",
                "-s",
                "1",
                "--seed",
                "1",
                "DS:x:GAUGE:10:U:U",
                "RRA:LAST:0:1:20000",
            ],
        ),
    );
    let mut bytes = std::fs::read(d.join("n.rrd")).expect("read");
    let start = bytes.len() - 20000 * 8;
    let mut s: u64 = 0x1234_5678;
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in 0..20000 {
        let r = next();
        let v = match r % 5 {
            0 => f64::from_bits(next()),
            1 => (next() % 2_000_000_000) as f64 / 2f64.powi((next() % 24) as i32) - 1e6,
            2 => (next() % 1_000_000) as f64 * 10f64.powi((next() % 600) as i32 - 300),
            3 => ((next() % 100_000_000) as f64 - 5e7) / 10f64.powi((next() % 7) as i32),
            _ => f64::from_bits(next() >> 12),
        };
        bytes[start + 8 * i..start + 8 * i + 8].copy_from_slice(&v.to_le_bytes());
    }
    std::fs::write(d.join("n.rrd"), &bytes).expect("write");
    for args in [
        &["dump", "n.rrd"][..],
        &["fetch", "n.rrd", "LAST", "-s", "1599980001", "-e", "1600000000"],
    ] {
        let ours = ok("mapwise", &mw(d, args));
        let theirs = ok("rrdtool", &rt(d, args));
        assert_same_text(&format!("{args:?}"), &ours, &theirs);
    }
}

/// The update syntax: templates (reordered, partial, naming a COMPUTE
/// data source), `@`-style times, fractional seconds (twice in one
/// second), `U`, several samples per call, `--skip-past-updates`,
/// `updatev`: step after step the same bytes and output as rrdtool on the
/// same file.
#[test]
fn update_syntax_matches_rrdtool() {
    let dir = tempdir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::create_dir_all(&b).expect("mkdir");
    let steps: &[(&str, &[&[&str]])] = &[
        (
            "hw.rrd",
            &[
                &["update", "f.rrd", "-t", "b:a", "1600166500:1:2", "1600166700:3:4"],
                &["update", "f.rrd", "--template", "a", "1600166800:5"],
                &["update", "f.rrd", "20200915 12:00@7:8"],
                &["update", "f.rrd", "1600171500.25:1:2", "1600171500.5:3:4", "1600171799.999:U:4"],
                &["updatev", "f.rrd", "1600172000:U:5", "1600173000:6:U"],
                &["update", "f.rrd", "-s", "1600000000:1:1", "1600173600:2:2"],
                &["updatev", "f.rrd", "1600174000@9:9"],
            ],
        ),
        (
            "compute.rrd",
            &[
                &["update", "f.rrd", "-t", "mean:b:a", "1600161700:100:3:4"],
                &["updatev", "f.rrd", "1600162000:1e2:-5e-1", "1600162301:nan:inf"],
            ],
        ),
        (
            "counter.rrd",
            &[&[
                "updatev",
                "f.rrd",
                "1600165600:4294967295:-5",
                "1600165900:10:-000012",
                "1600166200:U:7",
            ]],
        ),
    ];
    for (corpus, calls) in steps {
        copy(corpus, &a, "f.rrd");
        copy(corpus, &b, "f.rrd");
        for args in *calls {
            let ours = mw(&a, args);
            let theirs = rt(&b, args);
            assert_eq!(
                ours.status.code(),
                theirs.status.code(),
                "{corpus} {args:?}: {}",
                String::from_utf8_lossy(&ours.stderr)
            );
            assert_same_text(&format!("{corpus} {args:?}"), &ours.stdout, &theirs.stdout);
            assert_same_bytes(
                &format!("{corpus} {args:?}"),
                &std::fs::read(a.join("f.rrd")).expect("a"),
                &std::fs::read(b.join("f.rrd")).expect("b"),
            );
        }
    }
    // `N` is now: the last update time is within the call.
    copy("gauge.rrd", &a, "n.rrd");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    ok("update N", &mw(&a, &["update", "n.rrd", "N:20:1"]));
    let last: i64 = String::from_utf8_lossy(&ok("last", &mw(&a, &["last", "n.rrd"])))
        .trim()
        .parse()
        .expect("last");
    assert!((before..=before + 5).contains(&last), "{last} vs {before}");
}

/// Version 0001/0002 files keep an 8-byte `last_up` and no microseconds:
/// a corpus file rewritten in that layout is updated (fractional times
/// included) to the same bytes as rrdtool makes of it, and both dump it
/// the same way.
#[test]
fn version_1_files_keep_their_layout() {
    let dir = tempdir();
    let d = dir.path();
    let v3 = std::fs::read(rrd_testdata("mixed.empty.rrd")).expect("read");
    let h = Header::parse(&v3[..]).expect("header");
    let live = h.geometry().live_head as usize;
    let mut v1 = v3[..live + 8].to_vec();
    v1.extend_from_slice(&v3[live + 16..]);
    v1[4..8].copy_from_slice(b"0001");
    let lines: Vec<String> = spec("mixed").into_iter().take(150).collect();
    std::fs::write(d.join("ours.rrd"), &v1).expect("write");
    std::fs::write(d.join("theirs.rrd"), &v1).expect("write");
    apply(&d.join("ours.rrd"), &lines, IoMode::Mmap);
    let spec_path = d.join("spec.txt");
    std::fs::write(&spec_path, lines.join("\n") + "\n").expect("spec");
    rrd_oracle_out(&[
        "apply",
        d.join("theirs.rrd").to_str().expect("utf-8"),
        spec_path.to_str().expect("utf-8"),
    ]);
    let ours = std::fs::read(d.join("ours.rrd")).expect("ours");
    assert_same_bytes("version 1", &ours, &std::fs::read(d.join("theirs.rrd")).expect("theirs"));
    assert_eq!(&ours[4..9], b"0001\0");
    for args in [&["dump", "ours.rrd"][..], &["info", "ours.rrd"]] {
        assert_same_text(
            &format!("{args:?}"),
            &ok("mapwise", &mw(d, args)),
            &ok("rrdtool", &rt(d, args)),
        );
    }
}

/// `mapwise rrd info --json FILE` holds every `key = value` line of
/// rrdtool's `info FILE`: strings as strings, numbers as numbers, and
/// rrdtool's `NaN` (unknown) as null.
fn info_json_says_what_rrdtool_says(what: &str, d: &Path, file: &str) {
    let text = String::from_utf8(ok("rrdtool info", &rt(d, &["info", file]))).expect("utf-8");
    let json: serde_json::Value =
        serde_json::from_slice(&ok("info --json", &mw(d, &["info", "--json", file])))
            .expect("info --json is JSON");
    let mut keys = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(" = ") else {
            continue;
        };
        keys += 1;
        let got = json.get(key).unwrap_or_else(|| panic!("{what}: no {key}"));
        if value == "NaN" {
            assert!(got.is_null(), "{what}: {key} = {got}, rrdtool NaN");
        } else if let Some(s) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            assert_eq!(got.as_str(), Some(s), "{what}: {key}");
        } else {
            let want: f64 = value.parse().unwrap_or_else(|_| panic!("{what}: {key} = {value}"));
            // rrdtool prints 10 digits after the point (`%0.10e`): equal
            // to that precision.
            let got = got.as_f64().unwrap_or_else(|| panic!("{what}: {key} = {got}, not a number"));
            assert!(
                (got - want).abs() <= want.abs() * 1e-10,
                "{what}: {key} = {got}, rrdtool {value}"
            );
        }
    }
    assert!(keys > 10, "{what}: {keys} keys");
}
