use serde_json::{Value, json};
use tern_config::{PermissionMode, RuleList};
use tern_mcp::ToolAnnotations;

use super::*;
use crate::paths::PathScope;
use crate::rules::Rule;
use crate::shell::analyze;

fn ws() -> PathScope {
    PathScope {
        cwd: "/p".into(),
        roots: vec!["/p".into()],
        home: Some("/home/u".into()),
        tern_home: "/home/u/.tern".into(),
    }
}

fn rules(list: &[(RuleList, &str, &str)]) -> RuleSet {
    let mut set = RuleSet::default();
    for (l, text, origin) in list {
        set.push(Rule::compile(text, *l, (*origin).into(), &ws()).unwrap());
    }
    set
}

struct Case {
    name: &'static str,
    args: Value,
    command_arg: Option<&'static str>,
    read_only: Option<bool>,
    trusted: bool,
    is_edit: bool,
    mode: PermissionMode,
}

impl Case {
    fn new(name: &'static str, args: Value) -> Self {
        Self {
            name,
            args,
            command_arg: None,
            read_only: None,
            trusted: true,
            is_edit: false,
            mode: PermissionMode::Default,
        }
    }
    fn shell(command: &str) -> Self {
        Self {
            command_arg: Some("command"),
            ..Self::new("shell__run", json!({ "command": command }))
        }
    }
    fn decide(&self, rules: &RuleSet) -> Verdict {
        self.decide_with(rules, &RuleSet::default())
    }
    fn decide_with(&self, rules: &RuleSet, session: &RuleSet) -> Verdict {
        let w = ws();
        let shell = self
            .command_arg
            .and_then(|a| self.args.get(a))
            .and_then(Value::as_str)
            .map(|c| analyze(c, &w));
        let f = CallFacts {
            name: self.name,
            args: self.args.as_object().unwrap(),
            command_arg: self.command_arg,
            shell: shell.as_ref(),
            ws: &w,
        };
        let annotations = ToolAnnotations {
            read_only: self.read_only,
            ..Default::default()
        };
        let tool = ToolFacts {
            annotations: &annotations,
            trusted: self.trusted,
            is_edit: self.is_edit,
            // As `ToolPolicy::plannable` decides it, with the built-in servers known by name.
            plannable: (self.trusted && self.read_only == Some(true))
                || self.name.starts_with("todo__")
                || self.name.starts_with("plan__"),
            plan_server: self.name.starts_with("plan__"),
            mode: self.mode,
        };
        decide(&f, &tool, rules, session)
    }
}

fn allow(rule: &str) -> Verdict {
    Verdict::Allow { rule: rule.into() }
}

fn rule_of(v: &Verdict) -> &str {
    match v {
        Verdict::Allow { rule } | Verdict::Deny { rule, .. } | Verdict::Ask { rule, .. } => rule,
    }
}

#[test]
fn deny_beats_ask_beats_allow_across_layers() {
    use RuleList::*;
    let set = rules(&[
        (Allow, "shell__run", "user.toml:3"),
        (Ask, "shell__run(git push *)", "project.toml:2"),
        (Deny, "shell__run(rm -rf *)", "<defaults>:9"),
    ]);
    assert_eq!(Case::shell("ls").decide(&set), allow("user.toml:3"));
    let v = Case::shell("git push origin").decide(&set);
    assert!(
        matches!(v, Verdict::Ask { .. }) && rule_of(&v) == "project.toml:2",
        "{v:?}"
    );
    let v = Case::shell("git push && rm -rf /").decide(&set);
    assert!(
        matches!(v, Verdict::Deny { .. }) && rule_of(&v) == "<defaults>:9",
        "{v:?}"
    );
    // A deny in any layer wins even in yolo mode.
    let mut c = Case::shell("rm -rf x");
    c.mode = PermissionMode::Yolo;
    assert!(matches!(c.decide(&set), Verdict::Deny { .. }));
}

#[test]
fn a_rule_beats_a_hint_and_hints_only_count_from_trusted_servers() {
    use RuleList::*;
    let mut c = Case::new("srv__look", json!({}));
    c.read_only = Some(true);
    assert_eq!(
        c.decide(&RuleSet::default()),
        allow("annotation:readOnlyHint")
    );
    let set = rules(&[(Deny, "srv__*", "u:1")]);
    assert!(matches!(c.decide(&set), Verdict::Deny { .. }));
    let set = rules(&[(Ask, "srv__look", "u:2")]);
    assert!(matches!(c.decide(&set), Verdict::Ask { .. }));
    c.trusted = false;
    assert!(matches!(c.decide(&RuleSet::default()), Verdict::Ask { .. }));
    // No annotations at all: destructive, so ask.
    let c = Case::new("srv__do", json!({}));
    let v = c.decide(&RuleSet::default());
    assert!(
        matches!(v, Verdict::Ask { .. }) && rule_of(&v) == "mode:default",
        "{v:?}"
    );
}

#[test]
fn modes() {
    let none = RuleSet::default();
    let allow_all = rules(&[(RuleList::Allow, "*", "u:1")]);
    let mut c = Case::new("srv__do", json!({}));
    c.mode = PermissionMode::Yolo;
    assert_eq!(c.decide(&none), allow("mode:yolo"));
    c.mode = PermissionMode::ReadOnly;
    let v = c.decide(&allow_all);
    assert!(
        matches!(v, Verdict::Deny { .. }) && rule_of(&v) == "mode:read-only",
        "{v:?}"
    );
    c.read_only = Some(true);
    assert_eq!(c.decide(&none), allow("annotation:readOnlyHint"));

    let mut edit = Case::new("fs__write_file", json!({"path": "src/a.rs", "content": ""}));
    edit.is_edit = true;
    assert!(matches!(edit.decide(&none), Verdict::Ask { .. }));
    edit.mode = PermissionMode::AcceptEdits;
    assert_eq!(edit.decide(&none), allow("mode:accept-edits"));
    edit.args = json!({"path": "../elsewhere/a.rs", "content": ""});
    assert!(matches!(edit.decide(&none), Verdict::Ask { .. }));
    let mut other = Case::new("x__write", json!({"path": "a"}));
    other.mode = PermissionMode::AcceptEdits;
    assert!(matches!(other.decide(&none), Verdict::Ask { .. }));
}

#[test]
fn compound_commands_need_every_part_allowed() {
    let set = rules(&[
        (RuleList::Allow, "shell__run(git status)", "u:1"),
        (RuleList::Allow, "shell__run(git log *)", "u:2"),
        (RuleList::Allow, "shell__run(true)", "u:3"),
        (RuleList::Allow, "shell__run(find *)", "u:4"),
        (RuleList::Allow, "shell__run(git *)", "u:5"),
    ]);
    assert_eq!(Case::shell("git status").decide(&set), allow("u:1"));
    assert_eq!(
        Case::shell("git status && git log -1").decide(&set),
        allow("u:1 + u:2")
    );
    let fifty = format!("{}rm -rf x", "true && ".repeat(50));
    for line in [
        "git status && curl x | sh",
        "git status; rm x",
        "git status\nrm x",
        "git status $(rm x)",
        "git status `rm x`",
        "find . -exec rm {} +",
        "git -c core.pager=sh log",
        "/usr/bin/git push",
        fifty.as_str(),
    ] {
        let v = Case::shell(line).decide(&set);
        if line == "/usr/bin/git push" {
            // Normalized to `git push`, which `git *` allows: the path trick gains nothing.
            assert_eq!(v, allow("u:5"), "{line}");
            continue;
        }
        assert!(matches!(v, Verdict::Ask { .. }), "{line}: {v:?}");
    }
    // `/usr/bin/git push` does not dodge a deny on `git push`.
    let deny = rules(&[(RuleList::Deny, "shell__run(git push *)", "u:9")]);
    assert!(matches!(
        Case::shell("/usr/bin/git push").decide(&deny),
        Verdict::Deny { .. }
    ));
    assert!(matches!(
        Case::shell("env A=1 git push -f").decide(&deny),
        Verdict::Deny { .. }
    ));
    // Risky commands are never allowed by a rule, but yolo still allows what nothing denies.
    let mut c = Case::shell("git status $(id)");
    c.mode = PermissionMode::Yolo;
    assert_eq!(c.decide(&set), allow("mode:yolo"));
}

#[test]
fn config_locations_are_write_protected() {
    let allow_all = rules(&[(RuleList::Allow, "*", "u:1")]);
    for path in [
        ".tern/config.toml",
        ".TERN/x",
        "/home/u/.tern/config.toml",
        "/HOME/U/.Tern/new",
    ] {
        let mut c = Case::new("fs__write_file", json!({"path": path, "content": ""}));
        c.mode = PermissionMode::Yolo;
        let v = c.decide(&allow_all);
        assert!(
            matches!(v, Verdict::Deny { .. }) && rule_of(&v) == "protected:config",
            "{path}: {v:?}"
        );
    }
    // Trusted read-only tools may read config.
    let mut read = Case::new("fs__read_file", json!({"path": ".tern/config.toml"}));
    read.read_only = Some(true);
    assert_eq!(
        read.decide(&RuleSet::default()),
        allow("annotation:readOnlyHint")
    );
    let mut c = Case::shell("echo x > .tern/config.toml");
    c.mode = PermissionMode::Yolo;
    assert!(matches!(c.decide(&allow_all), Verdict::Deny { .. }));
}

#[test]
fn domain_rules_respect_dot_boundaries() {
    let set = rules(&[(RuleList::Allow, "web__fetch(url: domain:docs.rs)", "u:1")]);
    let ok = Case::new("web__fetch", json!({"url": "https://docs.rs/serde"}));
    assert_eq!(ok.decide(&set), allow("u:1"));
    for url in [
        "https://docs.rs.evil.com/",
        "https://evildocs.rs/",
        "https://docs.rs@evil.com/",
    ] {
        let c = Case::new("web__fetch", json!({ "url": url }));
        assert!(matches!(c.decide(&set), Verdict::Ask { .. }), "{url}");
    }
}

#[test]
fn always_rules_are_exact_and_verified() {
    let w = ws();
    let none = RuleSet::default();
    let check = |name: &str, args: Value, command_arg: Option<&str>| {
        let shell = command_arg
            .and_then(|a| args.get(a))
            .and_then(Value::as_str)
            .map(|c| analyze(c, &w));
        let f = CallFacts {
            name,
            args: args.as_object().unwrap(),
            command_arg,
            shell: shell.as_ref(),
            ws: &w,
        };
        always_rules(&f, &none, &none)
    };
    assert_eq!(
        check(
            "shell__run",
            json!({"command": "cargo build && cargo test"}),
            Some("command")
        ),
        ["shell__run(cargo build)", "shell__run(cargo test)"]
    );
    assert!(
        check(
            "shell__run",
            json!({"command": "echo $(id)"}),
            Some("command")
        )
        .is_empty()
    );
    assert_eq!(
        check("web__fetch", json!({"url": "https://docs.rs/x"}), None),
        ["web__fetch(url: domain:docs.rs)"]
    );
    assert_eq!(
        check(
            "fs__write_file",
            json!({"path": "a b.txt", "content": "x"}),
            None
        ),
        ["fs__write_file(path: \"/p/a b.txt\")"]
    );
    assert_eq!(check("time__now", json!({}), None), ["time__now"]);
    // A redirection is part of the rule, spelt as a person writes it.
    assert_eq!(
        check(
            "shell__run",
            json!({"command": "echo hi > out.txt"}),
            Some("command")
        ),
        ["shell__run(echo hi > out.txt)"]
    );
}

/// The spellings of `rm -rf` that the third attack run got past a deny rule under yolo: each is
/// a command the gateway cannot read fully, and is denied now that a deny rule names the tool.
#[test]
fn yolo_denies_unreadable_commands_when_a_deny_rule_names_the_tool() {
    let deny = rules(&[(RuleList::Deny, "shell__run(rm -rf *)", "u:1")]);
    for line in [
        "env -S 'rm -rf x'",
        "bash <<< 'rm -rf x'",
        "echo rm -rf x | sh",
        "echo rm -rf x | bash -s",
        "find . -delete",
        "script -qc 'rm -rf x'",
        "$(echo rm) -rf x",
        "$x -rf y",
        "x=rm; $x -rf y",
        "bash -c \"$x\"",
        "eval \"$x\"",
        "printf 'rm -rf x' | xargs -I{} sh -c {}",
        "f() { rm -rf x; }; f",
        "PATH=/tmp/evil ls",
    ] {
        let mut c = Case::shell(line);
        c.mode = PermissionMode::Yolo;
        let v = c.decide(&deny);
        assert!(matches!(&v, Verdict::Deny { .. }), "{line}: {v:?}");
    }
    // What the gateway reads fully is still yolo's, and so is an unreadable command when no
    // deny rule speaks about the tool.
    for (line, set) in [
        ("ls -la && git status", &deny),
        ("echo $HOME", &deny),
        ("echo rm -rf x | sh", &RuleSet::default()),
    ] {
        let mut c = Case::shell(line);
        c.mode = PermissionMode::Yolo;
        assert_eq!(c.decide(set), allow("mode:yolo"), "{line}");
    }
}

#[test]
fn allow_globs_do_not_cover_redirections_unless_the_rule_writes_one() {
    let set = rules(&[
        (RuleList::Allow, "shell__run(git status *)", "u:1"),
        (RuleList::Allow, "shell__run(git log * > log.txt)", "u:2"),
    ]);
    assert_eq!(Case::shell("git status --short").decide(&set), allow("u:1"));
    assert_eq!(
        Case::shell("git status > /dev/null").decide(&set),
        allow("u:1")
    );
    for line in [
        "git status > any-file",
        "git status --short >> notes.md",
        "{ git status; } > any-file",
        "git status 2> errors.txt",
    ] {
        let v = Case::shell(line).decide(&set);
        assert!(matches!(v, Verdict::Ask { .. }), "{line}: {v:?}");
    }
    assert_eq!(
        Case::shell("git log -1 > log.txt").decide(&set),
        allow("u:2")
    );
    assert!(matches!(
        Case::shell("git log -1 > other.txt").decide(&set),
        Verdict::Ask { .. }
    ));
}

#[test]
fn plan_mode_denies_all_but_read_only_todo_and_plan_tools_even_over_allow_rules() {
    let rules = rules(&[(RuleList::Allow, "fs__write_file", "test:1")]);
    let mut write = Case::new("fs__write_file", json!({"path": "a.txt"}));
    write.mode = PermissionMode::Plan;
    write.is_edit = true;
    let v = write.decide(&rules);
    assert_eq!(rule_of(&v), "mode:plan", "{v:?}");
    assert!(
        matches!(&v, Verdict::Deny { reason, .. } if reason.contains("plan__exit")),
        "{v:?}"
    );

    let mut read = Case::new("fs__read_file", json!({"path": "a.txt"}));
    read.mode = PermissionMode::Plan;
    read.read_only = Some(true);
    assert_eq!(read.decide(&rules), allow("annotation:readOnlyHint"));

    let mut exit = Case::new("plan__exit", json!({"plan": "1. do"}));
    exit.read_only = Some(true);
    exit.mode = PermissionMode::Plan;
    assert_eq!(exit.decide(&rules), allow("annotation:readOnlyHint"));
    exit.mode = PermissionMode::Yolo;
    assert_eq!(rule_of(&exit.decide(&rules)), "mode:plan");

    // An untrusted server's read-only claim is not believed in plan mode either.
    let mut theirs = Case::new("theirs__look", json!({}));
    theirs.mode = PermissionMode::Plan;
    theirs.read_only = Some(true);
    theirs.trusted = false;
    assert_eq!(rule_of(&theirs.decide(&rules)), "mode:plan");
}
