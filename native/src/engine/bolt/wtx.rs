//! Write transactions: [`WriteTx`], [`BucketMut`] and their cursors
//! (bbolt `tx.go`, `bucket.go`, `cursor.go` for a writable `Tx`).
//!
//! One write transaction runs at a time (it holds the database's writer
//! lock). It reads the snapshot it began at through its own handle on the
//! mapping, materialises the pages it changes into nodes, and at
//! [`WriteTx::commit`] rebalances, spills, writes the freelist, grows the
//! file, writes the dirty pages, syncs, writes the meta page and syncs
//! again (docs/format/bolt.md §15–§17).

use std::borrow::Cow;
use std::sync::{Arc, MutexGuard};

use mapwise_core::At;
use mapwise_core::bolt::{
    BUCKET_HEADER_SIZE, BUCKET_LEAF_FLAG, BoltFile, BucketHeader, Item, MAX_DEPTH, MAX_KEY_SIZE,
    Meta, NO_FREELIST, Snapshot, WalkOptions, empty_inline_bucket, freelist_size, walk,
    write_freelist,
};

use super::db::{Db, WriterState};
use super::error::{Error, Result};
use super::freelist::Freelist;
use super::node::{Arena, BucketId, BucketState, Bytes, Ctx, Freed, Spilled};
use super::wcursor::{Entry, View, WCursor};
use crate::os::map::Mapping;

/// Longest value bbolt stores (`MaxValueSize`, 2^31 - 2 bytes).
pub const MAX_VALUE_SIZE: usize = (1 << 31) - 2;

/// The state of a write transaction, apart from its locks.
pub(crate) struct TxState {
    map: Arc<Mapping>,
    len: u64,
    pub(crate) snap: Snapshot,
    /// The meta this transaction will write: txid + 1, moving hwm.
    pub(crate) meta: Meta,
    arena: Arena,
    freed: Freed,
    pub(crate) fl: Freelist,
    ps: usize,
    default_fill: f64,
}

/// The bytes `s` as a range of `map` when they lie inside it (zero-copy),
/// else an owned copy.
fn bytes_of(map: &[u8], s: &[u8]) -> Bytes {
    let (m0, s0) = (map.as_ptr().addr(), s.as_ptr().addr());
    if s0 >= m0 && s0 + s.len() <= m0 + map.len() {
        Bytes::Map { off: s0 - m0, len: s.len() }
    } else {
        Bytes::owned(s)
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() {
        return Err(Error::KeyRequired);
    }
    if key.len() > MAX_KEY_SIZE {
        return Err(Error::KeyTooLarge(key.len()));
    }
    Ok(())
}

fn check_name(name: &[u8]) -> Result<()> {
    if name.is_empty() {
        return Err(Error::BucketNameRequired);
    }
    if name.len() > MAX_KEY_SIZE {
        return Err(Error::KeyTooLarge(name.len()));
    }
    Ok(())
}

impl TxState {
    pub(crate) fn new(
        map: Arc<Mapping>,
        len: u64,
        snap: Snapshot,
        fl: Freelist,
        default_fill: f64,
    ) -> TxState {
        let mut meta = snap.meta;
        meta.txid = meta.txid.wrapping_add(1);
        let root = BucketState::new(meta.root, meta.root_sequence, None, default_fill);
        TxState {
            map,
            len,
            snap,
            meta,
            arena: Arena { nodes: Vec::new(), buckets: vec![root] },
            freed: Freed::default(),
            fl,
            ps: snap.page_size as usize,
            default_fill,
        }
    }

    pub(crate) fn mapping(&self) -> &Arc<Mapping> {
        &self.map
    }

    fn ctx(&mut self) -> Ctx<'_> {
        Ctx {
            map: self.map.bytes_to(self.len),
            snap: &self.snap,
            arena: &mut self.arena,
            fl: &mut self.fl,
            freed: &mut self.freed,
            meta: &mut self.meta,
            ps: self.ps,
        }
    }

    fn view(&self) -> View<'_> {
        View { map: self.map.bytes_to(self.len), snap: &self.snap, arena: &self.arena }
    }

    /// The base snapshot as a file (what this transaction began with).
    pub(crate) fn file(&self) -> BoltFile<'_, [u8]> {
        BoltFile::at(self.map.bytes_to(self.len), &self.snap)
    }

    fn open_child(&mut self, parent: BucketId, name: &[u8]) -> Result<Option<BucketId>> {
        if let Some(&c) = self.arena.buckets[parent].children.get(name) {
            return Ok(Some(c));
        }
        let view = self.view();
        let mut cur = WCursor::new(view, parent);
        let (value, flags) = match cur.seek(name)? {
            Some((k, v, flags)) if k == name => (v, flags),
            _ => return Ok(None),
        };
        if flags & BUCKET_LEAF_FLAG == 0 {
            return Err(Error::IncompatibleValue);
        }
        let header = BucketHeader::parse(value, At::Offset(0))?;
        let inline = (header.root == 0)
            .then(|| bytes_of(view.map, value.get(BUCKET_HEADER_SIZE..).unwrap_or_default()));
        let state = BucketState::new(header.root, header.sequence, inline, self.default_fill);
        let id = self.arena.buckets.len();
        self.arena.buckets.push(state);
        self.arena.buckets[parent].children.insert(name.to_vec(), id);
        Ok(Some(id))
    }

    fn create_child(&mut self, parent: BucketId, name: &[u8]) -> Result<BucketId> {
        check_name(name)?;
        let (path, found) = self.view().locate(parent, name)?;
        if let Some(flags) = found {
            return Err(if flags & BUCKET_LEAF_FLAG != 0 {
                Error::BucketExists
            } else {
                Error::IncompatibleValue
            });
        }
        let mut ctx = self.ctx();
        let n = ctx.leaf_at(parent, &path)?;
        ctx.put(
            n,
            name,
            Bytes::owned(name),
            Bytes::owned(&empty_inline_bucket()),
            0,
            BUCKET_LEAF_FLAG,
        )?;
        // A bucket holding a sub-bucket is never inline again: forget the
        // inline page (bbolt sets `b.page = nil`).
        self.arena.buckets[parent].inline = None;
        self.open_child(parent, name)?.ok_or(Error::BucketNotFound)
    }

    fn delete_child(&mut self, parent: BucketId, name: &[u8], depth: u32) -> Result<()> {
        if depth > MAX_DEPTH * 4 {
            return Err(Error::Corrupt("buckets nested too deep".into()));
        }
        let (_, found) = self.view().locate(parent, name)?;
        match found {
            None => return Err(Error::BucketNotFound),
            Some(f) if f & BUCKET_LEAF_FLAG == 0 => return Err(Error::IncompatibleValue),
            Some(_) => {}
        }
        let c = self.open_child(parent, name)?.ok_or(Error::BucketNotFound)?;
        let subs: Vec<Vec<u8>> = {
            let mut cur = WCursor::new(self.view(), c);
            let mut subs = Vec::new();
            let mut e = cur.first()?;
            while let Some((k, _, flags)) = e {
                if flags & BUCKET_LEAF_FLAG != 0 {
                    subs.push(k.to_vec());
                }
                e = cur.next()?;
            }
            subs
        };
        for s in subs {
            self.delete_child(c, &s, depth + 1)?;
        }
        // Free the committed pages first: if the tree is damaged, nothing
        // changes and the error is returned.
        let mark = self.freed.ids.len();
        self.ctx().free_bucket_pages(c)?;
        let (path, _) = match self.view().locate(parent, name) {
            Ok(found) => found,
            Err(e) => {
                self.ctx().unfree_since(mark);
                return Err(e);
            }
        };
        let n = match self.ctx().leaf_at(parent, &path) {
            Ok(n) => n,
            Err(e) => {
                self.ctx().unfree_since(mark);
                return Err(e);
            }
        };
        self.ctx().del(n, name);
        self.arena.buckets[parent].children.remove(name);
        let cb = &mut self.arena.buckets[c];
        cb.deleted = true;
        cb.nodes.clear();
        cb.root_node = None;
        cb.root = 0;
        Ok(())
    }

    fn get(&self, b: BucketId, key: &[u8]) -> Result<Option<&[u8]>> {
        let mut cur = WCursor::new(self.view(), b);
        Ok(match cur.seek(key)? {
            Some((k, v, flags)) if k == key && flags & BUCKET_LEAF_FLAG == 0 => Some(v),
            _ => None,
        })
    }

    fn put(&mut self, b: BucketId, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        if value.len() > MAX_VALUE_SIZE {
            return Err(Error::ValueTooLarge(value.len()));
        }
        let (path, found) = self.view().locate(b, key)?;
        if found.is_some_and(|f| f & BUCKET_LEAF_FLAG != 0) {
            return Err(Error::IncompatibleValue);
        }
        let mut ctx = self.ctx();
        let n = ctx.leaf_at(b, &path)?;
        ctx.put(n, key, Bytes::owned(key), Bytes::owned(value), 0, 0)
    }

    fn delete(&mut self, b: BucketId, key: &[u8]) -> Result<()> {
        let (path, found) = self.view().locate(b, key)?;
        match found {
            None => return Ok(()),
            Some(f) if f & BUCKET_LEAF_FLAG != 0 => return Err(Error::IncompatibleValue),
            Some(_) => {}
        }
        let mut ctx = self.ctx();
        let n = ctx.leaf_at(b, &path)?;
        ctx.del(n, key);
        Ok(())
    }

    /// Materialise the bucket's root so its header is rewritten at commit
    /// (bbolt `SetSequence`, `NextSequence`).
    fn touch_root(&mut self, b: BucketId) -> Result<()> {
        if self.arena.buckets[b].root_node.is_none() {
            let root = self.arena.buckets[b].root;
            self.ctx().node(b, root, None)?;
        }
        Ok(())
    }

    /// Rebalance, spill and serialise the freelist: everything a commit
    /// does before I/O. Returns the dirty pages.
    fn prepare(&mut self, no_freelist_sync: bool, out: &mut Spilled) -> Result<()> {
        let txid = self.meta.txid;
        let old_freelist = self.meta.freelist;
        let old_overflow = if old_freelist == NO_FREELIST {
            0
        } else {
            self.file().read_page(old_freelist)?.header.overflow
        };
        let mut ctx = self.ctx();
        ctx.rebalance_bucket(0, 0)?;
        ctx.spill_bucket(0, out, 0)?;
        ctx.meta.root = ctx.arena.buckets[0].root;
        ctx.meta.root_sequence = ctx.arena.buckets[0].sequence;
        // A commit writes a fresh freelist: the old run is freed.
        if old_freelist != NO_FREELIST {
            ctx.free_run(old_freelist, old_overflow)?;
        }
        let ids = std::mem::take(&mut ctx.freed.ids);
        ctx.fl.free_pending(txid, &ids).map_err(|p| {
            Error::Format(mapwise_core::Error::Reused { at: At::Page(p), field: "free", pgid: p })
        })?;
        ctx.freed.ids = ids;
        if no_freelist_sync {
            ctx.meta.freelist = NO_FREELIST;
            return Ok(());
        }
        // bbolt sizes the run from the count before allocating it, so the
        // run is an over-estimate with zeroed slack (tx.go,
        // `commitFreelist`).
        let count = freelist_size(ctx.fl.count()) / ctx.ps + 1;
        let before = ctx.meta.hwm;
        let pgid = ctx.allocate(count, out)?;
        out.grow = ctx.meta.hwm > before;
        let all = ctx.fl.all_sorted();
        let mut buf = vec![0u8; count * ctx.ps];
        let overflow =
            u32::try_from(count - 1).map_err(|_| Error::Corrupt("freelist run too long".into()))?;
        write_freelist(&mut buf, pgid, overflow, all.iter().copied())?;
        out.push_dirty(pgid, buf);
        ctx.meta.freelist = pgid;
        Ok(())
    }
}

/// A read-write transaction (bbolt `Tx` with `writable`). Begin it with
/// [`Db::begin_rw`] or run one with [`Db::update`]; end it with
/// [`WriteTx::commit`] or [`WriteTx::rollback`] (dropping it rolls back).
///
/// Only one runs at a time: beginning a second one waits (a second
/// `begin_rw` on the thread that holds one deadlocks, as in bbolt).
pub struct WriteTx<'db> {
    db: &'db Db,
    guard: MutexGuard<'db, WriterState>,
    st: TxState,
    finished: bool,
}

impl std::fmt::Debug for WriteTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTx").field("txid", &self.st.meta.txid).finish_non_exhaustive()
    }
}

impl<'db> WriteTx<'db> {
    pub(crate) fn new(db: &'db Db, guard: MutexGuard<'db, WriterState>, st: TxState) -> Self {
        WriteTx { db, guard, st, finished: false }
    }

    /// This transaction's id: the current txid + 1 (bbolt `Tx.ID`).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.st.meta.txid
    }

    /// Database size in bytes as this transaction sees it: high-water mark
    /// × page size (bbolt `Tx.Size`).
    #[must_use]
    pub fn size(&self) -> u64 {
        self.st.meta.hwm * self.st.ps as u64
    }

    fn root(&mut self) -> BucketMut<'_> {
        BucketMut { st: &mut self.st, id: 0 }
    }

    /// The top-level bucket `name` for reading and writing; `None` when
    /// absent (bbolt `Tx.Bucket`).
    ///
    /// # Errors
    /// [`Error::IncompatibleValue`] when `name` holds a value; a damaged
    /// page.
    pub fn bucket(&mut self, name: &[u8]) -> Result<Option<BucketMut<'_>>> {
        let st = &mut self.st;
        Ok(st.open_child(0, name)?.map(|id| BucketMut { st, id }))
    }

    /// The bucket at `path` (top-level name, then nested names).
    ///
    /// # Errors
    /// [`Error::BucketNotFound`] when a component is missing,
    /// [`Error::IncompatibleValue`] when one holds a value.
    pub fn bucket_path<P: AsRef<[u8]>>(&mut self, path: &[P]) -> Result<BucketMut<'_>> {
        let st = &mut self.st;
        let mut id = 0;
        for name in path {
            id = st.open_child(id, name.as_ref())?.ok_or(Error::BucketNotFound)?;
        }
        if path.is_empty() {
            return Err(Error::BucketNameRequired);
        }
        Ok(BucketMut { st, id })
    }

    /// Create the top-level bucket `name` (bbolt `Tx.CreateBucket`).
    ///
    /// # Errors
    /// [`Error::BucketNameRequired`], [`Error::KeyTooLarge`],
    /// [`Error::BucketExists`], [`Error::IncompatibleValue`].
    pub fn create_bucket(&mut self, name: &[u8]) -> Result<BucketMut<'_>> {
        self.root().into_create(name)
    }

    /// Create the top-level bucket `name` unless it exists (bbolt
    /// `Tx.CreateBucketIfNotExists`).
    ///
    /// # Errors
    /// As [`WriteTx::create_bucket`], except [`Error::BucketExists`].
    pub fn create_bucket_if_not_exists(&mut self, name: &[u8]) -> Result<BucketMut<'_>> {
        self.root().into_create_if_not_exists(name)
    }

    /// Delete the top-level bucket `name` and everything in it, nested
    /// buckets included (bbolt `Tx.DeleteBucket`).
    ///
    /// # Errors
    /// [`Error::BucketNotFound`], [`Error::IncompatibleValue`].
    pub fn delete_bucket(&mut self, name: &[u8]) -> Result<()> {
        self.st.delete_child(0, name, 0)
    }

    /// A cursor over the top-level bucket names (bbolt `Tx.Cursor`).
    #[must_use]
    pub fn cursor(&self) -> WriteCursor<'_> {
        WriteCursor { cur: WCursor::new(self.st.view(), 0) }
    }

    /// Call `f` with each top-level bucket name, in key order.
    ///
    /// # Errors
    /// The first error of `f`, or a damaged page.
    pub fn for_each<E: From<Error>>(
        &self,
        mut f: impl FnMut(&[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut cur = WCursor::new(self.st.view(), 0);
        let mut e = cur.first()?;
        while let Some((k, _, _)) = e {
            f(k)?;
            e = cur.next()?;
        }
        Ok(())
    }

    /// Check the snapshot this transaction began with (bbolt `Tx.Check`:
    /// reachability, pages used once, freelist consistency, key order).
    /// Uncommitted changes are not pages yet, so they are not checked.
    #[must_use]
    pub fn check(&self) -> Vec<mapwise_core::Error> {
        walk(&self.st.file(), WalkOptions::default()).layout.problems
    }

    /// Commit (bbolt `Tx.Commit`): rebalance, spill, write the freelist
    /// (unless `no_freelist_sync`), grow the file, write the dirty pages
    /// (in a big synced commit, a writer thread writes each as the spill
    /// makes it, see `Db::write_pages`), fdatasync, write the meta page to
    /// page `txid % 2`, fdatasync. On error nothing visible changed: the
    /// previous snapshot stays current and the in-memory freelist is
    /// restored.
    ///
    /// # Errors
    /// [`Error::Io`] (write, sync, resize), [`Error::Map`] (remap), or a
    /// damaged page met while rebalancing or spilling.
    pub fn commit(mut self) -> Result<()> {
        self.finished = true;
        let txid = self.st.meta.txid;
        let mut out = Spilled { spare: self.guard.spare.take(), ..Spilled::default() };
        let opts = self.db.options();
        let db = self.db;
        // Pages are written by a second thread while the tree is still
        // being spilled (see `Db::write_pages`) when that can pay: the
        // commit syncs (without fdatasync there is nothing to overlap)
        // and its materialised nodes fill at least one writeback batch
        // (starting a thread costs 20-100 us here, a one-put commit
        // without sync ~18 us in all). A test's simulated crash needs the
        // one-thread order.
        let pipelined = !opts.no_sync
            && !super::failpoint::armed()
            && self.st.arena.nodes.len() * self.st.ps >= super::db::WRITEBACK_BATCH;
        let result = std::thread::scope(|s| {
            let writer = pipelined.then(|| {
                let (tx, rx) = std::sync::mpsc::channel();
                out.sink = Some(tx);
                s.spawn(move || db.write_pages(&rx))
            });
            let prepared = self.st.prepare(opts.no_freelist_sync, &mut out);
            // Closing the channel ends the writer once it has written
            // everything sent.
            out.sink = None;
            let written = match writer {
                Some(h) => h
                    .join()
                    .unwrap_or_else(|_| {
                        Err(Error::Io {
                            path: db.path().to_path_buf(),
                            what: "pwrite",
                            source: std::io::Error::other("the commit's writer thread panicked"),
                        })
                    })
                    .map(|(end, bufs)| {
                        self.guard.spare.keep(bufs);
                        end
                    }),
                None => Ok(0),
            };
            prepared.and(written).and_then(|end| {
                self.db.write_commit(&mut self.guard, &self.st, &mut out.dirty, out.grow, end)
            })
        });
        if result.is_err() {
            self.st.fl.rollback(txid);
            for &(id, n) in &out.taken {
                self.st.fl.unallocate(id, n);
            }
        }
        self.guard.freelist = std::mem::take(&mut self.st.fl);
        let dirty = std::mem::take(&mut out.dirty);
        self.guard.spare.keep(dirty.into_iter().map(|(_, b)| b));
        self.guard.spare.keep(out.spare);
        result
    }

    /// Discard every change (bbolt `Tx.Rollback`).
    pub fn rollback(mut self) {
        self.finished = true;
        self.guard.freelist = std::mem::take(&mut self.st.fl);
    }
}

impl Drop for WriteTx<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.guard.freelist = std::mem::take(&mut self.st.fl);
        }
    }
}

/// A bucket inside a [`WriteTx`], for reading and writing (bbolt
/// `Bucket` of a writable transaction). It borrows the transaction
/// mutably, so one bucket handle is live at a time; values it returns
/// borrow the handle, so none outlives a change:
///
/// ```compile_fail
/// # use mapwise_native::engine::bolt::{Db, Error};
/// # fn f(db: &Db) -> Result<(), Error> {
/// db.update(|tx| {
///     let mut b = tx.create_bucket(b"b")?;
///     let v = b.get(b"k")?;
///     b.put(b"k", b"new")?; // error: `b` is borrowed by `v`
///     drop(v);
///     Ok::<(), Error>(())
/// })
/// # }
/// ```
///
/// Statistics ([`mapwise_core::bolt::BucketStats`]) come from a read
/// transaction (`Tx::bucket(..)?.stats()`); bbolt's `Bucket.Stats` in a
/// write transaction also counts committed pages only.
pub struct BucketMut<'tx> {
    st: &'tx mut TxState,
    id: BucketId,
}

impl std::fmt::Debug for BucketMut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketMut").field("id", &self.id).finish_non_exhaustive()
    }
}

impl<'tx> BucketMut<'tx> {
    fn into_create(self, name: &[u8]) -> Result<BucketMut<'tx>> {
        let id = self.st.create_child(self.id, name)?;
        Ok(BucketMut { st: self.st, id })
    }

    fn into_create_if_not_exists(self, name: &[u8]) -> Result<BucketMut<'tx>> {
        let id = match self.st.create_child(self.id, name) {
            Ok(id) => id,
            Err(Error::BucketExists) => {
                self.st.open_child(self.id, name)?.ok_or(Error::BucketNotFound)?
            }
            Err(e) => return Err(e),
        };
        Ok(BucketMut { st: self.st, id })
    }

    /// The value of `key`; `None` when absent or when `key` names a
    /// sub-bucket (bbolt `Bucket.Get`). Sees this transaction's writes.
    ///
    /// # Errors
    /// A damaged page.
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        self.st.get(self.id, key)
    }

    /// Set `key` to `value` (bbolt `Bucket.Put`).
    ///
    /// # Errors
    /// [`Error::KeyRequired`], [`Error::KeyTooLarge`] (over 32768 bytes),
    /// [`Error::ValueTooLarge`] (over 2^31 - 2 bytes),
    /// [`Error::IncompatibleValue`] (`key` names a sub-bucket).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.st.put(self.id, key, value)
    }

    /// Remove `key`; absent keys are not an error (bbolt `Bucket.Delete`).
    ///
    /// # Errors
    /// [`Error::IncompatibleValue`] when `key` names a sub-bucket.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.st.delete(self.id, key)
    }

    /// The sub-bucket `name`; `None` when absent (bbolt `Bucket.Bucket`).
    ///
    /// # Errors
    /// [`Error::IncompatibleValue`] when `name` holds a value.
    pub fn bucket(&mut self, name: &[u8]) -> Result<Option<BucketMut<'_>>> {
        let st = &mut *self.st;
        Ok(st.open_child(self.id, name)?.map(|id| BucketMut { st, id }))
    }

    /// Create sub-bucket `name` (bbolt `Bucket.CreateBucket`).
    ///
    /// # Errors
    /// [`Error::BucketNameRequired`], [`Error::KeyTooLarge`],
    /// [`Error::BucketExists`], [`Error::IncompatibleValue`].
    pub fn create_bucket(&mut self, name: &[u8]) -> Result<BucketMut<'_>> {
        let id = self.st.create_child(self.id, name)?;
        Ok(BucketMut { st: self.st, id })
    }

    /// Create sub-bucket `name` unless it exists (bbolt
    /// `Bucket.CreateBucketIfNotExists`).
    ///
    /// # Errors
    /// As [`BucketMut::create_bucket`], except [`Error::BucketExists`].
    pub fn create_bucket_if_not_exists(&mut self, name: &[u8]) -> Result<BucketMut<'_>> {
        BucketMut { st: &mut *self.st, id: self.id }.into_create_if_not_exists(name)
    }

    /// Delete sub-bucket `name` with everything in it (bbolt
    /// `Bucket.DeleteBucket`).
    ///
    /// # Errors
    /// [`Error::BucketNotFound`], [`Error::IncompatibleValue`].
    pub fn delete_bucket(&mut self, name: &[u8]) -> Result<()> {
        self.st.delete_child(self.id, name, 0)
    }

    /// The bucket's sequence (bbolt `Bucket.Sequence`).
    #[must_use]
    pub fn sequence(&self) -> u64 {
        self.st.arena.buckets[self.id].sequence
    }

    /// Set the sequence (bbolt `Bucket.SetSequence`).
    ///
    /// # Errors
    /// A damaged page (the bucket's root is read to be rewritten).
    pub fn set_sequence(&mut self, v: u64) -> Result<()> {
        self.st.touch_root(self.id)?;
        self.st.arena.buckets[self.id].sequence = v;
        Ok(())
    }

    /// Increment the sequence and return the new value (bbolt
    /// `Bucket.NextSequence`).
    ///
    /// # Errors
    /// A damaged page.
    pub fn next_sequence(&mut self) -> Result<u64> {
        self.st.touch_root(self.id)?;
        let b = &mut self.st.arena.buckets[self.id];
        b.sequence = b.sequence.wrapping_add(1);
        Ok(b.sequence)
    }

    /// The fill percent splits use in this transaction (bbolt
    /// `Bucket.FillPercent`; clamped to [0.1, 1.0] when splitting).
    #[must_use]
    pub fn fill_percent(&self) -> f64 {
        self.st.arena.buckets[self.id].fill_percent
    }

    /// Set the fill percent for this bucket, for this transaction.
    pub fn set_fill_percent(&mut self, fill: f64) {
        self.st.arena.buckets[self.id].fill_percent = fill;
    }

    /// A cursor over this bucket (bbolt `Bucket.Cursor`).
    #[must_use]
    pub fn cursor(&self) -> WriteCursor<'_> {
        WriteCursor { cur: WCursor::new(self.st.view(), self.id) }
    }

    /// A cursor that can delete the entry under it (bbolt
    /// `Cursor.Delete`).
    #[must_use]
    pub fn cursor_mut(&mut self) -> CursorMut<'_> {
        CursorMut { st: &mut *self.st, id: self.id, at: None }
    }

    /// Call `f` with each key and value in key order; a sub-bucket comes
    /// with `None` (bbolt `Bucket.ForEach`).
    ///
    /// # Errors
    /// The first error of `f`, or a damaged page.
    pub fn for_each<E: From<Error>>(
        &self,
        mut f: impl FnMut(&[u8], Option<&[u8]>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut cur = WCursor::new(self.st.view(), self.id);
        let mut e = cur.first()?;
        while let Some((k, v, flags)) = e {
            f(k, (flags & BUCKET_LEAF_FLAG == 0).then_some(v))?;
            e = cur.next()?;
        }
        Ok(())
    }
}

fn item(e: Entry<'_>) -> Item<'_> {
    Item { key: Cow::Borrowed(e.0), value: Cow::Borrowed(e.1), flags: e.2 }
}

/// A cursor over a bucket of a write transaction: it sees the
/// transaction's own writes (bbolt `Cursor` of a writable `Tx`).
pub struct WriteCursor<'a> {
    cur: WCursor<'a>,
}

impl std::fmt::Debug for WriteCursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteCursor").finish_non_exhaustive()
    }
}

impl<'a> WriteCursor<'a> {
    /// First item; `None` for an empty bucket.
    ///
    /// # Errors
    /// A damaged page.
    pub fn first(&mut self) -> Result<Option<Item<'a>>> {
        Ok(self.cur.first()?.map(item))
    }

    /// Last item.
    ///
    /// # Errors
    /// A damaged page.
    pub fn last(&mut self) -> Result<Option<Item<'a>>> {
        Ok(self.cur.last()?.map(item))
    }

    /// Next item; `None` past the last.
    ///
    /// # Errors
    /// A damaged page.
    #[expect(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Item<'a>>> {
        Ok(self.cur.next()?.map(item))
    }

    /// Previous item; `None` before the first.
    ///
    /// # Errors
    /// A damaged page.
    pub fn prev(&mut self) -> Result<Option<Item<'a>>> {
        Ok(self.cur.prev()?.map(item))
    }

    /// First item whose key is `>= key`.
    ///
    /// # Errors
    /// A damaged page.
    pub fn seek(&mut self, key: &[u8]) -> Result<Option<Item<'a>>> {
        Ok(self.cur.seek(key)?.map(item))
    }
}

/// Where a [`CursorMut`] stands.
#[derive(Debug, Clone)]
enum At2 {
    /// On this key.
    On(Vec<u8>),
    /// Just after this (deleted) key: `next` lands on the key that
    /// followed it, `prev` on the one before.
    After(Vec<u8>),
}

/// A cursor that can delete (bbolt `Cursor.Delete`). Each move re-seeks
/// from the key it stands on, so a deletion never makes it skip an item:
/// after [`CursorMut::delete`], `next` returns the item that followed the
/// deleted one. (bbolt's cursor may skip it when the leaf was already
/// materialised.)
pub struct CursorMut<'b> {
    st: &'b mut TxState,
    id: BucketId,
    at: Option<At2>,
}

impl std::fmt::Debug for CursorMut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CursorMut").field("at", &self.at).finish_non_exhaustive()
    }
}

impl CursorMut<'_> {
    fn current(&self) -> Result<Option<Item<'_>>> {
        let Some(At2::On(k)) = &self.at else {
            return Ok(None);
        };
        let mut c = WCursor::new(self.st.view(), self.id);
        Ok(c.seek(k)?.filter(|e| e.0 == &k[..]).map(item))
    }

    /// First item.
    ///
    /// # Errors
    /// A damaged page.
    pub fn first(&mut self) -> Result<Option<Item<'_>>> {
        let k = {
            let mut c = WCursor::new(self.st.view(), self.id);
            c.first()?.map(|e| e.0.to_vec())
        };
        self.at = k.map(At2::On);
        self.current()
    }

    /// Last item.
    ///
    /// # Errors
    /// A damaged page.
    pub fn last(&mut self) -> Result<Option<Item<'_>>> {
        let k = {
            let mut c = WCursor::new(self.st.view(), self.id);
            c.last()?.map(|e| e.0.to_vec())
        };
        self.at = k.map(At2::On);
        self.current()
    }

    /// First item with a key `>= key`.
    ///
    /// # Errors
    /// A damaged page.
    pub fn seek(&mut self, key: &[u8]) -> Result<Option<Item<'_>>> {
        let k = {
            let mut c = WCursor::new(self.st.view(), self.id);
            c.seek(key)?.map(|e| e.0.to_vec())
        };
        self.at = k.map(At2::On);
        self.current()
    }

    /// Next item.
    ///
    /// # Errors
    /// A damaged page.
    #[expect(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Item<'_>>> {
        let k = {
            let mut c = WCursor::new(self.st.view(), self.id);
            match &self.at {
                None => None,
                Some(At2::After(k)) => c.seek(k)?.map(|e| e.0.to_vec()),
                Some(At2::On(k)) => match c.seek(k)? {
                    Some(e) if e.0 == &k[..] => c.next()?.map(|e| e.0.to_vec()),
                    other => other.map(|e| e.0.to_vec()),
                },
            }
        };
        self.at = k.map(At2::On);
        self.current()
    }

    /// Previous item.
    ///
    /// # Errors
    /// A damaged page.
    pub fn prev(&mut self) -> Result<Option<Item<'_>>> {
        let k = {
            let mut c = WCursor::new(self.st.view(), self.id);
            match &self.at {
                None => None,
                Some(At2::On(k) | At2::After(k)) => match c.seek(k)? {
                    Some(_) => c.prev()?.map(|e| e.0.to_vec()),
                    None => c.last()?.map(|e| e.0.to_vec()),
                },
            }
        };
        self.at = k.map(At2::On);
        self.current()
    }

    /// Delete the item under the cursor (bbolt `Cursor.Delete`).
    ///
    /// # Errors
    /// [`Error::IncompatibleValue`] when it is a sub-bucket.
    pub fn delete(&mut self) -> Result<()> {
        let Some(At2::On(k)) = self.at.clone() else {
            return Ok(());
        };
        self.st.delete(self.id, &k)?;
        self.at = Some(At2::After(k));
        Ok(())
    }
}
