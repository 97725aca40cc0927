//! Comparing a replay with its recording: each re-executed tool call against the recorded one,
//! and the run's outcome against the recorded outcome.
//!
//! What counts: whether the call failed, why (its error kind), the text the model was given, the
//! diff, and the permission decision. What does not: times, durations, ids, and the paths of the
//! two workspaces (the replay runs somewhere else), which [`Normalizer`] masks on both sides.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
};

use tern_protocol::{Decision, Envelope, ErrorKind, Event, ReplayVerdict, RunStatus};

use crate::agent::Subscriber;

/// One tool call as the recording has it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    pub call_id: String,
    pub step: u32,
    pub tool: String,
    pub is_error: bool,
    pub error_type: Option<ErrorKind>,
    pub output: String,
    pub diff: Option<String>,
    pub decision: Option<Decision>,
    /// The reason of a recorded deny, given again when the replay denies the same call.
    pub reason: Option<String>,
}

/// What the recording says the run did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expected {
    pub run_id: String,
    pub cwd: String,
    /// In the order the calls finished.
    pub calls: Vec<RecordedCall>,
    pub status: Option<RunStatus>,
    pub steps: Option<u32>,
    pub answer: Option<String>,
}

impl Expected {
    pub fn from_events(events: &[Envelope]) -> Expected {
        let mut out = Expected::default();
        let mut steps: HashMap<String, u32> = HashMap::new();
        let mut decisions: HashMap<String, (Decision, Option<String>)> = HashMap::new();
        for e in events {
            match &e.event {
                Event::RunStarted { cwd, .. } => {
                    out.run_id = e.run_id.clone();
                    out.cwd = cwd.clone();
                }
                Event::ModelResponse {
                    step,
                    calls,
                    incomplete,
                    ..
                } => {
                    for id in calls
                        .iter()
                        .map(|c| &c.id)
                        .chain(incomplete.iter().map(|c| &c.id))
                    {
                        steps.insert(id.clone(), *step);
                    }
                }
                Event::PermissionDecided {
                    call_id,
                    decision,
                    reason,
                    ..
                } => {
                    decisions.insert(call_id.clone(), (*decision, reason.clone()));
                }
                Event::ToolCallFinished {
                    call_id,
                    tool,
                    is_error,
                    error_type,
                    output,
                    diff,
                    ..
                } => {
                    let decided = decisions.get(call_id);
                    out.calls.push(RecordedCall {
                        call_id: call_id.clone(),
                        step: steps.get(call_id).copied().unwrap_or(0),
                        tool: tool.clone(),
                        is_error: *is_error,
                        error_type: *error_type,
                        output: output.clone(),
                        diff: diff.clone(),
                        decision: decided.map(|d| d.0),
                        reason: decided.and_then(|d| d.1.clone()),
                    });
                }
                Event::RunFinished {
                    status,
                    steps,
                    answer,
                    ..
                } => {
                    out.status = Some(*status);
                    out.steps = Some(*steps);
                    out.answer = answer.clone();
                }
                _ => {}
            }
        }
        out
    }

    /// The recorded permission decisions, by call id, for the replay's approver.
    pub fn decisions(&self) -> HashMap<String, (Decision, Option<String>)> {
        self.calls
            .iter()
            .filter_map(|c| Some((c.call_id.clone(), (c.decision?, c.reason.clone()))))
            .collect()
    }
}

/// Masks what legitimately differs between a recording and its replay.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    /// (text, placeholder), longest text first.
    replace: Vec<(String, &'static str)>,
}

impl Normalizer {
    /// Masks both workspace roots as `<root>` and both run ids as `<run>`.
    pub fn new(roots: &[&str], run_ids: &[&str]) -> Self {
        let mut replace: Vec<(String, &'static str)> = Vec::new();
        for root in roots.iter().filter(|r| r.len() > 1) {
            replace.push((root.trim_end_matches('/').to_string(), "<root>"));
        }
        for id in run_ids.iter().filter(|r| !r.is_empty()) {
            replace.push((id.to_string(), "<run>"));
        }
        replace.sort_by_key(|(text, _)| std::cmp::Reverse(text.len()));
        Self { replace }
    }

    /// `text` with the roots, run ids and durations masked.
    pub fn apply(&self, text: &str) -> String {
        let mut s = text.to_string();
        for (from, to) in &self.replace {
            if s.contains(from.as_str()) {
                s = s.replace(from.as_str(), to);
            }
        }
        mask_durations(&s)
    }
}

/// Replaces durations (`0.02 s`, `12 ms`, `1.5s`) with `<duration>`: a command's footer says how
/// long it took, which no two runs agree on.
fn mask_durations(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'.');
        if !(boundary && bytes[i].is_ascii_digit()) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            j += 1;
        }
        if j + 1 < bytes.len() && bytes[j] == b'.' && bytes[j + 1].is_ascii_digit() {
            j += 1;
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
        }
        let number_end = j;
        if j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let unit = ["ms", "s"]
            .iter()
            .find(|u| text[j..].starts_with(**u))
            .map(|u| j + u.len())
            .filter(|end| *end == bytes.len() || !bytes[*end].is_ascii_alphanumeric());
        match unit {
            Some(end) => {
                out.push_str(&text[copied..i]);
                out.push_str("<duration>");
                copied = end;
                i = end;
            }
            None => i = number_end,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The first difference between two texts, on one line.
fn first_difference(what: &str, expected: &str, got: &str) -> String {
    let (mut e, mut g) = (expected.lines(), got.lines());
    let mut line = 1;
    loop {
        match (e.next(), g.next()) {
            (Some(a), Some(b)) if a == b => line += 1,
            (a, b) => {
                let show = |l: Option<&str>| match l {
                    Some(l) => format!("{:?}", clip(l)),
                    None => "nothing".to_string(),
                };
                return format!(
                    "{what} line {line}: recorded {}, replay {}",
                    show(a),
                    show(b)
                );
            }
        }
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() > 100 {
        format!("{}…", s.chars().take(100).collect::<String>())
    } else {
        s.to_string()
    }
}

/// A tool call as the replay ran it.
#[derive(Debug, Clone)]
struct Observed {
    call_id: String,
    tool: String,
    is_error: bool,
    error_type: Option<ErrorKind>,
    output: String,
    diff: Option<String>,
}

/// Compares the replay's calls with the recording as they finish.
#[derive(Debug)]
pub struct Checker {
    expected: Expected,
    by_id: HashMap<String, usize>,
    normalizer: Normalizer,
    pending: Vec<Observed>,
    decisions: HashMap<String, Decision>,
    seen: HashSet<String>,
    identical: usize,
    diverged: usize,
    missing: usize,
}

impl Checker {
    /// A checker for a replay of `expected` working in `root`, as run `run_id`.
    pub fn new(expected: Expected, root: &str, run_id: &str) -> Self {
        let normalizer = Normalizer::new(&[&expected.cwd, root], &[&expected.run_id, run_id]);
        let by_id = expected
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| (c.call_id.clone(), i))
            .collect();
        Self {
            expected,
            by_id,
            normalizer,
            pending: Vec::new(),
            decisions: HashMap::new(),
            seen: HashSet::new(),
            identical: 0,
            diverged: 0,
            missing: 0,
        }
    }

    fn observe(&mut self, event: &Event) {
        match event {
            Event::PermissionDecided {
                call_id, decision, ..
            } => {
                self.decisions.insert(call_id.clone(), *decision);
            }
            Event::ToolCallFinished {
                call_id,
                tool,
                is_error,
                error_type,
                output,
                diff,
                ..
            } => self.pending.push(Observed {
                call_id: call_id.clone(),
                tool: tool.clone(),
                is_error: *is_error,
                error_type: *error_type,
                output: output.clone(),
                diff: diff.clone(),
            }),
            _ => {}
        }
    }

    /// The comparisons of the calls finished since the last call, as events.
    pub fn drain(&mut self) -> Vec<Event> {
        let pending = std::mem::take(&mut self.pending);
        pending.into_iter().map(|o| self.compare(o)).collect()
    }

    fn compare(&mut self, o: Observed) -> Event {
        self.seen.insert(o.call_id.clone());
        let Some(recorded) = self.by_id.get(&o.call_id).map(|i| &self.expected.calls[*i]) else {
            self.missing += 1;
            return Event::ReplayCompared {
                step: 0,
                call_id: o.call_id,
                tool: o.tool,
                verdict: ReplayVerdict::Unrecorded,
                differences: vec!["the recording has no such call".into()],
            };
        };
        let n = &self.normalizer;
        let mut differences = Vec::new();
        if recorded.tool != o.tool {
            differences.push(format!(
                "tool: recorded {}, replay {}",
                recorded.tool, o.tool
            ));
        }
        let decision = self.decisions.get(&o.call_id).copied();
        if recorded.decision != decision {
            let name = |d: Option<Decision>| d.map_or("none", Decision::as_str);
            differences.push(format!(
                "decision: recorded {}, replay {}",
                name(recorded.decision),
                name(decision)
            ));
        }
        if recorded.is_error != o.is_error {
            differences.push(format!(
                "is_error: recorded {}, replay {}",
                recorded.is_error, o.is_error
            ));
        }
        if recorded.error_type != o.error_type {
            let name = |k: Option<ErrorKind>| k.map_or("none", ErrorKind::as_str);
            differences.push(format!(
                "error_type: recorded {}, replay {}",
                name(recorded.error_type),
                name(o.error_type)
            ));
        }
        let (want, got) = (n.apply(&recorded.output), n.apply(&o.output));
        if want != got {
            differences.push(first_difference("output", &want, &got));
        }
        let diff_of = |d: &Option<String>| d.as_deref().map(|d| n.apply(d)).unwrap_or_default();
        let (want, got) = (diff_of(&recorded.diff), diff_of(&o.diff));
        if want != got {
            differences.push(first_difference("diff", &want, &got));
        }
        let verdict = if differences.is_empty() {
            self.identical += 1;
            ReplayVerdict::Identical
        } else {
            self.diverged += 1;
            ReplayVerdict::Diverged
        };
        Event::ReplayCompared {
            step: recorded.step,
            call_id: o.call_id,
            tool: o.tool,
            verdict,
            differences,
        }
    }

    /// The last comparisons (recorded calls that never ran) and the summary, comparing the run's
    /// outcome too. Returns the events and whether the replay was identical.
    pub fn finish(&mut self, status: RunStatus, steps: u32) -> (Vec<Event>, bool) {
        let mut events = self.drain();
        let not_run: Vec<RecordedCall> = self
            .expected
            .calls
            .iter()
            .filter(|c| !self.seen.contains(&c.call_id))
            .cloned()
            .collect();
        for c in not_run {
            self.missing += 1;
            events.push(Event::ReplayCompared {
                step: c.step,
                call_id: c.call_id,
                tool: c.tool,
                verdict: ReplayVerdict::NotRun,
                differences: vec!["recorded, but the replay never made this call".into()],
            });
        }
        let mut differences = Vec::new();
        if let Some(recorded) = self.expected.status
            && recorded != status
        {
            differences.push(format!(
                "outcome: recorded {}, replay {}",
                recorded.as_str(),
                status.as_str()
            ));
        }
        if let Some(recorded) = self.expected.steps
            && recorded != steps
        {
            differences.push(format!("steps: recorded {recorded}, replay {steps}"));
        }
        let identical = self.diverged == 0 && self.missing == 0 && differences.is_empty();
        events.push(Event::ReplaySummary {
            recorded_run_id: self.expected.run_id.clone(),
            calls: self.expected.calls.len(),
            identical: self.identical,
            diverged: self.diverged,
            missing: self.missing,
            differences,
        });
        (events, identical)
    }
}

/// Feeds the run's events to a shared [`Checker`].
pub struct Observer(pub Arc<Mutex<Checker>>);

impl Subscriber for Observer {
    fn on_event(&mut self, event: &Envelope) {
        if let Ok(mut checker) = self.0.lock() {
            checker.observe(&event.event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_roots_and_run_ids_are_masked() {
        let n = Normalizer::new(&["/tmp/a/proj", "/tmp/b/x"], &["20261201-1", "20261201-2"]);
        assert_eq!(
            n.apply("ok\n[exit code 0 · 0.02 s]"),
            "ok\n[exit code 0 · <duration>]"
        );
        assert_eq!(
            n.apply("took 12ms and 3 s"),
            "took <duration> and <duration>"
        );
        assert_eq!(n.apply("1 passed, 2 skipped"), "1 passed, 2 skipped");
        assert_eq!(n.apply("v1.5s"), "v1.5s");
        assert_eq!(
            n.apply("/tmp/a/proj/src/x.rs and /tmp/b/x/src/x.rs"),
            "<root>/src/x.rs and <root>/src/x.rs"
        );
        assert_eq!(n.apply("runs/20261201-2/spill.txt"), "runs/<run>/spill.txt");
    }

    #[test]
    fn the_first_differing_line_is_named() {
        assert_eq!(
            first_difference("output", "a\nb\nc", "a\nB\nc"),
            "output line 2: recorded \"b\", replay \"B\""
        );
        assert_eq!(
            first_difference("output", "a", "a\nmore"),
            "output line 2: recorded nothing, replay \"more\""
        );
    }

    fn finished(call_id: &str, output: &str) -> Event {
        Event::ToolCallFinished {
            call_id: call_id.into(),
            tool: "fs__read_file".into(),
            is_error: false,
            error_type: None,
            duration_ms: 3,
            summary: String::new(),
            output: output.into(),
            diff: None,
        }
    }

    #[test]
    fn calls_are_identical_diverged_unrecorded_or_not_run() {
        let call = |id: &str, out: &str| RecordedCall {
            call_id: id.into(),
            step: 1,
            tool: "fs__read_file".into(),
            is_error: false,
            error_type: None,
            output: out.into(),
            diff: None,
            decision: None,
            reason: None,
        };
        let expected = Expected {
            run_id: "r1".into(),
            cwd: "/rec".into(),
            calls: vec![call("a", "/rec/x: 1"), call("b", "two"), call("c", "three")],
            status: Some(RunStatus::Success),
            steps: Some(2),
            answer: None,
        };
        let mut checker = Checker::new(expected, "/rep", "r2");
        checker.observe(&finished("a", "/rep/x: 1"));
        checker.observe(&finished("b", "TWO"));
        checker.observe(&finished("z", "?"));
        let verdicts: Vec<ReplayVerdict> = checker
            .drain()
            .into_iter()
            .map(|e| match e {
                Event::ReplayCompared { verdict, .. } => verdict,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            verdicts,
            [
                ReplayVerdict::Identical,
                ReplayVerdict::Diverged,
                ReplayVerdict::Unrecorded
            ]
        );
        let (events, identical) = checker.finish(RunStatus::Error, 3);
        assert!(!identical);
        assert!(matches!(
            events[0],
            Event::ReplayCompared {
                verdict: ReplayVerdict::NotRun,
                ..
            }
        ));
        match events.last().unwrap() {
            Event::ReplaySummary {
                calls,
                identical,
                diverged,
                missing,
                differences,
                ..
            } => {
                assert_eq!((*calls, *identical, *diverged, *missing), (3, 1, 1, 2));
                assert_eq!(
                    differences,
                    &[
                        "outcome: recorded success, replay error".to_string(),
                        "steps: recorded 2, replay 3".to_string()
                    ]
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
