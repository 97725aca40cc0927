//! The client half of every MCP connection tern opens.
//!
//! Answers `roots/list` with the server's roots (unless its `roots` setting turns them off),
//! answers elicitation by the pool's [`ElicitationPolicy`], routes `notifications/progress` to
//! the call that asked for it, and turns server log messages into events.
//! (`notifications/tools/list_changed` is caught earlier, on the wire: see
//! `transport::guard`.)
//!
//! Roots and logging are deprecated by the 2026-07-28 revision (SEP-2577) but still part of it,
//! hence the `allow`: tern offers roots in both eras (a 2026-07-28 server asks for them through
//! an input request, see [`Answers`]), never sets a log level, and never offers sampling.
#![allow(deprecated)]

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use rmcp::{
    ClientHandler, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationCapability, FormElicitationCapability, Implementation, ListRootsResult,
        LoggingMessageNotificationParam, NotificationMetaObject, ProgressNotificationParam,
        ProgressToken, ProtocolVersion, RootsCapabilities, UrlElicitationCapability,
    },
    service::{NotificationContext, RequestContext},
};
use serde_json::Value;
use tokio::sync::mpsc;

use tern_protocol::{AnsweredBy, ElicitationMode, Event};

use sha2::{Digest, Sha256};

use crate::{
    elicitation::{
        ElicitationAnswer, ElicitationKind, ElicitationRequest, Elicitor, check as check_form,
        form_fields,
    },
    event::{EventSink, Progress},
    spec::ElicitationPolicy,
};

/// Progress listeners by token, shared between the handler and the pool's calls.
pub(crate) type ProgressRoutes =
    Arc<Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<Progress>>>>;

/// What tern answers a server's requests with. Shared by the handler (2025-11-25 server→client
/// requests) and the pool's multi-round tool calls (2026-07-28 input requests), so both eras get
/// the same answers.
pub(crate) struct Answers {
    pub(crate) server: String,
    /// `None`: roots are off for this server.
    pub(crate) roots: Option<Vec<PathBuf>>,
    pub(crate) elicitation: ElicitationPolicy,
    /// Who asks the person, when there is one to ask.
    pub(crate) elicitor: Option<Arc<dyn Elicitor>>,
    pub(crate) events: EventSink,
    /// Time this server's questions spent waiting for the person, which its calls' timeouts
    /// do not count ([`PersonClock`]).
    pub(crate) person: PersonClock,
}

/// How long a person has spent answering a server's questions, so a call's timeout measures
/// the server's time, not the person's: a form that takes two minutes to fill in must not
/// fail the call that asked for it. Shared by every call of the server (a question cannot
/// always be tied to one call in the 2025-11-25 era), so they all wait while one asks.
#[derive(Debug, Default)]
pub(crate) struct PersonClock(tokio::sync::watch::Sender<Asking>);

#[derive(Debug, Default, Clone, Copy)]
struct Asking {
    /// Time of questions already answered.
    total: std::time::Duration,
    /// Questions being asked now, and since when (the first of them).
    open: usize,
    since: Option<tokio::time::Instant>,
}

impl PersonClock {
    /// The person's time so far, including a question open now.
    pub(crate) fn spent(&self) -> std::time::Duration {
        let a = *self.0.borrow();
        a.total + a.since.map_or(std::time::Duration::ZERO, |s| s.elapsed())
    }

    /// Resolves when `deadline`, moved later by the person's time since `base` (a
    /// [`Self::spent`] taken when the call began), has passed with no question open.
    pub(crate) async fn deadline(&self, deadline: tokio::time::Instant, base: std::time::Duration) {
        let mut rx = self.0.subscribe();
        loop {
            let open = rx.borrow_and_update().open > 0;
            if open {
                if rx.changed().await.is_err() {
                    return;
                }
                continue;
            }
            let moved = deadline + self.spent().saturating_sub(base);
            tokio::select! {
                () = tokio::time::sleep_until(moved) => return,
                changed = rx.changed() => if changed.is_err() { return },
            }
        }
    }

    /// Counts the time until the guard drops as the person's.
    fn asking(&self) -> AskingGuard<'_> {
        self.0.send_modify(|a| {
            if a.open == 0 {
                a.since = Some(tokio::time::Instant::now());
            }
            a.open += 1;
        });
        AskingGuard(self)
    }
}

struct AskingGuard<'a>(&'a PersonClock);

impl Drop for AskingGuard<'_> {
    fn drop(&mut self) {
        self.0.0.send_modify(|a| {
            a.open = a.open.saturating_sub(1);
            if a.open == 0
                && let Some(since) = a.since.take()
            {
                a.total += since.elapsed();
            }
        });
    }
}

impl Answers {
    /// `roots/list`, or `None` when this server is offered no roots.
    pub(crate) fn roots(&self) -> Option<ListRootsResult> {
        let roots = self.roots.as_ref()?;
        Some(ListRootsResult::new(
            roots
                .iter()
                .map(|p| {
                    let mut root = rmcp::model::Root::new(file_uri(p));
                    root.name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                    root
                })
                .collect(),
        ))
    }

    /// `elicitation/create` (and a 2026-07-28 elicitation input request): the person's answer
    /// when there is an [`Elicitor`], else the policy's. Every one is an
    /// [`Event::Elicitation`] (which the host also writes to the audit log); one nobody was
    /// asked about is also a notice, so a headless run shows it.
    pub(crate) async fn elicit(&self, request: &ElicitRequestParams) -> ElicitResult {
        let kind = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
                ElicitationKind::Form {
                    message: message.clone(),
                    fields: form_fields(&schema, requested_schema.property_order.as_deref()),
                    schema,
                }
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                ElicitationKind::Url {
                    message: message.clone(),
                    url: url.clone(),
                }
            }
            _ => ElicitationKind::Url {
                message: "a kind of elicitation tern does not know".to_string(),
                url: String::new(),
            },
        };
        let request = ElicitationRequest {
            server: self.server.clone(),
            kind,
        };
        let (mut answer, answered_by) = match (&self.elicitor, &request.kind) {
            (Some(person), ElicitationKind::Url { url, .. }) if !url.is_empty() => {
                let _asking = self.person.asking();
                (person.elicit(&request).await, AnsweredBy::User)
            }
            (Some(person), ElicitationKind::Form { .. }) => {
                let _asking = self.person.asking();
                (person.elicit(&request).await, AnsweredBy::User)
            }
            (_, ElicitationKind::Form { schema, .. })
                if self.elicitation == ElicitationPolicy::AcceptDefaults =>
            {
                match defaults_of(schema) {
                    Some(Value::Object(content)) => {
                        (ElicitationAnswer::Accept(content), AnsweredBy::Defaults)
                    }
                    _ => (ElicitationAnswer::Decline, AnsweredBy::Policy),
                }
            }
            _ => (ElicitationAnswer::Decline, AnsweredBy::Policy),
        };
        // A form answer the server's own schema refuses is never sent.
        if let (ElicitationAnswer::Accept(content), ElicitationKind::Form { schema, .. }) =
            (&answer, &request.kind)
            && let Err(why) = check_form(schema, content)
        {
            (self.events)(Event::Notice {
                message: format!(
                    "the answer to server `{}` does not fit its form ({why}); declined",
                    self.server
                ),
            });
            answer = ElicitationAnswer::Decline;
        }
        self.report(&request, &answer, answered_by);
        match answer {
            ElicitationAnswer::Accept(content) => {
                let result = ElicitResult::new(ElicitationAction::Accept);
                match request.kind {
                    ElicitationKind::Form { .. } => result.with_content(Value::Object(content)),
                    ElicitationKind::Url { .. } => result,
                }
            }
            ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }

    /// The event (and, when nobody was asked, the notice) of one elicitation.
    fn report(
        &self,
        request: &ElicitationRequest,
        answer: &ElicitationAnswer,
        answered_by: AnsweredBy,
    ) {
        let (mode, message, url) = match &request.kind {
            ElicitationKind::Form { message, .. } => (ElicitationMode::Form, message.clone(), None),
            ElicitationKind::Url { message, url } => {
                (ElicitationMode::Url, message.clone(), Some(url.clone()))
            }
        };
        let (fields, content_sha256) = match answer {
            ElicitationAnswer::Accept(content) if !content.is_empty() => (
                content.keys().cloned().collect(),
                Some(crate::table::hex(&Sha256::digest(
                    Value::Object(content.clone()).to_string().as_bytes(),
                ))),
            ),
            _ => (Vec::new(), None),
        };
        if answered_by != AnsweredBy::User {
            let said = match answer {
                ElicitationAnswer::Accept(_) => "accepted with the defaults it declares",
                _ => "declined (no one to ask in this run)",
            };
            let shown = match &url {
                Some(u) => format!("{message} ({u})"),
                None => message.clone(),
            };
            (self.events)(Event::Notice {
                message: format!("server `{}` asked for input: {shown} — {said}", self.server),
            });
        }
        (self.events)(Event::Elicitation {
            server: self.server.clone(),
            mode,
            message,
            url,
            action: answer.action(),
            answered_by,
            fields,
            content_sha256,
        });
    }
}

/// The content a form with these properties gets when every field takes its default, or
/// `None` when a required field has none (tern never invents a value).
fn defaults_of(schema: &Value) -> Option<Value> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut content = serde_json::Map::new();
    for (name, prop) in properties.into_iter().flatten() {
        if let Some(default) = prop.get("default") {
            content.insert(name.clone(), default.clone());
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    let complete = required
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .all(|r| content.contains_key(r));
    complete.then_some(Value::Object(content))
}

/// tern's [`ClientHandler`]: one per connection (a restart makes a new one).
pub(crate) struct TernClient {
    pub(crate) answers: Arc<Answers>,
    pub(crate) progress: ProgressRoutes,
}

impl ClientHandler for TernClient {
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        self.answers.roots().ok_or_else(|| {
            rmcp::ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "roots are turned off for this server",
                None,
            )
        })
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(self.answers.elicit(&request).await)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let route = self
            .progress
            .lock()
            .ok()
            .and_then(|routes| routes.get(&params.progress_token).cloned());
        if let Some(tx) = route {
            // Where the notification's `_meta` ends up: rmcp 3.11 parses it into the message's
            // extensions, and its dispatch moves those into `context.extensions` before it reads
            // `context.meta` from them (which is therefore empty). All three are looked at.
            let tail = [
                context.extensions.get::<NotificationMetaObject>(),
                Some(&context.meta),
                params.meta.as_ref(),
            ]
            .into_iter()
            .flatten()
            .find_map(|m| tern_protocol::meta::OutputTail::from_progress_meta(&m.0.0))
            .map(|t| t.lines);
            let _ = tx.send(Progress {
                progress: params.progress,
                terminal_id: terminal_of(&params, &context),
                total: params.total,
                message: params.message,
                task: None,
                tail,
            });
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "info".to_string());
        (self.answers.events)(Event::ServerLog {
            server: self.answers.server.clone(),
            level,
            logger: params.logger,
            data: params.data,
        });
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.answers.roots.is_some() {
            let mut roots = RootsCapabilities::default();
            roots.list_changed = Some(false);
            caps.roots = Some(roots);
        }
        // URL mode only where a person can be sent to one (the REPL).
        let mut elicitation =
            ElicitationCapability::new().with_form(FormElicitationCapability::new());
        if self.answers.elicitor.is_some() {
            elicitation = elicitation.with_url(UrlElicitationCapability::default());
        }
        caps.elicitation = Some(elicitation);
        // The tasks extension (SEP-2663): a server may answer a long call with a task, which
        // the pool follows (`task_ext.rs`). 2025-11-25 servers ignore unknown extensions.
        caps.extensions.get_or_insert_default().insert(
            rmcp::model::TASKS_EXTENSION_ID.to_string(),
            Default::default(),
        );
        let mut config =
            ClientConfig::new(caps, Implementation::new("tern", env!("CARGO_PKG_VERSION")));
        // What `initialize` offers. rmcp's default is its newest revision, 2026-07-28, which has
        // no `initialize` at all; the newest revision that does is the one to offer.
        config.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        config
    }
}

/// `file://` URI of an absolute path (percent-encoding the few bytes that need it).
pub(crate) fn file_uri(path: &std::path::Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The editor terminal a progress notification names in its `_meta`
/// ([`tern_protocol::meta::TERMINAL`]). rmcp 3.11 parses a notification's `_meta` into the
/// message's extensions and moves those into `context.extensions` (its `context.meta` is then
/// empty), so each place it can be is looked at.
fn terminal_of(
    params: &ProgressNotificationParam,
    context: &NotificationContext<RoleClient>,
) -> Option<String> {
    [
        context
            .extensions
            .get::<rmcp::model::NotificationMetaObject>(),
        Some(&context.meta),
        params.meta.as_ref(),
    ]
    .into_iter()
    .flatten()
    .find_map(|m| tern_protocol::meta::TerminalShown::from_progress_meta(&m.0.0))
    .map(|t| t.terminal_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(file_uri(std::path::Path::new("/w/a b")), "file:///w/a%20b");
        assert_eq!(file_uri(std::path::Path::new("/w/x")), "file:///w/x");
    }

    #[test]
    fn defaults_fill_a_form_only_when_every_required_field_has_one() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}
        }, "required": ["name"]});
        assert_eq!(
            defaults_of(&schema),
            Some(json!({"name": "John Doe", "age": 30}))
        );
        let needs_note = json!({"type": "object", "properties": {
            "note": {"type": "string"}
        }, "required": ["note"]});
        assert_eq!(defaults_of(&needs_note), None);
    }
}
