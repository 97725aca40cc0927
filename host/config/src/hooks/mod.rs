//! `[[hooks.EVENT]]`: commands run at fixed points of a run, in Claude Code's hook protocol
//! (issue 19, item 1).
//!
//! ```toml
//! [[hooks.PreToolUse]]
//! matcher = "Bash|shell__run"     # tool-name pattern; Claude Code's names map (Bash → shell__run)
//! command = "python3 .tern/hooks/guard.py"
//! timeout_sec = 30                # default 60; killed (its process group) when it passes
//! fail_closed = false             # a hook that fails or times out blocks only when true
//! ```
//!
//! Hooks accumulate over every layer, like permission rules: a project's `.tern/config.toml` adds
//! its hooks to the user's — and, like everything in it, only once the project is trusted (an
//! untrusted project config is never read). Each hook keeps the file and line it came from, for
//! its events, its audit lines and `tern hooks list`.

mod import;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::check::invalid;
use crate::error::Result;
use crate::locate::SourceText;

pub use import::{HooksImport, import_claude_hooks};

/// Claude Code's default hook timeout.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// The points of a run a hook can run at: Claude Code's names, so imported hooks keep theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    /// Before a tool call, after the permission rules: may deny, ask, allow or rewrite it.
    PreToolUse,
    /// After a tool call succeeded: may add context for the model, or feed back a problem.
    PostToolUse,
    /// Before the user's input goes to the model: may block it or add context.
    UserPromptSubmit,
    /// When the model gives its final answer: may send it back to work with a reason.
    Stop,
    /// [`HookEvent::Stop`] of a sub-agent's run.
    SubagentStop,
    /// When a run starts (or resumes a session): its output may add context.
    SessionStart,
    /// When a run ends.
    SessionEnd,
    /// Before the conversation is compacted.
    PreCompact,
    /// When tern needs the person (a permission prompt).
    Notification,
}

impl HookEvent {
    /// Every event, in the order the docs list them.
    pub const ALL: [HookEvent; 9] = [
        Self::PreToolUse,
        Self::PostToolUse,
        Self::UserPromptSubmit,
        Self::Stop,
        Self::SubagentStop,
        Self::SessionStart,
        Self::SessionEnd,
        Self::PreCompact,
        Self::Notification,
    ];

    /// The name in config and in the hook's `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::Stop => "Stop",
            Self::SubagentStop => "SubagentStop",
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::PreCompact => "PreCompact",
            Self::Notification => "Notification",
        }
    }

    /// The event named `name` (exactly as Claude Code spells it).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether a `matcher` means anything for this event (the tool events match tool names).
    pub fn matches_tools(self) -> bool {
        matches!(self, Self::PreToolUse | Self::PostToolUse)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One hook, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookConfig {
    pub event: HookEvent,
    /// Tool-name pattern (`*` globs, `|` alternatives, Claude Code names mapped); `None`: all.
    pub matcher: Option<String>,
    /// Run with `sh -c` in the working directory, the event's JSON on its stdin.
    pub command: String,
    pub timeout: Duration,
    /// A failure (exit other than 0 and 2, a timeout, a command that cannot start) blocks.
    pub fail_closed: bool,
    /// The config file it was written in.
    pub file: PathBuf,
    /// 1-based line in `file`.
    pub line: usize,
    /// Variables set for the command besides the run's (a plugin's hook gets
    /// `CLAUDE_PLUGIN_ROOT`, as in Claude Code).
    pub env: Vec<(String, String)>,
}

impl HookConfig {
    /// `file:line`, for events, audit lines and listings.
    pub fn source(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

/// `[hooks]`, resolved: every layer's hooks, lowest layer first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HooksSection {
    pub hooks: Vec<HookConfig>,
}

impl HooksSection {
    /// The hooks of one event, in the order they were configured.
    pub fn of(&self, event: HookEvent) -> impl Iterator<Item = &HookConfig> {
        self.hooks.iter().filter(move |h| h.event == event)
    }

    /// Whether no hook is configured at all.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}

/// One `[[hooks.EVENT]]` table exactly as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHook {
    matcher: Option<Spanned<String>>,
    command: Spanned<String>,
    timeout_sec: Option<Spanned<f64>>,
    fail_closed: Option<bool>,
}

/// `[hooks]` exactly as written: event name → its hooks.
pub(crate) type RawHooks = BTreeMap<Spanned<String>, Vec<RawHook>>;

/// `[hooks]` of one or more layers: hooks accumulate.
#[derive(Debug, Clone, Default)]
pub(crate) struct HooksLayer {
    hooks: Vec<HookConfig>,
}

impl HooksLayer {
    /// Checks one layer's hooks: a known event, a command, a timeout of 0 to 3600 s.
    pub(crate) fn from_raw(raw: Option<RawHooks>, source: &SourceText<'_>) -> Result<Self> {
        let mut layer = Self::default();
        for (event, hooks) in raw.unwrap_or_default() {
            let at = source.locate(event.span().start);
            let Some(kind) = HookEvent::parse(event.get_ref()) else {
                let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
                return Err(invalid(
                    at,
                    &format!("hooks.{}", event.get_ref()),
                    &format!(
                        "unknown hook event; expected one of {} (names are Claude Code's, case \
                         included)",
                        known.join(", ")
                    ),
                ));
            };
            for hook in hooks {
                let key = format!("hooks.{kind}");
                let at = source.locate(hook.command.span().start);
                let command = hook.command.into_inner();
                if command.trim().is_empty() {
                    return Err(invalid(at, &format!("{key}.command"), "must not be empty"));
                }
                let timeout = match hook.timeout_sec {
                    None => DEFAULT_HOOK_TIMEOUT,
                    Some(t) => {
                        let secs = *t.get_ref();
                        if !(secs > 0.0 && secs <= 3600.0) {
                            return Err(invalid(
                                source.locate(t.span().start),
                                &format!("{key}.timeout_sec"),
                                "must be a number of seconds above 0, at most 3600",
                            ));
                        }
                        Duration::from_secs_f64(secs)
                    }
                };
                let matcher = hook
                    .matcher
                    .map(Spanned::into_inner)
                    .filter(|m| !m.trim().is_empty() && m.trim() != "*");
                layer.hooks.push(HookConfig {
                    event: kind,
                    matcher,
                    command,
                    timeout,
                    fail_closed: hook.fail_closed.unwrap_or(false),
                    file: at.file.clone(),
                    line: at.line,
                    env: Vec::new(),
                });
            }
        }
        Ok(layer)
    }

    /// The hooks so far (a plugin's, for its summary).
    pub(crate) fn hooks(&self) -> &[HookConfig] {
        &self.hooks
    }

    /// The hooks so far, to change (a plugin's get its root in their environment).
    pub(crate) fn hooks_mut(&mut self) -> &mut [HookConfig] {
        &mut self.hooks
    }

    /// Adds `later`'s hooks after the ones so far.
    pub(crate) fn merge(&mut self, later: Self) {
        self.hooks.extend(later.hooks);
    }

    pub(crate) fn resolve(self) -> HooksSection {
        HooksSection { hooks: self.hooks }
    }
}
