//! The editor's MCP servers (`mcpServers` of `session/new` and `session/load`) as config layers:
//! each becomes one `-c mcp_servers.NAME = { … }` override, so it goes through the same
//! checks, pins, trust (none: its annotations are not believed) and permission rules as a
//! server in `config.toml`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::rpc::RpcError;

/// `-c` overrides for `servers`, named clear of `taken` (the configured servers), and the names
/// given. A stdio server is `{command, args, env}`, an HTTP one `{url, http_headers}`; SSE is
/// not offered (tern speaks streamable HTTP only).
pub fn overrides(
    servers: &[Value],
    mut taken: BTreeSet<String>,
) -> Result<(Vec<String>, Vec<String>), RpcError> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let bad = |what: &str| RpcError::invalid_params(format!("mcpServers[{i}]: {what}"));
        let raw_name = s["name"]
            .as_str()
            .ok_or_else(|| bad("needs a string `name`"))?;
        let name = unique(&sanitize(raw_name), &taken);
        taken.insert(name.clone());
        let table = match s.get("type").and_then(Value::as_str) {
            None | Some("stdio") => {
                let command = s["command"]
                    .as_str()
                    .ok_or_else(|| bad("a stdio server needs a string `command`"))?;
                let args: Vec<String> =
                    strings(&s["args"]).ok_or_else(|| bad("`args` must be strings"))?;
                let env = pairs(&s["env"]).ok_or_else(|| bad("`env` must be [{name, value}]"))?;
                format!(
                    "{{ command = {}, args = {}, env = {} }}",
                    quote(command),
                    array(&args),
                    inline_table(&env)
                )
            }
            Some("http") => {
                let url = s["url"]
                    .as_str()
                    .ok_or_else(|| bad("an http server needs a string `url`"))?;
                let headers =
                    pairs(&s["headers"]).ok_or_else(|| bad("`headers` must be [{name, value}]"))?;
                format!(
                    "{{ url = {}, http_headers = {} }}",
                    quote(url),
                    inline_table(&headers)
                )
            }
            Some(other) => {
                return Err(bad(&format!(
                    "transport `{other}` is not supported (tern takes stdio and http)"
                )));
            }
        };
        out.push(format!("mcp_servers.{name}={table}"));
        names.push(name);
    }
    Ok((out, names))
}

/// A server name tern accepts (`^[a-zA-Z0-9_-]+$`).
fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() { "editor".into() } else { s }
}

fn unique(name: &str, taken: &BTreeSet<String>) -> String {
    if !taken.contains(name) {
        return name.to_string();
    }
    (2..)
        .map(|n| format!("{name}-{n}"))
        .find(|n| !taken.contains(n))
        .unwrap_or_else(|| name.to_string())
}

fn strings(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::Null => Some(Vec::new()),
        Value::Array(items) => items.iter().map(|i| i.as_str().map(String::from)).collect(),
        _ => None,
    }
}

fn pairs(v: &Value) -> Option<Vec<(String, String)>> {
    match v {
        Value::Null => Some(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                Some((
                    i["name"].as_str()?.to_string(),
                    i["value"].as_str()?.to_string(),
                ))
            })
            .collect(),
        _ => None,
    }
}

/// A TOML basic string (JSON's escapes are TOML's for every character JSON escapes).
fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

fn array(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| quote(s)).collect();
    format!("[{}]", quoted.join(", "))
}

fn inline_table(pairs: &[(String, String)]) -> String {
    let items: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{} = {}", quote(k), quote(v)))
        .collect();
    format!("{{ {} }}", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdio_and_http_servers_become_overrides_named_clear_of_the_configured_ones() {
        let servers = [
            json!({"name": "fs", "command": "/bin/x", "args": ["--a", "q\"uote"], "env": [{"name": "K", "value": "v"}]}),
            json!({"type": "http", "name": "my docs", "url": "https://x.test/mcp", "headers": []}),
        ];
        let (o, names) = overrides(&servers, ["fs".to_string()].into()).unwrap();
        assert_eq!(names, ["fs-2", "my-docs"]);
        assert_eq!(
            o[0],
            r#"mcp_servers.fs-2={ command = "/bin/x", args = ["--a", "q\"uote"], env = { "K" = "v" } }"#
        );
        assert_eq!(
            o[1],
            r#"mcp_servers.my-docs={ url = "https://x.test/mcp", http_headers = {  } }"#
        );
        let err = overrides(
            &[json!({"type": "sse", "name": "a", "url": "u"})],
            BTreeSet::new(),
        )
        .unwrap_err();
        assert!(err.message.contains("sse"), "{err:?}");
        assert!(overrides(&[json!({"command": "x"})], BTreeSet::new()).is_err());
    }
}
