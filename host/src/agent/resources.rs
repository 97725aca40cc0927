//! A run's resources: what every later phase of [`Engine::start`](super::Engine::start) writes
//! to, built first and in one place.
//!
//! The pool needs the run's redactor (it learns OAuth tokens as they arrive) and audit log (every
//! elicitation is an audit line) before the gateway exists, and the gateway needs the same two.
//! Building them here, before either, means one `Arc<Redactor>` and one `Arc<AuditLog>` for the
//! whole run: nothing is bound late and no second redactor has to be kept in step with the first.

use std::sync::Arc;

use tern_gateway::{Recorders, Redactor, Secret, audit::AuditLog};
use tern_protocol::{Envelope, Event};

use super::{
    bus::{EventBus, Subscriber},
    secrets,
    servers::SecretSink,
    trace_file::EventWriter,
};
use crate::workspace::Workspace;

/// Where a run's events go besides its events file, given by the caller like the printer.
pub struct Outputs {
    /// Renders the events (the terminal, JSONL, a sub-run's watcher, an eval's counter).
    pub printer: Box<dyn Subscriber>,
    /// Exports them (OpenTelemetry), when export is on for this workspace.
    pub exporter: Option<crate::telemetry::Exporter>,
}

impl Outputs {
    /// `printer`, and the exporter `[telemetry]` and the `OTEL_*` variables ask for (a bad
    /// setting is a usage error).
    pub fn for_workspace(
        ws: &Workspace,
        printer: Box<dyn Subscriber>,
    ) -> Result<Self, crate::error::UsageError> {
        Ok(Self {
            printer,
            exporter: crate::telemetry::Exporter::for_workspace(ws)?,
        })
    }
}

/// The bus, the redactor and the audit log of one run.
pub struct RunResources {
    pub bus: EventBus,
    /// Applied to everything the run writes: events, transcript, audit, spills, exports.
    pub redactor: Arc<Redactor>,
    pub audit: Arc<AuditLog>,
}

impl RunResources {
    /// Opens the run's events file and the audit log and subscribes, in order, the events file,
    /// the caller's outputs and the audit of elicitations to a new bus.
    pub fn open(
        ws: &Workspace,
        run_id: &str,
        session_id: &str,
        outputs: Outputs,
    ) -> anyhow::Result<Self> {
        // A symlink planted at `runs/`, `sessions/` or `logs/` must not carry this run's
        // files elsewhere: refused before anything is written.
        tern_protocol::files::prepare_home(&ws.paths.tern_home)?;
        let bus = EventBus::new(run_id, session_id);
        let redactor = Arc::new(Redactor::new(secrets::for_run(ws)));
        let audit = Arc::new(AuditLog::open(&ws.paths.audit_log())?);
        let events = ws.paths.run_dir(run_id).join("events.jsonl");
        bus.subscribe(Box::new(EventWriter::create(&events, redactor.clone())?));
        // What reaches the terminal or stdout passes the redactor like every file: a key the
        // model typed is scrubbed on screen and in `--output-format jsonl` too.
        bus.subscribe(Box::new(Redacting::new(outputs.printer, redactor.clone())));
        if let Some(exporter) = outputs.exporter {
            bus.subscribe(exporter.subscriber(redactor.clone()));
        }
        bus.subscribe(Box::new(ElicitationAudit {
            audit: audit.clone(),
            redactor: redactor.clone(),
        }));
        Ok(Self {
            bus,
            redactor,
            audit,
        })
    }

    /// Teaches the run's redactor every token an authorization obtains during the run, before
    /// anything could echo it.
    pub fn secret_sink(&self) -> SecretSink {
        let redactor = self.redactor.clone();
        Arc::new(move |token: &str| redactor.add(Secret::new(token)))
    }

    /// What the gateway records into: the bus, and this run's redactor and audit log.
    pub fn recorders(&self) -> Recorders {
        Recorders {
            events: self.bus.sink(),
            redactor: self.redactor.clone(),
            audit: self.audit.clone(),
        }
    }
}

/// Hands a printer each event through the redactor: the event as JSON, redacted, read back.
/// An event with nothing to redact passes as it is (the common case costs one scan). Streamed
/// text is printed piece by piece, so a key the model types may arrive split across two deltas:
/// the end of a delta that could be the start of a known secret is held back until the next
/// piece (or any other event) says what follows.
struct Redacting {
    inner: Box<dyn Subscriber>,
    redactor: Arc<Redactor>,
    /// Text held back, with the envelope it came in.
    held: Option<(Envelope, String)>,
}

impl Redacting {
    fn new(inner: Box<dyn Subscriber>, redactor: Arc<Redactor>) -> Self {
        Self {
            inner,
            redactor,
            held: None,
        }
    }

    fn print(&mut self, e: &Envelope) {
        let Ok(json) = serde_json::to_value(e) else {
            return;
        };
        let redacted = self.redactor.redact_json(&json);
        if redacted == json {
            self.inner.on_event(e);
            return;
        }
        match serde_json::from_value::<Envelope>(redacted) {
            Ok(clean) => self.inner.on_event(&clean),
            // Never the unredacted event: a printer misses one rather than shows a secret.
            Err(err) => tracing::error!("an event could not be redacted for printing: {err}"),
        }
    }

    fn flush(&mut self) {
        if let Some((mut e, text)) = self.held.take() {
            set_streamed_text(&mut e.event, text);
            self.print(&e);
        }
    }
}

/// The text of a streamed piece (answer or thinking): the events the redactor holds back.
fn streamed_text(event: &Event) -> Option<&str> {
    match event {
        Event::TextDelta { text } | Event::ThinkingDelta { text } => Some(text),
        _ => None,
    }
}

fn set_streamed_text(event: &mut Event, new: String) {
    if let Event::TextDelta { text } | Event::ThinkingDelta { text } = event {
        *text = new;
    }
}

impl Subscriber for Redacting {
    fn on_event(&mut self, e: &Envelope) {
        let Some(text) = streamed_text(&e.event) else {
            self.flush();
            self.print(e);
            return;
        };
        // A piece of the other kind ends the held text: answer and thinking never join.
        if self.held.as_ref().is_some_and(|(h, _)| {
            std::mem::discriminant(&h.event) != std::mem::discriminant(&e.event)
        }) {
            self.flush();
        }
        let mut full = self.held.take().map(|(_, t)| t).unwrap_or_default();
        full.push_str(text);
        let keep = full.len() - self.redactor.pending_prefix(&full);
        let tail = full.split_off(keep);
        if !full.is_empty() {
            let mut now = e.clone();
            set_streamed_text(&mut now.event, full);
            self.print(&now);
        }
        if !tail.is_empty() {
            self.held = Some((e.clone(), tail));
        }
    }

    fn close(&mut self) {
        self.flush();
        self.inner.close();
    }
}

/// Writes each [`Event::Elicitation`] to the audit log, as a line of its own
/// (`"kind": "elicitation"`; an accepted form's values only as their digest).
struct ElicitationAudit {
    audit: Arc<AuditLog>,
    redactor: Arc<Redactor>,
}

impl Subscriber for ElicitationAudit {
    fn on_event(&mut self, e: &Envelope) {
        let Event::Elicitation {
            server,
            mode,
            action,
            answered_by,
            fields,
            content_sha256,
            ..
        } = &e.event
        else {
            return;
        };
        let line = serde_json::json!({
            "time": e.ts,
            "run_id": e.run_id,
            "session_id": e.session_id,
            "kind": "elicitation",
            "server": server,
            "mode": mode,
            "action": action,
            "answered_by": answered_by,
            "fields": fields,
            "content_sha256": content_sha256,
        });
        // No event from here (this runs inside the bus): a failed write goes to the log.
        if let Err(e) = self.audit.append_value(&line, &self.redactor) {
            tracing::error!("could not write an elicitation to the audit log: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;
    impl Subscriber for Nothing {
        fn on_event(&mut self, _: &Envelope) {}
    }

    fn workspace(dir: &std::path::Path) -> Workspace {
        let home = dir.join("tern-home");
        std::fs::create_dir_all(&home).unwrap();
        let env = [
            ("TERN_HOME".to_string(), home.display().to_string()),
            (
                "ANTHROPIC_API_KEY".to_string(),
                "sk-ant-from-the-env-1".into(),
            ),
        ]
        .into_iter()
        .collect();
        Workspace::for_test(dir, env)
    }

    fn outputs() -> Outputs {
        Outputs {
            printer: Box::new(Nothing),
            exporter: None,
        }
    }

    /// What a printer behind [`Redacting`] was given.
    struct Seen(Arc<std::sync::Mutex<Vec<Event>>>);
    impl Subscriber for Seen {
        fn on_event(&mut self, e: &Envelope) {
            self.0.lock().unwrap().push(e.event.clone());
        }
    }

    #[test]
    fn a_secret_split_across_thinking_pieces_is_redacted_and_kinds_never_join() {
        let secret = "sk-ant-secret-split-0123456789";
        let redactor = Arc::new(Redactor::new([Secret::new(secret)]));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut printer = Redacting::new(Box::new(Seen(seen.clone())), redactor);
        let env = |event| Envelope {
            run_id: "r".into(),
            session_id: "s".into(),
            seq: 0,
            ts: String::new(),
            event,
        };
        let (a, b) = secret.split_at(12);
        printer.on_event(&env(Event::ThinkingDelta {
            text: format!("the key is {a}"),
        }));
        printer.on_event(&env(Event::ThinkingDelta {
            text: format!("{b} ok"),
        }));
        printer.on_event(&env(Event::TextDelta {
            text: "answer".into(),
        }));
        printer.close();
        let seen = seen.lock().unwrap();
        let thought: String = seen
            .iter()
            .filter_map(|e| match e {
                Event::ThinkingDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(thought.contains(tern_gateway::REDACTED), "{thought}");
        assert!(!thought.contains(secret), "{thought}");
        assert!(
            thought.starts_with("the key is ") && thought.ends_with(" ok"),
            "{thought}"
        );
        let text: Vec<&str> = seen
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, ["answer"], "thinking never leaks into text: {seen:?}");
    }

    #[test]
    fn one_redactor_sees_what_the_pool_learns_and_what_the_environment_had() {
        let dir = tempfile::tempdir().unwrap();
        let ws = workspace(dir.path());
        let res = RunResources::open(&ws, "r1", "s1", outputs()).unwrap();
        // What the gateway will redact with is the run's redactor itself, not a copy.
        let gateway_side = res.recorders().redactor;
        assert!(Arc::ptr_eq(&gateway_side, &res.redactor));
        // A token the pool obtains mid-run…
        (res.secret_sink())("oauth-token-learned-late");
        // …is scrubbed by every writer, like the key the environment held from the start.
        let text = "k=sk-ant-from-the-env-1 t=oauth-token-learned-late";
        for redactor in [&res.redactor, &gateway_side] {
            let out = redactor.redact(text);
            assert!(!out.contains("oauth-token-learned-late"), "{out}");
            assert!(!out.contains("sk-ant-from-the-env-1"), "{out}");
        }
        res.bus.close();
    }

    #[test]
    fn elicitations_and_calls_go_to_one_audit_file() {
        let dir = tempfile::tempdir().unwrap();
        let ws = workspace(dir.path());
        let res = RunResources::open(&ws, "r1", "s1", outputs()).unwrap();
        res.bus.emit(Event::Elicitation {
            server: "ts".into(),
            mode: tern_protocol::ElicitationMode::Form,
            action: tern_protocol::ElicitationAction::Accept,
            answered_by: tern_protocol::AnsweredBy::User,
            message: "Tell me".into(),
            url: None,
            fields: vec!["name".into()],
            content_sha256: Some("abc".into()),
        });
        // The gateway's side writes through the same open log.
        let recorders = res.recorders();
        assert!(Arc::ptr_eq(&recorders.audit, &res.audit));
        recorders
            .audit
            .append_value(&serde_json::json!({"kind": "call"}), &recorders.redactor)
            .unwrap();
        res.bus.close();
        let text = std::fs::read_to_string(ws.paths.audit_log()).unwrap();
        let kinds: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
            .collect();
        assert_eq!(kinds, ["\"elicitation\"", "\"call\""], "{text}");
    }
}
