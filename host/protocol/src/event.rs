//! The one event stream of a run.
//!
//! Every part of the engine — the loop, the gateway, the server pool — reports what it does as an
//! [`Event`]; none of them prints. Subscribers render them (the events file, the terminal, JSONL).
//! Each event travels in an [`Envelope`] carrying `run_id`, `session_id`, a gap-free `seq` and a
//! timestamp, so `events.jsonl` is a replayable trace of the run.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::{Decision, ErrorKind, ToolCall};

/// Receives events. Called synchronously from the emitting task: keep it cheap.
pub type EventSink = Arc<dyn Fn(Event) + Send + Sync>;

/// A sink that drops every event, for callers that only want results.
pub fn ignore_events() -> EventSink {
    Arc::new(|_| {})
}

/// Where the agent loop is within a step ([`Event::State`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopState {
    /// Fitting the conversation to the window (compacting if it must).
    BuildContext,
    /// Waiting for the model's answer to stream.
    CallModel,
    /// Running the turn's tool calls.
    RunTools,
}

/// Why the conversation was compacted ([`Event::Compaction`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// The next request would have filled the window past `compact_at`.
    Threshold,
    /// The provider refused a request as too long.
    Overflow,
    /// The user asked (`/compact`).
    Manual,
}

/// What a compaction did ([`Event::Compaction`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionStage {
    /// Old tool output replaced by one-line notes.
    Elide,
    /// Older turns replaced by a summary the model wrote.
    Summarize,
}

/// How a server asked for input ([`Event::Elicitation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationMode {
    /// A form of typed fields.
    Form,
    /// A URL the person opens (a sign-in, a payment) — nothing comes back through tern.
    Url,
}

/// What an elicitation was answered ([`Event::Elicitation`]): MCP's `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    Accept,
    Decline,
    Cancel,
}

/// Who answered an elicitation ([`Event::Elicitation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnsweredBy {
    /// The person, asked in the REPL (or the editor over ACP).
    User,
    /// `--accept-elicitation-defaults`: the form's declared defaults.
    Defaults,
    /// Nobody to ask in this run: declined.
    Policy,
}

macro_rules! display_as_serialized {
    ($($ty:ty),*) => {$(
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                // The same word as in `events.jsonl`.
                let json = serde_json::to_value(self).map_err(|_| std::fmt::Error)?;
                f.write_str(json.as_str().unwrap_or_default())
            }
        }
    )*};
}
display_as_serialized!(
    LoopState,
    CompactionReason,
    CompactionStage,
    ElicitationMode,
    ElicitationAction,
    AnsweredBy
);

/// What happened. Serialised with `"type": "<snake_case variant>"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The run began: what it was asked, with which model and servers.
    RunStarted {
        goal: String,
        model: String,
        /// `anthropic` or `openai` (`tern_model::Provider::as_str`). A string, not the enum: a
        /// recording from a newer tern may name a provider this one lacks, and replay must say
        /// so by name (`RecordingError::UnknownProvider`) rather than fail to parse the event.
        provider: String,
        servers: Vec<String>,
        cwd: String,
        /// The run that started this one, when it is a sub-agent's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_run_id: Option<String>,
    },
    /// A server finished its handshake and `tools/list`; its tools joined the table.
    ServerReady {
        server: String,
        /// `stdio` or `http`.
        transport: String,
        pid: Option<u32>,
        tools: usize,
        startup_ms: u64,
        /// The MCP revision agreed with the server.
        protocol_version: String,
        server_name: String,
        server_version: String,
    },
    /// A server failed to start, or crashed; `will_restart` says whether supervision tries again.
    ServerFailed {
        server: String,
        reason: String,
        stderr_tail: Vec<String>,
        will_restart: bool,
        #[serde(default)]
        required: bool,
    },
    /// A crashed server is about to be restarted.
    ServerRestarting {
        server: String,
        attempt: usize,
        delay_ms: u64,
    },
    /// A server's tool list was read again (`notifications/tools/list_changed`, or a restart).
    ToolsChanged { server: String, tools: usize },
    /// A tool was left out of the table (invalid schema, held by its pin, too large, …).
    ToolDropped {
        server: String,
        tool: String,
        reason: String,
    },
    /// A log message a server sent (`notifications/message`).
    ServerLog {
        server: String,
        level: String,
        #[serde(default)]
        logger: Option<String>,
        data: Value,
    },
    /// The loop moved to another state.
    State { state: LoopState, step: u32 },
    /// The request about to be sent to the model.
    ModelRequest {
        step: u32,
        messages: usize,
        tools: usize,
        estimated_tokens: u64,
        /// The full provider-neutral request (messages, tools), for replay.
        request: Value,
    },
    /// A piece of streamed assistant text.
    TextDelta { text: String },
    /// A piece of the model's thinking as it streams (Anthropic thinking blocks, a Responses
    /// reasoning summary, `reasoning_content` from compatible servers). For display only: it is
    /// not part of the answer, the transcript or `model_response.text`.
    ThinkingDelta { text: String },
    /// The model finished a turn.
    ModelResponse {
        step: u32,
        stop_reason: String,
        input_tokens: u64,
        output_tokens: u64,
        cache_read_tokens: u64,
        cache_creation_tokens: u64,
        latency_ms: u64,
        request_id: Option<String>,
        text: String,
        tool_calls: usize,
        /// The executable calls of the turn, as the model made them (what a replay re-drives).
        #[serde(default)]
        calls: Vec<ToolCall>,
        /// Calls that could not be run (cut off, malformed), with why.
        #[serde(default)]
        incomplete: Vec<IncompleteCall>,
    },
    /// The model request is being retried.
    ModelRetry {
        attempt: u32,
        reason: String,
        delay_ms: u64,
        discard_partial: bool,
    },
    /// A tool call is about to go through the gateway.
    ToolCallStarted {
        call_id: String,
        tool: String,
        arguments: Value,
    },
    /// The gateway decided whether a call may run (after asking, when it asked).
    PermissionDecided {
        call_id: String,
        tool: String,
        #[serde(default)]
        server: String,
        decision: Decision,
        /// What decided it: `file:line`, `annotation:readOnlyHint`, `mode:yolo`, `user:always`, ….
        rule: String,
        /// Whether the user (or the headless approver) was asked.
        #[serde(default)]
        asked: bool,
        /// Why, in words; for a headless deny, the `--allow` rule that would permit the call.
        #[serde(default)]
        reason: Option<String>,
    },
    /// Progress a server reported for a running call.
    ToolProgress {
        call_id: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// The last lines a running call has printed so far, which its server sent in a progress
    /// notification's `_meta["tern/output_tail"]` (tern-shell's `run`, at most ten a second).
    /// Redacted before any subscriber sees it. Each one replaces the call's previous tail; the
    /// call's `tool_call_finished` ends it. For display only: the model gets the result.
    ToolOutputTail {
        call_id: String,
        /// Oldest first, the unfinished last line included; at most ten, each at most 200
        /// characters (a longer one ends in `…`).
        lines: Vec<String>,
    },
    /// The server runs a call as a task (MCP tasks: SEP-1686 or the 2026-07-28 extension) and
    /// the task's state changed; it keeps the call's `call_id`.
    ToolTask {
        call_id: String,
        task_id: String,
        /// `working`, `input_required`, `completed`, `failed`, `cancelled` — the server's word,
        /// kept as a string: a server of a newer revision may report a status this tern lacks,
        /// and the event still records what it said.
        status: String,
        /// The server's status message.
        message: Option<String>,
    },
    /// The call's command runs in a terminal of the editor that drives tern over ACP (its
    /// server said so in a progress notification's `_meta["tern/terminal"]`): the ACP renderer
    /// embeds the terminal in the call's `tool_call_update`.
    ToolTerminal {
        call_id: String,
        /// The editor's id for it (ACP `terminalId`).
        terminal_id: String,
    },
    /// A tool call ended (exactly one per call the model made).
    ToolCallFinished {
        call_id: String,
        tool: String,
        is_error: bool,
        error_type: Option<ErrorKind>,
        duration_ms: u64,
        /// The first lines of the result.
        summary: String,
        /// The full text given to the model.
        output: String,
        /// For edits: the unified diff.
        diff: Option<String>,
    },
    /// The gateway's audit record of a finished call (also a line of `audit.jsonl`).
    Audit { record: AuditRecord },
    /// The conversation was made smaller to fit the context window.
    Compaction {
        /// Why it ran.
        reason: CompactionReason,
        /// What it did.
        stage: CompactionStage,
        /// Estimated prompt tokens before and after.
        before_tokens: u64,
        after_tokens: u64,
        /// Tool results whose output was elided.
        elided_results: usize,
        /// Messages replaced by the summary.
        summarized_messages: usize,
        /// The summary the model wrote (stage `summarize`), so a replay can serve it again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    /// A server asked the person for input (elicitation), and what it was answered. The values
    /// of an accepted form are recorded only as a digest.
    Elicitation {
        server: String,
        mode: ElicitationMode,
        message: String,
        /// URL mode: where the person was sent.
        url: Option<String>,
        action: ElicitationAction,
        answered_by: AnsweredBy,
        /// The fields an accepted form filled in.
        fields: Vec<String>,
        /// sha256 of the accepted content's JSON.
        content_sha256: Option<String>,
    },
    /// A server's resource was read into the user's message (`@server:uri` in the REPL).
    ResourceAttached {
        server: String,
        uri: String,
        mime_type: Option<String>,
        /// Characters of text attached.
        chars: usize,
    },
    /// The session's todo list changed (a tool result carried `_meta["tern/todo"]` with
    /// `changed: true`): the whole list after the change.
    TodoUpdated {
        todos: Vec<crate::todo::TodoItem>,
        counts: crate::todo::TodoCounts,
    },
    /// In plan mode the model finished planning: a successful `plan__exit` result carried this
    /// plan (markdown). The turn ends here; the REPL asks the user to approve it, a headless
    /// run prints it and exits.
    PlanProposed {
        /// The `plan__exit` call whose result carried it (empty in events of older terns).
        #[serde(default)]
        call_id: String,
        /// The plan, as the model wrote it (markdown).
        plan: String,
    },
    /// A person's message starts a turn (redacted, like the transcript): `tern trace` shows
    /// it, and `tern runs` takes a REPL run's first one as its goal.
    UserMessage { text: String },
    /// The workspace was recorded before a turn, or before one of its shell calls (what
    /// `/rewind` and `tern rewind` go back to).
    CheckpointRecorded {
        /// The session's turn it was taken before (1-based), or the turn of the shell call.
        turn: u64,
        /// The shell call of `turn` it was taken before (1-based; `/rewind TURN.CALL`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<u64>,
        /// The checkpoint's id in the workspace's store.
        checkpoint: String,
        /// Files recorded.
        files: usize,
        /// Nothing had changed since the previous checkpoint, which is reused.
        reused: bool,
        duration_ms: u64,
    },
    /// A hook command ran (`[[hooks.EVENT]]`): what it decided and how it ended. The same facts
    /// go to the audit log as a line of kind `hook`.
    HookRun {
        /// Claude Code's event name (`PreToolUse`, `Stop`, …).
        event: String,
        /// Where the hook is configured (`file:line`).
        source: String,
        command: String,
        /// The tool call it was about (tool events).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// `continue`, `block`, `allow`, `ask`, `deny`, `stop` or `error`.
        decision: String,
        /// Its exit code (none when it timed out, was killed or could not start).
        exit_code: Option<i32>,
        timed_out: bool,
        duration_ms: u64,
        /// The reason or message it gave, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A notice from the engine (an ignored project config, a rule that could not be saved, …).
    Notice { message: String },
    /// `tern replay`: how one re-executed tool call compares with the recording.
    ReplayCompared {
        /// The recorded model turn that made the call.
        step: u32,
        call_id: String,
        tool: String,
        verdict: ReplayVerdict,
        /// What differs, one line each (`output: …`, `is_error: …`), times and ids ignored.
        #[serde(default)]
        differences: Vec<String>,
    },
    /// `tern replay`: the divergence summary, just before `run_finished`.
    ReplaySummary {
        /// The run that was replayed.
        recorded_run_id: String,
        /// Tool calls in the recording.
        calls: usize,
        identical: usize,
        diverged: usize,
        /// Recorded calls the replay did not run, and calls it ran that the recording lacks.
        missing: usize,
        /// Differences of the run as a whole (its outcome, its steps), one line each.
        #[serde(default)]
        differences: Vec<String>,
    },
    /// Something went wrong that the run reports (it may still continue).
    Error { message: String },
    /// The assistant turn ended (after its tools ran, if any).
    TurnEnd { step: u32 },
    /// One user input was handled to its end: what it cost, and how full the context is now.
    TurnFinished {
        status: RunStatus,
        steps: u32,
        input_tokens: u64,
        output_tokens: u64,
        cache_read_tokens: u64,
        cache_creation_tokens: u64,
        /// US dollars, when the model's price is known.
        cost_usd: Option<f64>,
        /// Tokens the conversation occupies after this turn (the last request's prompt and
        /// answer).
        context_tokens: u64,
        /// The model's context window, when known.
        context_window: Option<u64>,
        /// The model the turn's requests went to (`/model` may change it between turns).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The permission mode at the turn's end (`default`, `accept-edits`, `plan`,
        /// `read-only`, `yolo`): Shift-Tab may change it while the turn runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<String>,
    },
    /// The run ended. Always the last event.
    RunFinished {
        status: RunStatus,
        steps: u32,
        duration_ms: u64,
        input_tokens: u64,
        output_tokens: u64,
        cache_read_tokens: u64,
        cache_creation_tokens: u64,
        /// US dollars for the whole run, when the model's price is known.
        #[serde(default)]
        cost_usd: Option<f64>,
        answer: Option<String>,
        error: Option<String>,
    },
}

/// A tool call the model started but that cannot be run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncompleteCall {
    pub id: String,
    pub name: String,
    pub reason: String,
}

/// How a replayed tool call compares with the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayVerdict {
    /// Same result (times, ids, durations and the workspace path ignored).
    Identical,
    /// The result differs.
    Diverged,
    /// Recorded, but the replay never ran it (the run went another way or stopped early).
    NotRun,
    /// Ran in the replay, but the recording has no such call.
    Unrecorded,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model gave a final answer.
    Success,
    /// `max_steps` was reached.
    MaxSteps,
    /// The answer was cut off by the output limit (`max_tokens`), still so after the bounded
    /// continuations: what the run produced is incomplete, never a success.
    Truncated,
    /// An unrecoverable error.
    Error,
    /// Ctrl-C.
    Cancelled,
}

impl RunStatus {
    /// The process exit code for this status (documented in the README).
    pub fn exit_code(self) -> i32 {
        match self {
            RunStatus::Success => 0,
            RunStatus::MaxSteps | RunStatus::Truncated | RunStatus::Error => 1,
            RunStatus::Cancelled => 130,
        }
    }

    /// `success`, `max_steps`, …
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "success",
            RunStatus::MaxSteps => "max_steps",
            RunStatus::Truncated => "truncated",
            RunStatus::Error => "error",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

/// One line of `audit.jsonl`, and the payload of [`Event::Audit`].
///
/// Arguments and results are recorded as sha256 digests, never in clear.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    pub run_id: String,
    pub session_id: String,
    pub call_id: String,
    /// Model-facing name, as called (also for unknown tools).
    pub tool: String,
    /// Empty when the tool was unknown.
    pub server: String,
    /// sha256 of the arguments' JSON text.
    pub args_sha256: String,
    /// None when the call ended before the permission stage.
    pub decision: Option<Decision>,
    /// What decided it: `file:line`, `annotation:readOnlyHint`, `mode:yolo`, `user:always`, ….
    pub rule: Option<String>,
    pub duration_ms: u64,
    /// sha256 and length in bytes of the result text as delivered in full (the spill file's
    /// content when there is one), so the two can be checked against each other.
    pub result_sha256: String,
    pub result_bytes: usize,
    pub is_error: bool,
    pub error_type: Option<ErrorKind>,
    pub truncated: bool,
}

/// An event with the ids that thread a run together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub run_id: String,
    pub session_id: String,
    pub seq: u64,
    /// RFC 3339, UTC, milliseconds.
    pub ts: String,
    #[serde(flatten)]
    pub event: Event,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_round_trip_with_a_type_tag() {
        let e = Envelope {
            run_id: "r1".into(),
            session_id: "s1".into(),
            seq: 3,
            ts: "2026-12-01T00:00:00.000Z".into(),
            event: Event::PermissionDecided {
                call_id: "c".into(),
                tool: "fs__read_file".into(),
                server: "fs".into(),
                decision: Decision::Deny,
                rule: "mode:read-only".into(),
                asked: false,
                reason: None,
            },
        };
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["type"], "permission_decided");
        assert_eq!(json["decision"], "deny");
        assert_eq!(json["run_id"], "r1");
        let back: Envelope = serde_json::from_value(json).unwrap();
        assert_eq!(back, e);
    }
}
