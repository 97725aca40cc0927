//! tern's model adapters: one provider-neutral interface over the Anthropic Messages API and any
//! OpenAI-compatible Chat Completions endpoint (OpenAI, ollama, vLLM, llama.cpp, ...).
//!
//! Provider wire formats live only in this crate. The agent loop builds a [`ModelRequest`] from
//! neutral [`Message`]s, calls [`ModelAdapter::stream`], and consumes [`ModelEvent`]s:
//!
//! ```no_run
//! use futures::StreamExt;
//! use tern_model::{ModelConfig, ModelEvent, ModelRequest, Message, build_adapter};
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn run() -> Result<(), tern_model::ModelError> {
//! let adapter = build_adapter(&ModelConfig::default(), &|k| std::env::var(k).ok())?;
//! let req = ModelRequest {
//!     system: vec!["You are terse.".into()],
//!     messages: vec![Message::user_text("Say hi")],
//!     tools: vec![],
//!     max_tokens: 1024,
//!     tool_choice: Default::default(),
//!     cache: true,
//! };
//! let mut events = adapter.stream(&req, CancellationToken::new()).await?;
//! while let Some(event) = events.next().await {
//!     match event? {
//!         ModelEvent::TextDelta(t) => print!("{t}"),
//!         ModelEvent::Retry { discard_partial: true, .. } => { /* forget this turn's output */ }
//!         ModelEvent::Completed { .. } => break,
//!         _ => {}
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Contract of the stream, in one place:
//! * events arrive as soon as each SSE event is parsed;
//! * a successful turn ends with exactly one [`ModelEvent::Completed`]; a failed one with one
//!   `Err(ModelError)` item (including [`ModelError::Cancelled`]); nothing follows either;
//! * before each retry a [`ModelEvent::Retry`] is sent; if it says `discard_partial`, everything
//!   received since the turn began is void;
//! * only [`ModelEvent::ToolCallComplete`] calls are executable, and only after `Completed`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod anthropic;
pub mod catalog;
pub mod config;
mod driver;
pub mod error;
#[cfg(feature = "mock-server")]
pub mod mock;
pub mod normalize;
pub mod openai;
pub mod retry;
pub mod sse;
pub mod text_calls;
pub mod tokens;
mod tool_args;
pub mod types;
pub mod vision;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use anthropic::AnthropicAdapter;
pub use config::{
    ApiKey, ConfigError, ModelConfig, ModelServer, Provider, ResolvedModelConfig, Sampling,
    ToolCallMode, WireApi,
};
pub use driver::EventStream;
pub use error::{ErrorKind, ModelError, Result};
pub use openai::OpenAiAdapter;
pub use retry::RetryPolicy;
pub use types::{
    AssistantContent, Message, ModelEvent, ModelRequest, Reasoning, StopReason, ToolCall,
    ToolChoice, ToolResult, ToolSpec, Usage, UserContent,
};

/// A model behind some provider's API.
#[async_trait::async_trait]
pub trait ModelAdapter: Send + Sync {
    /// The model name sent to the provider.
    fn name(&self) -> &str;

    /// Whose API this is: every decision that depends on it is an exhaustive `match`, so a new
    /// provider is a compile error where it needs one, never silently another provider.
    fn provider(&self) -> Provider;

    /// The context window the endpoint reports for this model, when it reports one (local
    /// OpenAI-compatible servers do; the public APIs do not).
    async fn context_window(&self) -> Option<u32> {
        None
    }

    /// Whether [`ModelAdapter::context_window`] asks the server (a local OpenAI-compatible one):
    /// then `None` from it means the probe failed, which is worth saying once.
    fn probes_window(&self) -> bool {
        false
    }

    /// Whether the model takes images and how large (see [`vision`]); adapters built from a
    /// config add its `[model] vision`.
    fn images(&self) -> vision::ImageSupport {
        vision::image_support(self.provider(), WireApi::Chat, self.name(), None)
    }

    /// Starts one assistant turn.
    ///
    /// Returns `Err` only when the request cannot be built; everything that happens on the wire
    /// (HTTP errors, retries, broken streams) arrives through the stream. Cancelling `cancel` or
    /// dropping the stream aborts the HTTP request promptly.
    async fn stream(
        &self,
        req: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ModelError>;
}

/// Builds the adapter `cfg` selects, reading keys and base URLs through `env` (pass
/// `&|k| std::env::var(k).ok()`; tests pass a closure over a map). See [`config`] for precedence.
pub fn build_adapter(
    cfg: &ModelConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn ModelAdapter>, ModelError> {
    let resolved = ResolvedModelConfig::resolve(cfg, env)?;
    adapter_from_resolved(&resolved)
}

/// Builds the adapter for an already resolved configuration.
pub fn adapter_from_resolved(
    cfg: &ResolvedModelConfig,
) -> Result<Box<dyn ModelAdapter>, ModelError> {
    let client = http_client(cfg.idle_timeout)?;
    tracing::info!(provider = cfg.provider.as_str(), model = %cfg.model, base_url = %cfg.base_url, key = cfg.api_key.is_some(), "model adapter ready");
    Ok(match cfg.provider {
        Provider::Anthropic => Box::new(AnthropicAdapter::new(cfg, client)),
        Provider::Openai => Box::new(OpenAiAdapter::new(cfg, client)),
    })
}

fn http_client(idle_timeout: Duration) -> Result<reqwest::Client, ModelError> {
    // The `ring` provider for rustls, installed for the process before the first client (see
    // `tern_mcp::http_client` for why).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        // Per read, reset by every chunk: catches a stream that went silent, not a long answer.
        .read_timeout(idle_timeout)
        .build()
        .map_err(|e| ConfigError::HttpClient(e.to_string()).into())
}
