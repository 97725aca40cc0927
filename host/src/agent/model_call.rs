//! One model call of the loop: the stream read into a [`ModelTurn`] (text deltas and retries
//! on the bus as they arrive), tool calls a model wrote as text taken as calls, and how a stop
//! reason and a failed call are named. The loop itself is `run_loop.rs`.

use futures::StreamExt;
use tern_model::{
    ModelAdapter, ModelError, ModelEvent, ModelRequest, StopReason, ToolCallMode, ToolSpec,
    text_calls,
};
use tern_protocol::{Event, IncompleteCall, ToolCall, Usage};
use tokio_util::sync::CancellationToken;

use super::bus::EventBus;

/// What one model call produced.
pub(super) struct ModelTurn {
    pub(super) text: String,
    /// Reasoning items, to send back before the calls (Responses API).
    pub(super) reasoning: Vec<tern_model::Reasoning>,
    pub(super) calls: Vec<ToolCall>,
    pub(super) incomplete: Vec<IncompleteCall>,
    pub(super) stop: StopReason,
}

/// Streams one model turn. Text deltas go to the bus as they arrive; a retry
/// that discards partial output resets the turn; tool calls are only taken
/// from a stream that completed.
pub(super) async fn call_model(
    model: &dyn ModelAdapter,
    bus: &EventBus,
    request: &ModelRequest,
    cancel: &CancellationToken,
    total: &mut Usage,
) -> Result<(ModelTurn, Option<String>, Usage), ModelError> {
    let mut stream = model.stream(request, cancel.child_token()).await?;
    let mut turn = ModelTurn {
        text: String::new(),
        reasoning: Vec::new(),
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
                bus.emit(Event::TextDelta { text });
            }
            ModelEvent::ThinkingDelta(text) => bus.emit(Event::ThinkingDelta { text }),
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
                turn.incomplete.push(IncompleteCall { id, name, reason })
            }
            ModelEvent::Reasoning(r) => turn.reasoning.push(r),
            ModelEvent::Usage(u) => usage = u,
            ModelEvent::Retry {
                attempt,
                reason,
                delay,
                discard_partial,
            } => {
                if discard_partial {
                    turn.text.clear();
                    turn.reasoning.clear();
                    turn.calls.clear();
                    turn.incomplete.clear();
                }
                bus.emit(Event::ModelRetry {
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
                total.add(&usage);
                return Ok((turn, request_id, usage));
            }
        }
    }
}

/// A turn whose text is a JSON tool call naming an offered tool becomes that call (models
/// without native tool calling write them so; see [`text_calls`]).
pub(super) fn take_text_calls(
    mode: ToolCallMode,
    turn: &mut ModelTurn,
    tools: &[ToolSpec],
    step: u32,
) {
    if !turn.calls.is_empty() || !turn.incomplete.is_empty() || turn.stop == StopReason::MaxTokens {
        return;
    }
    let strictness = match mode {
        ToolCallMode::Native => text_calls::Strictness::WholeText,
        ToolCallMode::Text => text_calls::Strictness::TrailingCalls,
    };
    let Some(found) = text_calls::parse(&turn.text, tools, strictness) else {
        return;
    };
    tracing::debug!(
        calls = found.len(),
        "tool calls written as text taken as calls"
    );
    turn.calls = found
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: format!("call_text_{step}_{i}"),
            name: c.name,
            arguments: c.arguments,
        })
        .collect();
    turn.text.clear();
    turn.stop = StopReason::ToolUse;
}

pub(super) fn stop_name(stop: &StopReason) -> String {
    match stop {
        StopReason::EndTurn => "end_turn".into(),
        StopReason::ToolUse => "tool_use".into(),
        StopReason::MaxTokens => "max_tokens".into(),
        StopReason::StopSequence => "stop_sequence".into(),
        StopReason::Other(s) => s.clone(),
    }
}

/// The provider's message verbatim, with status and request id when known.
pub(super) fn describe_model_error(e: &ModelError) -> String {
    let mut s = format!("model request failed: {e}");
    if let Some(id) = e.request_id()
        && !s.contains(id)
    {
        s.push_str(&format!(" (request id {id})"));
    }
    s
}
