//! Ctrl-G: the current input opened in `$VISUAL` (else `$EDITOR`, else `vi`), as in Claude
//! Code and Codex, for a long prompt written in a real editor. The text goes to a private
//! temporary file, the editor runs on the terminal (rustyline has given it back by then), and
//! what the file holds afterwards becomes the input line, ready to edit further or send.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use rustyline::{Cmd, ConditionalEventHandler, Event, EventContext, RepeatCount};

/// Ctrl-G: ends the line and asks for the editor.
pub(super) struct EditorKey(pub Arc<AtomicBool>);

impl ConditionalEventHandler for EditorKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        self.0.store(true, Ordering::SeqCst);
        Some(Cmd::AcceptLine)
    }
}

/// The editor command: `$VISUAL`, else `$EDITOR`, else `vi` (run by `sh`, so it may carry
/// arguments, e.g. `code --wait`).
fn editor_command(var: &dyn Fn(&str) -> Option<String>) -> String {
    ["VISUAL", "EDITOR"]
        .into_iter()
        .find_map(|k| var(k).filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_string())
}

/// Edits `text` in the editor; the file's content afterwards (one trailing newline, which
/// editors add, dropped). `Err` says why the editor could not be used; the text is then kept.
pub(super) fn edit(text: &str, dir: &Path) -> Result<String, String> {
    let _ = std::fs::create_dir_all(dir);
    let file = tempfile::Builder::new()
        .prefix("prompt-")
        .suffix(".md")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot create a file to edit in {}: {e}", dir.display()))?;
    std::fs::write(file.path(), text).map_err(|e| e.to_string())?;
    let command = editor_command(&|k| std::env::var(k).ok());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{command} \"$1\""))
        .arg("sh")
        .arg(file.path())
        .status()
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    if !status.success() {
        return Err(format!(
            "`{command}` exited with {status}; the input is unchanged\nhint: set VISUAL or \
             EDITOR to the editor to use"
        ));
    }
    let edited = std::fs::read_to_string(file.path()).map_err(|e| e.to_string())?;
    Ok(edited
        .strip_suffix('\n')
        .unwrap_or(&edited)
        .trim_end_matches('\r')
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visual_wins_over_editor_and_vi_is_the_last_resort() {
        let vars = |v: &'static [(&'static str, &'static str)]| {
            move |k: &str| v.iter().find(|(n, _)| *n == k).map(|(_, x)| x.to_string())
        };
        assert_eq!(
            editor_command(&vars(&[("VISUAL", "code --wait"), ("EDITOR", "nano")])),
            "code --wait"
        );
        assert_eq!(editor_command(&vars(&[("EDITOR", "nano")])), "nano");
        assert_eq!(editor_command(&vars(&[("VISUAL", " ")])), "vi");
    }
}
