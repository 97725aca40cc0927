//! What a sub-agent's run inherits from the run that started it: its `--config` files below its
//! own, and a ceiling no layer of its own may widen.

use tern_config::{Ceiling, LoadOptions, PermissionMode, RuleList, SandboxMode};
use tern_sandbox::Network;

use super::Fixture;

/// A ceiling that opens every sandbox door, so a test narrows only what it names.
fn open() -> Ceiling {
    Ceiling {
        mode: PermissionMode::Yolo,
        sandbox: SandboxMode::FullAccess,
        network: Network::On,
        git_writes: true,
        allow_sockets: vec!["/run/a.sock".into()],
    }
}

#[test]
fn a_ceiling_keeps_a_sub_run_from_opening_the_network_git_or_a_socket() {
    let fx = Fixture::new();
    fx.user_config(
        "[sandbox]\nnetwork = \"on\"\ngit_writes = true\nallow_sockets = [\"/run/a.sock\", \"/run/b.sock\"]\n",
    );
    // No ceiling: the layers decide.
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert_eq!(config.sandbox.network, Network::On);
    assert!(config.sandbox.git_writes);
    assert_eq!(config.sandbox.allow_sockets.len(), 2);
    // A parent with the network off, `.git` read-only and one socket allowed.
    let options = LoadOptions {
        ceiling: Some(Ceiling {
            network: Network::Off,
            git_writes: false,
            ..open()
        }),
        ..LoadOptions::default()
    };
    let config = fx.load(&options).unwrap();
    assert_eq!(config.sandbox.network, Network::Off);
    assert!(!config.sandbox.git_writes);
    assert_eq!(
        config.sandbox.allow_sockets,
        [std::path::PathBuf::from("/run/a.sock")]
    );
}

#[test]
fn a_ceiling_narrows_the_mode_and_the_sandbox_whatever_the_layers_say() {
    let fx = Fixture::new();
    fx.user_config("[permissions]\nmode = \"yolo\"\n[sandbox]\nmode = \"full-access\"\n");
    let options = LoadOptions {
        overrides: vec!["sandbox.mode=\"full-access\"".into()],
        mode: Some(PermissionMode::AcceptEdits),
        ceiling: Some(Ceiling {
            mode: PermissionMode::Default,
            sandbox: SandboxMode::ReadOnly,
            ..open()
        }),
        ..LoadOptions::default()
    };
    let config = fx.load(&options).unwrap();
    assert_eq!(config.permissions.mode, PermissionMode::Default);
    assert_eq!(config.sandbox.mode, SandboxMode::ReadOnly);
    // A ceiling looser than the layers changes nothing.
    let options = LoadOptions {
        mode: Some(PermissionMode::ReadOnly),
        ceiling: Some(Ceiling {
            mode: PermissionMode::Yolo,
            sandbox: SandboxMode::FullAccess,
            ..open()
        }),
        ..LoadOptions::default()
    };
    let config = fx.load(&options).unwrap();
    assert_eq!(config.permissions.mode, PermissionMode::ReadOnly);
    assert_eq!(config.sandbox.mode, SandboxMode::FullAccess);
}

#[test]
fn inherited_config_files_are_layers_below_the_runs_own_and_their_denies_stay() {
    let fx = Fixture::new();
    let parent = fx.write(
        "parent.toml",
        "[permissions]\ndeny = [\"fs__read_file(**/.env)\"]\n",
    );
    let own = fx.write("own.toml", "[permissions]\nallow = [\"fs__read_file\"]\n");
    let options = LoadOptions {
        inherited_config_files: vec![parent.clone()],
        config_file: Some(own.clone()),
        rules: vec![(RuleList::Deny, "shell__run(cat *)".into())],
        ..LoadOptions::default()
    };
    let config = fx.load(&options).unwrap();
    let deny: Vec<_> = config.permissions.deny.iter().map(|r| &r.rule).collect();
    assert_eq!(deny, ["fs__read_file(**/.env)", "shell__run(cat *)"]);
    assert_eq!(config.permissions.deny[0].file, parent);
    assert_eq!(config.permissions.allow.last().map(|r| &r.file), Some(&own));
    // A missing inherited file is an error like a missing --config.
    let options = LoadOptions {
        inherited_config_files: vec![fx.root.join("gone.toml")],
        ..LoadOptions::default()
    };
    assert!(fx.load(&options).is_err());
}

#[test]
fn ceilings_combine_to_the_tighter_of_each() {
    let a = Ceiling {
        mode: PermissionMode::Yolo,
        sandbox: SandboxMode::ReadOnly,
        network: Network::Off,
        git_writes: true,
        allow_sockets: vec!["/run/a.sock".into(), "/run/b.sock".into()],
    };
    let b = Ceiling {
        mode: PermissionMode::ReadOnly,
        sandbox: SandboxMode::FullAccess,
        network: Network::On,
        git_writes: false,
        allow_sockets: vec!["/run/b.sock".into()],
    };
    assert_eq!(
        a.and(b),
        Ceiling {
            mode: PermissionMode::ReadOnly,
            sandbox: SandboxMode::ReadOnly,
            network: Network::Off,
            git_writes: false,
            allow_sockets: vec!["/run/b.sock".into()],
        }
    );
}
