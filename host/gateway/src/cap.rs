//! Stage 5, Cap: the model gets head and tail of a long output; the whole of it goes to a spill
//! file the model is told about (issue 4, item 1.5).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Output cut for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    /// What the model reads.
    pub text: String,
    pub truncated: bool,
    /// Characters of the full text.
    pub original_chars: usize,
}

/// Where the whole of a capped output went, as the marker tells the model.
#[derive(Debug, Clone, Copy)]
pub enum Spill<'a> {
    /// Saved at a path the model's tools can read (inside the workspace's roots): offered.
    Readable(&'a Path),
    /// Saved where the model's tools cannot read (`$TERN_HOME/runs/…` outside the workspace):
    /// the path is not offered, since a path the model cannot open only costs it a failed call
    /// (issue 26, item 7); the person finds it in the run's events and `tern trace`.
    ForThePerson,
    /// Saving failed, for this reason.
    Failed(&'a str),
    /// Not saved.
    None,
}

impl<'a> Spill<'a> {
    /// The spill of a write to `path` (`Err` its reason): offered when `readable`.
    pub fn of(written: Result<&'a Path, &'a str>, readable: bool) -> Self {
        match written {
            Ok(path) if readable => Spill::Readable(path),
            Ok(_) => Spill::ForThePerson,
            Err(e) => Spill::Failed(e),
        }
    }
}

/// `text` cut to at most about `max_chars` characters: the first and last halves kept, a marker
/// between them naming what was left out and where the whole is ([`Spill`]).
pub fn cap(text: &str, max_chars: usize, spill: Spill<'_>) -> Capped {
    let total = text.chars().count();
    if total <= max_chars {
        return Capped {
            text: text.to_owned(),
            truncated: false,
            original_chars: total,
        };
    }
    let head_chars = max_chars / 2;
    let tail_chars = max_chars - head_chars;
    let head_end = text
        .char_indices()
        .nth(head_chars)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail_chars)
        .map_or(text.len(), |(i, _)| i);
    let omitted = total - head_chars - tail_chars;
    let where_ = match spill {
        Spill::Readable(p) => format!(
            "the full output ({total} characters, {} bytes) is in {}",
            text.len(),
            p.display()
        ),
        Spill::ForThePerson => format!(
            "the full output had {total} characters; it is saved for the user outside the \
             workspace, where your tools cannot read it: narrow the call (a range, a filter) \
             to see the omitted part"
        ),
        Spill::Failed(e) => format!("the full output could not be saved: {e}"),
        Spill::None => format!("the full output had {total} characters"),
    };
    Capped {
        text: format!(
            "{}\n\n[… {omitted} characters omitted; {where_} …]\n\n{}",
            &text[..head_end],
            &text[tail_start..]
        ),
        truncated: true,
        original_chars: total,
    }
}

/// Whether `text` needs capping at `max_chars`.
pub fn needs_cap(text: &str, max_chars: usize) -> bool {
    // Bytes bound chars from above: the cheap test first.
    text.len() > max_chars && text.chars().count() > max_chars
}

/// `$TERN_HOME/runs/<run_id>/spill/<call_id>.txt`. Ids come from the model and the host, so each is
/// reduced to a safe file name (a `../` in a call id must not pick the directory).
pub fn spill_path(runs_dir: &Path, run_id: &str, call_id: &str) -> PathBuf {
    runs_dir
        .join(safe_name(run_id))
        .join("spill")
        .join(format!("{}.txt", safe_name(call_id)))
}

fn safe_name(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if clean == id && !clean.is_empty() {
        clean
    } else {
        // Distinct ids that clean to the same text stay distinct.
        let hash = hex::encode(&Sha256::digest(id.as_bytes())[..4]);
        format!("{clean}-{hash}")
    }
}

/// Writes the spill file (creating its directory): `0600` in a `0700` directory, never through
/// a symlink.
pub fn write_spill(path: &Path, text: &str) -> std::io::Result<()> {
    tern_protocol::files::write(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_untouched() {
        let c = cap("hello", 10, Spill::None);
        assert_eq!(c.text, "hello");
        assert!(!c.truncated);
        assert!(!needs_cap("hello", 10));
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_names_the_spill() {
        let text = format!("{}{}{}", "a".repeat(100), "m".repeat(1000), "z".repeat(100));
        assert!(needs_cap(&text, 200));
        let c = cap(
            &text,
            200,
            Spill::Readable(Path::new("/h/runs/r/spill/c.txt")),
        );
        assert!(c.truncated);
        assert_eq!(c.original_chars, 1200);
        assert!(c.text.starts_with(&"a".repeat(100)));
        assert!(c.text.ends_with(&"z".repeat(100)));
        assert!(c.text.contains("1000 characters omitted"));
        assert!(c.text.contains("/h/runs/r/spill/c.txt"));
        assert!(c.text.contains("1200 characters, 1200 bytes"));
        assert!(!c.text.contains("mm"));
    }

    #[test]
    fn a_spill_the_model_cannot_read_is_not_offered() {
        let text = "x".repeat(500);
        let path = Path::new("/h/runs/r/spill/c.txt");
        let c = cap(&text, 100, Spill::of(Ok(path), false));
        assert!(!c.text.contains("/h/runs"), "{}", c.text);
        assert!(c.text.contains("your tools cannot read it"));
        let c = cap(&text, 100, Spill::of(Ok(path), true));
        assert!(c.text.contains("/h/runs/r/spill/c.txt"));
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let text = "é".repeat(50);
        let c = cap(&text, 10, Spill::Failed("disk full"));
        assert!(c.text.starts_with("ééééé\n"));
        assert!(c.text.contains("could not be saved: disk full"));
    }

    #[test]
    fn ids_cannot_escape_the_spill_directory() {
        let p = spill_path(Path::new("/h/runs"), "r1", "../../etc/passwd");
        assert!(p.starts_with("/h/runs/r1/spill"));
        assert_eq!(
            p.components().count(),
            Path::new("/h/runs/r1/spill/x").components().count()
        );
        assert_ne!(
            spill_path(Path::new("/h"), "r", "a/b"),
            spill_path(Path::new("/h"), "r", "a_b")
        );
        assert_eq!(
            spill_path(Path::new("/h"), "r", "toolu_01"),
            Path::new("/h/r/spill/toolu_01.txt")
        );
    }
}
