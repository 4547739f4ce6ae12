//! The page map: one cell per page (or per group of pages), coloured by
//! kind, its glyph saying how much of it is in the page cache.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use crate::app::{App, Focus};

use super::{inner, kind_style, marked_style, pane, selected_style};

/// Draw the page map into `area` (border included).
pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let ppc = app.pages_per_cell();
    let title = if ppc == 1 {
        " page map · 1 page/cell ".to_string()
    } else {
        format!(" page map · {ppc} pages/cell ")
    };
    let inside = inner(area);
    let g = app.grid_in(inside);
    let total_rows = app.cell_count().div_ceil(g.cols.max(1));
    let mut block = pane(Line::from(title), app.focus() == Focus::Map);
    if total_rows > g.rows {
        let first = app.scroll_row() + 1;
        let last = (app.scroll_row() + g.rows).min(total_rows);
        block = block.title_bottom(
            Line::from(format!(" rows {first}–{last} of {total_rows} "))
                .alignment(Alignment::Right),
        );
    }
    frame.render_widget(block, area);
    if app.pages() == 0 {
        frame.render_widget(
            Paragraph::new("empty file: no pages").style(Style::new().fg(Color::DarkGray)),
            inside,
        );
        return;
    }
    let selected_cell = app.selected() / ppc;
    let label_style = Style::new().fg(Color::DarkGray);
    let buf = frame.buffer_mut();
    for row in 0..g.rows {
        let map_row = app.scroll_row().saturating_add(row);
        let first_cell = map_row.saturating_mul(g.cols);
        let cells = app.cells(first_cell, g.cols);
        let Some(first) = cells.first() else {
            break;
        };
        let Ok(y) = u16::try_from(row).map(|r| inside.y.saturating_add(r)) else {
            break;
        };
        if g.label_width > 1 {
            let label = format!("{:>w$} ", first.first, w = usize::from(g.label_width - 1));
            buf.set_stringn(inside.x, y, label, usize::from(g.label_width), label_style);
        }
        for (col, cell) in (0u64..).zip(&cells) {
            let index = first_cell.saturating_add(col);
            let (ch, style) = if index == selected_cell {
                (cell.residence.selected_glyph(), selected_style(cell.kind))
            } else if app.is_marked(cell.first, cell.pages) {
                (cell.residence.glyph(), marked_style())
            } else {
                (cell.residence.glyph(), kind_style(cell.kind))
            };
            let Ok(dx) = u16::try_from(col.saturating_mul(u64::from(g.cell_width))) else {
                break;
            };
            for i in 0..g.cell_width {
                let x = g.origin.x.saturating_add(dx).saturating_add(i);
                if x >= inside.right() {
                    break;
                }
                if let Some(c) = buf.cell_mut((x, y)) {
                    c.set_char(ch).set_style(style);
                }
            }
        }
    }
}
