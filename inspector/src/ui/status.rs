//! The bottom of the screen: the legend (kind colours and residency
//! glyphs) and the status lines (resident pages per kind and in total,
//! sizes, interval; then problems, warnings and the last action's result).

use mapwise_core::layout::{Format, Kind};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::app::{App, Residence};
use mapwise_view::fmt::human_size;

use crate::stats::short_percent;

use super::kind_color;

type Chunk = Vec<Span<'static>>;

/// Pack chunks into at most `max_lines` lines of `width` columns, two
/// spaces apart; chunks that do not fit are dropped.
fn pack(chunks: Vec<Chunk>, width: usize, max_lines: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0usize;
    for chunk in chunks {
        let w: usize = chunk.iter().map(Span::width).sum();
        let gap = if used == 0 { 0 } else { 2 };
        if used + gap + w > width && used > 0 {
            if lines.len() == max_lines {
                break;
            }
            lines.push(Vec::new());
            used = 0;
        }
        let gap = if used == 0 { 0 } else { 2 };
        if let Some(line) = lines.last_mut() {
            if gap > 0 {
                line.push(Span::raw("  "));
            }
            line.extend(chunk);
        }
        used += gap + w;
    }
    lines.into_iter().map(Line::from).collect()
}

fn kind_from_name(name: &str) -> Kind {
    Kind::ALL.into_iter().find(|k| k.name() == name).unwrap_or(Kind::Data)
}

/// The legend's lines for a screen `width` wide.
#[must_use]
pub fn legend_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let dim = Style::new().fg(Color::DarkGray);
    let mut chunks: Vec<Chunk> = Vec::new();
    for (res, what) in [
        (Residence::All, "cached"),
        (Residence::Most, ">half"),
        (Residence::Some, "some"),
        (Residence::None, "not cached"),
        (Residence::Unknown, "unknown"),
        (Residence::PastEof, "past end of file"),
    ] {
        // `×` only matters once the file is shorter than the map.
        if res == Residence::PastEof && app.map_len() <= app.file_len() {
            continue;
        }
        chunks.push(vec![
            Span::styled(res.glyph().to_string(), Style::new().add_modifier(Modifier::BOLD)),
            Span::styled(format!(" {what}"), dim),
        ]);
    }
    chunks.push(vec![
        Span::styled(
            format!("{}{}", Residence::All.selected_glyph(), Residence::None.selected_glyph()),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::styled(" selected", dim),
    ]);
    if let Some(p) = app.marked_prefix() {
        chunks.push(vec![
            Span::styled("■ ", super::marked_style()),
            Span::styled(format!("{} ", p.prefix), dim),
        ]);
    }
    for t in app.totals() {
        let k = kind_from_name(t.kind);
        chunks.push(vec![
            Span::styled("■ ", Style::new().fg(kind_color(k))),
            Span::styled(t.kind, Style::new().fg(kind_color(k))),
        ]);
    }
    pack(chunks, usize::from(width), 2)
}

/// Rows the legend takes.
#[must_use]
pub fn legend_height(app: &App, width: u16) -> u16 {
    u16::try_from(legend_lines(app, width).len()).unwrap_or(1)
}

/// The totals line's chunks; with `widest`, every count as wide as it
/// can get, so the status height does not jump as residency changes.
fn totals_chunks(app: &App, widest: bool) -> Vec<Chunk> {
    let data = app.data();
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let dim = Style::new().fg(Color::DarkGray);
    let mut chunks: Vec<Chunk> = Vec::new();
    if let Some(clock) = &data.clock {
        chunks
            .push(vec![Span::styled(clock.clone(), Style::new().fg(Color::Black).bg(Color::Cyan))]);
    }
    match &data.residency {
        Some(r) => match r.known_resident_pages().map(|n| if widest { r.total_pages } else { n }) {
            Some(n) => chunks.push(vec![
                Span::styled("Resident ", bold),
                Span::styled(format!("{n}/{}", r.total_pages), bold),
                Span::raw(if r.page_size == app.unit() {
                    format!(" pages {}", short_percent(n, r.total_pages))
                } else {
                    // The totals count OS pages (as vmtouch does); the
                    // kinds below count the format's pages: say which.
                    format!(
                        " OS pages of {} {}",
                        human_size(r.page_size),
                        short_percent(n, r.total_pages)
                    )
                }),
            ]),
            None => chunks.push(vec![
                Span::styled("Resident ", bold),
                Span::styled(
                    format!("?/{} pages (unknown)", r.total_pages),
                    Style::new().fg(Color::Yellow),
                ),
            ]),
        },
        None => chunks.push(vec![
            Span::styled("Resident ", bold),
            Span::styled("not sampled", Style::new().fg(Color::Yellow)),
        ]),
    }
    if let Some(line) = app.rrdcached() {
        chunks.push(vec![Span::styled(line.to_owned(), Style::new().fg(Color::Magenta))]);
    }
    if data.rereading || widest {
        chunks.push(vec![Span::styled(
            if data.snapshot.reading { "reading the structure…" } else { "re-reading…" },
            Style::new().fg(Color::Black).bg(Color::Yellow),
        )]);
    }
    if let Some(age) = &data.age {
        chunks.push(vec![Span::styled(age.clone(), dim)]);
    }
    let unit = app.unit().max(1);
    if data.residency.as_ref().is_some_and(|r| r.page_size != unit) {
        chunks.push(vec![Span::styled(format!("in {} pages:", human_size(unit)), dim)]);
    }
    for t in app.totals() {
        let k = kind_from_name(t.kind);
        let res = match t.resident_pages {
            Some(n) => {
                let r = if widest { t.pages } else { n.min(t.pages) };
                format!(" {r}/{} {}", t.pages, short_percent(r, t.pages))
            }
            None => format!(" ?/{}", t.pages),
        };
        chunks.push(vec![Span::styled(t.kind, Style::new().fg(kind_color(k))), Span::raw(res)]);
    }
    chunks.push(vec![Span::styled(
        format!(
            "│ {} · page {} · every {} ms",
            human_size(app.file_len()),
            app.unit(),
            app.interval().as_millis()
        ),
        dim,
    )]);
    chunks
}

/// `text` word-wrapped to `width` columns, at most `max` lines (the last
/// one cut with `…` when more would follow).
fn wrap(text: &str, width: usize, max: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let w = word.chars().count();
        let used = cur.chars().count();
        if used > 0 && used + 1 + w > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    if lines.len() > max {
        lines.truncate(max);
        if let Some(last) = lines.last_mut() {
            let keep: String = last.chars().take(width.saturating_sub(1)).collect();
            *last = format!("{keep}…");
        }
    }
    lines
}

/// Lines of problems, warnings and the last action's result. Problems
/// and warnings wrap to two lines; the result of the last action and the
/// key hint take one, so the screen does not jump as messages come and go.
fn notices(app: &App, width: u16) -> Vec<Line<'static>> {
    let data = app.data();
    let err = Style::new().fg(Color::LightRed).add_modifier(Modifier::BOLD);
    let warn = Style::new().fg(Color::Yellow);
    // (text, style, lines it may take)
    let mut out: Vec<(String, Style, usize)> = Vec::new();
    if let Some(p) = &data.problem {
        out.push((format!("file: {p}"), err, 2));
    }
    if let Some(e) = &data.snapshot.error {
        out.push((format!("structure: {e}"), err, 2));
    } else if let Some(u) = &data.snapshot.unsettled {
        // Three lines: what to do comes last, and must not be cut off.
        out.push((format!("structure: {u}"), warn, 3));
    } else if let Some(u) = &data.live_note {
        out.push((format!("structure shown is older: {u}"), warn, 3));
    } else if data.snapshot.format == Format::Unknown {
        out.push((
            format!(
                "format {}: not recognised; showing residency only",
                data.snapshot.format.name()
            ),
            warn,
            2,
        ));
    }
    if let Some(r) = &data.residency
        && !r.trust.is_known()
    {
        out.push((format!("residency {}", r.trust), warn, 2));
    }
    let problems = data.snapshot.layout.problem_count();
    // An unsettled read's problems may be transient: said above, not here.
    if problems > 0 && data.snapshot.unsettled.is_none() {
        out.push((
            format!(
                "{problems} structural problem{} (inspector check lists them)",
                if problems == 1 { "" } else { "s" }
            ),
            warn,
            1,
        ));
    }
    match app.message() {
        Some(m) => {
            let (style, lines) = if m.error { (err, 2) } else { (Style::new().fg(Color::Cyan), 1) };
            out.push((format!("» {}", m.text), style, lines));
        }
        None if data.clock.is_some() => out.push((
            "? help · Space play/pause · , . step · [ ] speed · +/- zoom · q quit".into(),
            Style::new().fg(Color::DarkGray),
            1,
        )),
        None => out.push((
            "? help · Tab focus · t touch · e evict · a advise · L lock · +/- zoom · q quit".into(),
            Style::new().fg(Color::DarkGray),
            1,
        )),
    }
    let mut lines: Vec<Line<'static>> = Vec::new();
    for (text, style, max) in out {
        for part in wrap(&text, usize::from(width), max) {
            lines.push(Line::styled(part, style));
        }
    }
    // Newest last; at most four lines.
    let skip = lines.len().saturating_sub(4);
    lines.into_iter().skip(skip).collect()
}

/// The status lines for a screen `width` wide.
#[must_use]
pub fn status_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let mut lines = pack(totals_chunks(app, false), usize::from(width), 2);
    let rows = pack(totals_chunks(app, true), usize::from(width), 2).len();
    lines.resize(rows.max(lines.len()), Line::default());
    lines.extend(notices(app, width));
    lines
}

/// Rows the status lines take.
#[must_use]
pub fn status_height(app: &App, width: u16) -> u16 {
    u16::try_from(status_lines(app, width).len()).unwrap_or(1)
}

/// Draw the legend.
pub fn render_legend(frame: &mut Frame, area: Rect, app: &App) {
    frame.render_widget(Paragraph::new(legend_lines(app, area.width)), area);
}

/// Draw the status lines.
pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    frame.render_widget(Paragraph::new(status_lines(app, area.width)), area);
}
