//! Obsolescence markers (`.hg/store/obsstore`) and phase roots
//! (`.hg/store/phaseroots`): the two store files hg needs besides the
//! changelog to decide which changesets `hg log` hides.
//!
//! Facts from Mercurial 6.3, `mercurial/obsolete.py` (`_readmarkers`,
//! `_fm0readmarkers`, `_fm0decodemeta`, `_fm1purereadmarkers`, the comment
//! describing format 1, `obsstore.__nonzero__`), `mercurial/obsutil.py`
//! (`bumpedfix`, `usingsha256`) and `mercurial/phases.py` (`_readroots`,
//! the phase numbers). See `docs/format/revlog.md`, "Hidden changesets".
//!
//! The obsstore is one version byte, then markers back to back:
//!
//! * format 0: `numsuc` u8, `mdsize` u32, `flags` u8, the predecessor
//!   (20 bytes), `numsuc` successors of 20 bytes, then `mdsize` bytes of
//!   metadata `key:value` joined by NUL; the predecessor's parents, when
//!   recorded, are the metadata keys `p1`/`p2` (hex) or `p0` (no parent);
//! * format 1: total marker size u32 (this field included), date f64
//!   (seconds), timezone i16 (minutes), `flags` u16, `numsuc` u8,
//!   `numpar` u8 (3 = parents not recorded), `nummeta` u8, then the
//!   predecessor, successors and parents as nodes of 20 bytes (32 when
//!   flag `usingsha256` = 2 is set), `nummeta` pairs of (key length u8,
//!   value length u8), then the keys and values themselves.
//!
//! Every integer is big-endian. A marker with no successor is a *prune*.

use alloc::vec::Vec;

use crate::error::{At, Error, Result};
use crate::revlog::index::{NODE_LEN, Node};

/// Marker flag: the successor fixes a "bumped" (phase-divergent)
/// changeset (`obsutil.bumpedfix`).
pub const FLAG_BUMPEDFIX: u16 = 1;
/// Marker flag: nodes are 32 bytes (`obsutil.usingsha256`); format 1 only
/// reads it to size the nodes.
pub const FLAG_USING_SHA256: u16 = 2;
/// Format 1's `numpar` value meaning "no parent data stored"
/// (`_fm1parentnone`).
pub const FM1_PARENTS_NONE: u8 = 3;

/// Fixed part of a format-0 marker (`_fm0fixed`, `>BIB20s`).
const FM0_FIXED: usize = 1 + 4 + 1 + NODE_LEN;
/// Fixed part of a format-1 marker before the nodes (`_fm1fixed`,
/// `>IdhHBBB`).
const FM1_FIXED: usize = 4 + 8 + 2 + 2 + 1 + 1 + 1;

/// A node as a marker stores it: 20 bytes (SHA-1), or 32 with
/// [`FLAG_USING_SHA256`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerNode {
    len: u8,
    bytes: [u8; 32],
}

impl MarkerNode {
    fn new(b: &[u8]) -> MarkerNode {
        let mut bytes = [0; 32];
        let n = b.len().min(32);
        bytes[..n].copy_from_slice(&b[..n]);
        MarkerNode { len: u8::try_from(n).unwrap_or(32), bytes }
    }

    /// The stored bytes (20 or 32).
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The node as a changelog nodeid, when it is a 20-byte one.
    #[must_use]
    pub fn sha1(&self) -> Option<Node> {
        self.as_bytes().try_into().ok()
    }
}

/// One obsolescence marker: "`predecessor` was rewritten into
/// `successors`" (none: pruned).
#[derive(Debug, Clone, PartialEq)]
pub struct Marker<'a> {
    /// Byte offset of the marker in the obsstore.
    pub offset: u64,
    /// The obsoleted changeset (hg: `prec`).
    pub predecessor: MarkerNode,
    successors: &'a [u8],
    node_len: usize,
    /// Marker flags ([`FLAG_BUMPEDFIX`], [`FLAG_USING_SHA256`]).
    pub flags: u16,
    /// The predecessor's parents when the marker records them (prune
    /// markers do, so they travel with their ancestors); `None` when not
    /// recorded. At most two.
    pub parents: Option<Vec<MarkerNode>>,
    /// Date: seconds since the epoch and the timezone offset in seconds
    /// (hg's `(secs, tz)`; format 0 keeps it in the `date` metadata, whose
    /// absence or damage gives `(0.0, 0)`).
    pub date: (f64, i32),
    /// Metadata `(key, value)` pairs in stored order (format 0: the
    /// `date`, `p0`, `p1`, `p2` keys excluded, as hg pops them).
    pub metadata: Vec<(&'a [u8], &'a [u8])>,
}

impl Marker<'_> {
    /// The successors, in stored order; empty for a prune.
    pub fn successors(&self) -> impl Iterator<Item = MarkerNode> + '_ {
        self.successors.chunks_exact(self.node_len.max(1)).map(MarkerNode::new)
    }

    /// `true` for a prune marker (no successor).
    #[must_use]
    pub fn is_prune(&self) -> bool {
        self.successors.is_empty()
    }
}

/// The markers of an obsstore, in file order. Yields an error for the
/// first damaged marker and then stops.
#[derive(Debug, Clone)]
pub struct Markers<'a> {
    data: &'a [u8],
    version: u8,
    off: usize,
    failed: bool,
}

/// The obsstore's format version, or `None` for an empty file.
#[must_use]
pub fn obsstore_version(data: &[u8]) -> Option<u8> {
    data.first().copied()
}

/// `true` when the obsstore holds markers as hg counts them
/// (`obsstore.__nonzero__`: more than the version byte).
#[must_use]
pub fn has_markers(data: &[u8]) -> bool {
    data.len() > 1
}

/// Start reading an obsstore's bytes (the whole file, as hg reads it).
///
/// # Errors
/// [`Error::Unsupported`] for a version other than 0 and 1 (hg: "parsing
/// obsolete marker: unknown version").
pub fn markers(data: &[u8]) -> Result<Markers<'_>> {
    let version = obsstore_version(data).unwrap_or(1);
    if version > 1 {
        return Err(Error::Unsupported {
            at: At::Offset(0),
            what: "obsstore format version other than 0 and 1",
        });
    }
    Ok(Markers { data, version, off: 1, failed: false })
}

/// `data[from..from + len]`, or an out-of-bounds error naming `field`.
fn take<'a>(
    data: &'a [u8],
    at: usize,
    from: usize,
    len: usize,
    field: &'static str,
) -> Result<&'a [u8]> {
    from.checked_add(len).and_then(|end| data.get(from..end)).ok_or(Error::OutOfBounds {
        at: At::Offset(at as u64),
        field,
        offset: from as u64,
        len: len as u64,
        size: data.len() as u64,
    })
}

fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A 40-digit hex nodeid, or `None`.
fn unhex(s: &[u8]) -> Option<Node> {
    if s.len() != 2 * NODE_LEN {
        return None;
    }
    let mut n = [0u8; NODE_LEN];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        let d = |c: u8| (c as char).to_digit(16);
        n[i] = u8::try_from(d(pair[0])? * 16 + d(pair[1])?).ok()?;
    }
    Some(n)
}

/// hg's `date` metadata of format 0: `"<float secs> <int tz>"`.
fn fm0_date(v: &[u8]) -> Option<(f64, i32)> {
    let s = core::str::from_utf8(v).ok()?;
    let (when, tz) = s.split_once(' ')?;
    Some((when.parse().ok()?, tz.parse().ok()?))
}

impl<'a> Markers<'a> {
    /// The format version (0 or 1; 1 for an empty file).
    #[must_use]
    pub fn version(&self) -> u8 {
        self.version
    }

    fn fm0(&mut self) -> Result<Marker<'a>> {
        let d = self.data;
        let at = self.off;
        let fixed = take(d, at, at, FM0_FIXED, "marker")?;
        let numsuc = usize::from(fixed[0]);
        let mdsize = be_u32(&fixed[1..5]) as usize;
        let flags = u16::from(fixed[5]);
        let predecessor = MarkerNode::new(&fixed[6..]);
        let mut off = at + FM0_FIXED;
        let successors = take(d, at, off, numsuc * NODE_LEN, "successors")?;
        off += successors.len();
        let meta = take(d, at, off, mdsize, "mdsize")?;
        off += mdsize;
        let mut metadata = Vec::new();
        let (mut date, mut p0, mut p1, mut p2) = (None, false, None, None);
        for item in meta.split(|&b| b == 0).filter(|l| !l.is_empty()) {
            let Some(colon) = item.iter().position(|&b| b == b':') else {
                return Err(Error::Invalid {
                    at: At::Offset(at as u64),
                    field: "metadata",
                    value: item.len() as u64,
                    expected: "key:value items",
                });
            };
            let (k, v) = (&item[..colon], &item[colon + 1..]);
            match k {
                b"date" => date = Some(v),
                b"p0" => p0 = true,
                b"p1" => p1 = Some(v),
                b"p2" => p2 = Some(v),
                _ => metadata.push((k, v)),
            }
        }
        // `_fm0readmarkers`: p2 present → (p1, p2); p1 → (p1,); p0 → ();
        // any value that is not a 20-byte hex node drops the parents.
        let listed: Option<Vec<Option<&[u8]>>> = if p2.is_some() {
            Some(alloc::vec![p1, p2])
        } else if p1.is_some() {
            Some(alloc::vec![p1])
        } else if p0 {
            Some(Vec::new())
        } else {
            None
        };
        let parents = listed.and_then(|ps| {
            ps.into_iter()
                .map(|p| p.and_then(unhex).map(|n| MarkerNode::new(&n)))
                .collect::<Option<Vec<_>>>()
        });
        self.off = off;
        Ok(Marker {
            offset: at as u64,
            predecessor,
            successors,
            node_len: NODE_LEN,
            flags,
            parents,
            date: date.and_then(fm0_date).unwrap_or((0.0, 0)),
            metadata,
        })
    }

    fn fm1(&mut self) -> Result<Marker<'a>> {
        let d = self.data;
        let at = self.off;
        let fixed = take(d, at, at, FM1_FIXED, "marker")?;
        let size = be_u32(&fixed[0..4]) as usize;
        let secs = f64::from_bits(u64::from_be_bytes([
            fixed[4], fixed[5], fixed[6], fixed[7], fixed[8], fixed[9], fixed[10], fixed[11],
        ]));
        let tz = i16::from_be_bytes([fixed[12], fixed[13]]);
        let flags = be_u16(&fixed[14..16]);
        let numsuc = usize::from(fixed[16]);
        let numpar = fixed[17];
        let nummeta = usize::from(fixed[18]);
        if size < FM1_FIXED {
            return Err(Error::Invalid {
                at: At::Offset(at as u64),
                field: "size",
                value: size as u64,
                expected: "at least the 19-byte fixed part",
            });
        }
        if d.len() - at < size {
            return Err(Error::OutOfBounds {
                at: At::Offset(at as u64),
                field: "size",
                offset: at as u64,
                len: size as u64,
                size: d.len() as u64,
            });
        }
        // The marker's own bytes: nothing it names may lie outside them.
        let m = &d[at..at + size];
        let node_len = if flags & FLAG_USING_SHA256 != 0 { 32 } else { NODE_LEN };
        let mut off = FM1_FIXED;
        let predecessor = MarkerNode::new(take(m, at, off, node_len, "predecessor")?);
        off += node_len;
        let successors = take(m, at, off, numsuc * node_len, "numsuc")?;
        off += successors.len();
        let parents = if numpar == FM1_PARENTS_NONE {
            None
        } else {
            let raw = take(m, at, off, usize::from(numpar) * node_len, "numpar")?;
            off += raw.len();
            Some(raw.chunks_exact(node_len).map(MarkerNode::new).collect())
        };
        let sizes = take(m, at, off, 2 * nummeta, "nummeta")?;
        off += sizes.len();
        let mut metadata = Vec::with_capacity(nummeta);
        for pair in sizes.chunks_exact(2) {
            let k = take(m, at, off, usize::from(pair[0]), "metadata key")?;
            off += k.len();
            let v = take(m, at, off, usize::from(pair[1]), "metadata value")?;
            off += v.len();
            metadata.push((k, v));
        }
        // hg's C reader steps by the size field; a size that ends before
        // the marker's content is caught by the bounded reads above.
        self.off = at + size;
        Ok(Marker {
            offset: at as u64,
            predecessor,
            successors,
            node_len,
            flags,
            parents,
            date: (secs, i32::from(tz) * 60),
            metadata,
        })
    }
}

impl<'a> Iterator for Markers<'a> {
    type Item = Result<Marker<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.off >= self.data.len() {
            return None;
        }
        let r = if self.version == 0 { self.fm0() } else { self.fm1() };
        self.failed = r.is_err();
        Some(r)
    }
}

/// Phase numbers (`phases.py`: public, draft, secret = 0, 1, 2; archived
/// = 32; internal = 96).
pub mod phase {
    /// Immutable, shared history.
    pub const PUBLIC: u32 = 0;
    /// Mutable, exchanged.
    pub const DRAFT: u32 = 1;
    /// Mutable, never exchanged.
    pub const SECRET: u32 = 2;
    /// Kept locally but hidden (`archived`, a `localhiddenphases` member).
    pub const ARCHIVED: u32 = 32;
    /// hg's internal changesets (`internal`, hidden too).
    pub const INTERNAL: u32 = 96;

    /// `true` for the phases hg knows (`allphases`).
    #[must_use]
    pub fn is_known(p: u32) -> bool {
        matches!(p, PUBLIC | DRAFT | SECRET | ARCHIVED | INTERNAL)
    }

    /// `true` for `localhiddenphases` (archived, internal): hideable
    /// without any marker.
    #[must_use]
    pub fn is_local_hidden(p: u32) -> bool {
        p >= ARCHIVED
    }
}

/// One line of `phaseroots`: `"<phase> <40 hex digits>"`. A changeset's
/// phase is the highest phase of the roots among its ancestors and itself
/// (public when there is none).
///
/// # Errors
/// [`Error::Invalid`] (at the line's byte offset) for a line hg could not
/// split into two fields, a phase number hg does not know (hg fails on
/// it too) or a node that is not 40 hex digits.
pub fn phase_roots(text: &[u8]) -> Result<Vec<(u32, Node)>> {
    let mut out = Vec::new();
    let mut off = 0usize;
    for line in text.split_inclusive(|&b| b == b'\n') {
        let at = off;
        off += line.len();
        let mut fields = line.split(|b| b.is_ascii_whitespace()).filter(|f| !f.is_empty());
        let (Some(p), Some(n), None) = (fields.next(), fields.next(), fields.next()) else {
            if line.iter().all(u8::is_ascii_whitespace) {
                // `line.split()` of an empty last line: hg never writes one.
                continue;
            }
            return Err(Error::Invalid {
                at: At::Offset(at as u64),
                field: "phaseroots line",
                value: line.len() as u64,
                expected: "\"<phase> <hex node>\"",
            });
        };
        let phase = core::str::from_utf8(p)
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
            .filter(|&x| phase::is_known(x))
            .ok_or(Error::Invalid {
                at: At::Offset(at as u64),
                field: "phase",
                value: p.len() as u64,
                expected: "0, 1, 2, 32 or 96",
            })?;
        let node = unhex(n).ok_or(Error::Invalid {
            at: At::Offset(at as u64),
            field: "phaseroots node",
            value: n.len() as u64,
            expected: "40 hex digits",
        })?;
        out.push((phase, node));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm1(prec: u8, sucs: &[u8], numpar: u8, pars: &[u8], meta: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&[prec; 20]);
        for s in sucs {
            body.extend_from_slice(&[*s; 20]);
        }
        for p in pars {
            body.extend_from_slice(&[*p; 20]);
        }
        for (k, v) in meta {
            body.push(u8::try_from(k.len()).unwrap());
            body.push(u8::try_from(v.len()).unwrap());
        }
        for (k, v) in meta {
            body.extend_from_slice(k);
            body.extend_from_slice(v);
        }
        let mut m = Vec::new();
        m.extend_from_slice(&u32::try_from(FM1_FIXED + body.len()).unwrap().to_be_bytes());
        m.extend_from_slice(&1.5f64.to_bits().to_be_bytes());
        m.extend_from_slice(&(-60i16).to_be_bytes());
        m.extend_from_slice(&0u16.to_be_bytes());
        m.extend_from_slice(&[
            u8::try_from(sucs.len()).unwrap(),
            numpar,
            u8::try_from(meta.len()).unwrap(),
        ]);
        m.extend_from_slice(&body);
        m
    }

    #[test]
    fn format1_markers_and_damage() {
        let mut f = alloc::vec![1u8];
        f.extend(fm1(7, &[8, 9], 3, &[], &[(b"user", b"t")]));
        f.extend(fm1(5, &[], 1, &[4], &[]));
        let ms: Vec<_> = markers(&f).unwrap().collect::<Result<_>>().unwrap();
        assert_eq!(ms.len(), 2);
        assert_eq!(ms[0].predecessor.sha1(), Some([7; 20]));
        assert_eq!(ms[0].successors().count(), 2);
        assert_eq!(ms[0].parents, None);
        assert_eq!(ms[0].date, (1.5, -3600));
        assert_eq!(ms[0].metadata, alloc::vec![(&b"user"[..], &b"t"[..])]);
        assert!(ms[1].is_prune());
        assert_eq!(ms[1].parents.as_ref().map(Vec::len), Some(1));
        // Every truncation is an error or fewer markers, never a panic.
        for cut in 0..f.len() {
            let _ = markers(&f[..cut]).map(|m| m.count());
        }
        // A size field past the end is an error.
        let mut bad = f.clone();
        bad[1..5].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(markers(&bad).unwrap().any(|m| m.is_err()));
        assert!(markers(&[2]).is_err());
    }

    #[test]
    fn format0_parents_from_metadata() {
        let p1 = [b'a'; 40];
        let mut meta = Vec::new();
        meta.extend_from_slice(b"date:10 0\0p1:");
        meta.extend_from_slice(&p1);
        meta.extend_from_slice(b"\0user:x");
        let mut f = alloc::vec![0u8, 1];
        f.extend_from_slice(&u32::try_from(meta.len()).unwrap().to_be_bytes());
        f.push(0);
        f.extend_from_slice(&[3; 20]);
        f.extend_from_slice(&[4; 20]);
        f.extend_from_slice(&meta);
        let ms: Vec<_> = markers(&f).unwrap().collect::<Result<_>>().unwrap();
        assert_eq!(ms[0].predecessor.sha1(), Some([3; 20]));
        assert_eq!(ms[0].parents.as_ref().unwrap()[0].sha1(), Some([0xaa; 20]));
        assert_eq!(ms[0].date, (10.0, 0));
        assert_eq!(ms[0].metadata, alloc::vec![(&b"user"[..], &b"x"[..])]);
    }

    #[test]
    fn phaseroots_lines() {
        let text = b"1 0000000000000000000000000000000000000001\n2 ffffffffffffffffffffffffffffffffffffffff\n";
        let r = phase_roots(text).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].0, phase::SECRET);
        assert!(phase_roots(b"7 00\n").is_err());
        assert!(phase_roots(b"1\n").is_err());
    }
}
