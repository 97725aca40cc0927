//! The REPL's approver: asks on the terminal whether a tool call may run.
//!
//! The question pauses the spinner (which would otherwise draw over it) and says what each
//! answer does; everything shown from the call is sanitised (the gateway escapes the arguments).

use std::sync::Arc;

use async_trait::async_trait;
use tern_gateway::{Approval, ApprovalRequest, Approver};

use crate::render::{Screen, sanitize};

/// Asks the user, on the terminal, whether a tool call may run.
pub(super) struct TerminalApprover {
    screen: Arc<Screen>,
    /// One question at a time when read-only calls run concurrently (shared with the
    /// elicitor: a server's question waits for an approval and the other way round).
    lock: Arc<tokio::sync::Mutex<()>>,
    color: bool,
}

impl TerminalApprover {
    pub(super) fn new(screen: Arc<Screen>, lock: Arc<tokio::sync::Mutex<()>>, color: bool) -> Self {
        Self {
            screen,
            lock,
            color,
        }
    }

    fn question(&self, request: &ApprovalRequest) -> String {
        let bold = |s: &str| {
            if self.color {
                format!("\x1b[1m{s}\x1b[0m")
            } else {
                s.to_string()
            }
        };
        let mut text = format!(
            "\n{} wants to run `{}` ({})\n  arguments: {}\n",
            bold(&sanitize(&request.server)),
            sanitize(&request.tool),
            sanitize(&request.reasons.join("; ")),
            request.arguments
        );
        for p in &request.paths {
            text.push_str(&format!(
                "  {}: {}\n",
                p.arg,
                sanitize(&p.path.display().to_string())
            ));
        }
        if let Some(c) = &request.command {
            text.push_str(&format!("  commands: {}\n", c.commands.join(" | ")));
            if !c.risks.is_empty() {
                text.push_str(&format!("  risks: {}\n", c.risks.join("; ")));
            }
        }
        text.push_str(&match request.always_rules.first() {
            Some(rule) => format!(
                "{} [y]es / [a]lways (adds `{rule}`) / [n]o, tell the model why: ",
                bold("Allow?")
            ),
            None => format!("{} [y]es / [n]o, tell the model why: ", bold("Allow?")),
        });
        text
    }
}

/// The answer typed at the question: `y`, `a`, or `n` with an optional reason (anything else is
/// a no, and its text the reason).
pub(super) fn parse_answer(line: &str, can_always: bool) -> Approval {
    let line = line.trim();
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" => Approval::Once,
        "a" | "always" if can_always => Approval::Always,
        "n" | "no" | "" => Approval::Deny {
            reason: (!rest.trim().is_empty()).then(|| rest.trim().to_string()),
        },
        _ => Approval::Deny {
            reason: Some(line.to_string()),
        },
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, request: ApprovalRequest) -> Approval {
        let _one_at_a_time = self.lock.lock().await;
        let _paused = self.screen.pause();
        self.screen.ask(&self.question(&request));
        let answer = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await;
        let line = match answer {
            Ok(Ok(line)) => line,
            _ => String::new(),
        };
        parse_answer(&line, !request.always_rules.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_and_reasons() {
        assert_eq!(parse_answer("y\n", true), Approval::Once);
        assert_eq!(parse_answer("Yes", false), Approval::Once);
        assert_eq!(parse_answer("a", true), Approval::Always);
        assert_eq!(
            parse_answer("a", false),
            Approval::Deny {
                reason: Some("a".into())
            },
            "no always rule: `a` is not a yes"
        );
        assert_eq!(
            parse_answer("n use the test script instead", true),
            Approval::Deny {
                reason: Some("use the test script instead".into())
            }
        );
        assert_eq!(parse_answer("", true), Approval::Deny { reason: None });
        assert_eq!(
            parse_answer("please don't", true),
            Approval::Deny {
                reason: Some("please don't".into())
            }
        );
    }
}
