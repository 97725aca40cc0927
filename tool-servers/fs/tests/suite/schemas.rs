//! Tool definitions as any MCP client reads them: plain JSON Schema 2020-12 and
//! the `_meta` keys a host relies on, checked on the exact `tools/list` JSON.

use serde_json::{Value, json};

use super::raw::Raw;

/// `format` values JSON Schema 2020-12 defines; anything else (`uint64`, `uint`…)
/// is a private extension strict clients warn about.
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

fn tools_list() -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let mut raw = Raw::start(dir.path(), &[]);
    let reply = raw.request("tools/list", json!({}));
    reply["result"]["tools"].as_array().unwrap().clone()
}

/// Every place in `schema` that is not portable, as `path: problem`.
fn problems(at: &str, schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(o) => {
            if let Some(t) = o.get("type")
                && !t.is_string()
            {
                out.push(format!("{at}: type is {t}, not one type name"));
            }
            if o.get("default") == Some(&Value::Null) {
                out.push(format!("{at}: default null"));
            }
            if let Some(f) = o.get("format")
                && !f.as_str().is_some_and(|f| STANDARD_FORMATS.contains(&f))
            {
                out.push(format!("{at}: non-standard format {f}"));
            }
            if o.get("nullable").is_some() {
                out.push(format!("{at}: `nullable` is OpenAPI, not JSON Schema"));
            }
            for (k, v) in o {
                if !matches!(k.as_str(), "const" | "enum" | "default" | "examples") {
                    problems(&format!("{at}.{k}"), v, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                problems(&format!("{at}[{i}]"), v, out);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

#[test]
fn input_schemas_are_portable_json_schema() {
    let tools = tools_list();
    assert_eq!(tools.len(), 6);
    let mut found = Vec::new();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let schema = &tool["inputSchema"];
        if let Err(e) = jsonschema::meta::validate(schema) {
            found.push(format!("{name}: not valid JSON Schema: {e}"));
        }
        problems(name, schema, &mut found);
        // Optional means absent from `required`, and every required property exists.
        let props = schema["properties"].as_object().unwrap();
        for r in schema["required"].as_array().into_iter().flatten() {
            assert!(props.contains_key(r.as_str().unwrap()), "{name}: {r}");
        }
    }
    assert!(found.is_empty(), "{found:#?}");

    let read = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    let props = &read["inputSchema"]["properties"];
    assert_eq!(props["offset"]["type"], "integer");
    assert_eq!(props["offset"]["minimum"], 0);
    assert_eq!(props["limit"]["type"], "integer");
    assert_eq!(read["inputSchema"]["required"], json!(["path"]));
    let grep = tools.iter().find(|t| t["name"] == "grep").unwrap();
    assert_eq!(grep["inputSchema"]["properties"]["glob"]["type"], "string");
    assert_eq!(grep["inputSchema"]["required"], json!(["pattern"]));
}

#[test]
fn file_editing_tools_say_so_in_meta() {
    for tool in tools_list() {
        let edits = matches!(tool["name"].as_str(), Some("write_file" | "edit_file"));
        let flag = tool.pointer("/_meta/tern~1edits_files");
        if edits {
            assert_eq!(flag, Some(&json!(true)), "{tool}");
        } else {
            assert_eq!(flag, None, "{tool}");
        }
    }
}

#[test]
fn an_explicit_null_for_an_optional_argument_is_still_accepted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let mut raw = Raw::start(dir.path(), &[]);
    let r = raw.call(
        "read_file",
        json!({"path": "a.txt", "offset": null, "limit": null}),
        None,
    );
    assert_eq!(r["isError"], false, "{r}");
    let r = raw.call("list_dir", json!({"path": null}), None);
    assert_eq!(r["isError"], false, "{r}");
}

/// Every tool declares an `outputSchema`, and each success's `structuredContent` is valid
/// against it (clients such as Claude Code validate it and show the model only it).
#[test]
fn every_result_validates_against_its_declared_output_schema() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    // An image: read_file's image result must validate too.
    std::fs::write(
        dir.path().join("p.png"),
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("a.txt", dir.path().join("link")).unwrap();
    let mut raw = Raw::start(dir.path(), &[]);
    let tools = raw.request("tools/list", json!({}))["result"]["tools"].clone();
    let calls = [
        ("read_file", json!({"path": "a.txt"})),
        (
            "read_file",
            json!({"path": "a.txt", "offset": 2, "limit": 1}),
        ),
        ("read_file", json!({"path": "p.png"})),
        ("write_file", json!({"path": "b.txt", "content": "new\n"})),
        ("write_file", json!({"path": "b.txt", "content": "newer\n"})),
        (
            "edit_file",
            json!({"path": "b.txt", "old_string": "newer", "new_string": "x"}),
        ),
        ("list_dir", json!({})),
        ("glob", json!({"pattern": "**/*.txt"})),
        ("glob", json!({"pattern": "*.none"})),
        ("grep", json!({"pattern": "one"})),
        ("grep", json!({"pattern": "one", "output_mode": "content"})),
        ("grep", json!({"pattern": "o", "output_mode": "count"})),
    ];
    for (name, args) in calls {
        let tool = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap();
        let schema = &tool["outputSchema"];
        assert!(schema.is_object(), "{name} declares no outputSchema");
        let validator = jsonschema::validator_for(schema)
            .unwrap_or_else(|e| panic!("{name}: invalid outputSchema: {e}"));
        let r = raw.call(name, args.clone(), None);
        assert_eq!(r["isError"], false, "{name} {args}: {r}");
        let st = &r["structuredContent"];
        let errors: Vec<String> = validator.iter_errors(st).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name} {args}: {st}: {errors:#?}");
    }
    let r = raw.call("read_file", json!({"path": "missing.txt"}), None);
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r.get("structuredContent").is_none(),
        "failures are text only: {r}"
    );
}
