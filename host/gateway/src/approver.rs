//! The seam between the permission stage and whoever answers "may this run?".
//!
//! The REPL (issue 6) implements [`Approver`] with an inline prompt; `tern run` and JSONL output
//! use [`HeadlessApprover`], which says no and tells model and user which `--allow` rule would
//! have said yes.

use std::path::PathBuf;

use async_trait::async_trait;
use serde::Serialize;

/// A path argument as the permission stage resolved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedPath {
    /// The argument name.
    pub arg: String,
    /// The normalized absolute path.
    pub path: PathBuf,
}

/// A shell command as the permission stage parsed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParsedCommand {
    /// The command line as given, control characters escaped.
    pub line: String,
    /// Each simple command it runs, normalized, control characters escaped.
    pub commands: Vec<String>,
    /// Constructs that keep rules from allowing it (substitutions, exec flags, …).
    pub risks: Vec<String>,
}

/// What the user is asked about.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalRequest {
    pub call_id: String,
    /// The server's configured name.
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    /// The model-facing name, `server__tool`.
    pub name: String,
    /// The full arguments as pretty JSON, redacted, control characters escaped (a terminal
    /// escape sequence in an argument must not repaint the prompt).
    pub arguments: String,
    /// Path arguments, resolved.
    pub paths: Vec<ResolvedPath>,
    /// The command, parsed, for tools with a command argument.
    pub command: Option<ParsedCommand>,
    /// Why it is asked: the ask rule, the risks, or "no rule allows it".
    pub reasons: Vec<String>,
    /// The exact rules "always" would add to the user or project config. Empty when no rule can
    /// allow the call (a risky command): then "always" counts as "once".
    pub always_rules: Vec<String>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run it this time.
    Once,
    /// Run it, and add [`ApprovalRequest::always_rules`] to the user config (every project).
    Always,
    /// Run it, and add [`ApprovalRequest::always_rules`] to this project's `.tern/config.toml`.
    AlwaysInProject,
    /// Do not run it; the reason goes back to the model.
    Deny { reason: Option<String> },
}

/// Answers approval requests.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decides one request. The gateway cancels the future on Ctrl-C.
    async fn ask(&self, request: ApprovalRequest) -> Approval;

    /// Who answered, for the audit: `user:once`, `headless:deny`, ….
    fn name(&self) -> &'static str {
        "user"
    }

    /// Whether a question reaches someone who may take a while to answer: the `Notification`
    /// hooks ("tern needs your permission to use …") run only then, never for an answer given
    /// on the spot by nobody (headless, a replay).
    fn asks_someone(&self) -> bool {
        true
    }
}

/// Denies every request, naming the rule that would allow it: for `tern run`, no TTY, or JSONL
/// output, where nobody can be asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeadlessApprover;

#[async_trait]
impl Approver for HeadlessApprover {
    async fn ask(&self, request: ApprovalRequest) -> Approval {
        Approval::Deny {
            reason: Some(headless_hint(&request)),
        }
    }

    fn name(&self) -> &'static str {
        "headless"
    }

    fn asks_someone(&self) -> bool {
        false
    }
}

/// "needs approval, and nobody can approve headless; `--allow '…'` would permit it". Worded for
/// a person at a terminal too (`tern run` there still asks nobody): what to pass, not that a
/// terminal is missing.
pub fn headless_hint(request: &ApprovalRequest) -> String {
    let why = request.reasons.join("; ");
    if request.always_rules.is_empty() {
        return format!(
            "`{}` needs approval ({why}) and a headless run asks nobody; no --allow rule can \
             permit this call: run it in the REPL (`tern`), which asks, or with --mode yolo",
            request.name
        );
    }
    let flags: Vec<String> = request
        .always_rules
        .iter()
        .map(|r| format!("--allow {}", shell_quote(r)))
        .collect();
    format!(
        "`{}` needs approval ({why}) and a headless run asks nobody; to permit it, run tern \
         with {} (or in the REPL, `tern`, to be asked)",
        request.name,
        flags.join(" ")
    )
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `s` with control and bidirectional-override characters shown as escapes.
pub fn escape_control(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control()
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c) =>
            {
                out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(rules: &[&str]) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            server: "shell".into(),
            tool: "run".into(),
            name: "shell__run".into(),
            arguments: "{}".into(),
            paths: vec![],
            command: None,
            reasons: vec!["no rule allows it".into()],
            always_rules: rules.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[tokio::test]
    async fn headless_denies_and_names_the_allow_rule() {
        let a = HeadlessApprover
            .ask(request(&["shell__run(cargo build)"]))
            .await;
        let Approval::Deny { reason: Some(r) } = a else {
            panic!("{a:?}")
        };
        assert!(r.contains("--allow 'shell__run(cargo build)'"), "{r}");
        let a = HeadlessApprover.ask(request(&[])).await;
        let Approval::Deny { reason: Some(r) } = a else {
            panic!("{a:?}")
        };
        assert!(r.contains("no --allow rule"), "{r}");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            escape_control("a\u{1b}[2Jb\nc\u{202e}"),
            "a\\u{001b}[2Jb\\nc\\u{202e}"
        );
    }
}
