//! Bytes, regions and pages per page kind: the legend of both front ends,
//! the inspector's status line and its `residency` and `layout` reports.

use mapwise_core::layout::{Kind, KindCounts};
use serde::Serialize;

/// Totals of one page kind, as the reports write them in JSON (the field
/// names are stable) and the legends show them.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct KindTotal {
    /// The kind's name (`meta`, `branch`, `leaf`, `cur_row`, ...).
    pub kind: &'static str,
    /// Index of the kind in [`Kind::ALL`]: the value of a browser map cell
    /// of this kind.
    pub index: u8,
    /// Bytes of the file (or of the cell) of this kind.
    pub bytes: u64,
    /// Regions of this kind.
    pub regions: u64,
    /// Distinct map pages (of the unit given to
    /// [`mapwise_core::layout::Layout::kind_counts`]) that this kind's
    /// regions overlap ([`KindCounts::pages`]): a page holding two kinds
    /// counts for both, so the column may sum to more than the file's
    /// pages.
    pub pages: u64,
    /// Bytes of this kind in the page cache: for every region of the kind,
    /// its bytes that lie in resident OS pages; `None` when residency is
    /// unknown or was not sampled (always in the browser).
    pub resident_bytes: Option<u64>,
    /// Of the `pages` this kind touches, those wholly in the page cache;
    /// `None` when residency is unknown or was not sampled.
    pub resident_pages: Option<u64>,
}

impl KindTotal {
    /// The totals of `kind` in `counts`, with no residency.
    #[must_use]
    pub fn of(kind: Kind, counts: &KindCounts) -> KindTotal {
        let i = kind.index();
        KindTotal {
            kind: kind.name(),
            index: u8::try_from(i).unwrap_or(u8::MAX),
            bytes: counts.bytes.get(i).copied().unwrap_or(0),
            regions: counts.regions.get(i).copied().unwrap_or(0),
            pages: counts.pages.get(i).copied().unwrap_or(0),
            resident_bytes: None,
            resident_pages: None,
        }
    }
}

/// The totals of every kind of `counts` that has bytes, in legend order
/// ([`Kind::ALL`]), with no residency.
#[must_use]
pub fn kind_totals(counts: &KindCounts) -> Vec<KindTotal> {
    Kind::ALL.iter().map(|&k| KindTotal::of(k, counts)).filter(|t| t.bytes > 0).collect()
}
