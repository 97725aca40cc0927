//! The window each local server reports from its own settings endpoint is the run's budget
//! (issue 23 item 3, the Tests section's `/props` / `/v1/models` / `/api/show` answers): the
//! mock answers with each server's documented shape, `[model] server` names the kind, and the
//! first `turn_finished` carries the window read from it. vLLM's `GET /v1/models` and ollama's
//! `POST /api/show` are covered by `context::a_local_servers_reported_window_is_the_budget`.

use serde_json::{Value, json};
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::{MockResponse, script::OpenAiTurn};

use super::local_models::{probes, run};

/// One server kind's settings endpoint and its answer.
struct Settings {
    /// `[model] server`.
    server: &'static str,
    /// The probe tern must send (method and path), and the only one.
    probe: &'static str,
    answer: Value,
    /// The window in `answer`.
    window: u64,
}

async fn reported_window_is_the_budget(case: Settings) {
    let env = RunEnv::new().await;
    env.add_servers(&format!("server = \"{}\"\n", case.server));
    let (method, path) = case.probe.split_once(' ').unwrap();
    let answer = case.answer.clone();
    env.server.respond_when(
        move |r| r.method == method && r.path == path,
        move |_| MockResponse::json(200, &answer),
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["hello"]).finish("stop"));
    let out = run(
        &env,
        "qwen2.5-coder-1.5b",
        &["run", "hi", "--output-format", "jsonl"],
    )
    .await;
    assert_exit(&out, 0);
    let events = env.events();
    let finished = of_type(&events, "turn_finished");
    assert_eq!(
        finished[0]["context_window"], case.window,
        "{}",
        case.server
    );
    assert_eq!(probes(&env), [case.probe], "{}", case.server);
    // Known, so never assumed.
    assert!(
        !of_type(&events, "notice").iter().any(|n| n["message"]
            .as_str()
            .unwrap_or_default()
            .contains("context window unknown")),
        "{}: {events:?}",
        case.server
    );
}

/// llama.cpp's `GET /props` (`tools/server/README.md`, "GET /props"): the running `n_ctx` in
/// `default_generation_settings` (not `n_ctx_train`, the model's native window).
#[tokio::test]
async fn llamacpps_props_window_is_the_budget() {
    reported_window_is_the_budget(Settings {
        server: "llamacpp",
        probe: "GET /props",
        answer: json!({
            "default_generation_settings": {"id": 0, "id_task": -1, "n_ctx": 12288,
                "speculative": false, "is_processing": false,
                "params": {"n_predict": -1, "temperature": 0.8, "top_p": 0.95}},
            "total_slots": 1,
            "model_path": "models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            "chat_template": "{% for message in messages %}…{% endfor %}",
            "modalities": {"vision": false},
            "build_info": "b5000-0123abcd"
        }),
        window: 12_288,
    })
    .await;
}

/// LM Studio's `GET /api/v0/models` (lmstudio.ai/docs, REST API v0): a loaded model's
/// `loaded_context_length` wins over its `max_context_length`.
#[tokio::test]
async fn lm_studios_loaded_context_length_is_the_budget() {
    reported_window_is_the_budget(Settings {
        server: "lmstudio",
        probe: "GET /api/v0/models",
        answer: json!({"object": "list", "data": [
            {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model",
                "type": "embeddings", "state": "not-loaded", "max_context_length": 2048},
            {"id": "qwen2.5-coder-1.5b", "object": "model", "type": "llm",
                "publisher": "lmstudio-community", "arch": "qwen2",
                "compatibility_type": "gguf", "quantization": "Q4_K_M", "state": "loaded",
                "max_context_length": 32768, "loaded_context_length": 8192}]}),
        window: 8_192,
    })
    .await;
}

/// Hugging Face TGI's `GET /info` (`router/src/lib.rs`, `Info`): `max_total_tokens`, prompt
/// plus output.
#[tokio::test]
async fn tgis_max_total_tokens_is_the_budget() {
    reported_window_is_the_budget(Settings {
        server: "tgi",
        probe: "GET /info",
        answer: json!({"model_id": "Qwen/Qwen2.5-Coder-1.5B-Instruct", "model_sha": null,
            "model_pipeline_tag": "text-generation", "max_concurrent_requests": 128,
            "max_best_of": 2, "max_stop_sequences": 4, "max_input_tokens": 6143,
            "max_total_tokens": 6144, "validation_workers": 2, "max_client_batch_size": 4,
            "router": "text-generation-router", "version": "3.3.4"}),
        window: 6_144,
    })
    .await;
}
