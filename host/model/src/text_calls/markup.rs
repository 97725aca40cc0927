//! Tool calls written as XML-like `<function …>` elements, the other family of shapes small local
//! models fall into when their chat template's tool format does not take:
//!
//! * `<function=NAME>{"arg": …}</function>` — Llama 3.1's format for custom tools (Meta's
//!   "Llama 3.1 model card and prompt formats", *user-defined custom tool calling*);
//! * `<function name="NAME" arguments='{"arg": …}'/>` and `<function name="NAME">{…}</function>`,
//!   as Qwen2.5-Coder-1.5B-Instruct wrote them under llama.cpp's `--jinja` with the model's own
//!   template (seen in a real run: `<tools>\n  <function name="fs__edit_file" arguments='{…}'/>\n</tools>`,
//!   the `<tools>` tags echoed from the template's own instructions).
//!
//! Each element becomes the JSON object `{"name", "arguments"}` the rest of [`super`] reads, so
//! the same rules apply: only offered tools, arguments an object. Around the elements only
//! whitespace and wrapper tags (`<tools>`, `<tool_calls>`, `<function_calls>`) may appear after
//! the first one; what comes before it (less a wrapper's opening tag) is the prose.

use serde_json::{Value, json};

/// Tags a model wraps its calls in; they carry nothing.
const WRAPPERS: &[&str] = &[
    "<tools>",
    "</tools>",
    "<tool_calls>",
    "</tool_calls>",
    "<function_calls>",
    "</function_calls>",
];

/// The prose before the first `<function` element and the elements as JSON objects, one per
/// line; `None` when the text holds no well-formed element or anything else after the first.
pub(super) fn split(text: &str) -> Option<(&str, String)> {
    let start = text.find("<function")?;
    let mut prose = text[..start].trim_end();
    while let Some(open) = WRAPPERS
        .iter()
        .find(|w| !w.starts_with("</") && prose.ends_with(*w))
    {
        prose = prose[..prose.len() - open.len()].trim_end();
    }
    let mut rest = &text[start..];
    let mut payload = String::new();
    loop {
        rest = skip_wrappers(rest);
        if rest.is_empty() {
            break;
        }
        let (object, after) = element(rest)?;
        payload.push_str(&object.to_string());
        payload.push('\n');
        rest = after;
    }
    Some((prose, payload))
}

/// `text` without its leading whitespace and wrapper tags.
fn skip_wrappers(mut text: &str) -> &str {
    loop {
        text = text.trim_start();
        match WRAPPERS.iter().find(|w| text.starts_with(*w)) {
            Some(w) => text = &text[w.len()..],
            None => return text,
        }
    }
}

/// One `<function …>` element at the start of `text`: `{"name", "arguments"}` and what follows.
fn element(text: &str) -> Option<(Value, &str)> {
    let rest = text.strip_prefix("<function")?;
    if let Some(named) = rest.strip_prefix('=') {
        // `<function=NAME>ARGS</function>`
        let (name, body) = named.split_once('>')?;
        let (args, after) = body.split_once("</function>")?;
        let call = json!({"name": name.trim(), "arguments": arguments(args.trim())?});
        return Some((call, after));
    }
    let mut rest = rest;
    let mut name = None;
    let mut args = None;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("/>") {
            let call = json!({"name": name?, "arguments": args.unwrap_or_else(|| json!({}))});
            return Some((call, after));
        }
        if let Some(body) = rest.strip_prefix('>') {
            let (content, after) = body.split_once("</function>")?;
            let args = match (args, content.trim()) {
                (Some(a), "") => a,
                (None, "") => json!({}),
                (None, content) => arguments(content)?,
                (Some(_), _) => return None,
            };
            return Some((json!({"name": name?, "arguments": args}), after));
        }
        let (key, value, after) = attribute(rest)?;
        match key {
            "name" => name = Some(value),
            "arguments" | "parameters" | "args" => args = Some(arguments(&value)?),
            _ => return None,
        }
        rest = after;
    }
}

/// One `key="value"` or `key='value'` attribute at the start of `text`, entities decoded.
fn attribute(text: &str) -> Option<(&str, String, &str)> {
    let end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    let (key, rest) = text.split_at(end);
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &rest[1..];
    let close = body.find(quote)?;
    (!key.is_empty()).then(|| (key, decode(&body[..close]), &body[close + 1..]))
}

/// The five XML entities, which a model may use inside an attribute.
fn decode(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Arguments written as a JSON object.
fn arguments(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
}
