//! Tools that run as tasks (the 2025-11-25 tasks extension, SEP-1686): a tool listed with
//! `execution.taskSupport: "required"` refuses a plain `tools/call` with -32601, so tern calls
//! it with a `task` parameter, which creates a task and answers at once; `tasks/result` then
//! waits for the outcome (the server's questions — elicitation — arrive meanwhile and are
//! answered as usual), while `tasks/get` is polled for the status message, shown as progress. A
//! cancelled or timed-out call cancels the task (`tasks/cancel`).
//!
//! rmcp knows only the 2026-07-28 tasks shape, so these requests go out as custom requests.

use std::time::{Duration, Instant};

use rmcp::{
    RoleClient,
    model::{CallToolRequestParams, ClientRequest, CustomRequest, ServerResult},
    service::Peer,
};
use serde_json::{Value, json};

use crate::{
    error::CallError,
    event::Progress,
    output::ToolOutput,
    pool::{CallOptions, ServerPool},
    slot::Slot,
};

/// How long the server keeps a finished task for us (SEP-1686 `ttl`, milliseconds).
const TASK_TTL_MS: u64 = 5 * 60 * 1000;
/// Bounds on the poll interval the server suggests.
const MIN_POLL: Duration = Duration::from_millis(200);
const MAX_POLL: Duration = Duration::from_secs(5);

impl ServerPool {
    /// Runs `params` as a task; see the module docs.
    pub(crate) async fn call_as_task(
        &self,
        slot: &Slot,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        deadline: Instant,
        opts: &CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let mut request = serde_json::to_value(&params).map_err(bad)?;
        request["task"] = json!({ "ttl": TASK_TTL_MS });
        let created = self
            .round(slot, peer, custom("tools/call", request), deadline, opts)
            .await?;
        let created = serde_json::to_value(&created).map_err(bad)?;
        let task = if created["task"].is_object() {
            &created["task"]
        } else {
            &created
        };
        let Some(task_id) = task["taskId"].as_str().map(str::to_string) else {
            return Err(CallError::BadReply(format!(
                "the server answered a task-augmented call without a task: {}",
                crate::error::clean(&created.to_string())
            )));
        };
        let poll = Duration::from_millis(task["pollInterval"].as_u64().unwrap_or(1000))
            .clamp(MIN_POLL, MAX_POLL);
        let outcome = tokio::select! {
            r = self.round(slot, peer, custom("tasks/result", json!({"taskId": task_id})), deadline, opts) => r,
            never = self.report_status(slot, peer, &task_id, poll, deadline, opts) => match never {},
        };
        match outcome {
            Ok(ServerResult::CallToolResult(result)) => Ok(result.into()),
            Ok(other) => {
                let value = serde_json::to_value(&other).map_err(bad)?;
                serde_json::from_value::<rmcp::model::CallToolResult>(value.clone())
                    .map(Into::into)
                    .map_err(|_| {
                        CallError::BadReply(format!(
                            "tasks/result answered with something other than a tool result: {}",
                            crate::error::clean(&value.to_string())
                        ))
                    })
            }
            Err(e) => {
                if matches!(e, CallError::Cancelled | CallError::Timeout { .. }) {
                    self.cancel_task(slot, peer, &task_id, opts).await;
                }
                Err(e)
            }
        }
    }

    /// Polls `tasks/get` and passes each new status message on as progress. Never returns (the
    /// caller races it against the result); a failed poll just ends the reporting.
    async fn report_status(
        &self,
        slot: &Slot,
        peer: &Peer<RoleClient>,
        task_id: &str,
        poll: Duration,
        deadline: Instant,
        opts: &CallOptions,
    ) -> std::convert::Infallible {
        let quiet = CallOptions {
            progress: None,
            ..opts.clone()
        };
        let mut last = String::new();
        let mut polls = 0u32;
        loop {
            tokio::time::sleep(poll).await;
            let Ok(status) = self
                .round(
                    slot,
                    peer,
                    custom("tasks/get", json!({ "taskId": task_id })),
                    deadline,
                    &quiet,
                )
                .await
            else {
                break;
            };
            let status = serde_json::to_value(&status).unwrap_or(Value::Null);
            let (state, note) = (status["status"].as_str(), status["statusMessage"].as_str());
            let message = match (state, note) {
                (Some(s), Some(m)) => format!("{s}: {m}"),
                (Some(s), None) => s.to_string(),
                _ => continue,
            };
            polls += 1;
            if message != last
                && let Some(tx) = &opts.progress
            {
                let _ = tx.send(Progress {
                    progress: f64::from(polls),
                    terminal_id: None,
                    total: None,
                    message: Some(message.clone()),
                    task: Some(crate::event::TaskProgress {
                        task_id: task_id.to_string(),
                        status: state.unwrap_or_default().to_string(),
                        message: note.map(str::to_string),
                    }),
                    tail: None,
                });
                last = message;
            }
        }
        std::future::pending().await
    }

    async fn cancel_task(
        &self,
        slot: &Slot,
        peer: &Peer<RoleClient>,
        task_id: &str,
        opts: &CallOptions,
    ) {
        let quick = CallOptions {
            progress: None,
            cancel: tokio_util::sync::CancellationToken::new(),
            ..opts.clone()
        };
        let _ = self
            .round(
                slot,
                peer,
                custom("tasks/cancel", json!({ "taskId": task_id })),
                Instant::now() + Duration::from_secs(5),
                &quick,
            )
            .await;
    }
}

fn custom(method: &str, params: Value) -> ClientRequest {
    ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)))
}

fn bad(e: serde_json::Error) -> CallError {
    CallError::BadReply(e.to_string())
}
