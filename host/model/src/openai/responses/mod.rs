//! OpenAI's Responses API, `POST {base}/responses` with `stream: true` (`[model] wire_api =
//! "responses"`). It shares the Chat Completions adapter's endpoint, key and error envelope
//! (`{"error": {"message", "type", "param", "code"}}`); what differs is the body and the stream.
//!
//! tern runs it stateless, as Codex does: `store: false` (nothing is kept on OpenAI's side, so
//! `previous_response_id` is never used) and `include: ["reasoning.encrypted_content"]`, so each
//! reasoning item comes back encrypted, is kept in the transcript and is sent back in the next
//! request's `input` before the calls it led to.
//!
//! Sources for the shapes, quoted where each is used:
//! * OpenAI API reference, "Streaming events" for Responses (`response.created`,
//!   `response.output_item.added`/`.done`, `response.output_text.delta`,
//!   `response.function_call_arguments.delta`/`.done`, `response.completed`/`.incomplete`/`.failed`,
//!   `error`) and the function-calling guide (`function_call` items, `function_call_output`);
//! * a live recording of api.openai.com kept by charmbracelet/fantasy
//!   (`providertests/testdata/TestOpenAIResponsesWithSummaryThinking/openai-o4-mini/thinking-streaming.yaml`):
//!   the request with `store: false` and the encrypted reasoning item sent back, and both streams;
//! * openai/codex `codex-rs/codex-api/src/sse/responses.rs` (what Codex reads:
//!   `response.failed` with `error.code = "context_length_exceeded"`, usage with
//!   `input_tokens_details.cached_tokens`).

pub mod request;
pub(crate) mod stream;
