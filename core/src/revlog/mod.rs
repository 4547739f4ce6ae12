//! Mercurial revlog indexes (`.i` files), read side.
//!
//! A revlog stores the history of one thing — the changelog, the manifest
//! or one tracked file — as an index of fixed-size entries (`.i`) and a
//! stream of data chunks, either interleaved with the entries ("inline")
//! or in a separate `.d` file. See `docs/format/revlog.md` for the format
//! in our words; facts come from Mercurial 6.3's source.
//!
//! Entry points: [`Index::open`] reads the header and finds the entries
//! (lazily for a non-inline index: the revision count comes from the file
//! size, and an entry is read only when asked for); [`layout`] labels
//! every byte for the page map; [`write_debugindex`] prints what
//! `hg debugindex` prints.
//!
//! Formats: v0 (76-byte entries) and v1 "RevlogNG" (64-byte entries,
//! inline and generaldelta flags). Revlog v2 and changelog v2 (docket
//! files) are recognised and refused with [`crate::Error::Unsupported`].

mod debug;
mod index;
mod layout;
pub mod obsstore;

pub use debug::{
    DebugRow, DebugStyle, PrintError, debug_row, write_debugindex, write_header, write_row,
};
pub use index::{
    CHANGELOGV2, COMP_MODE_INLINE, ChunkSpan, Entry, FLAG_GENERALDELTA, FLAG_INLINE_DATA,
    HEADER_SIZE, Header, Index, MAX_INLINE_DATA, MAX_REVS, NODE_LEN, NULL_NODE, NULL_REV, Node,
    RANK_UNKNOWN, REVIDX_ELLIPSIS, REVIDX_EXTSTORED, REVIDX_HASCOPIESINFO, REVIDX_ISCENSORED,
    REVIDX_KNOWN_FLAGS, REVLOGV0, REVLOGV1, REVLOGV2, Rev, StoredParents, V0_ENTRY_SIZE,
    V1_ENTRY_SIZE, V1Entry, Version, node_hash_input, sniff,
};
pub use layout::{LayoutOptions, RevlogLayout, layout};

#[cfg(test)]
mod damage {
    //! Damaged real indexes never make the parser panic: random byte flips
    //! and truncations of corpus files go through open, every entry, the
    //! `debugindex` printer, detection and the layout, which must still
    //! cover every byte.

    use alloc::string::String;
    use alloc::vec::Vec;

    use proptest::prelude::*;

    use super::*;

    static INLINE: &[u8] = include_bytes!("../../../testdata/revlog/00changelog.i");
    static SPLIT: &[u8] = include_bytes!("../../../testdata/revlog/synthetic-2000/00changelog.i");
    static GD_INLINE: &[u8] = include_bytes!("../../../testdata/revlog/00manifest.i");

    fn exercise(bytes: &[u8]) {
        let _ = sniff(bytes);
        if let Ok(index) = Index::open(bytes) {
            for rev in -1..=index.tip() {
                if let Ok(e) = index.entry(rev) {
                    let _ = index.checked_parents(&e);
                    let _ = index.chunk(rev);
                }
                let _ = debug_row(&index, rev);
            }
            let mut out = String::new();
            let _ = write_debugindex(&mut out, &index, DebugStyle::DEBUG);
            let _ = index.check_data_len(1000, 0..=index.tip());
        }
        let l = layout(bytes, LayoutOptions { data_len: Some(5000) });
        let mut at = 0;
        for r in &l.layout.regions {
            assert_eq!(r.offset, at, "contiguous");
            assert!(r.len > 0, "no empty region");
            at = r.end();
        }
        assert_eq!(at, bytes.len() as u64, "covers the file");
    }

    fn damaged(base: &[u8], flips: &[(usize, u8)], keep: usize) -> Vec<u8> {
        let mut b = base.to_vec();
        for &(pos, mask) in flips {
            let n = b.len();
            if let Some(x) = b.get_mut(pos % n) {
                *x ^= mask;
            }
        }
        b.truncate(keep % (base.len() + 1));
        b
    }

    proptest! {
        #[test]
        fn flips_and_cuts_never_panic(
            which in 0usize..3,
            flips in proptest::collection::vec((0usize..1 << 20, 1u8..=255), 0..8),
            keep in 0usize..1 << 20,
        ) {
            let base = [INLINE, SPLIT, GD_INLINE][which];
            exercise(&damaged(base, &flips, keep));
            exercise(&damaged(base, &flips, usize::MAX));
        }

        #[test]
        fn header_and_first_entry_flips(
            which in 0usize..3,
            flips in proptest::collection::vec((0usize..96, 1u8..=255), 1..4),
        ) {
            let base = [INLINE, SPLIT, GD_INLINE][which];
            exercise(&damaged(base, &flips, usize::MAX));
        }
    }
}
