//! A bbolt writer with etcd's shape, for the tests and benchmarks that
//! read a file while it is written (the settling readers, the live view):
//! one write transaction per interval (etcd's `--backend-batch-interval`,
//! 100 ms by default), each appending keys at the right edge of a bucket
//! (etcd's `key` bucket takes revisions in ascending order), rewriting a
//! few random existing keys of it (so pages all over the tree are freed
//! and, a commit later, reused), and updating one key of a small `meta`
//! bucket (etcd's `consistent_index`). Included with `#[path]`; not part
//! of any library.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use mapwise_native::bolt::{Db, Error};

/// What each commit of [`Writer`] does.
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

/// A splitmix64 stream (deterministic per seed).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A stream seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
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
                let probe = rng.next().to_be_bytes();
                if let Some(i) = c.seek(&probe)?
                    && i.flags == 0
                {
                    picks.push(i.key.to_vec());
                }
            }
        }
        let mut b = tx.create_bucket_if_not_exists(&shape.bucket)?;
        let value: Vec<u8> = round
            .to_le_bytes()
            .iter()
            .copied()
            .cycle()
            .take(shape.value_size)
            .collect();
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
