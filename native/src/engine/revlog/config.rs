//! hg's configuration values for index loading, parsed as hg parses them.
//!
//! Two spellings exist (see `docs/format/revlog.md` §7):
//!
//! * up to hg 6.8: `experimental.mmapindexthreshold = SIZE` (unset by
//!   default: never map). Read in `mercurial/localrepo.py`
//!   (`resolverevlogstorevfsoptions`) with `ui.configbytes`; used by
//!   `revlog._get_data`: map when the file size is `>=` the threshold.
//! * hg 6.9 and later: `storage.revlog.mmap.index = BOOL` (default: on
//!   where the mapping can be pre-populated, i.e. Linux `MAP_POPULATE`) and
//!   `storage.revlog.mmap.index:size-threshold = SIZE` (default `1 MB`);
//!   read in `mercurial/configitems.toml` and
//!   `localrepo.resolve_revlog_store_vfs_options`; the mapping is
//!   pre-populated.
//!
//! Sizes go through `util.sizetoint` (hg's `ui.configbytes`), booleans
//! through `stringutil.parsebool` (`ui.configbool`), `--config` options
//! through `dispatch._parseconfig`; the error texts are hg's.

use super::load::{Load, Options};

/// A `--config` value hg would refuse, with hg's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not `section.name=value` (hg: `malformed --config option`).
    #[error("malformed --config option: '{0}' (use --config section.name=value)")]
    Malformed(String),
    /// A size hg's `sizetoint` cannot parse (`ui.configbytes`).
    #[error("{key} is not a byte quantity ('{value}')")]
    NotBytes {
        /// `section.name`.
        key: String,
        /// The value given.
        value: String,
    },
    /// A boolean hg's `parsebool` does not know (`ui.configbool`).
    #[error("{key} is not a boolean ('{value}')")]
    NotBool {
        /// `section.name`.
        key: String,
        /// The value given.
        value: String,
    },
}

/// hg's size units (`util._sizeunits`), tried in this order: a value
/// ending in `mb` is not caught by `m`, and `b` comes last.
const SIZE_UNITS: [(&str, u64); 7] = [
    ("m", 1 << 20),
    ("k", 1 << 10),
    ("g", 1 << 30),
    ("kb", 1 << 10),
    ("mb", 1 << 20),
    ("gb", 1 << 30),
    ("b", 1),
];

/// Python's `int()` of a string: optional sign, decimal digits with
/// single underscores between them, surrounding whitespace.
fn py_int(s: &str) -> Option<i64> {
    let t = s.trim();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, t.get(1..)?),
        Some(b'+') => (false, t.get(1..)?),
        _ => (false, t),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    let v: i64 = digits.replace('_', "").parse().ok()?;
    Some(if neg { -v } else { v })
}

/// Python's `float()` of a decimal string (no `inf`/`nan`: hg turns
/// those into an error or a crash): optional sign, digits with single
/// underscores between them, optional fraction and exponent.
fn py_float(s: &str) -> Option<f64> {
    let t = s.trim();
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let mut seen_digit = false;
    let mut prev = b' ';
    for b in body.bytes() {
        let ok = match b {
            b'0'..=b'9' => {
                seen_digit = true;
                true
            }
            b'_' => prev.is_ascii_digit(),
            b'.' | b'e' | b'E' | b'+' | b'-' => prev != b'_',
            _ => false,
        };
        if !ok {
            return None;
        }
        prev = b;
    }
    if !seen_digit || prev == b'_' || body.contains("_.") || body.contains("._") {
        return None;
    }
    let plain = t.replace('_', "");
    let v: f64 = plain.parse().ok()?;
    v.is_finite().then_some(v)
}

/// hg's `util.sizetoint`: `30` → 30, `2.2kb` → 2252, `6M` → 6291456.
/// The value is trimmed and lower-cased; a unit suffix takes a decimal
/// number (`int(float(n) * unit)`, truncated), no suffix takes an
/// integer (so `1.5` is refused but `1.5b` is 1). Negative values are
/// accepted, as hg accepts them.
///
/// # Errors
/// `None` where hg raises "couldn't parse size".
#[must_use]
pub fn size_to_int(s: &str) -> Option<i64> {
    let t = s.trim().to_ascii_lowercase();
    for (unit, mult) in SIZE_UNITS {
        if let Some(num) = t.strip_suffix(unit) {
            #[expect(clippy::cast_precision_loss)]
            let v = py_float(num)? * mult as f64;
            if !(-9.2e18..9.2e18).contains(&v) {
                return None;
            }
            #[expect(clippy::cast_possible_truncation)]
            return Some(v.trunc() as i64);
        }
    }
    py_int(&t)
}

/// hg's `stringutil.parsebool` (case-insensitive).
#[must_use]
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "yes" | "true" | "on" | "always" => Some(true),
        "0" | "no" | "false" | "off" | "never" => Some(false),
        _ => None,
    }
}

/// `--config` settings, as hg's `dispatch._parseconfig` splits them:
/// `section.name=value`, split at the first `=` and the first `.`, both
/// sides trimmed; a later setting of the same key wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HgConfig {
    items: Vec<(String, String, String)>,
}

/// The 6.9+ default threshold (`storage.revlog.mmap.index:size-threshold`
/// in `configitems.toml`: `1 MB`).
pub const DEFAULT_MMAP_THRESHOLD: u64 = 1 << 20;

impl HgConfig {
    /// Parse `--config` arguments.
    ///
    /// # Errors
    /// [`ConfigError::Malformed`] as hg: no `=`, no `.`, or an empty
    /// section or name.
    pub fn parse<I, T>(args: I) -> Result<HgConfig, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<str>,
    {
        let mut items = Vec::new();
        for a in args {
            let a = a.as_ref();
            let malformed = || ConfigError::Malformed(a.to_string());
            let (key, value) = a.split_once('=').ok_or_else(malformed)?;
            let (section, name) = key.trim().split_once('.').ok_or_else(malformed)?;
            if section.is_empty() || name.is_empty() {
                return Err(malformed());
            }
            items.push((section.to_string(), name.to_string(), value.trim().to_string()));
        }
        Ok(HgConfig { items })
    }

    /// The value of `section.name`, the last one given.
    #[must_use]
    pub fn get(&self, section: &str, name: &str) -> Option<&str> {
        self.items
            .iter()
            .rev()
            .find(|(s, n, _)| s == section && n == name)
            .map(|(_, _, v)| v.as_str())
    }

    fn bytes(&self, section: &str, name: &str) -> Result<Option<i64>, ConfigError> {
        self.get(section, name)
            .map(|v| {
                size_to_int(v).ok_or_else(|| ConfigError::NotBytes {
                    key: format!("{section}.{name}"),
                    value: v.to_string(),
                })
            })
            .transpose()
    }

    fn bool(&self, section: &str, name: &str) -> Result<Option<bool>, ConfigError> {
        self.get(section, name)
            .map(|v| {
                parse_bool(v).ok_or_else(|| ConfigError::NotBool {
                    key: format!("{section}.{name}"),
                    value: v.to_string(),
                })
            })
            .transpose()
    }

    /// How hg would load the changelog and manifest indexes with these
    /// settings:
    ///
    /// * either 6.9+ key given (`storage.revlog.mmap.index`,
    ///   `storage.revlog.mmap.index:size-threshold`): hg 6.9's rule. The
    ///   switch defaults to on (Linux has `MAP_POPULATE`), the threshold
    ///   to 1 MiB, and the mapping is populated. The old key is ignored,
    ///   as 6.9 ignores it.
    /// * else `experimental.mmapindexthreshold`: the 2017 rule of hg 4.4 to
    ///   6.8, a plain mapping (no populate) at or above the threshold.
    /// * else: read whole, hg ≤ 6.8's default (our peer runs 6.3).
    ///
    /// A negative threshold maps every file (hg compares `size >= t`).
    ///
    /// # Errors
    /// [`ConfigError`] for values hg would refuse.
    pub fn index_load(&self) -> Result<Options, ConfigError> {
        let to_threshold = |t: i64| u64::try_from(t).unwrap_or(0);
        let switch = self.bool("storage", "revlog.mmap.index")?;
        let sized = self.bytes("storage", "revlog.mmap.index:size-threshold")?;
        if switch.is_some() || sized.is_some() {
            if !switch.unwrap_or(cfg!(target_os = "linux")) {
                return Ok(Options::default());
            }
            let threshold = sized.map_or(DEFAULT_MMAP_THRESHOLD, to_threshold);
            return Ok(Options {
                load: Load::Auto { threshold },
                populate: true,
                ..Options::default()
            });
        }
        if let Some(t) = self.bytes("experimental", "mmapindexthreshold")? {
            return Ok(Options {
                load: Load::Auto { threshold: to_threshold(t) },
                ..Options::default()
            });
        }
        Ok(Options::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_hg_parses_them() {
        // The doctests of `util.sizetoint` and `ui.configbytes` (hg 6.3).
        assert_eq!(size_to_int("30"), Some(30));
        assert_eq!(size_to_int("2.2kb"), Some(2252));
        assert_eq!(size_to_int("6M"), Some(6_291_456));
        assert_eq!(size_to_int("42.5 kb"), Some(43520));
        assert_eq!(size_to_int("7 MB"), Some(7_340_032));
        assert_eq!(size_to_int("somevalue"), None);
        // More cases are compared with hg's own `sizetoint` in
        // native/tests/revlog.rs.
    }

    #[test]
    fn both_spellings() {
        let load = |args: &[&str]| HgConfig::parse(args).unwrap().index_load().unwrap();
        assert_eq!(load(&[]).load, Load::Read);
        let old = load(&["experimental.mmapindexthreshold=4k"]);
        assert_eq!(old.load, Load::Auto { threshold: 4096 });
        assert!(!old.populate);
        let new = load(&["storage.revlog.mmap.index:size-threshold=4k"]);
        assert_eq!(new.load, Load::Auto { threshold: 4096 });
        assert!(new.populate);
        let on = load(&["storage.revlog.mmap.index=yes"]);
        assert_eq!(on.load, Load::Auto { threshold: DEFAULT_MMAP_THRESHOLD });
        let off = load(&["experimental.mmapindexthreshold=4k", "storage.revlog.mmap.index=no"]);
        assert_eq!(off.load, Load::Read);
        assert_eq!(load(&["experimental.mmapindexthreshold=-1"]).load, Load::Auto { threshold: 0 });
        let bad = HgConfig::parse(["storage.revlog.mmap.index=maybe"]).unwrap();
        assert_eq!(
            bad.index_load().unwrap_err().to_string(),
            "storage.revlog.mmap.index is not a boolean ('maybe')"
        );
        assert!(HgConfig::parse(["novalue"]).is_err());
        assert!(HgConfig::parse([".x=1"]).is_err());
    }
}
