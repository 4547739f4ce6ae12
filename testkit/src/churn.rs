//! A bbolt writer's churn for the tests that race readers against a
//! live writer (the inspector's and `mapwise bolt`'s).

/// Rewrite every key of bucket `w` with a value that depends on `round`
/// (sizes vary, so every leaf is rewritten: the commit frees the old
/// pages and, one commit later, reuses them).
pub fn rewrite(db: &mapwise_native::engine::bolt::Db, keys: u64, round: u64) {
    db.update(|tx| -> Result<(), mapwise_native::engine::bolt::Error> {
        let mut b = tx.create_bucket_if_not_exists(b"w")?;
        for k in 0..keys {
            let len = 100 + usize::try_from((k ^ round) % 97).unwrap();
            let v: Vec<u8> = round.to_le_bytes().iter().copied().cycle().take(len).collect();
            b.put(&k.to_be_bytes(), &v)?;
        }
        Ok(())
    })
    .expect("commit");
}

/// A bbolt file at `path` opened read-write without syncs (4 KiB pages),
/// its bucket `w` holding `keys` keys of [`rewrite`]'s round 0: the
/// writer the race tests commit through.
///
/// # Panics
/// When it cannot be created.
#[must_use]
pub fn writer_db(path: &std::path::Path, keys: u64) -> mapwise_native::engine::bolt::Db {
    let opts =
        mapwise_native::engine::bolt::Options { no_sync: true, ..crate::bolt_model::rw(4096) };
    let db = mapwise_native::engine::bolt::Db::open(path, &opts).expect("create");
    rewrite(&db, keys, 0);
    db
}
