//! What the gateway needs from config, as a value (config is passed down, never read globally).

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use tern_config::{
    Builtin, Config, ConfigPaths, Launch, PermissionMode, Permissions, ToolSettings, Transport,
};

use crate::{cap::DEFAULT_MAX_OUTPUT_CHARS, paths::Workspace, redact::Secret};

/// What the gateway knows about one server.
#[derive(Debug, Clone, Default)]
pub struct ServerPolicy {
    /// Its `readOnlyHint`s may allow calls without asking (issue 4, item 4). Built-in servers
    /// and servers from the user's or a trusted project's config are trusted; a project config
    /// that is not trusted never gets this far.
    pub trusted: bool,
    /// Which built-in server it is, if one.
    pub builtin: Option<Builtin>,
    /// `[mcp_servers.NAME.tools.TOOL]`.
    pub tools: BTreeMap<String, ToolSettings>,
    /// The server-wide output cap (`max_output_chars` of the server), below per-tool ones.
    pub max_output_chars: Option<usize>,
}

impl ServerPolicy {
    /// The per-tool timeout override; `None` leaves the server's `tool_timeout_sec` (the pool's).
    pub fn timeout(&self, tool: &str) -> Option<Duration> {
        self.tools.get(tool).and_then(|t| t.timeout)
    }

    /// The per-tool output cap, if configured.
    pub fn max_output_chars(&self, tool: &str) -> Option<usize> {
        self.tools
            .get(tool)
            .and_then(|t| t.max_output_chars)
            .or(self.max_output_chars)
    }

    /// The argument that holds a shell command: `command_arg`, else `command` for the built-in
    /// shell server's `run` (so a config that forgot it still gets commands parsed).
    pub fn command_arg(&self, server: &str, tool: &str) -> Option<String> {
        if let Some(arg) = self.tools.get(tool).and_then(|t| t.command_arg.clone()) {
            return Some(arg);
        }
        let shell =
            self.builtin == Some(Builtin::Shell) || (self.builtin.is_none() && server == "shell");
        (shell && tool == "run").then(|| "command".to_owned())
    }

    /// `write_file` / `edit_file` of the built-in fs server: what `accept-edits` allows.
    pub fn is_edit(&self, server: &str, tool: &str) -> bool {
        let fs = self.builtin == Some(Builtin::Fs) || (self.builtin.is_none() && server == "fs");
        fs && matches!(tool, "write_file" | "edit_file")
    }
}

/// Everything the gateway is configured with.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    pub workspace: Workspace,
    pub mode: PermissionMode,
    /// The rules, with their origins.
    pub permissions: Permissions,
    /// By server name; a server missing here is untrusted with default settings.
    pub servers: BTreeMap<String, ServerPolicy>,
    /// The output cap for tools without `max_output_chars`.
    pub max_output_chars: usize,
    /// `$TERN_HOME/audit.jsonl`.
    pub audit_log: PathBuf,
    /// `$TERN_HOME/runs/` (spill files go to `<run_id>/spill/`).
    pub runs_dir: PathBuf,
    /// Where "always" answers are saved: the user's `config.toml`.
    pub user_config: PathBuf,
    /// Values to redact wherever they appear (configured API keys and tokens).
    pub secrets: Vec<Secret>,
}

impl GatewaySettings {
    /// Defaults for a workspace: no rules, default mode, files under `workspace.tern_home`.
    pub fn new(workspace: Workspace) -> Self {
        let home = workspace.tern_home.clone();
        Self {
            workspace,
            mode: PermissionMode::Default,
            permissions: Permissions::default(),
            servers: BTreeMap::new(),
            max_output_chars: DEFAULT_MAX_OUTPUT_CHARS,
            audit_log: home.join("audit.jsonl"),
            runs_dir: home.join("runs"),
            user_config: home.join("config.toml"),
            secrets: Vec::new(),
        }
    }

    /// From the loaded config. `cwd` and `roots` are where the run works (the pool's roots);
    /// `secrets` are the values to redact (e.g. the model API key and bearer tokens).
    pub fn from_config(
        config: &Config,
        paths: &ConfigPaths,
        cwd: PathBuf,
        roots: Vec<PathBuf>,
        home: Option<PathBuf>,
        secrets: Vec<Secret>,
    ) -> Self {
        let workspace = Workspace {
            cwd,
            roots,
            home,
            tern_home: paths.tern_home.clone(),
        };
        let servers = config
            .mcp_servers
            .iter()
            .map(|(name, server)| {
                let builtin = match &server.transport {
                    Transport::Stdio {
                        launch: Launch::Builtin(b),
                        ..
                    } => Some(*b),
                    _ => None,
                };
                let policy = ServerPolicy {
                    // Config only holds the defaults, the user's files, flags and trusted
                    // projects, so every server in it is trusted.
                    trusted: true,
                    builtin,
                    tools: server.tools.clone(),
                    max_output_chars: server.max_output_chars,
                };
                (name.clone(), policy)
            })
            .collect();
        Self {
            mode: config.permissions.mode,
            permissions: config.permissions.clone(),
            servers,
            audit_log: paths.audit_log(),
            runs_dir: paths.runs_dir(),
            user_config: paths.user_config.clone(),
            secrets,
            ..Self::new(workspace)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_args_and_edit_tools() {
        let shell = ServerPolicy {
            builtin: Some(Builtin::Shell),
            ..Default::default()
        };
        assert_eq!(shell.command_arg("sh", "run").as_deref(), Some("command"));
        assert_eq!(shell.command_arg("sh", "other"), None);
        let mut custom = ServerPolicy::default();
        custom.tools.insert(
            "exec".into(),
            ToolSettings {
                command_arg: Some("cmd".into()),
                ..Default::default()
            },
        );
        assert_eq!(custom.command_arg("x", "exec").as_deref(), Some("cmd"));
        let fs = ServerPolicy {
            builtin: Some(Builtin::Fs),
            ..Default::default()
        };
        assert!(fs.is_edit("files", "write_file") && fs.is_edit("files", "edit_file"));
        assert!(!fs.is_edit("files", "read_file"));
        assert!(!ServerPolicy::default().is_edit("other", "write_file"));
    }
}
