//! A `session/prompt`'s content blocks as one user message: text as it is, a resource the
//! editor embedded as a `<resource>` block (the shape the REPL gives `@server:uri`
//! attachments), a resource link as a reference the model can read through its tools (and so
//! through the gateway: tern itself never reads what a link names), and images (ACP
//! `ImageContent`: `{"type": "image", "mimeType", "data", "uri"?}`) as image attachments when
//! `promptCapabilities.image` said so — decoded and checked by their bytes, like a file.

use base64::Engine as _;
use serde_json::Value;
use tern_protocol::{Image, image};

use super::rpc::RpcError;
use crate::agent::attach::Attachment;

/// A prompt as tern takes it.
#[derive(Debug)]
pub struct Prompt {
    /// The text of the message.
    pub text: String,
    /// The images the editor sent, in order.
    pub images: Vec<Attachment>,
}

fn attr(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;")
}

/// The message `blocks` make, or why one cannot be taken; `images` is whether images are
/// taken at all (what `promptCapabilities.image` said).
pub fn to_prompt(blocks: &[Value], images: bool) -> Result<Prompt, RpcError> {
    let mut parts: Vec<String> = Vec::new();
    let mut attached = Vec::new();
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
            Some("image") if images => attached.push(image_block(b).map_err(bad)?),
            Some(other @ ("image" | "audio")) => {
                return Err(bad(format!(
                    "{other} content is not supported (promptCapabilities says so)"
                ))
                .hint(if other == "image" {
                    "this session's model takes no images (tern's catalog or `[model] vision = \
                     false`); start tern acp with a model that does (`tern acp -m NAME`)"
                } else {
                    "send text, resources or resource links"
                }));
            }
            other => return Err(bad(format!("unknown content type {other:?}"))),
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() && attached.is_empty() {
        return Err(RpcError::invalid_params("the prompt is empty"));
    }
    Ok(Prompt {
        text,
        images: attached,
    })
}

/// An ACP image block as an attachment: valid base64 of a PNG, JPEG, GIF or WebP (by its
/// bytes, whatever `mimeType` claims; a mismatch is refused, since the provider would be told
/// the wrong type).
fn image_block(b: &Value) -> Result<Attachment, String> {
    let data = b["data"]
        .as_str()
        .ok_or("an image block needs `data` (base64)")?;
    let claimed = b["mimeType"].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the image's `data` is not base64: {e}"))?;
    let Some(format) = image::sniff(&bytes) else {
        return Err(format!(
            "the image is not a {} image by its bytes",
            image::formats_list()
        ));
    };
    if image::ImageFormat::from_mime_type(claimed).is_some_and(|c| c != format) {
        return Err(format!(
            "the image says `{claimed}` but its bytes are {}",
            format.name()
        ));
    }
    let name = b["uri"]
        .as_str()
        .and_then(|u| u.rsplit('/').next())
        .filter(|n| !n.is_empty())
        .unwrap_or("image")
        .to_string();
    Ok(Attachment::new(
        name,
        Image {
            mime_type: format.mime_type().to_string(),
            data: data.trim().to_string(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn to_text(blocks: &[Value]) -> Result<String, RpcError> {
        to_prompt(blocks, false).map(|p| p.text)
    }

    #[test]
    fn image_blocks_are_attachments_checked_by_their_bytes() {
        const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        let data = base64::engine::general_purpose::STANDARD.encode(PNG);
        let block = json!({"type": "image", "mimeType": "image/png", "data": data, "uri": "file:///w/shot.png"});
        let p = to_prompt(
            &[
                json!({"type": "text", "text": "what is it?"}),
                block.clone(),
            ],
            true,
        )
        .unwrap();
        assert_eq!(p.text, "what is it?");
        assert_eq!(p.images.len(), 1);
        assert_eq!(p.images[0].name, "shot.png");
        assert_eq!(p.images[0].image.data, data);
        assert_eq!(p.images[0].bytes, PNG.len());
        // An image alone is a prompt.
        assert!(to_prompt(std::slice::from_ref(&block), true).is_ok());
        // Refused: no images taken, a lying mime type, not an image, not base64.
        let e = to_prompt(std::slice::from_ref(&block), false).unwrap_err();
        assert!(format!("{e:?}").contains("model takes no images"), "{e:?}");
        let jpeg = json!({"type": "image", "mimeType": "image/jpeg", "data": data});
        assert!(format!("{:?}", to_prompt(&[jpeg], true).unwrap_err()).contains("bytes are PNG"));
        let text = base64::engine::general_purpose::STANDARD.encode("hello");
        let txt = json!({"type": "image", "mimeType": "image/png", "data": text});
        assert!(to_prompt(&[txt], true).is_err());
        let junk = json!({"type": "image", "mimeType": "image/png", "data": "***"});
        assert!(to_prompt(&[junk], true).is_err());
    }

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
