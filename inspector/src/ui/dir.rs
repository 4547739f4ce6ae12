//! The list of files of `inspector open DIR`, drawn from a [`DirList`].

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use crate::dir::DirList;
use crate::stats::{g3, resident_cells, vmtouch_size};

use super::{inner, pane};

/// Rows of the list on a screen of `height` lines.
#[must_use]
pub fn list_height(height: u16) -> usize {
    // Title, border (2), header, footer.
    usize::from(height.saturating_sub(5))
}

/// Draw the whole screen.
pub fn draw(frame: &mut Frame, d: &DirList) {
    let [title, body, footer] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1)])
            .areas(frame.area());
    let dim = Style::new().fg(Color::DarkGray);
    let n = d.rows.as_ref().map_or(0, Vec::len);
    let state = match d.age() {
        _ if d.walking() && d.rows.is_none() => "walking the tree…".to_string(),
        _ if d.walking() => "walking again…".to_string(),
        Some(a) => format!("walked {:.0} s ago", a.as_secs_f64()),
        None => String::new(),
    };
    let skipped =
        if d.skipped > 0 { format!(" · {} not measured", d.skipped) } else { String::new() };
    frame.render_widget(
        Paragraph::new(format!(
            " inspector  {} │ {n} files │ sorted by {} │ {state}{skipped}",
            d.root.display(),
            d.sort.name()
        ))
        .style(Style::new().add_modifier(Modifier::BOLD)),
        title,
    );
    frame.render_widget(pane(Line::from(" files "), true), body);
    let inside = inner(body);
    let mut lines = vec![Line::styled(
        format!(
            "{:>10} {:>10} {:>8} {:>8}  {:<8} FILE",
            "RESIDENT", "SIZE", "CACHED", "HOT SET", "FORMAT"
        ),
        dim.add_modifier(Modifier::BOLD),
    )];
    let rows = d.rows.as_deref().unwrap_or_default();
    let height = usize::from(inside.height).saturating_sub(1);
    let shown = d.root.display().to_string();
    for (i, r) in rows.iter().enumerate().skip(d.offset).take(height) {
        let (res, pct) = resident_cells(r.resident, r.size);
        let hot = r.hot_percent.map_or_else(|| "-".into(), |h| format!("{}%", g3(h)));
        let path = r.path.display().to_string();
        let name = path.strip_prefix(&shown).map_or(path.as_str(), |p| p.trim_start_matches('/'));
        let text = format!(
            "{res:>10} {:>10} {pct:>8} {hot:>8}  {:<8} {name}",
            vmtouch_size(r.size),
            r.format
        );
        lines.push(if i == d.cursor {
            Line::styled(text, Style::new().add_modifier(Modifier::REVERSED))
        } else {
            Line::raw(text)
        });
    }
    if d.rows.as_ref().is_some_and(Vec::is_empty) {
        lines.push(Line::styled("no files here", dim));
    }
    frame.render_widget(Paragraph::new(lines), inside);
    let foot = match &d.message {
        Some(m) => Paragraph::new(m.as_str()).style(Style::new().fg(Color::LightRed)),
        None => {
            Paragraph::new("↑↓ move · Enter open (Esc comes back) · s sort · r walk again · q quit")
                .style(dim)
        }
    };
    frame.render_widget(foot, footer);
}
