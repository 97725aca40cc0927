//! Every `tern/…` key tern puts in MCP `_meta` objects (and error `data`), with its payload type:
//! the one table the host and the built-in tool servers both read, so a key cannot drift between
//! the side that writes it and the side that reads it.
//!
//! MCP reserves `_meta` for such extensions; keys are prefixed `tern/` so they never collide with
//! another implementation's. Every payload ignores unknown fields, so a newer host can add to one
//! without breaking an older server.

use serde::{Deserialize, Serialize};

use crate::Usage;

/// `tools/call` request `_meta`: the host's per-call limits ([`Limits`]). A server with limits of
/// its own applies the smaller, so the host never cuts what the server already paged.
pub const LIMITS: &str = "tern/limits";

/// `tools/call` request `_meta`: the globs of paths the host's rules deny (`["**/.env", …]`); a
/// file server refuses or skips what they match, through symlinks and hard links.
pub const DENY_PATHS: &str = "tern/deny_paths";

/// Tool definition `_meta`: the argument that holds a shell command (a string), which the
/// permission rules parse as shell.
pub const COMMAND_ARG: &str = "tern/command_arg";

/// Tool definition `_meta`: `true` when the tool writes files at its path arguments (what
/// `accept-edits` allows).
pub const EDITS_FILES: &str = "tern/edits_files";

/// `tools/call` result `_meta`: model tokens the call spent ([`ReportedUsage`]: a sub-agent's),
/// added to the calling run's totals.
pub const USAGE: &str = "tern/usage";

/// `tools/call` result `_meta`: the session's todo list after the call
/// ([`crate::todo::TodoList`]), which the host shows and keeps across compaction.
pub const TODO: &str = "tern/todo";

/// `tools/call` result `_meta` of the skills server's `load`: `{"name", "directory",
/// "allowed_tools"}` of the skill just loaded (`[skills] honor_allowed_tools` narrows the rest
/// of the turn to its `allowed_tools`).
pub const SKILL: &str = "tern/skill";

/// `notifications/progress` `_meta`: the editor terminal a call's command runs in
/// ([`TerminalShown`]), sent once by tern-shell started with `--editor-socket` when the editor
/// (an ACP client) has created it; `tern acp` embeds it in the call's `tool_call_update`.
pub const TERMINAL: &str = "tern/terminal";

/// `notifications/progress` `_meta`: the last lines a running call has printed
/// ([`OutputTail`]), so the person sees a long command work (tern-shell's `run`). A server sends
/// it only when the call's request `_meta` carries the same key ([`TailRequest`]): a client that
/// did not ask gets the progress notifications it always got.
pub const OUTPUT_TAIL: &str = "tern/output_tail";

/// `tools/call` result `_meta` of a failed `fetch` (tern-web): `{"url", "error": KIND,
/// "status"}` for programs (KIND is `invalid_url`, `blocked_address`, `http_status`, …); the
/// result's text says the same in words.
pub const FETCH_ERROR: &str = "tern/fetch_error";

/// JSON-RPC error `data`: marks an error made by tern's own client (a reply too large, a server
/// gone), not one the server sent.
pub const LOCAL: &str = "tern/local";

/// Where a key travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// A `tools/call` request's `params._meta`.
    Request,
    /// A `tools/call` result's `_meta`.
    Result,
    /// A tool definition's `_meta` in `tools/list`.
    ToolDefinition,
    /// A JSON-RPC error's `data`.
    ErrorData,
    /// A `notifications/progress` params' `_meta` (`tern/output_tail` only when asked for in the
    /// request's `_meta`).
    Progress,
}

/// Every key, where it travels and what it says: what the README's table and its test read.
pub const KEYS: &[(&str, Carrier, &str)] = &[
    (
        LIMITS,
        Carrier::Request,
        "the host's timeout and output cap for this call",
    ),
    (DENY_PATHS, Carrier::Request, "path globs the host denies"),
    (
        COMMAND_ARG,
        Carrier::ToolDefinition,
        "the argument holding a shell command",
    ),
    (
        EDITS_FILES,
        Carrier::ToolDefinition,
        "the tool writes files at its path arguments",
    ),
    (
        USAGE,
        Carrier::Result,
        "model tokens (and cost) the call spent",
    ),
    (
        TODO,
        Carrier::Result,
        "the todo list after the call (and whether it changed)",
    ),
    (
        SKILL,
        Carrier::Result,
        "the Agent Skill a `load` call loaded, with its allowed-tools",
    ),
    (
        TERMINAL,
        Carrier::Progress,
        "the editor terminal (ACP) a running call's command is shown in",
    ),
    (
        OUTPUT_TAIL,
        Carrier::Progress,
        "the last lines of a running call's output (asked for with the same key in the call's \
         `_meta`)",
    ),
    (
        FETCH_ERROR,
        Carrier::Result,
        "why a fetch failed, as a kind and HTTP status",
    ),
    (
        LOCAL,
        Carrier::ErrorData,
        "an error made by tern's client, not the server",
    ),
];

/// The payload of [`LIMITS`]; both fields optional.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// The host gives up on the call after this many milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The host shows the model at most this many characters of the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_chars: Option<u64>,
}

/// The payload of [`TERMINAL`]: the id the editor gave the terminal (ACP `terminalId`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalShown {
    pub terminal_id: String,
}

impl TerminalShown {
    /// The terminal named in a progress notification's `_meta` object; `None` when absent or
    /// malformed.
    pub fn from_progress_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        serde_json::from_value(meta.get(TERMINAL)?.clone()).ok()
    }
}

/// The payload of [`OUTPUT_TAIL`] in a `tools/call` request's `_meta`: the host shows a live
/// tail of the call's output and wants at most this many lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailRequest {
    /// Lines wanted (a server sends at most [`OutputTail::MAX_LINES`]).
    pub lines: usize,
}

/// The payload of [`OUTPUT_TAIL`] in a progress notification's `_meta`: the last lines of the
/// call's output so far, the unfinished last line included. Each notification replaces the
/// previous one's lines.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputTail {
    /// Oldest first; at most [`OutputTail::MAX_LINES`], each at most
    /// [`OutputTail::MAX_LINE_CHARS`] characters (a longer one is cut and ends in `…`).
    pub lines: Vec<String>,
}

impl OutputTail {
    /// Most lines a notification carries.
    pub const MAX_LINES: usize = 10;
    /// Most characters of one line; the rest is cut and marked with [`OutputTail::CUT`].
    pub const MAX_LINE_CHARS: usize = 200;
    /// Ends a line that was cut.
    pub const CUT: char = '…';

    /// The tail in a progress notification's `_meta` object, bounded to the limits above
    /// whatever the server sent (the last lines kept, long ones cut); `None` when absent or
    /// malformed.
    pub fn from_progress_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        let tail: Self = serde_json::from_value(meta.get(OUTPUT_TAIL)?.clone()).ok()?;
        let skip = tail.lines.len().saturating_sub(Self::MAX_LINES);
        Some(Self {
            lines: tail
                .lines
                .into_iter()
                .skip(skip)
                .map(|l| cut_line(&l))
                .collect(),
        })
    }
}

/// `line` cut to [`OutputTail::MAX_LINE_CHARS`] characters, the cut marked with
/// [`OutputTail::CUT`] (which counts as one of them).
pub fn cut_line(line: &str) -> String {
    if line.chars().count() <= OutputTail::MAX_LINE_CHARS {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(OutputTail::MAX_LINE_CHARS - 1).collect();
    cut.push(OutputTail::CUT);
    cut
}

/// The payload of [`USAGE`]: what one tool call reports it spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportedUsage {
    /// Uncached prompt tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache.
    #[serde(default)]
    pub cache_creation_tokens: u64,
    /// US dollars, when the server could price the tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl ReportedUsage {
    /// The usage in a result's `_meta` object, when it has a well-formed one.
    pub fn from_result_meta(meta: Option<&serde_json::Value>) -> Option<Self> {
        let value = meta?.get(USAGE)?;
        serde_json::from_value(value.clone()).ok()
    }

    /// `usage` and its cost, as reported.
    pub fn new(usage: &Usage, cost_usd: Option<f64>) -> Self {
        Self {
            input_tokens: usage.input,
            output_tokens: usage.output,
            cache_read_tokens: usage.cache_read,
            cache_creation_tokens: usage.cache_creation,
            cost_usd,
        }
    }

    /// As tern's [`Usage`].
    pub fn usage(&self) -> Usage {
        Usage {
            input: self.input_tokens,
            output: self.output_tokens,
            cache_read: self.cache_read_tokens,
            cache_creation: self.cache_creation_tokens,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ACP (`tern acp`): the `tern/…` keys tern puts in the `_meta` of what it sends an editor over
// the Agent Client Protocol (not MCP: these travel in `session/update` and
// `session/request_permission`, so they are not in [`KEYS`]). ACP, like MCP, reserves `_meta`
// for such extensions; an editor that does not know a key ignores it.

/// ACP `tool_call` `_meta`: the tool's tern name (`server__tool`), which the title may not show.
pub const ACP_TOOL: &str = "tern/tool";

/// ACP `tool_call_update` `_meta`: a running call's progress message (MCP
/// `notifications/progress`), which ACP has no field for.
pub const ACP_PROGRESS: &str = "tern/progress";

/// ACP `tool_call_update` `_meta`: an MCP task the call became (`{"taskId", "status",
/// "message"}`).
pub const ACP_TASK: &str = "tern/task";

/// ACP `agent_message_chunk` `_meta`: the plan (markdown) a plan-mode turn ended with
/// (`plan__exit`); the chunk's text shows the same plan.
pub const ACP_PLAN: &str = "tern/plan";

/// ACP `agent_message_chunk` `_meta`: `true` when the chunk is one of tern's notices, not the
/// model's words.
pub const ACP_NOTICE: &str = "tern/notice";

/// ACP `PermissionOption` `_meta`: where an "allow always" option saves its rule, `"project"`
/// (the project's `.tern/config.toml`) or `"user"` (`$TERN_HOME/config.toml`).
pub const ACP_SCOPE: &str = "tern/scope";

/// ACP `session/request_permission` `toolCall._meta`: why the gateway asks (`{"reasons",
/// "alwaysRules", "commands", "risks"}`).
pub const ACP_PERMISSION: &str = "tern/permission";

/// Every ACP `_meta` key above, with where it travels.
pub const ACP_KEYS: &[(&str, &str)] = &[
    (ACP_TOOL, "tool_call"),
    (ACP_PROGRESS, "tool_call_update"),
    (ACP_TASK, "tool_call_update"),
    (ACP_PLAN, "agent_message_chunk"),
    (ACP_NOTICE, "agent_message_chunk"),
    (ACP_SCOPE, "session/request_permission options"),
    (ACP_PERMISSION, "session/request_permission toolCall"),
];

#[cfg(test)]
mod acp_tests {
    use super::*;

    #[test]
    fn acp_keys_are_tern_prefixed_unique_and_apart_from_the_mcp_ones() {
        let mut seen = std::collections::BTreeSet::new();
        for (key, _) in ACP_KEYS {
            assert!(key.starts_with("tern/"), "{key}");
            assert!(seen.insert(*key), "{key} listed twice");
            assert!(
                !KEYS.iter().any(|(k, ..)| k == key),
                "{key} is an MCP key too"
            );
        }
        assert_eq!(seen.len(), 7);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_listed_once_with_the_tern_prefix() {
        let mut seen = std::collections::BTreeSet::new();
        for (key, _, what) in KEYS {
            assert!(key.starts_with("tern/"), "{key}");
            assert!(!what.is_empty());
            assert!(seen.insert(*key), "{key} listed twice");
        }
        assert_eq!(seen.len(), 11);
    }

    #[test]
    fn an_output_tail_is_bounded_whatever_the_server_sent() {
        let long = "x".repeat(500);
        let lines: Vec<String> = (0..30).map(|i| format!("line {i}")).chain([long]).collect();
        let meta = serde_json::json!({ OUTPUT_TAIL: { "lines": lines, "extra": 1 } });
        let tail = OutputTail::from_progress_meta(meta.as_object().unwrap()).unwrap();
        assert_eq!(tail.lines.len(), OutputTail::MAX_LINES);
        assert_eq!(tail.lines[0], "line 21");
        let last = tail.lines.last().unwrap();
        assert_eq!(last.chars().count(), OutputTail::MAX_LINE_CHARS);
        assert!(last.ends_with(OutputTail::CUT));
        let absent = serde_json::json!({ "other": 1 });
        assert_eq!(
            OutputTail::from_progress_meta(absent.as_object().unwrap()),
            None
        );
        let malformed = serde_json::json!({ OUTPUT_TAIL: "no" });
        assert_eq!(
            OutputTail::from_progress_meta(malformed.as_object().unwrap()),
            None
        );
    }

    #[test]
    fn payloads_ignore_unknown_fields_and_omit_unset_limits() {
        let limits: Limits =
            serde_json::from_str(r#"{"timeout_ms": 5, "later": true}"#).unwrap_or_default();
        assert_eq!(limits.timeout_ms, Some(5));
        assert_eq!(
            serde_json::to_string(&Limits::default()).unwrap_or_default(),
            "{}"
        );
    }
}
