//! Asking the approver, and keeping an "always" answer: in this run's rules at once, and in the
//! user's `config.toml` or the project's `.tern/config.toml` (via `tern_config::append_rule`,
//! comments kept) for the next runs.

use std::path::Path;

use tern_config::{RuleList, TrustStatus, TrustStore, append_rule};

use tern_protocol::Event;

use crate::{
    approver::{Approval, ApprovalRequest, ParsedCommand, escape_control},
    gateway::{Gateway, Pending},
    permission::{always_rules, path_args},
    rules::Rule,
};

/// The rule name of an "always" answer in the audit (from an approver named `user`).
pub const USER_ALWAYS: &str = "user:always";
/// The rule name of a "once" answer in the audit (from an approver named `user`).
pub const USER_ONCE: &str = "user:once";

impl Gateway {
    /// Asks the approver. `Ok(rule)` to run, `Err((rule, reason))` not to; the rule `cancelled`
    /// means Ctrl-C ended the wait.
    pub(crate) async fn ask(
        &self,
        p: &Pending<'_>,
        ctx: &crate::call::CallContext,
        asked_by: &str,
        reasons: Vec<String>,
    ) -> Result<String, (String, String)> {
        let facts = p.facts(self);
        // An ask *rule* outranks every allow rule, so "always" could not change the next answer.
        let from_ask_rule = !asked_by.starts_with("mode:");
        let always = if from_ask_rule {
            Vec::new()
        } else {
            let session = self.session.read().map(|s| s.clone()).unwrap_or_default();
            always_rules(&facts, &self.rules, &session)
        };
        let request = self.request(p, reasons, always.clone());
        let answer = tokio::select! {
            answer = self.approver.ask(request) => answer,
            () = ctx.cancel.cancelled() => {
                return Err(("cancelled".into(), "cancelled while waiting for approval".into()));
            }
        };
        // The answerer's name prefixes the rule (`user:once`, `acp:always`), so the audit says
        // who allowed it: the person at the terminal or the editor over ACP.
        let who = self.approver.name();
        match answer {
            Approval::Once => Ok(format!("{who}:once")),
            Approval::Always | Approval::AlwaysInProject if always.is_empty() => {
                (self.events)(Event::Notice {
                    message: format!(
                        "no rule can allow this call of `{}`, so it was allowed once only",
                        p.entry.name
                    ),
                });
                Ok(format!("{who}:once"))
            }
            Approval::Always => {
                self.remember(&always, Where::User);
                Ok(format!("{who}:always"))
            }
            Approval::AlwaysInProject => {
                self.remember(&always, Where::Project);
                Ok(format!("{who}:always"))
            }
            Approval::Deny { reason } => Err((
                format!("{}:deny", self.approver.name()),
                reason.unwrap_or_else(|| "the user said no".into()),
            )),
        }
    }

    fn request(
        &self,
        p: &Pending<'_>,
        reasons: Vec<String>,
        always_rules: Vec<String>,
    ) -> ApprovalRequest {
        let r = &self.redactor;
        let pretty =
            serde_json::to_string_pretty(&r.redact_json(&p.call.arguments)).unwrap_or_default();
        let arguments = pretty
            .lines()
            .map(escape_control)
            .collect::<Vec<_>>()
            .join("\n");
        let command = p.shell.as_ref().map(|a| ParsedCommand {
            line: p
                .policy
                .command_arg
                .as_deref()
                .and_then(|arg| p.args.get(arg))
                .and_then(|v| v.as_str())
                .map(|s| escape_control(&r.redact(s)))
                .unwrap_or_default(),
            commands: a
                .commands
                .iter()
                .map(|c| escape_control(&r.redact(&c.text)))
                .collect(),
            risks: a
                .risks
                .iter()
                .map(|x| escape_control(&r.redact(x)))
                .collect(),
        });
        ApprovalRequest {
            call_id: p.call.id.clone(),
            server: p.entry.server.clone(),
            tool: p.entry.tool.clone(),
            name: p.entry.name.clone(),
            arguments,
            paths: path_args(&p.facts(self)),
            command,
            reasons: reasons
                .iter()
                .map(|x| escape_control(&r.redact(x)))
                .collect(),
            always_rules: always_rules.iter().map(|x| escape_control(x)).collect(),
        }
    }

    /// Adds the rules to this run and appends them to the user or the project config.
    fn remember(&self, rules: &[String], to: Where) {
        if let Ok(mut session) = self.session.write() {
            for text in rules {
                if let Ok(rule) = Rule::compile(
                    text,
                    RuleList::Allow,
                    USER_ALWAYS.into(),
                    &self.settings.scope,
                ) {
                    session.push(rule);
                }
            }
        }
        let (path, saved) = match (to, &self.settings.project_config) {
            (Where::Project, Some(project)) => (
                project.config.clone(),
                save_project_rules(project, rules).map(|trusted| {
                    (!trusted).then(|| {
                        format!(
                            "saved to {}, which is not trusted: the rule applies to later runs \
                             once you run `tern trust`",
                            project.config.display()
                        )
                    })
                }),
            ),
            _ => (
                self.settings.user_config.clone(),
                save_rules(&self.settings.user_config, rules).map(|()| None),
            ),
        };
        let message = match saved {
            Ok(None) => return,
            Ok(Some(note)) => note,
            Err(e) => format!(
                "allowed for this run, but could not save to {}: {e}",
                path.display()
            ),
        };
        (self.events)(Event::Notice { message });
    }
}

/// Which config an "always" rule is saved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    User,
    Project,
}

/// Appends the rules to the project's config. The project's trust is kept when it was trusted
/// before (or the file is new, so everything in it is what the person just allowed): the trust
/// is then renewed for the new contents, else the next run would refuse the file as changed.
/// A file that was not trusted stays untrusted. Returns whether the file is trusted now.
fn save_project_rules(
    project: &crate::settings::ProjectRules,
    rules: &[String],
) -> Result<bool, String> {
    let store = TrustStore::new(project.trust_file.clone());
    let trusted_before = match std::fs::read(&project.config) {
        Ok(bytes) => matches!(
            store.status(&project.project_dir, &bytes),
            Ok(TrustStatus::Trusted)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(e.to_string()),
    };
    save_rules(&project.config, rules)?;
    if trusted_before {
        store
            .trust(&project.project_dir)
            .map_err(|e| format!("saved, but could not renew the project's trust: {e}"))?;
    }
    Ok(trusted_before)
}

/// Appends allow rules to a config file (created when missing), atomically.
pub fn save_rules(path: &Path, rules: &[String]) -> Result<(), String> {
    let mut text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e.to_string()),
    };
    for rule in rules {
        text = append_rule(&text, RuleList::Allow, rule).map_err(|e| e.to_string())?;
    }
    let dir = path.parent().ok_or("the config path has no directory")?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let tmp = dir.join(format!(".config.toml.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, path).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_appended_keeping_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home/config.toml");
        save_rules(&path, &["shell__run(cargo build)".into()]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("shell__run(cargo build)"), "{text}");
        std::fs::write(&path, "# mine\n[permissions]\nallow = [\"a__b\"] # keep\n").unwrap();
        save_rules(&path, &["c__d".into(), "e__f(path: \"/x y\")".into()]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# mine\n"), "{text}");
        assert!(text.contains("# keep"), "{text}");
        let table: toml_edit::DocumentMut = text.parse().unwrap();
        let allow: Vec<&str> = table["permissions"]["allow"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(allow, ["a__b", "c__d", "e__f(path: \"/x y\")"]);
    }
}
