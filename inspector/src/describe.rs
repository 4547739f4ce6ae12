//! A decoded page ([`PageDetail`]) as lines of text for people: what the
//! detail pane shows and what `inspector page` prints.
//!
//! Lines are made of [`Piece`]s tagged with a [`Tone`], so the terminal UI
//! can colour keys, values and faults while the command line prints the
//! same words plainly.

use std::fmt::Write as _;

use mapwise_core::bolt::{Body, Element, PageDetail};
use mapwise_view::describe::{meta_fields, preview};

/// What a piece of text is, for styling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// A heading (page id and type).
    Head,
    /// A field name.
    Label,
    /// Ordinary text.
    Text,
    /// A key.
    Key,
    /// A value.
    Value,
    /// A bucket header or page reference.
    Link,
    /// A fault.
    Bad,
    /// Less important text (indices, lengths).
    Dim,
}

/// A run of text in one tone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Its tone.
    pub tone: Tone,
    /// The text.
    pub text: String,
}

/// One line: pieces in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Line(pub Vec<Piece>);

impl Line {
    /// A line of one piece.
    #[must_use]
    pub fn of(tone: Tone, text: impl Into<String>) -> Line {
        Line(vec![Piece { tone, text: text.into() }])
    }

    /// Append a piece.
    #[must_use]
    pub fn and(mut self, tone: Tone, text: impl Into<String>) -> Line {
        self.0.push(Piece { tone, text: text.into() });
        self
    }

    /// The plain text of the line.
    #[must_use]
    pub fn text(&self) -> String {
        self.0.iter().map(|p| p.text.as_str()).collect()
    }
}

/// How many characters keys and values may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Widths {
    /// Most characters of a key.
    pub key: usize,
    /// Most characters of a value.
    pub value: usize,
}

impl Widths {
    /// Widths for plain text output: the whole preview.
    pub const FULL: Widths = Widths {
        key: 2 * mapwise_core::bolt::PREVIEW + 4,
        value: 2 * mapwise_core::bolt::PREVIEW + 4,
    };
}

/// The two lines heading a decoded page: its id and type, then its
/// count, overflow and offset.
#[must_use]
pub fn header_lines(d: &PageDetail) -> Vec<Line> {
    let h = &d.header;
    vec![
        Line::of(Tone::Head, format!("page {} · {}", d.pgid, d.page_type.name()))
            .and(Tone::Dim, format!(" (header id {} · flags {:#06x})", h.id, h.flags)),
        Line::of(Tone::Label, "count ")
            .and(Tone::Text, h.count.to_string())
            .and(Tone::Label, " · overflow ")
            .and(Tone::Text, h.overflow.to_string())
            .and(Tone::Label, " · offset ")
            .and(Tone::Text, format!("{} ({:#x})", d.offset, d.offset)),
    ]
}

/// The lines describing a decoded page: header, then meta fields,
/// elements or freelist ids.
#[must_use]
pub fn page_lines(d: &PageDetail, w: Widths) -> Vec<Line> {
    let h = &d.header;
    let mut out = header_lines(d);
    match &d.body {
        Body::Meta { meta: m, fault } => {
            for (name, value) in meta_fields(m, fault.as_ref()) {
                let tone = if value.contains("INVALID") { Tone::Bad } else { Tone::Text };
                out.push(Line::of(Tone::Label, format!("{name:<10}")).and(tone, value));
            }
        }
        Body::Elements(els) => {
            let shown = els.len();
            let count = usize::from(h.count);
            out.push(Line::of(
                Tone::Label,
                if shown < count {
                    format!("elements (first {shown} of {count}):")
                } else {
                    format!("elements ({shown}):")
                },
            ));
            for (i, e) in els.iter().enumerate() {
                out.push(element_line(i, e, w));
            }
        }
        Body::Freelist { ids, total } => {
            out.push(Line::of(
                Tone::Label,
                if ids.len() < *total {
                    format!("free ids (first {} of {total}):", ids.len())
                } else {
                    format!("free ids ({total}):")
                },
            ));
            for chunk in ids.chunks(8) {
                let mut s = String::from(" ");
                for id in chunk {
                    let _ = write!(s, " {id}");
                }
                out.push(Line::of(Tone::Link, s));
            }
        }
        Body::Other => out.push(Line::of(Tone::Dim, "(page type not decoded)")),
    }
    out
}

fn element_line(i: usize, e: &Element, w: Widths) -> Line {
    let index = Line::of(Tone::Dim, format!("{i:>4} "));
    match e {
        Element::Branch { key, child } => index
            .and(Tone::Key, preview(key, w.key))
            .and(Tone::Dim, " → ")
            .and(Tone::Link, format!("page {child}")),
        Element::Leaf { flags, key, value, bucket } => {
            let line = index.and(Tone::Key, preview(key, w.key));
            match bucket {
                Some(b) if b.root == 0 => line.and(
                    Tone::Link,
                    format!(" [inline bucket, {} B, seq {}]", value.len, b.sequence),
                ),
                Some(b) => {
                    line.and(Tone::Link, format!(" [bucket root {} seq {}]", b.root, b.sequence))
                }
                None if flags & mapwise_core::bolt::BUCKET_LEAF_FLAG != 0 => {
                    line.and(Tone::Bad, " [bucket: bad header]")
                }
                None => {
                    // A cut value is followed by its length (" (NNNN B)").
                    let room =
                        if value.is_complete() { w.value.saturating_add(8) } else { w.value };
                    let line = line.and(Tone::Dim, " = ").and(Tone::Value, preview(value, room));
                    if value.is_complete() {
                        line
                    } else {
                        line.and(Tone::Dim, format!(" ({} B)", value.len))
                    }
                }
            }
        }
        Element::Bad(err) => index.and(Tone::Bad, format!("✗ {err}")),
    }
}

/// Described structures (revlog entries, ...) as lines: each title, then
/// its fields aligned under it.
#[must_use]
pub fn item_lines(items: &[mapwise_view::describe::Item]) -> Vec<Line> {
    let mut out = Vec::new();
    if items.is_empty() {
        out.push(Line::of(Tone::Dim, "nothing here"));
    }
    for item in items {
        out.push(Line::of(Tone::Label, item.title.clone()));
        let w = item.fields.iter().map(|(n, _)| n.chars().count()).max().unwrap_or(0);
        for (name, value) in &item.fields {
            out.push(Line::of(Tone::Dim, format!("  {name:<w$}  ")).and(Tone::Text, value.clone()));
        }
    }
    out
}
