//! `leasepb.Lease`: the values of etcd's `lease` bucket.
//!
//! The lessor (`server/lease/lessor.go`, `Lease.persistTo`; `lease/lessor.go`
//! in 3.4) stores each lease under its id as 8 bytes big-endian
//! (`int64ToBytes`), with the value a `leasepb.Lease`
//! (`server/lease/leasepb/lease.proto`): `ID` (1, int64), `TTL` (2,
//! int64, seconds) and `RemainingTTL` (3, int64, seconds; 0 unless a
//! checkpoint stored what was left).

use crate::error::{EtcdFault, Message};

use super::wire::{Fields, VARINT, Wire};

/// Field number → (name, wire type) of `leasepb.Lease`.
fn known(field: u32) -> Option<(&'static str, u8)> {
    Some(match field {
        1 => ("ID", VARINT),
        2 => ("TTL", VARINT),
        3 => ("RemainingTTL", VARINT),
        _ => return None,
    })
}

/// A lease as etcd stores it (`leasepb.Lease`), owned (three integers);
/// the prost message, so it also encodes as etcd's gogoproto does.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Lease {
    /// The lease id (field 1, `ID`), the one `etcdctl lease list` prints
    /// in hex.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// The TTL granted, in seconds (field 2, `TTL`).
    #[prost(int64, tag = "2")]
    pub ttl: i64,
    /// The TTL left at the last checkpoint, in seconds (field 3,
    /// `RemainingTTL`); 0 when none was taken.
    #[prost(int64, tag = "3")]
    pub remaining_ttl: i64,
}

impl Lease {
    /// Decode a `leasepb.Lease` value (the wire rules of
    /// [`KeyValueRef::decode`](super::KeyValueRef::decode)).
    ///
    /// # Errors
    /// [`EtcdFault::Varint`], [`EtcdFault::Truncated`],
    /// [`EtcdFault::WireType`] or [`EtcdFault::Tag`].
    pub fn decode_value(bytes: &[u8]) -> Result<Lease, EtcdFault> {
        let mut l = Lease::default();
        let mut fields = Fields::new(bytes, Message::Lease, known);
        while let Some(f) = fields.next_field() {
            match f? {
                (1, Wire::Varint(v)) => l.id = v as i64,
                (2, Wire::Varint(v)) => l.ttl = v as i64,
                (3, Wire::Varint(v)) => l.remaining_ttl = v as i64,
                _ => {}
            }
        }
        Ok(l)
    }

    /// Decode a `lease` bucket record: the key (the id, 8 bytes
    /// big-endian) and the value, which must name the same id.
    ///
    /// # Errors
    /// [`EtcdFault::ValueLength`] for a key that is not 8 bytes,
    /// [`EtcdFault::Mismatch`] when the value's `ID` differs from the
    /// key's, or a fault of [`Lease::decode_value`].
    pub fn decode_record(key: &[u8], value: &[u8]) -> Result<Lease, EtcdFault> {
        let id = lease_id(key)?;
        let l = Lease::decode_value(value)?;
        if l.id != id {
            return Err(EtcdFault::Mismatch {
                what: "leasepb.Lease.ID (the key's id)",
                expected: id,
                found: l.id,
            });
        }
        Ok(l)
    }
}

/// A `lease` bucket key: the lease id, 8 bytes big-endian
/// (`int64ToBytes`, read back by `bytesToLeaseID`).
///
/// # Errors
/// [`EtcdFault::ValueLength`] when the key is not 8 bytes.
pub fn lease_id(key: &[u8]) -> Result<i64, EtcdFault> {
    let b: [u8; 8] = key.try_into().map_err(|_| EtcdFault::ValueLength {
        what: "lease bucket key (the lease id)",
        len: super::len32(key.len()),
        expected: 8,
    })?;
    Ok(i64::from_be_bytes(b))
}
