//! `tern mcp import FILE`: Claude Code / Cursor `.mcp.json` → `[mcp_servers.NAME]` entries.
//!
//! The entries are added to the user's config.toml with `toml_edit`, so the file's comments, order and
//! formatting survive; the new `[mcp_servers.NAME]` tables go right after the file's existing ones (at
//! the end if it has none), in `.mcp.json` order. Policy, chosen so a re-run is safe and nothing is half-written:
//! - a server name that the config already has is an **error** and nothing is imported (the user
//!   decides which definition wins, by editing or removing one);
//! - an `"sse"` server is **skipped** with a warning: SSE is deprecated by MCP and tern does not speak
//!   it; the other servers are still imported;
//! - keys tern has no use for (`description`, `oauth`, …) are dropped with a warning.

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::Value;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

use crate::check::valid_server_name;
use crate::error::{ConfigError, Result};
use crate::layers::parse_layer;
use crate::locate::SourceName;

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// The new config.toml text.
    pub config_text: String,
    /// The servers added, in `.mcp.json` order.
    pub imported: Vec<String>,
    /// Servers skipped and keys dropped, one readable line each.
    pub warnings: Vec<String>,
}

/// Adds the servers of a `.mcp.json` (`{"mcpServers": {NAME: {...}}}`) to a config.toml's text.
///
/// An entry without `type` is stdio (`command`, `args`, `env`, `cwd`), or HTTP if it has only a `url`
/// (Cursor's shorthand); `"http"` and `"streamable-http"` are HTTP (`url`, `headers`). A header
/// `Authorization: Bearer ${VAR}` becomes `bearer_token_env_var = "VAR"`; `"disabled": true` becomes
/// `enabled = false`. `${VAR}` references are kept as written: tern expands the same syntax.
pub fn import_mcp_json(json_text: &str, config_text: &str) -> Result<ImportReport> {
    let file: McpJson = serde_json::from_str(json_text)
        .map_err(|err| import_error(format!("not a valid .mcp.json: {err}")))?;
    let mut doc: DocumentMut = config_text.parse().map_err(|err| {
        import_error(format!(
            "the config to import into is not valid TOML: {err}"
        ))
    })?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        })
        .as_table_mut()
        .ok_or_else(|| import_error("`mcp_servers` in the config is not a table".to_owned()))?;

    let mut report = ImportReport {
        config_text: String::new(),
        imported: Vec::new(),
        warnings: Vec::new(),
    };
    for (name, entry) in file.mcp_servers.0 {
        if !valid_server_name(&name) {
            return Err(import_error(format!(
                "server name {name:?} may only use letters, digits, '_' and '-'; rename it in the .mcp.json"
            )));
        }
        if servers.contains_key(&name) || report.imported.contains(&name) {
            return Err(import_error(format!(
                "a server named {name:?} already exists; remove or rename one of them, then import again"
            )));
        }
        let Some(mut table) = convert(&name, entry, &mut report.warnings)? else {
            continue;
        };
        if !(config_text.trim().is_empty() && report.imported.is_empty()) {
            table.decor_mut().set_prefix("\n");
        }
        servers.insert(&name, Item::Table(table));
        report.imported.push(name);
    }
    report.config_text = doc.to_string();
    // What we write must load: check it the way `Config::load` will.
    parse_layer(&SourceName::File("config.toml".into()), &report.config_text)
        .map_err(|err| import_error(format!("the result would not load: {err}")))?;
    Ok(report)
}

fn import_error(message: String) -> ConfigError {
    ConfigError::Import { message }
}

/// `.mcp.json`; other top-level keys are ignored.
#[derive(Deserialize)]
struct McpJson {
    #[serde(rename = "mcpServers")]
    mcp_servers: Ordered,
}

/// A JSON object with its keys in file order (`serde_json::Map` sorts them unless a workspace-wide
/// feature is turned on, which would change every other crate's JSON).
struct Ordered(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedVisitor;
        impl<'de> Visitor<'de> for OrderedVisitor {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of servers")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(Ordered(entries))
            }
        }
        deserializer.deserialize_map(OrderedVisitor)
    }
}

/// One server; `None` when it is skipped.
fn convert(name: &str, entry: Value, warnings: &mut Vec<String>) -> Result<Option<Table>> {
    let Value::Object(fields) = entry else {
        return Err(import_error(format!("server {name:?} is not an object")));
    };
    let string = |key: &str| -> Result<Option<String>> {
        match fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(import_error(format!(
                "server {name:?}: `{key}` must be a string"
            ))),
        }
    };
    let kind = string("type")?;
    let http = match kind.as_deref() {
        None => fields.get("command").is_none() && fields.get("url").is_some(),
        Some("stdio") => false,
        Some("http" | "streamable-http" | "streamableHttp") => true,
        Some("sse") => {
            warnings.push(format!(
                "skipped {name:?}: SSE transport is not supported (MCP replaced it with streamable \
                 HTTP); if the server offers streamable HTTP, add it with `url`"
            ));
            return Ok(None);
        }
        Some(other) => {
            return Err(import_error(format!(
                "server {name:?}: unknown type {other:?}"
            )));
        }
    };
    let mut table = Table::new();
    let known: &[&str] = if http {
        let url = string("url")?
            .ok_or_else(|| import_error(format!("server {name:?}: an HTTP server needs `url`")))?;
        table.insert("url", toml_edit::value(url));
        let mut headers = string_map(name, "headers", fields.get("headers"))?;
        if let Some(var) = headers
            .iter()
            .position(|(k, v)| k.eq_ignore_ascii_case("authorization") && bearer_var(v).is_some())
        {
            let (_, value) = headers.remove(var);
            if let Some(var) = bearer_var(&value) {
                table.insert("bearer_token_env_var", toml_edit::value(var));
            }
        }
        if !headers.is_empty() {
            table.insert("http_headers", inline(headers));
        }
        &["type", "url", "headers", "disabled"]
    } else {
        let command = string("command")?.ok_or_else(|| {
            import_error(format!("server {name:?}: a stdio server needs `command`"))
        })?;
        table.insert("command", toml_edit::value(command));
        if let Some(args) = fields.get("args") {
            let args = args
                .as_array()
                .and_then(|args| args.iter().map(Value::as_str).collect::<Option<Array>>())
                .ok_or_else(|| import_error(format!("server {name:?}: `args` must be strings")))?;
            table.insert("args", toml_edit::value(args));
        }
        if let Some(cwd) = string("cwd")? {
            table.insert("cwd", toml_edit::value(cwd));
        }
        let env = string_map(name, "env", fields.get("env"))?;
        if !env.is_empty() {
            table.insert("env", inline(env));
        }
        &["type", "command", "args", "env", "cwd", "disabled"]
    };
    if fields.get("disabled") == Some(&Value::Bool(true)) {
        table.insert("enabled", toml_edit::value(false));
    }
    for key in fields.keys().filter(|key| !known.contains(&key.as_str())) {
        warnings.push(format!(
            "{name:?}: ignored key `{key}` (tern has no equivalent)"
        ));
    }
    Ok(Some(table))
}

/// `VAR` of `Bearer ${VAR}`.
fn bearer_var(value: &str) -> Option<&str> {
    let var = value.strip_prefix("Bearer ${")?.strip_suffix('}')?;
    (!var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(var)
}

fn string_map(name: &str, key: &str, value: Option<&Value>) -> Result<Vec<(String, String)>> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let error = || {
        import_error(format!(
            "server {name:?}: `{key}` must map names to strings"
        ))
    };
    value
        .as_object()
        .ok_or_else(error)?
        .iter()
        .map(|(k, v)| Ok((k.clone(), v.as_str().ok_or_else(error)?.to_owned())))
        .collect()
}

fn inline(pairs: Vec<(String, String)>) -> Item {
    let mut table = InlineTable::new();
    for (key, value) in pairs {
        table.insert(&key, value.into());
    }
    toml_edit::value(table)
}
