//! The managed policy: an administrator's file (`/etc/tern/managed.toml`, or the file
//! `TERN_MANAGED_CONFIG` names) that no other layer and no flag can loosen (issue 19, item 5).
//!
//! ```toml
//! [policy]
//! allowed_servers = ["fs", "shell", "/opt/corp/mcp/*", "https://*.corp.example/*"]
//! denied_servers  = ["github"]
//! deny    = ["shell__run(curl *)"]   # added after every layer and flag: nothing allows past it
//! ask     = ["web__fetch"]
//! sandbox = "workspace-write"        # the loosest shell sandbox a run may have
//! allow_yolo = false                 # `--mode yolo` (or `permissions.mode = "yolo"`) is refused
//! allowed_plugins = ["corp-*"]
//! ```
//!
//! A server pattern is a glob (`*`, `?`) over one of three things, told apart by its shape: a
//! URL (it has `://`) matches an HTTP server's `url`; a path (it has `/`) matches a stdio
//! server's `command` as written and as found on `PATH`; anything else matches the server's
//! name. As in Claude Code's managed settings, once `allowed_servers` lists a command (or a
//! URL), a stdio (or HTTP) server that is not built in must match one of those — its name alone
//! is not enough, since any config can give any command any name.
//!
//! A missing file is no policy. A file that exists but cannot be read or parsed is an error that
//! stops tern: an administrator's policy must never vanish silently.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::check::invalid;
use crate::error::{ConfigError, Location, Result};
use crate::expand::EnvLookup;
use crate::locate::{SourceName, SourceText};
use crate::permissions::{PermissionMode, RuleList, RuleSource, check_rule_shape};
use crate::servers::{Launch, ServerConfig, Transport};

/// Where the managed policy is when `TERN_MANAGED_CONFIG` is not set.
pub const MANAGED_CONFIG: &str = "/etc/tern/managed.toml";

/// The variable that moves the managed policy elsewhere (tests; a machine without `/etc`).
pub const MANAGED_CONFIG_ENV: &str = "TERN_MANAGED_CONFIG";

/// The file exactly as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManaged {
    policy: Option<RawPolicy>,
}

/// `[policy]` exactly as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    allowed_servers: Option<Vec<Spanned<String>>>,
    denied_servers: Option<Vec<Spanned<String>>>,
    deny: Option<Vec<Spanned<String>>>,
    ask: Option<Vec<Spanned<String>>>,
    sandbox: Option<Spanned<String>>,
    allow_yolo: Option<Spanned<bool>>,
    allowed_plugins: Option<Vec<Spanned<String>>>,
}

/// What a server pattern is matched against, told apart by the pattern's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternKind {
    /// The server's name (`github`, `corp-*`).
    Name,
    /// A stdio server's command (`/opt/corp/mcp/*`): the pattern has a `/`.
    Command,
    /// An HTTP server's URL (`https://*.corp.example/*`): the pattern has `://`.
    Url,
}

/// One pattern of the policy and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyPattern {
    /// The glob as written (`*` any run of characters, `?` one).
    pub pattern: String,
    /// What it is matched against.
    pub kind: PatternKind,
    /// Its line in the policy file.
    pub at: Location,
}

/// A setting of the policy and where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed<T> {
    /// The value.
    pub value: T,
    /// Where.
    pub at: Location,
}

/// The managed policy, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedPolicy {
    /// The file it came from.
    pub path: PathBuf,
    /// `allowed_servers`: when set, only servers matching one of these start.
    pub allowed_servers: Option<Vec<PolicyPattern>>,
    /// `denied_servers`: servers matching any of these never start (over `allowed_servers`).
    pub denied_servers: Vec<PolicyPattern>,
    /// `deny` rules, added after every layer and flag.
    pub deny: Vec<RuleSource>,
    /// `ask` rules, added after every layer and flag.
    pub ask: Vec<RuleSource>,
    /// `sandbox`: the loosest shell sandbox mode a run may have.
    pub sandbox: Option<Placed<tern_sandbox::Mode>>,
    /// `allow_yolo = false`: runs may not use the `yolo` permission mode.
    pub allow_yolo: Option<Placed<bool>>,
    /// `allowed_plugins`: when set, only plugins whose name matches one of these may be enabled.
    pub allowed_plugins: Option<Vec<PolicyPattern>>,
}

impl ManagedPolicy {
    /// The policy file for this environment: `TERN_MANAGED_CONFIG`, else [`MANAGED_CONFIG`].
    pub fn path_in(env: EnvLookup<'_>) -> PathBuf {
        env(MANAGED_CONFIG_ENV)
            .filter(|p| !p.is_empty())
            .map_or_else(|| PathBuf::from(MANAGED_CONFIG), PathBuf::from)
    }

    /// Reads and checks the policy at `path`: `None` when there is no file.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(ConfigError::Policy {
                    message: format!(
                        "managed policy {}: cannot be read: {err}\nhint: tern does not run \
                         without the administrator's policy; it must be readable by every user \
                         (e.g. `chmod 644 {}`)",
                        path.display(),
                        path.display()
                    ),
                });
            }
        };
        Self::parse(path, &text).map(Some)
    }

    /// Checks the policy text of `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let name = SourceName::File(path.to_path_buf());
        let source = SourceText { name: &name, text };
        let raw: RawManaged = crate::raw::parse_as(&source)?;
        let raw = raw.policy.unwrap_or_default();
        let at = |offset: usize| source.locate(offset);
        let patterns = |key: &str, list: Option<Vec<Spanned<String>>>, servers: bool| {
            list.map(|items| {
                items
                    .into_iter()
                    .map(|item| {
                        let location = at(item.span().start);
                        let pattern = item.into_inner();
                        let kind = kind_of(&pattern);
                        check_pattern(&pattern, kind, servers)
                            .map_err(|m| invalid(location.clone(), &format!("policy.{key}"), &m))?;
                        Ok(PolicyPattern {
                            pattern,
                            kind,
                            at: location,
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .transpose()
        };
        let rules = |list: RuleList, items: Option<Vec<Spanned<String>>>| {
            items
                .unwrap_or_default()
                .into_iter()
                .map(|item| {
                    let location = at(item.span().start);
                    let rule = item.into_inner();
                    check_rule_shape(&rule)
                        .map_err(|m| invalid(location.clone(), &format!("policy.{list}"), &m))?;
                    Ok(RuleSource {
                        rule,
                        file: location.file,
                        line: location.line,
                    })
                })
                .collect::<Result<Vec<_>>>()
        };
        let sandbox = raw
            .sandbox
            .map(|s| {
                let location = at(s.span().start);
                s.get_ref()
                    .parse::<tern_sandbox::Mode>()
                    .map(|value| Placed {
                        value,
                        at: location.clone(),
                    })
                    .map_err(|m: String| invalid(location, "policy.sandbox", &m))
            })
            .transpose()?;
        Ok(Self {
            path: path.to_path_buf(),
            allowed_servers: patterns("allowed_servers", raw.allowed_servers, true)?,
            denied_servers: patterns("denied_servers", raw.denied_servers, true)?
                .unwrap_or_default(),
            deny: rules(RuleList::Deny, raw.deny)?,
            ask: rules(RuleList::Ask, raw.ask)?,
            sandbox,
            allow_yolo: raw.allow_yolo.map(|b| Placed {
                at: at(b.span().start),
                value: b.into_inner(),
            }),
            allowed_plugins: patterns("allowed_plugins", raw.allowed_plugins, false)?,
        })
    }

    /// Why `server` may not start under this policy (`blocked by managed policy (FILE:LINE:
    /// …)`), or `None` when it may. `env` finds a bare command on `PATH`.
    pub fn server_blocked(&self, server: &ServerConfig, env: EnvLookup<'_>) -> Option<String> {
        let facts = ServerFacts::of(server, env);
        let blocked =
            |at: &Location, what: String| Some(format!("blocked by managed policy ({at}: {what})"));
        if let Some(p) = self.denied_servers.iter().find(|p| facts.matches(p)) {
            return blocked(&p.at, format!("denied_servers {:?}", p.pattern));
        }
        let allowed = self.allowed_servers.as_ref()?;
        let lists = |kind| allowed.iter().any(|p| p.kind == kind);
        // Once commands (URLs) are listed, a non-built-in stdio (HTTP) server's name alone does
        // not admit it.
        let required = match &facts.transport {
            Some(Endpoint::Command(_)) if lists(PatternKind::Command) => Some(PatternKind::Command),
            Some(Endpoint::Url(_)) if lists(PatternKind::Url) => Some(PatternKind::Url),
            _ => None,
        };
        let admits = |p: &&PolicyPattern| match required {
            Some(kind) => p.kind == kind && facts.matches(p),
            None => facts.matches(p),
        };
        if allowed.iter().any(|p| admits(&p)) {
            return None;
        }
        let at = allowed.first().map_or_else(
            || Location {
                file: self.path.clone(),
                line: 1,
                column: 0,
            },
            |p| p.at.clone(),
        );
        let what = match (&facts.transport, required) {
            (Some(Endpoint::Command(c)), Some(_)) => {
                format!(
                    "allowed_servers lists commands and {:?} is not one of them",
                    c[0]
                )
            }
            (Some(Endpoint::Url(u)), Some(_)) => {
                format!("allowed_servers lists URLs and {u:?} is not one of them")
            }
            _ => format!("allowed_servers does not list {:?}", server.name),
        };
        blocked(&at, what)
    }

    /// Whether the plugin `name` may be enabled: `allowed_plugins` unset, or a pattern of it
    /// matches.
    pub fn allows_plugin(&self, name: &str) -> bool {
        self.plugin_blocked(name).is_none()
    }

    /// Why the plugin `name` may not be enabled, or `None` when it may.
    pub fn plugin_blocked(&self, name: &str) -> Option<String> {
        let allowed = self.allowed_plugins.as_ref()?;
        if allowed.iter().any(|p| glob(&p.pattern, name)) {
            return None;
        }
        let at = allowed
            .first()
            .map_or_else(|| format!("{}", self.path.display()), |p| p.at.to_string());
        Some(format!(
            "blocked by managed policy ({at}: allowed_plugins does not list {name:?})"
        ))
    }

    /// Whether `mode` is allowed; the error for a mode the policy refuses. `from` says where
    /// the mode was chosen (`--mode`, `permissions.mode`).
    pub fn check_mode(&self, mode: PermissionMode, from: &str) -> Result<()> {
        match &self.allow_yolo {
            Some(Placed { value: false, at }) if mode == PermissionMode::Yolo => {
                Err(ConfigError::Policy {
                    message: format!(
                        "{from} yolo is not allowed: the managed policy sets allow_yolo = false \
                         ({at})\nhint: use `--mode accept-edits` (file edits without asking), or \
                         allow what should run unasked with `--allow RULE`; ask your \
                         administrator to change the policy"
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    /// The loosest permission mode the policy lets a run have.
    pub fn max_mode(&self) -> PermissionMode {
        match &self.allow_yolo {
            Some(Placed { value: false, .. }) => PermissionMode::AcceptEdits,
            _ => PermissionMode::Yolo,
        }
    }
}

/// What the server patterns look at.
struct ServerFacts<'a> {
    name: &'a str,
    transport: Option<Endpoint>,
}

enum Endpoint {
    /// The command as written, then as found on `PATH` (when that differs).
    Command(Vec<String>),
    Url(String),
}

impl<'a> ServerFacts<'a> {
    fn of(server: &'a ServerConfig, env: EnvLookup<'_>) -> Self {
        let transport = match &server.transport {
            Transport::Stdio {
                launch: Launch::Command(cmd),
                ..
            } => {
                let mut forms = vec![cmd.clone()];
                if !cmd.contains('/')
                    && let Some(found) = on_path(cmd, env)
                {
                    forms.push(found.to_string_lossy().into_owned());
                }
                Some(Endpoint::Command(forms))
            }
            // A built-in server is tern itself: only its name can identify it.
            Transport::Stdio {
                launch: Launch::Builtin(_),
                ..
            } => None,
            Transport::Http { url, .. } => Some(Endpoint::Url(url.clone())),
        };
        Self {
            name: &server.name,
            transport,
        }
    }

    fn matches(&self, p: &PolicyPattern) -> bool {
        match (p.kind, &self.transport) {
            (PatternKind::Name, _) => glob(&p.pattern, self.name),
            (PatternKind::Command, Some(Endpoint::Command(forms))) => {
                forms.iter().any(|f| glob(&p.pattern, f))
            }
            (PatternKind::Url, Some(Endpoint::Url(url))) => glob(&p.pattern, url),
            _ => false,
        }
    }
}

/// The first executable file named `cmd` in `PATH`'s directories.
fn on_path(cmd: &str, env: EnvLookup<'_>) -> Option<PathBuf> {
    let path = env("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(cmd))
        .find(|candidate| candidate.is_file())
}

fn kind_of(pattern: &str) -> PatternKind {
    if pattern.contains("://") {
        PatternKind::Url
    } else if pattern.contains('/') {
        PatternKind::Command
    } else {
        PatternKind::Name
    }
}

/// An empty pattern matches nothing, and a name pattern can only hold what names hold, so a
/// pattern that could never match is an error where it is written.
fn check_pattern(
    pattern: &str,
    kind: PatternKind,
    servers: bool,
) -> std::result::Result<(), String> {
    if pattern.trim().is_empty() {
        return Err("an empty pattern matches nothing".into());
    }
    if servers
        && kind == PatternKind::Name
        && let Some(c) = pattern
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '?')))
    {
        return Err(format!(
            "{pattern:?} has {c:?}: a server pattern is a name (`github`, `corp-*`), a command \
             path (`/opt/mcp/*`) or a URL (`https://*.example.com/*`)"
        ));
    }
    Ok(())
}

/// `*` matches any run of characters (`/` included), `?` one character.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Greedy with backtracking to the last `*`: linear in practice, no recursion.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_runs_and_single_characters() {
        assert!(glob("github", "github"));
        assert!(!glob("github", "github2"));
        assert!(glob("corp-*", "corp-jira"));
        assert!(glob(
            "https://*.corp.example/*",
            "https://mcp.corp.example/v1/mcp"
        ));
        assert!(!glob(
            "https://*.corp.example/*",
            "https://corp.example.evil.com/x"
        ));
        assert!(glob("/opt/mcp/*", "/opt/mcp/bin/server"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(glob("*", ""));
        assert!(glob("*a*b", "xxaxxb"));
        assert!(!glob("*a*b", "xxaxxbx"));
    }
}
