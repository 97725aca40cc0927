//! Harbor's task format, as `tern eval` reads it.
//!
//! The shapes follow Harbor's own model of `task.toml` (`harbor.models.task.config.TaskConfig`
//! in the `harbor` package 0.26.0 on PyPI, schema_version 1.4) and its directory layout
//! (`harbor.models.task.paths.TaskPaths`):
//!
//! ```text
//! task/
//! ├── task.toml         # schema_version, [task], [metadata], [verifier], [agent], [environment]
//! ├── instruction.md    # what the agent is asked
//! ├── environment/      # Dockerfile (optional here) and the files it copies: the workspace
//! ├── tests/test.sh     # the verifier (+ its files), copied to /tests after the agent ran
//! └── solution/solve.sh # optional reference solution (`tern eval --oracle`)
//! ```
//!
//! Every key Harbor's schema has is accepted — a task written for Harbor runs unchanged — and
//! any other key is an error naming its line, as in tern's format, so a typo cannot silently
//! change what a suite measures. Keys tern acts on: `[verifier] timeout_sec, env`,
//! `[agent] timeout_sec`, `[environment] docker_image, workdir, mcp_servers`,
//! `[metadata] category`. tern's own additions live under `[metadata.tern]` (Harbor keeps
//! `[metadata]` free-form): `mode`, `allow`, `ask`, `deny`, `max_steps`, `recording`.
//! Multi-step tasks (`[[steps]]`) and Windows tasks are refused with a message.

use std::{collections::BTreeMap, path::Path};

use serde::Deserialize;
use tern_config::PermissionMode;

use super::{
    DEFAULT_TIMEOUT, HarborVerifier, INSTRUCTION_FILE, Image, TASK_FILE, Task, TaskError,
    TaskFormat, Verifier,
};

/// Harbor's default verifier timeout (`VerifierConfig.timeout_sec = 600.0`).
const DEFAULT_VERIFIER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Where the workspace appears when the task names none; Terminal-Bench's images all use it.
pub const DEFAULT_WORKDIR: &str = "/app";

/// Files of `environment/` that build the container rather than belong to the workspace.
pub const DOCKER_FILES: [&str; 4] = [
    "Dockerfile",
    ".dockerignore",
    "docker-compose.yaml",
    "docker-compose.yml",
];

/// `task.toml` as Harbor writes it. Sections and keys tern does not act on are kept as raw
/// values only so that they are accepted.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
// Every key of Harbor's schema is read so that a Harbor task loads; tern acts on a few.
#[allow(dead_code)]
pub(crate) struct RawHarborTask {
    #[serde(default)]
    pub(crate) schema_version: Option<String>,
    /// The schema version's old name (Harbor renames it on load).
    #[serde(default)]
    pub(crate) version: Option<String>,
    #[serde(default)]
    pub(crate) task: Option<RawPackage>,
    #[serde(default)]
    pub(crate) metadata: BTreeMap<String, toml::Value>,
    #[serde(default)]
    pub(crate) verifier: RawVerifier,
    #[serde(default)]
    pub(crate) agent: RawAgent,
    #[serde(default)]
    pub(crate) environment: RawEnvironment,
    #[serde(default)]
    pub(crate) solution: Option<toml::Value>,
    #[serde(default)]
    pub(crate) source: Option<String>,
    #[serde(default)]
    pub(crate) multi_step_reward_strategy: Option<toml::Value>,
    #[serde(default)]
    pub(crate) steps: Option<Vec<toml::Value>>,
    #[serde(default)]
    pub(crate) artifacts: Option<Vec<toml::Value>>,
}

/// `[task]`: the package's identity in the registry.
#[derive(Debug, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
// Every key of Harbor's schema is read so that a Harbor task loads; tern acts on a few.
#[allow(dead_code)]
pub(crate) struct RawPackage {
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) authors: Vec<toml::Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) keywords: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
// Every key of Harbor's schema is read so that a Harbor task loads; tern acts on a few.
#[allow(dead_code)]
pub(crate) struct RawVerifier {
    #[serde(default)]
    pub(crate) timeout_sec: Option<f64>,
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) user: Option<toml::Value>,
    #[serde(default)]
    pub(crate) environment_mode: Option<String>,
    #[serde(default)]
    pub(crate) environment: Option<toml::Value>,
    #[serde(default)]
    pub(crate) collect: Option<Vec<toml::Value>>,
    #[serde(default)]
    pub(crate) network_mode: Option<String>,
    #[serde(default)]
    pub(crate) allowed_hosts: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
// Every key of Harbor's schema is read so that a Harbor task loads; tern acts on a few.
#[allow(dead_code)]
pub(crate) struct RawAgent {
    #[serde(default)]
    pub(crate) timeout_sec: Option<f64>,
    #[serde(default)]
    pub(crate) user: Option<toml::Value>,
    #[serde(default)]
    pub(crate) network_mode: Option<String>,
    #[serde(default)]
    pub(crate) allowed_hosts: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
// Every key of Harbor's schema is read so that a Harbor task loads; tern acts on a few.
#[allow(dead_code)]
pub(crate) struct RawEnvironment {
    #[serde(default)]
    pub(crate) build_timeout_sec: Option<f64>,
    #[serde(default)]
    pub(crate) docker_image: Option<String>,
    #[serde(default)]
    pub(crate) os: Option<String>,
    #[serde(default)]
    pub(crate) cpus: Option<toml::Value>,
    #[serde(default)]
    pub(crate) memory_mb: Option<i64>,
    #[serde(default)]
    pub(crate) storage_mb: Option<i64>,
    /// Deprecated spellings of the two above (`"2G"`).
    #[serde(default)]
    pub(crate) memory: Option<String>,
    #[serde(default)]
    pub(crate) storage: Option<String>,
    #[serde(default)]
    pub(crate) gpus: Option<i64>,
    #[serde(default)]
    pub(crate) gpu_types: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) tpu: Option<toml::Value>,
    #[serde(default)]
    pub(crate) mcp_servers: Vec<RawMcpServer>,
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) skills_dir: Option<String>,
    #[serde(default)]
    pub(crate) healthcheck: Option<toml::Value>,
    #[serde(default)]
    pub(crate) workdir: Option<String>,
    #[serde(default)]
    pub(crate) allow_internet: Option<bool>,
    #[serde(default)]
    pub(crate) network_mode: Option<String>,
    #[serde(default)]
    pub(crate) allowed_hosts: Option<Vec<String>>,
}

/// `[[environment.mcp_servers]]` (Harbor's `MCPServerConfig`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMcpServer {
    pub(crate) name: String,
    /// `stdio`, `sse`, `streamable-http` (or `http`); Harbor's default is `sse`.
    #[serde(default)]
    pub(crate) transport: Option<String>,
    #[serde(default)]
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) command: Option<String>,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
}

/// `[metadata.tern]`: what tern needs that Harbor's schema has no key for.
#[derive(Debug, Default, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TernMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mode: Option<PermissionMode>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) ask: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) deny: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_steps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) recording: Option<String>,
}

/// Reads a Harbor task directory.
pub fn load(dir: &Path) -> Result<Task, TaskError> {
    let path = dir.join(TASK_FILE);
    let text = super::read(&path)?;
    let raw: RawHarborTask = super::parse_toml(&text, &path)?;
    let invalid = |message: String| TaskError::Invalid {
        path: path.clone(),
        message,
    };
    if raw.steps.as_ref().is_some_and(|s| !s.is_empty()) {
        return Err(invalid(
            "multi-step tasks (`[[steps]]`) are not supported by tern eval yet".into(),
        ));
    }
    if let Some(os) = &raw.environment.os
        && !os.eq_ignore_ascii_case("linux")
    {
        return Err(invalid(format!(
            "`[environment] os = {os:?}`: tern eval runs Linux tasks only"
        )));
    }
    // The instruction as the agent gets it; the trailing newline of the file is not part of it
    // (a shell's `"$(cat instruction.md)"` drops it too, so a recorded goal matches).
    let goal = super::read(&dir.join(INSTRUCTION_FILE))?
        .trim_end()
        .to_string();
    if goal.trim().is_empty() {
        return Err(invalid(format!("{INSTRUCTION_FILE} is empty")));
    }
    let tests = dir.join("tests");
    let script = "test.sh".to_string();
    if !tests.join(&script).is_file() {
        return Err(invalid(format!(
            "no verifier: {} does not exist",
            tests.join(&script).display()
        )));
    }
    let tern: TernMetadata = match raw.metadata.get("tern") {
        Some(value) => value
            .clone()
            .try_into()
            .map_err(|e| invalid(format!("[metadata.tern]: {e}")))?,
        None => TernMetadata::default(),
    };
    if tern.max_steps == Some(0) {
        return Err(invalid(
            "`[metadata.tern] max_steps` must be at least 1".into(),
        ));
    }
    let rules = super::rules(&tern.allow, &tern.ask, &tern.deny).map_err(&invalid)?;
    let environment = dir.join("environment");
    let dockerfile = environment.join("Dockerfile");
    let image = match (&raw.environment.docker_image, dockerfile.is_file()) {
        (Some(name), _) => Some(Image::Named(name.clone())),
        (None, true) => Some(Image::Dockerfile(dockerfile)),
        (None, false) => None,
    };
    let overrides = mcp_overrides(&raw.environment.mcp_servers).map_err(&invalid)?;
    let solution = dir.join("solution");
    Ok(Task {
        name: super::dir_name(dir),
        dir: dir.to_path_buf(),
        format: TaskFormat::Harbor,
        kind: raw
            .metadata
            .get("category")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string(),
        goal,
        project: environment,
        exclude: DOCKER_FILES.iter().map(|s| s.to_string()).collect(),
        recording: dir.join(tern.recording.as_deref().unwrap_or("recording.jsonl")),
        max_steps: tern.max_steps,
        timeout: super::seconds(
            raw.agent.timeout_sec,
            "[agent] timeout_sec",
            DEFAULT_TIMEOUT,
        )
        .map_err(&invalid)?,
        // Harbor's agents run with every permission inside their container (Claude Code with
        // its permission prompts skipped, Codex in full-auto); tern's sandbox still confines
        // the shell to the workspace when the task runs on this machine.
        mode: Some(tern.mode.unwrap_or(PermissionMode::Yolo)),
        rules,
        overrides,
        verifier: Verifier::Harbor(HarborVerifier {
            tests,
            script,
            timeout: super::seconds(
                raw.verifier.timeout_sec,
                "[verifier] timeout_sec",
                DEFAULT_VERIFIER_TIMEOUT,
            )
            .map_err(&invalid)?,
            env: raw.verifier.env,
            workdir: raw
                .environment
                .workdir
                .unwrap_or_else(|| DEFAULT_WORKDIR.to_string()),
            solution: solution.join("solve.sh").is_file().then_some(solution),
            image,
        }),
        instance_id: raw
            .metadata
            .get("instance_id")
            .and_then(|v| v.as_str())
            .map(str::to_string),
    })
}

/// `-c` overrides that add a Harbor task's MCP servers to tern's config, as
/// `mcp_servers.NAME.*` (tern speaks stdio and streamable HTTP; Harbor's default transport,
/// the old SSE one, is taken as a URL too — a server that only speaks SSE fails to start, with
/// its reason in the run's events).
fn mcp_overrides(servers: &[RawMcpServer]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for s in servers {
        if s.name.is_empty()
            || !s
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "[[environment.mcp_servers]] name {:?}: letters, digits, `-` and `_` only",
                s.name
            ));
        }
        let key = format!("mcp_servers.{}", s.name);
        let quote = |v: &str| toml::Value::String(v.to_string()).to_string();
        match s.transport.as_deref().unwrap_or("sse") {
            "stdio" => {
                let command = s.command.as_deref().ok_or_else(|| {
                    format!("MCP server {}: `command` is required for stdio", s.name)
                })?;
                out.push(format!("{key}.command={}", quote(command)));
                let args = toml::Value::Array(
                    s.args
                        .iter()
                        .map(|a| toml::Value::String(a.clone()))
                        .collect(),
                );
                out.push(format!("{key}.args={args}"));
            }
            "sse" | "streamable-http" | "http" => {
                let url = s
                    .url
                    .as_deref()
                    .ok_or_else(|| format!("MCP server {}: `url` is required for HTTP", s.name))?;
                out.push(format!("{key}.url={}", quote(url)));
                if !s.headers.is_empty() {
                    let mut table = toml::map::Map::new();
                    for (k, v) in &s.headers {
                        table.insert(k.clone(), toml::Value::String(v.clone()));
                    }
                    out.push(format!("{key}.http_headers={}", toml::Value::Table(table)));
                }
            }
            other => {
                return Err(format!(
                    "MCP server {}: unknown transport {other:?}",
                    s.name
                ));
            }
        }
    }
    Ok(out)
}

/// Resolves `[verifier] env` the way Harbor does (`harbor.utils.env.resolve_env_vars`): a value
/// that is exactly `${VAR}` or `${VAR:-default}` is read from this process's environment, any
/// other value is literal; a missing variable without a default is an error.
pub fn resolve_env(
    env: &BTreeMap<String, String>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (key, value) in env {
        let template = value
            .strip_prefix("${")
            .and_then(|v| v.strip_suffix('}'))
            .filter(|inner| {
                let name = inner.split(":-").next().unwrap_or_default();
                !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !name.starts_with(|c: char| c.is_ascii_digit())
            });
        let resolved = match template {
            None => value.clone(),
            Some(inner) => {
                let (name, default) = match inner.split_once(":-") {
                    Some((n, d)) => (n, Some(d)),
                    None => (inner, None),
                };
                match (lookup(name), default) {
                    (Some(v), _) => v,
                    (None, Some(d)) => d.to_string(),
                    (None, None) => {
                        return Err(format!(
                            "[verifier] env {key}: the variable {name} is not set"
                        ));
                    }
                }
            }
        };
        out.insert(key.clone(), resolved);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn harbor_dir(toml: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::create_dir_all(dir.path().join("environment")).unwrap();
        std::fs::write(dir.path().join(TASK_FILE), toml).unwrap();
        std::fs::write(dir.path().join(INSTRUCTION_FILE), "Fix the bug.\n").unwrap();
        std::fs::write(dir.path().join("tests/test.sh"), "exit 0\n").unwrap();
        dir
    }

    /// The example of Harbor's docs ("Tasks" page), extended with keys of its schema.
    const HARBOR_EXAMPLE: &str = r#"
version = "1.0"

[task]
name = "harbor/hello-world"
description = "say hello"
authors = [{ name = "Alex Shaw", email = "alex@example.com" }]
keywords = ["trivial"]

[metadata]
author_name = "Alex Shaw"
difficulty = "easy"
category = "programming"
tags = ["trivial", "alpine"]

[verifier]
timeout_sec = 120.0
env = { TOKEN = "${HOME}" }

[agent]
timeout_sec = 90.0

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 2048
storage_mb = 10240
allow_internet = true
workdir = "/srv/app"

[[environment.mcp_servers]]
name = "docs"
transport = "stdio"
command = "docs-server"
args = ["--root", "/srv"]

[[environment.mcp_servers]]
name = "search"
transport = "streamable-http"
url = "http://127.0.0.1:9/mcp"
"#;

    #[test]
    fn a_task_written_for_harbor_loads_unchanged() {
        let dir = harbor_dir(HARBOR_EXAMPLE);
        std::fs::write(dir.path().join("environment/Dockerfile"), "FROM alpine\n").unwrap();
        let task = load(dir.path()).unwrap();
        assert_eq!(task.format, TaskFormat::Harbor);
        assert_eq!(task.kind, "programming");
        assert_eq!(task.goal, "Fix the bug.");
        assert_eq!(task.timeout, Duration::from_secs(90));
        assert_eq!(task.mode, Some(PermissionMode::Yolo));
        assert_eq!(task.project, dir.path().join("environment"));
        let h = task.harbor().unwrap();
        assert_eq!(h.timeout, Duration::from_secs(120));
        assert_eq!(h.workdir, "/srv/app");
        assert_eq!(h.env["TOKEN"], "${HOME}");
        assert_eq!(
            h.image,
            Some(Image::Dockerfile(dir.path().join("environment/Dockerfile")))
        );
        assert_eq!(
            task.overrides,
            [
                "mcp_servers.docs.command=\"docs-server\"",
                "mcp_servers.docs.args=[\"--root\", \"/srv\"]",
                "mcp_servers.search.url=\"http://127.0.0.1:9/mcp\"",
            ]
        );
    }

    #[test]
    fn defaults_follow_harbor_and_metadata_tern_adds_rules() {
        let dir = harbor_dir(
            "schema_version = \"1.4\"\n[metadata.tern]\nmode = \"accept-edits\"\n\
             allow = [\"shell__run(make *)\"]\nmax_steps = 7\n",
        );
        let task = load(dir.path()).unwrap();
        let h = task.harbor().unwrap();
        assert_eq!(h.timeout, DEFAULT_VERIFIER_TIMEOUT);
        assert_eq!(h.workdir, DEFAULT_WORKDIR);
        assert_eq!(h.image, None);
        assert_eq!(h.solution, None);
        assert_eq!(task.timeout, DEFAULT_TIMEOUT);
        assert_eq!(task.mode, Some(PermissionMode::AcceptEdits));
        assert_eq!(task.max_steps, Some(7));
        assert_eq!(task.rules.len(), 1);
    }

    #[test]
    fn typos_and_unsupported_shapes_are_errors_naming_the_place() {
        let dir = harbor_dir("[verifier]\ntimeout = 3\n");
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("task.toml:2:1") && err.contains("timeout"),
            "{err}"
        );

        let dir = harbor_dir("[metadata.tern]\nmod = \"yolo\"\n");
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("[metadata.tern]") && err.contains("mod"),
            "{err}"
        );

        let dir = harbor_dir("[[steps]]\nname = \"one\"\n");
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("multi-step"), "{err}");

        let dir = harbor_dir("[environment]\nos = \"windows\"\n");
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("Linux"), "{err}");

        let dir = harbor_dir("[agent]\ntimeout_sec = 0\n");
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("[agent] timeout_sec"), "{err}");

        let dir = harbor_dir("");
        std::fs::remove_file(dir.path().join("tests/test.sh")).unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no verifier"), "{err}");
    }

    #[test]
    fn verifier_env_templates_resolve_like_harbor() {
        let env: BTreeMap<String, String> = [
            ("A", "${SET}"),
            ("B", "${UNSET:-fallback}"),
            ("C", "literal ${SET}"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let lookup = |n: &str| (n == "SET").then(|| "value".to_string());
        let out = resolve_env(&env, lookup).unwrap();
        assert_eq!(out["A"], "value");
        assert_eq!(out["B"], "fallback");
        assert_eq!(out["C"], "literal ${SET}");
        let missing: BTreeMap<String, String> = [("D".to_string(), "${NOPE}".to_string())].into();
        assert!(resolve_env(&missing, lookup).unwrap_err().contains("NOPE"));
    }
}
