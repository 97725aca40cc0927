//! The editor-terminal bridge's wire (issue 21, item 4): what `tern-shell --editor-socket PATH`
//! asks the `tern acp` process that started its session, and what it answers.
//!
//! When an ACP client advertises `clientCapabilities.terminal`, `shell__run` still goes to
//! tern-shell through the gateway (rules, the editor's permission answer, the checkpoint taken
//! before a command, audit). tern-shell then does not spawn the command itself: it writes the
//! exact spawn it would have made (command, cwd, cleared environment, sandbox policy, hidden
//! paths, timeout, output cap) to a private plan file and asks the editor, through this bridge,
//! to run *tern-shell's own runner* on that file in one of its terminals (`terminal/create`,
//! agentclientprotocol.com/protocol/terminals). The runner re-applies the sandbox and runs the
//! command exactly as tern-shell would have, so the editor only shows it.
//!
//! One connection per command. tern-shell sends [`TerminalRequest::Run`]; the bridge answers
//! [`TerminalReply::Created`] (or [`TerminalReply::Error`]) and later [`TerminalReply::Exited`].
//! In between, tern-shell may send [`TerminalRequest::Kill`] (timeout or cancellation); closing
//! the connection early means the same. Every message is one JSON line. The socket lives in a
//! private directory of the `tern acp` process (0700, socket 0600), which answers only peers of
//! its own user.

use serde::{Deserialize, Serialize};

/// A message from the shell server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum TerminalRequest {
    /// Start `command args…` in a new terminal of the editor (the first message).
    Run {
        /// An absolute path: tern-shell's own executable.
        command: String,
        args: Vec<String>,
        /// Absolute; the command's working directory.
        cwd: String,
        /// Bytes of output the editor keeps (ACP `outputByteLimit`): the server's output cap.
        output_byte_limit: u64,
    },
    /// Stop what runs (ACP `terminal/kill`); the exit is still reported.
    Kill,
}

/// A message from the bridge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalReply {
    /// The editor started the command in the terminal with this id.
    Created { terminal_id: String },
    /// The command ended (ACP `terminal/wait_for_exit`, then `terminal/output`).
    Exited {
        exit_code: Option<u32>,
        /// The signal's name as the editor gives it (`SIGTERM`).
        signal: Option<String>,
        /// The output the editor kept (its last `output_byte_limit` bytes).
        output: String,
        /// The editor dropped the beginning of the output.
        truncated: bool,
    },
    /// The editor refused, or could not be asked: why, for the model.
    Error(String),
}

/// Bytes one line may have: an `Exited` carries at most the output limit the server asked for
/// (JSON-escaped), and tern-shell's caps stay far below this.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_is_plain_json() {
        let run = TerminalRequest::Run {
            command: "/bin/tern-shell".into(),
            args: vec!["--run-plan".into(), "/t/plan.json".into()],
            cwd: "/w".into(),
            output_byte_limit: 30_000,
        };
        assert_eq!(
            serde_json::to_string(&run).unwrap(),
            r#"{"op":"run","command":"/bin/tern-shell","args":["--run-plan","/t/plan.json"],"cwd":"/w","output_byte_limit":30000}"#
        );
        assert_eq!(
            serde_json::from_str::<TerminalRequest>(r#"{"op":"kill"}"#).unwrap(),
            TerminalRequest::Kill
        );
        assert_eq!(
            serde_json::to_string(&TerminalReply::Created {
                terminal_id: "t1".into()
            })
            .unwrap(),
            r#"{"created":{"terminal_id":"t1"}}"#
        );
        let exited: TerminalReply = serde_json::from_str(
            r#"{"exited":{"exit_code":null,"signal":"SIGKILL","output":"x","truncated":false}}"#,
        )
        .unwrap();
        assert!(matches!(exited, TerminalReply::Exited { signal: Some(s), .. } if s == "SIGKILL"));
    }
}
