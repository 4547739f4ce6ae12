//! [`Fixed`], the test double of the inspector's [`Target`]: fixed data
//! whose touch, evict, advise and lock change the sample as the real calls
//! would, without touching a file.

use mapwise_core::bolt::{BoltFile, PageDetail, page_detail};
use mapwise_inspector::app::{DETAIL_LIMIT, Target};
use mapwise_native::observe::watch::{Effect, Refreshed, Snapshot};
use mapwise_native::os::residency::{FileAdvice, Residency, TO_EOF};
use mapwise_view::describe::Item;

/// A [`Target`] over fixed data: a snapshot, a residency sample and the
/// file's bytes (for decoding pages). Touch, evict, advise and lock change
/// the sample the way the real calls would; nothing touches a file.
#[derive(Debug, Clone)]
pub struct Fixed {
    /// The structure.
    pub snapshot: Snapshot,
    /// The residency sample.
    pub residency: Option<Residency>,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// A problem to report.
    pub problem: Option<String>,
    /// Whether "locked".
    pub locked: bool,
    /// OS pages that evict and DONTNEED leave resident, as the kernel
    /// leaves pages another process maps or locks, dirty pages and tmpfs.
    pub held: Vec<u64>,
}

impl Fixed {
    /// Fixed data.
    #[must_use]
    pub fn new(snapshot: Snapshot, residency: Option<Residency>, bytes: Vec<u8>) -> Fixed {
        Fixed { snapshot, residency, bytes, problem: None, locked: false, held: Vec::new() }
    }

    /// Make the OS pages of `[offset, offset + len)` resident (or not,
    /// except the held ones), and say what changed as the real target does.
    fn set(&mut self, offset: u64, len: u64, resident: bool, released_lock: bool) -> Effect {
        let held = self.held.clone();
        let Some(r) = &mut self.residency else {
            return Effect { offset, len, pages: 0, before: None, after: None, released_lock };
        };
        let (pages, before) = Effect::count(r, offset, len);
        let ps = r.page_size.max(1);
        let first = offset.saturating_sub(r.offset) / ps;
        let end = offset
            .saturating_add(len)
            .min(r.offset.saturating_add(r.len))
            .saturating_sub(r.offset)
            .div_ceil(ps);
        for page in first..end {
            let (Ok(w), bit) = (usize::try_from(page / 64), page % 64) else {
                break;
            };
            if let Some(word) = r.bitmap.get_mut(w) {
                if resident {
                    *word |= 1 << bit;
                } else if !held.contains(&page) {
                    *word &= !(1 << bit);
                }
            }
        }
        r.resident_pages = r.bitmap.iter().map(|w| u64::from(w.count_ones())).sum();
        let (_, after) = Effect::count(r, offset, len);
        Effect { offset, len, pages, before, after, released_lock }
    }
}

impl Target for Fixed {
    fn refresh(&mut self) -> Refreshed {
        Refreshed::default()
    }
    fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
    fn residency(&self) -> Option<&Residency> {
        self.residency.as_ref()
    }
    fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }
    fn rereading(&self) -> bool {
        false
    }
    fn is_locked(&self) -> bool {
        self.locked
    }
    fn page_detail(&self, pgid: u64) -> Result<PageDetail, String> {
        let file = BoltFile::open(&self.bytes).map_err(|e| e.to_string())?;
        page_detail(&file, pgid, DETAIL_LIMIT).map_err(|e| e.to_string())
    }
    fn describe(&self, offset: u64, len: u64) -> Result<Vec<Item>, String> {
        mapwise_view::describe::describe(&self.snapshot.layout, &self.bytes, offset, len)
    }
    fn etcd_prefixes(
        &mut self,
        depth: usize,
    ) -> Option<std::sync::mpsc::Receiver<mapwise_inspector::etcd::Prefixes>> {
        let (tx, rx) = std::sync::mpsc::channel();
        let counted = BoltFile::open(&self.bytes[..])
            .map_err(|e| e.to_string())
            .and_then(|f| mapwise_inspector::etcd::prefixes_of(&f, self.residency.as_ref(), depth));
        tx.send(counted).ok()?;
        Some(rx)
    }
    fn touch(&mut self) -> Result<Effect, String> {
        Ok(self.set(0, TO_EOF, true, false))
    }
    fn evict(&mut self) -> Result<Effect, String> {
        let released = std::mem::take(&mut self.locked);
        Ok(self.set(0, TO_EOF, false, released))
    }
    fn advise(&mut self, advice: FileAdvice, offset: u64, len: u64) -> Result<Effect, String> {
        Ok(match advice {
            FileAdvice::WillNeed => self.set(offset, len, true, false),
            FileAdvice::DontNeed => {
                let released = std::mem::take(&mut self.locked);
                self.set(offset, len, false, released)
            }
            // Read-ahead hints change no residency by themselves.
            _ => {
                let (pages, now) =
                    self.residency.as_ref().map_or((0, None), |r| Effect::count(r, offset, len));
                Effect { offset, len, pages, before: now, after: now, released_lock: false }
            }
        })
    }
    fn toggle_lock(&mut self) -> Result<bool, String> {
        self.locked = !self.locked;
        if self.locked {
            self.set(0, TO_EOF, true, false);
        }
        Ok(self.locked)
    }
}
