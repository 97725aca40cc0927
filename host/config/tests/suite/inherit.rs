//! What a sub-agent's run inherits from the run that started it: its `--config` files below its
//! own, and a ceiling no layer of its own may widen.

use tern_config::{Ceiling, LoadOptions, PermissionMode, RuleList, SandboxMode};

use super::Fixture;

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
    };
    let b = Ceiling {
        mode: PermissionMode::ReadOnly,
        sandbox: SandboxMode::FullAccess,
    };
    assert_eq!(
        a.and(b),
        Ceiling {
            mode: PermissionMode::ReadOnly,
            sandbox: SandboxMode::ReadOnly
        }
    );
}
