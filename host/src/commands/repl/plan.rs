//! Plan mode in the REPL: when a turn ends with a proposed plan (`plan_proposed`, already drawn
//! by the renderer), the user approves it (switching the gateway to `default` or
//! `accept-edits`), sends feedback to keep planning, or cancels.
//!
//! On approval the plan is saved beside the session's transcript
//! (`$TERN_HOME/sessions/<id>.plan.md`), its list items seed the todo list (an audited
//! `todo__write` through the gateway: [`crate::agent::plan_todo`]), and the next turn starts at
//! once with the approved plan and the instruction to keep that list up to date. A plan with no
//! list items seeds nothing; the model is then asked to record the steps itself.

use std::sync::{Arc, Mutex};

use tern_config::PermissionMode;
use tern_protocol::{Envelope, Event};

use crate::agent::{Engine, Subscriber};

/// Keeps the plan the last turn proposed, for the REPL to put to the user after the turn.
pub(super) struct PlanCatcher(pub Arc<Mutex<Option<String>>>);

impl Subscriber for PlanCatcher {
    fn on_event(&mut self, e: &Envelope) {
        if let Event::PlanProposed { plan, .. } = &e.event
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

/// What the user wants after reading the plan (nothing: the plan is dropped).
pub(super) enum Answer {
    /// Approved, switching to this mode: [`next_turn`] does it.
    Approve(PermissionMode),
    /// The next turn's text: the feedback for more planning.
    Feedback(String),
}

/// Puts the proposed plan (already on screen) to the user.
pub(super) async fn review(
    mut editor: LineEditor,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<(LineEditor, Option<Answer>)> {
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
            Some(Choice::Approve(mode)) => return Ok((editor, Some(Answer::Approve(mode)))),
            Some(Choice::KeepPlanning) => {
                let (ed, line) = ask(editor, "feedback> ").await?;
                editor = ed;
                match line.filter(|l| !l.trim().is_empty()) {
                    Some(text) => {
                        return Ok((editor, Some(Answer::Feedback(feedback(text.trim())))));
                    }
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

/// The text of the turn that follows `answer`: the feedback, or (approving) the approved plan
/// after the mode is switched and [`Engine::keep_approved_plan`] has saved the plan and seeded
/// the todo list. Runs after the question is off screen, so the seeded checklist is drawn as
/// ordinary output.
pub(super) async fn next_turn(
    engine: &Engine,
    plan: &str,
    answer: Answer,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<String> {
    match answer {
        Answer::Feedback(text) => Ok(text),
        Answer::Approve(mode) => {
            writeln!(out, "(plan approved; mode: {mode})")?;
            out.flush()?;
            engine.gateway().set_mode(mode);
            let (text, problems) = engine.keep_approved_plan(plan, mode).await;
            for problem in problems {
                writeln!(out, "warning: {}", crate::render::sanitize(&problem))?;
            }
            Ok(text)
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
