//! The repository's house rules as tests, run by `cargo test --workspace`
//! (rust-analyzer's `tidy` is the model): what review would otherwise have
//! to remember.
//!
//! Each rule reads the tracked source tree as text and names every line
//! that breaks it, with the fix.

use std::fs;
use std::path::{Path, PathBuf};

/// The longest doc comment line, in characters, `///` or `//!` included
/// (rustfmt keeps code at 100 columns but never rewraps comments).
const DOC_WIDTH: usize = 100;

/// Directories never searched: build output, installed packages, fuzzing
/// state and git itself.
const SKIP_DIRS: [&str; 6] = ["target", ".git", "node_modules", "corpus", "artifacts", "coverage"];

/// Every file under the repository with one of `exts`, but none under
/// [`SKIP_DIRS`] and none of the corpus (`testdata/`, real files from
/// elsewhere), sorted, as paths relative to the repository.
fn files(exts: &[&str]) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                let top = dir == root && name == "testdata";
                if !top && !SKIP_DIRS.contains(&name.as_ref()) {
                    walk(root, &path, exts, out);
                }
            } else if kind.is_file()
                && exts.iter().any(|x| name.ends_with(&format!(".{x}")))
                && let Ok(rel) = path.strip_prefix(root)
            {
                out.push(rel.to_path_buf());
            }
        }
    }
    let root = mapwise_testkit::repo();
    let mut out = Vec::new();
    walk(&root, &root, exts, &mut out);
    out.sort();
    out
}

/// `(file, line number, line)` of every line of `files` for which `bad`
/// says so.
fn offending(
    files: &[PathBuf],
    bad: impl Fn(&Path, &str) -> bool,
) -> Vec<(PathBuf, usize, String)> {
    let root = mapwise_testkit::repo();
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = fs::read_to_string(root.join(f)) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if bad(f, line) {
                out.push((f.clone(), i + 1, line.trim().to_owned()));
            }
        }
    }
    out
}

/// Fail with every offending line and what to do about it.
fn report(rule: &str, fix: &str, found: &[(PathBuf, usize, String)]) {
    if found.is_empty() {
        return;
    }
    let mut msg = format!("{rule}: {} line(s); {fix}\n", found.len());
    for (f, n, line) in found {
        let shown: String = line.chars().take(120).collect();
        msg.push_str(&format!("  {}:{n}: {shown}\n", f.display()));
    }
    panic!("{msg}");
}

#[test]
fn doc_comments_fit_in_100_columns() {
    let found = offending(&files(&["rs"]), |_, line| {
        let t = line.trim_start();
        let doc = t.starts_with("///") || t.starts_with("//!");
        // A Markdown table row cannot be wrapped.
        let table = t.trim_start_matches(['/', '!']).trim_start().starts_with('|');
        doc && !table && line.chars().count() > DOC_WIDTH
    });
    report(
        "doc comment lines longer than 100 characters",
        "rewrap them (rustfmt does not)",
        &found,
    );
}

/// Whether `line` cites an issue by number ("issue N", "issue #N",
/// "issues N and M"): the repository has no tracker, so such a reference
/// points nowhere.
fn cites_issue(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.match_indices("issue").any(|(i, _)| {
        let word_start = !lower[..i].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric());
        let rest = lower[i + "issue".len()..].trim_start_matches('s');
        let rest = rest.trim_start().trim_start_matches('#').trim_start();
        word_start && rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

#[test]
fn no_tracker_references() {
    let exts = ["rs", "md", "toml", "sh", "js", "mjs", "go", "c", "py"];
    let found = offending(&files(&exts), |_, line| cites_issue(line));
    report(
        "references to issues of a tracker this repository does not have",
        "say what the code does and why, without the issue",
        &found,
    );
}

/// Files outside native's OS layer that may say `unsafe`: each only to
/// call an OS-layer `unsafe fn` whose contract it keeps (a mapping nobody
/// truncates) or a `#[target_feature]` function, with a `SAFETY:` comment
/// (clippy's `undocumented_unsafe_blocks` checks the comment).
const UNSAFE_CALLERS: [&str; 6] = [
    "native/src/engine/bolt/db.rs",
    "native/src/engine/mmaptest.rs",
    "native/src/engine/revlog/load.rs",
    "native/src/engine/rrd/io.rs",
    "native/tests/residency.rs",
    "bench/src/revlog.rs",
];

/// `line` with its line comment and string literals cut out (roughly:
/// enough for the keywords the rules look for).
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut in_str = false;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        if !in_str && line[i..].starts_with("//") {
            break;
        }
        if c == '"' && prev != '\\' {
            in_str = !in_str;
        } else if !in_str {
            out.push(c);
        }
        prev = c;
    }
    out
}

/// Whether `code` uses the keyword `word` (not as part of a longer name).
fn has_word(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(i, _)| {
        let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let before = code[..i].chars().next_back().is_some_and(ident);
        let after = code[i + word.len()..].chars().next().is_some_and(ident);
        !before && !after
    })
}

#[test]
fn unsafe_lives_in_the_os_layer() {
    let found = offending(&files(&["rs"]), |f, line| {
        let code = code_of(line);
        if !has_word(&code, "unsafe") || f.starts_with("native/src/os") {
            return false;
        }
        let declares = ["unsafe fn", "unsafe impl", "unsafe extern", "unsafe trait"]
            .iter()
            .any(|d| code.contains(d));
        let caller = UNSAFE_CALLERS.iter().any(|c| f == Path::new(c));
        declares || !caller
    });
    report(
        "unsafe outside native's OS layer (native/src/os/)",
        "put the system call behind a safe function in native/src/os/ (a file that calls an OS-layer \
         function marked so goes in UNSAFE_CALLERS, with a SAFETY: comment at the call)",
        &found,
    );
}

#[test]
fn lint_allows_are_expectations() {
    // Spelled in two pieces, so that this file passes its own rule.
    let allow = ["#[al", "low("].concat();
    let inner = ["#![al", "low("].concat();
    let in_cfg = [", al", "low("].concat();
    let found = offending(&files(&["rs"]), |_, line| {
        let code = code_of(line);
        code.contains(&allow)
            || code.contains(&inner)
            || (code.contains("cfg_attr") && code.contains(&in_cfg))
    });
    report(
        "lint allows",
        "write #[expect(lint)] instead: an expectation nothing fulfils is an error, so it \
         cannot outlive its reason",
        &found,
    );
}

#[test]
fn architecture_stays_a_map() {
    // A map a new maintainer reads in one sitting: measurements go to
    // docs/bench/, test suites to docs/testing.md, history to commits.
    let text = fs::read_to_string(mapwise_testkit::repo().join("ARCHITECTURE.md")).unwrap();
    let chars = text.chars().count();
    assert!(chars <= 15_000, "ARCHITECTURE.md has {chars} characters, more than 15,000");
}

#[test]
fn the_rules_catch_what_they_are_for() {
    // The walker finds this very file and the README.
    let rs = files(&["rs"]);
    assert!(rs.iter().any(|p| p.ends_with("xtask/src/tidy.rs")));
    assert!(!rs.iter().any(|p| p.starts_with("target")));
    assert!(files(&["md"]).iter().any(|p| p == Path::new("README.md")));
    // Built at run time, so that this file passes its own rule.
    for n in ["9", "#9", " 10"] {
        assert!(cites_issue(&format!(
            "see issue{}{n} item 2",
            if n.starts_with(' ') { "s" } else { " " }
        )));
        assert!(cites_issue(&format!("After: Issue {n}.")));
    }
    // A word ending in the letters of "issue" before a number is no reference.
    let tissue = format!("t{}ue 9", "iss");
    assert!(!cites_issue(&format!("{tissue}, the issue's targets, issues with 2 GiB files")));
    assert!(!cites_issue("etcd-io/etcd #9222"));
    let word = ["un", "safe"].concat();
    assert!(has_word(&code_of(&format!("let m = {word} {{ map() }}; // x")), &word));
    assert!(!has_word(&code_of(&format!("#![forbid({word}_code)]")), &word));
    assert!(!has_word(&code_of(&format!("// {word} here")), &word));
    assert!(!has_word(&code_of(&format!("say(\"{word}\")")), &word));
}
