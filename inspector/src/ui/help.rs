//! Overlays: the help (every key), the evict question and the advise
//! menu.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Wrap};

use mapwise_native::os::residency::FileAdvice;

use crate::app::{App, Overlay, Residence};
use crate::event::BINDINGS;

use super::tail;

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [h] =
        Layout::horizontal([Constraint::Length(width.min(area.width))]).flex(Flex::Center).areas(v);
    h
}

/// Draw the overlay the app shows, if any.
pub fn render_overlay(frame: &mut Frame, area: Rect, app: &App) {
    match app.overlay() {
        Overlay::None => {}
        Overlay::Help => render_help(frame, area),
        Overlay::ConfirmEvict => render_confirm(frame, area, app),
        Overlay::Advise => render_advise(frame, area, app),
    }
}

/// What each advice does, as the advise menu says it.
#[must_use]
pub fn advice_phrase(advice: FileAdvice) -> &'static str {
    match advice {
        FileAdvice::WillNeed => "read the range into the cache now (async)",
        FileAdvice::DontNeed => "drop the range's clean, unmapped pages",
        FileAdvice::Sequential => "read ahead more (our open file only)",
        FileAdvice::Random => "no read-ahead (our open file only)",
        FileAdvice::Normal => "default read-ahead (our open file only)",
    }
}

/// The advise menu's lines: the advices (the chosen one marked), the two
/// ranges (the chosen one marked), the keys.
#[must_use]
pub fn advise_lines(app: &App) -> Vec<Line<'static>> {
    let (chosen, whole) = app.advise_menu();
    let pick = Style::new().fg(Color::Black).bg(Color::Cyan).add_modifier(Modifier::BOLD);
    let dim = Style::new().fg(Color::DarkGray);
    let mut lines: Vec<Line> = FileAdvice::ALL
        .iter()
        .map(|&a| {
            let on = a == chosen;
            Line::from(vec![
                Span::raw(if on { "▸ " } else { "  " }),
                Span::styled(format!("{:<10}", a.name()), if on { pick } else { Style::new() }),
                Span::styled(format!("  {}", advice_phrase(a)), dim),
            ])
        })
        .collect();
    lines.push(Line::default());
    for w in [false, true] {
        let on = w == whole;
        lines.push(Line::from(vec![
            Span::raw(if on { "● " } else { "○ " }),
            Span::styled(app.advise_scope(w), if on { pick } else { Style::new() }),
        ]));
    }
    lines.push(Line::styled("↑↓ advice · ←→ range · Enter apply · Esc cancel", dim));
    lines
}

fn render_advise(frame: &mut Frame, area: Rect, app: &App) {
    let lines = advise_lines(app);
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let rect = centered(area, 66, height);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::new().fg(Color::Cyan))
        .title(" advise the kernel (posix_fadvise) ");
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

/// The help lines: every key, then the map's glyphs.
#[must_use]
pub fn help_lines() -> Vec<Line<'static>> {
    let key = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let dim = Style::new().fg(Color::DarkGray);
    let mut lines: Vec<Line> = BINDINGS
        .iter()
        .map(|(k, what)| Line::from(vec![Span::styled(format!("{k:<14}"), key), Span::raw(*what)]))
        .collect();
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("map cells     ", key),
        Span::raw(format!(
            "{} all cached  {} >half  {} some  {} none",
            Residence::All.glyph(),
            Residence::Most.glyph(),
            Residence::Some.glyph(),
            Residence::None.glyph()
        )),
    ]));
    lines.push(Line::from(vec![
        Span::raw("              "),
        Span::raw(format!(
            "{} unknown  {} past end of file  {}{}{} selected",
            Residence::Unknown.glyph(),
            Residence::PastEof.glyph(),
            Residence::All.selected_glyph(),
            Residence::Some.selected_glyph(),
            Residence::None.selected_glyph()
        )),
    ]));
    lines.push(Line::styled("              colour = page kind (see the legend)", dim));
    lines
}

fn render_help(frame: &mut Frame, area: Rect) {
    let lines = help_lines();
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let rect = centered(area, 68, height);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::new().fg(Color::Cyan))
        .title(" keys · ? or Esc closes ");
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

fn render_confirm(frame: &mut Frame, area: Rect, app: &App) {
    let width = area.width.saturating_sub(4).min(70);
    let name = tail(app.label(), usize::from(width.saturating_sub(40)).max(16));
    let mut text = vec![
        Line::from(vec![
            Span::raw("evict "),
            Span::styled(name, Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(" from the page cache? "),
            Span::styled("(y/n)", Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)),
        ]),
        Line::styled(
            "like vmtouch -e: posix_fadvise(DONTNEED); any lock is released first",
            Style::new().fg(Color::DarkGray),
        ),
    ];
    // The lock is ours to drop: say so plainly when there is one.
    if app.data().locked {
        text.push(Line::styled(
            "the file is locked in memory (L): it is unlocked first",
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    let height = u16::try_from(text.len() + 3).unwrap_or(u16::MAX);
    let rect = centered(area, width, height);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::new().fg(Color::Yellow))
        .title(" evict? ");
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(text).block(block).wrap(Wrap { trim: true }), rect);
}
