//! Stage 2, Validate: the arguments against the tool's `inputSchema`, before any server sees them.
//!
//! The draft comes from `$schema` (2020-12 when absent, jsonschema's default). Validators are
//! compiled once per tool and reused while the tool's schema stays the same (a `list_changed`
//! that alters it compiles a new one).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use jsonschema::Validator;
use serde_json::Value;

use tern_protocol::{ErrorKind, ToolResult};

/// At most this many violations are listed; the rest are counted.
const MAX_LISTED: usize = 20;

/// Compiled validators by tool name.
#[derive(Default)]
pub struct Validators {
    cache: Mutex<HashMap<String, (Value, Arc<Validator>)>>,
}

impl Validators {
    /// The validator for `tool`'s current `schema`, compiled on first use.
    fn get(&self, tool: &str, schema: &Value) -> Result<Arc<Validator>, String> {
        if let Ok(cache) = self.cache.lock()
            && let Some((cached, v)) = cache.get(tool)
            && cached == schema
        {
            return Ok(v.clone());
        }
        let v = Arc::new(tern_mcp::table::compile_schema(schema)?);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(tool.to_owned(), (schema.clone(), v.clone()));
        }
        Ok(v)
    }

    /// Checks `arguments` (which must be an object) against `schema`. On failure, the error
    /// result lists each violation with its JSON pointer, e.g. `/path: 3 is not of type "string"`.
    pub fn validate(
        &self,
        call_id: &str,
        tool: &str,
        schema: &Value,
        arguments: &Value,
    ) -> Result<serde_json::Map<String, Value>, Box<ToolResult>> {
        let invalid = |lines: Vec<String>| {
            Box::new(ToolResult::failed(
                call_id,
                ErrorKind::InvalidArguments,
                format!(
                    "invalid arguments for `{tool}`; the tool was not called:\n{}",
                    lines.join("\n")
                ),
            ))
        };
        let Value::Object(map) = arguments else {
            return Err(invalid(vec![format!(
                "/: arguments must be a JSON object, got {}",
                kind(arguments)
            )]));
        };
        let validator = self.get(tool, schema).map_err(|e| {
            invalid(vec![format!(
                "the tool's inputSchema cannot be compiled: {e}"
            )])
        })?;
        // The common case: valid, checked without collecting errors.
        if validator.is_valid(arguments) {
            return Ok(map.clone());
        }
        // Models send `null` for an optional argument they mean to leave out (OpenAI's strict
        // mode makes every optional field nullable). Where the schema does not allow null, such
        // an argument is dropped rather than the call refused — the server then gets what the
        // model meant: no value (and, over HTTP, no `Mcp-Param-*` header for it).
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if map
            .iter()
            .any(|(k, v)| v.is_null() && !required.contains(&k.as_str()))
        {
            let stripped: serde_json::Map<String, Value> = map
                .iter()
                .filter(|(k, v)| !v.is_null() || required.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if validator.is_valid(&Value::Object(stripped.clone())) {
                return Ok(stripped);
            }
        }
        let mut lines = Vec::new();
        let mut total = 0;
        for error in validator.iter_errors(arguments) {
            total += 1;
            if lines.len() < MAX_LISTED {
                let pointer = error.instance_path().to_string();
                let pointer = if pointer.is_empty() {
                    "/".to_owned()
                } else {
                    pointer
                };
                lines.push(format!("{pointer}: {error}"));
            }
        }
        if total > MAX_LISTED {
            lines.push(format!("… and {} more", total - MAX_LISTED));
        }
        if lines.is_empty() {
            Ok(map.clone())
        } else {
            Err(invalid(lines))
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "n": {"type": "integer", "minimum": 0}},
            "required": ["path"],
            "additionalProperties": false
        })
    }

    #[test]
    fn a_null_optional_argument_is_left_out_but_a_null_required_one_is_refused() {
        let v = Validators::default();
        let map = v
            .validate("c", "t", &schema(), &json!({"path": "a", "n": null}))
            .unwrap();
        assert!(!map.contains_key("n"), "{map:?}");
        assert!(
            v.validate("c", "t", &schema(), &json!({"path": null}))
                .is_err()
        );
        let nullable =
            json!({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}});
        let map = v
            .validate("c", "u", &nullable, &json!({"n": null}))
            .unwrap();
        assert_eq!(map["n"], Value::Null, "a schema that allows null keeps it");
    }

    #[test]
    fn valid_arguments_pass() {
        let v = Validators::default();
        let map = v
            .validate("c", "t", &schema(), &json!({"path": "a", "n": 1}))
            .unwrap();
        assert_eq!(map["path"], "a");
    }

    #[test]
    fn every_violation_is_listed_with_its_pointer() {
        let v = Validators::default();
        let err = v
            .validate("c", "t", &schema(), &json!({"path": 3, "n": -1, "x": true}))
            .unwrap_err();
        assert_eq!(err.error, Some(ErrorKind::InvalidArguments));
        assert!(
            err.content.contains("/path: 3 is not of type \"string\""),
            "{}",
            err.content
        );
        assert!(
            err.content.contains("/n: -1 is less than the minimum"),
            "{}",
            err.content
        );
        assert!(
            err.content.contains("/: Additional properties"),
            "{}",
            err.content
        );
        let err = v.validate("c", "t", &schema(), &json!({})).unwrap_err();
        assert!(
            err.content.contains("\"path\" is a required property"),
            "{}",
            err.content
        );
        let err = v.validate("c", "t", &schema(), &json!([1])).unwrap_err();
        assert!(
            err.content.contains("must be a JSON object"),
            "{}",
            err.content
        );
    }

    #[test]
    fn the_draft_comes_from_dollar_schema_and_defaults_to_2020_12() {
        let v = Validators::default();
        // `prefixItems` exists only from 2020-12 on: enforced by default …
        let s = json!({"type": "object", "properties": {"a": {"type": "array", "prefixItems": [{"type": "string"}]}}});
        assert!(v.validate("c", "t1", &s, &json!({"a": [1]})).is_err());
        // … and ignored under draft-07, which the schema declares.
        let mut s7 = s.clone();
        s7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        assert!(v.validate("c", "t2", &s7, &json!({"a": [1]})).is_ok());
    }

    #[test]
    fn validators_are_cached_until_the_schema_changes() {
        let v = Validators::default();
        v.validate("c", "t", &schema(), &json!({"path": "a"}))
            .unwrap();
        let first = v.get("t", &schema()).unwrap();
        assert!(Arc::ptr_eq(&first, &v.get("t", &schema()).unwrap()));
        let changed = json!({"type": "object", "required": ["other"]});
        assert!(!Arc::ptr_eq(&first, &v.get("t", &changed).unwrap()));
        assert!(
            v.validate("c", "t", &changed, &json!({"path": "a"}))
                .is_err()
        );
    }
}
