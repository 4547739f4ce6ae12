//! Which machine wrote an RRD file.
//!
//! rrdtool writes its structs in native layout and checks only
//! `stat_head.float_cookie` (`FLOAT_COOKIE`, 8.642135E130) on open, so a
//! file from another architecture fails with "This RRD was created on
//! another architecture" (`rrd_open.c`) and nothing more. The cookie and
//! the field sizes around it tell which layout it is: the double sits at
//! byte 16 when doubles are 8-byte aligned (x86_64, aarch64, 32-bit ARM
//! EABI, PowerPC, s390x) and at byte 12 on i386 (4-byte alignment); its
//! bytes are reversed on big-endian machines; `ds_cnt` after it is 8 bytes
//! on LP64 and 4 bytes on ILP32 machines.

use super::format::{COOKIE, FLOAT_COOKIE, le};

/// The layout of an RRD file, as far as its first bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// LP64 little-endian with 8-byte doubles aligned to 8: x86_64,
    /// aarch64, ppc64le, riscv64. The layout mapwise reads.
    Native,
    /// LP64 big-endian: s390x, ppc64, sparc64.
    BigEndian64,
    /// ILP32 little-endian with 4-byte double alignment: i386.
    I386,
    /// ILP32 little-endian with 8-byte double alignment: 32-bit ARM (EABI),
    /// mipsel.
    LittleEndian32,
    /// ILP32 big-endian: ppc32, mips, sparc32, m68k.
    BigEndian32,
}

impl Arch {
    /// The layout in words, with the machines that write it.
    #[must_use]
    pub fn description(self) -> &'static str {
        match self {
            Arch::Native => "64-bit little-endian (x86_64, aarch64, ppc64le, riscv64)",
            Arch::BigEndian64 => "64-bit big-endian (s390x, ppc64, sparc64)",
            Arch::I386 => "32-bit little-endian with 4-byte double alignment (i386)",
            Arch::LittleEndian32 => {
                "32-bit little-endian with 8-byte double alignment (32-bit ARM, mipsel)"
            }
            Arch::BigEndian32 => "32-bit big-endian (ppc32, mips, sparc32)",
        }
    }

    /// Why a file of this layout is refused, and what to do about it.
    #[must_use]
    pub fn refusal(self) -> &'static str {
        match self {
            Arch::Native => "an RRD of the native layout",
            Arch::BigEndian64 => {
                "RRD written on another architecture: 64-bit big-endian (s390x, ppc64, sparc64); run `rrdtool dump` there and `rrdtool restore` here"
            }
            Arch::I386 => {
                "RRD written on another architecture: 32-bit little-endian with 4-byte double alignment (i386); run `rrdtool dump` there and `rrdtool restore` here"
            }
            Arch::LittleEndian32 => {
                "RRD written on another architecture: 32-bit little-endian with 8-byte double alignment (32-bit ARM, mipsel); run `rrdtool dump` there and `rrdtool restore` here"
            }
            Arch::BigEndian32 => {
                "RRD written on another architecture: 32-bit big-endian (ppc32, mips, sparc32); run `rrdtool dump` there and `rrdtool restore` here"
            }
        }
    }

    /// Short name for reports (`native`, `be64`, `i386`, `le32`, `be32`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Arch::Native => "native",
            Arch::BigEndian64 => "be64",
            Arch::I386 => "i386",
            Arch::LittleEndian32 => "le32",
            Arch::BigEndian32 => "be32",
        }
    }
}

/// The layout of the RRD whose first bytes are `head` (at least 48 bytes
/// needed), or `None` when `head` does not start with the `RRD\0` cookie or
/// carries no float cookie where any known layout puts it.
#[must_use]
pub fn detect(head: &[u8]) -> Option<Arch> {
    if head.get(..4) != Some(&COOKIE[..]) {
        return None;
    }
    let le_bits = FLOAT_COOKIE.to_bits();
    let be_bits = le_bits.swap_bytes();
    let at16 = le::u64_at(head, 16);
    let at12 = le::u64_at(head, 12);
    if head.len() < 24 {
        return None;
    }
    if at16 == le_bits {
        // LP64 keeps ds_cnt in 8 bytes; on ILP32 the 4 bytes after ds_cnt
        // hold rra_cnt, which is never 0 in a real file.
        let ds = le::u64_at(head, 24);
        return Some(if ds >> 32 != 0 { Arch::LittleEndian32 } else { Arch::Native });
    }
    if at16 == be_bits {
        let ds = le::u64_at(head, 24).swap_bytes();
        return Some(if ds >> 32 != 0 { Arch::BigEndian32 } else { Arch::BigEndian64 });
    }
    if at12 == le_bits {
        return Some(Arch::I386);
    }
    if at12 == be_bits {
        return Some(Arch::BigEndian32);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(cookie_at: usize, be: bool, ds_cnt: &[u8]) -> [u8; 128] {
        let mut h = [0u8; 128];
        h[..4].copy_from_slice(b"RRD\0");
        h[4..9].copy_from_slice(b"0003\0");
        let c = if be { FLOAT_COOKIE.to_be_bytes() } else { FLOAT_COOKIE.to_le_bytes() };
        h[cookie_at..cookie_at + 8].copy_from_slice(&c);
        h[cookie_at + 8..cookie_at + 8 + ds_cnt.len()].copy_from_slice(ds_cnt);
        h
    }

    #[test]
    fn the_float_cookie_has_rrdtools_bytes() {
        assert_eq!(FLOAT_COOKIE.to_le_bytes(), [0x2f, 0x25, 0xc0, 0xc7, 0x43, 0x2b, 0x1f, 0x5b]);
    }

    #[test]
    fn layouts_are_told_apart() {
        assert_eq!(detect(&head(16, false, &[2, 0, 0, 0, 0, 0, 0, 0])), Some(Arch::Native));
        assert_eq!(detect(&head(16, false, &[2, 0, 0, 0, 5, 0, 0, 0])), Some(Arch::LittleEndian32));
        assert_eq!(detect(&head(16, true, &[0, 0, 0, 0, 0, 0, 0, 2])), Some(Arch::BigEndian64));
        assert_eq!(detect(&head(16, true, &[0, 0, 0, 2, 0, 0, 0, 5])), Some(Arch::BigEndian32));
        assert_eq!(detect(&head(12, false, &[2, 0, 0, 0])), Some(Arch::I386));
        assert_eq!(detect(&head(12, true, &[0, 0, 0, 2])), Some(Arch::BigEndian32));
        let mut junk = head(16, false, &[]);
        junk[16] ^= 1;
        assert_eq!(detect(&junk), None);
        assert_eq!(detect(b"RRX\0"), None);
    }
}
