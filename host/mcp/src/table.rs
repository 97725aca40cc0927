//! The one tool table: every tool of every ready server, named `server__tool`.
//!
//! Names are sanitized to `^[a-zA-Z0-9_-]{1,64}$`, the strictest provider limit.
//! When sanitizing or truncating would make two tools share a name, or a name is
//! too long, each gets a short stable hash suffix: a tool is never shadowed
//! silently. Order is deterministic (server, then tool) so the prompt prefix the
//! model provider caches stays byte-stable from turn to turn.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Longest name any provider accepts.
pub const MAX_NAME_LEN: usize = 64;
const HASH_LEN: usize = 8;

/// Behaviour hints a server declares for a tool. Hints, not guarantees: the
/// gateway treats them as defaults a rule can override.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolAnnotations {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

/// A tool as its server defines it (no rmcp types).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub description: String,
    pub input_schema: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    pub annotations: ToolAnnotations,
    /// The argument holding a shell command, as the tool's `_meta` declares it
    /// ([`META_COMMAND_ARG`]); the gateway parses it for rules. Absent from the JSON when unset,
    /// so pins of tools without it keep their hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_arg: Option<String>,
    /// The tool writes files at its path arguments ([`META_EDITS_FILES`]): what the
    /// `accept-edits` mode allows inside the roots.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edits_files: bool,
}

/// Tool `_meta` key naming the argument that holds a shell command.
pub const META_COMMAND_ARG: &str = tern_protocol::meta::COMMAND_ARG;
/// Tool `_meta` key saying the tool creates or modifies files at its path arguments.
pub const META_EDITS_FILES: &str = tern_protocol::meta::EDITS_FILES;

impl ToolDef {
    /// sha256 of the canonical JSON of the definition (used for pinning).
    pub fn hash(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        hex(&Sha256::digest(&json))
    }

    /// A rough token count of the definition as a model sees it (~4 bytes/token).
    pub fn estimated_tokens(&self) -> usize {
        let bytes = self.name.len() + self.description.len() + self.input_schema.to_string().len();
        bytes.div_ceil(4)
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolEntry {
    /// The name the model sees: `server__tool`, sanitized.
    pub name: String,
    /// The server's configured name.
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    #[serde(flatten)]
    pub def: ToolDef,
}

/// A tool left out of the table, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DroppedTool {
    pub server: String,
    pub tool: String,
    pub reason: String,
}

/// The merged, ordered table.
#[derive(Debug, Clone, Default)]
pub struct ToolTable {
    entries: Vec<ToolEntry>,
    index: HashMap<String, usize>,
}

impl ToolTable {
    /// Builds the table from each server's (already filtered) tools.
    /// Returns the tools that had to be dropped (invalid schema, unresolvable collision).
    pub fn build(servers: &BTreeMap<String, Vec<ToolDef>>) -> (ToolTable, Vec<DroppedTool>) {
        let mut dropped = Vec::new();
        let mut candidates: Vec<(String, String, ToolDef)> = Vec::new();
        for (server, tools) in servers {
            let mut tools: Vec<&ToolDef> = tools.iter().collect();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            for def in tools {
                if let Err(reason) = check_input_schema(&def.input_schema) {
                    dropped.push(DroppedTool {
                        server: server.clone(),
                        tool: def.name.clone(),
                        reason: format!("invalid inputSchema: {reason}"),
                    });
                    continue;
                }
                candidates.push((server.clone(), def.name.clone(), def.clone()));
            }
        }

        // First pass: plain names; count who wants each.
        let plain: Vec<String> = candidates
            .iter()
            .map(|(s, t, _)| plain_name(s, t))
            .collect();
        let mut wanted: HashMap<&str, usize> = HashMap::new();
        for name in &plain {
            *wanted.entry(name.as_str()).or_default() += 1;
        }

        let mut table = ToolTable::default();
        for ((server, tool, def), plain) in candidates.into_iter().zip(plain.iter()) {
            let name = if wanted.get(plain.as_str()).copied().unwrap_or(0) > 1 {
                hashed_name(plain, &server, &tool)
            } else {
                plain.clone()
            };
            if table.index.contains_key(&name) {
                dropped.push(DroppedTool {
                    server,
                    tool,
                    reason: format!("name `{name}` collides with another tool even after hashing"),
                });
                continue;
            }
            table.index.insert(name.clone(), table.entries.len());
            table.entries.push(ToolEntry {
                name,
                server,
                tool,
                def,
            });
        }
        (table, dropped)
    }

    /// The entry the model calls `name`.
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.index.get(name).map(|&i| &self.entries[i])
    }

    /// All entries, in table order.
    pub fn entries(&self) -> &[ToolEntry] {
        &self.entries
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no tool is available.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `n` names closest to `name` (for "unknown tool, did you mean …").
    pub fn closest(&self, name: &str, n: usize) -> Vec<&str> {
        let mut scored: Vec<(usize, &str)> = self
            .entries
            .iter()
            .map(|e| (edit_distance(name, &e.name), e.name.as_str()))
            .collect();
        scored.sort();
        scored.into_iter().take(n).map(|(_, s)| s).collect()
    }
}

/// `server__tool`, sanitized; truncated with a hash when too long.
fn plain_name(server: &str, tool: &str) -> String {
    let name = sanitize(&format!("{server}__{tool}"));
    if name.len() > MAX_NAME_LEN || name.is_empty() {
        hashed_name(&name, server, tool)
    } else {
        name
    }
}

/// `base` cut to leave room for `_` + an 8-hex hash of the original pair.
fn hashed_name(base: &str, server: &str, tool: &str) -> String {
    let hash = hex(&Sha256::digest(format!("{server}\0{tool}").as_bytes()));
    let keep = MAX_NAME_LEN - HASH_LEN - 1;
    let cut: String = base.chars().take(keep).collect();
    format!("{cut}_{}", &hash[..HASH_LEN])
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// An `inputSchema` must be a JSON Schema object describing an object.
fn check_input_schema(schema: &serde_json::Value) -> Result<(), String> {
    match schema.get("type") {
        Some(serde_json::Value::String(t)) if t == "object" => {}
        other => {
            return Err(format!(
                "top-level \"type\" must be \"object\", found {}",
                other.map_or("nothing".to_string(), |v| v.to_string())
            ));
        }
    }
    compile_schema(schema).map(|_| ())
}

/// Compiles a tool's input schema the one way tern reads schemas (the table's check and the
/// gateway's argument validation alike). The schema itself is never rewritten: it reaches the
/// model exactly as the server sent it. A `$ref` into the schema resolves; a `$ref` to anywhere
/// else is never fetched — clients must not dereference network references (SEP-2106) — and
/// constrains nothing, so a tool using one stays usable.
pub fn compile_schema(schema: &serde_json::Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_retriever(NeverFetch)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// Answers every external reference with the empty (accept-anything) schema, offline.
struct NeverFetch;

impl jsonschema::Retrieve for NeverFetch {
    fn retrieve(
        &self,
        _uri: &jsonschema::Uri<String>,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>> {
        Ok(serde_json::json!({}))
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            title: None,
            description: format!("{name} tool"),
            input_schema: json!({"type": "object", "properties": {}}),
            output_schema: None,
            annotations: ToolAnnotations::default(),
            command_arg: None,
            edits_files: false,
        }
    }

    fn build(servers: &[(&str, &[&str])]) -> (ToolTable, Vec<DroppedTool>) {
        let map = servers
            .iter()
            .map(|(s, tools)| (s.to_string(), tools.iter().map(|t| def(t)).collect()))
            .collect();
        ToolTable::build(&map)
    }

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_are_server_tool_in_deterministic_order() {
        let (t, dropped) = build(&[("web", &["fetch"]), ("fs", &["write_file", "read_file"])]);
        assert!(dropped.is_empty());
        let names: Vec<_> = t.entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["fs__read_file", "fs__write_file", "web__fetch"]);
        assert_eq!(t.get("fs__read_file").unwrap().tool, "read_file");
    }

    #[test]
    fn names_that_collide_after_sanitizing_both_get_hashes() {
        let (t, dropped) = build(&[("s", &["a.b", "a_b"])]);
        assert!(dropped.is_empty());
        assert_eq!(t.len(), 2);
        let names: Vec<_> = t.entries().iter().map(|e| e.name.clone()).collect();
        assert_ne!(names[0], names[1]);
        for n in &names {
            assert!(valid(n), "{n}");
            assert!(n.starts_with("s__a_b_"), "{n}");
        }
        // Stable: the same input gives the same names.
        let (again, _) = build(&[("s", &["a_b", "a.b"])]);
        let again: Vec<_> = again.entries().iter().map(|e| e.name.clone()).collect();
        let mut sorted_a = names.clone();
        sorted_a.sort();
        let mut sorted_b = again;
        sorted_b.sort();
        assert_eq!(sorted_a, sorted_b);
    }

    #[test]
    fn long_names_are_truncated_with_a_hash() {
        let long = "x".repeat(100);
        let (t, _) = build(&[("srv", &[long.as_str()])]);
        let e = &t.entries()[0];
        assert!(valid(&e.name), "{}", e.name);
        assert_eq!(e.name.len(), MAX_NAME_LEN);
        assert_eq!(e.tool, long);
    }

    #[test]
    fn two_long_names_sharing_a_prefix_stay_distinct() {
        let a = format!("{}a", "x".repeat(90));
        let b = format!("{}b", "x".repeat(90));
        let (t, dropped) = build(&[("srv", &[a.as_str(), b.as_str()])]);
        assert!(dropped.is_empty());
        assert_eq!(t.len(), 2);
        assert_ne!(t.entries()[0].name, t.entries()[1].name);
    }

    #[test]
    fn invalid_schema_drops_only_that_tool() {
        let mut servers: BTreeMap<String, Vec<ToolDef>> = BTreeMap::new();
        let mut bad = def("bad");
        bad.input_schema = json!({"type": "object", "properties": {"x": {"type": "nonsense"}}});
        let mut not_object = def("scalar");
        not_object.input_schema = json!({"type": "string"});
        servers.insert("s".into(), vec![def("good"), bad, not_object]);
        let (t, dropped) = ToolTable::build(&servers);
        assert_eq!(t.len(), 1);
        assert_eq!(t.entries()[0].name, "s__good");
        assert_eq!(dropped.len(), 2);
        assert!(
            dropped
                .iter()
                .all(|d| d.reason.contains("invalid inputSchema"))
        );
        assert!(dropped.iter().any(|d| d.tool == "bad"));
    }

    #[test]
    fn a_2020_12_schema_with_a_network_ref_is_kept_verbatim_and_never_fetched() {
        // A listener that records any connection: the ref must not be fetched.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"userId": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                      "address": {"$anchor": "addr", "type": "object"}},
            "properties": {
                "id": {"$ref": "#/$defs/userId"},
                "profile": {"$ref": format!("http://127.0.0.1:{port}/profile.json")},
                "kind": {"anyOf": [{"const": "a"}, {"const": "b"}]}
            },
            "if": {"properties": {"kind": {"const": "a"}}},
            "then": {"required": ["id"]},
            "else": {"required": []},
            "additionalProperties": false,
            "required": ["id"]
        });
        let mut d = def("lookup");
        d.input_schema = schema.clone();
        let (t, dropped) = ToolTable::build(&[("s".to_string(), vec![d])].into());
        assert!(dropped.is_empty(), "{dropped:?}");
        assert_eq!(
            t.entries()[0].def.input_schema,
            schema,
            "unchanged, byte for byte"
        );
        let v = compile_schema(&schema).unwrap();
        assert!(v.is_valid(&json!({"id": "ab-1", "profile": {"anything": 1}})));
        assert!(
            !v.is_valid(&json!({"id": "Not Valid"})),
            "local refs still apply"
        );
        assert!(
            matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "the network ref was fetched"
        );
    }

    #[test]
    fn closest_names_are_suggested() {
        let (t, _) = build(&[("fs", &["read_file", "write_file", "grep"])]);
        assert_eq!(t.closest("fs__read_fil", 1), ["fs__read_file"]);
    }
}
