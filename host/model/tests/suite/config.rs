//! Provider selection, base URL precedence, strict config, and keys that never show.

use serde_json::json;
use tern_model::config::{ConfigError, ModelConfig, Provider, WireApi};
use tern_model::{ApiKey, ModelError, build_adapter};

use super::common::*;

fn resolve(
    cfg: &ModelConfig,
    vars: &[(&str, &str)],
) -> Result<tern_model::ResolvedModelConfig, ConfigError> {
    tern_model::ResolvedModelConfig::resolve(cfg, &env_with(vars))
}

#[test]
fn provider_defaults_follow_the_keys_that_are_set() {
    let cfg = ModelConfig::default();
    let both = resolve(&cfg, &[("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")]).unwrap();
    assert_eq!(both.provider, Provider::Anthropic);
    assert_eq!(both.base_url, "https://api.anthropic.com");
    let openai = resolve(
        &cfg,
        &[("OPENAI_API_KEY", "o"), ("ANTHROPIC_API_KEY", "  ")],
    )
    .unwrap();
    assert_eq!(openai.provider, Provider::Openai);
    assert_eq!(openai.base_url, "https://api.openai.com/v1");
    let local = resolve(&cfg, &[("OPENAI_BASE_URL", "http://localhost:11434/v1/")]).unwrap();
    assert_eq!(
        (local.provider, local.base_url.as_str()),
        (Provider::Openai, "http://localhost:11434/v1")
    );
    assert!(local.api_key.is_none());
}

#[test]
fn no_provider_error_names_both_keys_and_the_local_option() {
    let err = resolve(&ModelConfig::default(), &[]).unwrap_err();
    let msg = err.to_string();
    for needle in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ollama",
        "vLLM",
        "llama.cpp",
    ] {
        assert!(msg.contains(needle), "{needle} missing from: {msg}");
    }
    assert!(matches!(
        build_adapter(&ModelConfig::default(), &env_with(&[])),
        Err(ModelError::Config(ConfigError::NoProvider))
    ));
}

#[test]
fn explicit_provider_needs_its_key_unless_it_is_a_local_openai_server() {
    let anthropic = ModelConfig {
        provider: Some(Provider::Anthropic),
        ..Default::default()
    };
    let err = resolve(&anthropic, &[("OPENAI_API_KEY", "o")]).unwrap_err();
    assert_eq!(
        err,
        ConfigError::MissingKey {
            provider: "anthropic",
            var: "ANTHROPIC_API_KEY".into()
        }
    );
    let openai_public = ModelConfig {
        provider: Some(Provider::Openai),
        ..Default::default()
    };
    assert!(matches!(
        resolve(&openai_public, &[]),
        Err(ConfigError::MissingKey { .. })
    ));
    let openai_local = ModelConfig {
        provider: Some(Provider::Openai),
        base_url: Some("http://127.0.0.1:8080/v1".into()),
        ..Default::default()
    };
    assert!(resolve(&openai_local, &[]).unwrap().api_key.is_none());
    let custom_var = ModelConfig {
        api_key_env: Some("MY_KEY".into()),
        ..anthropic
    };
    assert!(
        resolve(&custom_var, &[("MY_KEY", "k")])
            .unwrap()
            .api_key
            .is_some()
    );
}

#[test]
fn config_base_url_beats_env_which_beats_the_default() {
    let vars = [
        ("ANTHROPIC_API_KEY", "a"),
        ("ANTHROPIC_BASE_URL", "https://proxy.example/"),
    ];
    assert_eq!(
        resolve(&ModelConfig::default(), &vars).unwrap().base_url,
        "https://proxy.example"
    );
    let cfg = ModelConfig {
        base_url: Some("http://localhost:9000".into()),
        ..Default::default()
    };
    assert_eq!(
        resolve(&cfg, &vars).unwrap().base_url,
        "http://localhost:9000"
    );
    let bad = ModelConfig {
        base_url: Some("ftp://x".into()),
        ..Default::default()
    };
    assert!(matches!(
        resolve(&bad, &vars),
        Err(ConfigError::BadBaseUrl { .. })
    ));
}

#[test]
fn retry_settings_and_defaults() {
    let r = resolve(&ModelConfig::default(), &[("ANTHROPIC_API_KEY", "a")]).unwrap();
    assert_eq!(r.retry.max_retries, 4);
    assert_eq!(r.max_tokens, 8192);
    let cfg: ModelConfig = serde_json::from_value(
        json!({"provider": "openai", "name": "qwen", "base_url": "http://h/v1",
        "max_tokens": 100, "context_window": 32768, "max_retries": 1, "retry_base_delay_ms": 10}),
    )
    .unwrap();
    let r = resolve(&cfg, &[]).unwrap();
    assert_eq!(
        (
            r.model.as_str(),
            r.max_tokens,
            r.context_window,
            r.retry.max_retries
        ),
        ("qwen", 100, Some(32768), 1)
    );
    assert_eq!(r.retry.base_delay, std::time::Duration::from_millis(10));
}

#[test]
fn unknown_config_keys_are_rejected_by_name() {
    let err = serde_json::from_value::<ModelConfig>(
        json!({"provider": "anthropic", "api_key": "sk-oops"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("unknown field `api_key`"), "{err}");
    assert!(serde_json::from_value::<ModelConfig>(json!({"provider": "gemini"})).is_err());
}

#[test]
fn keys_never_show_in_debug_or_errors() {
    assert_eq!(format!("{:?}", ApiKey::new(SECRET)), "ApiKey(<redacted>)");
    let r = resolve(&ModelConfig::default(), &[("ANTHROPIC_API_KEY", SECRET)]).unwrap();
    assert!(!format!("{r:?}").contains(SECRET));
    let adapter = build_adapter(
        &ModelConfig::default(),
        &env_with(&[("OPENAI_API_KEY", SECRET)]),
    )
    .unwrap();
    assert_eq!(adapter.provider(), tern_model::Provider::Openai);
}

#[test]
fn wire_api_defaults_to_responses_only_for_models_api_openai_com_serves_only_there() {
    let openai = [("OPENAI_API_KEY", "o")];
    let named = |name: &str| ModelConfig {
        provider: Some(Provider::Openai),
        name: Some(name.into()),
        ..Default::default()
    };
    // api.openai.com: a Codex model and a `-pro` model go to /responses, the others to chat.
    for (model, api) in [
        ("gpt-5-codex", WireApi::Responses),
        ("o3-pro", WireApi::Responses),
        ("gpt-5-pro", WireApi::Responses),
        ("gpt-5", WireApi::Chat),
        ("gpt-4o", WireApi::Chat),
    ] {
        assert_eq!(
            resolve(&named(model), &openai).unwrap().wire_api,
            api,
            "{model}"
        );
    }
    // A custom base URL keeps chat even for those names: what serves them there is unknown
    // (a proxy, a local server that speaks only Chat Completions).
    let proxy = ModelConfig {
        base_url: Some("https://llm-proxy.example/v1".into()),
        ..named("gpt-5-codex")
    };
    assert_eq!(resolve(&proxy, &openai).unwrap().wire_api, WireApi::Chat);
    let env_url = [
        ("OPENAI_API_KEY", "o"),
        ("OPENAI_BASE_URL", "http://localhost:8000/v1"),
    ];
    assert_eq!(
        resolve(&named("o3-pro"), &env_url).unwrap().wire_api,
        WireApi::Chat
    );
    // Set explicitly, `wire_api` wins either way.
    let chat = ModelConfig {
        wire_api: Some(WireApi::Chat),
        ..named("gpt-5-codex")
    };
    assert_eq!(resolve(&chat, &openai).unwrap().wire_api, WireApi::Chat);
    let responses = ModelConfig {
        wire_api: Some(WireApi::Responses),
        ..proxy
    };
    assert_eq!(
        resolve(&responses, &openai).unwrap().wire_api,
        WireApi::Responses
    );
    // Anthropic has one API whatever the name says.
    let anthropic = ModelConfig {
        provider: Some(Provider::Anthropic),
        name: Some("gpt-5-codex".into()),
        ..Default::default()
    };
    assert_eq!(
        resolve(&anthropic, &[("ANTHROPIC_API_KEY", "a")])
            .unwrap()
            .wire_api,
        WireApi::Chat
    );
}
