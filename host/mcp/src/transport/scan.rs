//! The envelope of a JSON-RPC message too large to parse.
//!
//! A reply over the line limit is never buffered whole (that is the point of the limit), yet the
//! call waiting for it must fail at once rather than at its timeout (issue 15, F10). So the
//! dropped line streams through this scanner, which keeps only what a reply needs to be answered
//! for: its top-level `id`, and whether it is a response (`result`/`error`) or a message of the
//! server's own (`method`). Key order is free in JSON — the TypeScript SDK writes `id` last — so
//! nothing short of a scan to the end of the line will do.

use rmcp::model::RequestId;

/// Longest `id` kept (a request id tern made is a small number; anything longer is not ours).
const MAX_ID_BYTES: usize = 128;
/// Keys longer than this are none of the ones we look for.
const MAX_KEY_BYTES: usize = 8;

/// What the value being read at depth 1 belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Other,
}

/// A streaming scan over one JSON text, fed in chunks.
#[derive(Debug, Default)]
pub(crate) struct EnvelopeScan {
    depth: u32,
    in_string: bool,
    escape: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    /// The key being read, while reading it (`None` once it is too long to matter).
    key: Option<Vec<u8>>,
    reading_key: bool,
    /// The key whose value comes next at depth 1.
    value_of: Option<Key>,
    /// Raw bytes of the `id` value while it is being read.
    id_raw: Option<Vec<u8>>,
    id: Option<RequestId>,
    has_method: bool,
    is_response: bool,
}

/// What the scan found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Envelope {
    /// The message's top-level `id`, when it had a readable one.
    pub(crate) id: Option<RequestId>,
    /// It has `result` or `error` and no `method`: a response to one of our requests.
    pub(crate) is_response: bool,
}

impl EnvelopeScan {
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    pub(crate) fn finish(mut self) -> Envelope {
        self.end_id();
        Envelope {
            id: self.id,
            is_response: self.is_response && !self.has_method,
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if self.reading_key {
                if let Some(k) = self.key.as_mut() {
                    if k.len() < MAX_KEY_BYTES {
                        k.push(b);
                    } else {
                        self.key = None;
                    }
                }
            } else if let Some(raw) = self.id_raw.as_mut() {
                push_capped(raw, b);
            }
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.end_key();
                } else if self.id_raw.is_some() {
                    self.end_id();
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.reading_key = true;
                    self.key = Some(Vec::new());
                } else if self.depth == 1 && self.value_of == Some(Key::Id) {
                    self.id_raw = Some(vec![b'"']);
                    self.value_of = None;
                }
            }
            b'{' | b'[' => {
                if self.depth == 1 {
                    // An object or array as the id is no id of ours.
                    self.value_of = None;
                }
                self.depth += 1;
                if self.depth == 1 && b == b'{' {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_id();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => self.expect_key = false,
            b',' if self.depth == 1 => {
                self.end_id();
                self.expect_key = true;
                self.value_of = None;
            }
            b' ' | b'\t' | b'\r' | b'\n' if self.depth == 1 => self.end_id(),
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ if self.depth == 1 => {
                if self.value_of == Some(Key::Id) {
                    self.id_raw = Some(Vec::new());
                    self.value_of = None;
                }
                if let Some(raw) = self.id_raw.as_mut() {
                    push_capped(raw, b);
                }
            }
            _ => {}
        }
    }

    fn end_key(&mut self) {
        let key = self.key.take();
        self.value_of = Some(Key::Other);
        // The key string was captured with its closing quote.
        let Some(key) = key else { return };
        let name = key.strip_suffix(b"\"").unwrap_or(&key);
        match name {
            b"id" => self.value_of = Some(Key::Id),
            b"method" => self.has_method = true,
            b"result" | b"error" => self.is_response = true,
            _ => {}
        }
    }

    fn end_id(&mut self) {
        if let Some(raw) = self.id_raw.take()
            && raw.len() < MAX_ID_BYTES
        {
            self.id = serde_json::from_slice::<RequestId>(&raw).ok();
        }
    }
}

fn push_capped(raw: &mut Vec<u8>, b: u8) {
    if raw.len() < MAX_ID_BYTES {
        raw.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn scan(text: &str) -> Envelope {
        let mut s = EnvelopeScan::default();
        // Feed in small uneven chunks: the scanner must not care where chunks end.
        for chunk in text.as_bytes().chunks(3) {
            s.feed(chunk);
        }
        s.finish()
    }

    #[test]
    fn finds_the_id_first_or_last() {
        let first = scan(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"x"}]}}"#);
        assert_eq!(first.id, Some(NumberOrString::Number(7)));
        assert!(first.is_response);
        let last = scan(r#"{"result":{"id":99,"nested":{"id":5}},"jsonrpc":"2.0","id":12}"#);
        assert_eq!(last.id, Some(NumberOrString::Number(12)));
        assert!(last.is_response);
    }

    #[test]
    fn string_ids_stay_strings_and_escapes_do_not_confuse_it() {
        let e = scan(r#"{"error":{"message":"a \"quoted\" } brace"},"id":"7","jsonrpc":"2.0"}"#);
        assert_eq!(e.id, Some(NumberOrString::String("7".into())));
        assert!(e.is_response);
    }

    #[test]
    fn server_requests_are_not_responses() {
        let e = scan(r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}"#);
        assert_eq!(e.id, Some(NumberOrString::Number(3)));
        assert!(!e.is_response);
    }

    #[test]
    fn whitespace_and_missing_ids_are_handled() {
        let e = scan("{ \"id\" : 42 ,\n \"result\" : {} }");
        assert_eq!(e.id, Some(NumberOrString::Number(42)));
        let none = scan(r#"{"jsonrpc":"2.0","result":{}}"#);
        assert_eq!(none.id, None);
        let cut = scan(r#"{"jsonrpc":"2.0","id":8,"result":{"text":"never ends"#);
        assert_eq!(cut.id, Some(NumberOrString::Number(8)));
    }
}
