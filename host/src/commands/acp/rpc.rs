//! JSON-RPC 2.0 over newline-delimited stdio, as ACP frames it: one message per line, stdout
//! only protocol. One writer task owns stdout, so the notifications of a turn, the responses
//! and tern's own requests to the editor (`session/request_permission`) never interleave
//! within a line.
//!
//! Kept to what ACP uses: no batches (a batch is an invalid request), ids are numbers or
//! strings, a message that is not JSON is answered with a parse error and the connection goes on
//! (JSON-RPC 2.0 §5.1).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use serde_json::{Value, json};
use tokio::{io::AsyncWriteExt, sync::mpsc, sync::oneshot};

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// ACP: the agent needs authentication first (tern: no model key in its environment).
pub const AUTH_REQUIRED: i64 = -32000;
/// ACP: the resource (a session) does not exist.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// An error answer: code, message and, where there is a next step, a `hint` in `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub hint: Option<String>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// Adds the next step, shown by clients that print `data`.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(INTERNAL_ERROR, message)
    }

    fn to_json(&self) -> Value {
        let mut e = json!({"code": self.code, "message": self.message});
        if let Some(h) = &self.hint {
            e["data"] = json!({ "hint": h });
        }
        e
    }
}

/// One message read from the editor.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A call that wants an answer.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A call without an id (`session/cancel`).
    Notification { method: String, params: Value },
    /// The answer to one of tern's requests.
    Response {
        id: Value,
        result: Result<Value, Value>,
    },
    /// Not a message: answered with this error (id `null` when none could be read).
    Invalid { id: Value, error: RpcError },
}

/// Reads one line.
pub fn parse(line: &str) -> Incoming {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return Incoming::Invalid {
                id: Value::Null,
                error: RpcError::new(PARSE_ERROR, format!("parse error: {e}")).hint(
                    "send one JSON-RPC 2.0 message per line (newline-delimited JSON, no \
                     embedded newlines)",
                ),
            };
        }
    };
    let Value::Object(mut obj) = value else {
        return Incoming::Invalid {
            id: Value::Null,
            error: RpcError::new(
                INVALID_REQUEST,
                "invalid request: a message must be a JSON object (batches are not used by ACP)",
            ),
        };
    };
    let id = obj.remove("id");
    let valid_id = |id: &Value| matches!(id, Value::Number(_) | Value::String(_));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Incoming::Invalid {
            id: id.filter(valid_id).unwrap_or(Value::Null),
            error: RpcError::new(
                INVALID_REQUEST,
                "invalid request: `jsonrpc` must be \"2.0\"",
            ),
        };
    }
    match (obj.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) if valid_id(&id) => Incoming::Request {
            id,
            method,
            params: obj.remove("params").unwrap_or(Value::Null),
        },
        (Some(Value::String(method)), None) => Incoming::Notification {
            method,
            params: obj.remove("params").unwrap_or(Value::Null),
        },
        (None, Some(id)) if valid_id(&id) => {
            let result = match (obj.remove("result"), obj.remove("error")) {
                (Some(r), None) => Ok(r),
                (None, Some(e)) => Err(e),
                _ => {
                    return Incoming::Invalid {
                        id,
                        error: RpcError::new(
                            INVALID_REQUEST,
                            "invalid response: exactly one of `result` and `error`",
                        ),
                    };
                }
            };
            Incoming::Response { id, result }
        }
        (_, id) => Incoming::Invalid {
            id: id.filter(valid_id).unwrap_or(Value::Null),
            error: RpcError::new(
                INVALID_REQUEST,
                "invalid request: needs a string `method` (and a number or string `id` for a \
                 request)",
            ),
        },
    }
}

/// An answer to one of tern's requests: the `result`, or the `error` object.
type Answer = Result<Value, Value>;

/// The writing half: every message tern sends goes through here, in order.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Value>,
    next_id: Arc<AtomicU64>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Answer>>>>,
}

impl Outbox {
    /// An outbox and the task that writes it to `out` until every sender is gone.
    pub fn new<W>(mut out: W) -> (Self, tokio::task::JoinHandle<()>)
    where
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
        let writer = tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                let mut line = msg.to_string();
                line.push('\n');
                if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
                    // The editor is gone: nothing more can be said.
                    break;
                }
            }
        });
        let outbox = Self {
            tx,
            next_id: Arc::new(AtomicU64::new(0)),
            pending: Arc::default(),
        };
        (outbox, writer)
    }

    fn send(&self, msg: Value) {
        let _ = self.tx.send(msg);
    }

    /// Answers request `id`.
    pub fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        self.send(match result {
            Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()}),
        });
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request to the editor and waits for its answer (`Err` holds the error object;
    /// `None` when the connection closed first).
    pub async fn request(&self, method: &str, params: Value) -> Option<Result<Value, Value>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await.ok()
    }

    /// Hands an answer to the request waiting for it; `false` when none waits for `id`.
    pub fn resolve(&self, id: &Value, result: Result<Value, Value>) -> bool {
        let Some(id) = id.as_u64() else {
            return false;
        };
        let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        match waiter {
            Some(tx) => tx.send(result).is_ok(),
            None => false,
        }
    }

    /// Drops every waiting request (the editor closed the connection): their callers see
    /// `None`.
    pub fn abandon_requests(&self) {
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_responses_and_bad_lines() {
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}"#),
            Incoming::Request {
                id: json!(1),
                method: "initialize".into(),
                params: json!({"a": 1})
            }
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#),
            Incoming::Notification {
                method: "session/cancel".into(),
                params: json!({})
            }
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":4,"result":{"x":true}}"#),
            Incoming::Response {
                id: json!(4),
                result: Ok(json!({"x": true}))
            }
        );
        let Incoming::Invalid { id, error } = parse("{not json") else {
            panic!()
        };
        assert_eq!((id, error.code), (Value::Null, PARSE_ERROR));
        let Incoming::Invalid { error, .. } = parse("[1,2]") else {
            panic!()
        };
        assert_eq!(error.code, INVALID_REQUEST);
        let Incoming::Invalid { id, error } = parse(r#"{"jsonrpc":"2.0","id":7}"#) else {
            panic!()
        };
        assert_eq!((id, error.code), (json!(7), INVALID_REQUEST));
        let Incoming::Invalid { error, .. } = parse(r#"{"id":1,"method":"x"}"#) else {
            panic!()
        };
        assert_eq!(error.code, INVALID_REQUEST);
    }
}
