//! Drawing: everything is rendered from `&App`, nothing here changes
//! state. One module per screen region.
//!
//! ```text
//! title ─────────────────────────────────────────────────────────────
//! ┌ page map ───────────────────┐┌ structure ────────────────────────┐
//! │ 0 ██░░██░░▓▓                ││ ▾ (root) …                        │
//! │                             │└───────────────────────────────────┘
//! │                             │┌ detail ───────────────────────────┐
//! └─────────────────────────────┘└───────────────────────────────────┘
//! legend
//! status (totals per kind, then notices / the last action's result)
//! ```

pub mod detail;
pub mod dir;
pub mod help;
pub mod map;
pub mod prefixes;
pub mod status;
pub mod tree;

use mapwise_core::layout::Kind;
use mapwise_native::report::FreelistReport;
use mapwise_view::fmt::human_size;
use mapwise_view::palette;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Margin, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph};

use crate::app::App;

/// Smallest terminal the inspector draws in.
pub const MIN_WIDTH: u16 = 40;
/// Smallest terminal height the inspector draws in.
pub const MIN_HEIGHT: u16 = 12;

/// Where each region of the screen goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screen {
    /// The title line.
    pub title: Rect,
    /// The page map pane (with border).
    pub map: Rect,
    /// The structure pane (with border).
    pub tree: Rect,
    /// The detail pane (with border).
    pub detail: Rect,
    /// The legend line(s).
    pub legend: Rect,
    /// The status lines.
    pub status: Rect,
}

/// Lay out the screen for `app` in `area`.
#[must_use]
pub fn screen(app: &App, area: Rect) -> Screen {
    let legend_h = status::legend_height(app, area.width);
    let status_h = status::status_height(app, area.width);
    let [title, main, legend, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(4),
        Constraint::Length(legend_h),
        Constraint::Length(status_h),
    ])
    .areas(area);
    let map_share = if area.width < 100 { 50 } else { 55 };
    let [map, right] = Layout::horizontal([
        Constraint::Percentage(map_share),
        Constraint::Percentage(100 - map_share),
    ])
    .areas(main);
    let [tree, detail] =
        Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(right);
    Screen { title, map, tree, detail, legend, status }
}

/// A pane's area without its border.
#[must_use]
pub fn inner(pane: Rect) -> Rect {
    pane.inner(Margin::new(1, 1))
}

/// Colour of a page kind on the map, in the legend and in the tree: the
/// palette index `mapwise-view` gives it ([`palette::kind_colour`]), the
/// system colours by their names.
#[must_use]
pub fn kind_color(kind: Kind) -> Color {
    match palette::kind_colour(kind) {
        0 => Color::Black,
        1 => Color::Red,
        2 => Color::Green,
        3 => Color::Yellow,
        4 => Color::Blue,
        5 => Color::Magenta,
        6 => Color::Cyan,
        7 => Color::Gray,
        8 => Color::DarkGray,
        9 => Color::LightRed,
        10 => Color::LightGreen,
        11 => Color::LightYellow,
        12 => Color::LightBlue,
        13 => Color::LightMagenta,
        14 => Color::LightCyan,
        15 => Color::White,
        i => Color::Indexed(i),
    }
}

/// Style of a map cell (not selected) of `kind`.
#[must_use]
pub fn kind_style(kind: Kind) -> Style {
    if kind == Kind::Corrupt {
        Style::new().fg(Color::White).bg(Color::Red)
    } else {
        Style::new().fg(kind_color(kind))
    }
}

/// Style of a map cell holding a page of the marked etcd prefix.
#[must_use]
pub fn marked_style() -> Style {
    Style::new().fg(MARKED).add_modifier(Modifier::BOLD)
}

/// The colour of the marked prefix's cells: a colour no bbolt page kind
/// has ([`palette::kind_colour`]).
pub const MARKED: Color = Color::LightYellow;

/// Style of the selected map cell of `kind`: black on the kind's colour.
#[must_use]
pub fn selected_style(kind: Kind) -> Style {
    Style::new().fg(Color::Black).bg(kind_color(kind)).add_modifier(Modifier::BOLD)
}

/// A pane's frame; the focused pane's border is bright.
#[must_use]
pub fn pane<'a>(title: Line<'a>, focused: bool) -> Block<'a> {
    let border = if focused {
        Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
    } else {
        Style::new().fg(Color::DarkGray)
    };
    Block::bordered()
        .border_type(if focused { BorderType::Thick } else { BorderType::Plain })
        .border_style(border)
        .title(title)
}

/// Draw the whole screen.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "terminal too small ({}x{}): the inspector needs {MIN_WIDTH}x{MIN_HEIGHT}. q quits.",
            area.width, area.height
        );
        frame.render_widget(Paragraph::new(msg).wrap(ratatui::widgets::Wrap { trim: true }), area);
        return;
    }
    let s = screen(app, area);
    render_title(frame, s.title, app);
    map::render(frame, s.map, app);
    tree::render(frame, s.tree, app);
    detail::render(frame, s.detail, app);
    status::render_legend(frame, s.legend, app);
    status::render(frame, s.status, app);
    help::render_overlay(frame, area, app);
}

/// `label` cut to `max` characters, keeping its end.
#[must_use]
pub fn tail(label: &str, max: usize) -> String {
    let n = label.chars().count();
    if n <= max {
        label.to_string()
    } else {
        let keep = max.saturating_sub(1);
        let mut s = String::from("…");
        s.extend(label.chars().skip(n - keep));
        s
    }
}

fn render_title(frame: &mut Frame, area: Rect, app: &App) {
    let data = app.data();
    let snap = &data.snapshot;
    let wide = area.width >= 100;
    let sep = Span::styled(if wide { " │ " } else { " · " }, Style::new().fg(Color::DarkGray));
    // Everything after the path first, so the path gets the room left.
    let mut rest = vec![
        sep.clone(),
        Span::raw(match (snap.format.name(), &snap.error) {
            (name, Some(_)) => format!("{name} (unreadable)"),
            (name, None) => name.to_string(),
        }),
        sep.clone(),
        Span::raw(human_size(app.file_len())),
    ];
    let expected = snap.expected_len;
    if expected > app.file_len() {
        rest.push(Span::styled(
            format!(" TRUNCATED: the header says {}", human_size(expected)),
            Style::new().fg(Color::LightRed).add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(b) = &snap.bolt {
        rest.extend([
            sep.clone(),
            Span::raw(format!("page {}", b.page_size)),
            sep.clone(),
            Span::raw(format!("meta {} txid {}", b.current_meta, b.txid)),
            sep.clone(),
            Span::raw(freelist_text(&b.freelist)),
        ]);
    }
    if data.locked {
        rest.push(sep);
        rest.push(Span::styled("LOCKED", Style::new().fg(Color::Black).bg(Color::Yellow)));
    }
    let mut spans = Vec::new();
    if wide {
        spans.push(Span::styled(" inspector ", Style::new().fg(Color::Black).bg(Color::Cyan)));
        spans.push(Span::raw(" "));
    }
    let used: usize = spans.iter().chain(&rest).map(Span::width).sum();
    let room = usize::from(area.width).saturating_sub(used).max(12);
    spans.push(Span::styled(tail(app.label(), room), Style::new().add_modifier(Modifier::BOLD)));
    spans.extend(rest);
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The freelist state in a few words.
#[must_use]
pub fn freelist_text(f: &FreelistReport) -> String {
    match f {
        FreelistReport::NotStored => "freelist not stored".into(),
        FreelistReport::Stored { page, overflow, ids, .. } => {
            if *overflow > 0 {
                format!("freelist p{page}+{overflow}: {ids} ids")
            } else {
                format!("freelist p{page}: {ids} ids")
            }
        }
        FreelistReport::Unreadable { page } => format!("freelist p{page} UNREADABLE"),
        FreelistReport::NotRead { page } => format!("freelist p{page}: not read yet"),
    }
}
