//! Server resources (`resources/list`, `resources/read`): what the REPL's `/mcp` lists and
//! `@server:uri` attaches to a message.

use rmcp::model::{ReadResourceRequestParams, ReadResourceResponse, ResourceContents};
use serde::Serialize;
use tern_protocol::Image;

use crate::{
    call::fulfil,
    error::CallError,
    pool::ServerPool,
    slot::{LIST_TIMEOUT, Slot},
};

/// How long listing one server's resources (or prompts) may take.
/// Input-request rounds one read may take (2026-07-28).
const MAX_INPUT_ROUNDS: usize = 8;

/// A resource a server offers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ResourceInfo {
    pub server: String,
    pub uri: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// What reading a resource gave: each text part as it is, images as images, other binary
/// parts described in one line.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceText {
    pub uri: String,
    pub mime_type: Option<String>,
    pub text: String,
    pub images: Vec<Image>,
}

impl ServerPool {
    /// The resources every ready server lists (servers without the capability, or that do not
    /// answer in time, are skipped), in server order.
    pub async fn resources(&self) -> Vec<ResourceInfo> {
        let mut out = Vec::new();
        for (name, peer) in self.peers_with(|c| c.resources.is_some()) {
            let Ok(Ok(listed)) =
                tokio::time::timeout(LIST_TIMEOUT, peer.list_all_resources()).await
            else {
                continue;
            };
            out.extend(listed.into_iter().map(|r| ResourceInfo {
                server: name.clone(),
                uri: r.uri,
                name: r.name,
                title: r.title,
                description: r.description,
                mime_type: r.mime_type,
                size: r.size,
            }));
        }
        out
    }

    /// Reads `uri` from `server`, answering the server's input requests (2026-07-28) as its
    /// other requests are answered.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<ResourceText, CallError> {
        let slot = self
            .slots
            .get(server)
            .ok_or_else(|| CallError::UnknownServer(server.to_string()))?;
        let peer = slot
            .live
            .borrow()
            .peer
            .clone()
            .ok_or_else(|| CallError::NotReady {
                server: server.to_string(),
                state: slot.live.borrow().state.label().to_string(),
            })?;
        let mut params = ReadResourceRequestParams::new(uri);
        for _ in 0..MAX_INPUT_ROUNDS {
            let response = tokio::time::timeout(
                slot.spec.request_timeout,
                peer.read_resource_once(params.clone()),
            )
            .await
            .map_err(|_| CallError::Timeout {
                secs: slot.spec.request_timeout.as_secs_f64(),
            })?
            .map_err(|e| self.map_error(slot, e))?;
            match response {
                ReadResourceResponse::Complete(result) => {
                    return Ok(contents_text(uri, result.contents));
                }
                ReadResourceResponse::InputRequired(input) => {
                    params = next_round(slot, params, input).await?;
                }
                _ => {
                    return Err(CallError::BadReply(
                        "the server answered resources/read with a result tern does not know"
                            .to_string(),
                    ));
                }
            }
        }
        Err(CallError::BadReply(format!(
            "the server kept asking for input ({MAX_INPUT_ROUNDS} rounds); giving up"
        )))
    }
}

async fn next_round(
    slot: &Slot,
    mut params: ReadResourceRequestParams,
    input: rmcp::model::InputRequiredResult,
) -> Result<ReadResourceRequestParams, CallError> {
    let requests = input.input_requests.unwrap_or_default();
    if requests.is_empty() && input.request_state.is_none() {
        return Err(CallError::BadReply(
            "the server asked for input but sent neither requests nor state".to_string(),
        ));
    }
    let responses = fulfil(&slot.answers, requests).await?;
    params.input_responses = (!responses.is_empty()).then_some(responses);
    params.request_state = input.request_state;
    Ok(params)
}

/// The parts of a read resource as one text (parts separated by a blank line).
fn contents_text(uri: &str, contents: Vec<ResourceContents>) -> ResourceText {
    let mut text = String::new();
    let mut images = Vec::new();
    let mut mime = None;
    for part in contents {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        match part {
            ResourceContents::TextResourceContents {
                text: body,
                mime_type,
                ..
            } => {
                mime = mime.or(mime_type);
                text.push_str(&body);
            }
            ResourceContents::BlobResourceContents {
                blob, mime_type, ..
            } => {
                let kind = mime_type.clone().unwrap_or_else(|| "binary".to_string());
                if kind.starts_with("image/") {
                    text.push_str(&format!("[image: {kind}]"));
                    images.push(Image {
                        mime_type: kind,
                        data: blob,
                    });
                } else {
                    text.push_str(&format!("[{kind}, {} base64 characters]", blob.len()));
                }
                mime = mime.or(mime_type);
            }
            // Content kinds newer than this rmcp: shown as JSON rather than dropped.
            other => text.push_str(&serde_json::to_string(&other).unwrap_or_default()),
        }
    }
    ResourceText {
        uri: uri.to_string(),
        mime_type: mime,
        text,
        images,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_parts_are_kept_and_binary_ones_described() {
        let got = contents_text(
            "demo://x",
            vec![
                ResourceContents::text("hello", "demo://x").with_mime_type("text/markdown"),
                ResourceContents::blob("AAAA", "demo://x").with_mime_type("application/gzip"),
                ResourceContents::blob("iVBO", "demo://x").with_mime_type("image/png"),
            ],
        );
        assert_eq!(
            got.text,
            "hello\n\n[application/gzip, 4 base64 characters]\n\n[image: image/png]"
        );
        assert_eq!(got.mime_type.as_deref(), Some("text/markdown"));
        assert_eq!(got.images.len(), 1);
    }
}
