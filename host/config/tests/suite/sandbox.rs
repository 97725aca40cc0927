//! `[sandbox]`: strict keys and values, `~/` paths, layers and `-c`.

use std::path::PathBuf;

use tern_config::{ConfigError, LoadOptions, SandboxConfig, SandboxMode, SandboxNetwork};

use super::Fixture;
use super::parse::line_of;

#[test]
fn defaults_are_workspace_write_without_network() {
    let fx = Fixture::new();
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert_eq!(config.sandbox.mode, SandboxMode::WorkspaceWrite);
    assert_eq!(config.sandbox.network, SandboxNetwork::Off);
    assert!(config.sandbox.writable.is_empty());
    assert!(!config.sandbox.git_writes && config.sandbox.allow_sockets.is_empty());
    // $TERN_HOME is always protected, listed or not.
    assert_eq!(config.sandbox.protect, vec![fx.home.clone()]);
}

#[test]
fn keys_paths_and_layers() {
    let mut fx = Fixture::new();
    fx.env.insert("HOME".into(), "/home/me".into());
    fx.user_config(
        "[sandbox]\nmode = \"read-only\"\nnetwork = \"on\"\nwritable = [\"~/.cache/cargo\", \"/opt/build\"]\nprotect = [\"~/.ssh\"]\ngit_writes = true\nallow_sockets = [\"~/.ssh/agent.sock\"]\n",
    );
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert_eq!(
        config.sandbox,
        SandboxConfig {
            mode: SandboxMode::ReadOnly,
            network: SandboxNetwork::On,
            writable: vec![PathBuf::from("/home/me/.cache/cargo"), "/opt/build".into()],
            protect: vec![PathBuf::from("/home/me/.ssh"), fx.home.clone()],
            git_writes: true,
            allow_sockets: vec![PathBuf::from("/home/me/.ssh/agent.sock")],
        }
    );
    // A later layer wins key by key; a list replaces a list.
    let options = LoadOptions {
        overrides: vec![
            "sandbox.mode=workspace-write".into(),
            "sandbox.writable=[]".into(),
        ],
        ..LoadOptions::default()
    };
    let config = fx.load(&options).unwrap();
    assert_eq!(config.sandbox.mode, SandboxMode::WorkspaceWrite);
    assert_eq!(config.sandbox.network, SandboxNetwork::On);
    assert!(config.sandbox.writable.is_empty());
    assert_eq!(
        config.sandbox.protect,
        [PathBuf::from("/home/me/.ssh"), fx.home.clone()]
    );
    // Protecting nothing still protects $TERN_HOME.
    let options = LoadOptions {
        overrides: vec!["sandbox.protect=[]".into()],
        ..LoadOptions::default()
    };
    assert_eq!(
        fx.load(&options).unwrap().sandbox.protect,
        [fx.home.clone()]
    );
}

fn error(text: &str) -> (String, PathBuf) {
    let mut fx = Fixture::new();
    fx.env.insert("HOME".into(), "/home/me".into());
    let file = fx.user_config(text);
    let err = fx.load(&LoadOptions::default()).unwrap_err();
    assert!(
        matches!(err, ConfigError::Invalid { .. } | ConfigError::Toml { .. }),
        "{err:?}"
    );
    (err.to_string(), file)
}

#[test]
fn mistakes_name_file_line_and_key() {
    let text = "[sandbox]\nnetwork = \"off\"\nmode = \"none\"\n";
    let (message, file) = error(text);
    assert!(
        message.starts_with(&format!("{}:{}:", file.display(), line_of(text, "mode"))),
        "{message}"
    );
    assert!(message.contains("sandbox.mode"), "{message}");
    assert!(message.contains("workspace-write"), "{message}");

    let text = "[sandbox]\nnetwork = \"maybe\"\n";
    let (message, _) = error(text);
    assert!(
        message.contains("sandbox.network") && message.contains("on or off"),
        "{message}"
    );

    let text = "[sandbox]\nwritable = [\"/ok\",\n  \"build\"]\n";
    let (message, file) = error(text);
    assert!(
        message.starts_with(&format!("{}:3:", file.display())),
        "{message}"
    );
    assert!(
        message.contains("sandbox.writable") && message.contains("relative"),
        "{message}"
    );

    let text = "[sandbox]\nmode = \"read-only\"\nnetwrok = \"on\"\n";
    let (message, file) = error(text);
    assert!(
        message.starts_with(&format!(
            "{}:3:1: unknown key \"netwrok\" in [sandbox]; expected one of mode, network, writable, protect",
            file.display()
        )),
        "{message}"
    );
}
