//! A bbolt writer with etcd's shape, for the tests and benchmarks that
//! read a file while it is written (the settling readers, the live view):
//! one write transaction per interval (etcd's `--backend-batch-interval`,
//! 100 ms by default), each appending keys at the right edge of a bucket
//! (etcd's `key` bucket takes revisions in ascending order), rewriting a
//! few random existing keys of it (so pages all over the tree are freed
//! and, a commit later, reused), and updating one key of a small `meta`
//! bucket (etcd's `consistent_index`). Used by the tests and by
//! `cargo xtask writer`.

use std::time::{Duration, Instant};

use mapwise_native::engine::bolt::{Db, Error};
/// The writer's random stream (keys to rewrite).
pub use mapwise_native::engine::rng::SplitMix64 as Rng;

/// What each commit of [`run`] does.
#[derive(Debug, Clone)]
pub struct Shape {
    /// The bucket written (created when missing).
    pub bucket: Vec<u8>,
    /// Keys appended after its last key per commit.
    pub appends: u32,
    /// Existing keys rewritten per commit (picked at random).
    pub rewrites: u32,
    /// Value bytes of each put.
    pub value_size: usize,
    /// Time between two commits.
    pub interval: Duration,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            bucket: b"key".to_vec(),
            appends: 2,
            rewrites: 1,
            value_size: 512,
            interval: Duration::from_millis(100),
        }
    }
}

/// The next key after `k` (big-endian increment; a longer key when `k` is
/// all 0xff).
fn next_key(k: &[u8]) -> Vec<u8> {
    let mut k = k.to_vec();
    for b in k.iter_mut().rev() {
        if *b == 0xff {
            *b = 0;
        } else {
            *b += 1;
            return k;
        }
    }
    k.insert(0, 1);
    k
}

/// One commit of `shape` on `db`, round `round`: returns the keys put.
///
/// # Errors
/// The engine's.
pub fn commit(db: &Db, shape: &Shape, rng: &mut Rng, round: u64) -> Result<u32, Error> {
    db.update(|tx| -> Result<u32, Error> {
        let mut last: Option<Vec<u8>> = None;
        let mut picks: Vec<Vec<u8>> = Vec::new();
        if let Some(b) = tx.bucket(&shape.bucket)? {
            let mut c = b.cursor();
            last = c.last()?.map(|i| i.key.to_vec());
            for _ in 0..shape.rewrites {
                let probe = rng.next_u64().to_be_bytes();
                if let Some(i) = c.seek(&probe)?
                    && i.flags == 0
                {
                    picks.push(i.key.to_vec());
                }
            }
        }
        let mut b = tx.create_bucket_if_not_exists(&shape.bucket)?;
        let value: Vec<u8> =
            round.to_le_bytes().iter().copied().cycle().take(shape.value_size).collect();
        let mut key = last.unwrap_or_else(|| vec![0u8; 17]);
        let mut n = 0;
        for _ in 0..shape.appends {
            key = next_key(&key);
            b.put(&key, &value)?;
            n += 1;
        }
        for k in &picks {
            b.put(k, &value)?;
            n += 1;
        }
        let mut meta = tx.create_bucket_if_not_exists(b"meta")?;
        meta.put(b"consistent_index", &round.to_be_bytes())?;
        Ok(n)
    })
}

/// Commit `shape` on `db` every `shape.interval` until `stop()` says so
/// or `limit` passes; returns the commits made.
///
/// # Errors
/// The engine's.
pub fn run(db: &Db, shape: &Shape, limit: Duration, stop: impl Fn() -> bool) -> Result<u64, Error> {
    let start = Instant::now();
    let mut rng = Rng::new(0x5eed);
    let mut round = 0u64;
    let mut next = start;
    while start.elapsed() < limit && !stop() {
        round += 1;
        commit(db, shape, &mut rng, round)?;
        next += shape.interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    Ok(round)
}
