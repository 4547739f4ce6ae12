//! Which format is this? Sniffed from the first bytes of a source.

use crate::layout::Format;
use crate::source::PageSource;

/// Bytes of the `magic` field of a bbolt meta page as stored on a
/// little-endian host (0xED0CDAED).
const BOLT_MAGIC_LE: [u8; 4] = [0xed, 0xda, 0x0c, 0xed];
/// The same magic written by a big-endian host.
const BOLT_MAGIC_BE: [u8; 4] = [0xed, 0x0c, 0xda, 0xed];

/// Every format [`detect`] recognises (all but [`Format::Unknown`]), for
/// messages that say what was tried.
pub const TRIED: [Format; 3] = [Format::Bolt, Format::Rrd, Format::Revlog];

/// The format of `src`, judged by its first page: the `RRD\0` cookie of an
/// RRDtool file (any architecture); else the bbolt magic at
/// byte 16 (or at byte 16 of a probed meta page 1 when meta 0 is
/// damaged); else a Mercurial revlog index when its version header *and*
/// revision 0's entry look like hg's ([`crate::revlog::sniff`]: a 4-byte
/// big-endian version alone is a weak signal, and the detector sees no
/// file name, so it stays conservative); else [`Format::Unknown`]. Never
/// fails: a read error is simply "unknown".
#[must_use]
pub fn detect<S: PageSource + ?Sized>(src: &S) -> Format {
    let probe = |off: u64| -> bool {
        src.read_at(off + 16, 4).is_ok_and(|b| *b == BOLT_MAGIC_LE || *b == BOLT_MAGIC_BE)
    };
    if crate::rrd::sniff(src) {
        return Format::Rrd;
    }
    if probe(0) {
        return Format::Bolt;
    }
    let len = src.len();
    if (0..=14u32)
        .map(|i| 1024u64 << i)
        .take_while(|&off| off < len.saturating_sub(1024))
        .any(probe)
    {
        return Format::Bolt;
    }
    if crate::revlog::sniff(src) {
        return Format::Revlog;
    }
    Format::Unknown
}

/// The architecture of an RRD written on a machine whose layout mapwise
/// does not read (big-endian, 32-bit): detected as [`Format::Rrd`] but
/// foreign. `None` for a native RRD or any other file.
#[must_use]
pub fn foreign_rrd<S: PageSource + ?Sized>(src: &S) -> Option<crate::rrd::Arch> {
    crate::rrd::foreign_arch(src)
}

/// `true` when the bbolt magic at byte 16 is in big-endian order: a file
/// written on a big-endian host, which little-endian readers cannot use.
#[must_use]
pub fn is_foreign_endian_bolt<S: PageSource + ?Sized>(src: &S) -> bool {
    src.read_at(16, 4).is_ok_and(|b| *b == BOLT_MAGIC_BE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{At, Error};
    use alloc::vec;

    static CHANGELOG: &[u8] = include_bytes!("../../testdata/revlog/00changelog.i");
    static SPLIT: &[u8] = include_bytes!("../../testdata/revlog/synthetic-2000/00changelog.i");
    static GAUGE: &[u8] = include_bytes!("../../testdata/rrd/gauge.rrd");
    static SMALL_DB: &[u8] = include_bytes!("../../testdata/bolt/small.db");

    /// Damage to one field of revision 0 (p1, p2, link, base, node,
    /// lengths) leaves the file a revlog: detection rests on the version
    /// word and the entry geometry, and the layout names the fault.
    #[test]
    fn one_bad_field_in_rev_0_is_still_a_revlog() {
        for base in [CHANGELOG, SPLIT] {
            // p1 = 5000 (byte 24), p2 = 7 (28), link = -5 (20),
            // base = 9 (16), node zeroed (32..52), comp len = -1 (8).
            let edits: [(usize, &[u8]); 6] = [
                (24, &5000i32.to_be_bytes()),
                (28, &7i32.to_be_bytes()),
                (20, &(-5i32).to_be_bytes()),
                (16, &9i32.to_be_bytes()),
                (32, &[0; 20]),
                (8, &(-1i32).to_be_bytes()),
            ];
            for (at, bytes) in edits {
                let mut b = base.to_vec();
                b[at..at + bytes.len()].copy_from_slice(bytes);
                assert_eq!(detect(&b[..]), Format::Revlog, "byte {at}");
            }
        }
        let mut b = CHANGELOG.to_vec();
        b[24..28].copy_from_slice(&5000i32.to_be_bytes());
        let l = crate::revlog::layout(&b[..], crate::revlog::LayoutOptions::default());
        assert!(
            l.layout.problems.iter().any(|p| matches!(
                p,
                Error::Invalid {
                    at: At::Revision { rev: 0, offset: 0 },
                    field: "parent_rev_1",
                    value: 5000,
                    ..
                }
            )),
            "{:?}",
            l.layout.problems
        );
    }

    /// Bytes without a format's identifying bytes stay unknown, however
    /// their length falls.
    #[test]
    fn no_identifying_bytes_is_unknown() {
        for len in [0, 10, 64, 76, 76 * 10, 4096, 64 * 100] {
            assert_eq!(detect(&vec![0u8; len][..]), Format::Unknown, "zeros {len}");
            assert_eq!(detect(&vec![0x5au8; len][..]), Format::Unknown, "0x5a {len}");
        }
        // v1 header with non-zero padding after rev 0's node: not hg's.
        let mut b = SPLIT.to_vec();
        b[60] = 1;
        assert_eq!(detect(&b[..]), Format::Unknown);
    }

    /// RRD: the cookie alone (a bad version or counts are the header
    /// parser's problem); bbolt: the magic in either meta page.
    #[test]
    fn rrd_cookie_and_bolt_magic_in_either_meta() {
        let mut b = GAUGE.to_vec();
        b[4..9].copy_from_slice(b"9999\0"); // version
        b[12..20].copy_from_slice(&[0xff; 8]); // float_cookie
        assert_eq!(detect(&b[..]), Format::Rrd);
        let mut b = SMALL_DB.to_vec();
        b[16..20].copy_from_slice(&[0; 4]); // meta 0's magic
        assert_eq!(detect(&b[..]), Format::Bolt);
        let mut b = SMALL_DB.to_vec();
        b[4096 + 16..4096 + 20].copy_from_slice(&[0; 4]); // meta 1's magic
        b[20..24].copy_from_slice(&[9; 4]); // meta 0's version
        assert_eq!(detect(&b[..]), Format::Bolt);
    }
}
