//! `mapwise rrd create` against `rrdtool create`: the same arguments and
//! file name in two directories give the same bytes, once mapwise's
//! random initial row pointers are replaced by rrdtool's (both pick them
//! at random, as rrdtool does).

use mapwise_core::rrd::Header;
use mapwise_testkit::assert_same_bytes;

use super::{mw, ok, rt};
use crate::support::tempdir;

/// Create arguments after the file name.
const CASES: &[&[&str]] = &[
    // The seed's command.
    &[
        "-s",
        "86400",
        "-b",
        "962496000",
        "DS:ds0:GAUGE:86400:U:U",
        "RRA:AVERAGE:.5:1:10",
        "RRA:HWPREDICT:10:.5:.1:2",
    ],
    // The corpus shapes (MANIFEST.txt).
    &[
        "-s",
        "300",
        "-b",
        "1600000000",
        "DS:temp:GAUGE:600:-50:150",
        "DS:load:GAUGE:600:0:U",
        "RRA:AVERAGE:0.5:1:288",
        "RRA:MIN:0.5:12:96",
        "RRA:MAX:0.5:12:96",
    ],
    &[
        "-s",
        "300",
        "-b",
        "1600000000",
        "DS:octets:COUNTER:600:0:1000000",
        "DS:delta:DERIVE:600:U:U",
        "RRA:AVERAGE:0.5:1:288",
        "RRA:AVERAGE:0.5:12:96",
        "RRA:MAX:0.5:12:96",
    ],
    &[
        "-s",
        "300",
        "-b",
        "1600000000",
        "DS:g:GAUGE:600:U:U",
        "DS:a:ABSOLUTE:600:0:U",
        "RRA:AVERAGE:0.5:1:300",
        "RRA:AVERAGE:0.25:6:100",
        "RRA:MIN:0.5:6:100",
        "RRA:MAX:0.75:6:100",
        "RRA:LAST:0.9:6:100",
        "RRA:LAST:0:1:50",
        "RRA:AVERAGE:0:24:30",
    ],
    &[
        "-s",
        "300",
        "-b",
        "1600000000",
        "DS:a:GAUGE:600:U:U",
        "DS:b:GAUGE:600:U:U",
        "RRA:AVERAGE:0.5:1:600",
        "RRA:HWPREDICT:600:0.1:0.0035:48",
    ],
    &[
        "-s",
        "300",
        "-b",
        "1600000000",
        "DS:a:GAUGE:600:U:U",
        "DS:b:GAUGE:600:U:U",
        "DS:mean:COMPUTE:a,b,+,2,/",
        "RRA:AVERAGE:0.5:1:288",
        "RRA:MAX:0.5:12:48",
    ],
    &[
        "-s",
        "300",
        "-b",
        "1600000000",
        "DS:dc:DCOUNTER:600:U:U",
        "DS:dd:DDERIVE:600:U:U",
        "RRA:AVERAGE:0.5:1:288",
        "RRA:LAST:0.5:12:48",
    ],
    &[
        "-s",
        "300",
        "-b",
        "1600000000",
        "DS:a:GAUGE:600:0:U",
        "DS:b:GAUGE:600:0:U",
        "RRA:AVERAGE:0.5:1:600",
        "RRA:MHWPREDICT:600:0.1:0.0035:48",
    ],
    // Explicit Holt-Winters archives, a smoothing window (version 4).
    &[
        "-s",
        "60",
        "-b",
        "1600000123",
        "DS:x:GAUGE:120:U:U",
        "RRA:AVERAGE:0.5:1:100",
        "RRA:HWPREDICT:100:0.2:0.01:24:3",
        "RRA:SEASONAL:24:0.3:2:smoothing-window=0.1",
        "RRA:DEVSEASONAL:24:0.3:2",
        "RRA:DEVPREDICT:100:4",
        "RRA:FAILURES:24:3:5:4",
    ],
    // Durations, the default step, unit suffixes, COMPUTE with more
    // operators, every DS type.
    &[
        "-b",
        "1600000000",
        "DS:a:GAUGE:10m:U:U",
        "DS:b:ABSOLUTE:1h:0:1e6",
        "DS:c:COMPUTE:a,b,MAX,10,*,a,UN,0,a,IF,+",
        "DS:d:DERIVE:900:-100:100",
        "RRA:AVERAGE:0.5:1h:1d",
        "RRA:LAST:0.9:5m:2w",
    ],
    &[
        "-s",
        "5m",
        "-b",
        "1600000000",
        "DS:d1:DCOUNTER:600:U:U",
        "DS:d2:COUNTER:600:U:U",
        "RRA:MHWPREDICT:50:0.5:0.5:10",
        "RRA:MIN:0:3:7",
    ],
    // A date as start (TZ=UTC).
    &["-b", "20200913", "DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:10"],
];

/// Same file as rrdtool once the row pointers agree.
#[test]
fn create_gives_rrdtools_bytes() {
    let dir = tempdir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::create_dir_all(&b).expect("mkdir");
    for (n, case) in CASES.iter().enumerate() {
        let name = format!("c{n}.rrd");
        let mut args = vec!["create", name.as_str()];
        args.extend_from_slice(case);
        ok(&format!("mapwise {args:?}"), &mw(&a, &args));
        ok(&format!("rrdtool {args:?}"), &rt(&b, &args));
        let mut ours = std::fs::read(a.join(&name)).expect("ours");
        let theirs = std::fs::read(b.join(&name)).expect("theirs");
        let h = Header::parse(&theirs[..]).expect("rrdtool's file parses");
        let g = h.geometry();
        assert_eq!(ours.len(), theirs.len(), "{args:?}: size");
        let (s, e) = (g.rra_ptr as usize, g.header_len as usize);
        ours[s..e].copy_from_slice(&theirs[s..e]);
        assert_same_bytes(&format!("{args:?}"), &ours, &theirs);
        // Our own file (with our row pointers) opens in rrdtool.
        ok("rrdtool info of ours", &rt(&a, &["info", &name]));
    }
}

/// `-O` refuses an existing file as rrdtool does and leaves it alone; the
/// seed option makes the row pointers reproducible; a new file has mode
/// 0644 and replaces an old one keeping its mode.
#[test]
fn create_options() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempdir();
    let d = dir.path();
    let defs = ["DS:x:GAUGE:600:U:U", "RRA:AVERAGE:0.5:1:1000"];
    let mut args = vec!["create", "s.rrd", "-b", "1600000000", "--seed", "7"];
    args.extend_from_slice(&defs);
    ok("create", &mw(d, &args));
    let first = std::fs::read(d.join("s.rrd")).expect("read");
    assert_eq!(
        std::fs::metadata(d.join("s.rrd")).expect("meta").permissions().mode() & 0o777,
        0o644
    );
    std::fs::set_permissions(d.join("s.rrd"), std::fs::Permissions::from_mode(0o600))
        .expect("chmod");
    ok("create again", &mw(d, &args));
    assert_eq!(std::fs::read(d.join("s.rrd")).expect("read"), first, "same seed, same bytes");
    assert_eq!(
        std::fs::metadata(d.join("s.rrd")).expect("meta").permissions().mode() & 0o777,
        0o600
    );
    let mut o = vec!["create", "s.rrd", "-O", "-b", "1600000000"];
    o.extend_from_slice(&defs);
    let ours = mw(d, &o);
    let theirs = rt(d, &o);
    assert_eq!(ours.status.code(), Some(1));
    assert_eq!(ours.status.code(), theirs.status.code());
    assert_eq!(String::from_utf8_lossy(&ours.stderr), String::from_utf8_lossy(&theirs.stderr));
    assert_eq!(std::fs::read(d.join("s.rrd")).expect("read"), first, "-O left the file alone");
    // No temporary file is left behind.
    let names: Vec<_> =
        std::fs::read_dir(d).expect("ls").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(names.len(), 1, "{names:?}");
}
