//! What a gateway records with (a leaf: the gateway and the hook runner both take it).

use std::sync::Arc;

use tern_protocol::EventSink;

use crate::{
    audit::{AuditLog, AuditOpenError},
    redact::Redactor,
};

/// Where a gateway records what it does: the run's events, the one redactor every writer of the
/// run shares, and the one audit log. The host builds them before the pool (which learns
/// secrets and audits elicitations through the same two) and hands them to [`Gateway::new`], so
/// nothing is bound late and no second redactor has to be kept in step.
#[derive(Clone)]
pub struct Recorders {
    pub events: EventSink,
    pub redactor: Arc<Redactor>,
    pub audit: Arc<AuditLog>,
}

impl Recorders {
    /// Opens the audit log at `audit_log` (for tests and tools that build a gateway alone).
    pub fn open(
        audit_log: &std::path::Path,
        secrets: impl IntoIterator<Item = crate::redact::Secret>,
        events: EventSink,
    ) -> Result<Self, AuditOpenError> {
        Ok(Self {
            events,
            redactor: Arc::new(Redactor::new(secrets)),
            audit: Arc::new(AuditLog::open(audit_log)?),
        })
    }
}
