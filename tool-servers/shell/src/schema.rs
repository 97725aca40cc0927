//! Input schemas every MCP client accepts.
//!
//! schemars describes `Option<T>` as `"type": [T, "null"]` with `"default": null`
//! and integers with Rust formats such as `"format": "uint64"`. Both are legal
//! JSON Schema 2020-12, but strict validators (and some clients' schema
//! converters) reject unknown formats, and a model gains nothing from being
//! told it may send `null`. An optional argument is expressed the portable way:
//! absent from `required`, with its plain type (issue 11, item 8).

use schemars::Schema;
use serde_json::Value;

/// Formats defined by JSON Schema 2020-12 (§7.3); any other is dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// A schemars transform (`#[schemars(transform = portable)]`): rewrites every
/// property of an object schema into its portable form.
pub fn portable(schema: &mut Schema) {
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for property in properties.values_mut() {
        if let Some(property) = property.as_object_mut() {
            portable_property(property);
        }
    }
}

fn portable_property(property: &mut serde_json::Map<String, Value>) {
    if let Some(Value::Array(types)) = property.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            property.insert("type".into(), only);
        }
    }
    if property.get("default") == Some(&Value::Null) {
        property.remove("default");
    }
    let unsigned = matches!(
        property.get("format").and_then(Value::as_str),
        Some(f) if f.starts_with("uint")
    );
    let standard = property
        .get("format")
        .and_then(Value::as_str)
        .is_none_or(|f| STANDARD_FORMATS.contains(&f));
    if !standard {
        property.remove("format");
        if unsigned {
            property.entry("minimum").or_insert(Value::from(0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nullable_types_and_rust_formats_become_portable() {
        let mut schema = Schema::try_from(json!({
            "type": "object",
            "properties": {
                "n": {"type": ["integer", "null"], "format": "uint64", "default": null},
                "s": {"type": ["string", "null"]},
                "d": {"type": "string", "format": "date-time"},
                "m": {"type": ["string", "number", "null"]},
            }
        }))
        .unwrap();
        portable(&mut schema);
        let props = &schema.as_value()["properties"];
        assert_eq!(props["n"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(props["s"], json!({"type": "string"}));
        assert_eq!(props["d"], json!({"type": "string", "format": "date-time"}));
        assert_eq!(props["m"], json!({"type": ["string", "number"]}));
    }
}
