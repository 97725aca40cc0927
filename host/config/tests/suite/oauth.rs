//! `[mcp_servers.NAME.oauth]`: strict, layered key by key, and only where it means something.

use tern_config::{ConfigError, OAuthConfig, PrivateKeySource, Transport};

use super::Fixture;

fn oauth_of(text: &str, name: &str) -> Option<OAuthConfig> {
    let fx = Fixture::new();
    fx.user_config(text);
    let config = fx.load(&Default::default()).unwrap();
    match &config.mcp_servers[name].transport {
        Transport::Http { oauth, .. } => oauth.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_http_server_may_authorize_and_the_keys_parse() {
    assert_eq!(
        oauth_of("[mcp_servers.r]\nurl = \"https://h/mcp\"\n", "r"),
        Some(OAuthConfig::default())
    );
    let full = "[mcp_servers.r]\nurl = \"https://h/mcp\"\n\n[mcp_servers.r.oauth]\n\
                client_id = \"tern-cli\"\nclient_secret_env = \"R_SECRET\"\n\
                scopes = [\"read\", \"write\"]\nredirect_port = 8976\n\
                client_metadata_url = \"https://tern.example/client.json\"\n";
    assert_eq!(
        oauth_of(full, "r"),
        Some(OAuthConfig {
            client_id: Some("tern-cli".into()),
            client_secret_env: Some("R_SECRET".into()),
            scopes: Some(vec!["read".into(), "write".into()]),
            redirect_port: Some(8976),
            client_metadata_url: Some("https://tern.example/client.json".into()),
            ..OAuthConfig::default()
        })
    );
    let jwt = "[mcp_servers.m]\nurl = \"https://h/mcp\"\n\n[mcp_servers.m.oauth]\n\
               client_id = \"svc\"\nprivate_key_file = \"~/keys/svc.pem\"\n\
               signing_alg = \"ES256\"\nkey_id = \"k-2026\"\n";
    assert_eq!(
        oauth_of(jwt, "m"),
        Some(OAuthConfig {
            client_id: Some("svc".into()),
            private_key: Some(PrivateKeySource::File("~/keys/svc.pem".into())),
            signing_alg: Some("ES256".into()),
            key_id: Some("k-2026".into()),
            ..OAuthConfig::default()
        })
    );
    assert_eq!(
        oauth_of(
            "[mcp_servers.m]\nurl = \"https://h/mcp\"\n\
             oauth = { client_id = \"svc\", private_key_env = \"SVC_KEY\" }\n",
            "m"
        )
        .and_then(|o| o.private_key),
        Some(PrivateKeySource::Env("SVC_KEY".into()))
    );
    // Off: explicitly, or because a static token is configured.
    assert_eq!(
        oauth_of(
            "[mcp_servers.r]\nurl = \"https://h/mcp\"\noauth = { enabled = false }\n",
            "r"
        ),
        None
    );
    assert_eq!(
        oauth_of(
            "[mcp_servers.r]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"T\"\n",
            "r"
        ),
        None
    );
}

#[test]
fn a_project_layer_overrides_single_oauth_keys() {
    let fx = Fixture::new();
    fx.user_config(
        "[mcp_servers.r]\nurl = \"https://h/mcp\"\noauth = { client_id = \"a\", scopes = [\"x\"] }\n",
    );
    let config = fx
        .load(&tern_config::LoadOptions {
            overrides: vec!["mcp_servers.r.oauth.scopes=[\"y\"]".into()],
            ..Default::default()
        })
        .unwrap();
    let Transport::Http {
        oauth: Some(oauth), ..
    } = &config.mcp_servers["r"].transport
    else {
        panic!()
    };
    assert_eq!(oauth.client_id.as_deref(), Some("a"));
    assert_eq!(oauth.scopes, Some(vec!["y".to_string()]));
}

#[test]
fn oauth_mistakes_name_file_line_and_key() {
    let cases = [
        (
            "[mcp_servers.r]\nurl = \"https://h\"\n[mcp_servers.r.oauth]\nclient = \"x\"\n",
            ":4:1: unknown key \"client\" in [mcp_servers.r.oauth]; expected one of enabled, client_id, client_secret_env, scopes, redirect_port, client_metadata_url, resource, private_key_file, private_key_env, signing_alg, key_id",
        ),
        (
            "[mcp_servers.s]\ncommand = \"x\"\noauth = { client_id = \"a\" }\n",
            "mcp_servers.s.oauth: applies to HTTP servers (`url`) only",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\nbearer_token_env_var = \"T\"\noauth = { client_id = \"a\" }\n",
            "mcp_servers.r.oauth.enabled: a server with `bearer_token_env_var` sends that token",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { client_secret_env = \"S\" }\n",
            "mcp_servers.r.oauth.client_secret_env: needs `client_id`",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { scopes = [\"a b\"] }\n",
            "mcp_servers.r.oauth.scopes: \"a b\" is not a scope",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { redirect_port = 0 }\n",
            "mcp_servers.r.oauth.redirect_port: must be a port from 1 to 65535",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { client_metadata_url = \"http://x/c.json\" }\n",
            "mcp_servers.r.oauth.client_metadata_url: must be an https URL",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { private_key_file = \"/k.pem\" }\n",
            "mcp_servers.r.oauth.private_key_file: needs `client_id`",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { client_id = \"a\", private_key_file = \"keys/k.pem\" }\n",
            "mcp_servers.r.oauth.private_key_file: \"keys/k.pem\" is relative; write an absolute path or one starting with ~/",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { client_id = \"a\", private_key_file = \"/k\", private_key_env = \"K\" }\n",
            "mcp_servers.r.oauth.private_key_env: and `private_key_file` both name a key",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { client_id = \"a\", client_secret_env = \"S\", private_key_env = \"K\" }\n",
            "mcp_servers.r.oauth.private_key_env: and `client_secret_env` are two ways",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { client_id = \"a\", private_key_env = \"K\", signing_alg = \"HS256\" }\n",
            "mcp_servers.r.oauth.signing_alg: \"HS256\" is not an algorithm tern signs with; expected one of RS256, PS256, ES256, ES384",
        ),
        (
            "[mcp_servers.r]\nurl = \"https://h\"\noauth = { client_id = \"a\", key_id = \"k\" }\n",
            "mcp_servers.r.oauth.key_id: needs `private_key_file` or `private_key_env`",
        ),
    ];
    for (text, want) in cases {
        let fx = Fixture::new();
        let file = fx.user_config(text);
        let err = fx.load(&Default::default()).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, ConfigError::Invalid { .. } | ConfigError::Toml { .. }),
            "{err:?}"
        );
        assert!(
            message.starts_with(&file.display().to_string()),
            "{message}"
        );
        assert!(message.contains(want), "want {want:?} in {message}");
    }
}
