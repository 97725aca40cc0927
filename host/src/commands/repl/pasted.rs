//! Paths to image files in a typed line: what a terminal pastes when a file is dragged onto it
//! — a bare absolute or relative path, quoted when it holds spaces (GNOME Terminal, Konsole:
//! `'/home/me/My Shot.png'`), or with backslash-escaped spaces (macOS Terminal, iTerm2:
//! `/Users/me/My\ Shot.png`), sometimes a `file://` URI. A word counts when it ends in an image
//! extension and names an existing file; the file's bytes decide whether it is an image
//! ([`crate::agent::attach`]), so a `notes.png` that is text is refused, not sent.

use std::path::{Path, PathBuf};

use tern_protocol::image::EXTENSIONS;

/// One image path found in a line: the word as typed and the path it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pasted {
    pub typed: String,
    pub path: PathBuf,
}

/// The image paths in `line` (resolved against `cwd`; `~/` against `home`), in order, each
/// once. `@` words are mentions ([`super::files`]), not pasted paths; so is a bare file name
/// (`rename logo.png to icon.png` talks about the file, `@logo.png` attaches it): a path counts
/// when it has a directory in it — absolute (what a dragged file pastes as), `~/`, `./`, or
/// `dir/name.png`.
pub(super) fn image_paths(line: &str, cwd: &Path, home: Option<&Path>) -> Vec<Pasted> {
    let mut out: Vec<Pasted> = Vec::new();
    for (typed, word) in words(line) {
        if word.starts_with('@') {
            continue;
        }
        let word = from_file_uri(&word).unwrap_or(word);
        if !word.contains('/') {
            continue;
        }
        // As typed, else without the punctuation that ends a sentence (`… see ~/a.png.`).
        let trimmed = word.trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
        let found = [word.as_str(), trimmed].into_iter().find_map(|w| {
            let has_image_extension = Path::new(w)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
            let path = match (w.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => cwd.join(w),
            };
            (has_image_extension && path.is_file()).then_some(path)
        });
        if let Some(path) = found
            && !out.iter().any(|p| p.path == path)
        {
            out.push(Pasted { typed, path });
        }
    }
    out
}

/// Whether `line` starts with a path to something that exists (`/home/me/shot.png what is
/// this?`): a dragged file, not a slash command.
pub(super) fn starts_with_path(line: &str, cwd: &Path) -> bool {
    words(line)
        .first()
        .is_some_and(|(_, w)| w.starts_with('/') && w.len() > 1 && cwd.join(w).exists())
}

/// The words of `line` as a shell would split them, leniently: a quote without its partner is
/// an ordinary character (an apostrophe in prose), and `\` escapes the next character outside
/// single quotes. Each word comes with the text it was typed as.
fn words(line: &str) -> Vec<(String, String)> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let mut word = String::new();
        while i < chars.len() && !chars[i].is_whitespace() {
            let c = chars[i];
            match c {
                '\'' | '"' => match closing(&chars[i + 1..], c) {
                    Some(len) => {
                        let inner = &chars[i + 1..i + 1 + len];
                        if c == '"' {
                            word.extend(unescape(inner));
                        } else {
                            word.extend(inner);
                        }
                        i += len + 2;
                    }
                    None => {
                        word.push(c);
                        i += 1;
                    }
                },
                '\\' if i + 1 < chars.len() => {
                    word.push(chars[i + 1]);
                    i += 2;
                }
                _ => {
                    word.push(c);
                    i += 1;
                }
            }
        }
        out.push((chars[start..i].iter().collect(), word));
    }
    out
}

/// Where the quote `q` that opened `rest` closes: inside double quotes a backslash escapes
/// the next character (so `\"` does not close them); single quotes end at the next `'`.
fn closing(rest: &[char], q: char) -> Option<usize> {
    let mut j = 0;
    while j < rest.len() {
        match rest[j] {
            '\\' if q == '"' => j += 2,
            c if c == q => return Some(j),
            _ => j += 1,
        }
    }
    None
}

/// Backslash escapes inside double quotes (`\"`, `\\`).
fn unescape(inner: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(inner.len());
    let mut chars = inner.iter();
    while let Some(&c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some(&next)) if matches!(next, '"' | '\\' | '$' | '`') => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// The path of a `file://` URI (percent escapes decoded), as some terminals paste a file.
fn from_file_uri(word: &str) -> Option<String> {
    let rest = word.strip_prefix("file://")?;
    // `file://host/path`: only the local host's files (empty or `localhost`) are paths here.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h)? * 16 + hex(l)?) as u8);
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_a_shell_but_forgive_lone_quotes() {
        let got: Vec<String> = words(r#"look at '/a b/c.png' and /d\ e.png, it's "x \"y\".gif""#)
            .into_iter()
            .map(|(_, w)| w)
            .collect();
        assert_eq!(
            got,
            [
                "look",
                "at",
                "/a b/c.png",
                "and",
                "/d e.png,",
                "it's",
                "x \"y\".gif"
            ]
        );
        assert_eq!(words("'/a b.png'")[0].0, "'/a b.png'", "the typed form");
    }

    #[test]
    fn a_line_starting_with_an_existing_path_is_no_slash_command() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a b.png"), b"x").unwrap();
        let path = dir.path().join("a b.png").display().to_string();
        assert!(starts_with_path(
            &format!("{} what?", path.replace(' ', "\\ ")),
            dir.path()
        ));
        assert!(starts_with_path(&format!("'{path}'"), dir.path()));
        assert!(!starts_with_path("/cost", dir.path()));
        assert!(!starts_with_path("/", dir.path()));
        assert!(!starts_with_path("look at /etc", dir.path()));
    }

    #[test]
    fn image_paths_are_existing_files_with_image_extensions() {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("My Shot.PNG"), b"x").unwrap();
        std::fs::write(dir.path().join("rel.jpg"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        std::fs::write(home.path().join("h.webp"), b"x").unwrap();
        let abs = dir.path().join("My Shot.PNG");
        let escaped = abs.display().to_string().replace(' ', "\\ ");
        let uri = format!("file://{}", abs.display().to_string().replace(' ', "%20"));
        for line in [
            format!("what is in '{}'?", abs.display()),
            format!("what is in {escaped} ?"),
            format!("see \"{}\"", abs.display()),
            uri,
        ] {
            let got = image_paths(&line, dir.path(), Some(home.path()));
            assert_eq!(got.len(), 1, "{line}: {got:?}");
            assert_eq!(got[0].path, abs, "{line}");
        }
        let got = image_paths(
            "./rel.jpg and ~/h.webp, notes.txt, @rel.jpg, missing.png ./rel.jpg, but rel.jpg is a name",
            dir.path(),
            Some(home.path()),
        );
        let paths: Vec<PathBuf> = got.into_iter().map(|p| p.path).collect();
        assert_eq!(
            paths,
            [dir.path().join("rel.jpg"), home.path().join("h.webp")]
        );
    }
}
