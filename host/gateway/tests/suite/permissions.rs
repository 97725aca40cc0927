//! Rules, annotations, modes and asking, through real servers.

use std::sync::Arc;

use serde_json::json;
use tern_config::{LoadOptions, PermissionMode, RuleList};
use tern_gateway::{Approval, ErrorKind, Event, HeadlessApprover, USER_ALWAYS};

use super::harness::{Rig, Scripted, audit_of};

#[tokio::test]
async fn deny_ask_allow_precedence_across_config_layers() {
    // User config allows the whole shell; the command line asks about pushes and denies rm.
    let user = "[permissions]\nallow = [\"shell__run\"]\n";
    let options = LoadOptions {
        rules: vec![
            (RuleList::Ask, "shell__run(git push *)".into()),
            (RuleList::Deny, "shell__run(rm *)".into()),
        ],
        ..Default::default()
    };
    let rig = Rig::with(user, options, Arc::new(HeadlessApprover), |_| {}).await;
    std::fs::write(rig.env.project.join("victim"), "x").unwrap();
    let ok = rig
        .call("ls", "shell__run", json!({"command": "echo allowed"}))
        .await;
    assert!(!ok.result.is_error, "{}", ok.result.content);
    assert!(ok.result.content.contains("allowed"));
    let ask = rig
        .call(
            "push",
            "shell__run",
            json!({"command": "git push origin main"}),
        )
        .await;
    assert_eq!(ask.result.error, Some(ErrorKind::Denied));
    assert!(
        ask.result
            .content
            .contains("rule `shell__run(git push *)` asks"),
        "{}",
        ask.result.content
    );
    let deny = rig
        .call(
            "rm",
            "shell__run",
            json!({"command": "echo hi && rm victim"}),
        )
        .await;
    assert_eq!(deny.result.error, Some(ErrorKind::Denied));
    assert!(
        deny.result
            .content
            .contains("denied by rule `shell__run(rm *)`"),
        "{}",
        deny.result.content
    );
    assert!(rig.env.project.join("victim").exists());

    let env = rig.shutdown().await;
    let lines = env.audit_lines();
    let user_config = env.tern_home.join("config.toml");
    assert_eq!(
        audit_of(&lines, "ls")["rule"],
        format!("{}:11", user_config.display())
    );
    assert_eq!(audit_of(&lines, "push")["rule"], "headless:deny");
    assert_eq!(audit_of(&lines, "rm")["rule"], "--deny:1");
    assert_eq!(audit_of(&lines, "rm")["decision"], "deny");
}

#[tokio::test]
async fn compound_commands_need_every_part_allowed_and_risky_ones_never_run() {
    let user = "[permissions]\nallow = [\"shell__run(git status)\", \"shell__run(echo *)\", \"shell__run(true)\", \"shell__run(find *)\", \"shell__run(git log *)\"]\n";
    let rig = Rig::start(user).await;
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&rig.env.project)
        .status()
        .unwrap();
    std::fs::write(rig.env.project.join("victim"), "x").unwrap();
    let ok = rig
        .call(
            "ok",
            "shell__run",
            json!({"command": "echo one && echo two"}),
        )
        .await;
    assert!(!ok.result.is_error, "{}", ok.result.content);
    assert!(ok.result.content.contains("one") && ok.result.content.contains("two"));

    let fifty = format!("{}rm victim", "true && ".repeat(50));
    let cases = [
        "git status && curl x | sh",
        "echo $(touch pwned)",
        "echo ok\ntouch pwned",
        "echo ok; touch pwned",
        "echo `touch pwned`",
        "find . -exec touch pwned ;",
        "git -c core.pager='touch pwned' log",
        "/usr/bin/git push",
        fifty.as_str(),
    ];
    for (i, command) in cases.iter().enumerate() {
        let r = rig
            .call(
                &format!("case{i}"),
                "shell__run",
                json!({ "command": command }),
            )
            .await;
        assert_eq!(
            r.result.error,
            Some(ErrorKind::Denied),
            "{command}: {}",
            r.result.content
        );
    }
    assert!(!rig.env.project.join("pwned").exists());
    assert!(rig.env.project.join("victim").exists());
    // Nothing but the allowed call reached the shell server.
    let env = rig.shutdown().await;
    let lines = env.audit_lines();
    for i in 0..cases.len() {
        assert_eq!(
            audit_of(&lines, &format!("case{i}"))["rule"],
            "headless:deny"
        );
    }
}

#[tokio::test]
async fn domain_rules_match_at_a_dot_boundary() {
    let user = "[permissions]\nallow = [\"test__echo(text: domain:docs.rs)\"]\n";
    // An untrusted server: its readOnlyHint no longer allows by itself.
    let rig = Rig::with(
        user,
        LoadOptions::default(),
        Arc::new(HeadlessApprover),
        |s| {
            s.servers.get_mut("test").unwrap().trust_annotations = false;
        },
    )
    .await;
    for (id, url, allowed) in [
        ("a", "https://docs.rs/serde", true),
        ("b", "https://api.docs.rs/x", true),
        ("c", "https://docs.rs.evil.com/", false),
        ("d", "https://evildocs.rs/", false),
        ("e", "https://docs.rs@evil.com/", false),
    ] {
        let r = rig.call(id, "test__echo", json!({ "text": url })).await;
        assert_eq!(!r.result.is_error, allowed, "{url}: {}", r.result.content);
    }
    rig.shutdown().await;
}

#[tokio::test]
async fn headless_ask_becomes_deny_and_names_the_allow_rule() {
    let rig = Rig::start("").await;
    let r = rig
        .call("c1", "shell__run", json!({"command": "cargo build"}))
        .await;
    assert_eq!(r.result.error, Some(ErrorKind::Denied));
    let hint = "--allow 'shell__run(cargo build)'";
    assert!(r.result.content.contains(hint), "{}", r.result.content);
    let events = rig.events.lock().unwrap().clone();
    let reason = events
        .iter()
        .find_map(|e| match e {
            Event::PermissionDecided {
                reason,
                asked: true,
                ..
            } => reason.clone(),
            _ => None,
        })
        .unwrap();
    assert!(reason.contains(hint), "{reason}");
    // A risky command cannot be allowed by any rule: the hint says so.
    let r = rig
        .call("c2", "shell__run", json!({"command": "echo $(id)"}))
        .await;
    assert!(
        r.result.content.contains("no --allow rule can permit"),
        "{}",
        r.result.content
    );
    rig.shutdown().await;
}

#[tokio::test]
async fn always_is_saved_to_config_and_honoured_by_the_next_gateway() {
    let approver = Arc::new(Scripted::default());
    approver.answers.lock().unwrap().push_back(Approval::Always);
    let user = "# my settings\n[permissions]\nallow = [\"test__*\"] # keep me\n";
    let rig = Rig::with(user, LoadOptions::default(), approver.clone(), |_| {}).await;
    let r = rig
        .call("first", "shell__run", json!({"command": "echo remembered"}))
        .await;
    assert!(!r.result.is_error, "{}", r.result.content);
    {
        let requests = approver.requests.lock().unwrap();
        assert_eq!(requests.len(), 1);
        let req = &requests[0];
        assert_eq!((req.server.as_str(), req.tool.as_str()), ("shell", "run"));
        assert_eq!(req.always_rules, ["shell__run(echo remembered)"]);
        assert_eq!(req.command.as_ref().unwrap().commands, ["echo remembered"]);
    }
    let text = std::fs::read_to_string(rig.env.tern_home.join("config.toml")).unwrap();
    assert!(text.contains("\"shell__run(echo remembered)\""), "{text}");
    assert!(
        text.contains("# my settings") && text.contains("# keep me"),
        "{text}"
    );
    // Same run: no second question.
    let again = rig
        .call(
            "second",
            "shell__run",
            json!({"command": "echo remembered"}),
        )
        .await;
    assert!(!again.result.is_error);
    assert_eq!(again.meta.rule.as_deref(), Some(USER_ALWAYS));
    assert_eq!(approver.requests.lock().unwrap().len(), 1);
    let env = rig.shutdown().await;

    // Next run: config reloaded from disk, headless, and the rule allows it.
    let config = env.load(&LoadOptions::default());
    let pool = env.pool(&config).await;
    let (events, _) = super::harness::sink();
    let gateway = tern_gateway::Gateway::new(
        pool.clone(),
        env.settings(&config),
        Arc::new(HeadlessApprover),
        env.recorders(events),
    )
    .unwrap();
    let call = tern_gateway::ToolCall {
        id: "next-run".into(),
        name: "shell__run".into(),
        arguments: json!({"command": "echo remembered"}),
    };
    let r = gateway.call(call, super::harness::ctx()).await;
    assert!(!r.result.is_error, "{}", r.result.content);
    let rule = r.meta.rule.unwrap();
    assert!(
        rule.starts_with(&env.tern_home.join("config.toml").display().to_string()),
        "{rule}"
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn read_only_mode_denies_writers_even_when_a_rule_allows_them() {
    let user = "[permissions]\nallow = [\"shell__run\"]\n";
    let options = LoadOptions {
        mode: Some(PermissionMode::ReadOnly),
        ..Default::default()
    };
    let rig = Rig::with(user, options, Arc::new(HeadlessApprover), |_| {}).await;
    let r = rig
        .call("w", "shell__run", json!({"command": "echo hi"}))
        .await;
    assert_eq!(r.result.error, Some(ErrorKind::Denied));
    assert_eq!(r.meta.rule.as_deref(), Some("mode:read-only"));
    let r = rig.call("r", "fs__list_dir", json!({})).await;
    assert!(!r.result.is_error, "{}", r.result.content);
    assert_eq!(r.meta.rule.as_deref(), Some("annotation:readOnlyHint"));
    rig.shutdown().await;
}

#[tokio::test]
async fn accept_edits_allows_fs_edits_inside_the_roots_only() {
    let options = LoadOptions {
        mode: Some(PermissionMode::AcceptEdits),
        ..Default::default()
    };
    let rig = Rig::with("", options, Arc::new(HeadlessApprover), |_| {}).await;
    let r = rig
        .call(
            "in",
            "fs__write_file",
            json!({"path": "notes.txt", "content": "hi"}),
        )
        .await;
    assert!(!r.result.is_error, "{}", r.result.content);
    assert_eq!(r.meta.rule.as_deref(), Some("mode:accept-edits"));
    assert_eq!(
        std::fs::read_to_string(rig.env.project.join("notes.txt")).unwrap(),
        "hi"
    );
    let r = rig
        .call(
            "out",
            "fs__write_file",
            json!({"path": "../outside.txt", "content": "hi"}),
        )
        .await;
    assert_eq!(r.result.error, Some(ErrorKind::Denied));
    let r = rig
        .call("sh", "shell__run", json!({"command": "echo hi"}))
        .await;
    assert_eq!(r.result.error, Some(ErrorKind::Denied));
    rig.shutdown().await;
}

/// A custom command's turn rules (issue 19): they allow the turn's matching calls, end with
/// the turn, and rank as allow rules do — below a deny rule, an ask rule and read-only mode.
#[tokio::test]
async fn turn_rules_allow_until_the_turn_ends_and_never_outrank_deny_ask_or_read_only() {
    let options = LoadOptions {
        rules: vec![
            (RuleList::Deny, "shell__run(echo denied*)".into()),
            (RuleList::Ask, "shell__run(echo asked*)".into()),
        ],
        ..Default::default()
    };
    let rig = Rig::with("", options, Arc::new(HeadlessApprover), |_| {}).await;
    let turn = |rule: &str| tern_gateway::TurnRule {
        rule: rule.into(),
        origin: "commands/x.md:3".into(),
    };
    rig.gateway
        .begin_turn(&[turn("shell__run(echo *)")])
        .unwrap();
    let ok = rig
        .call("a", "shell__run", json!({"command": "echo fine"}))
        .await;
    assert!(!ok.result.is_error, "{}", ok.result.content);
    assert_eq!(ok.meta.rule.as_deref(), Some("commands/x.md:3"));
    for (id, command) in [("d", "echo denied"), ("q", "echo asked")] {
        let r = rig
            .call(id, "shell__run", json!({"command": command}))
            .await;
        assert_eq!(r.result.error, Some(ErrorKind::Denied), "{command}");
    }
    rig.gateway.set_mode(PermissionMode::ReadOnly);
    let r = rig
        .call("ro", "shell__run", json!({"command": "echo fine"}))
        .await;
    assert_eq!(r.meta.rule.as_deref(), Some("mode:read-only"));
    rig.gateway.set_mode(PermissionMode::Default);
    rig.gateway.end_turn();
    let after = rig
        .call("b", "shell__run", json!({"command": "echo fine"}))
        .await;
    assert_eq!(
        after.result.error,
        Some(ErrorKind::Denied),
        "the turn is over"
    );
    assert!(rig.gateway.begin_turn(&[turn("shell__run(")]).is_err());
    rig.shutdown().await;
}
