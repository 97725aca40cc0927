//! OpenAI Chat Completions and the servers that imitate it: `POST {base}/chat/completions`.
//!
//! Example `[model]` tables for local servers (no key needed; `base_url` includes `/v1`):
//! * ollama: `provider = "openai"`, `base_url = "http://localhost:11434/v1"`, `name = "qwen2.5-coder:14b"`
//! * vLLM (`vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes`):
//!   `base_url = "http://localhost:8000/v1"`
//! * llama.cpp (`llama-server --jinja -m model.gguf`): `base_url = "http://localhost:8080/v1"`

pub mod request;
pub mod responses;
mod stream;
mod window;

use std::sync::Arc;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{
    ApiKey, ModelServer, OPENAI_DEFAULT_BASE_URL, Provider, ResolvedModelConfig, Sampling, WireApi,
};
use crate::driver::{self, Decoder, EventStream, Wire};
use crate::error::{ErrorKind, ModelError, Overflow};
use crate::retry::{self, RetryPolicy};
use crate::types::ModelRequest;
use request::MaxTokensField;

pub(crate) const PROVIDER: &str = "openai";

/// Talks to an OpenAI-compatible endpoint: Chat Completions, or the Responses API when
/// `wire_api = "responses"`.
pub struct OpenAiAdapter {
    wire: Arc<OpenAiWire>,
    client: reqwest::Client,
    retry: RetryPolicy,
    model: String,
    max_tokens: u32,
    max_tokens_field: MaxTokensField,
    sampling: Sampling,
    /// What the model does with images (`[model] vision` and the catalog).
    images: crate::vision::ImageSupport,
    server: Option<ModelServer>,
}

struct OpenAiWire {
    url: String,
    /// `base_url`, for probing a local server's settings.
    base_url: String,
    key: Option<ApiKey>,
    api: WireApi,
}

impl OpenAiAdapter {
    pub(crate) fn new(cfg: &ResolvedModelConfig, client: reqwest::Client) -> Self {
        let max_tokens_field = if cfg.base_url == OPENAI_DEFAULT_BASE_URL {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        };
        let path = match cfg.wire_api {
            WireApi::Chat => "chat/completions",
            WireApi::Responses => "responses",
        };
        OpenAiAdapter {
            wire: Arc::new(OpenAiWire {
                url: format!("{}/{path}", cfg.base_url),
                base_url: cfg.base_url.clone(),
                key: cfg.api_key.clone(),
                api: cfg.wire_api,
            }),
            client,
            retry: cfg.retry,
            model: cfg.model.clone(),
            max_tokens: cfg.max_tokens,
            max_tokens_field,
            sampling: cfg.sampling,
            images: cfg.image_support(),
            server: cfg.server,
        }
    }

    /// The exact body this adapter sends for `req` (for logs and tests).
    pub fn request_body(&self, req: &ModelRequest) -> Value {
        let mut body = match self.wire.api {
            WireApi::Chat => {
                request::build_body(&self.model, self.max_tokens, self.max_tokens_field, req)
            }
            WireApi::Responses => responses::request::build_body(&self.model, self.max_tokens, req),
        };
        self.sampling.insert_into(&mut body);
        body
    }

    /// Which of OpenAI's APIs this adapter speaks.
    pub fn wire_api(&self) -> WireApi {
        self.wire.api
    }
}

#[async_trait::async_trait]
impl crate::ModelAdapter for OpenAiAdapter {
    fn name(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> Provider {
        Provider::Openai
    }

    fn images(&self) -> crate::vision::ImageSupport {
        self.images.clone()
    }

    fn probes_window(&self) -> bool {
        self.server != Some(ModelServer::Openai)
    }

    async fn context_window(&self) -> Option<u32> {
        window::discover(&self.client, &self.wire.base_url, &self.model, self.server).await
    }

    async fn stream(
        &self,
        req: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        driver::start(
            self.wire.clone(),
            &self.wire.url,
            &self.model,
            &self.client,
            self.retry,
            &self.request_body(req),
            cancel,
        )
    }
}

impl Wire for OpenAiWire {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn request(&self, client: &reqwest::Client, body: Bytes) -> reqwest::RequestBuilder {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("accept", HeaderValue::from_static("text/event-stream"));
        if let Some(key) = &self.key
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
        {
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        client.post(&self.url).headers(headers).body(body)
    }

    fn decoder(&self, request_id: Option<String>) -> Box<dyn Decoder> {
        match self.api {
            WireApi::Chat => Box::new(stream::OpenAiDecoder::new(request_id)),
            WireApi::Responses => Box::new(responses::stream::ResponsesDecoder::new(request_id)),
        }
    }

    fn error_response(
        &self,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
        request_id: Option<String>,
    ) -> ModelError {
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let error = parsed.as_ref().and_then(|v| v.get("error"));
        let (message, error_type, code) = match error {
            // ollama: {"error": "model 'x' not found"}
            Some(Value::String(s)) => (s.clone(), None, None),
            Some(e) => (
                e.get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| e.to_string(), str::to_owned),
                e.get("type").and_then(Value::as_str).map(str::to_owned),
                e.get("code").and_then(Value::as_str).map(str::to_owned),
            ),
            // vLLM: {"object": "error", "message": "...", "type": "BadRequestError"}
            None => match parsed
                .as_ref()
                .and_then(|v| v.get("message"))
                .and_then(Value::as_str)
            {
                Some(m) => (m.to_owned(), None, None),
                None => (String::from_utf8_lossy(body).into_owned(), None, None),
            },
        };
        let overflow = Overflow::recognise(
            status,
            parsed.as_ref(),
            error_type.as_deref(),
            code.as_deref(),
            &message,
        );
        let kind = if overflow.is_some() {
            ErrorKind::ContextOverflow
        } else {
            ErrorKind::from_status(status)
        };
        ModelError::Api {
            provider: PROVIDER,
            kind,
            status: Some(status),
            error_type,
            message,
            request_id,
            retry_after: retry::retry_after(headers),
            should_retry: retry::should_retry(headers),
            overflow: overflow.map(Box::new),
        }
    }
}

/// Classifies an error sent inside a 200 stream by its `type`.
pub(crate) fn error_kind(error_type: Option<&str>, status: Option<u16>) -> ErrorKind {
    if let Some(status) = status {
        return ErrorKind::from_status(status);
    }
    match error_type {
        // Quota is exhausted until someone pays: waiting does not help.
        Some("invalid_request_error" | "insufficient_quota") => ErrorKind::BadRequest,
        Some("authentication_error" | "permission_error") => ErrorKind::Auth,
        Some("rate_limit_error" | "rate_limit_exceeded") => ErrorKind::RateLimited,
        // server_error and unknown: the server failed mid-stream; a retry can succeed.
        _ => ErrorKind::Server,
    }
}
