//! Store file names: how hg turns a tracked path into the path of its
//! filelog under `.hg/store` (Mercurial 6.3, `mercurial/store.py`).
//!
//! Four schemes, chosen by the repository's requirements:
//!
//! * no `store`: files live under `.hg/` with directory encoding only
//!   (`encodedir`: a directory named `x.i`, `x.d` or `x.hg` gets `.hg`
//!   appended, so it cannot clash with a revlog file);
//! * `store`: `encodefilename` — `encodedir`, then upper-case `X` → `_x`,
//!   `_` → `__`, and bytes 0–31, 126–255 and `\:*?"<>|` → `~xx`;
//! * `store` + `fncache`: `_hybridencode` — `encodefilename`, then
//!   Windows-reserved names (`aux`, `con`, `prn`, `nul`, `com1`–`com9`,
//!   `lpt1`–`lpt9`, alone or before a dot) get their third byte `~xx`
//!   encoded and a trailing `.` or space is encoded; a result longer
//!   than 120 bytes is replaced by the lossy "hashed" form `dh/…` (up
//!   to 8 bytes of each directory, at most 68 of them in all, as much
//!   of the basename as fits, the SHA-1 hex of the path, the extension);
//! * `store` + `fncache` + `dotencode`: `_pathencode` — as above, and a
//!   leading `.` or space of every component is encoded too.
//!
//! Examples from the corpus: `data/docs/README.i` →
//! `data/docs/_r_e_a_d_m_e.i`, `data/src/Main.rs.i` → `data/src/_main.rs.i`.

use std::collections::BTreeSet;

/// hg's store name scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreEncoding {
    /// No `store` requirement: `encodedir` only, files under `.hg/`.
    Plain,
    /// `store`: `encodefilename`.
    Encoded,
    /// `store` + `fncache`: `_hybridencode` without dot encoding.
    Fncache,
    /// `store` + `fncache` + `dotencode`: `_pathencode` (hg's default).
    Dotencode,
}

/// Longest encoded store path before hashing (`_maxstorepathlen`).
const MAX_STORE_PATH: usize = 120;
/// Bytes kept of each directory in a hashed name (`_dirprefixlen`).
const DIR_PREFIX: usize = 8;
/// Most bytes of directories in a hashed name (`_maxshortdirslen`).
const MAX_SHORT_DIRS: usize = 8 * (DIR_PREFIX + 1) - 4;

impl StoreEncoding {
    /// The scheme hg picks for these requirements (`store.store()`).
    #[must_use]
    pub fn from_requirements(reqs: &BTreeSet<String>) -> StoreEncoding {
        let has = |r: &str| reqs.contains(r);
        match (has("store"), has("fncache"), has("dotencode")) {
            (false, _, _) => StoreEncoding::Plain,
            (true, false, _) => StoreEncoding::Encoded,
            (true, true, false) => StoreEncoding::Fncache,
            (true, true, true) => StoreEncoding::Dotencode,
        }
    }

    /// The store-relative path of `path` (e.g. `data/Foo.txt.i` →
    /// `data/_foo.txt.i`).
    #[must_use]
    pub fn encode(self, path: &[u8]) -> Vec<u8> {
        match self {
            StoreEncoding::Plain => encode_dir(path),
            StoreEncoding::Encoded => encode_filename(&encode_dir(path)),
            StoreEncoding::Fncache => hybrid_encode(path, false),
            StoreEncoding::Dotencode => path_encode(path),
        }
    }

    /// `true` when `encode` may produce a lossy hashed (`dh/`) name.
    #[must_use]
    pub fn may_hash(self) -> bool {
        matches!(self, StoreEncoding::Fncache | StoreEncoding::Dotencode)
    }
}

/// The store path of the filelog index of tracked file `tracked`
/// (`data/<tracked>.i`, encoded).
#[must_use]
pub fn filelog_index(encoding: StoreEncoding, tracked: &[u8]) -> Vec<u8> {
    let mut p = b"data/".to_vec();
    p.extend_from_slice(tracked);
    p.extend_from_slice(b".i");
    encoding.encode(&p)
}

fn replace(s: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s.get(i..).is_some_and(|t| t.starts_with(from)) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.extend_from_slice(s.get(i..=i).unwrap_or_default());
            i += 1;
        }
    }
    out
}

/// `encodedir`: `.hg/` → `.hg.hg/`, then `.i/` → `.i.hg/`, then `.d/` →
/// `.d.hg/` (three passes, in that order).
#[must_use]
pub fn encode_dir(path: &[u8]) -> Vec<u8> {
    let p = replace(path, b".hg/", b".hg.hg/");
    let p = replace(&p, b".i/", b".i.hg/");
    replace(&p, b".d/", b".d.hg/")
}

fn reserved(b: u8) -> bool {
    !(32..126).contains(&b) || b"\\:*?\"<>|".contains(&b)
}

fn push_hex(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'~');
    out.push(HEX[usize::from(b >> 4)]);
    out.push(HEX[usize::from(b & 15)]);
}

/// `_encodefname`: `X` → `_x`, `_` → `__`, reserved bytes → `~xx`.
fn encode_filename(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for &b in path {
        if b.is_ascii_uppercase() || b == b'_' {
            out.push(b'_');
            out.push(b.to_ascii_lowercase());
        } else if reserved(b) {
            push_hex(&mut out, b);
        } else {
            out.push(b);
        }
    }
    out
}

/// `lowerencode`: `X` → `x`, reserved bytes → `~xx`.
fn lower_encode(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for &b in path {
        if b.is_ascii_uppercase() {
            out.push(b.to_ascii_lowercase());
        } else if reserved(b) {
            push_hex(&mut out, b);
        } else {
            out.push(b);
        }
    }
    out
}

/// `_auxencode` on the `/`-separated components of `path`.
fn aux_encode(path: &[u8], dotencode: bool) -> Vec<Vec<u8>> {
    const RES3: [&[u8]; 4] = [b"aux", b"con", b"prn", b"nul"];
    const RES4: [&[u8]; 2] = [b"com", b"lpt"];
    let mut parts: Vec<Vec<u8>> = path.split(|&b| b == b'/').map(<[u8]>::to_vec).collect();
    for n in &mut parts {
        let Some(&first) = n.first() else { continue };
        if dotencode && (first == b'.' || first == b' ') {
            let mut e = Vec::with_capacity(n.len() + 2);
            push_hex(&mut e, first);
            e.extend_from_slice(n.get(1..).unwrap_or_default());
            *n = e;
        } else {
            let l = n.iter().position(|&b| b == b'.').unwrap_or(n.len());
            let head = n.get(..3).unwrap_or_default();
            let fourth = n.get(3).copied().unwrap_or(0);
            if (l == 3 && RES3.contains(&head))
                || (l == 4 && (b'1'..=b'9').contains(&fourth) && RES4.contains(&head))
            {
                let mut e = n.get(..2).unwrap_or_default().to_vec();
                push_hex(&mut e, n.get(2).copied().unwrap_or(0));
                e.extend_from_slice(n.get(3..).unwrap_or_default());
                *n = e;
            }
        }
        if let Some(&last) = n.last()
            && (last == b'.' || last == b' ')
        {
            n.pop();
            push_hex(n, last);
        }
    }
    parts
}

fn join(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.join(&b'/')
}

/// Python's `os.path.splitext(...)[1]` of a basename: from the last dot,
/// unless only dots precede it.
fn extension(basename: &[u8]) -> &[u8] {
    match basename.iter().rposition(|&b| b == b'.') {
        Some(dot) if basename.get(..dot).is_some_and(|h| h.iter().any(|&b| b != b'.')) => {
            basename.get(dot..).unwrap_or_default()
        }
        _ => &[],
    }
}

/// `_hashencode` of a directory-encoded path starting with `data/` or
/// `meta/`.
fn hash_encode(path: &[u8], dotencode: bool) -> Vec<u8> {
    let digest = sha1_hex(path);
    let parts = aux_encode(&lower_encode(path.get(5..).unwrap_or_default()), dotencode);
    let (basename, dirs_parts) =
        parts.split_last().map_or((&[][..], &[][..]), |(b, d)| (b.as_slice(), d));
    let ext = extension(basename);
    let mut sdirs: Vec<Vec<u8>> = Vec::new();
    let mut sdirslen = 0usize;
    for p in dirs_parts {
        let mut d = p.get(..DIR_PREFIX.min(p.len())).unwrap_or_default().to_vec();
        if let Some(last) = d.last_mut()
            && (*last == b'.' || *last == b' ')
        {
            *last = b'_';
        }
        let t = if sdirslen == 0 {
            d.len()
        } else {
            let t = sdirslen + 1 + d.len();
            if t > MAX_SHORT_DIRS {
                break;
            }
            t
        };
        sdirs.push(d);
        sdirslen = t;
    }
    let mut dirs = join(&sdirs);
    if !dirs.is_empty() {
        dirs.push(b'/');
    }
    let build = |filler: &[u8]| {
        let mut r = b"dh/".to_vec();
        r.extend_from_slice(&dirs);
        r.extend_from_slice(filler);
        r.extend_from_slice(digest.as_bytes());
        r.extend_from_slice(ext);
        r
    };
    let res = build(&[]);
    match MAX_STORE_PATH.checked_sub(res.len()) {
        Some(left) if left > 0 => {
            build(basename.get(..left.min(basename.len())).unwrap_or_default())
        }
        _ => res,
    }
}

/// `_hybridencode`: the store + fncache scheme.
fn hybrid_encode(path: &[u8], dotencode: bool) -> Vec<u8> {
    let path = encode_dir(path);
    let res = join(&aux_encode(&encode_filename(&path), dotencode));
    if res.len() > MAX_STORE_PATH { hash_encode(&path, dotencode) } else { res }
}

/// `_pathencode`: the store + fncache + dotencode scheme.
fn path_encode(path: &[u8]) -> Vec<u8> {
    let de = encode_dir(path);
    if path.len() > MAX_STORE_PATH {
        return hash_encode(&de, true);
    }
    let res = join(&aux_encode(&encode_filename(&de), true));
    if res.len() > MAX_STORE_PATH { hash_encode(&de, true) } else { res }
}

/// SHA-1 of `data` (the `sha1` crate), as 40 lower-case hex digits.
/// Used only for hashed store names; not a security boundary.
#[must_use]
pub fn sha1_hex(data: &[u8]) -> String {
    use sha1::Digest as _;
    use std::fmt::Write as _;
    let mut s = String::with_capacity(40);
    for b in sha1::Sha1::digest(data) {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_vectors() {
        // FIPS 180-2 appendix A test vectors.
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            sha1_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
    }

    #[test]
    fn store_py_doctests() {
        // The doctests of mercurial/store.py (6.3).
        assert_eq!(encode_dir(b"data/foo.i/bla.i"), b"data/foo.i.hg/bla.i");
        assert_eq!(encode_dir(b"data/foo.i.hg/bla.i"), b"data/foo.i.hg.hg/bla.i");
        assert_eq!(encode_filename(b"HELLO"), b"_h_e_l_l_o");
        assert_eq!(encode_filename(b"hello:world?"), b"hello~3aworld~3f");
        assert_eq!(encode_filename(b"the\x07quick\xADshot"), b"the~07quick~adshot");
        assert_eq!(
            StoreEncoding::Encoded.encode(b"foo.i/bar.d/bla.hg/hi:world?/HELLO"),
            b"foo.i.hg/bar.d.hg/bla.hg.hg/hi~3aworld~3f/_h_e_l_l_o"
        );
        assert_eq!(lower_encode(b"HELLO"), b"hello");
        let aux = aux_encode(b".foo/aux.txt/txt.aux/con/prn/nul/foo.", true);
        assert_eq!(
            aux,
            [&b"~2efoo"[..], b"au~78.txt", b"txt.aux", b"co~6e", b"pr~6e", b"nu~6c", b"foo~2e"]
        );
        let aux = aux_encode(b".com1com2/lpt9.lpt4.lpt1/conprn/com0/lpt0/foo.", false);
        assert_eq!(
            aux,
            [&b".com1com2"[..], b"lp~749.lpt4.lpt1", b"conprn", b"com0", b"lpt0", b"foo~2e"]
        );
        assert_eq!(aux_encode(b"foo. ", true), [b"foo.~20".to_vec()]);
        assert_eq!(aux_encode(b" .foo", true), [b"~20.foo".to_vec()]);
    }
}
