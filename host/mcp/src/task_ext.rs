//! Calls a server turns into tasks: the 2026-07-28 tasks extension (SEP-2663,
//! `io.modelcontextprotocol/tasks`).
//!
//! tern declares the extension in its capabilities (rmcp sends them in every request's `_meta`),
//! so a server may answer `tools/call` with a `CreateTaskResult` (`resultType: "task"`) instead
//! of the result — the server decides, typically for long work. tern then polls `tasks/get`
//! at the server's `pollIntervalMs` (bounded, and re-read on every poll since it may change):
//! - `working`: the status message goes to the caller as progress, marked as a task's (the
//!   engine shows it as the call's task state);
//! - `input_required`: each `inputRequests` entry not answered yet is answered like any
//!   elicitation (the same answers the handler gives) and sent back with `tasks/update`;
//! - `completed`: the inlined `result` is the call's result; `failed`: its inlined JSON-RPC
//!   `error` is the call's error; `cancelled` (by the server): an error saying so.
//!
//! A call the caller cancels (Ctrl-C) or that runs out of time sends `tasks/cancel` (best effort,
//! bounded) before it returns. The person's time answering questions moves the deadline, as it
//! does for a plain call.
//!
//! The 2025-11-25 shape (SEP-1686: the client asks for a task, `tasks/result`) is in `task.rs`.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use rmcp::{
    RoleClient,
    model::{
        CancelTaskParams, ClientRequest, CreateTaskResult, GetTaskParams, InputRequests, Request,
        ServerResult, TaskPayload, TaskStatus, UpdateTaskParams,
    },
    service::Peer,
};

use crate::{
    call::fulfil,
    error::CallError,
    event::{Progress, TaskProgress},
    output::ToolOutput,
    pool::{CallOptions, ServerPool},
    slot::Slot,
};

/// Bounds on the poll interval a server suggests (a server saying 0 ms must not make tern spin,
/// one saying an hour must not make a call look hung).
const MIN_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(5);
/// When the server suggests nothing (SEP-2663 makes `pollIntervalMs` optional).
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// How long `tasks/cancel` may take once the call is over anyway.
const CANCEL_WAIT: Duration = Duration::from_secs(5);
/// Rounds of questions one task may ask before tern gives up on it.
const MAX_INPUT_ROUNDS: usize = 16;

fn poll_interval(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL, Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

fn status_name(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "input_required",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
        _ => "unknown",
    }
}

/// Tells the caller the task's state when it changed since `last`.
fn report(
    opts: &CallOptions,
    last: &mut Option<TaskProgress>,
    polls: u32,
    task_id: &str,
    status: TaskStatus,
    message: Option<&str>,
) {
    let now = TaskProgress {
        task_id: task_id.to_string(),
        status: status_name(status).to_string(),
        message: message.map(crate::text::clean),
    };
    if last.as_ref() == Some(&now) {
        return;
    }
    if let Some(tx) = &opts.progress {
        let words = match &now.message {
            Some(m) => format!("task {}: {m}", now.status),
            None => format!("task {}", now.status),
        };
        let _ = tx.send(Progress {
            progress: f64::from(polls),
            terminal_id: None,
            total: None,
            message: Some(words),
            task: Some(now.clone()),
            tail: None,
        });
    }
    *last = Some(now);
}

impl ServerPool {
    /// Follows the task the server made of a call until it ends; see the module docs.
    pub(crate) async fn follow_task(
        &self,
        slot: &Slot,
        peer: &Peer<RoleClient>,
        created: CreateTaskResult,
        deadline: Instant,
        opts: &CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let task_id = created.task.task_id.clone();
        let mut poll = poll_interval(created.task.poll_interval_ms);
        let mut last = None;
        let mut polls = 0u32;
        report(
            opts,
            &mut last,
            polls,
            &task_id,
            created.task.status,
            created.task.status_message.as_deref(),
        );
        // The polls themselves report nothing: progress comes from the task's status.
        let quiet = CallOptions {
            progress: None,
            ..opts.clone()
        };
        let person_at_start = slot.answers.person.spent();
        let mut answered: HashSet<String> = HashSet::new();
        let mut input_rounds = 0usize;
        let mut wait = poll;
        loop {
            let deadline = deadline + slot.answers.person.spent().saturating_sub(person_at_start);
            let ended = tokio::select! {
                () = tokio::time::sleep(wait) => None,
                () = opts.cancel.cancelled() => Some(CallError::Cancelled),
                () = tokio::time::sleep_until(deadline.into()) => Some(CallError::Timeout {
                    secs: opts.timeout.as_secs_f64(),
                }),
            };
            if let Some(e) = ended {
                self.cancel_task_ext(slot, peer, &task_id, opts).await;
                return Err(e);
            }
            wait = poll;
            let get = ClientRequest::GetTaskRequest(Request::new(GetTaskParams::new(&task_id)));
            let got = match self.round(slot, peer, get, deadline, &quiet).await {
                Ok(ServerResult::GetTaskResult(got)) => got,
                Ok(other) => {
                    self.cancel_task_ext(slot, peer, &task_id, opts).await;
                    return Err(CallError::BadReply(format!(
                        "tasks/get answered with something other than a task: {}",
                        crate::error::clean(&serde_json::to_string(&other).unwrap_or_default())
                    )));
                }
                Err(e @ (CallError::Cancelled | CallError::Timeout { .. })) => {
                    self.cancel_task_ext(slot, peer, &task_id, opts).await;
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
            polls += 1;
            let detailed = got.task;
            if let Some(ms) = detailed.task.poll_interval_ms {
                poll = poll_interval(Some(ms));
            }
            report(
                opts,
                &mut last,
                polls,
                &task_id,
                detailed.status(),
                detailed.task.status_message.as_deref(),
            );
            match detailed.payload {
                TaskPayload::Completed { result } => {
                    let value = serde_json::Value::Object(result);
                    return serde_json::from_value::<rmcp::model::CallToolResult>(value.clone())
                        .map(Into::into)
                        .map_err(|e| {
                            CallError::BadReply(format!(
                                "the task's result is not a tool result ({e}): {}",
                                crate::error::clean(&value.to_string())
                            ))
                        });
                }
                TaskPayload::Failed { error } => {
                    let code = error
                        .get("code")
                        .and_then(serde_json::Value::as_i64)
                        .and_then(|c| i32::try_from(c).ok())
                        .unwrap_or(rmcp::model::ErrorCode::INTERNAL_ERROR.0);
                    let message = error
                        .get("message")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("the task failed without saying why");
                    return Err(CallError::Server {
                        code,
                        message: format!("task failed: {}", crate::text::clean(message)),
                    });
                }
                TaskPayload::Cancelled => {
                    return Err(CallError::BadReply(
                        "the server cancelled the task before it finished".to_string(),
                    ));
                }
                TaskPayload::InputRequired { input_requests } => {
                    let fresh: InputRequests = input_requests
                        .into_iter()
                        .filter(|(key, _)| !answered.contains(key))
                        .collect();
                    if fresh.is_empty() {
                        continue;
                    }
                    input_rounds += 1;
                    if input_rounds > MAX_INPUT_ROUNDS {
                        self.cancel_task_ext(slot, peer, &task_id, opts).await;
                        return Err(CallError::BadReply(format!(
                            "the task kept asking for input ({MAX_INPUT_ROUNDS} rounds); \
                             cancelled it"
                        )));
                    }
                    answered.extend(fresh.keys().cloned());
                    let responses = match fulfil(&slot.answers, fresh).await {
                        Ok(r) => r,
                        Err(e) => {
                            self.cancel_task_ext(slot, peer, &task_id, opts).await;
                            return Err(e);
                        }
                    };
                    let deadline =
                        deadline + slot.answers.person.spent().saturating_sub(person_at_start);
                    let update = ClientRequest::UpdateTaskRequest(Request::new(
                        UpdateTaskParams::new(&task_id, responses),
                    ));
                    match self.round(slot, peer, update, deadline, &quiet).await {
                        Ok(_) => {}
                        Err(e @ (CallError::Cancelled | CallError::Timeout { .. })) => {
                            self.cancel_task_ext(slot, peer, &task_id, opts).await;
                            return Err(e);
                        }
                        Err(e) => return Err(e),
                    }
                    // The answer usually unblocks the task at once: look again soon.
                    wait = MIN_POLL;
                }
                _ => {}
            }
        }
    }

    /// `tasks/cancel`, best effort and bounded: the call is over either way.
    async fn cancel_task_ext(
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
        let cancel = ClientRequest::CancelTaskRequest(Request::new(CancelTaskParams::new(task_id)));
        let _ = self
            .round(slot, peer, cancel, Instant::now() + CANCEL_WAIT, &quick)
            .await;
    }
}
