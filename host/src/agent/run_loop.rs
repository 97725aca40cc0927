//! build context → call model → run the requested tools → feed results back →
//! repeat, until a final answer, `max_steps`, an error or Ctrl-C.

use std::{sync::Arc, time::Instant};

use futures::StreamExt;
use serde_json::Value;
use tern_model::{
    AssistantContent, Message, ModelAdapter, ModelError, ModelEvent, ModelRequest, StopReason,
    ToolCall, ToolChoice, ToolResult, Usage, UserContent,
};
use tokio_util::sync::CancellationToken;

use super::executor::{ExecOutcome, ToolExecutor};
use crate::events::{AgentEvent, EventBus, RunStatus};

/// How many identical calls in a row are allowed before the guard answers instead.
const REPEAT_LIMIT: usize = 3;

/// Fixed settings of an agent.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub system: Vec<String>,
    pub max_steps: u32,
    pub max_tokens: u32,
}

/// The loop and what it talks to.
pub struct Agent {
    pub model: Arc<dyn ModelAdapter>,
    pub tools: Arc<dyn ToolExecutor>,
    pub bus: EventBus,
    pub settings: AgentSettings,
}

/// How one user turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub status: RunStatus,
    pub steps: u32,
    pub usage: Usage,
    pub answer: Option<String>,
    pub error: Option<String>,
}

/// What one model call produced.
struct ModelTurn {
    text: String,
    calls: Vec<ToolCall>,
    incomplete: Vec<(String, String, String)>,
    stop: StopReason,
}

impl Agent {
    /// Runs one user input to completion, appending everything to `transcript`.
    pub async fn run_turn(
        &self,
        transcript: &mut Vec<Message>,
        input: &str,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        transcript.push(Message::user_text(input));
        let mut out = TurnOutcome {
            status: RunStatus::Success,
            steps: 0,
            usage: Usage::default(),
            answer: None,
            error: None,
        };
        let mut history: Vec<String> = Vec::new();
        loop {
            if cancel.is_cancelled() {
                out.status = RunStatus::Cancelled;
                return out;
            }
            if out.steps >= self.settings.max_steps {
                out.status = RunStatus::MaxSteps;
                out.error = Some(format!(
                    "stopped after max_steps = {} model turns",
                    self.settings.max_steps
                ));
                return out;
            }
            out.steps += 1;
            let step = out.steps;
            self.state("build_context", step);
            let tools = self.tools.tools();
            let request = ModelRequest {
                system: self.settings.system.clone(),
                messages: transcript.clone(),
                tools,
                max_tokens: self.settings.max_tokens,
                tool_choice: ToolChoice::Auto,
                cache: true,
            };
            let request_json = serde_json::to_value(&request).unwrap_or(Value::Null);
            self.bus.emit(AgentEvent::ModelRequest {
                step,
                messages: request.messages.len(),
                tools: request.tools.len(),
                estimated_tokens: (request_json.to_string().len() as u64).div_ceil(4),
                request: request_json,
            });
            self.state("call_model", step);
            let started = Instant::now();
            let turn = match self.call_model(&request, cancel, &mut out.usage).await {
                Ok((turn, request_id, usage)) => {
                    self.bus.emit(AgentEvent::ModelResponse {
                        step,
                        stop_reason: stop_name(&turn.stop),
                        input_tokens: usage.input,
                        output_tokens: usage.output,
                        cache_read_tokens: usage.cache_read,
                        cache_creation_tokens: usage.cache_creation,
                        latency_ms: started.elapsed().as_millis() as u64,
                        request_id,
                        text: turn.text.clone(),
                        tool_calls: turn.calls.len() + turn.incomplete.len(),
                    });
                    turn
                }
                Err(ModelError::Cancelled) => {
                    out.status = RunStatus::Cancelled;
                    return out;
                }
                Err(e) => {
                    let message = describe_model_error(&e);
                    self.bus.emit(AgentEvent::Error {
                        message: message.clone(),
                    });
                    out.status = RunStatus::Error;
                    out.error = Some(message);
                    return out;
                }
            };

            let mut assistant = Vec::new();
            if !turn.text.trim().is_empty() {
                assistant.push(AssistantContent::Text {
                    text: turn.text.clone(),
                });
            }
            for call in &turn.calls {
                assistant.push(AssistantContent::ToolCall(call.clone()));
            }
            if !assistant.is_empty() {
                transcript.push(Message::Assistant { content: assistant });
            }

            if turn.calls.is_empty() && turn.incomplete.is_empty() {
                out.answer = Some(turn.text);
                self.bus.emit(AgentEvent::TurnEnd { step });
                return out;
            }

            self.state("run_tools", step);
            let results = self.run_tools(&turn.calls, &mut history, cancel).await;
            let mut content: Vec<UserContent> = results
                .into_iter()
                .map(|(id, r)| {
                    UserContent::ToolResult(ToolResult {
                        tool_call_id: id,
                        content: r.content,
                        is_error: r.is_error,
                    })
                })
                .collect();
            for (id, name, reason) in &turn.incomplete {
                // Not executable (e.g. cut by max_tokens): no tool_use went into the
                // transcript, so the model is told in text after the results.
                content.push(UserContent::Text {
                    text: format!(
                        "Your call to `{name}` (id {id}) was not run: {reason}. \
                         If you still need it, call it again with complete arguments."
                    ),
                });
            }
            transcript.push(Message::User { content });
            self.bus.emit(AgentEvent::TurnEnd { step });
            if cancel.is_cancelled() {
                out.status = RunStatus::Cancelled;
                return out;
            }
        }
    }

    fn state(&self, state: &str, step: u32) {
        self.bus.emit(AgentEvent::State {
            state: state.to_string(),
            step,
        });
    }

    /// Streams one model turn. Text deltas go to the bus as they arrive; a retry
    /// that discards partial output resets the turn; tool calls are only taken
    /// from a stream that completed.
    async fn call_model(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
        total: &mut Usage,
    ) -> Result<(ModelTurn, Option<String>, Usage), ModelError> {
        let mut stream = self.model.stream(request, cancel.child_token()).await?;
        let mut turn = ModelTurn {
            text: String::new(),
            calls: Vec::new(),
            incomplete: Vec::new(),
            stop: StopReason::EndTurn,
        };
        let mut usage = Usage::default();
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            };
            let Some(event) = next else {
                return Err(ModelError::MalformedStream {
                    provider: "model",
                    message: "the model stream ended without completing".to_string(),
                    request_id: None,
                });
            };
            match event? {
                ModelEvent::TextDelta(text) => {
                    turn.text.push_str(&text);
                    self.bus.emit(AgentEvent::TextDelta { text });
                }
                ModelEvent::ToolCallStarted { .. } => {}
                ModelEvent::ToolCallComplete {
                    id,
                    name,
                    arguments,
                } => turn.calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                }),
                ModelEvent::ToolCallIncomplete { id, name, reason } => {
                    turn.incomplete.push((id, name, reason))
                }
                ModelEvent::Usage(u) => usage = u,
                ModelEvent::Retry {
                    attempt,
                    reason,
                    delay,
                    discard_partial,
                } => {
                    if discard_partial {
                        turn.text.clear();
                        turn.calls.clear();
                        turn.incomplete.clear();
                    }
                    self.bus.emit(AgentEvent::ModelRetry {
                        attempt,
                        reason,
                        delay_ms: delay.as_millis() as u64,
                        discard_partial,
                    });
                }
                ModelEvent::Completed {
                    stop_reason,
                    request_id,
                } => {
                    turn.stop = stop_reason;
                    total.input += usage.input;
                    total.output += usage.output;
                    total.cache_read += usage.cache_read;
                    total.cache_creation += usage.cache_creation;
                    return Ok((turn, request_id, usage));
                }
            }
        }
    }

    /// Runs the calls: consecutive read-only calls concurrently, the others one
    /// at a time in the model's order. Returns exactly one result per call, in
    /// the model's order.
    async fn run_tools(
        &self,
        calls: &[ToolCall],
        history: &mut Vec<String>,
        cancel: &CancellationToken,
    ) -> Vec<(String, ExecOutcome)> {
        let mut results: Vec<Option<ExecOutcome>> = vec![None; calls.len()];
        let mut i = 0;
        while i < calls.len() {
            // A batch: one non-read-only call, or a run of read-only ones.
            let mut end = i + 1;
            if self.tools.is_read_only(&calls[i].name) {
                while end < calls.len() && self.tools.is_read_only(&calls[end].name) {
                    end += 1;
                }
            }
            let mut batch = Vec::new();
            for (offset, call) in calls[i..end].iter().enumerate() {
                let signature = format!("{}\u{0}{}", call.name, call.arguments);
                let repeats = history
                    .iter()
                    .rev()
                    .take_while(|s| **s == signature)
                    .count();
                history.push(signature);
                self.bus.emit(AgentEvent::ToolCallStarted {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                if cancel.is_cancelled() {
                    results[i + offset] = Some(not_run(
                        "cancelled",
                        "Not run: the user cancelled the run (Ctrl-C).",
                    ));
                    continue;
                }
                if repeats + 1 >= REPEAT_LIMIT {
                    results[i + offset] = Some(not_run(
                        "repeated_call",
                        &format!(
                            "Not run: this exact call ({} with the same arguments) was made {REPEAT_LIMIT} times in a row. \
                             Its result will not change; try something different.",
                            call.name
                        ),
                    ));
                    continue;
                }
                batch.push((i + offset, call));
            }
            let outcomes = futures::future::join_all(
                batch
                    .iter()
                    .map(|(_, call)| self.tools.call(call, cancel.child_token())),
            )
            .await;
            for ((index, _), outcome) in batch.into_iter().zip(outcomes) {
                results[index] = Some(outcome);
            }
            for (index, call) in calls.iter().enumerate().take(end).skip(i) {
                if let Some(r) = &results[index] {
                    self.bus.emit(AgentEvent::ToolCallFinished {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        is_error: r.is_error,
                        error_type: r.error_type.clone(),
                        duration_ms: r.duration_ms,
                        summary: summary(&r.content),
                        output: r.content.clone(),
                        diff: r.diff.clone(),
                    });
                }
            }
            i = end;
        }
        calls
            .iter()
            .zip(results)
            .map(|(call, r)| {
                (
                    call.id.clone(),
                    r.unwrap_or_else(|| not_run("internal", "Not run.")),
                )
            })
            .collect()
    }
}

fn not_run(error_type: &str, message: &str) -> ExecOutcome {
    ExecOutcome {
        content: message.to_string(),
        is_error: true,
        error_type: Some(error_type.to_string()),
        diff: None,
        duration_ms: 0,
    }
}

/// The first lines of a result, for the trace and the terminal.
pub fn summary(text: &str) -> String {
    let mut s: String = text.lines().take(3).collect::<Vec<_>>().join("\n");
    if s.len() > 300 {
        let cut = s.char_indices().nth(300).map_or(s.len(), |(i, _)| i);
        s.truncate(cut);
        s.push('…');
    }
    s
}

fn stop_name(stop: &StopReason) -> String {
    match stop {
        StopReason::EndTurn => "end_turn".into(),
        StopReason::ToolUse => "tool_use".into(),
        StopReason::MaxTokens => "max_tokens".into(),
        StopReason::StopSequence => "stop_sequence".into(),
        StopReason::Other(s) => s.clone(),
    }
}

/// The provider's message verbatim, with status and request id when known.
fn describe_model_error(e: &ModelError) -> String {
    let mut s = format!("model request failed: {e}");
    if let Some(id) = e.request_id()
        && !s.contains(id)
    {
        s.push_str(&format!(" (request id {id})"));
    }
    s
}
