//! A decoded page ([`PageDetail`]) as lines of text for people: what the
//! detail pane shows and what `inspector page` prints.
//!
//! Lines are made of [`Piece`]s tagged with a [`Tone`], so the terminal UI
//! can colour keys, values and faults while the command line prints the
//! same words plainly.

use std::fmt::Write as _;

use mapwise_core::bolt::{Body, Bytes, Element, PageDetail};

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
        Line(vec![Piece {
            tone,
            text: text.into(),
        }])
    }

    /// Append a piece.
    #[must_use]
    pub fn and(mut self, tone: Tone, text: impl Into<String>) -> Line {
        self.0.push(Piece {
            tone,
            text: text.into(),
        });
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

/// Bytes as shown: printable ASCII as `"text"`; mostly printable bytes
/// as a quoted string with escapes (`"\n\x12/key"`); anything else as
/// hex with runs of four or more equal bytes folded (`0x00*7 045f 00*8`).
/// `…` marks a cut (at `max` characters, or because only a prefix of
/// `full_len` bytes is known).
#[must_use]
pub fn bytes_text(prefix: &[u8], full_len: usize, max: usize) -> String {
    let printable = prefix.iter().filter(|b| (0x20..0x7f).contains(*b)).count();
    let complete = full_len <= prefix.len();
    let mut s = String::new();
    if printable == prefix.len() || (prefix.len() >= 4 && printable * 10 >= prefix.len() * 7) {
        s.push('"');
        for &b in prefix {
            match b {
                b'"' => s.push_str("\\\""),
                b'\\' => s.push_str("\\\\"),
                b'\n' => s.push_str("\\n"),
                b'\t' => s.push_str("\\t"),
                b'\r' => s.push_str("\\r"),
                0 => s.push_str("\\0"),
                0x20..0x7f => s.push(char::from(b)),
                _ => {
                    let _ = write!(s, "\\x{b:02x}");
                }
            }
        }
        if complete {
            s.push('"');
        }
    } else {
        s.push_str("0x");
        s.push_str(&folded_hex(prefix));
    }
    let mut cut = !complete;
    if s.chars().count() > max {
        s = s.chars().take(max.saturating_sub(1)).collect();
        cut = true;
    }
    if cut {
        s.push('…');
    }
    s
}

/// Hex with runs of four or more equal bytes written `hh*n`, pieces
/// separated by spaces: `00*7 045f 00*8`.
fn folded_hex(b: &[u8]) -> String {
    let mut out = String::new();
    let mut plain = String::new();
    let mut rest = b;
    while let Some((&x, _)) = rest.split_first() {
        let run = rest.iter().take_while(|&&y| y == x).count();
        rest = rest
            .get(if run >= 4 { run } else { 1 }..)
            .unwrap_or_default();
        if run >= 4 {
            if !plain.is_empty() {
                out.push_str(&plain);
                out.push(' ');
                plain.clear();
            }
            let _ = write!(out, "{x:02x}*{run} ");
        } else {
            let _ = write!(plain, "{x:02x}");
        }
    }
    out.push_str(&plain);
    out.trim_end().to_string()
}

/// A key or value preview as shown.
#[must_use]
pub fn preview(b: &Bytes, max: usize) -> String {
    bytes_text(&b.prefix, b.len, max)
}

/// A key range `first..last` in at most `max` characters; the last key's
/// leading part shared with the first is left out (at a space for hex,
/// marked `…` for text), so what differs stays visible.
#[must_use]
pub fn range_text(first: &Bytes, last: &Bytes, max: usize) -> String {
    let a = preview(first, usize::MAX);
    let b = preview(last, usize::MAX);
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let tail = if a.starts_with("0x") {
        // Cut after the last space inside the shared part.
        let cut = b
            .chars()
            .take(common)
            .collect::<String>()
            .rfind(' ')
            .map_or(0, |i| i + 1);
        b.get(cut..).unwrap_or(&b).to_string()
    } else if common > 4 {
        let rest: String = b.chars().skip(common.saturating_sub(1)).collect();
        format!("…{rest}")
    } else {
        b
    };
    let s = format!("{a}..{tail}");
    if s.chars().count() > max {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    } else {
        s
    }
}

/// First and last key of a decoded branch or leaf page, if it has any.
#[must_use]
pub fn key_range(d: &PageDetail) -> Option<(&Bytes, &Bytes)> {
    let Body::Elements(els) = &d.body else {
        return None;
    };
    let first = els.iter().find_map(element_key)?;
    let last = els.iter().rev().find_map(element_key)?;
    Some((first, last))
}

fn element_key(e: &Element) -> Option<&Bytes> {
    match e {
        Element::Branch { key, .. } | Element::Leaf { key, .. } => Some(key),
        Element::Bad(_) => None,
    }
}

/// The lines describing a decoded page: header, then meta fields,
/// elements or freelist ids.
#[must_use]
pub fn page_lines(d: &PageDetail, w: Widths) -> Vec<Line> {
    let h = &d.header;
    let mut out = vec![
        Line::of(
            Tone::Head,
            format!("page {} · {}", d.pgid, d.page_type.name()),
        )
        .and(
            Tone::Dim,
            format!(" (header id {} · flags {:#06x})", h.id, h.flags),
        ),
        Line::of(Tone::Label, "count ")
            .and(Tone::Text, h.count.to_string())
            .and(Tone::Label, " · overflow ")
            .and(Tone::Text, h.overflow.to_string())
            .and(Tone::Label, " · offset ")
            .and(Tone::Text, format!("{} ({:#x})", d.offset, d.offset)),
    ];
    match &d.body {
        Body::Meta { meta: m, fault } => {
            let field = |name: &str, value: String| {
                Line::of(Tone::Label, format!("{name:<10}")).and(Tone::Text, value)
            };
            out.push(field("magic", format!("{:#010x}", m.magic)));
            out.push(field("version", m.version.to_string()));
            out.push(field("page size", m.page_size.to_string()));
            out.push(field("flags", format!("{:#x}", m.flags)));
            out.push(field(
                "root",
                format!("{} (sequence {})", m.root, m.root_sequence),
            ));
            out.push(field(
                "freelist",
                if m.has_freelist() {
                    m.freelist.to_string()
                } else {
                    "none (NoFreelistSync)".into()
                },
            ));
            out.push(field("hwm", format!("{} pages", m.hwm)));
            out.push(field("txid", m.txid.to_string()));
            match fault {
                None => out.push(field("checksum", format!("{:016x} ok", m.checksum))),
                Some(fault) => {
                    out.push(field("checksum", format!("{:016x}", m.checksum)));
                    out.push(Line::of(Tone::Bad, format!("meta page INVALID: {fault}")));
                }
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
        Element::Leaf {
            flags,
            key,
            value,
            bucket,
        } => {
            let line = index.and(Tone::Key, preview(key, w.key));
            match bucket {
                Some(b) if b.root == 0 => line.and(
                    Tone::Link,
                    format!(" [inline bucket, {} B, seq {}]", value.len, b.sequence),
                ),
                Some(b) => line.and(
                    Tone::Link,
                    format!(" [bucket root {} seq {}]", b.root, b.sequence),
                ),
                None if flags & mapwise_core::bolt::BUCKET_LEAF_FLAG != 0 => {
                    line.and(Tone::Bad, " [bucket: bad header]")
                }
                None => {
                    // A cut value is followed by its length (" (NNNN B)").
                    let room = if value.is_complete() {
                        w.value.saturating_add(8)
                    } else {
                        w.value
                    };
                    let line = line
                        .and(Tone::Dim, " = ")
                        .and(Tone::Value, preview(value, room));
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
        let w = item
            .fields
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(0);
        for (name, value) in &item.fields {
            out.push(Line::of(Tone::Dim, format!("  {name:<w$}  ")).and(Tone::Text, value.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_hex() {
        assert_eq!(bytes_text(b"key", 3, 20), "\"key\"");
        assert_eq!(bytes_text(b"", 0, 20), "\"\"");
        assert_eq!(bytes_text(&[0, 1, 0xff], 3, 20), "0x0001ff");
        assert_eq!(bytes_text(b"abcdefgh", 8, 5), "\"abc…");
        assert_eq!(bytes_text(b"abc", 100, 20), "\"abc…");
        assert_eq!(bytes_text(&[0; 10], 10, 8), "0x00*10");
        assert_eq!(bytes_text(&[0; 10], 10, 6), "0x00*…");
        let etcd = [0, 0, 0, 0, 0, 0, 0, 4, b'_', 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(bytes_text(&etcd, 17, 40), "0x00*7 045f 00*8");
        assert_eq!(
            bytes_text(b"\n\x12/oracle/key", 13, 40),
            "\"\\n\\x12/oracle/key\""
        );
        assert_eq!(bytes_text(b"a\"b\\", 4, 40), "\"a\\\"b\\\\\"");
    }

    fn b(v: &[u8]) -> Bytes {
        Bytes {
            len: v.len(),
            prefix: v.to_vec(),
        }
    }

    #[test]
    fn ranges_drop_the_shared_start() {
        let k = |rev: u8| {
            let mut v = vec![0u8; 17];
            v[7] = rev;
            v[8] = b'_';
            v
        };
        assert_eq!(
            range_text(&b(&k(0x18)), &b(&k(0x2d)), 80),
            "0x00*7 185f 00*8..2d5f 00*8"
        );
        assert_eq!(
            range_text(&b(&k(0x18)), &b(&k(0x2d)), 20),
            "0x00*7 185f 00*8..2…"
        );
        assert_eq!(
            range_text(&b(b"/registry/pods/a"), &b(b"/registry/pods/zz"), 80),
            "\"/registry/pods/a\"..…/zz\""
        );
        assert_eq!(range_text(&b(b"a"), &b(b"b"), 80), "\"a\"..\"b\"");
    }
}
