//! How much of a map cell is in the page cache: the one rule that turns
//! a cell's resident OS pages into one of four levels, and the glyphs the
//! terminal map draws for them. The browser draws the same levels
//! ([`Residence::level`]) as shades.

/// How much of a map cell is in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Residence {
    /// Every OS page of the cell.
    All,
    /// More than half.
    Most,
    /// Some, at most half.
    Some,
    /// None.
    None,
    /// The kernel does not tell (or there is no sample).
    Unknown,
    /// The cell lies past the current end of the file.
    PastEof,
}

impl Residence {
    /// The level of a cell with `resident` of its `pages` OS pages in the
    /// page cache: [`None`](Residence::None) for no page (a cell of no
    /// pages included), [`All`](Residence::All) for every one,
    /// [`Most`](Residence::Most) for more than half, else
    /// [`Some`](Residence::Some).
    #[must_use]
    pub fn of(resident: u64, pages: u64) -> Residence {
        if resident == 0 {
            Residence::None
        } else if resident >= pages {
            Residence::All
        } else if resident.saturating_mul(2) > pages {
            Residence::Most
        } else {
            Residence::Some
        }
    }

    /// The map glyph: `█` all resident, `▓` most, `▒` some, `░` none, `?`
    /// unknown, `×` past the end of the file.
    #[must_use]
    pub fn glyph(self) -> char {
        match self {
            Residence::All => '█',
            Residence::Most => '▓',
            Residence::Some => '▒',
            Residence::None => '░',
            Residence::Unknown => '?',
            Residence::PastEof => '×',
        }
    }

    /// The glyph of the selected cell: `●` all resident, `◐` partly, `○`
    /// none, `?` unknown, `×` past the end.
    #[must_use]
    pub fn selected_glyph(self) -> char {
        match self {
            Residence::All => '●',
            Residence::Most | Residence::Some => '◐',
            Residence::None => '○',
            Residence::Unknown => '?',
            Residence::PastEof => '×',
        }
    }

    /// The level as a number for the browser: 0 none, 1 some, 2 most,
    /// 3 all, 254 unknown, 255 past the end of the file.
    #[must_use]
    pub const fn level(self) -> u8 {
        match self {
            Residence::None => 0,
            Residence::Some => 1,
            Residence::Most => 2,
            Residence::All => 3,
            Residence::Unknown => 254,
            Residence::PastEof => 255,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_levels() {
        assert_eq!(Residence::of(0, 4), Residence::None);
        assert_eq!(Residence::of(0, 0), Residence::None);
        assert_eq!(Residence::of(1, 4), Residence::Some);
        assert_eq!(Residence::of(2, 4), Residence::Some);
        assert_eq!(Residence::of(3, 4), Residence::Most);
        assert_eq!(Residence::of(4, 4), Residence::All);
        assert_eq!(Residence::of(5, 4), Residence::All);
        assert_eq!(Residence::of(u64::MAX, u64::MAX - 1), Residence::All);
        assert_eq!(Residence::Most.glyph(), '▓');
        assert_eq!(Residence::Some.selected_glyph(), '◐');
        assert_eq!(Residence::PastEof.level(), 255);
    }
}
