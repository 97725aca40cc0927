//! Plan mode in the REPL: when a turn ends with a proposed plan (`plan_proposed`, already drawn
//! by the renderer), the user approves it (switching the gateway to `default` or
//! `accept-edits`), sends feedback to keep planning, or cancels.
//!
//! On approval the plan is saved beside the session's transcript
//! (`$TERN_HOME/sessions/<id>.plan.md`) and the next turn starts at once with the approved plan
//! and the instruction to record its steps with `todo__write` first. The todo list is seeded by
//! the model through the todo server rather than by the REPL writing the server's state file:
//! the server stays the one owner of the list, and turning free-form markdown into items is the
//! model's job, not a parser's guess.

use std::sync::{Arc, Mutex};

use tern_config::PermissionMode;
use tern_protocol::{Envelope, Event};

use crate::agent::{Engine, Subscriber};

/// Keeps the plan the last turn proposed, for the REPL to put to the user after the turn.
pub(super) struct PlanCatcher(pub Arc<Mutex<Option<String>>>);

impl Subscriber for PlanCatcher {
    fn on_event(&mut self, e: &Envelope) {
        if let Event::PlanProposed { plan } = &e.event
            && let Ok(mut slot) = self.0.lock()
        {
            *slot = Some(plan.clone());
        }
    }
}

/// The question, with one line per answer.
pub(super) const MENU: &str = "Approve this plan?\n  \
    1  approve and switch to default (ask before each change)\n  \
    2  approve and switch to accept-edits (file edits run without asking)\n  \
    3  keep planning (tell the model what to change)\n  \
    4  cancel (drop the plan, stay in plan mode)";

/// What the user answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Choice {
    Approve(PermissionMode),
    KeepPlanning,
    Cancel,
}

/// The answer a line names (`1`..`4`, or a word of it); `None` for anything else.
pub(super) fn choice(line: &str) -> Option<Choice> {
    match line.trim().to_ascii_lowercase().as_str() {
        "1" | "default" | "approve" | "a" | "y" | "yes" => {
            Some(Choice::Approve(PermissionMode::Default))
        }
        "2" | "accept-edits" | "accept" => Some(Choice::Approve(PermissionMode::AcceptEdits)),
        "3" | "keep" | "keep planning" | "k" => Some(Choice::KeepPlanning),
        "4" | "cancel" | "c" | "n" | "no" => Some(Choice::Cancel),
        _ => None,
    }
}

/// Approves `plan`: switches the mode, saves the plan with the session, and returns the text
/// the next turn starts with (or says why the plan could not be saved, which does not stop it).
pub(super) fn approve(
    engine: &Engine,
    sessions_dir: &std::path::Path,
    plan: &str,
    mode: PermissionMode,
) -> (String, Option<String>) {
    engine.gateway().set_mode(mode);
    let path = sessions_dir.join(format!("{}.plan.md", engine.session_id()));
    let problem = std::fs::create_dir_all(sessions_dir)
        .and_then(|()| tern_protocol::files::write(&path, plan.as_bytes()))
        .err()
        .map(|e| format!("could not save the plan to {}: {e}", path.display()));
    let text = format!(
        "The user approved your plan. The session is now in {mode} mode: you may change files. \
         First record the plan's steps with todo__write, then carry it out.\n\nThe approved \
         plan:\n\n{plan}"
    );
    (text, problem)
}

/// What the model is told when the user wants more planning.
pub(super) fn feedback(text: &str) -> String {
    format!(
        "The user read your plan and wants you to keep planning (still in plan mode). Their \
         feedback:\n\n{text}\n\nRevise the plan and call plan__exit again."
    )
}

/// The REPL's line editor, which the question reads its answers with.
pub(super) type LineEditor =
    rustyline::Editor<super::mentions::ReplHelper, rustyline::history::DefaultHistory>;

/// One line from the user; `None` on Ctrl-C or Ctrl-D (taken as cancel).
async fn ask(
    mut editor: LineEditor,
    prompt: &'static str,
) -> anyhow::Result<(LineEditor, Option<String>)> {
    let (editor, line) = tokio::task::spawn_blocking(move || {
        let line = editor.readline(prompt);
        (editor, line)
    })
    .await?;
    let line = match line {
        Ok(l) => Some(l),
        Err(
            rustyline::error::ReadlineError::Interrupted | rustyline::error::ReadlineError::Eof,
        ) => None,
        Err(e) => return Err(e.into()),
    };
    Ok((editor, line))
}

/// Puts the proposed `plan` to the user; returns the text of the turn to run next, if any.
pub(super) async fn review(
    mut editor: LineEditor,
    engine: &Engine,
    sessions_dir: &std::path::Path,
    plan: &str,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<(LineEditor, Option<String>)> {
    writeln!(out, "{MENU}")?;
    loop {
        let (ed, line) = ask(editor, "plan [1-4]> ").await?;
        editor = ed;
        let Some(line) = line else {
            writeln!(
                out,
                "(plan dropped; still in plan mode — /mode default leaves it)"
            )?;
            return Ok((editor, None));
        };
        match choice(&line) {
            Some(Choice::Approve(mode)) => {
                let (text, problem) = approve(engine, sessions_dir, plan, mode);
                if let Some(problem) = problem {
                    writeln!(out, "warning: {problem}")?;
                }
                writeln!(out, "(plan approved; mode: {mode})")?;
                return Ok((editor, Some(text)));
            }
            Some(Choice::KeepPlanning) => {
                let (ed, line) = ask(editor, "feedback> ").await?;
                editor = ed;
                match line.filter(|l| !l.trim().is_empty()) {
                    Some(text) => return Ok((editor, Some(feedback(text.trim())))),
                    None => writeln!(out, "no feedback given\n{MENU}")?,
                }
            }
            Some(Choice::Cancel) => {
                writeln!(
                    out,
                    "(plan dropped; still in plan mode — /mode default leaves it)"
                )?;
                return Ok((editor, None));
            }
            None => writeln!(out, "answer 1, 2, 3 or 4")?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_numbers_or_words_and_anything_else_is_asked_again() {
        assert_eq!(
            choice(" 2 "),
            Some(Choice::Approve(PermissionMode::AcceptEdits))
        );
        assert_eq!(
            choice("yes"),
            Some(Choice::Approve(PermissionMode::Default))
        );
        assert_eq!(choice("keep"), Some(Choice::KeepPlanning));
        assert_eq!(choice("4"), Some(Choice::Cancel));
        assert_eq!(choice("5"), None);
        assert_eq!(choice(""), None);
    }
}
