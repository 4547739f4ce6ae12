//! What the structures in a byte range are, as titled lists of named
//! fields: the detail pane of the inspector and `inspector page` for
//! formats other than bbolt (whose pages have their own richer decoder,
//! [`mapwise_core::bolt::page_detail`]).

use std::fmt::Write as _;

use mapwise_core::PageSource;
use mapwise_core::layout::{Format, Kind, Layout};
use mapwise_core::revlog::Index;
use serde::Serialize;

/// One structure of the file, described for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// What it is, e.g. `rev 17`.
    pub title: String,
    /// Its fields in file order: name and value as text.
    pub fields: Vec<(String, String)>,
}

impl Item {
    fn new(title: impl Into<String>) -> Item {
        Item {
            title: title.into(),
            fields: Vec::new(),
        }
    }

    fn field(mut self, name: &str, value: impl ToString) -> Item {
        self.fields.push((name.to_owned(), value.to_string()));
        self
    }
}

/// Most structures described for one range (a 4 KiB page of a revlog
/// index holds 64 entries).
pub const MAX_ITEMS: usize = 256;

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The structures of `layout` that overlap `[offset, offset + len)` of
/// `src`, described. Formats without a describer give an empty list.
///
/// # Errors
/// When the structures cannot be decoded, as text.
pub fn describe<S: PageSource + ?Sized>(
    layout: &Layout,
    src: &S,
    offset: u64,
    len: u64,
) -> Result<Vec<Item>, String> {
    match layout.format {
        Format::Revlog => revlog(layout, src, offset, len),
        _ => Ok(Vec::new()),
    }
}

/// Revlog index entries and inline data chunks in the range: each entry's
/// fields as `hg debugindex --debug` names them.
fn revlog<S: PageSource + ?Sized>(
    layout: &Layout,
    src: &S,
    offset: u64,
    len: u64,
) -> Result<Vec<Item>, String> {
    let index = Index::open(src).map_err(|e| e.to_string())?;
    let mut items = Vec::new();
    for r in layout.regions_in(offset, len).take(MAX_ITEMS) {
        let rev = i32::try_from(r.id).unwrap_or(i32::MAX);
        let item = match r.kind {
            Kind::Entry => match index.entry(rev) {
                Ok(e) => {
                    let (p1, p2) = index.parent_revs(&e);
                    Item::new(format!("rev {rev}"))
                        .field("entry at", format!("{} ({} bytes)", r.offset, r.len))
                        .field("data offset", e.data_offset())
                        .field("flags", format!("{:#06x}", e.flags()))
                        .field("compressed", format!("{} bytes", e.compressed_len()))
                        .field("uncompressed", format!("{} bytes", e.uncompressed_len()))
                        .field("delta base", e.base_rev())
                        .field("linkrev", e.link_rev())
                        .field("p1", p1)
                        .field("p2", p2)
                        .field("nodeid", hex(e.node()))
                }
                Err(e) => Item::new(format!("rev {rev}")).field("cannot decode", e),
            },
            Kind::Chunk => {
                // The first byte says how hg stored it: 'u' plain, 'x'
                // (0x78) zlib, '(' zstd, '\0' raw; `mercurial/revlog.py`.
                let first = src
                    .read_at(r.offset, 1)
                    .ok()
                    .and_then(|b| b.first().copied());
                let how = match first {
                    Some(b'u') => "uncompressed ('u')",
                    Some(b'x') => "zlib",
                    Some(b'(') => "zstd",
                    Some(0) => "raw (starts with NUL)",
                    None => "empty",
                    Some(_) => "unknown marker",
                };
                Item::new(format!("rev {rev} data (inline)"))
                    .field("at", r.offset)
                    .field("length", format!("{} bytes", r.len))
                    .field("stored", how)
            }
            other => Item::new(other.name()).field("bytes", format!("{}..{}", r.offset, r.end())),
        };
        items.push(item);
    }
    Ok(items)
}
