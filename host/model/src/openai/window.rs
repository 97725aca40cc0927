//! Asking an OpenAI-compatible local server how large its context window is.
//!
//! The window of a local model is the server's setting, not the model's: vLLM reports
//! `max_model_len` in `GET /v1/models`; ollama reports `num_ctx` (when set) and the model's
//! native `context_length` in `POST /api/show`; llama.cpp reports `n_ctx` in `GET /props`.
//! Each probe is bounded by a short timeout and any failure just means "unknown".

use std::time::Duration;

use serde_json::{Value, json};

/// How long each probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The window the server at `base_url` (ending in `/v1`) reports for `model`, if any.
pub(crate) async fn discover(client: &reqwest::Client, base_url: &str, model: &str) -> Option<u32> {
    if let Some(n) = vllm(client, base_url, model).await {
        return Some(n);
    }
    let root = base_url.strip_suffix("/v1").unwrap_or(base_url);
    if let Some(n) = ollama(client, root, model).await {
        return Some(n);
    }
    llama_cpp(client, root).await
}

async fn get_json(request: reqwest::RequestBuilder) -> Option<Value> {
    let response = tokio::time::timeout(PROBE_TIMEOUT, request.send())
        .await
        .ok()?
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    tokio::time::timeout(PROBE_TIMEOUT, response.json::<Value>())
        .await
        .ok()?
        .ok()
}

fn as_window(v: &Value) -> Option<u32> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0)
}

async fn vllm(client: &reqwest::Client, base_url: &str, model: &str) -> Option<u32> {
    let body = get_json(client.get(format!("{base_url}/models"))).await?;
    let models = body.get("data")?.as_array()?;
    let entry = models
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (models.len() == 1).then(|| &models[0]))?;
    entry.get("max_model_len").and_then(as_window).or_else(|| {
        // llama.cpp lists its model with `meta.n_ctx_train`; the running n_ctx is in /props.
        None
    })
}

async fn ollama(client: &reqwest::Client, root: &str, model: &str) -> Option<u32> {
    let body = get_json(
        client
            .post(format!("{root}/api/show"))
            .json(&json!({"model": model})),
    )
    .await?;
    // `parameters` is a text block such as "num_ctx 32768\nstop ...": an explicit setting wins.
    let configured = body
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|p| {
            p.lines().find_map(|l| {
                let mut words = l.split_whitespace();
                (words.next() == Some("num_ctx")).then(|| words.next()?.parse::<u32>().ok())?
            })
        });
    configured.or_else(|| {
        body.get("model_info")?
            .as_object()?
            .iter()
            .find(|(k, _)| k.ends_with(".context_length"))
            .and_then(|(_, v)| as_window(v))
    })
}

async fn llama_cpp(client: &reqwest::Client, root: &str) -> Option<u32> {
    let body = get_json(client.get(format!("{root}/props"))).await?;
    body.pointer("/default_generation_settings/n_ctx")
        .and_then(as_window)
}
