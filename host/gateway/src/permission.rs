//! The permission decision for one call, before anyone is asked (issue 4, items 2–7).
//!
//! Layers, first hit wins: protected config locations (deny) > deny rules > `read-only` mode
//! (deny) > ask rules > allow rules (which risky shell constructs cannot satisfy) > annotation
//! default (`readOnlyHint` from a trusted server) > mode default (`yolo` allows, except a command
//! whose programs cannot be read while a deny rule names the tool). Annotations only ever fill in
//! when no rule spoke: a rule always beats a hint.

use serde_json::Value;
use tern_config::PermissionMode;
use tern_mcp::ToolAnnotations;

use crate::approver::ResolvedPath;
use tern_config::RuleList;

use crate::rules::{CallFacts, Coverage, Rule, RuleSet, is_path_arg};

/// The permission stage's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it; `rule` is what allowed it.
    Allow { rule: String },
    /// Do not; `rule` is what denied it.
    Deny { rule: String, reason: String },
    /// Ask the approver; `rule` is what made it ask, `reasons` are shown to the user.
    Ask { rule: String, reasons: Vec<String> },
}

/// What the decision knows about the tool besides the call's facts.
#[derive(Debug, Clone, Copy)]
pub struct ToolFacts<'a> {
    pub annotations: &'a ToolAnnotations,
    /// The server is trusted (built in, or from the user's or a trusted project's config).
    pub trusted: bool,
    /// `fs__write_file` / `fs__edit_file` of the built-in fs server: what `accept-edits` allows.
    pub is_edit: bool,
    /// Plan mode lets it through ([`crate::ToolPolicy::plannable`]).
    pub plannable: bool,
    /// A tool of the built-in plan server (`plan__exit`): only plan mode calls it.
    pub plan_server: bool,
    pub mode: PermissionMode,
}

impl ToolFacts<'_> {
    fn read_only(&self) -> bool {
        // No annotation means destructive (issue 4, item 4).
        self.annotations.read_only == Some(true)
    }
}

/// Every path argument of the call, resolved (strings, and strings inside arrays).
pub fn path_args(f: &CallFacts<'_>) -> Vec<ResolvedPath> {
    let mut out = Vec::new();
    for (name, value) in f.args {
        if !is_path_arg(name) || f.command_arg == Some(name.as_str()) {
            continue;
        }
        let strings: Vec<&str> = match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for s in strings {
            out.push(ResolvedPath {
                arg: name.clone(),
                path: f.ws.normalize(s),
            });
        }
    }
    out
}

/// Decides a call. `session` holds the rules the user added with "always" during this run.
pub fn decide(
    f: &CallFacts<'_>,
    tool: &ToolFacts<'_>,
    rules: &RuleSet,
    session: &RuleSet,
) -> Verdict {
    let paths = path_args(f);

    // Config locations are write-protected for every tool that can write (issue 4, item 7).
    if !(tool.read_only() && tool.trusted)
        && let Some(p) = paths.iter().find(|p| f.ws.is_protected(&p.path))
    {
        {
            return Verdict::Deny {
                rule: "protected:config".into(),
                reason: format!(
                    "{} is a protected config location ($TERN_HOME or a .tern/ directory); no \
                     tool may write there",
                    p.path.display()
                ),
            };
        }
    }
    if let Some(p) = f.shell.and_then(|a| a.protected_writes.first()) {
        return Verdict::Deny {
            rule: "protected:config".into(),
            reason: format!(
                "the command writes to {}, a protected config location",
                p.display()
            ),
        };
    }

    if let Some(rule) = rules.deny.iter().find(|r| r.matches_any(f)) {
        return Verdict::Deny {
            rule: rule.origin.clone(),
            reason: format!("denied by rule `{}`", rule.text),
        };
    }
    if tool.mode == PermissionMode::ReadOnly && !tool.read_only() {
        return Verdict::Deny {
            rule: "mode:read-only".into(),
            reason: "read-only mode denies every tool not marked read-only".into(),
        };
    }
    if tool.mode == PermissionMode::Plan && !tool.plannable {
        return Verdict::Deny {
            rule: "mode:plan".into(),
            reason: "plan mode: only read-only tools and the todo list may be used until the \
                     user approves a plan; finish planning with `plan__exit`"
                .into(),
        };
    }
    if tool.mode != PermissionMode::Plan && tool.plan_server {
        return Verdict::Deny {
            rule: "mode:plan".into(),
            reason: "the session is not in plan mode, so there is no plan to hand over".into(),
        };
    }
    if let Some(rule) = rules.ask.iter().find(|r| r.matches_any(f)) {
        let mut reasons = vec![format!("rule `{}` asks", rule.text)];
        reasons.extend(f.shell.iter().flat_map(|a| a.risks.iter().cloned()));
        return Verdict::Ask {
            rule: rule.origin.clone(),
            reasons,
        };
    }

    let risks: Vec<String> = f.shell.map(|a| a.risks.clone()).unwrap_or_default();
    if risks.is_empty()
        && let Some(rule) = allowed_by(f, rules, session)
    {
        return Verdict::Allow { rule };
    }

    if tool.read_only() && tool.trusted {
        return Verdict::Allow {
            rule: "annotation:readOnlyHint".into(),
        };
    }
    match tool.mode {
        // Yolo allows what no rule denies — but not a command whose programs the gateway could
        // not read, when a deny rule speaks about this tool: it may be exactly what the rule
        // denies, spelt so the rule cannot see it (`echo rm -rf x | sh`).
        PermissionMode::Yolo => match f.shell.filter(|a| a.opaque) {
            Some(a) if rules.deny.iter().any(|r| r.names_tool(f.name)) => Verdict::Deny {
                rule: "mode:yolo-unreadable".into(),
                reason: format!(
                    "tern cannot tell what this command runs ({}), and a deny rule applies to \
                     `{}`: yolo denies what it cannot check against the rules",
                    a.risks.join("; "),
                    f.name
                ),
            },
            _ => Verdict::Allow {
                rule: "mode:yolo".into(),
            },
        },
        PermissionMode::AcceptEdits
            if tool.is_edit
                && !paths.is_empty()
                && paths.iter().all(|p| f.ws.in_roots(&p.path)) =>
        {
            Verdict::Allow {
                rule: "mode:accept-edits".into(),
            }
        }
        mode => {
            let mut reasons = risks;
            if reasons.is_empty() {
                reasons.push("no rule allows it".into());
            }
            let rule = match mode {
                PermissionMode::ReadOnly => "mode:read-only",
                PermissionMode::Plan => "mode:plan",
                PermissionMode::AcceptEdits => "mode:accept-edits",
                _ => "mode:default",
            };
            Verdict::Ask {
                rule: rule.into(),
                reasons,
            }
        }
    }
}

/// The origin(s) of the allow rules that together cover the call, if they do.
pub(crate) fn allowed_by(f: &CallFacts<'_>, rules: &RuleSet, session: &RuleSet) -> Option<String> {
    let n = f.shell.map_or(0, |a| a.commands.len());
    let mut covered = vec![None::<&str>; n];
    for rule in rules.allow.iter().chain(session.allow.iter()) {
        match rule.covers(f) {
            Coverage::Nothing => {}
            Coverage::Whole => return Some(rule.origin.clone()),
            Coverage::Commands(idx) => {
                for i in idx {
                    if let Some(slot) = covered.get_mut(i) {
                        slot.get_or_insert(rule.origin.as_str());
                    }
                }
            }
        }
    }
    if n == 0 || covered.iter().any(Option::is_none) {
        return None;
    }
    let mut origins: Vec<&str> = Vec::new();
    for o in covered.into_iter().flatten() {
        if !origins.contains(&o) {
            origins.push(o);
        }
    }
    Some(origins.join(" + "))
}

/// The exact rules an "always" answer saves: one per simple command no allow rule covers yet, the
/// URL's domain, the path arguments, or else the tool name. Empty when no rule could allow the
/// call (a risky command), so that "always" never saves a rule that does nothing.
pub fn always_rules(f: &CallFacts<'_>, rules: &RuleSet, session: &RuleSet) -> Vec<String> {
    let candidates = candidate_rules(f, rules, session);
    // Keep only what parses back and, together, really allows this call.
    let mut trial = session.clone();
    for text in &candidates {
        match Rule::compile(text, RuleList::Allow, "user:always".into(), f.ws) {
            Ok(rule) => trial.push(rule),
            Err(_) => return Vec::new(),
        }
    }
    if allowed_by(f, rules, &trial).is_some() {
        candidates
    } else {
        Vec::new()
    }
}

fn candidate_rules(f: &CallFacts<'_>, rules: &RuleSet, session: &RuleSet) -> Vec<String> {
    if let Some(a) = f.shell {
        if !a.risks.is_empty() {
            return Vec::new();
        }
        let covered = |i: usize| {
            rules
                .allow
                .iter()
                .chain(session.allow.iter())
                .any(|r| match r.covers(f) {
                    Coverage::Whole => true,
                    Coverage::Commands(c) => c.contains(&i),
                    Coverage::Nothing => false,
                })
        };
        return a
            .commands
            .iter()
            .enumerate()
            .filter(|&(i, _)| !covered(i))
            .map(|(_, c)| {
                // A redirection is spelt bare (`> file`), as a person writes it; the rule
                // compiler reads `>` as a word of its own either way.
                let mut text = crate::shell::canonical(&c.words);
                for w in &c.writes {
                    text.push_str(" > ");
                    text.push_str(&crate::shell::quote(w));
                }
                format!("{}({text})", f.name)
            })
            .collect();
    }
    if let Some(host) = ["url", "uri"]
        .iter()
        .find_map(|k| f.args.get(*k).and_then(Value::as_str))
        .and_then(|u| url::Url::parse(u).ok())
        .and_then(|u| u.host_str().map(str::to_owned))
    {
        return vec![format!("{}(url: domain:{host})", f.name)];
    }
    let paths = path_args(f);
    if !paths.is_empty() {
        let args: Option<Vec<String>> = paths
            .iter()
            .map(|p| {
                let s = p.path.to_string_lossy();
                (!s.contains(['"', '*', '?', '[', '{'])).then(|| format!("{}: \"{s}\"", p.arg))
            })
            .collect();
        return args.map_or_else(Vec::new, |a| vec![format!("{}({})", f.name, a.join(", "))]);
    }
    vec![f.name.to_owned()]
}

#[cfg(test)]
#[path = "permission_tests.rs"]
mod tests;
