//! etcd's data model as `mapwise-core` decodes it (`core/src/etcd/`),
//! judged by a real etcd (Debian's etcd 3.4, started through
//! `mapwise_testkit::etcd`): a small Kubernetes-like workload (creates,
//! overwrites, deletes, a two-put transaction, a lease with keys attached,
//! one `etcdctl compaction`), then what etcdctl says (`get --prefix ""
//! -w json --rev R` at every revision still readable, `lease list`,
//! `lease timetolive --keys`, `endpoint status`), then etcd stopped and
//! its `member/snap/db` read with core's bbolt reader: every revision,
//! `KeyValue`, lease and `meta` value must equal etcd's own answer.
//! The shapes 3.5 and 3.6 leave in `meta`, and a damaged record named by
//! its page and element, are checked on dbs mapwise's bbolt engine writes
//! (Debian has no etcd of those lines). Its own test binary, so running it
//! builds nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mapwise_core::bolt::BoltFile;
use mapwise_core::etcd::prost::Message as _;
use mapwise_core::etcd::{
    BUCKETS, EtcdDb, EtcdFault, KeyValue, Lease, Line, Message, Revision, RevisionKey,
};
use mapwise_core::{At, Error};
use mapwise_native::engine::bolt::{Db, Options};
use mapwise_testkit::etcd::{Config, Etcd};
use mapwise_testkit::install::{Need, ensure};
use serde_json::{Value, json};

/// A bound on the whole test (it takes a few seconds).
const T: Duration = Duration::from_secs(180);

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding, as etcd's JSON carries bytes.
fn b64(bytes: &[u8]) -> String {
    let mut s = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(char::from(B64[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn unb64(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = B64.iter().position(|&x| x == c).unwrap_or_else(|| panic!("base64 {s:?}"));
        acc = acc << 6 | u32::try_from(v).unwrap();
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from(acc >> bits & 0xff).unwrap());
        }
    }
    out
}

/// A JSON integer field of etcdctl's output; 0 when left out (zero).
fn int(v: &Value, field: &str) -> i64 {
    v[field].as_i64().unwrap_or_else(|| {
        assert!(v[field].is_null(), "{field}: {}", v[field]);
        0
    })
}

/// `etcdctl ARGS -w json`, which must succeed; its JSON.
fn etcdctl_json(etcd: &Etcd, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-w", "json"]);
    let out = etcd.etcdctl(&all);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "etcdctl {args:?}: {:?}\n{text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("etcdctl {args:?}: {e}: {text}"))
}

/// The key-values of a `get -w json` answer, as etcd's `KeyValue`s.
fn kvs(answer: &Value) -> Vec<KeyValue> {
    let Some(kvs) = answer["kvs"].as_array() else { return Vec::new() };
    kvs.iter()
        .map(|kv| KeyValue {
            key: unb64(kv["key"].as_str().expect("key")),
            create_revision: int(kv, "create_revision"),
            mod_revision: int(kv, "mod_revision"),
            version: int(kv, "version"),
            value: kv["value"].as_str().map(unb64).unwrap_or_default(),
            lease: int(kv, "lease"),
        })
        .collect()
}

/// Stop etcd as an operator does (SIGTERM: it commits its batch and
/// closes the db), and wait until it has exited (a zombie, reaped when
/// the `Etcd` drops).
fn stop(etcd: &Etcd) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(etcd.pid()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM etcd");
    let stat = format!("/proc/{}/stat", etcd.pid());
    let start = Instant::now();
    loop {
        let s = std::fs::read_to_string(&stat).unwrap_or_default();
        // The state follows the parenthesised command name.
        let state = s.rsplit(')').next().and_then(|r| r.split_whitespace().next());
        if s.is_empty() || state == Some("Z") {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "etcd did not stop\n{}",
            etcd.log_tail()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The key space at revision `rev` from the db's records, as etcd's
/// MVCC sees it: per key, the latest record at or below `rev`, absent
/// when that record is a tombstone.
fn state_at(records: &[(RevisionKey, KeyValue)], rev: i64) -> Vec<KeyValue> {
    let mut keys: BTreeMap<Vec<u8>, KeyValue> = BTreeMap::new();
    for (k, kv) in records.iter().filter(|(k, _)| k.revision.main <= rev) {
        if k.tombstone {
            keys.remove(&kv.key);
        } else {
            keys.insert(kv.key.clone(), kv.clone());
        }
    }
    keys.into_values().collect()
}

#[test]
fn decoded_db_equals_what_etcd_says() {
    let started = Instant::now();
    ensure(&[Need::Etcd]);
    let etcd = Etcd::start_with(&Config {
        batch_interval: Duration::from_millis(100),
        parent: Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
    });
    let pod = |n: u32| format!("/registry/pods/default/web-{n}");
    let cm = "/registry/configmaps/kube-system/kube-root-ca.crt";
    let svc = "/registry/services/specs/default/kubernetes";
    let node = "/registry/leases/kube-node-lease/node-1";
    let event = "/registry/events/default/web-0.17f3a";

    for n in 0..3 {
        etcd.put(&pod(n), format!("pod web-{n} v1").as_bytes(), 0);
    }
    etcd.put(cm, b"-----BEGIN CERTIFICATE-----\n", 0);
    etcd.put(svc, b"\x6b\x38\x73\x00 service", 0);
    etcd.put(&pod(0), b"pod web-0 v2", 0);
    etcd.put(&pod(0), b"pod web-0 v3", 0);
    etcd.put(cm, b"-----BEGIN CERTIFICATE-----\nrotated\n", 0);
    let deleted = etcd.delete(&pod(2));
    let lease = etcd.grant(600);
    etcd.put(node, b"renewTime 1", lease);
    etcd.put(event, b"Scheduled", lease);
    // Two changes in one transaction: one main revision, subs 0 and 1.
    let put = |k: String, v: &str| json!({ "request_put": { "key": b64(k.as_bytes()), "value": b64(v.as_bytes()) } });
    let txn = etcd.call(
        "/v3/kv/txn",
        &json!({ "success": [put(pod(3), "pod web-3 v1"), put(pod(4), "pod web-4 v1")] }),
    );
    let txn_rev: i64 = txn["header"]["revision"].as_str().expect("revision").parse().unwrap();
    let compact = txn_rev;
    let out = etcd.etcdctl(&["compaction", "--physical", &compact.to_string()]);
    assert!(out.status.success(), "etcdctl compaction: {}", String::from_utf8_lossy(&out.stderr));
    etcd.put(&pod(1), b"pod web-1 v2", 0);
    let tombstone = etcd.delete(svc);
    let recreated = etcd.put(&pod(2), b"pod web-2 again", 0);
    etcd.put(node, b"renewTime 2", lease);
    let last = etcd.put("/registry/configmaps/default/last", b"last", 0);

    // What etcd says.
    let status = etcdctl_json(&etcd, &["endpoint", "status"]);
    let status = &status[0]["Status"];
    assert_eq!(int(&status["header"], "revision"), last);
    let applied = status["raftAppliedIndex"].as_u64().expect("raftAppliedIndex");
    let answers: BTreeMap<i64, Vec<KeyValue>> = (compact..=last)
        .map(|r| (r, kvs(&etcdctl_json(&etcd, &["get", "", "--prefix", "--rev", &r.to_string()]))))
        .collect();
    let gone = etcd.etcdctl(&["get", "", "--prefix", "--rev", &(compact - 1).to_string()]);
    assert!(String::from_utf8_lossy(&gone.stderr).contains("compacted"), "{gone:?}");
    let listed = etcdctl_json(&etcd, &["lease", "list"]);
    let ids: BTreeSet<i64> =
        listed["leases"].as_array().expect("leases").iter().map(|l| int(l, "id")).collect();
    assert_eq!(ids, BTreeSet::from([lease]));
    let ttl = etcdctl_json(&etcd, &["lease", "timetolive", &format!("{lease:x}"), "--keys"]);
    let lease_keys: BTreeSet<Vec<u8>> =
        ttl["keys"].as_array().expect("keys").iter().map(|k| unb64(k.as_str().unwrap())).collect();

    stop(&etcd);
    let bytes = std::fs::read(etcd.db()).expect("read member/snap/db");
    drop(etcd);

    // What the db says, through core.
    let file = BoltFile::open(&bytes[..]).expect("bbolt");
    let db = EtcdDb::open(&file).expect("an etcd db");
    assert!(db.missing().is_empty(), "missing buckets {:?}", db.missing());
    assert_eq!(db.line().unwrap(), Line::V3_4);
    assert_eq!(db.cluster_version().unwrap().as_deref(), Some(&b"3.4.0"[..]));
    let mut records: Vec<(RevisionKey, KeyValue)> = Vec::new();
    db.revisions(|r| -> Result<(), Error> {
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        records.push((r.key, r.kv.to_owned()));
        Ok(())
    })
    .unwrap();
    eprintln!("{} records, revisions {compact}..={last} compared", records.len());
    for (k, kv) in &records {
        eprintln!(
            "  {k}: {:?} v{} lease {:x}",
            String::from_utf8_lossy(&kv.key),
            kv.version,
            kv.lease
        );
    }

    // Every revision still readable: the key space rebuilt from the db's
    // records is etcd's answer, field for field.
    for (rev, want) in &answers {
        assert_eq!(&state_at(&records, *rev), want, "revision {rev}");
    }
    // Compaction left, at or below its revision, only what that
    // revision shows.
    let at_compact = state_at(&records, compact);
    for (k, kv) in records.iter().filter(|(k, _)| k.revision.main <= compact) {
        assert!(!k.tombstone && at_compact.contains(kv), "{k} survived the compaction");
    }
    assert!(records.iter().all(|(k, _)| k.revision.main != deleted), "tombstone {deleted} kept");
    let subs: Vec<i64> = records
        .iter()
        .filter(|(k, _)| k.revision.main == txn_rev)
        .map(|(k, _)| k.revision.sub)
        .collect();
    assert_eq!(subs, [0, 1]);
    let tomb = records.iter().find(|(k, _)| k.revision.main == tombstone).expect("tombstone");
    assert!(tomb.0.tombstone && tomb.1 == KeyValue { key: svc.into(), ..KeyValue::default() });
    let again = records.iter().find(|(k, _)| k.revision.main == recreated).expect("recreated");
    assert_eq!((again.1.create_revision, again.1.version), (recreated, 1));
    assert_eq!(records.last().unwrap().0.revision.main, last);

    // The lease: its id and TTL, and the keys attached to it.
    let mut leases: Vec<Lease> = Vec::new();
    db.leases(|l| -> Result<(), Error> {
        leases.push(l.unwrap_or_else(|e| panic!("{e}")));
        Ok(())
    })
    .unwrap();
    // No checkpoint was stored (3.4 stores one only with
    // --experimental-enable-lease-checkpoint and its -persist twin), so
    // RemainingTTL is 0.
    assert_eq!(leases, [Lease { id: lease, ttl: int(&ttl, "granted-ttl"), remaining_ttl: 0 }]);
    let attached: BTreeSet<Vec<u8>> = state_at(&records, last)
        .into_iter()
        .filter(|kv| kv.lease == lease)
        .map(|kv| kv.key)
        .collect();
    assert_eq!(attached, lease_keys);

    // meta: the compaction ran, and the raft index etcd applied last.
    let meta = db.meta().unwrap();
    assert_eq!(meta.scheduled_compact, Some(compact));
    assert_eq!(meta.finished_compact, Some(compact));
    assert_eq!(meta.consistent_index, Some(applied), "raftAppliedIndex {applied}");
    assert_eq!(meta.term, None, "etcd 3.4 does not store the term");
    assert!(started.elapsed() < T, "took {:?}", started.elapsed());
}

/// A db shaped like etcd's, written by mapwise's bbolt engine: the ten
/// buckets, `meta` as `line` leaves it, 200 puts in `key` (enough for a
/// page of their own) with one damaged value among them, and a lease.
fn shaped_db(path: &std::path::Path, line: Line, damaged: i64) {
    let db = Db::open(path, &Options { no_freelist_sync: true, ..Options::read_write() })
        .expect("create");
    db.update(|tx| -> Result<(), mapwise_native::engine::bolt::Error> {
        for b in BUCKETS {
            tx.create_bucket(b.as_bytes())?;
        }
        let mut meta = tx.bucket(b"meta")?.expect("meta");
        meta.put(b"consistent_index", &412u64.to_be_bytes())?;
        if line >= Line::V3_5 {
            meta.put(b"term", &7u64.to_be_bytes())?;
            meta.put(b"confState", br#"{"voters":[1]}"#)?;
        }
        if line >= Line::V3_6 {
            meta.put(b"storageVersion", b"3.6.0")?;
        }
        let rev = RevisionKey { revision: Revision { main: 150, sub: 0 }, tombstone: false };
        meta.put(b"finishedCompactRev", &rev.to_bytes())?;
        let mut key = tx.bucket(b"key")?.expect("key");
        for main in 2..202 {
            let rev = RevisionKey { revision: Revision { main, sub: 0 }, tombstone: false };
            let mut value = KeyValue {
                key: format!("/registry/pods/default/p-{main}").into_bytes(),
                create_revision: main,
                mod_revision: main,
                version: 1,
                value: vec![b'v'; 64],
                lease: 0,
            }
            .encode_to_vec();
            if main == damaged {
                // Cut inside the value field.
                value.truncate(value.len() - 10);
            }
            key.put(&rev.to_bytes(), &value)?;
        }
        let mut lease = tx.bucket(b"lease")?.expect("lease");
        let l = Lease { id: 0x1234, ttl: 30, remaining_ttl: 12 };
        lease.put(&l.id.to_be_bytes(), &l.encode_to_vec())?;
        Ok(())
    })
    .expect("write");
    db.close().expect("close");
}

#[test]
fn release_lines_and_damaged_records() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    for line in [Line::V3_4, Line::V3_5, Line::V3_6] {
        let path = dir.path().join(format!("{line:?}.db"));
        shaped_db(&path, line, 120);
        let bytes = std::fs::read(&path).expect("read");
        let file = BoltFile::open(&bytes[..]).expect("bbolt");
        let db = EtcdDb::open(&file).expect("an etcd db");
        assert_eq!(db.line().unwrap(), line);
        let meta = db.meta().unwrap();
        assert_eq!(meta.consistent_index, Some(412));
        assert_eq!(meta.term, (line >= Line::V3_5).then_some(7));
        assert_eq!(meta.storage_version.as_deref(), (line >= Line::V3_6).then_some(&b"3.6.0"[..]));
        assert_eq!(meta.finished_compact, Some(150));

        // The damaged record is reported with its page and element (the
        // element holds its key), and the walk goes on past it.
        let (mut good, mut bad) = (0, Vec::new());
        db.revisions(|r| -> Result<(), Error> {
            match r {
                Ok(_) => good += 1,
                Err(e) => bad.push(e),
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(good, 199);
        let [Error::Etcd { at: At::Element { pgid, index }, fault }] = bad[..] else {
            panic!("{bad:?}");
        };
        assert!(matches!(
            fault,
            EtcdFault::Truncated { message: Message::KeyValue, field: "value", .. }
        ));
        let page = file.read_page(pgid).unwrap();
        let elem = page.leaf(index as usize).unwrap();
        let key = RevisionKey::parse(&page.bytes()[elem.key]).unwrap();
        assert_eq!(key.revision.main, 120, "{}", bad[0]);
        eprintln!("{line:?}: {}", bad[0]);

        let mut leases = Vec::new();
        db.leases(|l| -> Result<(), Error> {
            leases.push(l?);
            Ok(())
        })
        .unwrap();
        assert_eq!(leases, [Lease { id: 0x1234, ttl: 30, remaining_ttl: 12 }]);
    }
}
