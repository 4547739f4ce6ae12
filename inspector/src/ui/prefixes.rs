//! The etcd prefix pane, shown in the structure pane's place (`p`): per
//! key prefix its live keys, revisions, bytes and how much of its pages
//! is cached; the row under the cursor is marked on the map.

use mapwise_view::fmt::human_size;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::app::{App, Focus};

use super::{inner, marked_style, pane, tail};

/// Columns after the prefix: keys, revisions, bytes, cached.
const NUMBERS: usize = 8 + 9 + 10 + 8;

/// Draw the prefix pane into `area` (border included).
pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let counting = match app.prefixes_age() {
        _ if app.prefixes_counting() => " · counting…".to_string(),
        Some(age) => format!(" · {:.0} s ago", age.as_secs_f64()),
        None => String::new(),
    };
    let rows = app.prefix_rows();
    let n = rows.and_then(Result::ok).map_or(0, <[_]>::len);
    let title = format!(" etcd key prefixes · {n}{counting} · p: tree ");
    frame.render_widget(pane(Line::from(title), app.focus() == Focus::Tree), area);
    let inside = inner(area);
    let dim = Style::new().fg(Color::DarkGray);
    let rows = match rows {
        None => {
            let text = "counting the key bucket's revisions by prefix…";
            frame.render_widget(Paragraph::new(text).style(dim), inside);
            return;
        }
        Some(Err(e)) => {
            let p = Paragraph::new(format!("cannot count prefixes: {e}"))
                .style(Style::new().fg(Color::LightRed))
                .wrap(Wrap { trim: true });
            frame.render_widget(p, inside);
            return;
        }
        Some(Ok(rows)) => rows,
    };
    let width = usize::from(inside.width);
    let name_w = width.saturating_sub(NUMBERS).max(8);
    let mut lines = vec![Line::styled(
        format!("{:<name_w$}{:>8}{:>9}{:>10}{:>8}", "prefix", "keys", "revs", "bytes", "cached"),
        dim.add_modifier(Modifier::BOLD),
    )];
    let (cursor, offset) = app.prefix_cursor();
    let height = usize::from(inside.height).saturating_sub(1);
    for (i, p) in rows.iter().enumerate().skip(offset).take(height) {
        let cached = match app.prefix_residency(p) {
            Some((_, 0)) => "-".to_string(),
            Some((r, t)) => format!("{}%", r * 100 / t),
            None => "?".to_string(),
        };
        let text = format!(
            "{:<name_w$}{:>8}{:>9}{:>10}{:>8}",
            tail(&p.prefix, name_w.saturating_sub(1)),
            p.live_keys,
            p.revisions,
            human_size(p.live_bytes + p.history_bytes),
            cached
        );
        lines.push(if i == cursor {
            Line::from(Span::styled(text, marked_style().add_modifier(Modifier::REVERSED)))
        } else {
            Line::raw(text)
        });
    }
    if rows.is_empty() {
        lines.push(Line::styled("the key bucket is empty", dim));
    }
    frame.render_widget(Paragraph::new(lines), inside);
}
