//! The structure pane: buckets, and for an expanded bucket its branch and
//! leaf page runs with depth, items, fill and key range.

use mapwise_core::layout::{Group, Kind};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::app::{App, Focus, TreeRow};
use mapwise_view::describe::{key_range, range_text, revision_range};

use super::{inner, kind_color, pane};

/// Draw the structure pane into `area` (border included).
pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    if app.prefixes_open() {
        super::prefixes::render(frame, area, app);
        return;
    }
    let focused = app.focus() == Focus::Tree;
    let layout = app.layout();
    let buckets = layout.groups.len().saturating_sub(1);
    let format = app.data().snapshot.format;
    let title = if app.data().snapshot.reading {
        " structure · reading… ".to_string()
    } else if format == mapwise_core::layout::Format::Bolt {
        format!(" structure · {buckets} bucket{} ", if buckets == 1 { "" } else { "s" })
    } else {
        format!(" structure · {} ", format.name())
    };
    frame.render_widget(pane(Line::from(title), focused), area);
    let inside = inner(area);
    if app.tree_rows().is_empty() {
        let snap = &app.data().snapshot;
        let why = match (&snap.error, snap.format, &snap.revlog) {
            (None, _, _) if snap.reading => "reading the structure… (a large file or a busy \
                 writer takes a moment; the residency map is live meanwhile)"
                .to_string(),
            (Some(e), _, _) => format!("structure unreadable: {e}"),
            (None, mapwise_core::layout::Format::Bolt, _) => "no buckets".to_string(),
            (None, mapwise_core::layout::Format::Revlog, Some(r)) => {
                let head = format!(
                    "revlog index, version {}{}{}\n{} revisions ({} data bytes)",
                    r.version,
                    if r.inline { ", inline data" } else { "" },
                    if r.generaldelta { ", generaldelta" } else { "" },
                    r.revisions,
                    r.data_bytes
                );
                revlog_page(frame, inside, app, head);
                return;
            }
            (None, f, _) => format!("format {}: no structure to show", f.name()),
        };
        frame.render_widget(
            Paragraph::new(why)
                .style(Style::new().fg(Color::DarkGray))
                .wrap(ratatui::widgets::Wrap { trim: true }),
            inside,
        );
        return;
    }
    let width = usize::from(inside.width);
    let lines: Vec<Line> = app
        .tree_rows()
        .iter()
        .enumerate()
        .skip(app.tree_offset())
        .take(usize::from(inside.height))
        .map(|(i, row)| {
            let line = row_line(app, *row, width);
            if i == app.tree_cursor() {
                let hl = if focused {
                    Style::new().add_modifier(Modifier::REVERSED)
                } else {
                    Style::new().bg(Color::DarkGray)
                };
                line.patch_style(hl)
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inside);
}

/// A revlog's structure: its header facts, then the entries of the
/// selected map page (every entry region overlapping it, a cut entry on
/// both of its pages), one line each: residency glyph, revision, byte
/// offset of the entry and the inline chunk that follows it. As many as
/// fit; the last line says how many more the page holds.
fn revlog_page(frame: &mut Frame, area: Rect, app: &App, head: String) {
    let dim = Style::new().fg(Color::DarkGray);
    let layout = app.layout();
    let unit = app.unit().max(1);
    let page = app.selected();
    let start = page.saturating_mul(unit);
    let entries: Vec<mapwise_core::layout::Region> = layout
        .regions_in(start, unit)
        .filter(|r| matches!(r.kind, Kind::Entry | Kind::Corrupt))
        .collect();
    let mut lines: Vec<Line> = head.lines().map(|l| Line::styled(l.to_string(), dim)).collect();
    lines.push(Line::raw(""));
    let revs = match (entries.first(), entries.last()) {
        (Some(a), Some(b)) if a.kind == Kind::Entry && b.kind == Kind::Entry => {
            format!("page {page}: revs {}–{} ({} entries)", a.id, b.id, entries.len())
        }
        _ if entries.is_empty() => format!("page {page}: no entry starts or ends here"),
        _ => format!("page {page}: {} entries or damaged runs", entries.len()),
    };
    lines.push(Line::styled(revs, Style::new().add_modifier(Modifier::BOLD)));
    let room = usize::from(area.height).saturating_sub(lines.len());
    let shown = if entries.len() > room { room.saturating_sub(1) } else { entries.len() };
    for r in entries.iter().take(shown) {
        let (res, _, _) = app.residence_in(r.offset, r.end());
        let chunk = layout
            .region_index_at(r.end())
            .and_then(|i| layout.regions.get(i))
            .filter(|c| c.kind == Kind::Chunk && c.id == r.id)
            .map_or(String::new(), |c| format!(" + {} B data", c.len));
        let what =
            if r.kind == Kind::Entry { format!(" rev {}", r.id) } else { " corrupt".to_string() };
        lines.push(Line::from(vec![
            Span::styled(res.glyph().to_string(), Style::new().fg(kind_color(r.kind))),
            Span::styled(what, Style::new().fg(kind_color(r.kind))),
            Span::styled(format!(" @{}{chunk}", r.offset), dim),
        ]));
    }
    if shown < entries.len() {
        lines.push(Line::styled(
            format!("… {} more on this page (zoom in or see detail)", entries.len() - shown),
            dim,
        ));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

fn leaf_name(g: &Group) -> &str {
    if g.parent.is_none() { "(root)" } else { g.path.rsplit('/').next().unwrap_or(&g.path) }
}

/// An RRD archive: its definition, its current row and the page the
/// next update writes (with that page's residency).
fn rra_line(app: &App, gi: u32, g: &Group, width: usize) -> Line<'static> {
    let dim = Style::new().fg(Color::DarkGray);
    let layout = app.layout();
    let cur = layout.regions.iter().find(|r| r.group == Some(gi) && r.kind == Kind::CurRow);
    let mut facts = String::new();
    let mut spans = Vec::new();
    if let Some(c) = cur {
        let unit = app.unit().max(1);
        let (res, _, _) = app.residence_in(c.offset, c.end());
        spans
            .push(Span::styled(res.glyph().to_string(), Style::new().fg(kind_color(Kind::CurRow))));
        facts.push_str(&format!(" · cur_row {} · page {}", c.id, c.offset / unit));
    }
    spans.push(Span::raw(" "));
    spans.push(Span::styled(g.path.clone(), Style::new().add_modifier(Modifier::BOLD)));
    spans.push(Span::styled(facts, dim));
    let _ = width;
    Line::from(spans)
}

fn row_line(app: &App, row: TreeRow, width: usize) -> Line<'static> {
    let dim = Style::new().fg(Color::DarkGray);
    let layout = app.layout();
    match row {
        TreeRow::Group(gi) => {
            let Some(g) = layout.group(gi) else {
                return Line::from("?");
            };
            let indent = " ".repeat(usize::from(g.level) * 2);
            let has_runs = app.has_runs(gi);
            let marker = match (has_runs, app.is_expanded(gi)) {
                (false, _) => "·",
                (true, true) => "▾",
                (true, false) => "▸",
            };
            if app.data().snapshot.format == mapwise_core::layout::Format::Rrd {
                return rra_line(app, gi, g, width);
            }
            let mut facts = format!(" {} key{}", g.keys, if g.keys == 1 { "" } else { "s" });
            if g.buckets > 0 {
                facts.push_str(&format!(" · {} sub", g.buckets));
            }
            match g.host {
                Some(host) if g.root == 0 => facts.push_str(&format!(" · inline in p{host}")),
                _ => facts.push_str(&format!(" · root p{} · h{}", g.root, g.height)),
            }
            Line::from(vec![
                Span::raw(format!("{indent}{marker} ")),
                Span::styled(leaf_name(g).to_string(), Style::new().add_modifier(Modifier::BOLD)),
                Span::styled(facts, dim),
            ])
        }
        TreeRow::Run(ri) => {
            let Some(r) = layout.regions.get(ri) else {
                return Line::from("?");
            };
            let level = r.group.and_then(|g| layout.group(g)).map_or(0, |g| usize::from(g.level));
            let indent = " ".repeat(level * 2 + 2);
            let unit = app.unit().max(1);
            let (res, _, _) =
                app.residence_in(r.offset, r.offset.saturating_add(r.run_len.max(r.len)));
            let kind_char = if r.kind == Kind::Branch { "B" } else { "L" };
            let run_pages = r.run_len.div_ceil(unit);
            let id = if run_pages > 1 {
                format!("{}+{}", r.id, run_pages - 1)
            } else {
                r.id.to_string()
            };
            let id_width = app.pages().saturating_sub(1).max(1).to_string().len();
            let facts = format!(" d{} {}it {:.0}%", r.depth, r.items, r.fill() * 100.0);
            let mut spans = vec![
                Span::raw(indent.clone()),
                Span::styled(res.glyph().to_string(), Style::new().fg(kind_color(r.kind))),
                Span::styled(
                    format!(" {kind_char} {id:<id_width$}"),
                    Style::new().fg(kind_color(r.kind)),
                ),
                Span::styled(facts.clone(), dim),
            ];
            let used =
                indent.chars().count() + 3 + id.len().max(id_width) + 1 + facts.chars().count();
            let room = width.saturating_sub(used + 1);
            if room >= 9 {
                let keys = match app.detail(r.id) {
                    Some(Ok(d)) => key_range(d).map(|(a, b)| {
                        app.is_etcd()
                            .then(|| revision_range(a, b))
                            .flatten()
                            .filter(|t| t.chars().count() <= room)
                            .unwrap_or_else(|| range_text(a, b, room))
                    }),
                    Some(Err(_)) => Some("(unreadable)".into()),
                    None => None,
                };
                if let Some(k) = keys {
                    spans.push(Span::raw(" "));
                    spans.push(Span::styled(k, Style::new().fg(Color::Cyan)));
                }
            }
            Line::from(spans)
        }
    }
}
