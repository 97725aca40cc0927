//! Tool input schemas every MCP client can read.
//!
//! schemars describes `Option<T>` as `"type": ["T", "null"]` with `"default": null`
//! and unsigned integers with the non-standard formats `uint64`/`uint`. Strict
//! clients (and some model providers' schema subsets) warn on or reject both
//! (issue 11, item 8). A tool argument that may be left out is simply absent
//! from `required`; a model never needs to send `null`. So every tern tool server's
//! parameter structs run through [`portable`] (`#[schemars(transform = portable)]`), which rewrites its schema to plain JSON Schema
//! 2020-12: no `null` in `type`, no `default: null`, and integer bounds as
//! `minimum`/`maximum` instead of custom formats. Deserialisation is unchanged:
//! serde still accepts an explicit `null` for an `Option` field.

use schemars::Schema;
use serde_json::{Map, Value, json};

/// Rewrites `schema` (and every subschema in it) to portable JSON Schema.
pub fn portable(schema: &mut Schema) {
    if let Some(object) = schema.as_object_mut() {
        rewrite(object);
    }
}

fn rewrite(object: &mut Map<String, Value>) {
    drop_null_type(object);
    if object.get("default") == Some(&Value::Null) {
        object.remove("default");
    }
    if let Some(Value::String(format)) = object.get("format")
        && let Some((min, max)) = integer_bounds(format)
    {
        object.remove("format");
        raise_minimum(object, min);
        if let Some(max) = max
            && !object.contains_key("maximum")
        {
            object.insert("maximum".into(), json!(max));
        }
    }
    for (key, value) in object.iter_mut() {
        // Values, not schemas: a `const` or `enum` member that looks like a schema
        // must keep its exact shape.
        if !matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
            walk(value);
        }
    }
}

/// Recurses into every object and array: subschemas live under `properties`,
/// `$defs`, `items`, `oneOf`, and the rules above only touch schema keywords.
fn walk(value: &mut Value) {
    match value {
        Value::Object(o) => rewrite(o),
        Value::Array(items) => items.iter_mut().for_each(walk),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// `["string", "null"]` → `"string"`; a longer list just loses its `"null"`.
fn drop_null_type(object: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = object.get_mut("type") else {
        return;
    };
    types.retain(|t| t != "null");
    if types.len() == 1 {
        let only = types.remove(0);
        object.insert("type".into(), only);
    }
}

/// The range a schemars integer format stands for; `None` for standard formats
/// (`date-time`, `uri`, …), which are left alone.
fn integer_bounds(format: &str) -> Option<(i64, Option<u64>)> {
    Some(match format {
        "uint8" => (0, Some(u8::MAX.into())),
        "uint16" => (0, Some(u16::MAX.into())),
        "uint32" => (0, Some(u32::MAX.into())),
        // The JSON number range already bounds these from above.
        "uint" | "uint64" | "uint128" => (0, None),
        "int8" => (i8::MIN.into(), None),
        "int16" => (i16::MIN.into(), None),
        "int32" => (i32::MIN.into(), None),
        "int" | "int64" | "int128" => (i64::MIN, None),
        _ => return None,
    })
}

fn raise_minimum(object: &mut Map<String, Value>, min: i64) {
    let current = object.get("minimum").and_then(Value::as_i64);
    if current.is_none_or(|c| c < min) && min > i64::MIN {
        object.insert("minimum".into(), json!(min));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn optional_fields_and_integer_formats_become_plain() {
        let mut schema = Schema::try_from(json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"], "default": null},
                "n": {"type": ["integer", "null"], "format": "uint64", "minimum": 0},
                "b": {"type": "integer", "format": "uint8"},
                "when": {"type": "string", "format": "date-time"},
                "k": {"oneOf": [{"const": null}, {"type": ["number", "string", "null"]}]}
            }
        }))
        .unwrap();
        portable(&mut schema);
        assert_eq!(
            schema.as_value(),
            &json!({
                "type": "object",
                "properties": {
                    "a": {"type": "string"},
                    "n": {"type": "integer", "minimum": 0},
                    "b": {"type": "integer", "minimum": 0, "maximum": 255},
                    "when": {"type": "string", "format": "date-time"},
                    "k": {"oneOf": [{"const": null}, {"type": ["number", "string"]}]}
                }
            })
        );
    }
}
