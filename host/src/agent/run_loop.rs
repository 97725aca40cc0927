//! build context → call model → run the requested tools → feed results back →
//! repeat, until a final answer, `max_steps`, an error or Ctrl-C.

use std::{sync::Arc, time::Instant};

use serde_json::Value;
use tern_model::{
    AssistantContent, ErrorKind as ModelErrorKind, Message, ModelAdapter, ModelError, ModelRequest,
    StopReason, ToolCallMode, ToolChoice, ToolSpec, UserContent, text_calls,
};
use tern_protocol::{
    ErrorKind, Event, IncompleteCall, LoopState, RunStatus, ToolCall, ToolResult, Usage,
};
use tokio_util::sync::CancellationToken;

use super::{
    bus::EventBus,
    context,
    conversation::{Ask, Conversation, Reason},
    executor::ToolExecutor,
    model_call,
};

/// Added to the system prompt while the session is in plan mode (the mode can change between
/// requests: the REPL's `/mode`, ACP's `session/set_mode`, an approved plan).
pub const PLAN_MODE_PROMPT: &str = "The session is in plan mode. Investigate with the read-only \
tools you are offered and keep your notes in the todo list, but change nothing: no tool that \
writes, edits, runs commands or fetches is available, and a call to one is refused. When you know \
what to do, finish by calling `plan__exit` with the plan as markdown (the steps, the files you \
will change, how you will check the result). The user approves it, asks you to keep planning, \
or cancels; you may act only after approval.";

/// The note a cancelled turn leaves at the end of the transcript: the model is told the user
/// stopped it, instead of the unanswered message merging silently into the next one.
pub const INTERRUPTED: &str = "[interrupted by the user]";

/// Appends [`INTERRUPTED`] to the transcript's last user message (a cancelled turn ends on one:
/// the user's input or the calls' results), or as a user message after a cut-off answer.
pub fn mark_interrupted(transcript: &mut Vec<Message>) {
    let note = UserContent::Text {
        text: INTERRUPTED.to_owned(),
    };
    match transcript.last_mut() {
        Some(Message::User { content }) => content.push(note),
        Some(Message::Assistant { .. }) => transcript.push(Message::User {
            content: vec![note],
        }),
        None => {}
    }
}

/// How many identical calls in a row are allowed before the guard answers instead.
const REPEAT_LIMIT: usize = 3;

/// How many times an answer cut off by `max_tokens` is continued before the run ends
/// `truncated`: enough for an answer a little over the limit, not for a model that never stops.
pub const MAX_CONTINUATIONS: u32 = 2;

/// Fixed settings of an agent.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub system: Vec<String>,
    pub max_steps: u32,
    pub max_tokens: u32,
    /// Where a tool result cut to fit the window is kept whole (`runs/<id>/spill`); `None` keeps
    /// nothing (tests).
    pub spill_dir: Option<std::path::PathBuf>,
    /// Whether the model's tools can read `spill_dir` (it lies in the workspace); only then is
    /// a spill's path offered to the model.
    pub spill_readable: bool,
    /// `[model] tool_calls`: native tool calls, or calls written as JSON text.
    pub tool_calls: ToolCallMode,
    /// Added to a refused key's error (401/403): where the key came from and went to
    /// ([`tern_model::ResolvedModelConfig::auth_hint`]).
    pub auth_hint: Option<String>,
}

/// The loop and what it talks to.
pub struct Agent {
    pub model: Arc<dyn ModelAdapter>,
    pub tools: Arc<dyn ToolExecutor>,
    pub bus: EventBus,
    pub settings: AgentSettings,
    /// Run before a compaction the loop starts itself (the engine's `PreCompact` hooks with
    /// trigger `auto`; `/compact` runs them with trigger `manual` before asking).
    pub before_compact: Option<BeforeCompact>,
}

/// See [`Agent::before_compact`].
pub type BeforeCompact = Arc<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// How one user turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub status: RunStatus,
    pub steps: u32,
    /// Every model call of the turn, summed.
    pub usage: Usage,
    /// The last model call's prompt plus answer: what the conversation occupies now.
    pub context_tokens: u64,
    pub answer: Option<String>,
    pub error: Option<String>,
}

impl TurnOutcome {
    /// A turn that could not start (e.g. a required server failed).
    pub fn failed(message: String) -> Self {
        Self {
            status: RunStatus::Error,
            steps: 0,
            usage: Usage::default(),
            context_tokens: 0,
            answer: None,
            error: Some(message),
        }
    }
}

impl Agent {
    /// Runs one user input to completion, appending everything to the conversation and
    /// compacting it whenever the next request would not fit its window. A cancelled turn is
    /// marked [`INTERRUPTED`] in the transcript, so the next request does not read the
    /// unanswered message as part of the next one (issue 26, item 7).
    pub async fn run_turn(
        &self,
        conv: &mut Conversation,
        input: &str,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        self.run_turn_with_images(conv, input, Vec::new(), cancel)
            .await
    }

    /// [`Self::run_turn`] with images the person attached: they go before the text in the
    /// user message (Anthropic's vision guide: images before the question work best).
    pub async fn run_turn_with_images(
        &self,
        conv: &mut Conversation,
        input: &str,
        images: Vec<tern_protocol::Image>,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let out = self.run_turn_unmarked(conv, input, images, cancel).await;
        if out.status == RunStatus::Cancelled {
            mark_interrupted(&mut conv.transcript);
        }
        out
    }

    async fn run_turn_unmarked(
        &self,
        conv: &mut Conversation,
        input: &str,
        images: Vec<tern_protocol::Image>,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let mut content: Vec<UserContent> = images.into_iter().map(UserContent::Image).collect();
        content.push(UserContent::Text {
            text: input.to_string(),
        });
        conv.transcript.push(Message::User { content });
        let mut out = TurnOutcome {
            status: RunStatus::Success,
            steps: 0,
            usage: Usage::default(),
            context_tokens: 0,
            answer: None,
            error: None,
        };
        let mut history: Vec<String> = Vec::new();
        // Text of an answer cut off by max_tokens so far, and how often it was continued.
        let mut cut_answer = String::new();
        let mut continuations = 0;
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
            self.state(LoopState::BuildContext, step);
            self.tools.settle().await;
            let tools = self.tools.tools();
            let mut overflowed = false;
            let (turn, request_id, usage, started) = loop {
                let estimate = self.fit(conv, &tools, &mut out.usage, cancel).await;
                // Images the model cannot take (none at all, or too large) go as notes.
                let mut messages =
                    context::images::fit_images(conv.transcript.clone(), &self.model.images());
                let starting = self.tools.starting();
                if !starting.is_empty()
                    && let Some(Message::User { content }) = messages.last_mut()
                {
                    // Said in this request only (not kept): by the next one they may be up.
                    content.push(UserContent::Text {
                        text: format!(
                            "(tern: MCP servers still starting: {}. Their tools join the list as \
                             soon as they are ready.)",
                            starting.join(", ")
                        ),
                    });
                }
                let mut system = self.settings.system.clone();
                if self.tools.plan_mode() {
                    system.push(PLAN_MODE_PROMPT.to_string());
                }
                let (system, messages, offered) = match self.settings.tool_calls {
                    ToolCallMode::Native => (system, messages, tools.clone()),
                    // No native tools on the wire: the format is in the system prompt and the
                    // history's calls and results are written as text.
                    ToolCallMode::Text => {
                        let mut system = system;
                        system.push(text_calls::instructions(&tools));
                        (system, text_calls::render(&messages), Vec::new())
                    }
                };
                let request = ModelRequest {
                    system,
                    messages,
                    tools: offered,
                    max_tokens: self.settings.max_tokens,
                    tool_choice: ToolChoice::Auto,
                    cache: true,
                };
                let mut request_json = serde_json::to_value(&request).unwrap_or(Value::Null);
                context::images::elide_image_data(&mut request_json);
                self.bus.emit(Event::ModelRequest {
                    step,
                    messages: request.messages.len(),
                    tools: request.tools.len(),
                    estimated_tokens: estimate,
                    request: request_json,
                });
                self.state(LoopState::CallModel, step);
                let started = Instant::now();
                match model_call::call_model(
                    self.model.as_ref(),
                    &self.bus,
                    &request,
                    cancel,
                    &mut out.usage,
                )
                .await
                {
                    Ok((turn, request_id, usage)) => break (turn, request_id, usage, started),
                    // Too long after all: compact harder and send the same step once more.
                    // Nothing of the refused request ran, so nothing runs twice.
                    Err(e) if e.kind() == ModelErrorKind::ContextOverflow && !overflowed => {
                        overflowed = true;
                        if let Err(message) = self
                            .shrink_after_overflow(
                                conv,
                                &tools,
                                &e,
                                estimate,
                                &mut out.usage,
                                cancel,
                            )
                            .await
                        {
                            self.bus.emit(Event::Error {
                                message: message.clone(),
                            });
                            out.status = RunStatus::Error;
                            out.error = Some(message);
                            return out;
                        }
                    }
                    Err(ModelError::Cancelled) => {
                        out.status = RunStatus::Cancelled;
                        return out;
                    }
                    Err(e) => {
                        let mut message = model_call::describe_model_error(&e);
                        if e.kind() == ModelErrorKind::Auth
                            && let Some(hint) = &self.settings.auth_hint
                        {
                            message = format!("{message}\n{hint}");
                        }
                        self.bus.emit(Event::Error {
                            message: message.clone(),
                        });
                        out.status = RunStatus::Error;
                        out.error = Some(message);
                        return out;
                    }
                }
            };
            let mut turn = turn;
            model_call::take_text_calls(self.settings.tool_calls, &mut turn, &tools, step);
            conv.budget.observe(usage.total_input());
            out.context_tokens = usage.total_input() + usage.output;
            self.bus.emit(Event::ModelResponse {
                step,
                stop_reason: model_call::stop_name(&turn.stop),
                input_tokens: usage.input,
                output_tokens: usage.output,
                cache_read_tokens: usage.cache_read,
                cache_creation_tokens: usage.cache_creation,
                latency_ms: started.elapsed().as_millis() as u64,
                request_id,
                text: turn.text.clone(),
                tool_calls: turn.calls.len() + turn.incomplete.len(),
                calls: turn.calls.clone(),
                incomplete: turn.incomplete.clone(),
            });

            let mut assistant: Vec<AssistantContent> = turn
                .reasoning
                .iter()
                .cloned()
                .map(AssistantContent::Reasoning)
                .collect();
            if !turn.text.trim().is_empty() {
                assistant.push(AssistantContent::Text {
                    text: turn.text.clone(),
                });
            }
            for call in &turn.calls {
                assistant.push(AssistantContent::ToolCall(call.clone()));
            }
            if !assistant.is_empty() {
                conv.transcript
                    .push(Message::Assistant { content: assistant });
            }

            if turn.calls.is_empty() && turn.incomplete.is_empty() {
                cut_answer.push_str(&turn.text);
                if turn.stop != StopReason::MaxTokens {
                    out.answer = Some(std::mem::take(&mut cut_answer));
                    self.bus.emit(Event::TurnEnd { step });
                    return out;
                }
                // Cut off by the output limit: never a success. Ask for the rest (the text so
                // far is in the transcript), a bounded number of times.
                self.bus.emit(Event::TurnEnd { step });
                if continuations >= MAX_CONTINUATIONS {
                    let message = format!(
                        "the answer was cut off by the output limit (max_tokens = {}) {} time(s)                          in a row\nhint: raise [model] max_tokens",
                        self.settings.max_tokens,
                        continuations + 1
                    );
                    self.bus.emit(Event::Error {
                        message: message.clone(),
                    });
                    out.status = RunStatus::Truncated;
                    out.answer = Some(cut_answer);
                    out.error = Some(message);
                    return out;
                }
                continuations += 1;
                conv.transcript.push(Message::user_text(format!(
                    "(tern: your answer was cut off by the output limit of {} tokens. Continue \
                     exactly where it stopped, without repeating anything.)",
                    self.settings.max_tokens
                )));
                continue;
            }
            continuations = 0;
            cut_answer.clear();

            self.state(LoopState::RunTools, step);
            let results = self.run_tools(&turn.calls, &mut history, cancel).await;
            let mut content: Vec<UserContent> =
                results.into_iter().map(UserContent::ToolResult).collect();
            for IncompleteCall { id, name, reason } in &turn.incomplete {
                // Not executable (e.g. cut by max_tokens): no tool_use went into the
                // transcript, so the model is told in text after the results.
                content.push(UserContent::Text {
                    text: format!(
                        "Your call to `{name}` (id {id}) was not run: {reason}. \
                         If you still need it, call it again with complete arguments."
                    ),
                });
            }
            conv.transcript.push(Message::User { content });
            self.bus.emit(Event::TurnEnd { step });
            if let Some(reason) = self.tools.take_stop() {
                // A hook's `continue: false`: every call has its result (the transcript stays
                // valid), and no further request goes out.
                self.bus.emit(Event::Error {
                    message: reason.clone(),
                });
                out.status = RunStatus::Error;
                out.error = Some(reason);
                return out;
            }
            if let Some(proposed) = self.tools.take_plan() {
                // Planning is over: the user decides what comes next, not the model.
                self.bus.emit(Event::PlanProposed {
                    call_id: proposed.call_id,
                    plan: proposed.plan.clone(),
                });
                out.answer = Some(proposed.plan);
                return out;
            }
            if cancel.is_cancelled() {
                out.status = RunStatus::Cancelled;
                return out;
            }
        }
    }

    /// Compacts the conversation when the next request would pass the budget's threshold;
    /// returns the request's estimated size.
    async fn fit(
        &self,
        conv: &mut Conversation,
        tools: &[ToolSpec],
        usage: &mut Usage,
        cancel: &CancellationToken,
    ) -> u64 {
        let estimate = conv
            .budget
            .estimate(&self.settings.system, tools, &conv.transcript);
        match conv.budget.threshold() {
            Some(threshold) if estimate > threshold => {
                self.compact(conv, tools, Ask::new(Reason::Threshold), usage, cancel)
                    .await
            }
            _ => estimate,
        }
    }

    fn state(&self, state: LoopState, step: u32) {
        self.bus.emit(Event::State { state, step });
    }

    /// Runs the calls: consecutive read-only calls concurrently, the others one at a time in
    /// the model's order. Returns exactly one result per call, in the model's order.
    async fn run_tools(
        &self,
        calls: &[ToolCall],
        history: &mut Vec<String>,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        let mut results: Vec<(ToolResult, u64)> = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            // A batch: one non-read-only call, or a run of read-only ones.
            let mut end = i + 1;
            if self.tools.is_read_only(&calls[i].name) {
                while end < calls.len() && self.tools.is_read_only(&calls[end].name) {
                    end += 1;
                }
            }
            let batch = &calls[i..end];
            let mut verdicts = Vec::with_capacity(batch.len());
            for call in batch {
                let signature = format!("{}\u{0}{}", call.name, call.arguments);
                let repeats = history
                    .iter()
                    .rev()
                    .take_while(|s| **s == signature)
                    .count();
                history.push(signature);
                self.bus.emit(Event::ToolCallStarted {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                verdicts.push(if cancel.is_cancelled() {
                    Some(ToolResult::failed(
                        call.id.clone(),
                        ErrorKind::Cancelled,
                        "Not run: the user cancelled the run (Ctrl-C).",
                    ))
                } else if repeats + 1 >= REPEAT_LIMIT {
                    Some(ToolResult::failed(
                        call.id.clone(),
                        ErrorKind::RepeatedCall,
                        format!(
                            "Not run: this exact call ({} with the same arguments) was made \
                             {REPEAT_LIMIT} times in a row. Its result will not change; try \
                             something different.",
                            call.name
                        ),
                    ))
                } else {
                    None
                });
            }
            let outcomes = futures::future::join_all(batch.iter().zip(verdicts).map(
                |(call, verdict)| async move {
                    match verdict {
                        Some(not_run) => (not_run, 0),
                        None => {
                            let started = Instant::now();
                            let result = self.tools.call(call, cancel.child_token()).await;
                            (result, started.elapsed().as_millis() as u64)
                        }
                    }
                },
            ))
            .await;
            for (call, (result, duration_ms)) in batch.iter().zip(&outcomes) {
                self.bus.emit(Event::ToolCallFinished {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    is_error: result.is_error,
                    error_type: result.error,
                    duration_ms: *duration_ms,
                    summary: summary(&result.content),
                    output: result.content.clone(),
                    diff: result.diff.clone(),
                });
            }
            results.extend(outcomes);
            i = end;
        }
        results.into_iter().map(|(r, _)| r).collect()
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

#[cfg(test)]
#[path = "run_loop_tests/mod.rs"]
mod tests;
