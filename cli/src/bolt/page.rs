//! `mapwise bolt page` (one page decoded, bbolt 1.3.7 and later:
//! `cmd/bbolt/page_command.go`, later `command/command_page.go`) and
//! `mapwise bolt dump FILE PGID…` (pages as hex, bbolt `command_dump.go`).
//! Both read quietly: `O_DIRECT`, no lock, nothing mapped, as `pages` and
//! `check` do.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use mapwise_core::bolt::{Body, BoltFile, BucketHeader, FreelistIds, Page, PageType, page_detail};
use mapwise_core::source::PageSource;
use mapwise_native::os::io::QuietSource;
use mapwise_view::fmt::hex;

use super::bytefmt::{self, Format};
use crate::out::Out;

/// bbolt's separator between pages (`printPages`, `dumpFunc`).
const SEPARATOR: &str = "===============================================";

/// One page's lines as `bbolt page` prints them, or its JSON object.
fn print_page(
    out: &mut Out,
    file: &BoltFile<'_, QuietSource>,
    pgid: u64,
    format: Format,
    json: bool,
) -> mapwise_core::Result<u32> {
    // Meta pages: the fields as stored (bbolt `Meta.Print`).
    if pgid < 2 {
        let d = page_detail(file, pgid, 0)?;
        let Body::Meta { meta: m, fault } = d.body else {
            return Ok(0);
        };
        if json {
            let v = serde_json::json!({
                "pgid": pgid, "type": d.page_type.name(), "overflow": d.header.overflow,
                "total_size": file.page_size(), "count": d.header.count,
                "meta": {
                    "version": m.version, "page_size": m.page_size, "flags": m.flags,
                    "root": m.root, "freelist": m.freelist, "hwm": m.hwm, "txid": m.txid,
                    "checksum": format!("{:016x}", m.checksum),
                    "fault": fault.map(|f| f.to_string()),
                },
            });
            let _ = writeln!(out, "{v}");
            return Ok(0);
        }
        header_lines(out, pgid, d.page_type, file.page_size(), d.header.overflow);
        let _ = writeln!(out, "Version:    {}", m.version);
        let _ = writeln!(out, "Page Size:  {} bytes", m.page_size);
        let _ = writeln!(out, "Flags:      {:08x}", m.flags);
        let _ = writeln!(out, "Root:       <pgid={}>", m.root);
        let _ = writeln!(out, "Freelist:   <pgid={}>", m.freelist);
        let _ = writeln!(out, "HWM:        <pgid={}>", m.hwm);
        let _ = writeln!(out, "Txn ID:     {}", m.txid);
        let _ = writeln!(out, "Checksum:   {:016x}", m.checksum);
        let _ = writeln!(out);
        return Ok(0);
    }
    let page: Page<'_> = file.read_page(pgid)?;
    let h = page.header;
    let ty = h.page_type();
    let total = (u64::from(h.overflow) + 1) * u64::from(file.page_size());
    let mut items = Vec::new();
    let mut ids = Vec::new();
    let mut count = u64::from(h.count);
    match ty {
        PageType::Leaf => {
            for i in 0..page.count() {
                let e = page.leaf(i)?;
                let key = page.bytes().get(e.key.clone()).unwrap_or_default();
                let value = page.bytes().get(e.value.clone()).unwrap_or_default();
                let bucket = if e.is_bucket() {
                    Some(BucketHeader::parse(value, page.element_at_loc(i))?)
                } else {
                    None
                };
                items.push((key, value, bucket, None));
            }
        }
        PageType::Branch => {
            for i in 0..page.count() {
                let e = page.branch(i)?;
                let key = page.bytes().get(e.key.clone()).unwrap_or_default();
                items.push((key, &[][..], None, Some(e.child)));
            }
        }
        PageType::Freelist => {
            let f = FreelistIds::parse(&page)?;
            count = f.len() as u64;
            ids.extend(f.iter());
        }
        _ => {}
    }
    if json {
        let mut v = serde_json::json!({
            "pgid": pgid, "type": ty.name(), "overflow": h.overflow, "total_size": total,
            "count": count,
        });
        match ty {
            PageType::Leaf | PageType::Branch => {
                v["items"] = items
                    .iter()
                    .map(|(k, val, b, child)| {
                        let mut o = serde_json::json!({ "key": hex(k) });
                        if let Some(c) = child {
                            o["child"] = (*c).into();
                        } else if let Some(b) = b {
                            o["bucket"] =
                                serde_json::json!({ "root": b.root, "sequence": b.sequence });
                        } else {
                            o["value"] = hex(val).into();
                        }
                        o
                    })
                    .collect();
            }
            PageType::Freelist => v["ids"] = ids.into(),
            _ => {}
        }
        let _ = writeln!(out, "{v}");
        return Ok(h.overflow);
    }
    header_lines(out, pgid, ty, total, h.overflow);
    match ty {
        PageType::Leaf | PageType::Branch => {
            let _ = writeln!(out, "Item Count: {count}\n");
            for (k, val, b, child) in &items {
                let _ = write!(out, "{}: ", bytefmt::page_key(k));
                if let Some(c) = child {
                    let _ = writeln!(out, "<pgid={c}>");
                } else if let Some(b) = b {
                    let _ = writeln!(out, "<pgid={},seq={}>", b.root, b.sequence);
                } else {
                    out.write_bytes(&bytefmt::format(val, format));
                    out.write_bytes(b"\n");
                }
            }
            let _ = writeln!(out);
        }
        PageType::Freelist => {
            let _ = writeln!(out, "Item Count: {count}");
            let _ = writeln!(out, "Overflow: {}\n", h.overflow);
            for id in ids {
                let _ = writeln!(out, "{id}");
            }
            let _ = writeln!(out);
        }
        _ => {}
    }
    Ok(h.overflow)
}

fn header_lines(out: &mut Out, pgid: u64, ty: PageType, total: impl std::fmt::Display, ovf: u32) {
    let _ = writeln!(out, "Page ID:    {pgid}");
    let _ = writeln!(out, "Page Type:  {}", ty.name());
    let _ = writeln!(out, "Total Size: {total} bytes");
    let _ = writeln!(out, "Overflow pages: {ovf}");
}

/// `page FILE PGID…` / `page FILE --all`: each page decoded as bbolt
/// 1.3.7 and later print it (`cmd/bbolt/page_command.go`, later
/// `command/command_page.go`; 1.3.6's `main.go` has no `Overflow pages:`
/// line and quotes values), separated by a line of `=`. A page that
/// cannot be read is reported as bbolt does, in its main branch's words
/// after 1.5.0 ("Printing page N failed: … Continuing..."; the releases
/// print "Prining page"); a page asked for by id makes the exit status 1
/// (bbolt's is 0), while `--all` exits 0 as bbolt does (free pages keep
/// stale bytes, and a stale continuation page of an old overflow run does
/// not decode: that is no damage).
pub fn page(
    file: &BoltFile<'_, QuietSource>,
    ids: &[u64],
    all: bool,
    format: Format,
    json: bool,
) -> Result<ExitCode> {
    let mut out = Out::new();
    let mut failed = false;
    let mut one = |out: &mut Out, first: bool, pgid: u64| -> Option<u32> {
        if !first && !json {
            let _ = writeln!(out, "{SEPARATOR}");
        }
        match print_page(out, file, pgid, format, json) {
            Ok(ovf) => Some(ovf),
            Err(e) => {
                failed = !all;
                if json {
                    let v = serde_json::json!({ "pgid": pgid, "error": e.to_string() });
                    let _ = writeln!(out, "{v}");
                } else {
                    let _ = writeln!(out, "Printing page {pgid} failed: {e}. Continuing...");
                }
                None
            }
        }
    };
    if all {
        let hwm = all_pages_bound(file);
        let mut pgid = 0;
        while pgid < hwm && out.error.is_none() {
            pgid += match one(&mut out, pgid == 0, pgid) {
                Some(ovf) => u64::from(ovf) + 1,
                None => 1,
            };
        }
    } else {
        for (i, &pgid) in ids.iter().enumerate() {
            one(&mut out, i == 0, pgid);
        }
    }
    out.finish()?;
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// Pages `page --all` walks: `[0, hwm)` with the high-water mark of meta
/// page 0 as stored, whichever meta is current and whatever its checksum,
/// as bbolt 1.3.9's CLI does (cmd/bbolt/page_command.go `printAllPages`
/// reads it with internal/guts_cli `ReadPageAndHWMSize`: the first 4 KiB,
/// magic checked, field `pgid`). When page 0's magic is wrong (bbolt then
/// prints "cannot read number of pages" and nothing else), the current
/// meta page's high-water mark, with a note on stderr.
fn all_pages_bound(file: &BoltFile<'_, QuietSource>) -> u64 {
    let len = usize::try_from(file.len().min(4096)).unwrap_or(0);
    let meta0 =
        file.source().read_at(0, len).ok().and_then(|b| mapwise_core::bolt::Meta::parse(&b, 0));
    match meta0 {
        Some(m) if m.magic == mapwise_core::bolt::MAGIC => m.hwm,
        _ => {
            let hwm = file.meta().hwm;
            eprintln!(
                "mapwise: meta page 0 has a wrong magic; --all uses meta page {}'s high-water mark {hwm}",
                file.current_index()
            );
            hwm
        }
    }
}

/// `dump FILE PGID…`: each page (its first page-size bytes, as bbolt)
/// as hex, 16 bytes a line in 2-byte groups after a 7-digit hex file
/// offset, a repeated line as `*`, then a blank line.
pub fn hexdump(file: &BoltFile<'_, QuietSource>, ids: &[u64], json: bool) -> Result<ExitCode> {
    let ps = u64::from(file.page_size());
    let mut out = Out::new();
    for (i, &pgid) in ids.iter().enumerate() {
        let addr = pgid.checked_mul(ps).filter(|a| a.saturating_add(ps) <= file.len()).ok_or_else(
            || {
                anyhow::Error::new(super::Problem(format!(
                    "page {pgid}: past the end of the {}-byte file",
                    file.len()
                )))
            },
        )?;
        let buf = file.source().read_at(addr, usize::try_from(ps)?)?;
        if json {
            let v = serde_json::json!({ "pgid": pgid, "offset": addr, "hex": hex(&buf) });
            let _ = writeln!(out, "{v}");
            continue;
        }
        if i > 0 {
            let _ = writeln!(out, "{SEPARATOR}");
        }
        let mut prev: Option<&[u8]> = None;
        let mut skipped = false;
        for (n, line) in buf.chunks_exact(16).enumerate() {
            let off = addr + n as u64 * 16;
            let last = off + 16 == addr + ps;
            if prev == Some(line) && !last {
                if !skipped {
                    let _ = writeln!(out, "{off:07x} *");
                    skipped = true;
                }
            } else {
                let _ = write!(out, "{off:07x}");
                for pair in line.chunks_exact(2) {
                    let _ = write!(out, " {:02x}{:02x}", pair[0], pair[1]);
                }
                let _ = writeln!(out);
                skipped = false;
            }
            prev = Some(line);
        }
        let _ = writeln!(out);
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
