//! Words the shell turns into file names — `*`, `?`, `[…]` and brace expansion — as rules must
//! see them (F1, F4): not as the text written, but as every path they may become.
//!
//! `cd .ter? && cat ../evil.toml > config.toml` names no protected path in its text, yet
//! rewrites `.tern/config.toml`. So a pattern is checked twice: against the protected names
//! themselves (it may match a file that does not exist yet), and by expanding it on the
//! filesystem now (it may match through a symlink). Bash's rules apply: a leading `.` must be
//! matched by a literal `.`, braces expand before globbing, an unmatched `[` is literal.

use std::path::{Component, Path, PathBuf};

use globset::GlobBuilder;

use crate::paths::{PathScope, lexical};

/// Brace-expansion results beyond this many are not followed (the word counts as reaching
/// anything).
const MAX_ALTERNATIVES: usize = 256;

/// Directory entries read while expanding one word, at most.
const MAX_ENTRIES: usize = 4096;

/// Characters that make a word a pattern when unquoted.
pub const GLOB_CHARS: &[char] = &['*', '?', '['];

/// Whether unquoted `text` holds a brace expansion (`{a,b}` or `{1..3}`).
pub fn has_braces(text: &str) -> bool {
    braces(text).is_none_or(|alts| alts.len() > 1 || alts.first().is_some_and(|a| a != text))
}

/// What one pattern word may become.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expansion {
    /// It may name a protected config location (`.tern/`, `$TERN_HOME`), now or once created.
    pub reaches_protected: bool,
    /// The existing paths it matches now.
    pub matches: Vec<PathBuf>,
    /// Too large to follow (too many alternatives or directory entries).
    pub incomplete: bool,
}

/// Expands `pattern` (glob syntax, quoted characters escaped with `\`) as run in `cwd`.
pub fn expand(ws: &PathScope, cwd: &Path, pattern: &str) -> Expansion {
    let mut out = Expansion::default();
    let Some(alternatives) = braces(pattern) else {
        out.incomplete = true;
        out.reaches_protected = true;
        return out;
    };
    let mut budget = MAX_ENTRIES;
    for alt in alternatives {
        let abs = absolute(ws, cwd, &alt);
        let components = names(&abs);
        if may_name_protected(ws, &components) {
            out.reaches_protected = true;
        }
        match candidates(&components, &mut budget) {
            Some(found) => {
                // A match may be a symlink into a protected directory, whether or not the
                // rest of the path exists yet.
                if found.iter().any(|p| ws.is_protected(p)) {
                    out.reaches_protected = true;
                }
                out.matches
                    .extend(found.into_iter().filter(|p| p.symlink_metadata().is_ok()));
            }
            None => out.incomplete = true,
        }
    }
    out.matches.sort();
    out.matches.dedup();
    out
}

/// `~/x`, `/x` or `x` (from `cwd`), `.` and `..` folded.
fn absolute(ws: &PathScope, cwd: &Path, pattern: &str) -> PathBuf {
    let joined = match (pattern.strip_prefix('~'), &ws.home) {
        (Some(""), Some(home)) => home.clone(),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ if pattern.starts_with('/') => PathBuf::from(pattern),
        _ => cwd.join(pattern),
    };
    lexical(&joined)
}

fn names(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

/// Whether pattern components can spell a path inside `.tern/` or `$TERN_HOME`.
fn may_name_protected(ws: &PathScope, components: &[String]) -> bool {
    if components
        .iter()
        .any(|c| component_matches(c, ".tern", Case::Insensitive))
    {
        return true;
    }
    let homes = [
        lexical(&ws.tern_home),
        ws.tern_home.canonicalize().unwrap_or_default(),
    ];
    homes.iter().filter(|h| h.is_absolute()).any(|home| {
        let home = names(home);
        components.len() >= home.len()
            && home
                .iter()
                .zip(components)
                .all(|(h, c)| component_matches(c, h, Case::Insensitive))
    })
}

/// The paths that `components` (from `/`) expand to, their glob components matched against
/// existing entries (the others taken as written), or `None` past the entry budget.
fn candidates(components: &[String], budget: &mut usize) -> Option<Vec<PathBuf>> {
    let mut current = vec![PathBuf::from("/")];
    for comp in components {
        let mut next = Vec::new();
        if !has_glob(comp) {
            let name = unescape(comp);
            next.extend(current.iter().map(|dir| dir.join(&name)));
        } else {
            for dir in &current {
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    *budget = budget.checked_sub(1)?;
                    let name = entry.file_name();
                    if component_matches(comp, &name.to_string_lossy(), Case::Sensitive) {
                        next.push(dir.join(name));
                    }
                }
            }
        }
        current = next;
        if current.is_empty() {
            break;
        }
    }
    Some(current)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    /// What bash does.
    Sensitive,
    /// For protected names, which case-insensitive filesystems do not tell apart.
    Insensitive,
}

/// Whether one pattern component matches one file name.
fn component_matches(pattern: &str, name: &str, case: Case) -> bool {
    let literal = |p: &str| match case {
        Case::Sensitive => unescape(p) == name,
        Case::Insensitive => unescape(p).eq_ignore_ascii_case(name),
    };
    if !has_glob(pattern) {
        return literal(pattern);
    }
    // Bash: a leading dot is only matched by a literal dot.
    if name.starts_with('.') && pattern.starts_with(GLOB_CHARS) {
        return false;
    }
    match GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .case_insensitive(case == Case::Insensitive)
        .build()
    {
        Ok(glob) => glob.compile_matcher().is_match(name),
        // An unmatched `[` is a literal character to bash.
        Err(_) => literal(pattern),
    }
}

/// Whether `s` holds an unescaped glob character.
fn has_glob(s: &str) -> bool {
    let mut escaped = false;
    for c in s.chars() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, c) if GLOB_CHARS.contains(&c) => return true,
            _ => {}
        }
    }
    false
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// Bash brace expansion of a pattern (escaped characters are not special): `a{b,c}d` →
/// `abd`, `acd`; `x{1..3}` → `x1`, `x2`, `x3`; `{a..c}` letters. `None` past
/// [`MAX_ALTERNATIVES`].
pub fn braces(pattern: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = pattern.chars().collect();
    let Some((open, close, parts)) = first_brace(&chars) else {
        return Some(vec![pattern.to_owned()]);
    };
    let head: String = chars[..open].iter().collect();
    let tail: String = chars[close + 1..].iter().collect();
    let mut out = Vec::new();
    for part in parts {
        for rest in braces(&format!("{head}{part}{tail}"))? {
            out.push(rest);
            if out.len() > MAX_ALTERNATIVES {
                return None;
            }
        }
    }
    Some(out)
}

/// The first `{…}` that bash expands: its span and its alternatives.
fn first_brace(c: &[char]) -> Option<(usize, usize, Vec<String>)> {
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '{' => {
                if let Some(found) = brace_at(c, i) {
                    return Some(found);
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

fn brace_at(c: &[char], open: usize) -> Option<(usize, usize, Vec<String>)> {
    let mut depth = 0;
    let mut commas = Vec::new();
    let mut i = open;
    while i < c.len() {
        match c[i] {
            '\\' => i += 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    let inner: String = c[open + 1..i].iter().collect();
                    let parts = if commas.is_empty() {
                        sequence(&inner)?
                    } else {
                        let mut parts = Vec::new();
                        let mut start = open + 1;
                        for &at in commas.iter().chain(std::iter::once(&i)) {
                            parts.push(c[start..at].iter().collect());
                            start = at + 1;
                        }
                        parts
                    };
                    return Some((open, i, parts));
                }
            }
            ',' if depth == 1 => commas.push(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// `1..5`, `5..1`, `1..10..2`, `a..e`: bash's sequence expressions.
fn sequence(inner: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = inner.split("..").collect();
    let (from, to, step) = match parts.as_slice() {
        [a, b] => (*a, *b, 1i64),
        [a, b, s] => (*a, *b, s.parse::<i64>().ok()?.checked_abs()?.max(1)),
        _ => return None,
    };
    let range = |a: i64, b: i64| -> Vec<i64> {
        let len = usize::try_from((a - b).unsigned_abs() / step.unsigned_abs() + 1).unwrap_or(0);
        let dir = if b >= a { step } else { -step };
        (0..len.min(MAX_ALTERNATIVES + 1))
            .map(|k| a + dir * k as i64)
            .collect()
    };
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        return Some(range(a, b).into_iter().map(|n| n.to_string()).collect());
    }
    let single = |s: &str| {
        let mut it = s.chars();
        match (it.next(), it.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Some(c),
            _ => None,
        }
    };
    let (a, b) = (single(from)?, single(to)?);
    Some(
        range(i64::from(a as u8), i64::from(b as u8))
            .into_iter()
            .filter_map(|n| u8::try_from(n).ok().map(|b| char::from(b).to_string()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brace_expansion_follows_bash() {
        assert_eq!(braces("a{b,c}d").unwrap(), ["abd", "acd"]);
        assert_eq!(braces("x{1..3}").unwrap(), ["x1", "x2", "x3"]);
        assert_eq!(braces(".{s..u}ern").unwrap(), [".sern", ".tern", ".uern"]);
        assert_eq!(braces("{a,{b,c}}").unwrap(), ["a", "b", "c"]);
        assert_eq!(braces("HEAD@{1}").unwrap(), ["HEAD@{1}"]);
        assert_eq!(braces("\\{a,b}").unwrap(), ["\\{a,b}"]);
        assert_eq!(braces("{-..0}tern").unwrap(), ["{-..0}tern"]);
        assert!(braces("{1..9}{1..9}{1..9}").is_none());
        assert!(has_braces("{a,b}") && !has_braces("{}") && !has_braces("a"));
    }

    #[test]
    fn components_match_like_bash_globs() {
        let m = |p, n| component_matches(p, n, Case::Sensitive);
        assert!(m(".ter?", ".tern"));
        assert!(m(".t*", ".tern"));
        assert!(!m("*", ".tern"), "a leading dot needs a literal dot");
        assert!(!m("?tern", ".tern"));
        assert!(!m("[.]tern", ".tern"));
        assert!(m("*.rs", "a.rs"));
        assert!(!m("\\*", "a"));
        assert!(m("[", "["), "an unmatched [ is literal");
        assert!(!m(".TER?", ".tern"));
        assert!(component_matches(".TER?", ".tern", Case::Insensitive));
    }

    fn ws(dir: &Path) -> PathScope {
        PathScope {
            cwd: dir.join("p"),
            roots: vec![dir.join("p")],
            home: Some(dir.join("home")),
            tern_home: dir.join("home/conf/tern-home"),
        }
    }

    #[test]
    fn patterns_that_may_reach_protected_locations() {
        let dir = tempfile::tempdir().unwrap();
        let w = ws(dir.path());
        for p in [
            ".ter?/config.toml",
            ".t*",
            ".{tern,x}/config.toml",
            ".{s..u}ern",
            "sub/.[t]ern/x",
            "~/conf/tern-h*/config.toml",
            "../home/conf/*/config.toml",
        ] {
            assert!(expand(&w, &w.cwd, p).reaches_protected, "{p}");
        }
        for p in ["*", "*.toml", "src/*", "~/conf/*.toml", ".git/*"] {
            assert!(!expand(&w, &w.cwd, p).reaches_protected, "{p}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn existing_matches_are_found_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let w = ws(dir.path());
        std::fs::create_dir_all(w.cwd.join(".tern")).unwrap();
        std::fs::write(w.cwd.join("a.rs"), "").unwrap();
        std::os::unix::fs::symlink(w.cwd.join(".tern"), w.cwd.join("cfg")).unwrap();
        let e = expand(&w, &w.cwd, "c?g/config.toml");
        assert!(e.reaches_protected, "{e:?}");
        let e = expand(&w, &w.cwd, "*.rs");
        assert_eq!(e.matches, [w.cwd.join("a.rs")]);
        assert!(!e.reaches_protected && !e.incomplete);
    }
}
