//! Anthropic Messages API: `POST {base}/v1/messages` with `stream: true`.

pub mod request;
mod stream;

use std::sync::Arc;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::{ApiKey, Provider, ResolvedModelConfig, Sampling};
use crate::driver::{self, Decoder, EventStream, Wire};
use crate::error::{ErrorKind, ModelError, Overflow};
use crate::retry::{self, RetryPolicy};
use crate::types::ModelRequest;

pub(crate) const PROVIDER: &str = "anthropic";
/// The API version this adapter speaks; required on every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Talks to the Anthropic Messages API.
pub struct AnthropicAdapter {
    wire: Arc<AnthropicWire>,
    client: reqwest::Client,
    retry: RetryPolicy,
    model: String,
    max_tokens: u32,
    sampling: Sampling,
    /// What the model does with images (`[model] vision` and the catalog).
    images: crate::vision::ImageSupport,
}

struct AnthropicWire {
    url: String,
    key: Option<ApiKey>,
}

impl AnthropicAdapter {
    pub(crate) fn new(cfg: &ResolvedModelConfig, client: reqwest::Client) -> Self {
        AnthropicAdapter {
            wire: Arc::new(AnthropicWire {
                url: format!("{}/v1/messages", cfg.base_url),
                key: cfg.api_key.clone(),
            }),
            client,
            retry: cfg.retry,
            model: cfg.model.clone(),
            max_tokens: cfg.max_tokens,
            sampling: cfg.sampling,
            images: cfg.image_support(),
        }
    }

    /// The exact body this adapter sends for `req` (for logs and tests).
    pub fn request_body(&self, req: &ModelRequest) -> Value {
        let mut body = request::build_body(&self.model, self.max_tokens, req);
        self.sampling.insert_into(&mut body);
        body
    }
}

#[async_trait::async_trait]
impl crate::ModelAdapter for AnthropicAdapter {
    fn name(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> Provider {
        Provider::Anthropic
    }

    fn images(&self) -> crate::vision::ImageSupport {
        self.images.clone()
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

impl Wire for AnthropicWire {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn request(&self, client: &reqwest::Client, body: Bytes) -> reqwest::RequestBuilder {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("accept", HeaderValue::from_static("text/event-stream"));
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = &self.key
            && let Ok(mut value) = HeaderValue::from_str(key.expose())
        {
            // Sensitive: hyper keeps it out of HPACK tables and Debug output.
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
        }
        client.post(&self.url).headers(headers).body(body)
    }

    fn decoder(&self, request_id: Option<String>) -> Box<dyn Decoder> {
        Box::new(stream::AnthropicDecoder::new(request_id))
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
        let error_type = error
            .and_then(|e| e.get("type"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let message = error
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .map_or_else(|| String::from_utf8_lossy(body).into_owned(), str::to_owned);
        let request_id = request_id.or_else(|| {
            parsed
                .as_ref()
                .and_then(|v| v.get("request_id"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        // A spend-cap 429 has no retry-after and does not clear by waiting (WIRE-NOTES §1).
        let spend_capped = error
            .and_then(|e| e.pointer("/details/error_code"))
            .and_then(Value::as_str)
            == Some("enforced_spend_limit_reached");
        let should_retry = retry::should_retry(headers).or(spend_capped.then_some(false));
        let overflow = Overflow::recognise(
            status,
            parsed.as_ref(),
            error_type.as_deref(),
            None,
            &message,
        );
        let kind = if overflow.is_some() {
            ErrorKind::ContextOverflow
        } else {
            error_kind(error_type.as_deref(), Some(status))
        };
        ModelError::Api {
            provider: PROVIDER,
            kind,
            status: Some(status),
            error_type,
            message,
            request_id,
            retry_after: retry::retry_after(headers),
            should_retry,
            overflow: overflow.map(Box::new),
        }
    }
}

/// Classifies by HTTP status when there is one, else by the error type of an `error` event.
pub(crate) fn error_kind(error_type: Option<&str>, status: Option<u16>) -> ErrorKind {
    if let Some(status) = status {
        return ErrorKind::from_status(status);
    }
    match error_type {
        Some("invalid_request_error" | "request_too_large" | "billing_error") => {
            ErrorKind::BadRequest
        }
        Some("authentication_error" | "permission_error") => ErrorKind::Auth,
        Some("not_found_error") => ErrorKind::NotFound,
        Some("rate_limit_error") => ErrorKind::RateLimited,
        Some("overloaded_error") => ErrorKind::Overloaded,
        Some("timeout_error") => ErrorKind::Timeout,
        // api_error and anything new: the provider failed mid-stream.
        _ => ErrorKind::Server,
    }
}
