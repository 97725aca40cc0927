//! A `session/prompt`'s content blocks as the text of one user message: text as it is, a
//! resource the editor embedded as a `<resource>` block (the shape the REPL gives `@server:uri`
//! attachments), a resource link as a reference the model can read through its tools (and so
//! through the gateway: tern itself never reads what a link names).

use serde_json::Value;

use super::rpc::RpcError;

fn attr(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;")
}

/// The text of `blocks`, or why one cannot be taken.
pub fn to_text(blocks: &[Value]) -> Result<String, RpcError> {
    let mut parts: Vec<String> = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let bad = |what: String| RpcError::invalid_params(format!("prompt[{i}]: {what}"));
        match b["type"].as_str() {
            Some("text") => parts.push(
                b["text"]
                    .as_str()
                    .ok_or_else(|| bad("a text block needs `text`".into()))?
                    .to_string(),
            ),
            Some("resource_link") => {
                let uri = b["uri"]
                    .as_str()
                    .ok_or_else(|| bad("a resource link needs `uri`".into()))?;
                let name = b["name"].as_str().unwrap_or(uri);
                let path = uri.strip_prefix("file://").unwrap_or(uri);
                parts.push(format!(
                    "<resource_link name=\"{}\" uri=\"{}\" path=\"{}\"/> (the user points at this; read it with your tools if you need it)",
                    attr(name),
                    attr(uri),
                    attr(path)
                ));
            }
            Some("resource") => {
                let r = &b["resource"];
                let uri = r["uri"].as_str().unwrap_or_default();
                let Some(text) = r["text"].as_str() else {
                    return Err(bad(format!(
                        "the embedded resource `{uri}` is binary; tern takes text resources only"
                    )));
                };
                let mime = r["mimeType"]
                    .as_str()
                    .map(|t| format!(" mime_type=\"{}\"", attr(t)))
                    .unwrap_or_default();
                parts.push(format!(
                    "<resource uri=\"{}\"{mime}>\n{}\n</resource>",
                    attr(uri),
                    text.trim_end()
                ));
            }
            Some(other @ ("image" | "audio")) => {
                return Err(bad(format!(
                    "{other} content is not supported (promptCapabilities says so)"
                )));
            }
            other => return Err(bad(format!("unknown content type {other:?}"))),
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(RpcError::invalid_params("the prompt is empty"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_become_one_message() {
        let text = to_text(&[
            json!({"type": "text", "text": "fix it"}),
            json!({"type": "resource", "resource": {"uri": "file:///w/a.rs", "text": "fn a() {}\n", "mimeType": "text/x-rust"}}),
            json!({"type": "resource_link", "uri": "file:///w/b.rs", "name": "b.rs"}),
        ])
        .unwrap();
        assert_eq!(
            text,
            "fix it\n\n<resource uri=\"file:///w/a.rs\" mime_type=\"text/x-rust\">\nfn a() {}\n</resource>\n\n\
             <resource_link name=\"b.rs\" uri=\"file:///w/b.rs\" path=\"/w/b.rs\"/> (the user points at this; read it with your tools if you need it)"
        );
        assert!(to_text(&[json!({"type": "image", "data": "", "mimeType": "image/png"})]).is_err());
        assert!(to_text(&[json!({"type": "text", "text": " "})]).is_err());
    }
}
