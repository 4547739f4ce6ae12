//! The colour of each page kind, one table for both front ends: the map,
//! the legend and the structure pane draw a kind in the same colour in a
//! terminal and in the browser.
//!
//! A colour is an index into the xterm 256-colour palette (0–15 the
//! system colours, 16–231 the 6×6×6 cube, 232–255 the grey ramp): the
//! terminal draws the index, and the page draws xterm's default RGB for
//! it ([`xterm_rgb`]), so a user sees the same colours in both.

use mapwise_core::layout::Kind;

/// The xterm palette index `kind` is drawn in. The system colours (0–15)
/// are the terminal's named colours (13 is light magenta); kinds no other
/// rule names are white (15).
#[must_use]
pub fn kind_colour(kind: Kind) -> u8 {
    match kind {
        Kind::Meta => 13,       // light magenta
        Kind::Freelist => 3,    // yellow
        Kind::Branch => 12,     // light blue
        Kind::Leaf => 2,        // green
        Kind::Overflow => 6,    // cyan
        Kind::Free => 7,        // grey
        Kind::Pending => 208,   // orange
        Kind::Unreachable => 9, // light red
        Kind::Unused => 8,      // dark grey
        Kind::Corrupt => 1,     // red
        Kind::Unknown => 139,   // mauve
        Kind::Header => 99,     // violet
        Kind::Prep => 214,      // amber
        Kind::Rows => 71,       // moss green
        Kind::CurRow => 226,    // bright yellow
        Kind::Entry => 14,      // light cyan
        Kind::Chunk => 180,     // tan
        _ => 15,                // white
    }
}

/// xterm's default RGB for palette index `index`, as `[r, g, b]`.
#[must_use]
pub fn xterm_rgb(index: u8) -> [u8; 3] {
    /// The 16 system colours of xterm's default resources.
    const SYSTEM: [[u8; 3]; 16] = [
        [0x00, 0x00, 0x00],
        [0xcd, 0x00, 0x00],
        [0x00, 0xcd, 0x00],
        [0xcd, 0xcd, 0x00],
        [0x00, 0x00, 0xee],
        [0xcd, 0x00, 0xcd],
        [0x00, 0xcd, 0xcd],
        [0xe5, 0xe5, 0xe5],
        [0x7f, 0x7f, 0x7f],
        [0xff, 0x00, 0x00],
        [0x00, 0xff, 0x00],
        [0xff, 0xff, 0x00],
        [0x5c, 0x5c, 0xff],
        [0xff, 0x00, 0xff],
        [0x00, 0xff, 0xff],
        [0xff, 0xff, 0xff],
    ];
    match index {
        0..16 => SYSTEM[usize::from(index)],
        16..232 => {
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            let i = index - 16;
            [level(i / 36), level(i / 6 % 6), level(i % 6)]
        }
        _ => {
            let v = 8 + 10 * (index - 232);
            [v, v, v]
        }
    }
}

/// The CSS colour (`#rrggbb`) the browser draws `kind` in: xterm's RGB
/// for [`kind_colour`].
#[must_use]
pub fn kind_css(kind: Kind) -> String {
    let [r, g, b] = xterm_rgb(kind_colour(kind));
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours() {
        assert_eq!(kind_css(Kind::Meta), "#ff00ff");
        assert_eq!(kind_css(Kind::Pending), "#ff8700");
        assert_eq!(kind_css(Kind::Unknown), "#af87af");
        assert_eq!(kind_css(Kind::Data), "#ffffff");
        assert_eq!(xterm_rgb(244), [0x80, 0x80, 0x80]);
        assert_eq!(xterm_rgb(255), [0xee, 0xee, 0xee]);
    }
}
