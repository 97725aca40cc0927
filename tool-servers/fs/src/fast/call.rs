//! Recognising a quick `tools/call` line and answering it.
//!
//! A line is taken only when it is exactly a `tools/call` request this module can answer
//! the way rmcp would: the envelope has no field but `jsonrpc` (`"2.0"`), `id`, `method`
//! and `params`; `params` none but `name`, `arguments` and `_meta`; no `_meta` key under
//! `io.modelcontextprotocol/` (the only request `_meta` keys rmcp's server reads — protocol
//! version, client capabilities and info, log level — change how it validates the request;
//! tern's `tern/…` keys and anything else a client adds, `progressToken`, `traceparent`, are
//! read by the tool function alone, the same on both routes); the arguments are an object that becomes
//! the tool's parameters by the same `from_value` rmcp's extractor runs. Anything else — a
//! duplicate envelope key, an escaped method name, arguments that do not parse (rmcp words
//! that error itself) — is left to rmcp, which sees the line unchanged. Declining costs one failed parse; answering wrongly is not an option.

use rmcp::model::{
    CallToolResult, RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::json;
use crate::FsServer;
use crate::tools::list::ListDirParams;
use crate::tools::output::ReadOutput;
use crate::tools::read::{self, ReadFileParams};

/// A request line as the fast path accepts it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call<'a> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    id: RequestId,
    #[serde(borrow)]
    method: &'a str,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    #[serde(borrow)]
    name: &'a str,
    arguments: Map<String, Value>,
    #[serde(rename = "_meta", default)]
    meta: Option<RequestMetaObject>,
}

/// Prefix of the request `_meta` keys rmcp's server interprets (`RequestMetaObject`).
const PROTOCOL_META: &str = "io.modelcontextprotocol/";

/// The tools answered here: they finish in microseconds on the calling thread under
/// rmcp too (grep and glob go to the blocking pool and watch for cancellation, so they
/// stay with rmcp).
const READ_FILE: &str = "read_file";
const LIST_DIR: &str = "list_dir";

/// Answers `line` (without its newline) into `out` when it is a call this path takes;
/// `false` leaves `out` untouched and the line to rmcp.
pub(crate) fn answer(server: &FsServer, line: &[u8], out: &mut Vec<u8>) -> bool {
    // Cheap refusal for every other message (notifications, lists, responses).
    if memchr::memmem::find(line, b"\"tools/call\"").is_none() {
        return false;
    }
    let Ok(call) = serde_json::from_slice::<Call<'_>>(line) else {
        return false;
    };
    if call.jsonrpc != "2.0" || call.method != "tools/call" {
        return false;
    }
    let meta = call.params.meta.unwrap_or_default();
    if meta.keys().any(|k| k.starts_with(PROTOCOL_META)) {
        return false;
    }
    let ctx = server.context();
    let arguments = call.params.arguments;
    match call.params.name {
        // Through the editor the read is a round trip on the blocking pool: rmcp's route.
        READ_FILE if ctx.editor.is_none() => {
            let Some(p) = parameters::<ReadFileParams>(arguments) else {
                return false;
            };
            tracing::debug!(id = %call.id, tool = READ_FILE, "fast path");
            match read::call(ctx, &meta, p) {
                Ok(page) => read_reply(out, &call.id, &page),
                Err(failed) => serde_reply(out, call.id, failed),
            }
            true
        }
        LIST_DIR => {
            let Some(p) = parameters::<ListDirParams>(arguments) else {
                return false;
            };
            tracing::debug!(id = %call.id, tool = LIST_DIR, "fast path");
            serde_reply(out, call.id, crate::tools::list::call(ctx, &meta, p));
            true
        }
        _ => false,
    }
}

/// The tool's parameters exactly as rmcp's `Parameters` extractor makes them (`from_value`
/// of the arguments object); `None` leaves the call to rmcp, which words the error.
fn parameters<P: DeserializeOwned>(arguments: Map<String, Value>) -> Option<P> {
    serde_json::from_value(Value::Object(arguments)).ok()
}

/// The reply line rmcp writes for `result`, by rmcp's own types and serializer: what
/// its handler does to a result for a peer that negotiated a version before
/// 2026-07-28 (the only sessions the fast path serves), then its codec's
/// `serde_json::to_writer` and newline.
pub(crate) fn serde_reply(out: &mut Vec<u8>, id: RequestId, result: CallToolResult) {
    let mut result = ServerResult::CallToolResult(result);
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    let message = ServerJsonRpcMessage::response(result, id);
    if let Err(e) = serde_json::to_writer(&mut *out, &message) {
        // Writing to a Vec cannot fail, and rmcp's types always serialize.
        tracing::error!("cannot serialize a reply: {e}");
    }
    out.push(b'\n');
}

/// A `read_file` page's reply line, written directly: the page's text is escaped once
/// and copied into `structuredContent.content` (they are the same string). Byte for
/// byte [`serde_reply`] of [`read::into_result`] (`tests::the_read_reply_is_rmcps`):
/// serde_json without `preserve_order` writes `structuredContent`'s keys sorted.
pub(crate) fn read_reply(out: &mut Vec<u8>, id: &RequestId, page: &ReadOutput) {
    // Destructured so a new field is a compile error here, not a silently missing key.
    let ReadOutput {
        content,
        start_line,
        lines_shown,
        total_bytes,
        truncated,
        next_offset,
        mime_type,
    } = page;
    out.reserve(content.len() * 2 + 256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    id_into(out, id);
    out.extend_from_slice(br#","result":{"content":[{"type":"text","text":""#);
    let start = out.len();
    json::escape_into(out, content);
    let end = out.len();
    out.extend_from_slice(br#""}],"structuredContent":{"content":""#);
    out.extend_from_within(start..end);
    out.extend_from_slice(br#"","lines_shown":"#);
    json::u64_into(out, *lines_shown);
    if let Some(mime_type) = mime_type {
        out.extend_from_slice(br#","mime_type":"#);
        json::string_into(out, mime_type);
    }
    if let Some(next) = next_offset {
        out.extend_from_slice(br#","next_offset":"#);
        json::u64_into(out, *next);
    }
    out.extend_from_slice(br#","start_line":"#);
    json::u64_into(out, *start_line);
    out.extend_from_slice(br#","total_bytes":"#);
    json::u64_into(out, *total_bytes);
    out.extend_from_slice(if *truncated {
        br#","truncated":true},"isError":false}}"#
    } else {
        br#","truncated":false},"isError":false}}"#
    });
    out.push(b'\n');
}

fn id_into(out: &mut Vec<u8>, id: &RequestId) {
    match id {
        RequestId::Number(n) => {
            if *n < 0 {
                out.push(b'-');
            }
            json::u64_into(out, n.unsigned_abs());
        }
        RequestId::String(s) => json::string_into(out, s),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn page(content: &str, next_offset: Option<u64>, truncated: bool) -> ReadOutput {
        ReadOutput {
            content: content.into(),
            start_line: 3,
            lines_shown: 2,
            total_bytes: 12345,
            truncated,
            next_offset,
            mime_type: None,
        }
    }

    #[test]
    fn the_read_reply_is_rmcps() {
        let ids = [
            RequestId::Number(0),
            RequestId::Number(-7),
            RequestId::Number(i64::MAX),
            RequestId::Number(i64::MIN),
            RequestId::String("a \"quoted\" id\n\u{1}é".into()),
        ];
        let pages = [
            page("     3\tplain\n     4\tline\n", None, false),
            page("     3\t\"q\" \\ \u{0}\u{1f} é😀\r\n", Some(5), false),
            page("", Some(9), true),
            ReadOutput {
                mime_type: Some("image/png".into()),
                ..page("[image]\n", None, false)
            },
        ];
        for id in &ids {
            for p in &pages {
                let mut fast = Vec::new();
                read_reply(&mut fast, id, p);
                let mut reference = Vec::new();
                let p = ReadOutput {
                    content: p.content.clone(),
                    mime_type: p.mime_type.clone(),
                    ..*p
                };
                serde_reply(&mut reference, id.clone(), read::into_result(Ok(p)));
                assert_eq!(
                    String::from_utf8(fast).unwrap(),
                    String::from_utf8(reference).unwrap()
                );
            }
        }
    }
}
