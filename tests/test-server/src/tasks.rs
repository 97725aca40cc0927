//! `--tasks`: the 2026-07-28 tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`), served
//! by rmcp's own `TaskManager` — an implementation of the extension nobody on tern wrote.
//!
//! The tool `job {steps, step_ms, ask}` always runs as a task: the server decides (SEP-2663), so
//! a request that did not declare the extension gets -32021 (missing required client
//! capability). The task walks `steps` steps of `step_ms` each, its status message saying which
//! (`step 2 of 3`); with `ask` it then asks the client to confirm (an `elicitation/create`
//! input request, answered with `tasks/update`), and its result says what the answer was. A
//! `tasks/cancel` ends it as `cancelled` and appends `{"cancelled": "job"}` to `--audit FILE`.

use std::{io::Write, path::Path, time::Duration};

use rmcp::{
    ErrorData,
    model::{
        CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, CreateTaskResult,
        ElicitRequest, ElicitRequestParams, InputRequest, JsonObject,
    },
    task_manager::{TaskExit, TaskManager, TaskOptions},
};
use serde_json::{Value, json};

/// The suggested poll interval: short, so tests are quick, and not the client's default.
pub(crate) const POLL_INTERVAL_MS: u64 = 150;

/// Starts `job` as a task, or refuses when the request did not declare the extension.
pub(crate) fn start_job(
    manager: &TaskManager,
    declared: bool,
    args: &JsonObject,
    audit: Option<&Path>,
) -> Result<CallToolResponse, ErrorData> {
    if !declared {
        return Err(ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        ));
    }
    let int = |k: &str, default: u64| args.get(k).and_then(Value::as_u64).unwrap_or(default);
    let steps = int("steps", 2).max(1);
    let step = Duration::from_millis(int("step_ms", 100));
    let ask = args.get("ask").and_then(Value::as_bool).unwrap_or(false);
    let audit = audit.map(Path::to_path_buf);
    let options = TaskOptions::new()
        .with_poll_interval_ms(POLL_INTERVAL_MS)
        .with_status_message(format!("step 0 of {steps}"));
    let task = manager.spawn(options, move |ctx| {
        Box::pin(async move {
            for i in 1..=steps {
                tokio::select! {
                    () = tokio::time::sleep(step) => {}
                    () = ctx.cancelled() => {
                        if let Some(path) = &audit
                            && let Ok(mut f) =
                                std::fs::OpenOptions::new().create(true).append(true).open(path)
                        {
                            let _ = writeln!(f, "{}", json!({"cancelled": "job"}));
                        }
                        return Err(TaskExit::Cancelled);
                    }
                }
                ctx.set_status_message(format!("step {i} of {steps}"));
            }
            let mut answer = String::from("none asked");
            if ask {
                let form = json!({"mode": "form", "message": "Go ahead with the job?",
                    "requestedSchema": {"type": "object",
                        "properties": {"confirm": {"type": "boolean", "title": "Confirm"}},
                        "required": ["confirm"]}});
                let params: ElicitRequestParams = serde_json::from_value(form)
                    .map_err(|e| TaskExit::Error(ErrorData::internal_error(e.to_string(), None)))?;
                let reply = ctx
                    .request_input(
                        "confirm",
                        InputRequest::Elicitation(ElicitRequest::new(params)),
                    )
                    .await?;
                answer = reply.to_string();
            }
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "job done after {steps} steps; answer: {answer}"
            ))]))
        })
    });
    Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
}
