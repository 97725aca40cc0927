//! `tern tools`, `tern mcp list|doctor|import|approve`, `tern trust` and config
//! errors, driven through the real binary.

use std::process::Output;

use serde_json::Value;
use tern_e2e::{bin, dep, tern};

pub(super) struct Project {
    pub(super) home: tempfile::TempDir,
    pub(super) dir: tempfile::TempDir,
}

impl Project {
    pub(super) fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes `$TERN_HOME/config.toml`.
    pub(super) fn user_config(&self, text: &str) {
        std::fs::write(self.home.path().join("config.toml"), text).unwrap();
    }

    pub(super) fn run(&self, args: &[&str]) -> Output {
        tern(self.home.path(), self.dir.path())
            .args(args)
            .output()
            .unwrap()
    }
}

pub(super) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(super) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(super) fn test_server_entry(name: &str, args: &[&str]) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = {:?}\nstartup_timeout_sec = 60\n",
        bin("tern-test-server").to_string_lossy(),
        args
    )
}

/// Only the servers the test names: the built-ins are turned off to keep tests focused.
pub(super) const NO_BUILTINS: &str = "[mcp_servers.fs]\nenabled = false\n[mcp_servers.shell]\nenabled = false\n[mcp_servers.web]\nenabled = false\n[mcp_servers.todo]\nenabled = false\n[mcp_servers.plan]\nenabled = false\n[mcp_servers.skills]\nenabled = false\n[mcp_servers.lsp]\nenabled = false\n";

#[test]
fn third_party_servers_appear_in_tools_json_with_their_schemas() {
    let p = Project::new();
    let repo = p.dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    assert!(
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&repo)
            .status()
            .unwrap()
            .success()
    );
    let npm = |b: &str| {
        dep(&format!("npm/node_modules/.bin/{b}"))
            .to_string_lossy()
            .into_owned()
    };
    let py = |b: &str| dep(&format!("venv/bin/{b}")).to_string_lossy().into_owned();
    p.user_config(&format!(
        r#"
[mcp_servers.everything]
command = {everything:?}
startup_timeout_sec = 90
[mcp_servers.filesystem]
command = {filesystem:?}
args = [{dir:?}]
startup_timeout_sec = 90
[mcp_servers.memory]
command = {memory:?}
startup_timeout_sec = 90
[mcp_servers.time]
command = {time:?}
startup_timeout_sec = 90
[mcp_servers.git]
command = {git:?}
args = ["--repository", {repo:?}]
startup_timeout_sec = 90
"#,
        everything = npm("mcp-server-everything"),
        filesystem = npm("mcp-server-filesystem"),
        memory = npm("mcp-server-memory"),
        time = py("mcp-server-time"),
        git = py("mcp-server-git"),
        dir = p.dir.path().to_string_lossy(),
        repo = repo.to_string_lossy(),
    ));
    let out = p.run(&["tools", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let find = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| {
                panic!(
                    "{name} missing from `tern tools --json`; stderr: {}",
                    stderr(&out)
                )
            })
            .clone()
    };
    for (name, server, tool, arg) in [
        ("everything__echo", "everything", "echo", "message"),
        (
            "filesystem__read_text_file",
            "filesystem",
            "read_text_file",
            "path",
        ),
        (
            "memory__create_entities",
            "memory",
            "create_entities",
            "entities",
        ),
        (
            "time__get_current_time",
            "time",
            "get_current_time",
            "timezone",
        ),
        ("git__git_status", "git", "git_status", "repo_path"),
        ("fs__read_file", "fs", "read_file", "path"),
        ("shell__run", "shell", "run", "command"),
        ("web__fetch", "web", "fetch", "url"),
    ] {
        let row = find(name);
        assert_eq!(row["server"], server);
        assert_eq!(row["tool"], tool);
        assert_eq!(row["input_schema"]["type"], "object", "{row}");
        assert!(
            row["input_schema"]["properties"][arg].is_object(),
            "{name}: {row}"
        );
        assert!(row["estimated_tokens"].as_u64().unwrap() > 0);
    }
    // Deterministic order: by server, then tool.
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort_by_key(|n| {
        let r = rows.iter().find(|r| r["name"] == *n).unwrap();
        (
            r["server"].as_str().unwrap().to_string(),
            r["tool"].as_str().unwrap().to_string(),
        )
    });
    assert_eq!(names, sorted);
}

#[test]
fn mcp_list_reports_a_missing_command_and_a_crash_with_its_stderr() {
    let p = Project::new();
    p.user_config(&format!(
        "{NO_BUILTINS}[mcp_servers.ghost]\ncommand = \"no-such-server-xyz\"\n{}{}",
        test_server_entry("crashy", &["--crash-at-start"]),
        test_server_entry("good", &[]),
    ));
    let out = p.run(&["mcp", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let servers: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let by = |n: &str| servers.iter().find(|s| s["name"] == n).unwrap().clone();
    assert_eq!(by("good")["status"], "ready");
    assert_eq!(by("good")["tools"], 11);
    assert_eq!(by("good")["protocol_version"], "2026-07-28");
    assert!(by("good")["pid"].as_u64().is_some());
    let ghost = by("ghost");
    assert_eq!(ghost["status"], "failed");
    assert!(
        ghost["reason"].as_str().unwrap().contains("not on PATH"),
        "{ghost}"
    );
    let crashy = by("crashy");
    assert_eq!(crashy["status"], "failed");
    let tail: Vec<String> = serde_json::from_value(crashy["stderr_tail"].clone()).unwrap();
    assert!(
        tail.iter().any(|l| l.contains("crashing at start")),
        "{crashy}"
    );

    let human = stdout(&p.run(&["mcp", "list"]));
    assert!(
        human.contains("ghost") && human.contains("failed"),
        "{human}"
    );
    assert!(human.contains("crashing at start"), "{human}");
    assert!(human.contains("PROTOCOL"), "{human}");
    assert!(
        human
            .lines()
            .any(|l| l.starts_with("good ") && l.contains("2026-07-28")),
        "{human}"
    );
}

/// A key in the environment, which a crashing server prints in its last stderr lines.
const PLANTED: &str = "planted-9f3k2-zebra-quartz-77";

#[test]
fn a_failed_servers_stderr_tail_is_listed_with_the_environments_keys_redacted() {
    let p = Project::new();
    p.user_config(&format!(
        "{NO_BUILTINS}{}env_vars = [\"PLANTED_API_KEY\"]\n",
        test_server_entry(
            "dying",
            &["--crash-after-ms", "50", "--leak-env", "PLANTED_API_KEY"]
        ),
    ));
    let run = |args: &[&str]| {
        tern(p.home.path(), p.dir.path())
            .args(args)
            .env("PLANTED_API_KEY", PLANTED)
            .output()
            .unwrap()
    };
    for args in [
        &["mcp", "list"][..],
        &["mcp", "list", "--json"],
        &["mcp", "doctor"],
        &["mcp", "doctor", "--json"],
    ] {
        let out = run(args);
        let text = stdout(&out);
        // The tail is there: the line before the key and the line after it.
        assert!(
            text.contains("the database refused the connection"),
            "{args:?}: {text}{}",
            stderr(&out)
        );
        assert!(
            text.contains("connecting to the database as [REDACTED]"),
            "{args:?}: {text}"
        );
        assert!(!text.contains(PLANTED), "{args:?} shows the key: {text}");
        if args.contains(&"--json") {
            let parsed: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"));
            assert!(parsed.is_array(), "{text}");
        }
    }
}

#[test]
fn doctor_lints_odd_servers_and_fails_when_a_server_fails() {
    let p = Project::new();
    p.user_config(&format!(
        "{NO_BUILTINS}{}",
        test_server_entry("odd", &["--long-name", "--colliding", "--invalid-schema"])
    ));
    let out = p.run(&["mcp", "doctor"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("odd [ok]"), "{text}");
    assert!(
        text.contains("bad_schema: left out of the table: invalid inputSchema"),
        "{text}"
    );
    assert!(text.contains("too long for providers"), "{text}");
    assert!(text.contains("collides with another tool"), "{text}");

    p.user_config(&format!(
        "{NO_BUILTINS}{}",
        test_server_entry("crashy", &["--crash-at-start"])
    ));
    let out = p.run(&["mcp", "doctor", "crashy"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("crashy [FAILED]"), "{text}");
    assert!(text.contains("crashing at start"), "{text}");
}

#[test]
fn doctor_counts_lines_a_server_prints_on_stdout_that_are_not_mcp() {
    let p = Project::new();
    p.user_config(&format!(
        "{NO_BUILTINS}{}{}",
        test_server_entry("noisy", &["--garbage-stdout"]),
        test_server_entry("quiet", &[])
    ));
    let out = p.run(&["mcp", "doctor"]);
    let text = stdout(&out);
    // A warning, not a failure: the server works, tern skipped the lines.
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains(
            "warning: printed 2 lines on stdout that are not MCP messages (first: `this is not JSON-RPC`)"
        ),
        "{text}"
    );
    let quiet = text.split("quiet [ok]").nth(1).unwrap_or_default();
    assert!(!quiet.contains("on stdout"), "{text}");
    let json = stdout(&p.run(&["mcp", "doctor", "noisy", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["status"]["stray_stdout"]["lines"], 2, "{json}");
}

#[test]
fn config_errors_name_file_line_and_key_and_exit_2() {
    let p = Project::new();
    p.user_config("[mcp_servers.x]\ncommand = \"a\"\ncomand = \"typo\"\n");
    let out = p.run(&["mcp", "list"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let file = p.home.path().join("config.toml");
    assert!(err.contains(&format!("{}:3", file.display())), "{err}");
    assert!(err.contains("comand"), "{err}");
    assert!(err.starts_with("error: "), "{err}");
}

#[test]
fn a_project_config_is_inert_until_trusted_and_again_after_a_change() {
    let p = Project::new();
    p.user_config(NO_BUILTINS);
    std::fs::create_dir(p.dir.path().join(".tern")).unwrap();
    let project_cfg = p.dir.path().join(".tern/config.toml");
    std::fs::write(&project_cfg, test_server_entry("proj", &[])).unwrap();

    let names = |o: &Output| -> Vec<String> {
        let v: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
        v.iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    let out = p.run(&["mcp", "list", "--json"]);
    assert!(
        names(&out).is_empty(),
        "untrusted project config spawned {:?}",
        names(&out)
    );
    assert!(
        stderr(&out).contains("not trusted; run `tern trust`"),
        "{}",
        stderr(&out)
    );

    let trust = p.run(&["trust"]);
    assert!(trust.status.success(), "{}", stderr(&trust));
    assert_eq!(names(&p.run(&["mcp", "list", "--json"])), ["proj"]);

    std::fs::write(&project_cfg, test_server_entry("proj2", &[])).unwrap();
    let out = p.run(&["mcp", "list", "--json"]);
    assert!(names(&out).is_empty());
    assert!(
        stderr(&out).contains("changed since it was trusted"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn mcp_import_adds_servers_that_then_start() {
    let p = Project::new();
    p.user_config(&format!("# my settings\n{NO_BUILTINS}"));
    let mcp_json = p.dir.path().join(".mcp.json");
    std::fs::write(
        &mcp_json,
        serde_json::json!({"mcpServers": {"imported": {
            "command": bin("tern-test-server").to_string_lossy(),
            "args": ["--page-size", "3"]
        }}})
        .to_string(),
    )
    .unwrap();
    let out = p.run(&["mcp", "import", mcp_json.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("imported 1 server(s)"),
        "{}",
        stdout(&out)
    );
    let cfg = std::fs::read_to_string(p.home.path().join("config.toml")).unwrap();
    assert!(cfg.starts_with("# my settings\n"), "{cfg}");
    let out = p.run(&["tools", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        rows.iter().any(|r| r["name"] == "imported__echo"),
        "{rows:?}"
    );
}

#[test]
fn doctor_says_when_roots_narrow_the_directories_a_server_was_given() {
    let p = Project::new();
    let data = tempfile::tempdir().unwrap();
    let data_s = data.path().canonicalize().unwrap();
    let filesystem = dep("npm/node_modules/.bin/mcp-server-filesystem");
    let entry = |extra: &str| {
        format!(
            "{NO_BUILTINS}[mcp_servers.files]\ncommand = {:?}\nargs = [{:?}]\nstartup_timeout_sec = 90\n{extra}",
            filesystem.to_string_lossy(),
            data_s.to_string_lossy()
        )
    };
    p.user_config(&entry(""));
    let doctor = stdout(&p.run(&["mcp", "doctor", "files"]));
    assert!(
        doctor.contains(&format!(
            "its arguments name {}, which the roots it is offered",
            data_s.display()
        )),
        "{doctor}"
    );
    assert!(doctor.contains("roots = false"), "{doctor}");
    p.user_config(&entry("roots = false\n"));
    let doctor = stdout(&p.run(&["mcp", "doctor", "files"]));
    assert!(!doctor.contains("its arguments name"), "{doctor}");
    // The built-ins are confined by their own --root: the shell's `--protect $TERN_HOME`
    // (outside the project, as ~/.tern always is) is policy, not a directory to serve.
    p.user_config("");
    let doctor = stdout(&p.run(&["mcp", "doctor"]));
    assert!(doctor.contains("shell [ok]"), "{doctor}");
    assert!(!doctor.contains("its arguments name"), "{doctor}");
}

#[test]
fn an_http_server_from_config_gets_its_token_from_the_named_env_var() {
    let (mut child, url) = tern_e2e::pool_harness::http_test_server();
    let p = Project::new();
    p.user_config(&format!(
        "{NO_BUILTINS}[mcp_servers.remote]\nurl = {url:?}\nbearer_token_env_var = \"REMOTE_TOKEN\"\nhttp_headers = {{ X-Tern-Test = \"yes\" }}\n"
    ));
    let out = tern(p.home.path(), p.dir.path())
        .args(["mcp", "list", "--json"])
        .env("REMOTE_TOKEN", "tok-xyz")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let servers: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(servers[0]["name"], "remote");
    assert_eq!(servers[0]["transport"], "http");
    assert_eq!(servers[0]["status"], "ready", "{servers:?}");

    // Without the variable: that server fails, naming it; the command still works.
    let out = p.run(&["mcp", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let servers: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(servers[0]["status"], "failed");
    let reason = servers[0]["reason"].as_str().unwrap();
    assert!(reason.contains("REMOTE_TOKEN"), "{reason}");
    let _ = child.kill();
    let _ = child.wait();
}

/// A `SKILL.md` with broken frontmatter is reported by `tern mcp doctor` with its file, line
/// and what is wrong (issue 19, item 2); the good skill beside it and the server are fine.
#[test]
fn doctor_reports_a_skill_with_broken_frontmatter() {
    let p = Project::new();
    let skills = p.home.path().join("skills");
    for (name, text) in [
        (
            "good",
            "---\nname: good\ndescription: Does a good thing.\n---\nBody.\n",
        ),
        ("broken", "---\nname: broken\n---\nNo description.\n"),
    ] {
        std::fs::create_dir_all(skills.join(name)).unwrap();
        std::fs::write(skills.join(name).join("SKILL.md"), text).unwrap();
    }
    let only_skills = NO_BUILTINS.replace(
        "[mcp_servers.skills]\nenabled = false\n",
        "[mcp_servers.skills]\nenabled = true\n",
    );
    p.user_config(&only_skills);
    let out = p.run(&["mcp", "doctor", "skills"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let broken = skills.join("broken/SKILL.md").canonicalize().unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("broken/SKILL.md"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.trim_start().starts_with("error: skill "), "{text}");
    assert!(
        line.contains("`description` is missing"),
        "what is wrong: {text}"
    );
    assert!(
        line.contains(&format!("{}:", broken.display()))
            || line.contains(&format!("{}:", skills.join("broken/SKILL.md").display())),
        "the file: {text}"
    );
    assert!(!text.contains("good/SKILL.md"), "{text}");

    // Only the good one: nothing to report.
    std::fs::remove_dir_all(skills.join("broken")).unwrap();
    let text = stdout(&p.run(&["mcp", "doctor", "skills"]));
    assert!(!text.contains("error:"), "{text}");
}
