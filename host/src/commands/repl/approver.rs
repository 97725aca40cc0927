//! The REPL's approver: asks on the terminal whether a tool call may run.

use std::io::Write;

use async_trait::async_trait;
use tern_gateway::{Approval, ApprovalRequest, Approver};

/// Asks the user, on the terminal, whether a tool call may run.
pub(super) struct TerminalApprover {
    /// Serializes questions when read-only calls run concurrently.
    lock: tokio::sync::Mutex<()>,
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, request: ApprovalRequest) -> Approval {
        let _one_at_a_time = self.lock.lock().await;
        let mut text = format!(
            "\n\x1b[1m{}\x1b[0m wants to run `{}` ({})\n  arguments: {}\n",
            request.server,
            request.tool,
            request.reasons.join("; "),
            request.arguments
        );
        for p in &request.paths {
            text.push_str(&format!("  {}: {}\n", p.arg, p.path.display()));
        }
        if let Some(c) = &request.command {
            text.push_str(&format!("  commands: {}\n", c.commands.join(" | ")));
            if !c.risks.is_empty() {
                text.push_str(&format!("  risks: {}\n", c.risks.join("; ")));
            }
        }
        let always = request.always_rules.first().cloned();
        text.push_str(match &always {
            Some(_) => "Allow? [y]es once / [a]lways / [n]o (optionally: n <reason>) ",
            None => "Allow? [y]es once / [n]o (optionally: n <reason>) ",
        });
        let answer = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr();
            let _ = write!(err, "{text}");
            let _ = err.flush();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await;
        let line = match answer {
            Ok(Ok(line)) => line.trim().to_string(),
            _ => String::new(),
        };
        match line
            .split_once(' ')
            .map_or((line.as_str(), ""), |(a, b)| (a, b))
        {
            ("y" | "yes", _) => Approval::Once,
            ("a" | "always", _) if always.is_some() => Approval::Always,
            (_, reason) => Approval::Deny {
                reason: (!reason.trim().is_empty()).then(|| reason.trim().to_string()),
            },
        }
    }
}

impl TerminalApprover {
    pub(super) fn new() -> Self {
        Self {
            lock: tokio::sync::Mutex::new(()),
        }
    }
}
