//! Unit tests: etcd's own bytes (a real etcd 3.4.23 db,
//! `testdata/bolt/etcd-small.db`, and its Go bbolt dump), every fault,
//! and round trips and differential checks against prost.

use alloc::string::{String, ToString as _};
use alloc::vec::Vec;

use proptest::prelude::*;
use prost::Message as _;

use super::*;
use crate::bolt::BoltFile;
use crate::error::{At, Error};

static SMALL: &[u8] = include_bytes!("../../../testdata/bolt/etcd-small.db");
static SMALL_DUMP: &str = include_str!("../../../testdata/bolt/etcd-small.dump.txt");

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

/// The first revision of `etcd-small.db`, as etcd 3.4.23 wrote it.
fn first_value() -> Vec<u8> {
    let line = SMALL_DUMP.lines().find(|l| l.starts_with("kv 6b6579 ")).unwrap();
    unhex(line.split(' ').nth(3).unwrap())
}

#[test]
fn revision_keys_as_etcd_writes_them() {
    let k = unhex("00000000000003eb5f000000000000000074");
    let r = RevisionKey::parse(&k).unwrap();
    assert_eq!(r, RevisionKey { revision: Revision { main: 1003, sub: 0 }, tombstone: true });
    assert_eq!(&*r.to_bytes(), &k[..]);
    let k = unhex("00000000000000045f0000000000000002");
    let r = RevisionKey::parse(&k).unwrap();
    assert_eq!((r.revision.main, r.revision.sub, r.tombstone), (4, 2, false));
    assert_eq!(r.to_string(), "4_2");
    assert_eq!(&*r.to_bytes(), &k[..]);
}

#[test]
fn revision_key_faults() {
    assert_eq!(RevisionKey::parse(b"short"), Err(EtcdFault::KeyLength { len: 5 }));
    assert_eq!(RevisionKey::parse(&[0; 19]), Err(EtcdFault::KeyLength { len: 19 }));
    assert_eq!(RevisionKey::parse(&[0; 17]), Err(EtcdFault::Separator { found: 0 }));
    let mut k = unhex("00000000000003eb5f000000000000000074");
    k[17] = b'x';
    assert_eq!(RevisionKey::parse(&k), Err(EtcdFault::Mark { found: b'x' }));
    let e = EtcdFault::KeyLength { len: 5 }.at(At::Element { pgid: 7, index: 3 });
    let text = alloc::format!("{e}");
    assert!(text.starts_with("page 7 element 3: etcd: revision key is 5 bytes"), "{text}");
}

#[test]
fn key_value_from_etcd_3_4() {
    let v = first_value();
    let kv = KeyValueRef::decode(&v).unwrap();
    assert_eq!(kv.key, b"/oracle/key-000003");
    assert_eq!((kv.create_revision, kv.mod_revision, kv.version, kv.lease), (4, 4, 1, 0));
    assert_eq!(kv.value.len(), 102);
    // Borrowed from the input, not copied.
    assert!(v.as_ptr_range().contains(&kv.value.as_ptr()));
    // etcd's gogoproto bytes are exactly prost's.
    assert_eq!(kv.to_owned().encode_to_vec(), v);
    let key = RevisionKey { revision: Revision { main: 4, sub: 0 }, tombstone: false };
    assert_eq!(kv.check(&key), Ok(()));
    let later = RevisionKey { revision: Revision { main: 5, sub: 0 }, ..key };
    assert!(matches!(kv.check(&later), Err(EtcdFault::Mismatch { expected: 5, found: 4, .. })));
}

#[test]
fn key_value_faults() {
    let v = first_value();
    // Cut inside the key's bytes.
    assert_eq!(
        KeyValueRef::decode(&v[..10]),
        Err(EtcdFault::Truncated {
            message: Message::KeyValue,
            field: "key",
            offset: 2,
            need: 18,
            have: 10
        })
    );
    // Cut inside the value's length.
    let cut = v.len() - 103;
    assert!(matches!(
        KeyValueRef::decode(&v[..cut]),
        Err(EtcdFault::Truncated { field: "value", .. })
    ));
    // Eleven continuation bytes: a wild varint.
    let mut wild = alloc::vec![0x10];
    wild.extend([0xff; 11]);
    assert_eq!(
        KeyValueRef::decode(&wild),
        Err(EtcdFault::Varint { message: Message::KeyValue, field: "create_revision", offset: 1 })
    );
    // A 10th byte above 1 overflows 64 bits.
    let mut over = alloc::vec![0x18];
    over.extend([0xff; 9]);
    over.push(0x02);
    assert!(matches!(
        KeyValueRef::decode(&over),
        Err(EtcdFault::Varint { field: "mod_revision", .. })
    ));
    // key as a varint: wrong wire type.
    assert_eq!(
        KeyValueRef::decode(&[0x08, 0x01]),
        Err(EtcdFault::WireType {
            message: Message::KeyValue,
            field: "key",
            found: 0,
            expected: 2
        })
    );
    // Field number 0, a group, wire type 7.
    for (bytes, why) in [
        (&[0x00, 0x01][..], "field number 0"),
        (&[0x3b][..], "a group"),
        (&[0x0f][..], "wire type 6 or 7"),
    ] {
        match KeyValueRef::decode(bytes) {
            Err(EtcdFault::Tag { why: w, .. }) => assert!(w.starts_with(why), "{w}"),
            other => panic!("{bytes:?}: {other:?}"),
        }
    }
    // Text is not a KeyValue: "hello" is field 13 of wire type 0, then
    // a varint 'e' = 101, then 'l' = field 13 of wire type 4 (a group).
    assert!(KeyValueRef::decode(b"hello").is_err());
    // An empty value decodes (protobuf) but no revision holds it.
    let kv = KeyValueRef::decode(&[]).unwrap();
    let first = RevisionKey { revision: Revision { main: 1, sub: 0 }, tombstone: true };
    assert_eq!(kv.check(&first), Err(EtcdFault::EmptyKey));
    // Revision 0 and negative subs never exist.
    let named = KeyValueRef { key: b"/k", ..kv };
    assert!(matches!(
        named.check(&RevisionKey::default()),
        Err(EtcdFault::Mismatch { what: "revision main (at least 1)", found: 0, .. })
    ));
    let negative = RevisionKey { revision: Revision { main: 1, sub: -1 }, tombstone: true };
    assert!(matches!(named.check(&negative), Err(EtcdFault::Mismatch { found: -1, .. })));
    // Unknown fields are skipped, the last occurrence wins.
    let mut more = v.clone();
    more.extend([0x38, 0x05, 0x41, 1, 2, 3, 4, 5, 6, 7, 8, 0x20, 0x07]);
    let kv = KeyValueRef::decode(&more).unwrap();
    assert_eq!(kv.version, 7);
}

#[test]
fn leases_and_meta() {
    let l = Lease { id: 0x694d_7c2b_1a3f_0001, ttl: 60, remaining_ttl: 0 };
    let v = l.encode_to_vec();
    assert_eq!(Lease::decode_record(&l.id.to_be_bytes(), &v), Ok(l));
    assert!(matches!(
        Lease::decode_record(&1i64.to_be_bytes(), &v),
        Err(EtcdFault::Mismatch { expected: 1, .. })
    ));
    assert!(matches!(lease_id(&[1, 2, 3]), Err(EtcdFault::ValueLength { len: 3, .. })));
    assert!(matches!(
        Lease::decode_value(&[0x10, 0x80]),
        Err(EtcdFault::Truncated { message: Message::Lease, field: "TTL", .. })
    ));

    let index = 1006u64.to_be_bytes();
    let ci = MetaRecord::decode(CONSISTENT_INDEX, &index).unwrap();
    assert_eq!(ci, MetaRecord::ConsistentIndex(1006));
    let rev = unhex("00000000000003eb5f0000000000000000");
    assert_eq!(
        MetaRecord::decode(SCHEDULED_COMPACT_REV, &rev),
        Ok(MetaRecord::ScheduledCompactRev(Revision { main: 1003, sub: 0 }))
    );
    assert!(matches!(
        MetaRecord::decode(FINISHED_COMPACT_REV, &rev[..8]),
        Err(EtcdFault::ValueLength { len: 8, expected: 17, .. })
    ));
    assert!(matches!(
        MetaRecord::decode(TERM, &[1, 2]),
        Err(EtcdFault::ValueLength { what: "meta term", .. })
    ));
}

/// `etcd-small.db` (etcd 3.4.23) decodes completely, and every record
/// equals the one Go bbolt dumped.
#[test]
fn etcd_small_decodes_completely() {
    let file = BoltFile::open(SMALL).unwrap();
    let db = EtcdDb::open(&file).unwrap();
    assert!(db.missing().is_empty(), "{:?}", db.missing());
    assert_eq!(db.line().unwrap(), Line::V3_4);
    assert_eq!(db.cluster_version().unwrap().as_deref(), Some(&b"3.4.0"[..]));
    let meta = db.meta().unwrap();
    assert_eq!(meta.consistent_index, Some(0x3ee));
    assert_eq!(meta.scheduled_compact, Some(0x3eb));
    assert_eq!((meta.term, meta.finished_compact, meta.others), (None, None, 0));

    let dumped: Vec<(Vec<u8>, Vec<u8>)> = SMALL_DUMP
        .lines()
        .filter_map(|l| l.strip_prefix("kv 6b6579 "))
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (unhex(k), unhex(v))
        })
        .collect();
    let mut n = 0;
    let mut tombstones = 0;
    db.revisions(|r| -> Result<(), Error> {
        let r = r?;
        let (k, v) = &dumped[n];
        assert_eq!(&*r.key.to_bytes(), &k[..]);
        assert_eq!(r.kv.to_owned().encode_to_vec(), *v);
        assert!(matches!(r.at, At::Element { .. }));
        // Borrowed from the file's pages.
        assert!(r.kv.key.is_empty() || SMALL.as_ptr_range().contains(&r.kv.key.as_ptr()));
        tombstones += usize::from(r.key.tombstone);
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!((n, tombstones), (1000, 1));
    let mut leases = 0;
    db.leases(|l| -> Result<(), Error> {
        l?;
        leases += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(leases, 0);
}

#[test]
fn not_an_etcd_db() {
    let small = include_bytes!("../../../testdata/bolt/small.db");
    let file = BoltFile::open(&small[..]).unwrap();
    match EtcdDb::open(&file) {
        Err(Error::Etcd { at: At::Meta(_), fault: EtcdFault::MissingBucket { name: "key" } }) => {}
        other => panic!("{other:?}"),
    }
}

/// What prost says of `bytes` as a KeyValue against what we say: the same
/// acceptance (but for groups, which prost skips and we refuse) and the
/// same message.
fn same_as_prost_kv(bytes: &[u8]) {
    let ours = KeyValueRef::decode(bytes);
    let theirs = KeyValue::decode(bytes);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(&a.to_owned(), b),
        (Err(_), Err(_)) => {}
        (Err(EtcdFault::Tag { why, .. }), Ok(_)) if why.starts_with("a group") => {}
        _ => panic!("{bytes:02x?}: ours {ours:?}, prost {theirs:?}"),
    }
}

fn same_as_prost_lease(bytes: &[u8]) {
    let ours = Lease::decode_value(bytes);
    let theirs = Lease::decode(bytes);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        (Err(EtcdFault::Tag { why, .. }), Ok(_)) if why.starts_with("a group") => {}
        _ => panic!("{bytes:02x?}: ours {ours:?}, prost {theirs:?}"),
    }
}

fn any_kv() -> impl Strategy<Value = KeyValue> {
    (
        proptest::collection::vec(any::<u8>(), 0..40),
        any::<i64>(),
        any::<i64>(),
        any::<i64>(),
        proptest::collection::vec(any::<u8>(), 0..300),
        any::<i64>(),
    )
        .prop_map(|(key, create_revision, mod_revision, version, value, lease)| KeyValue {
            key,
            create_revision,
            mod_revision,
            version,
            value,
            lease,
        })
}

proptest! {
    #[test]
    fn revision_keys_round_trip(main in any::<i64>(), sub in any::<i64>(), tombstone in any::<bool>()) {
        let k = RevisionKey { revision: Revision { main, sub }, tombstone };
        let b = k.to_bytes();
        prop_assert_eq!(b.len(), if tombstone { 18 } else { 17 });
        prop_assert_eq!(RevisionKey::parse(&b), Ok(k));
    }

    #[test]
    fn key_values_round_trip(kv in any_kv()) {
        let bytes = kv.encode_to_vec();
        let got = KeyValueRef::decode(&bytes).unwrap();
        prop_assert_eq!(got.to_owned(), kv);
    }

    #[test]
    fn leases_round_trip(id in any::<i64>(), ttl in any::<i64>(), remaining_ttl in any::<i64>()) {
        let l = Lease { id, ttl, remaining_ttl };
        prop_assert_eq!(Lease::decode_record(&id.to_be_bytes(), &l.encode_to_vec()), Ok(l));
    }

    /// Damaged encodings (bytes flipped, cut, or appended) are read as
    /// prost reads them, or refused with a fault: never a panic.
    #[test]
    fn damaged_values_match_prost(
        kv in any_kv(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut in any::<usize>(),
        tail in proptest::collection::vec(any::<u8>(), 0..12),
    ) {
        let mut bytes = kv.encode_to_vec();
        for (at, x) in flips {
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] ^= x;
            }
        }
        bytes.truncate(cut % (bytes.len() + 1));
        bytes.extend(tail);
        same_as_prost_kv(&bytes);
        same_as_prost_lease(&bytes);
        let _ = RevisionKey::parse(&bytes);
        for key in [CONSISTENT_INDEX, TERM, SCHEDULED_COMPACT_REV, FINISHED_COMPACT_REV] {
            let _ = MetaRecord::decode(key, &bytes);
        }
    }

    #[test]
    fn random_bytes_match_prost(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        same_as_prost_kv(&bytes);
        same_as_prost_lease(&bytes);
    }
}

#[test]
fn fault_texts_name_the_field() {
    let cases: [(EtcdFault, &str); 4] = [
        (
            EtcdFault::Varint { message: Message::KeyValue, field: "lease", offset: 9 },
            "mvccpb.KeyValue field lease: the varint at byte 9",
        ),
        (
            EtcdFault::WireType { message: Message::Lease, field: "TTL", found: 2, expected: 0 },
            "leasepb.Lease field TTL: wire type 2, expected 0",
        ),
        (
            EtcdFault::ValueLength { what: "meta term", len: 2, expected: 8 },
            "meta term: 2 bytes, expected 8",
        ),
        (EtcdFault::MissingBucket { name: "key" }, "no bucket \"key\""),
    ];
    for (f, text) in cases {
        let s: String = alloc::format!("{f}");
        assert!(s.starts_with(text), "{s}");
    }
}

/// `Error` stays as small as it was before etcd's faults joined it:
/// native's error enums embed it, and clippy's `result_large_err` counts
/// their size.
#[test]
fn faults_keep_error_small() {
    assert!(core::mem::size_of::<EtcdFault>() <= 40);
    assert!(core::mem::size_of::<Error>() <= 72);
}
