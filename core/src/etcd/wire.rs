//! The protobuf wire format, as far as etcd's backend messages use it:
//! a walk over a message's fields that borrows `bytes` fields from the
//! input and names every fault (which field, which byte).
//!
//! The rules are proto3's, as etcd's gogoproto `Unmarshal` methods and
//! prost apply them: fields in any order, the last occurrence of a field
//! wins, unknown fields are skipped, a known field with the wrong wire
//! type is an error. Two rules are stricter than gogoproto's and the same
//! as prost's: a varint's 10th byte may only be 0 or 1 (gogoproto drops
//! the overflowing bits), and a group (wire types 3 and 4) is refused
//! rather than skipped (none of etcd's messages has one).

use crate::error::{EtcdFault, Message};

use super::len32;

/// A field's value as it is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (8 bytes) or 5 (4 bytes), little-endian.
    Fixed(u64),
    /// Wire type 2, borrowed from the input.
    Bytes(&'a [u8]),
}

/// Wire type numbers.
pub(crate) const VARINT: u8 = 0;
pub(crate) const FIXED64: u8 = 1;
pub(crate) const LEN: u8 = 2;
pub(crate) const FIXED32: u8 = 5;

/// The largest field number protobuf allows (2^29 - 1).
const MAX_FIELD: u64 = (1 << 29) - 1;

/// The fields of one message, in wire order.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    message: Message,
    /// Field number → (name, wire type) of the message's known fields.
    known: fn(u32) -> Option<(&'static str, u8)>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(
        buf: &'a [u8],
        message: Message,
        known: fn(u32) -> Option<(&'static str, u8)>,
    ) -> Fields<'a> {
        Fields { buf, pos: 0, message, known }
    }

    fn truncated(&self, field: &'static str, offset: usize, need: u64) -> EtcdFault {
        EtcdFault::Truncated {
            message: self.message,
            field,
            offset: len32(offset),
            need,
            have: len32(self.buf.len()),
        }
    }

    /// A varint at the current position (at most 10 bytes, the 10th
    /// holding bit 63 only).
    fn varint(&mut self, field: &'static str) -> Result<u64, EtcdFault> {
        let start = self.pos;
        let mut v = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(self.truncated(field, self.pos, 1));
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                return Err(EtcdFault::Varint {
                    message: self.message,
                    field,
                    offset: len32(start),
                });
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(EtcdFault::Varint { message: self.message, field, offset: len32(start) })
    }

    /// `n` bytes at the current position, borrowed.
    fn take(&mut self, field: &'static str, n: u64) -> Result<&'a [u8], EtcdFault> {
        let rest = self.buf.len() - self.pos;
        match usize::try_from(n) {
            Ok(n) if n <= rest => {
                let s = &self.buf[self.pos..self.pos + n];
                self.pos += n;
                Ok(s)
            }
            _ => Err(self.truncated(field, self.pos, n)),
        }
    }

    /// The next known field: its number and value; unknown fields are
    /// skipped. `None` at the end of the message.
    pub(crate) fn next_field(&mut self) -> Option<Result<(u32, Wire<'a>), EtcdFault>> {
        loop {
            if self.pos >= self.buf.len() {
                return None;
            }
            match self.one() {
                Ok(Some(f)) => return Some(Ok(f)),
                Ok(None) => {}
                Err(e) => {
                    // Stop for good: the rest cannot be framed.
                    self.pos = self.buf.len();
                    return Some(Err(e));
                }
            }
        }
    }

    /// One field: `Some` when known, `None` when skipped.
    fn one(&mut self) -> Result<Option<(u32, Wire<'a>)>, EtcdFault> {
        let start = self.pos;
        let tag = self.varint("tag")?;
        let bad = |why| EtcdFault::Tag { message: self.message, offset: len32(start), tag, why };
        let number = tag >> 3;
        let wire = u8::try_from(tag & 7).unwrap_or(7);
        if number == 0 {
            return Err(bad("field number 0"));
        }
        if number > MAX_FIELD {
            return Err(bad("field number above 2^29 - 1"));
        }
        let number = u32::try_from(number).unwrap_or(u32::MAX);
        let known = (self.known)(number);
        let name = known.map_or("unknown", |k| k.0);
        if let Some((field, expected)) = known
            && wire != expected
            && matches!(wire, VARINT | FIXED64 | LEN | FIXED32)
        {
            return Err(EtcdFault::WireType {
                message: self.message,
                field,
                found: wire,
                expected,
            });
        }
        let value = match wire {
            VARINT => Wire::Varint(self.varint(name)?),
            FIXED64 => {
                let b = self.take(name, 8)?;
                Wire::Fixed(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            }
            FIXED32 => {
                let b = self.take(name, 4)?;
                Wire::Fixed(u64::from(u32::from_le_bytes(b.try_into().unwrap_or([0; 4]))))
            }
            LEN => {
                let n = self.varint(name)?;
                Wire::Bytes(self.take(name, n)?)
            }
            3 | 4 => return Err(bad("a group (wire type 3 or 4): etcd's messages have none")),
            _ => return Err(bad("wire type 6 or 7 does not exist")),
        };
        Ok(known.map(|_| (number, value)))
    }
}
