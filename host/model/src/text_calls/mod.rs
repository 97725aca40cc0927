//! Tool calls written as text, for models served without native tool calling (issue 23 item 3):
//! small local models often answer a tool request with a JSON object in their text —
//! ```` ```json {"name": "fs__read_file", "arguments": {"path": "a.txt"}} ``` ````, a bare object,
//! or Hermes/Qwen's `<tool_call>{…}</tool_call>`, or XML-like `<function …>` elements
//! ([`markup`]) — which would otherwise end the run as an "answer" while no tool ran.
//!
//! * [`parse`] turns such a turn into calls, but only when the object names a tool that was
//!   offered and the turn's text is nothing but the call(s) (`[model] tool_calls = "native"`),
//!   or the call(s) after some prose (`"text"`, where the model was told the format): a JSON
//!   example inside an explanation is never run;
//! * with `tool_calls = "text"`, [`instructions`] tells the model the format in the system prompt
//!   and [`render`] writes earlier calls and results back as text, so a server whose chat template
//!   knows nothing of tools still gets a valid conversation.

use serde_json::{Value, json};

use crate::types::{AssistantContent, Message, ToolSpec, UserContent};

mod markup;

/// One call found in text.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    /// An offered tool's name.
    pub name: String,
    /// Its arguments (an object).
    pub arguments: Value,
}

/// How strict [`parse`] is about text around the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// The whole text must be the call(s): the model was not told the format.
    WholeText,
    /// Prose may precede the call(s): the model was told to write them this way.
    TrailingCalls,
}

/// The calls `text` makes, when it makes any by the rules above.
pub fn parse(text: &str, offered: &[ToolSpec], strictness: Strictness) -> Option<Vec<TextCall>> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    let (prose, payload) = split_payload(trimmed)?;
    if strictness == Strictness::WholeText && !prose.trim().is_empty() {
        return None;
    }
    let mut calls = Vec::new();
    for object in json_values(payload)? {
        calls.push(call_of(&object, offered)?);
    }
    (!calls.is_empty()).then_some(calls)
}

/// The text before the call(s) and the call(s) themselves: a final fenced block, `<tool_call>`
/// tags, `<function …>` elements, or a JSON value that is the whole rest.
fn split_payload(text: &str) -> Option<(&str, String)> {
    if !text.contains("<tool_call>")
        && let Some(split) = markup::split(text)
    {
        return Some(split);
    }
    if let Some(start) = text.find("<tool_call>") {
        let prose = &text[..start];
        let mut payload = String::new();
        for part in text[start..].split("<tool_call>").skip(1) {
            let (inner, after) = part.split_once("</tool_call>").unwrap_or((part, ""));
            if !after.trim().is_empty() && !after.trim_start().starts_with("<tool_call>") {
                return None;
            }
            payload.push_str(inner.trim());
            payload.push('\n');
        }
        return Some((prose, payload));
    }
    if let Some(body) = text.strip_suffix("```") {
        let open = body.rfind("```")?;
        let prose = &text[..open];
        let fenced = &body[open + 3..];
        // The info string (`json`, `tool_call`, …) runs to the end of the fence's line.
        let code = match fenced.split_once('\n') {
            Some((info, code)) if !info.trim_start().starts_with(['{', '[']) => code,
            _ => fenced,
        };
        return Some((prose, code.trim().to_owned()));
    }
    let at = text.find(['{', '['])?;
    Some((&text[..at], text[at..].to_owned()))
}

/// One JSON value, or several objects one after another (one call per line, as some models write
/// them); an array is its elements.
fn json_values(payload: String) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    for value in serde_json::Deserializer::from_str(&payload).into_iter::<Value>() {
        match value.ok()? {
            Value::Array(items) => out.extend(items),
            object @ Value::Object(_) => out.push(object),
            _ => return None,
        }
    }
    Some(out)
}

/// `{"name", "arguments" | "parameters" | "input"}` (OpenAI's function-call shape nested under
/// `"function"` too), naming an offered tool; arguments as an object or a JSON string of one.
fn call_of(object: &Value, offered: &[ToolSpec]) -> Option<TextCall> {
    let object = object
        .get("function")
        .filter(|f| f.is_object())
        .unwrap_or(object);
    let name = object.get("name")?.as_str()?;
    if !offered.iter().any(|t| t.name == name) {
        return None;
    }
    let arguments = ["arguments", "parameters", "input"]
        .iter()
        .find_map(|k| object.get(*k))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let arguments = match arguments {
        Value::String(s) => serde_json::from_str::<Value>(&s).ok()?,
        other => other,
    };
    arguments.is_object().then(|| TextCall {
        name: name.to_owned(),
        arguments,
    })
}

/// The system-prompt block that tells a model without native tool calling how to call tools.
pub fn instructions(tools: &[ToolSpec]) -> String {
    let mut s = String::from(
        "# Calling tools\nYou can call the tools below. To call one, end your message with a \
         fenced JSON block and nothing after it:\n```json\n{\"name\": \"TOOL_NAME\", \
         \"arguments\": {…}}\n```\nSeveral calls: one object per line in the block. The results \
         come back in the next message. Without a call, your message is the final answer.\n\n\
         ## Tools\n",
    );
    for t in tools {
        s.push_str(&format!(
            "- `{}`: {}\n  arguments (JSON Schema): {}\n",
            t.name, t.description, t.input_schema
        ));
    }
    s
}

/// `messages` with every tool call written as the fenced JSON the model was told to use and
/// every result as user text, for a request that offers no native tools.
pub fn render(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match m {
            Message::Assistant { content } => {
                let mut text = String::new();
                let mut calls = Vec::new();
                for block in content {
                    match block {
                        AssistantContent::Text { text: t } => text.push_str(t),
                        AssistantContent::ToolCall(call) => calls.push(
                            json!({"name": call.name, "arguments": call.arguments}).to_string(),
                        ),
                        AssistantContent::Reasoning(_) => {}
                    }
                }
                if !calls.is_empty() {
                    if !text.trim().is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(&format!("```json\n{}\n```", calls.join("\n")));
                }
                Message::assistant_text(text)
            }
            Message::User { content } => Message::User {
                content: content
                    .iter()
                    .map(|block| match block {
                        UserContent::ToolResult(r) => UserContent::Text {
                            text: format!(
                                "Result of tool call {}{}:\n{}",
                                r.call_id,
                                if r.is_error { " (failed)" } else { "" },
                                r.content
                            ),
                        },
                        text => text.clone(),
                    })
                    .collect(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "fs__read_file".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object"}),
        }]
    }

    #[test]
    fn the_shapes_small_models_write_are_calls() {
        let want = Some(vec![TextCall {
            name: "fs__read_file".into(),
            arguments: json!({"path": "a.txt"}),
        }]);
        for text in [
            "```json\n{\"name\": \"fs__read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
            "  {\"name\": \"fs__read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n",
            "<tool_call>\n{\"name\": \"fs__read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
            "```\n{\"name\": \"fs__read_file\", \"parameters\": {\"path\": \"a.txt\"}}\n```",
            "{\"type\": \"function\", \"function\": {\"name\": \"fs__read_file\", \"arguments\": \"{\\\"path\\\": \\\"a.txt\\\"}\"}}",
        ] {
            assert_eq!(parse(text, &tools(), Strictness::WholeText), want, "{text}");
        }
        let two = "```json\n{\"name\": \"fs__read_file\", \"arguments\": {\"path\": \"a\"}}\n{\"name\": \"fs__read_file\", \"arguments\": {\"path\": \"b\"}}\n```";
        assert_eq!(
            parse(two, &tools(), Strictness::WholeText).unwrap().len(),
            2
        );
    }

    /// The `<function …>` shapes: Llama 3.1's custom-tool format, and the element with a JSON
    /// attribute a real Qwen2.5-Coder-1.5B run wrote under llama.cpp's stock template.
    #[test]
    fn function_elements_are_calls() {
        let want = Some(vec![TextCall {
            name: "fs__read_file".into(),
            arguments: json!({"path": "a.txt"}),
        }]);
        for text in [
            "<function=fs__read_file>{\"path\": \"a.txt\"}</function>",
            "<tools>\n  <function name=\"fs__read_file\" arguments='{\"path\": \"a.txt\"}'/>\n</tools>",
            "<function name='fs__read_file' arguments=\"{&quot;path&quot;: &quot;a.txt&quot;}\" />",
            "<function name=\"fs__read_file\">\n{\"path\": \"a.txt\"}\n</function>",
        ] {
            assert_eq!(parse(text, &tools(), Strictness::WholeText), want, "{text}");
        }
        let two = "<function_calls><function=fs__read_file>{\"path\": \"a\"}</function>\n\
                   <function=fs__read_file>{\"path\": \"b\"}</function></function_calls>";
        assert_eq!(
            parse(two, &tools(), Strictness::WholeText).unwrap().len(),
            2
        );
        let prose = "I will read it.\n<function=fs__read_file>{\"path\": \"a.txt\"}</function>";
        assert_eq!(parse(prose, &tools(), Strictness::WholeText), None);
        assert_eq!(parse(prose, &tools(), Strictness::TrailingCalls), want);
        for text in [
            "<function=rm_everything>{}</function>",
            "<function=fs__read_file>[1]</function>",
            "<function name=\"fs__read_file\" arguments='{broken'/>",
            "<function name=\"fs__read_file\" evil=\"x\"/>",
            "<function=fs__read_file>{\"path\": \"a\"}</function> and then some prose",
            "<function name=\"fs__read_file\"",
        ] {
            assert_eq!(
                parse(text, &tools(), Strictness::TrailingCalls),
                None,
                "{text}"
            );
        }
    }

    #[test]
    fn json_that_is_not_a_call_of_an_offered_tool_is_text() {
        let prose = "Use this:\n```json\n{\"name\": \"fs__read_file\", \"arguments\": {}}\n```";
        assert_eq!(parse(prose, &tools(), Strictness::WholeText), None);
        assert!(parse(prose, &tools(), Strictness::TrailingCalls).is_some());
        for text in [
            "{\"name\": \"rm_everything\", \"arguments\": {}}",
            "{\"name\": \"fs__read_file\", \"arguments\": [1]}",
            "{\"config\": true}",
            "The answer is 42.",
            "```json\n{\"name\": \"fs__read_file\"\n```",
        ] {
            assert_eq!(
                parse(text, &tools(), Strictness::TrailingCalls),
                None,
                "{text}"
            );
        }
    }

    #[test]
    fn rendered_history_has_no_native_calls_left() {
        let history = vec![
            Message::user_text("read a"),
            Message::Assistant {
                content: vec![AssistantContent::ToolCall(crate::types::ToolCall {
                    id: "call_t1".into(),
                    name: "fs__read_file".into(),
                    arguments: json!({"path": "a"}),
                })],
            },
            Message::User {
                content: vec![UserContent::ToolResult(crate::types::ToolResult::text(
                    "call_t1", "alpha",
                ))],
            },
        ];
        let out = render(&history);
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("tool_call\""), "{text}");
        assert!(text.contains("Result of tool call call_t1"));
        let again = match &out[1] {
            Message::Assistant { content } => match &content[0] {
                AssistantContent::Text { text } => text.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        assert!(parse(&again, &history_tools(), Strictness::WholeText).is_some());
    }

    fn history_tools() -> Vec<ToolSpec> {
        tools()
    }
}
