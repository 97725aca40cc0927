//! Every documented example config loads.

use std::path::{Path, PathBuf};

use tern_config::{LoadOptions, Provider, Transport};

use super::Fixture;

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_example_loads() {
    let files = examples();
    // Names, so a deleted or renamed example fails here instead of silently testing less.
    let names: Vec<_> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "http-server.toml",
            "local-model.toml",
            "third-party-servers.toml"
        ]
    );
    let mut fx = Fixture::new();
    fx.env.insert("HOME".into(), "/home/u".into());
    for file in files {
        let options = LoadOptions {
            config_file: Some(file.clone()),
            ..LoadOptions::default()
        };
        let config = fx
            .load(&options)
            .unwrap_or_else(|err| panic!("{}: {err}", file.display()));
        let name = file.file_name().unwrap().to_string_lossy();
        match &*name {
            "third-party-servers.toml" => {
                for server in ["filesystem", "memory", "time", "git"] {
                    assert!(config.mcp_servers[server].enabled, "{server}");
                }
                let Transport::Stdio { args, .. } = &config.mcp_servers["filesystem"].transport
                else {
                    panic!()
                };
                assert_eq!(args[2], "/home/u/notes");
            }
            "http-server.toml" => {
                let acme = &config.mcp_servers["acme"];
                assert!(acme.required);
                assert!(matches!(
                    &acme.transport,
                    Transport::Http { bearer_token_env_var: Some(var), .. } if var == "ACME_MCP_TOKEN"
                ));
                assert_eq!(config.permissions.ask[0].rule, "acme__deploy");
            }
            "local-model.toml" => {
                assert_eq!(config.model.provider, Some(Provider::Openai));
                assert_eq!(
                    config.model.base_url.as_deref(),
                    Some("http://127.0.0.1:11434/v1")
                );
                assert!(!config.mcp_servers["web"].enabled);
                assert_eq!(config.permissions.deny.len(), 3);
            }
            other => panic!("no assertions for example {other}"),
        }
    }
}
