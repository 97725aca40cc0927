//! Driving a replay: the engine with the recording's model, the tools for real, each call
//! compared with the recording as the run goes, and the summary just before `run_finished`.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
};

use async_trait::async_trait;
use tern_gateway::{Approval, ApprovalRequest, Approver};
use tern_protocol::{Decision, Envelope, EventSink, RunStatus, Usage};
use tokio_util::sync::CancellationToken;

use super::{Checker, Expected, Observer, Pacing, Recording, ReplayModel, TurnHook};
use crate::{
    agent::{Engine, EngineOptions, Subscriber, TurnOutcome},
    workspace::Workspace,
};

/// Answers what the permission rules leave open ("ask") with the recorded decision for the same
/// call, and never asks anyone.
///
/// The workspace's rules and mode still apply first, so a deny rule of the current config wins
/// over a recorded allow (the replay then diverges, and says so). A call the recording has no
/// decision for is denied. "Always" is never answered: a replay adds no rule to any config.
pub struct ReplayApprover {
    decisions: HashMap<String, (Decision, Option<String>)>,
}

impl ReplayApprover {
    pub fn new(decisions: HashMap<String, (Decision, Option<String>)>) -> Self {
        Self { decisions }
    }
}

#[async_trait]
impl Approver for ReplayApprover {
    async fn ask(&self, request: ApprovalRequest) -> Approval {
        match self.decisions.get(&request.call_id) {
            Some((Decision::Allow, _)) => Approval::Once,
            Some((Decision::Deny, reason)) => Approval::Deny {
                reason: reason.clone(),
            },
            None => Approval::Deny {
                reason: Some(format!(
                    "`{}` needs approval and the recording has no decision for this call; a \
                     replay never asks",
                    request.name
                )),
            },
        }
    }

    fn name(&self) -> &'static str {
        "replay"
    }

    fn asks_someone(&self) -> bool {
        false
    }
}

/// How a replay ended.
#[derive(Debug, Clone)]
pub struct ReplayOutcome {
    /// The replay's own run id (its events are a recording too).
    pub run_id: String,
    /// The last input's outcome, with steps and usage summed over every input.
    pub outcome: TurnOutcome,
    /// Every call and the outcome matched the recording.
    pub identical: bool,
    /// Tokens of every model turn (the recorded usage, served again).
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// Replays the run recorded in `events` in `ws` (whose directory the tools work in).
///
/// `printer` renders the run; `extra` subscribers see every event too (an eval's counters).
/// Cancelling `cancel` stops the replay as Ctrl-C stops a run.
pub async fn replay(
    ws: &Workspace,
    events: &[Envelope],
    pacing: Pacing,
    printer: Box<dyn Subscriber>,
    extra: Vec<Box<dyn Subscriber>>,
    cancel: &CancellationToken,
) -> anyhow::Result<ReplayOutcome> {
    let recording = Recording::from_events(events)?;
    let expected = Expected::from_events(events);
    // The model reports the previous step's comparisons each time it is asked for a turn: the
    // checker is wired once the engine (and so the run id and the event sink) exists.
    let wired: Arc<OnceLock<(EventSink, Arc<Mutex<Checker>>)>> = Arc::new(OnceLock::new());
    let hook: TurnHook = {
        let wired = wired.clone();
        Arc::new(move || {
            if let Some((sink, checker)) = wired.get() {
                let events = checker.lock().map(|mut c| c.drain()).unwrap_or_default();
                for e in events {
                    sink(e);
                }
            }
        })
    };
    let model = Arc::new(ReplayModel::new(&recording, pacing, Some(hook)));
    let approver = Arc::new(ReplayApprover::new(expected.decisions()));
    let options = EngineOptions {
        goal: recording.goal.clone(),
        model: Some(model),
        ..EngineOptions::default()
    };
    let mut engine = Engine::start(
        ws,
        options,
        crate::agent::Outputs::for_workspace(ws, printer)?,
        approver,
    )
    .await?;
    for s in extra {
        engine.subscribe(s);
    }
    let checker = Arc::new(Mutex::new(Checker::new(
        expected,
        &ws.cwd.display().to_string(),
        engine.run_id(),
    )));
    engine.subscribe(Box::new(Observer(checker.clone())));
    let sink = engine.sink();
    let _ = wired.set((sink.clone(), checker.clone()));

    let mut steps = 0;
    let mut usage = Usage::default();
    let mut last = None;
    if let Some(message) = engine.required_failure() {
        engine.report_error(message.clone());
        last = Some(TurnOutcome::failed(message));
    } else {
        for input in &recording.inputs {
            let outcome = engine.submit(input, cancel).await;
            steps += outcome.steps;
            usage.add(&outcome.usage);
            let stop = outcome.status != RunStatus::Success;
            last = Some(outcome);
            if stop {
                break;
            }
        }
    }
    let mut outcome = last.unwrap_or_else(|| TurnOutcome::failed("nothing to replay".into()));
    outcome.steps = steps;
    outcome.usage = usage;
    let (events, identical) = match checker.lock() {
        Ok(mut c) => c.finish(outcome.status, steps),
        Err(_) => (Vec::new(), false),
    };
    for e in events {
        sink(e);
    }
    let run_id = engine.run_id().to_string();
    let cost_usd = engine.cost(&engine.usage());
    let usage = engine.usage();
    engine.finish(outcome.status, Some(&outcome)).await;
    Ok(ReplayOutcome {
        run_id,
        outcome,
        identical,
        usage,
        cost_usd,
    })
}
