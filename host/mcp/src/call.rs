//! One tool call, start to finish: checks that the tool is still offered, sends `tools/call`,
//! answers the 2026-07-28 multi-round input requests (SEP-2322), follows a task the server made
//! of the call (SEP-2663, `task_ext.rs`), and turns every way it can
//! end into a [`ToolOutput`] or a precise [`CallError`] — bounded by its timeout, its
//! cancellation token, and the connection's life.

use std::time::{Duration, Instant};

use rmcp::{
    RoleClient,
    model::{
        CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
        ClientNotification, ClientRequest, ElicitRequestParams, InputRequest, InputRequests,
        InputResponses, MetaObject, Request, RequestMetaObject, ServerResult,
    },
    service::{Peer, PeerRequestOptions, ServiceError},
};
use tokio::sync::mpsc::UnboundedSender;

use crate::{
    client::{Answers, ProgressRoutes},
    connect::Era,
    error::{CallError, describe_service_error},
    event::Progress,
    output::ToolOutput,
    pool::{CallOptions, ServerPool},
    slot::{REPORT_TAIL, ServerState, Slot},
    transport::LocalFailure,
};

/// JSON-RPC "method not found": what a task-only tool answers a plain `tools/call`.
const METHOD_NOT_FOUND: i32 = -32601;

/// Whether an error result is the TypeScript SDK's refusal of a plain call to a task-only tool
/// ("Tool X requires task augmentation (taskSupport: 'required')"), which the spec sends as a
/// -32601 error instead.
fn refuses_plain_call(text: &str) -> bool {
    text.contains("-32601") && text.contains("task augmentation")
}

/// Input-request rounds one call may take before tern gives up on it.
const MAX_INPUT_ROUNDS: usize = 8;

impl ServerPool {
    /// Calls `tool` on `server`. Every failure is a [`CallError`], never a panic or a hang:
    /// the call is bounded by its timeout, by `opts.cancel`, and by the server's death.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        opts: CallOptions,
    ) -> Result<ToolOutput, CallError> {
        let slot = self
            .slots
            .get(server)
            .ok_or_else(|| CallError::UnknownServer(server.to_string()))?;
        // A server still starting (its tools offered from the cache) is waited for, within the
        // call's own timeout.
        if matches!(slot.live.borrow().state, ServerState::Starting) {
            let mut rx = slot.live.subscribe();
            let _ = tokio::time::timeout(
                opts.timeout,
                rx.wait_for(|l| !matches!(l.state, ServerState::Starting)),
            )
            .await;
        }
        // A server that just said its tools changed decides, once re-listed, whether this
        // tool still exists: a removed tool must not be callable (issue 15, F14).
        if slot.live.borrow().changing {
            slot.tools_settled().await;
        }
        let (peer, state, offered, tasks_era, as_task) = {
            let live = slot.live.borrow();
            let tasks_era = live.era == Some(Era::Initialize);
            (
                live.peer.clone(),
                live.state.label(),
                live.tools.iter().any(|t| t.name == tool),
                tasks_era,
                tasks_era && live.task_support.required(tool),
            )
        };
        let peer = peer.ok_or_else(|| CallError::NotReady {
            server: server.to_string(),
            state: state.to_string(),
        })?;
        if !offered {
            return Err(CallError::ToolGone {
                server: server.to_string(),
                tool: tool.to_string(),
            });
        }
        let deadline = Instant::now() + opts.timeout;
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        if let Some(meta) = opts.meta.clone() {
            params.meta = Some(RequestMetaObject(MetaObject(meta)));
        }
        if as_task {
            return self
                .call_as_task(slot, &peer, params, deadline, &opts)
                .await;
        }
        let mut state_only_rounds = 0u32;
        let mut urls_visited = false;
        // The person's time between rounds (answering input requests, visiting URLs) moves
        // the deadline; time within a round is handled by `round_checked`.
        let person_at_start = slot.answers.person.spent();
        for round in 0..MAX_INPUT_ROUNDS {
            let request = ClientRequest::CallToolRequest(Request::new(params.clone()));
            let deadline = deadline + slot.answers.person.spent().saturating_sub(person_at_start);
            let outcome = match self
                .round_checked(slot, &peer, request, deadline, &opts)
                .await
            {
                // A tool listed as task-only refuses a plain call with -32601 (SEP-1686). The
                // listing said so, but only the stdio transport reads that field off the wire
                // (rmcp's `Tool` drops it); over streamable HTTP the refusal is how tern learns
                // it: remembered for the connection, and this call goes again as a task.
                Err(CallError::Server { code, .. })
                    if code == METHOD_NOT_FOUND && round == 0 && tasks_era =>
                {
                    slot.live.borrow().task_support.note(tool, "required");
                    return self
                        .call_as_task(slot, &peer, params, deadline, &opts)
                        .await;
                }
                other => other?,
            };
            let result = match outcome {
                Outcome::Result(result) => result,
                Outcome::VisitUrls(urls) => {
                    // Once: a server that asks again after the person went is not helped by
                    // going again.
                    if urls_visited {
                        return Err(url_error(&urls, "still required after they were visited"));
                    }
                    urls_visited = true;
                    visit(&slot.answers, &urls).await?;
                    continue;
                }
            };
            match result {
                ServerResult::CallToolResult(result) => {
                    let output = ToolOutput::from(result);
                    // The TypeScript SDK sends the same refusal as an error *result*.
                    if round == 0
                        && tasks_era
                        && output.is_error
                        && refuses_plain_call(&output.text)
                    {
                        slot.live.borrow().task_support.note(tool, "required");
                        return self
                            .call_as_task(slot, &peer, params, deadline, &opts)
                            .await;
                    }
                    return Ok(output);
                }
                ServerResult::InputRequiredResult(input) => {
                    let requests = input.input_requests.unwrap_or_default();
                    if requests.is_empty() {
                        if input.request_state.is_none() {
                            return Err(CallError::BadReply(
                                "the server asked for input but sent neither requests nor state"
                                    .to_string(),
                            ));
                        }
                        // State only: the server is working; ask again after a short pause.
                        let pause = 50u64 << state_only_rounds.min(2);
                        tokio::time::sleep(Duration::from_millis(pause)).await;
                        state_only_rounds += 1;
                    } else {
                        state_only_rounds = 0;
                    }
                    let responses = fulfil(&slot.answers, requests).await?;
                    params.input_responses = (!responses.is_empty()).then_some(responses);
                    params.request_state = input.request_state;
                }
                // The server made a task of the call (2026-07-28 tasks extension, which tern
                // declares): followed to its end in `task_ext.rs`.
                ServerResult::CreateTaskResult(created) => {
                    return self
                        .follow_task(slot, &peer, created, deadline, &opts)
                        .await;
                }
                ServerResult::EmptyResult(_) => {
                    // A result without `content` (allowed to be empty) parses as the empty result.
                    return Ok(rmcp::model::CallToolResult::success(Vec::new()).into());
                }
                _ => {
                    return Err(CallError::BadReply(
                        "the server answered tools/call with another result type".to_string(),
                    ));
                }
            }
        }
        Err(CallError::BadReply(format!(
            "the server kept asking for input ({MAX_INPUT_ROUNDS} rounds); giving up"
        )))
    }

    /// One request of a call, as [`Self::round_checked`], a URL elicitation it requires
    /// being an error.
    pub(crate) async fn round(
        &self,
        slot: &Slot,
        peer: &Peer<RoleClient>,
        request: ClientRequest,
        deadline: Instant,
        opts: &CallOptions,
    ) -> Result<ServerResult, CallError> {
        match self
            .round_checked(slot, peer, request, deadline, opts)
            .await?
        {
            Outcome::Result(result) => Ok(result),
            Outcome::VisitUrls(urls) => Err(url_error(&urls, "not visited")),
        }
    }

    /// One request of a call: sent, awaited within what is left of the deadline, cancelled when
    /// the caller cancels. A `URLElicitationRequiredError` (-32042) comes back as the URLs to
    /// visit.
    async fn round_checked(
        &self,
        slot: &Slot,
        peer: &Peer<RoleClient>,
        request: ClientRequest,
        deadline: Instant,
        opts: &CallOptions,
    ) -> Result<Outcome, CallError> {
        let timeout = CallError::Timeout {
            secs: opts.timeout.as_secs_f64(),
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(timeout);
        }
        // The deadline is kept here, not by rmcp: a question the server asks the person during
        // the request (2025-11-25 `elicitation/create`) moves it by the person's time.
        let person_at_start = slot.answers.person.spent();
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.map_error(slot, e))?;
        let _route = opts
            .progress
            .as_ref()
            .map(|tx| RouteGuard::new(&slot.progress, handle.progress_token.clone(), tx.clone()));
        let id = handle.id.clone();
        let response = tokio::select! {
            r = handle.await_response() => r,
            _ = opts.cancel.cancelled() => {
                cancel(peer, id, "cancelled by the user").await;
                return Err(CallError::Cancelled);
            }
            () = slot.answers.person.deadline(tokio::time::Instant::from_std(deadline), person_at_start) => {
                cancel(peer, id, "timed out").await;
                return Err(timeout);
            }
        };
        match response {
            Ok(result) => Ok(Outcome::Result(result)),
            Err(ServiceError::McpError(e))
                if e.code.0 == URL_ELICITATION_REQUIRED && !required_urls(&e).is_empty() =>
            {
                Ok(Outcome::VisitUrls(required_urls(&e)))
            }
            Err(ServiceError::Timeout { .. }) => Err(timeout),
            Err(e) => Err(self.map_error_settled(slot, e).await),
        }
    }

    pub(crate) fn map_error(&self, slot: &Slot, e: ServiceError) -> CallError {
        match e {
            ServiceError::Timeout { timeout } => CallError::Timeout {
                secs: timeout.as_secs_f64(),
            },
            ServiceError::McpError(err) => match LocalFailure::of(&err) {
                Some(local) => CallError::BadReply(local.to_string()),
                None => CallError::Server {
                    code: err.code.0,
                    message: crate::text::clean(&err.message),
                },
            },
            ServiceError::TransportClosed if !self.shutdown.is_cancelled() => {
                if slot.spec.transport.kind() == "stdio" {
                    CallError::ServerCrashed {
                        server: slot.spec.name.clone(),
                        stderr_tail: slot.stderr.last(REPORT_TAIL),
                    }
                } else {
                    CallError::ConnectionLost {
                        server: slot.spec.name.clone(),
                        reason: "the connection closed".to_string(),
                    }
                }
            }
            ServiceError::Cancelled { .. } => CallError::Cancelled,
            // Over HTTP every request is a connection of its own: failing to send one means
            // the server is not there (any more).
            e @ ServiceError::TransportSend(_) if slot.spec.transport.kind() == "http" => {
                CallError::ConnectionLost {
                    server: slot.spec.name.clone(),
                    reason: describe_service_error(&e),
                }
            }
            other => CallError::Transport(describe_service_error(&other)),
        }
    }

    /// Like `map_error`, but a crash report waits (briefly) for the dying
    /// server's last stderr lines.
    async fn map_error_settled(&self, slot: &Slot, e: ServiceError) -> CallError {
        if matches!(e, ServiceError::TransportClosed) {
            slot.stderr.settle(Duration::from_millis(500)).await;
        }
        self.map_error(slot, e)
    }
}

/// The JSON-RPC error code of `URLElicitationRequiredError` (2025-11-25): the request needs the
/// person to visit pages first (`data.elicitations`, URL mode).
const URL_ELICITATION_REQUIRED: i32 = -32042;

/// How one request of a call ended. (The result is the common case and moved on at once: no
/// box for it.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum Outcome {
    Result(ServerResult),
    /// The server requires these URL elicitations before it can answer.
    VisitUrls(Vec<ElicitRequestParams>),
}

/// The URL elicitations of a -32042 error.
fn required_urls(e: &rmcp::model::ErrorData) -> Vec<ElicitRequestParams> {
    e.data
        .as_ref()
        .and_then(|d| d.get("elicitations"))
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .filter_map(|v| serde_json::from_value::<ElicitRequestParams>(v.clone()).ok())
        .filter(|p| matches!(p, ElicitRequestParams::UrlElicitationParams { .. }))
        .collect()
}

/// Puts each required URL before the person (the same answers every elicitation gets); the
/// call is retried only when every one was accepted.
async fn visit(answers: &Answers, urls: &[ElicitRequestParams]) -> Result<(), CallError> {
    for url in urls {
        let answer = answers.elicit(url).await;
        if answer.action != rmcp::model::ElicitationAction::Accept {
            return Err(url_error(urls, "declined"));
        }
    }
    Ok(())
}

fn url_error(urls: &[ElicitRequestParams], why: &str) -> CallError {
    let listed: Vec<&str> = urls
        .iter()
        .filter_map(|p| match p {
            ElicitRequestParams::UrlElicitationParams { url, .. } => Some(url.as_str()),
            _ => None,
        })
        .collect();
    CallError::Server {
        code: URL_ELICITATION_REQUIRED,
        message: format!(
            "the server needs the user to open {} first ({why})",
            listed.join(", ")
        ),
    }
}

/// Sends `notifications/cancelled` for request `id` (best effort).
async fn cancel(peer: &Peer<RoleClient>, id: rmcp::model::RequestId, reason: &str) {
    let note = CancelledNotification::new(CancelledNotificationParam::new(
        Some(id),
        Some(reason.to_string()),
    ));
    let _ = peer
        .send_notification(ClientNotification::CancelledNotification(note))
        .await;
}

/// The answers to a round of 2026-07-28 input requests — the same answers the 2025-11-25
/// server→client requests get from the handler.
pub(crate) async fn fulfil(
    answers: &Answers,
    requests: InputRequests,
) -> Result<InputResponses, CallError> {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let value = match request {
            InputRequest::Elicitation(r) => serde_json::to_value(answers.elicit(&r.params).await),
            #[allow(deprecated)]
            InputRequest::ListRoots(_) => serde_json::to_value(
                answers
                    .roots()
                    .unwrap_or_else(|| rmcp::model::ListRootsResult::new(Vec::new())),
            ),
            InputRequest::CreateMessage(_) => {
                return Err(unsupported_input("to sample the model"));
            }
            _ => return Err(unsupported_input("for a kind of input it does not know")),
        };
        let value = value.map_err(|e| CallError::Transport(e.to_string()))?;
        responses.insert(key, value);
    }
    Ok(responses)
}

fn unsupported_input(what: &str) -> CallError {
    CallError::Server {
        code: rmcp::model::ErrorCode::METHOD_NOT_FOUND.0,
        message: format!("the server asked tern {what}, which tern does not offer"),
    }
}

/// Routes progress for one request while it runs; unregisters on drop.
struct RouteGuard {
    routes: ProgressRoutes,
    token: rmcp::model::ProgressToken,
}

impl RouteGuard {
    fn new(
        routes: &ProgressRoutes,
        token: rmcp::model::ProgressToken,
        tx: UnboundedSender<Progress>,
    ) -> Self {
        if let Ok(mut r) = routes.lock() {
            r.insert(token.clone(), tx);
        }
        Self {
            routes: routes.clone(),
            token,
        }
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        if let Ok(mut r) = self.routes.lock() {
            r.remove(&self.token);
        }
    }
}
