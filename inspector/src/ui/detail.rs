//! The detail pane: the selected page, where it sits and what it holds.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::app::{App, Focus};
use crate::describe::{self, Tone};

use super::{inner, pane};

/// Style of a tone of text.
#[must_use]
pub fn tone_style(tone: Tone) -> Style {
    match tone {
        Tone::Head => Style::new().add_modifier(Modifier::BOLD),
        Tone::Label | Tone::Dim => Style::new().fg(Color::DarkGray),
        Tone::Text => Style::new(),
        Tone::Key => Style::new().fg(Color::Cyan),
        Tone::Value => Style::new().fg(Color::Gray),
        Tone::Link => Style::new().fg(Color::LightBlue),
        Tone::Bad => Style::new().fg(Color::LightRed).add_modifier(Modifier::BOLD),
    }
}

/// A described line as a styled terminal line.
#[must_use]
pub fn to_line(line: &describe::Line) -> Line<'static> {
    Line::from(
        line.0.iter().map(|p| Span::styled(p.text.clone(), tone_style(p.tone))).collect::<Vec<_>>(),
    )
}

/// Draw the detail pane into `area` (border included).
pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let inside = inner(area);
    let lines = app.detail_lines();
    let height = usize::from(inside.height);
    let scroll = app.detail_scroll().min(lines.len().saturating_sub(height));
    let mut block = pane(
        Line::from(format!(" detail · page {} ", app.detail_page())),
        app.focus() == Focus::Detail,
    );
    if lines.len() > height {
        block = block.title_bottom(
            Line::from(format!(
                " {}–{} of {} ",
                scroll + 1,
                (scroll + height).min(lines.len()),
                lines.len()
            ))
            .alignment(Alignment::Right),
        );
    }
    frame.render_widget(block, area);
    let shown: Vec<Line> = lines.iter().skip(scroll).take(height).map(to_line).collect();
    frame.render_widget(Paragraph::new(shown), inside);
}
