//! Stage 6, Audit: one JSON line per call in `$TERN_HOME/audit.jsonl`, separate from the run's
//! events so it survives `tern runs` clean-ups and can be shipped on its own.
//!
//! The file is opened append-only (created `0600`, never through a symlink: see [`crate::files`]),
//! each line is written with one `write` call and flushed, so concurrent calls never interleave
//! and a crash loses at most the line in flight.
//! Arguments and results are recorded as sha256 digests, never in clear.

use std::{
    fs::File,
    io::Write,
    path::{Path, PathBuf},
    sync::Mutex,
};

use sha2::{Digest, Sha256};

pub use tern_protocol::{AuditRecord, now_rfc3339 as rfc3339_now};

use crate::redact::Redactor;

/// Why the audit log could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot open the audit log {path}: {source}")]
pub struct AuditOpenError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The open audit log.
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<File>,
}

impl AuditLog {
    /// Opens (creating) `path` for appending.
    pub fn open(path: &Path) -> Result<Self, AuditOpenError> {
        let err = |source| AuditOpenError {
            path: path.to_owned(),
            source,
        };
        let file = tern_protocol::files::open_append(path).map_err(err)?;
        Ok(Self {
            path: path.to_owned(),
            file: Mutex::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record, redacted. A failed write is returned for the caller to report; it never
    /// turns a tool result into an error.
    pub fn append(&self, record: &AuditRecord, redactor: &Redactor) -> std::io::Result<()> {
        let json = serde_json::to_string(record).map_err(std::io::Error::other)?;
        let mut line = redactor.redact(&json);
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("audit log lock poisoned"))?;
        file.write_all(line.as_bytes())?;
        file.flush()
    }
}

impl AuditLog {
    /// Appends one line that is not a tool call's (an elicitation, say: it carries a `kind`),
    /// redacted like every other.
    pub fn append_value(
        &self,
        value: &serde_json::Value,
        redactor: &Redactor,
    ) -> std::io::Result<()> {
        let mut line = redactor.redact(&value.to_string());
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("audit log lock poisoned"))?;
        file.write_all(line.as_bytes())?;
        file.flush()
    }
}

/// Lowercase hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use tern_protocol::Decision;

    use super::*;

    fn record(call_id: &str) -> AuditRecord {
        AuditRecord {
            time: rfc3339_now(),
            run_id: "r".into(),
            session_id: "s".into(),
            call_id: call_id.into(),
            tool: "t__x".into(),
            server: "t".into(),
            args_sha256: sha256_hex(b"{}"),
            decision: Some(Decision::Allow),
            rule: Some("mode:yolo".into()),
            duration_ms: 1,
            result_sha256: sha256_hex(b""),
            result_bytes: 0,
            is_error: false,
            error_type: None,
            truncated: false,
        }
    }

    #[test]
    fn lines_are_appended_never_truncated_and_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/audit.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\"earlier\":true}\n").unwrap();
        let log = AuditLog::open(&path).unwrap();
        let redactor = Redactor::default();
        log.append(&record("c1"), &redactor).unwrap();
        let mut secret = record("c2 sk-ant-api03-canary-secret-value");
        secret.rule = Some("x".into());
        log.append(&secret, &redactor).unwrap();
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "{\"earlier\":true}");
        let first: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(first["call_id"], "c1");
        assert_eq!(first["decision"], "allow");
        assert!(!text.contains("canary-secret"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let log2 = dir.path().join("new.jsonl");
            AuditLog::open(&log2).unwrap();
            assert_eq!(
                std::fs::metadata(&log2).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
    }

    /// A symlink planted at the audit log's path does not redirect the log.
    #[cfg(unix)]
    #[test]
    fn a_symlink_at_the_audit_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere.txt");
        std::fs::write(&elsewhere, "mine\n").unwrap();
        let path = dir.path().join("audit.jsonl");
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let err = AuditLog::open(&path).err().unwrap();
        assert!(err.to_string().contains("symlink"), "{err}");
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "mine\n");
    }
}
