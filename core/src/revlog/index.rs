//! The revlog index: the version header, v0 and v1 entries, inline data.
//!
//! Facts from Mercurial 6.3 (`mercurial/revlogutils/constants.py`:
//! `INDEX_HEADER`, `INDEX_ENTRY_V0`, `INDEX_ENTRY_V1`, `FLAG_*`,
//! `REVLOGV*`, `SUPPORTED_FLAGS`; `mercurial/revlog.py`, `_loadindex`;
//! `mercurial/pure/parsers.py`, `IndexObject`, `InlinedIndexObject`;
//! `mercurial/revlogutils/revlogv0.py`, `parse_index_v0`). Every integer
//! is big-endian. See `docs/format/revlog.md`.

use alloc::borrow::Cow;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::error::{At, Error, Result};
use crate::source::PageSource;

/// A revision number: 0 for the first revision, [`NULL_REV`] for "none".
/// hg stores them as signed 32-bit integers.
pub type Rev = i32;
/// A nodeid: the 20-byte SHA-1 of a revision (`sha1nodeconstants`).
pub type Node = [u8; NODE_LEN];

/// The null revision (`nullrev`): parent of root revisions.
pub const NULL_REV: Rev = -1;
/// Bytes of a nodeid.
pub const NODE_LEN: usize = 20;
/// The null nodeid (`nullid`): twenty zero bytes.
pub const NULL_NODE: Node = [0; NODE_LEN];
/// Bytes of the version header at the start of the file (`INDEX_HEADER`,
/// `>I`). It overlaps the first entry.
pub const HEADER_SIZE: usize = 4;
/// Bytes of a v0 entry (`INDEX_ENTRY_V0`, `>4l20s20s20s`).
pub const V0_ENTRY_SIZE: usize = 76;
/// Bytes of a v1 entry (`INDEX_ENTRY_V1`, `>Qiiiiii20s12x`).
pub const V1_ENTRY_SIZE: usize = 64;
/// Format version 0 (`REVLOGV0`): the original format.
pub const REVLOGV0: u16 = 0;
/// Format version 1, "RevlogNG" (`REVLOGV1`): hg's default since 0.9.
pub const REVLOGV1: u16 = 1;
/// Revlog v2 (`REVLOGV2`): experimental, docket based. Not read here.
pub const REVLOGV2: u16 = 0xDEAD;
/// Changelog v2 (`CHANGELOGV2`): experimental, docket based. Not read here.
pub const CHANGELOGV2: u16 = 0xD34D;
/// Header flag: entries and data chunks interleave in the `.i` file
/// (`FLAG_INLINE_DATA`).
pub const FLAG_INLINE_DATA: u32 = 1 << 16;
/// Header flag: an entry's base is the revision it is a delta against
/// (`FLAG_GENERALDELTA`).
pub const FLAG_GENERALDELTA: u32 = 1 << 17;
/// Per-revision flag: censored (`REVIDX_ISCENSORED`).
pub const REVIDX_ISCENSORED: u16 = 1 << 15;
/// Per-revision flag: ellipsis node of a narrow clone (`REVIDX_ELLIPSIS`).
pub const REVIDX_ELLIPSIS: u16 = 1 << 14;
/// Per-revision flag: data stored outside the revlog (`REVIDX_EXTSTORED`).
pub const REVIDX_EXTSTORED: u16 = 1 << 13;
/// Per-revision flag: changeset carries copy information in sidedata
/// (`REVIDX_HASCOPIESINFO`).
pub const REVIDX_HASCOPIESINFO: u16 = 1 << 12;
/// Every per-revision flag hg knows (`REVISION_FLAGS_KNOWN` in
/// `mercurial/interfaces/repository.py`).
pub const REVIDX_KNOWN_FLAGS: u16 =
    REVIDX_ISCENSORED | REVIDX_ELLIPSIS | REVIDX_EXTSTORED | REVIDX_HASCOPIESINFO;
/// Most data bytes hg keeps in an inline revlog before splitting it into
/// `.i` + `.d` (`revlog._maxinline`, 128 KiB).
pub const MAX_INLINE_DATA: u64 = 131_072;
/// Most revisions a revlog can number: revision numbers are `i32` and
/// `0x7fffffff` is reserved for the working directory (`wdirrev`).
pub const MAX_REVS: u64 = 0x7fff_ffff;
/// `comp-mode` of every v0/v1 entry: the compression is named by the
/// chunk's first byte (`COMP_MODE_INLINE`).
pub const COMP_MODE_INLINE: u8 = 2;
/// `rank` of every v0/v1 entry: not stored (`RANK_UNKNOWN`).
pub const RANK_UNKNOWN: i32 = -1;

/// The entry layout of an index file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// 76-byte entries; parents stored as nodeids; never inline.
    V0,
    /// 64-byte "RevlogNG" entries; parents stored as revision numbers.
    V1,
}

impl Version {
    /// Bytes per entry: 76 (v0) or 64 (v1).
    #[must_use]
    pub fn entry_size(self) -> usize {
        match self {
            Version::V0 => V0_ENTRY_SIZE,
            Version::V1 => V1_ENTRY_SIZE,
        }
    }

    /// The version number in the header's low 16 bits.
    #[must_use]
    pub fn number(self) -> u16 {
        match self {
            Version::V0 => REVLOGV0,
            Version::V1 => REVLOGV1,
        }
    }
}

/// The first four bytes of an index: format version (low 16 bits) and
/// format flags (high 16 bits), as `_loadindex` splits them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The big-endian u32 as stored.
    pub raw: u32,
    /// The entry layout it selects.
    pub version: Version,
}

impl Header {
    /// What hg assumes for an empty (or missing) index:
    /// `REVLOG_DEFAULT_VERSION`, v1 + inline.
    pub const DEFAULT: Header =
        Header { raw: REVLOGV1 as u32 | FLAG_INLINE_DATA, version: Version::V1 };

    /// Check a header value as `_loadindex` does: a known version, and no
    /// flag outside `SUPPORTED_FLAGS` for that version.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for revlog v2 and changelog v2;
    /// [`Error::Invalid`] (`format_version`, `format_flags`) otherwise.
    pub fn parse(raw: u32) -> Result<Header> {
        let version = (raw & 0xFFFF) as u16;
        let flags = raw & !0xFFFF;
        let at = At::Offset(0);
        match version {
            REVLOGV0 if flags == 0 => Ok(Header { raw, version: Version::V0 }),
            REVLOGV0 => Err(Error::Invalid {
                at,
                field: "format_flags",
                value: u64::from(flags >> 16),
                expected: "no flags in a version 0 revlog",
            }),
            REVLOGV1 if flags & !(FLAG_INLINE_DATA | FLAG_GENERALDELTA) == 0 => {
                Ok(Header { raw, version: Version::V1 })
            }
            REVLOGV1 => Err(Error::Invalid {
                at,
                field: "format_flags",
                value: u64::from(flags >> 16),
                expected: "only bits 0 (inline) and 1 (generaldelta) in a version 1 revlog",
            }),
            REVLOGV2 => Err(Error::Unsupported {
                at,
                what: "revlog v2 (version 0xDEAD): the .i file is a docket naming other files; an experimental hg format mapwise does not read",
            }),
            CHANGELOGV2 => Err(Error::Unsupported {
                at,
                what: "changelog v2 (version 0xD34D): the .i file is a docket naming other files; an experimental hg format mapwise does not read",
            }),
            v => Err(Error::Invalid {
                at,
                field: "format_version",
                value: u64::from(v),
                expected: "0 (v0) or 1 (v1, RevlogNG)",
            }),
        }
    }

    /// The format flags (high 16 bits), still shifted.
    #[must_use]
    pub fn flags(self) -> u32 {
        self.raw & !0xFFFF
    }

    /// `true` when entries and data chunks interleave in the `.i` file.
    #[must_use]
    pub fn is_inline(self) -> bool {
        self.raw & FLAG_INLINE_DATA != 0
    }

    /// `true` when an entry's base is its delta parent (generaldelta).
    #[must_use]
    pub fn is_generaldelta(self) -> bool {
        self.raw & FLAG_GENERALDELTA != 0
    }
}

/// Big-endian readers that never panic: `None` past the end.
pub(crate) fn be32(b: &[u8], off: usize) -> Option<u32> {
    let s: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_be_bytes(s))
}

fn be64(b: &[u8], off: usize) -> Option<u64> {
    let s: [u8; 8] = b.get(off..off.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_be_bytes(s))
}

fn node_at(b: &[u8], off: usize) -> Option<&Node> {
    b.get(off..off.checked_add(NODE_LEN)?)?.try_into().ok()
}

/// The null entry in v1 layout: offset, lengths 0; base, link and parents
/// -1; the null node (`BaseIndexObject.null_item`).
static NULL_ENTRY: [u8; V1_ENTRY_SIZE] = {
    let mut b = [0u8; V1_ENTRY_SIZE];
    let mut i = 16;
    while i < 32 {
        b[i] = 0xff;
        i += 1;
    }
    b
};

/// The parents of an entry as stored: revision numbers in v1, nodeids
/// in v0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredParents<'a> {
    /// v1: `parent_rev_1`, `parent_rev_2`.
    Revs(Rev, Rev),
    /// v0: the parents' nodeids.
    Nodes(&'a Node, &'a Node),
}

/// One index entry, borrowed from the source when it is a slice or a
/// mapping. Field names follow `revlogutils.entry()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'s> {
    rev: Rev,
    position: Option<u64>,
    version: Version,
    bytes: Cow<'s, [u8]>,
}

impl<'s> Entry<'s> {
    /// The null revision's entry (`index[-1]`).
    #[must_use]
    pub fn null() -> Entry<'s> {
        Entry {
            rev: NULL_REV,
            position: None,
            version: Version::V1,
            bytes: Cow::Borrowed(&NULL_ENTRY),
        }
    }

    /// Decode the `version.entry_size()` bytes of revision `rev` read at
    /// file offset `position`.
    ///
    /// # Errors
    /// [`Error::Read`] when `bytes` has the wrong length;
    /// [`Error::Invalid`] for a negative `data_compressed_length` (or a
    /// negative v0 `data_offset`): lengths and offsets cannot be negative.
    pub fn decode(
        rev: Rev,
        position: u64,
        version: Version,
        bytes: Cow<'s, [u8]>,
    ) -> Result<Entry<'s>> {
        let size = version.entry_size();
        if bytes.len() != size {
            return Err(Error::Read { offset: position, len: size as u64, code: 0 });
        }
        let e = Entry { rev, position: Some(position), version, bytes };
        let at = At::Offset(position);
        let (comp_at, offset_v0) = match version {
            Version::V0 => (4, be32(&e.bytes, 0)),
            Version::V1 => (8, None),
        };
        let comp = be32(&e.bytes, comp_at).unwrap_or(0);
        if comp > i32::MAX as u32 {
            return Err(Error::Invalid {
                at,
                field: "data_compressed_length",
                value: u64::from(comp),
                expected: "a length from 0 to 2^31 - 1 (the field is a signed 32-bit integer)",
            });
        }
        if let Some(off) = offset_v0.filter(|&o| o > i32::MAX as u32) {
            return Err(Error::Invalid {
                at,
                field: "data_offset",
                value: u64::from(off),
                expected: "an offset from 0 to 2^31 - 1 (a v0 offset is a signed 32-bit integer)",
            });
        }
        Ok(e)
    }

    /// The revision number ([`NULL_REV`] for the null entry).
    #[must_use]
    pub fn rev(&self) -> Rev {
        self.rev
    }

    /// File offset of the entry in the `.i` file (`None` for the null entry).
    #[must_use]
    pub fn position(&self) -> Option<u64> {
        self.position
    }

    /// The layout of [`Entry::bytes`] (the null entry is always v1).
    #[must_use]
    pub fn version(&self) -> Version {
        self.version
    }

    /// The entry's bytes as stored (for rev 0 the first four are the
    /// version header).
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn i32_at(&self, off: usize) -> i32 {
        be32(&self.bytes, off).map_or(0, |v| v as i32)
    }

    /// `offset << 16 | flags`, hg's tuple field 0 (`ENTRY_DATA_OFFSET`).
    /// For rev 0 the header bytes are masked out, as every hg index does.
    #[must_use]
    pub fn offset_flags(&self) -> u64 {
        match self.version {
            Version::V0 => u64::from(be32(&self.bytes, 0).unwrap_or(0)) << 16,
            Version::V1 if self.rev == 0 => be64(&self.bytes, 0).unwrap_or(0) & 0xFFFF,
            Version::V1 => be64(&self.bytes, 0).unwrap_or(0),
        }
    }

    /// Where this revision's chunk starts in the data stream, in bytes
    /// (the `.d` file, or the data bytes only of an inline `.i`).
    #[must_use]
    pub fn data_offset(&self) -> u64 {
        self.offset_flags() >> 16
    }

    /// Per-revision flags (`REVIDX_*`); always 0 in v0.
    #[must_use]
    pub fn flags(&self) -> u16 {
        (self.offset_flags() & 0xFFFF) as u16
    }

    /// Stored (compressed) chunk length in bytes
    /// (`data_compressed_length`); checked non-negative at decode.
    #[must_use]
    pub fn compressed_len(&self) -> u32 {
        let at = match self.version {
            Version::V0 => 4,
            Version::V1 => 8,
        };
        be32(&self.bytes, at).unwrap_or(0)
    }

    /// Full-text length in bytes (`data_uncompressed_length`); v0 does
    /// not store it and hg reports -1; a negative value means "unknown".
    #[must_use]
    pub fn uncompressed_len(&self) -> i32 {
        match self.version {
            Version::V0 => -1,
            Version::V1 => self.i32_at(12),
        }
    }

    /// Delta base (`data_delta_base`): with generaldelta the revision this
    /// chunk is a delta against (itself for a full snapshot), else the
    /// first revision of its delta chain.
    #[must_use]
    pub fn base_rev(&self) -> Rev {
        match self.version {
            Version::V0 => self.i32_at(8),
            Version::V1 => self.i32_at(16),
        }
    }

    /// Link revision (`link_rev`): the changelog revision that introduced
    /// this revision.
    #[must_use]
    pub fn link_rev(&self) -> Rev {
        match self.version {
            Version::V0 => self.i32_at(12),
            Version::V1 => self.i32_at(20),
        }
    }

    /// The parents as stored (revisions in v1, nodeids in v0). Use
    /// [`Index::parent_revs`] for revision numbers in both versions.
    #[must_use]
    pub fn stored_parents(&self) -> StoredParents<'_> {
        match self.version {
            Version::V0 => StoredParents::Nodes(
                node_at(&self.bytes, 16).unwrap_or(&NULL_NODE),
                node_at(&self.bytes, 36).unwrap_or(&NULL_NODE),
            ),
            Version::V1 => StoredParents::Revs(self.i32_at(24), self.i32_at(28)),
        }
    }

    /// The nodeid (`node_id`).
    #[must_use]
    pub fn node(&self) -> &Node {
        let at = match self.version {
            Version::V0 => 56,
            Version::V1 => 32,
        };
        node_at(&self.bytes, at).unwrap_or(&NULL_NODE)
    }
}

/// The fields of one v1 index entry, to be written: what
/// `INDEX_ENTRY_V1` (`>Qiiiiii20s12x`, Mercurial's
/// `mercurial/revlogutils/constants.py`) packs from the first eight values
/// of an index tuple (`mercurial/pure/parsers.py`, `_pack_entry`,
/// `entry_binary`). [`Entry`] reads the same fields back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V1Entry {
    /// Where the chunk starts in the data stream (48 bits are stored).
    pub data_offset: u64,
    /// Per-revision flags (`REVIDX_*`).
    pub flags: u16,
    /// Stored chunk length (`data_compressed_length`).
    pub compressed_len: u32,
    /// Full-text length (`data_uncompressed_length`).
    pub uncompressed_len: i32,
    /// Delta base (`data_delta_base`).
    pub base_rev: Rev,
    /// Link revision (`link_rev`).
    pub link_rev: Rev,
    /// First parent (`parent_rev_1`), [`NULL_REV`] for none.
    pub p1: Rev,
    /// Second parent (`parent_rev_2`).
    pub p2: Rev,
    /// The nodeid (`node_id`), see [`node_hash_input`].
    pub node: Node,
}

impl V1Entry {
    /// The 64 bytes hg writes for this entry: `offset << 16 | flags` as a
    /// big-endian u64, six big-endian i32 (lengths, base, link, parents),
    /// the node, 12 zero bytes of padding.
    #[must_use]
    pub fn encode(&self) -> [u8; V1_ENTRY_SIZE] {
        let mut b = [0u8; V1_ENTRY_SIZE];
        b[..8].copy_from_slice(&((self.data_offset << 16) | u64::from(self.flags)).to_be_bytes());
        let ints = [
            self.compressed_len.to_be_bytes(),
            self.uncompressed_len.to_be_bytes(),
            self.base_rev.to_be_bytes(),
            self.link_rev.to_be_bytes(),
            self.p1.to_be_bytes(),
            self.p2.to_be_bytes(),
        ];
        for (i, v) in ints.iter().enumerate() {
            b[8 + 4 * i..12 + 4 * i].copy_from_slice(v);
        }
        b[32..52].copy_from_slice(&self.node);
        b
    }

    /// Revision 0's 64 bytes: its first four replaced by the version
    /// header `raw` (`INDEX_HEADER`, `>I`), as `revlog.py` writes the first
    /// entry of an index without a docket (`pack_header(header) +
    /// entry_binary(0)`, which drops the entry's first four bytes; rev 0's
    /// offset is 0, so they held nothing).
    #[must_use]
    pub fn encode_first(&self, raw: u32) -> [u8; V1_ENTRY_SIZE] {
        let mut b = self.encode();
        b[..HEADER_SIZE].copy_from_slice(&raw.to_be_bytes());
        b
    }
}

/// hg's nodeid rule (`storageutil.hashrevisionsha1`): the nodeid of a
/// revision is the SHA-1 of its two parents' nodes, the smaller first,
/// then its full text. Core has no SHA-1, so this gives the nodes in the
/// order they are hashed; the caller feeds them and the text to its hash.
/// (With a null second parent hg hashes the null node first: the same
/// order, since nothing sorts below twenty zero bytes.)
#[must_use]
pub fn node_hash_input<'a>(p1: &'a Node, p2: &'a Node) -> [&'a Node; 2] {
    if p1 <= p2 { [p1, p2] } else { [p2, p1] }
}

/// Where a revision's stored chunk lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSpan {
    /// The revision.
    pub rev: Rev,
    /// Offset in the data stream (`data_offset`), bytes.
    pub data_offset: u64,
    /// Stored length (`data_compressed_length`), bytes.
    pub len: u32,
    /// For an inline revlog, where the chunk actually lies in the `.i`
    /// file (right after its entry); `None` when the data is in `.d`.
    pub inline_position: Option<u64>,
}

/// A revlog index opened over any [`PageSource`].
///
/// Opening reads the 4-byte header. The number of revisions of a
/// non-inline index comes from the source length (`len / entry size`),
/// never from a field, so opening touches only the first bytes and
/// entries are read when asked for: reading the last five revisions of a
/// mapped index touches its first and last pages only. An inline index
/// must be scanned once (each entry's chunk length says where the next
/// entry starts), as hg's `InlinedIndexObject` does; a v0 index is read
/// once to turn parent nodeids into revisions, as `parse_index_v0` does.
#[derive(Debug)]
pub struct Index<'s, S: PageSource + ?Sized> {
    src: &'s S,
    len: u64,
    header: Header,
    count: u32,
    /// Inline only: file offset of each entry.
    inline: Vec<u64>,
    /// v0 only: parent revisions resolved from the stored nodeids.
    v0_parents: Vec<(Rev, Rev)>,
}

/// `rev` as the raw bits of its 32-bit field, for error values.
fn rev_bits(rev: Rev) -> u64 {
    u64::from(rev as u32)
}

/// Walk an inline index: call `visit(rev, position, chunk_len)` for each
/// entry whose chunk fits, stop at the first fault and return it.
pub(crate) fn scan_inline<S: PageSource + ?Sized>(
    src: &S,
    mut visit: impl FnMut(u32, u64, u32),
) -> Result<u32> {
    let len = src.len();
    let es = V1_ENTRY_SIZE as u64;
    let mut pos = 0u64;
    let mut count = 0u32;
    while pos < len {
        if len - pos < es {
            return Err(Error::OutOfBounds {
                at: At::Offset(pos),
                field: "entry",
                offset: pos,
                len: es,
                size: len,
            });
        }
        if u64::from(count) >= MAX_REVS {
            return Err(Error::Unsupported {
                at: At::Offset(pos),
                what: "more revisions than a revlog can number (2^31 - 1)",
            });
        }
        let b = src.read_at(pos + 8, 4)?;
        let comp = be32(&b, 0).unwrap_or(0);
        if comp > i32::MAX as u32 {
            return Err(Error::Invalid {
                at: At::Offset(pos),
                field: "data_compressed_length",
                value: u64::from(comp),
                expected: "a length from 0 to 2^31 - 1 (the field is a signed 32-bit integer)",
            });
        }
        let chunk = pos + es;
        if chunk + u64::from(comp) > len {
            return Err(Error::OutOfBounds {
                at: At::Offset(pos),
                field: "data_compressed_length",
                offset: chunk,
                len: u64::from(comp),
                size: len,
            });
        }
        visit(count, pos, comp);
        count += 1;
        pos = chunk + u64::from(comp);
    }
    Ok(count)
}

/// Read the version header of a non-empty source.
pub(crate) fn read_header<S: PageSource + ?Sized>(src: &S) -> Result<Header> {
    let len = src.len();
    if len < HEADER_SIZE as u64 {
        return Err(Error::OutOfBounds {
            at: At::Offset(0),
            field: "format_version",
            offset: 0,
            len: HEADER_SIZE as u64,
            size: len,
        });
    }
    let b = src.read_at(0, HEADER_SIZE)?;
    Header::parse(be32(&b, 0).unwrap_or(0))
}

/// For a non-inline index, the number of whole entries, or the error
/// for a file that ends inside an entry.
pub(crate) fn fixed_count(len: u64, version: Version) -> Result<u32> {
    let es = version.entry_size() as u64;
    let rem = len % es;
    // hg reads v0 entries while a whole one fits and ignores a partial
    // last one (revlogv0.py, `parse_index_v0`: `while off + s <= l`); a
    // v1 index must be whole entries (revlog.c, "corrupt index file").
    if rem != 0 && version != Version::V0 {
        let pos = len - rem;
        return Err(Error::OutOfBounds {
            at: At::Offset(pos),
            field: "entry",
            offset: pos,
            len: es,
            size: len,
        });
    }
    let count = len / es;
    if count > MAX_REVS {
        return Err(Error::Unsupported {
            at: At::Offset(0),
            what: "more revisions than a revlog can number (2^31 - 1)",
        });
    }
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}

impl<'s, S: PageSource + ?Sized> Index<'s, S> {
    /// Open the index in `src`. An empty source is an empty revlog with
    /// hg's default header (v1, inline), as `_loadindex` treats a missing
    /// or empty `.i`.
    ///
    /// # Errors
    /// [`Error::OutOfBounds`] for a file shorter than its header, a file
    /// ending inside an entry, or an inline chunk running past the end;
    /// [`Error::Invalid`] for an unknown version or flags, or a negative
    /// length; [`Error::Unsupported`] for revlog v2 / changelog v2.
    pub fn open(src: &'s S) -> Result<Index<'s, S>> {
        let len = src.len();
        let mut index = Index {
            src,
            len,
            header: Header::DEFAULT,
            count: 0,
            inline: Vec::new(),
            v0_parents: Vec::new(),
        };
        if len == 0 {
            return Ok(index);
        }
        index.header = read_header(src)?;
        if index.header.is_inline() {
            let mut offsets = Vec::new();
            index.count = scan_inline(src, |_, pos, _| offsets.push(pos))?;
            index.inline = offsets;
        } else {
            index.count = fixed_count(len, index.header.version)?;
        }
        if index.header.version == Version::V0 {
            index.v0_parents = index.resolve_v0_parents()?;
        }
        Ok(index)
    }

    /// hg's `parse_index_v0`: parents are looked up in a node → rev map
    /// holding the revisions *before* this one (later duplicates win, the
    /// null node maps to -1, unknown nodes become -1).
    fn resolve_v0_parents(&self) -> Result<Vec<(Rev, Rev)>> {
        let mut map: BTreeMap<Node, Rev> = BTreeMap::new();
        map.insert(NULL_NODE, NULL_REV);
        let mut out = Vec::new();
        for rev in 0..self.count {
            let e = self.entry(rev as Rev)?;
            if let StoredParents::Nodes(p1, p2) = e.stored_parents() {
                let get = |n: &Node| map.get(n).copied().unwrap_or(NULL_REV);
                out.push((get(p1), get(p2)));
            }
            map.insert(*e.node(), rev as Rev);
        }
        Ok(out)
    }

    /// The page source.
    #[must_use]
    pub fn source(&self) -> &'s S {
        self.src
    }

    /// Source length in bytes when opened.
    #[must_use]
    pub fn source_len(&self) -> u64 {
        self.len
    }

    /// The version header (hg's default for an empty index).
    #[must_use]
    pub fn header(&self) -> Header {
        self.header
    }

    /// Entry layout.
    #[must_use]
    pub fn version(&self) -> Version {
        self.header.version
    }

    /// `true` when data chunks are inside the `.i` file.
    #[must_use]
    pub fn is_inline(&self) -> bool {
        self.header.is_inline()
    }

    /// `true` for a generaldelta revlog.
    #[must_use]
    pub fn is_generaldelta(&self) -> bool {
        self.header.is_generaldelta()
    }

    /// Number of revisions.
    #[must_use]
    pub fn len(&self) -> u32 {
        self.count
    }

    /// `true` when the revlog has no revisions.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The last revision ([`NULL_REV`] when empty).
    #[must_use]
    pub fn tip(&self) -> Rev {
        self.count as Rev - 1
    }

    /// File offset of revision `rev`'s entry, when `0 <= rev < len()`.
    #[must_use]
    pub fn entry_position(&self, rev: Rev) -> Option<u64> {
        let r = u32::try_from(rev).ok().filter(|&r| r < self.count)?;
        if self.header.is_inline() {
            self.inline.get(r as usize).copied()
        } else {
            u64::from(r).checked_mul(self.header.version.entry_size() as u64)
        }
    }

    /// The entry of revision `rev`; [`NULL_REV`] gives the null entry.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`rev`) for a revision outside
    /// `[-1, len())`; read and decode errors of [`Entry::decode`].
    pub fn entry(&self, rev: Rev) -> Result<Entry<'s>> {
        if rev == NULL_REV {
            return Ok(Entry::null());
        }
        let Some(position) = self.entry_position(rev) else {
            return Err(Error::Invalid {
                at: At::Offset(self.len),
                field: "rev",
                value: rev_bits(rev),
                expected: "a revision of this index (-1 to len - 1)",
            });
        };
        let size = self.header.version.entry_size();
        let bytes = self.src.read_at(position, size)?;
        Entry::decode(rev, position, self.header.version, bytes)
    }

    /// The nodeid of `rev` (the null node for [`NULL_REV`]).
    ///
    /// # Errors
    /// As [`Index::entry`].
    pub fn node(&self, rev: Rev) -> Result<Node> {
        Ok(*self.entry(rev)?.node())
    }

    /// Parent revisions of `entry` as hg's index reports them (v0 nodeids
    /// resolved as `parse_index_v0` does). Not range-checked: see
    /// [`Index::checked_parents`].
    #[must_use]
    pub fn parent_revs(&self, entry: &Entry<'_>) -> (Rev, Rev) {
        match entry.stored_parents() {
            StoredParents::Revs(p1, p2) => (p1, p2),
            StoredParents::Nodes(..) => u32::try_from(entry.rev())
                .ok()
                .and_then(|r| self.v0_parents.get(r as usize).copied())
                .unwrap_or((NULL_REV, NULL_REV)),
        }
    }

    /// Parent revisions of `entry`, each checked to be [`NULL_REV`] or an
    /// earlier revision (a parent is always older than its child).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming `parent_rev_1` or `parent_rev_2`.
    pub fn checked_parents(&self, entry: &Entry<'_>) -> Result<(Rev, Rev)> {
        let (p1, p2) = self.parent_revs(entry);
        let at = At::Offset(entry.position().unwrap_or(0));
        for (field, p) in [("parent_rev_1", p1), ("parent_rev_2", p2)] {
            if entry.rev() != NULL_REV && (p < NULL_REV || p >= entry.rev()) {
                return Err(Error::Invalid {
                    at,
                    field,
                    value: rev_bits(p),
                    expected: "-1 (none) or an earlier revision",
                });
            }
        }
        Ok((p1, p2))
    }

    /// Where revision `rev`'s chunk lies.
    ///
    /// # Errors
    /// As [`Index::entry`].
    pub fn chunk(&self, rev: Rev) -> Result<ChunkSpan> {
        let e = self.entry(rev)?;
        let inline_position = if self.header.is_inline() {
            e.position().map(|p| p + V1_ENTRY_SIZE as u64)
        } else {
            None
        };
        Ok(ChunkSpan {
            rev,
            data_offset: e.data_offset(),
            len: e.compressed_len(),
            inline_position,
        })
    }

    /// Check that the chunks of `revs` lie inside a data (`.d`) file of
    /// `data_len` bytes. Inline revlogs have no data file: nothing to check.
    ///
    /// # Errors
    /// [`Error::OutOfBounds`] at the first entry (by file offset) whose
    /// `data_offset` + `data_compressed_length` passes `data_len`; entry
    /// read errors.
    pub fn check_data_len(&self, data_len: u64, revs: impl IntoIterator<Item = Rev>) -> Result<()> {
        if self.header.is_inline() {
            return Ok(());
        }
        for rev in revs {
            let e = self.entry(rev)?;
            let (off, len) = (e.data_offset(), u64::from(e.compressed_len()));
            if off.checked_add(len).is_none_or(|end| end > data_len) {
                return Err(Error::OutOfBounds {
                    at: At::Offset(e.position().unwrap_or(0)),
                    field: "data_offset",
                    offset: off,
                    len,
                    size: data_len,
                });
            }
        }
        Ok(())
    }
}

/// `true` when `src` starts with a revlog index, judged by the format's
/// identifying bytes, never by whether revision 0's fields are valid (a
/// damaged entry is a problem the layout names, not a different format):
///
/// * v1: the version/flags word (`REVLOGV1` with only the inline and
///   generaldelta flags, `mercurial/revlogutils/constants.py`), at least
///   one whole 64-byte entry, the 12 bytes of zero padding after the
///   nodeid of revision 0 (`INDEX_ENTRY_V1 = ">Qiiiiii20s12x"`), and for a
///   non-inline index a size that is a whole number of entries (hg
///   computes the revision count from the size);
/// * v0: its version word is 0, which any file starting with four zero
///   bytes has, so nothing in the header identifies it; the file must be a
///   whole number of 76-byte entries and revision 0 must look like one hg
///   writes (null parents, a non-null nodeid, a delta base of 0 or -1);
/// * a v2 / changelog-v2 docket (an unsupported format, still worth
///   naming) by its exact header value and small size (at most 4 KiB).
///
/// Never fails.
#[must_use]
pub fn sniff<S: PageSource + ?Sized>(src: &S) -> bool {
    let len = src.len();
    let Ok(head) = src.read_at(0, HEADER_SIZE) else {
        return false;
    };
    let raw = be32(&head, 0).unwrap_or(u32::MAX);
    if matches!(raw, 0x0000_DEAD | 0x0001_DEAD | 0x0000_D34D) {
        return len <= 4096;
    }
    let Ok(header) = Header::parse(raw) else {
        return false;
    };
    let es = header.version.entry_size();
    let Ok(bytes) = src.read_at(0, es) else {
        return false;
    };
    match header.version {
        Version::V1 => {
            let padding_clear = bytes.get(52..64).is_some_and(|p| p.iter().all(|&b| b == 0));
            padding_clear && (header.is_inline() || len.is_multiple_of(es as u64))
        }
        Version::V0 => {
            let Ok(e) = Entry::decode(0, 0, header.version, bytes) else {
                return false;
            };
            let no_parents = matches!(
                e.stored_parents(),
                StoredParents::Nodes(p1, p2) if *p1 == NULL_NODE && *p2 == NULL_NODE
            );
            len.is_multiple_of(es as u64)
                && no_parents
                && matches!(e.base_rev(), 0 | NULL_REV)
                && *e.node() != NULL_NODE
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloc::vec;

    /// A v1 entry with the given fields (big-endian, as hg packs it).
    #[expect(clippy::too_many_arguments)]
    pub(crate) fn v1_entry(
        offset: u64,
        flags: u16,
        comp: i32,
        uncomp: i32,
        base: Rev,
        link: Rev,
        p1: Rev,
        p2: Rev,
        node: u8,
    ) -> Vec<u8> {
        V1Entry {
            data_offset: offset,
            flags,
            compressed_len: comp as u32,
            uncompressed_len: uncomp,
            base_rev: base,
            link_rev: link,
            p1,
            p2,
            node: [node; 20],
        }
        .encode()
        .to_vec()
    }

    /// Every entry of hg-written indexes (split, inline, generaldelta)
    /// decodes into fields that encode back to the same 64 bytes, rev 0
    /// with its header; the byte layout is pinned by hand too.
    #[test]
    fn encoder_round_trips_hg_indexes() {
        static FILES: [&[u8]; 3] = [
            include_bytes!("../../../testdata/revlog/synthetic-2000/00changelog.i"),
            include_bytes!("../../../testdata/revlog/00changelog.i"),
            include_bytes!("../../../testdata/revlog/00manifest.i"),
        ];
        for bytes in FILES {
            let idx = Index::open(bytes).unwrap();
            assert!(idx.len() > 10);
            for rev in 0..=idx.tip() {
                let e = idx.entry(rev).unwrap();
                let StoredParents::Revs(p1, p2) = e.stored_parents() else { panic!("v1") };
                let fields = V1Entry {
                    data_offset: e.data_offset(),
                    flags: e.flags(),
                    compressed_len: e.compressed_len(),
                    uncompressed_len: e.uncompressed_len(),
                    base_rev: e.base_rev(),
                    link_rev: e.link_rev(),
                    p1,
                    p2,
                    node: *e.node(),
                };
                let out =
                    if rev == 0 { fields.encode_first(idx.header().raw) } else { fields.encode() };
                assert_eq!(&out[..], e.bytes(), "rev {rev}");
            }
        }
        let e = V1Entry {
            data_offset: 0x0102_0304_0506,
            flags: 0x0708,
            compressed_len: 9,
            uncompressed_len: -1,
            base_rev: 2,
            link_rev: 3,
            p1: NULL_REV,
            p2: 5,
            node: [0xab; 20],
        };
        let b = e.encode();
        assert_eq!(b[..8], [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(b[8..16], [0, 0, 0, 9, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(b[24..32], [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 5]);
        assert_eq!((b[32], b[51], &b[52..]), (0xab, 0xab, &[0u8; 12][..]));
        assert_eq!(e.encode_first(0x0001_0001)[..8], [0, 1, 0, 1, 5, 6, 7, 8]);
        let (lo, hi) = ([1u8; 20], [2u8; 20]);
        assert_eq!(node_hash_input(&hi, &lo), [&lo, &hi]);
        assert_eq!(node_hash_input(&lo, &NULL_NODE), [&NULL_NODE, &lo]);
    }

    fn with_header(mut first: Vec<u8>, header: u32) -> Vec<u8> {
        first[..4].copy_from_slice(&header.to_be_bytes());
        first
    }

    #[test]
    fn headers() {
        assert_eq!(Header::parse(0x0001_0001).unwrap().version, Version::V1);
        assert!(Header::parse(0x0003_0001).unwrap().is_generaldelta());
        assert_eq!(Header::parse(0).unwrap().version, Version::V0);
        assert!(matches!(
            Header::parse(0x0004_0001),
            Err(Error::Invalid { field: "format_flags", value: 4, .. })
        ));
        assert!(matches!(
            Header::parse(0x0001_0000),
            Err(Error::Invalid { field: "format_flags", .. })
        ));
        assert!(matches!(
            Header::parse(2),
            Err(Error::Invalid { field: "format_version", value: 2, .. })
        ));
        assert!(matches!(Header::parse(0xDEAD), Err(Error::Unsupported { .. })));
        assert!(matches!(Header::parse(0xD34D), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn non_inline_entries_and_null() {
        let mut data = with_header(v1_entry(0, 0, 10, 12, 0, 0, -1, -1, 1), 0x0000_0001);
        data.extend(v1_entry(10, REVIDX_ISCENSORED, 5, 7, 0, 1, 0, -1, 2));
        let idx = Index::open(&data[..]).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(idx.tip(), 1);
        let e0 = idx.entry(0).unwrap();
        assert_eq!((e0.data_offset(), e0.flags()), (0, 0));
        assert_eq!(e0.compressed_len(), 10);
        assert!(matches!(e0.bytes, Cow::Borrowed(_)), "zero-copy");
        let e1 = idx.entry(1).unwrap();
        assert_eq!(e1.data_offset(), 10);
        assert_eq!(e1.flags(), REVIDX_ISCENSORED);
        assert_eq!(idx.checked_parents(&e1).unwrap(), (0, -1));
        assert_eq!(e1.node(), &[2; 20]);
        let null = idx.entry(NULL_REV).unwrap();
        assert_eq!(null.node(), &NULL_NODE);
        assert_eq!((null.base_rev(), null.link_rev()), (-1, -1));
        assert_eq!(idx.parent_revs(&null), (-1, -1));
        assert!(idx.entry(2).is_err());
        assert!(idx.entry(-2).is_err());
        assert!(idx.check_data_len(15, 0..2).is_ok());
        assert!(matches!(
            idx.check_data_len(14, 0..2),
            Err(Error::OutOfBounds { at: At::Offset(64), .. })
        ));
    }

    #[test]
    fn inline_scan_and_faults() {
        let mut data = with_header(v1_entry(0, 0, 3, 3, 0, 0, -1, -1, 1), 0x0001_0001);
        data.extend_from_slice(b"uab");
        data.extend(v1_entry(3, 0, 2, 2, 1, 1, 0, -1, 2));
        data.extend_from_slice(b"ux");
        let idx = Index::open(&data[..]).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(idx.entry_position(1), Some(67));
        assert_eq!(idx.chunk(1).unwrap().inline_position, Some(131));
        // A chunk running past the end.
        let cut = &data[..data.len() - 1];
        assert!(matches!(
            Index::open(cut),
            Err(Error::OutOfBounds { at: At::Offset(67), field: "data_compressed_length", .. })
        ));
        // A truncated entry.
        assert!(matches!(
            Index::open(&data[..100]),
            Err(Error::OutOfBounds { at: At::Offset(67), field: "entry", .. })
        ));
        // A negative length.
        let mut neg = data.clone();
        neg[8..12].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(matches!(
            Index::open(&neg[..]),
            Err(Error::Invalid { field: "data_compressed_length", .. })
        ));
    }

    #[test]
    fn truncated_and_tiny_sources() {
        let data = with_header(v1_entry(0, 0, 0, 0, 0, 0, -1, -1, 1), 1);
        assert!(matches!(
            Index::open(&data[..63]),
            Err(Error::OutOfBounds { at: At::Offset(0), .. })
        ));
        assert!(Index::open(&data[..3]).is_err());
        let empty: &[u8] = &[];
        let idx = Index::open(empty).unwrap();
        assert!(idx.is_empty());
        assert_eq!(idx.tip(), NULL_REV);
        assert_eq!(idx.header(), Header::DEFAULT);
    }

    #[test]
    fn v0_parents_resolve_through_nodes() {
        let v0 = |comp: i32, base: Rev, link: Rev, p1: u8, p2: u8, node: u8| {
            let mut b = vec![0u8; 4];
            for v in [comp, base, link] {
                b.extend_from_slice(&v.to_be_bytes());
            }
            b.extend_from_slice(&[p1; 20]);
            b.extend_from_slice(&[p2; 20]);
            b.extend_from_slice(&[node; 20]);
            b
        };
        let mut data = v0(4, 0, 0, 0, 0, 7);
        data.extend(v0(4, 1, 1, 7, 0, 8));
        data.extend(v0(4, 2, 2, 8, 9, 9)); // p2 names a node not (yet) known
        let idx = Index::open(&data[..]).unwrap();
        assert_eq!(idx.version(), Version::V0);
        assert_eq!(idx.len(), 3);
        let e2 = idx.entry(2).unwrap();
        assert_eq!(idx.parent_revs(&e2), (1, -1));
        assert_eq!(e2.uncompressed_len(), -1);
        // A partial last entry is ignored, as hg's parse_index_v0 does.
        assert_eq!(Index::open(&data[..100]).unwrap().len(), 1);
    }

    #[test]
    fn parents_must_be_older() {
        let mut data = with_header(v1_entry(0, 0, 0, 0, 0, 0, -1, -1, 1), 1);
        data.extend(v1_entry(0, 0, 0, 0, 1, 1, 1, -1, 2));
        let idx = Index::open(&data[..]).unwrap();
        let e = idx.entry(1).unwrap();
        assert!(matches!(
            idx.checked_parents(&e),
            Err(Error::Invalid { field: "parent_rev_1", .. })
        ));
    }
}
