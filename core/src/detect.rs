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
        src.read_at(off + 16, 4)
            .is_ok_and(|b| *b == BOLT_MAGIC_LE || *b == BOLT_MAGIC_BE)
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
