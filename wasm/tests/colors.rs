//! The page draws each kind in the inspector's colour.

use mapwise_core::Kind;
use ratatui::style::Color;

/// xterm's default colour for a terminal colour (the 16 system colours,
/// the 6×6×6 cube and the grey ramp).
fn xterm(c: Color) -> String {
    const SYSTEM: [(u8, u8, u8); 16] = [
        (0x00, 0x00, 0x00),
        (0xcd, 0x00, 0x00),
        (0x00, 0xcd, 0x00),
        (0xcd, 0xcd, 0x00),
        (0x00, 0x00, 0xee),
        (0xcd, 0x00, 0xcd),
        (0x00, 0xcd, 0xcd),
        (0xe5, 0xe5, 0xe5),
        (0x7f, 0x7f, 0x7f),
        (0xff, 0x00, 0x00),
        (0x00, 0xff, 0x00),
        (0xff, 0xff, 0x00),
        (0x5c, 0x5c, 0xff),
        (0xff, 0x00, 0xff),
        (0x00, 0xff, 0xff),
        (0xff, 0xff, 0xff),
    ];
    let index = match c {
        Color::Black => 0,
        Color::Red => 1,
        Color::Green => 2,
        Color::Yellow => 3,
        Color::Blue => 4,
        Color::Magenta => 5,
        Color::Cyan => 6,
        Color::Gray => 7,
        Color::DarkGray => 8,
        Color::LightRed => 9,
        Color::LightGreen => 10,
        Color::LightYellow => 11,
        Color::LightBlue => 12,
        Color::LightMagenta => 13,
        Color::LightCyan => 14,
        Color::White => 15,
        Color::Indexed(i) => i,
        Color::Rgb(r, g, b) => return format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Reset => panic!("no colour"),
    };
    let (r, g, b) = match index {
        0..16 => SYSTEM[usize::from(index)],
        16..232 => {
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            let i = index - 16;
            (level(i / 36), level(i / 6 % 6), level(i % 6))
        }
        _ => {
            let v = 8 + 10 * (index - 232);
            (v, v, v)
        }
    };
    format!("#{r:02x}{g:02x}{b:02x}")
}

#[test]
fn every_kind_has_the_inspectors_colour() {
    for k in Kind::ALL {
        assert_eq!(
            mapwise_view::palette::kind_css(k),
            xterm(mapwise_inspector::ui::kind_color(k)),
            "colour of {}",
            k.name()
        );
    }
}
