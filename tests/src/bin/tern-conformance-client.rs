//! `tern-conformance-client URL`: tern as the client under the official MCP conformance suite
//! (`@modelcontextprotocol/conformance client --command …`).
//!
//! The suite starts one scenario server per scenario, runs this command with the server's URL
//! appended and the scenario's name in `MCP_CONFORMANCE_SCENARIO`, then scores what arrived on
//! the wire. This driver does what a person would: configure the server in a fresh
//! `$TERN_HOME` (`[mcp_servers.conformance] url = URL`), run `tern mcp list` and
//! `tern tools --json`, then `tern run` with a scripted model (tern's loopback mock of the
//! Anthropic API) that calls every tool the server lists, one per turn, with arguments made
//! from the tool's input schema as the model was shown it.
//!
//! Nothing here talks MCP itself: every byte the scenario scores comes from the `tern` binary.
//!
//! Scenario-specific steps, kept in [`plan`]:
//! - A scenario that names the calls to make (`toolCalls` in `MCP_CONFORMANCE_CONTEXT`, e.g.
//!   http-custom-headers) gets exactly those, in that order.
//! - `json_schema_echo` (json-schema-2020-12-preservation) gets, as its `schema` argument, the
//!   other tool's input schema exactly as the model received it: the scenario checks that
//!   tern's table kept the schema intact on its way to the model.
//! - Elicitation scenarios run with `--accept-elicitation-defaults`.
//! - Authorization scenarios (`auth/…`) start with `tern mcp login conformance` ([`login`]).
//!   Every tern command of such a scenario runs with `TERN_OAUTH_BROWSER=fetch`: tern fetches
//!   the authorization URL itself and follows the suite's redirect to its loopback listener
//!   (the suite's authorization server grants without a person), and a run may authorize again
//!   by itself (a step-up, a server that moved to another authorization server). The server's
//!   `oauth` config names tern's Client ID Metadata Document URL (the one the suite expects),
//!   and the pre-registered client a scenario's context gives (`client_id`, and
//!   `client_secret` or `private_key_pem` + `signing_algorithm`, the key written to a file
//!   named by `private_key_file`).
//!
//! Environment: `TERN_BIN` overrides the `tern` binary (default: next to this executable);
//! `TERN_CONFORMANCE_KEEP=1` keeps the scratch `$TERN_HOME` and prints its path.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};
use tern_model::mock::{MockModelServer, script::AnthropicTurn};

/// The server's name in tern's config, so its tools are `conformance__TOOL`.
const SERVER: &str = "conformance";

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start a runtime: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match runtime.block_on(drive()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn drive() -> anyhow::Result<()> {
    let url = std::env::args()
        .nth(1)
        .context("usage: tern-conformance-client SERVER_URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!("scenario {scenario:?} at {url}");
    let tern = tern_binary()?;
    let scratch = tempfile::tempdir()?;
    let home = scratch.path().join("home");
    let work = scratch.path().join("work");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&work)?;
    let model = MockModelServer::start().await?;
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let auth = scenario.starts_with("auth/");
    let client_secret = context["client_secret"].as_str().map(str::to_string);
    let key_file = match context["private_key_pem"].as_str() {
        Some(pem) => {
            let path = scratch.path().join("client-key.pem");
            std::fs::write(&path, pem)?;
            Some(path)
        }
        None => None,
    };
    std::fs::write(
        home.join("config.toml"),
        config(&url, auth, &context, key_file.as_deref()),
    )?;
    let env = Env {
        tern: &tern,
        home: &home,
        work: &work,
        model: &model,
        auth,
        client_secret,
    };

    login(&env)?;
    let list = env.tern(&["mcp", "list"])?;
    eprintln!("tern mcp list:\n{}", text(&list.stdout));
    let tools = env.tern(&["tools", "--json"])?;
    let table: Value = serde_json::from_slice(&tools.stdout)
        .with_context(|| format!("tern tools --json: {}", text(&tools.stdout)))?;
    let entries: Vec<&Value> = table
        .as_array()
        .or_else(|| table["tools"].as_array())
        .into_iter()
        .flatten()
        .filter(|e| e["server"] == SERVER)
        .collect();
    eprintln!("{} tool(s) from the scenario server", entries.len());
    if entries.is_empty() {
        // Nothing to call; connecting and listing was the scenario (e.g. `initialize`).
        return Ok(());
    }

    // A first run only to see the tool definitions as the model receives them.
    model.enqueue(AnthropicTurn::new().text(&["Looked."]).finish("end_turn"));
    env.run("look at the tools", &scenario)?;
    let shown = shown_tools(&model)?;

    let calls = plan(&entries, &shown, &context);
    for (i, (name, args)) in calls.iter().enumerate() {
        eprintln!("call {name} {args}");
        model.enqueue(
            AnthropicTurn::new()
                .tool_use(&format!("toolu_{i}"), name, &[&args.to_string()])
                .finish("tool_use"),
        );
    }
    model.enqueue(AnthropicTurn::new().text(&["Done."]).finish("end_turn"));
    let run = env.run("call every tool once", &scenario)?;
    eprintln!("tern run exit: {:?}", run.status.code());
    for line in text(&run.stdout).lines() {
        if let Ok(event) = serde_json::from_str::<Value>(line)
            && event["type"] == "tool_call_finished"
        {
            eprintln!(
                "  {} is_error={} {}",
                event["name"],
                event["is_error"],
                event["output"]
                    .as_str()
                    .unwrap_or_default()
                    .chars()
                    .take(200)
                    .collect::<String>()
            );
        }
    }
    if std::env::var_os("TERN_CONFORMANCE_KEEP").is_some() {
        let kept = scratch.keep();
        eprintln!("kept {}", kept.display());
    }
    Ok(())
}

/// The Client ID Metadata Document URL the suite's `auth/basic-cimd` expects a client to use.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// The variable the pre-registered client's secret is passed in (never written to the config).
const SECRET_VAR: &str = "CONFORMANCE_CLIENT_SECRET";

/// tern's config for one scenario: only the scenario's server (the built-ins off); for an
/// authorization scenario, its `oauth` settings.
fn config(url: &str, auth: bool, context: &Value, key_file: Option<&Path>) -> String {
    let mut text = format!(
        "[model]\nmax_retries = 0\n\n\
         [mcp_servers.fs]\nenabled = false\n[mcp_servers.shell]\nenabled = false\n\
         [mcp_servers.web]\nenabled = false\n\n\
         [mcp_servers.{SERVER}]\nurl = {url:?}\nstartup_timeout_sec = 20\ntool_timeout_sec = 20\n"
    );
    if auth {
        text.push_str(&format!(
            "\n[mcp_servers.{SERVER}.oauth]\nclient_metadata_url = {CLIENT_METADATA_URL:?}\n"
        ));
        if let Some(id) = context["client_id"].as_str() {
            text.push_str(&format!("client_id = {id:?}\n"));
            if context["client_secret"].is_string() {
                text.push_str(&format!("client_secret_env = {SECRET_VAR:?}\n"));
            }
            if let Some(file) = key_file {
                text.push_str(&format!(
                    "private_key_file = {:?}\n",
                    file.display().to_string()
                ));
                if let Some(alg) = context["signing_algorithm"].as_str() {
                    text.push_str(&format!("signing_alg = {alg:?}\n"));
                }
            }
        }
    }
    text
}

/// `tern mcp login conformance` before anything else connects, for an authorization scenario.
/// Its failure is no failure of the driver: several scenarios expect tern to refuse (a resource
/// or issuer that does not match), and the suite scores what reached its servers.
fn login(env: &Env<'_>) -> anyhow::Result<()> {
    if env.auth {
        let out = env.tern(&["mcp", "login", SERVER])?;
        eprintln!(
            "tern mcp login {SERVER}: exit {:?}\n{}",
            out.status.code(),
            text(&out.stdout)
        );
    }
    Ok(())
}

struct Env<'a> {
    tern: &'a Path,
    home: &'a Path,
    work: &'a Path,
    model: &'a MockModelServer,
    /// An authorization scenario: tern fetches authorization URLs itself.
    auth: bool,
    /// The pre-registered client's secret, passed in [`SECRET_VAR`].
    client_secret: Option<String>,
}

impl Env<'_> {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.tern);
        cmd.args(args)
            .current_dir(self.work)
            .env("TERN_HOME", self.home)
            .env("ANTHROPIC_API_KEY", "sk-ant-conformance-driver")
            .env("ANTHROPIC_BASE_URL", self.model.url())
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("TERN_OAUTH_BROWSER")
            .stdin(std::process::Stdio::null());
        if self.auth {
            cmd.env("TERN_OAUTH_BROWSER", "fetch");
        }
        if let Some(secret) = &self.client_secret {
            cmd.env(SECRET_VAR, secret);
        }
        cmd
    }

    fn tern(&self, args: &[&str]) -> anyhow::Result<Output> {
        let out = self
            .command(args)
            .output()
            .with_context(|| format!("cannot run {}", self.tern.display()))?;
        if !out.stderr.is_empty() {
            eprintln!("tern {} (stderr):\n{}", args.join(" "), text(&out.stderr));
        }
        Ok(out)
    }

    fn run(&self, goal: &str, scenario: &str) -> anyhow::Result<Output> {
        let mut args = vec![
            "run",
            goal,
            "--output-format",
            "jsonl",
            "--mode",
            "yolo",
            "--max-steps",
            "100",
        ];
        if scenario.contains("elicitation") {
            args.push("--accept-elicitation-defaults");
        }
        self.tern(&args)
    }
}

fn tern_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("TERN_BIN") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe()?;
    let path = exe.with_file_name("tern");
    if !path.exists() {
        bail!(
            "{} not found: build it first (`cargo build --workspace --bins`)",
            path.display()
        );
    }
    Ok(path)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The tools of the last model request, by name, as the model was shown them.
fn shown_tools(model: &MockModelServer) -> anyhow::Result<Map<String, Value>> {
    let requests = model.requests();
    let last = requests
        .last()
        .context("tern made no model request, so the tools it shows the model are unknown")?;
    let body = last.json();
    Ok(body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t["name"].as_str()?.to_string(), t.clone())))
        .collect())
}

/// The calls to make, as `(name the model uses, arguments)`: the scenario's own list when its
/// context has one, else one call per tool in table order.
fn plan(entries: &[&Value], shown: &Map<String, Value>, context: &Value) -> Vec<(String, Value)> {
    if let Some(calls) = context["toolCalls"].as_array() {
        return calls
            .iter()
            .filter_map(|c| {
                let entry = entries.iter().find(|e| e["tool"] == c["name"])?;
                Some((entry["name"].as_str()?.to_string(), c["arguments"].clone()))
            })
            .collect();
    }
    let schema_of = |name: &str| -> Value {
        shown
            .get(name)
            .map(|t| t["input_schema"].clone())
            .unwrap_or(Value::Null)
    };
    entries
        .iter()
        .filter_map(|e| {
            let name = e["name"].as_str()?.to_string();
            let tool = e["tool"].as_str().unwrap_or_default();
            let schema = schema_of(&name);
            let schema = if schema.is_null() {
                e["input_schema"].clone()
            } else {
                schema
            };
            let args = if tool == "json_schema_echo" {
                // The focal tool's schema, as the model saw it.
                let focal = entries
                    .iter()
                    .filter_map(|o| o["name"].as_str())
                    .find(|n| *n != name)
                    .map(schema_of)
                    .unwrap_or(Value::Null);
                json!({ "schema": focal })
            } else {
                sample(&schema, &schema, 0)
            };
            Some((name, args))
        })
        .collect()
}

/// A value that satisfies `schema` (as far as a small generator can): `const`, `default` and
/// `enum` first, same-document `$ref`s followed (never network ones), only required properties.
fn sample(schema: &Value, root: &Value, depth: usize) -> Value {
    if depth > 16 {
        return Value::Null;
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return match r.strip_prefix('#') {
            Some(pointer) => root
                .pointer(pointer)
                .map_or(Value::Null, |s| sample(s, root, depth + 1)),
            None => Value::Null,
        };
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return sample(first, root, depth + 1);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            let props = schema.get("properties").and_then(Value::as_object);
            for req in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let prop = props.and_then(|p| p.get(req)).cloned().unwrap_or(json!({}));
                out.insert(req.to_string(), sample(&prop, root, depth + 1));
            }
            Value::Object(out)
        }
        "array" => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array((0..min).map(|_| sample(&item, root, depth + 1)).collect())
        }
        "integer" => json!(
            schema
                .get("minimum")
                .and_then(Value::as_i64)
                .unwrap_or(1)
                .max(1)
        ),
        "number" => json!(
            schema
                .get("minimum")
                .and_then(Value::as_f64)
                .unwrap_or(1.0)
                .max(1.0)
        ),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => {
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            json!("sample".repeat(min / 6 + 1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_satisfy_required_fields_refs_and_enums() {
        let schema = json!({
            "type": "object",
            "$defs": {"id": {"type": "string", "pattern": "^[a-z0-9-]+$"}},
            "properties": {
                "id": {"$ref": "#/$defs/id"},
                "n": {"type": "integer", "minimum": 3},
                "mode": {"enum": ["fast", "slow"]},
                "opt": {"type": "boolean"},
                "remote": {"$ref": "http://127.0.0.1:9/schema.json"}
            },
            "required": ["id", "n", "mode", "remote"]
        });
        let v = sample(&schema, &schema, 0);
        assert_eq!(v["id"], "sample");
        assert_eq!(v["n"], 3);
        assert_eq!(v["mode"], "fast");
        assert!(v.get("opt").is_none());
        assert_eq!(v["remote"], Value::Null);
    }
}
