//! Compaction: copy every bucket, sequence and key into a fresh database,
//! pages filled to 100 % (bbolt `compact.go`, `Compact`, behind
//! `bbolt compact`).

use std::path::Path;

use mapwise_core::bolt::Bucket as CoreBucket;

use super::db::{Db, Options, Tx};
use super::error::{Error, Result};
use super::wtx::WriteTx;

/// The destination's open write transaction, committed every
/// `max` bytes of keys and values (bbolt's `txMaxSize`; 0 = one
/// transaction). As in bbolt's `compact`, one is open from the start and
/// the last is committed at the end, even empty: a first entry larger
/// than `max` commits an empty transaction before it, and an empty
/// source makes one empty commit, so the copy's txids match bbolt's.
struct Copier<'d> {
    dst: &'d Db,
    /// `None` only between a commit and the next begin (or after an
    /// error in between).
    tx: Option<WriteTx<'d>>,
    size: u64,
    max: u64,
}

impl<'d> Copier<'d> {
    fn tx(&mut self, add: u64) -> Result<&mut WriteTx<'d>> {
        if self.max != 0 && self.size + add > self.max {
            if let Some(tx) = self.tx.take() {
                tx.commit()?;
            }
            self.size = 0;
        }
        self.size += add;
        if self.tx.is_none() {
            self.tx = Some(self.dst.begin_rw()?);
        }
        self.tx.as_mut().ok_or_else(|| Error::Corrupt("no write transaction".into()))
    }
}

/// Create bucket `name` with sequence `seq` below `path`.
fn create_at(tx: &mut WriteTx<'_>, path: &[Vec<u8>], name: &[u8], seq: u64) -> Result<()> {
    if path.is_empty() {
        return tx.create_bucket(name)?.set_sequence(seq);
    }
    let mut parent = tx.bucket_path(path)?;
    parent.set_fill_percent(1.0);
    parent.create_bucket(name)?.set_sequence(seq)
}

fn copy_bucket(
    src: &CoreBucket<'_, [u8]>,
    path: &mut Vec<Vec<u8>>,
    c: &mut Copier<'_>,
    depth: u32,
) -> Result<()> {
    if depth > mapwise_core::bolt::MAX_DEPTH * 4 {
        return Err(Error::Corrupt("buckets nested too deep".into()));
    }
    let mut cur = src.cursor();
    let mut item = cur.first()?;
    while let Some(it) = item {
        if it.is_bucket() {
            let sub = cur.bucket()?.ok_or(Error::BucketNotFound)?;
            create_at(c.tx(it.key.len() as u64)?, path, &it.key, sub.sequence())?;
            path.push(it.key.to_vec());
            copy_bucket(&sub, path, c, depth + 1)?;
            path.pop();
        } else if path.is_empty() {
            // bbolt's API cannot put a key in the root bucket; Compact
            // would crash on one.
            return Err(Error::IncompatibleValue);
        } else {
            let tx = c.tx((it.key.len() + it.value.len()) as u64)?;
            let mut b = tx.bucket_path(path)?;
            b.set_fill_percent(1.0);
            b.put(&it.key, &it.value)?;
        }
        item = cur.next()?;
    }
    Ok(())
}

impl Db {
    /// Copy everything this database holds into `dst` (bbolt
    /// `Compact(dst, src, txMaxSize)`): buckets with their sequences and
    /// every key, leaf pages filled to 100 %, committing every
    /// `tx_max_size` bytes of keys and values (0 = one transaction). Reads
    /// one snapshot of this database.
    ///
    /// The snapshot is checked first ([`Tx::check`]): a damaged tree can
    /// make the copy far larger than the file (a branch pointing back at
    /// an ancestor bucket's page nests the bucket in itself until the
    /// depth limit: 200 MB and 30 s of copying for a 3 MB file, seen), so
    /// a damaged source is refused before anything is written. bbolt's
    /// `compact` does not check; it copies until it fails or panics.
    ///
    /// # Errors
    /// [`Error::Corrupt`] when the source fails the check (the count and
    /// the first problem named); errors of either database;
    /// [`Error::IncompatibleValue`] for a key stored directly in the root
    /// bucket (bbolt's API cannot make one).
    pub fn compact_into(&self, dst: &Db, tx_max_size: u64) -> Result<()> {
        let src = self.begin()?;
        refuse_damaged(&src)?;
        copy_snapshot(&src, dst, tx_max_size)
    }

    /// Compact into a new file at `dst` (`bbolt compact -o DST SRC`),
    /// created with `opts` (read-write; its page size applies) once the
    /// source has passed the check of [`Db::compact_into`] (a damaged
    /// source creates no file). Returns the sizes of the source and the
    /// new file in bytes.
    ///
    /// # Errors
    /// As [`Db::compact_into`], and opening `dst`.
    pub fn compact(
        &self,
        dst: impl AsRef<Path>,
        opts: &Options,
        tx_max_size: u64,
    ) -> Result<(u64, u64)> {
        let dst = dst.as_ref();
        let src = self.begin()?;
        refuse_damaged(&src)?;
        let out = Db::open(dst, &Options { read_only: false, ..opts.clone() })?;
        copy_snapshot(&src, &out, tx_max_size)?;
        drop(src);
        drop(out);
        let size = |p: &Path| {
            std::fs::metadata(p).map(|m| m.len()).map_err(|source| Error::Io {
                path: p.to_owned(),
                what: "stat",
                source,
            })
        };
        Ok((size(self.path())?, size(dst)?))
    }
}

/// [`Error::Corrupt`] when snapshot `src` fails [`Tx::check`].
fn refuse_damaged(src: &Tx<'_>) -> Result<()> {
    match super::error::check_summary(&src.check()) {
        None => Ok(()),
        Some(summary) => {
            Err(Error::Corrupt(format!("the source fails check ({summary}); nothing copied")))
        }
    }
}

/// Copy snapshot `src` into `dst`, as [`Db::compact_into`] describes.
fn copy_snapshot(src: &Tx<'_>, dst: &Db, tx_max_size: u64) -> Result<()> {
    let root = CoreBucket::root_of(&src.file());
    let mut c = Copier { dst, tx: Some(dst.begin_rw()?), size: 0, max: tx_max_size };
    copy_bucket(&root, &mut Vec::new(), &mut c, 0)?;
    match c.tx.take() {
        Some(tx) => tx.commit(),
        None => Ok(()),
    }
}
