//! Asking an OpenAI-compatible server how large its context window is.
//!
//! The window of a local model is the server's setting, not the model's: vLLM reports
//! `max_model_len` in `GET /v1/models`; ollama reports `num_ctx` (when set) and the model's
//! native `context_length` in `POST /api/show`; llama.cpp reports `n_ctx` in `GET /props`; LM
//! Studio `loaded_context_length` in `GET /api/v0/models`; TGI `max_total_tokens` in `GET /info`.
//!
//! Only the endpoints of the server kind in use are asked (`[model] server`, else guessed from
//! the port, see [`crate::config::guess_server`]); with no guess, the generic `/models` and
//! llama.cpp's `/props` — never ollama's `POST /api/show`, which other servers log as an error.
//! api.openai.com is not asked at all. A server that could not be reached (still starting, a
//! timeout) is asked once more after a short pause; a server that answered without a window is
//! not.

use std::time::Duration;

use serde_json::{Value, json};

use crate::config::ModelServer;

/// How long each probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause before the one retry of an unreachable server.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// What one probe learned.
enum Probe {
    Window(u32),
    /// The server answered; it has no (such) window to tell.
    Answered,
    /// No answer: connection refused, timeout, a 5xx.
    Unreachable,
}

/// The window the server at `base_url` (ending in `/v1`) reports for `model`, if any.
pub(crate) async fn discover(
    client: &reqwest::Client,
    base_url: &str,
    model: &str,
    server: Option<ModelServer>,
) -> Option<u32> {
    if server == Some(ModelServer::Openai) {
        return None;
    }
    match discover_once(client, base_url, model, server).await {
        Probe::Window(n) => Some(n),
        Probe::Answered => None,
        Probe::Unreachable => {
            tokio::time::sleep(RETRY_PAUSE).await;
            tracing::debug!(base_url, "window probe unanswered; asking once more");
            match discover_once(client, base_url, model, server).await {
                Probe::Window(n) => Some(n),
                Probe::Answered | Probe::Unreachable => None,
            }
        }
    }
}

async fn discover_once(
    client: &reqwest::Client,
    base_url: &str,
    model: &str,
    server: Option<ModelServer>,
) -> Probe {
    let root = base_url.strip_suffix("/v1").unwrap_or(base_url);
    let probes: Vec<Probe> = match server {
        Some(ModelServer::Openai) => vec![Probe::Answered],
        Some(ModelServer::Ollama) => vec![ollama(client, root, model).await],
        Some(ModelServer::Llamacpp) => vec![llama_cpp(client, root).await],
        Some(ModelServer::Vllm) => vec![models(client, base_url, model).await],
        Some(ModelServer::Lmstudio) => vec![lm_studio(client, root, model).await],
        Some(ModelServer::Tgi) => vec![tgi(client, root).await],
        None => {
            let first = models(client, base_url, model).await;
            if let Probe::Window(_) = first {
                return first;
            }
            vec![first, llama_cpp(client, root).await]
        }
    };
    let mut answered = false;
    for probe in probes {
        match probe {
            Probe::Window(n) => return Probe::Window(n),
            Probe::Answered => answered = true,
            Probe::Unreachable => {}
        }
    }
    if answered {
        Probe::Answered
    } else {
        Probe::Unreachable
    }
}

/// The JSON of a successful answer; `Err(Probe)` says whether the server answered at all.
async fn get_json(request: reqwest::RequestBuilder) -> Result<Value, Probe> {
    let response = match tokio::time::timeout(PROBE_TIMEOUT, request.send()).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) | Err(_) => return Err(Probe::Unreachable),
    };
    if response.status().is_server_error() {
        return Err(Probe::Unreachable);
    }
    if !response.status().is_success() {
        return Err(Probe::Answered);
    }
    match tokio::time::timeout(PROBE_TIMEOUT, response.json::<Value>()).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(_)) => Err(Probe::Answered),
        Err(_) => Err(Probe::Unreachable),
    }
}

fn as_window(v: &Value) -> Option<u32> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0)
}

fn found(window: Option<u32>) -> Probe {
    window.map_or(Probe::Answered, Probe::Window)
}

/// The entry for `model` in an OpenAI-style `{"data": [{"id": …}, …]}` list (or the only one).
fn entry<'a>(body: &'a Value, model: &str) -> Option<&'a Value> {
    let models = body.get("data")?.as_array()?;
    models
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (models.len() == 1).then(|| &models[0]))
}

/// vLLM's `GET /v1/models`: `max_model_len`.
async fn models(client: &reqwest::Client, base_url: &str, model: &str) -> Probe {
    match get_json(client.get(format!("{base_url}/models"))).await {
        // llama.cpp lists its model here too, with only `meta.n_ctx_train` (the model's native
        // window, not the server's): the running `n_ctx` is asked from /props instead.
        Ok(body) => found(
            entry(&body, model)
                .and_then(|e| e.get("max_model_len"))
                .and_then(as_window),
        ),
        Err(p) => p,
    }
}

/// ollama's `POST /api/show`: `num_ctx` in `parameters` when set, else the model's own
/// `<arch>.context_length`.
async fn ollama(client: &reqwest::Client, root: &str, model: &str) -> Probe {
    let body = match get_json(
        client
            .post(format!("{root}/api/show"))
            .json(&json!({"model": model})),
    )
    .await
    {
        Ok(body) => body,
        Err(p) => return p,
    };
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
    found(configured.or_else(|| {
        body.get("model_info")?
            .as_object()?
            .iter()
            .find(|(k, _)| k.ends_with(".context_length"))
            .and_then(|(_, v)| as_window(v))
    }))
}

/// llama.cpp's `GET /props`: `default_generation_settings.n_ctx`.
async fn llama_cpp(client: &reqwest::Client, root: &str) -> Probe {
    match get_json(client.get(format!("{root}/props"))).await {
        Ok(body) => found(
            body.pointer("/default_generation_settings/n_ctx")
                .and_then(as_window),
        ),
        Err(p) => p,
    }
}

/// LM Studio's `GET /api/v0/models`: `loaded_context_length` of the loaded model.
async fn lm_studio(client: &reqwest::Client, root: &str, model: &str) -> Probe {
    match get_json(client.get(format!("{root}/api/v0/models"))).await {
        Ok(body) => found(entry(&body, model).and_then(|e| {
            e.get("loaded_context_length")
                .or_else(|| e.get("max_context_length"))
                .and_then(as_window)
        })),
        Err(p) => p,
    }
}

/// TGI's `GET /info`: `max_total_tokens` (prompt plus output).
async fn tgi(client: &reqwest::Client, root: &str) -> Probe {
    match get_json(client.get(format!("{root}/info"))).await {
        Ok(body) => found(body.get("max_total_tokens").and_then(as_window)),
        Err(p) => p,
    }
}
