//! What the gateway needs from config, as a value (config is passed down, never read globally),
//! and the one function that decides each fact about a tool from it.

use std::{collections::BTreeMap, path::PathBuf};

use tern_config::{
    Builtin, Config, ConfigPaths, PermissionMode, Permissions, ServerConfig, ToolLimits,
};
use tern_mcp::ToolEntry;

use crate::paths::PathScope;

/// What the gateway knows about one tool when it decides a call: every fact in one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPolicy {
    /// Timeout and output cap ([`ServerConfig::limits`]).
    pub limits: ToolLimits,
    /// Its annotations (`readOnlyHint`) and `_meta` self-description may allow calls without
    /// asking: built-in servers, and servers configured with `trust_annotations = true`.
    pub trusted: bool,
    /// The argument holding a shell command: config's `command_arg`, else the tool's `_meta`.
    pub command_arg: Option<String>,
    /// It writes files at its path arguments (what `accept-edits` allows): config's
    /// `edits_files`, else the tool's `_meta` when the server is trusted.
    pub edits_files: bool,
    /// The built-in server it comes from (none for a server of the user's): plan mode offers
    /// the todo and plan servers' tools, and `plan__exit` only in plan mode.
    pub builtin: Option<Builtin>,
}

impl ToolPolicy {
    /// Plan mode lets it through: a tool a trusted server marks read-only, or one of the
    /// built-in todo and plan servers' (the model's own notes and its way out of plan mode).
    pub fn plannable(&self, entry: &ToolEntry) -> bool {
        matches!(self.builtin, Some(Builtin::Todo | Builtin::Plan))
            || (self.trusted && entry.def.annotations.read_only == Some(true))
    }

    /// Offered to the model under `mode`: in plan mode only [`Self::plannable`] tools; in
    /// read-only mode only tools annotated read-only (the permission stage denies every other
    /// whatever the rules say, so offering one only spends the model's steps on a refusal);
    /// in any other mode everything but the plan server's (there is no plan to hand over).
    pub fn offered_in(&self, mode: PermissionMode, entry: &ToolEntry) -> bool {
        match mode {
            PermissionMode::Plan => self.plannable(entry),
            PermissionMode::ReadOnly => {
                self.builtin != Some(Builtin::Plan) && entry.def.annotations.read_only == Some(true)
            }
            _ => self.builtin != Some(Builtin::Plan),
        }
    }
}

/// The project config an "always in this project" answer is saved to, and how its trust is kept.
#[derive(Debug, Clone)]
pub struct ProjectRules {
    /// The project's `.tern/config.toml` ([`ConfigPaths::rules_target`]).
    pub config: PathBuf,
    /// The project directory whose trust covers that file.
    pub project_dir: PathBuf,
    /// `$TERN_HOME/trusted.json`.
    pub trust_file: PathBuf,
}

/// Everything the gateway is configured with.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    pub scope: PathScope,
    pub mode: PermissionMode,
    /// The rules, with their origins.
    pub permissions: Permissions,
    /// By server name; a server missing here is untrusted with default limits.
    pub servers: BTreeMap<String, ServerConfig>,
    /// `$TERN_HOME/runs/` (spill files go to `<run_id>/spill/`).
    pub runs_dir: PathBuf,
    /// Where "always" answers are saved: the user's `config.toml`.
    pub user_config: PathBuf,
    /// Where "always in this project" answers are saved; `None`: nowhere (tests).
    pub project_config: Option<ProjectRules>,
    /// When set, only tools whose `server__tool` name matches are callable in this run (an
    /// agent profile's `tools`); a call to any other is denied by the permission stage with
    /// rule `profile`, so it has its decision event and audit line like every call.
    pub tool_allow: Option<globset::GlobSet>,
    /// `[lsp] after_edit`: append the new errors of a file after a successful edit.
    pub after_edit: tern_config::AfterEdit,
    /// `[lsp] after_edit_wait_ms`.
    pub after_edit_wait_ms: u64,
    /// The managed policy's file, when there is one: an ask from one of its rules is the
    /// administrator's, so a hook's `allow` does not answer it (only a person does).
    pub managed_policy: Option<PathBuf>,
    /// `[skills] honor_allowed_tools`: a skill loaded in a turn narrows the rest of the turn to
    /// its `allowed-tools` (see `turn_rules`).
    pub honor_skill_tools: bool,
}

impl GatewaySettings {
    /// Defaults for a scope: no rules, no servers, default mode, files under `scope.tern_home`.
    pub fn new(scope: PathScope) -> Self {
        let home = scope.tern_home.clone();
        Self {
            scope,
            mode: PermissionMode::Default,
            permissions: Permissions::default(),
            servers: BTreeMap::new(),
            runs_dir: home.join("runs"),
            user_config: home.join("config.toml"),
            project_config: None,
            tool_allow: None,
            after_edit: tern_config::AfterEdit::Errors,
            after_edit_wait_ms: tern_config::LspSection::default().after_edit_wait_ms,
            managed_policy: None,
            honor_skill_tools: false,
        }
    }

    /// From the loaded config. `cwd` and `roots` are where the run works (the pool's roots).
    pub fn from_config(
        config: &Config,
        paths: &ConfigPaths,
        cwd: PathBuf,
        roots: Vec<PathBuf>,
        home: Option<PathBuf>,
    ) -> Self {
        let (config_file, project_dir) = paths.rules_target(&cwd);
        let project_config = Some(ProjectRules {
            config: config_file,
            project_dir,
            trust_file: paths.trust_file(),
        });
        let scope = PathScope {
            cwd,
            roots,
            home,
            tern_home: paths.tern_home.clone(),
        };
        Self {
            mode: config.permissions.mode,
            permissions: config.permissions.clone(),
            servers: config.mcp_servers.clone(),
            runs_dir: paths.runs_dir(),
            user_config: paths.user_config.clone(),
            after_edit: config.lsp.after_edit,
            after_edit_wait_ms: config.lsp.after_edit_wait_ms,
            project_config,
            managed_policy: config.managed.as_ref().map(|m| m.path.clone()),
            honor_skill_tools: config.skills.honor_allowed_tools,
            ..Self::new(scope)
        }
    }

    /// The policy of one table entry. The server's name plays no part: only its configuration
    /// and what the (trusted) tool declares about itself.
    pub fn policy(&self, entry: &ToolEntry) -> ToolPolicy {
        let server = self.servers.get(&entry.server);
        let settings = server.and_then(|s| s.tools.get(&entry.tool));
        let trusted = server.is_some_and(|s| s.trust_annotations);
        ToolPolicy {
            limits: server.map_or_else(ToolLimits::default, |s| s.limits(&entry.tool)),
            trusted,
            command_arg: settings
                .and_then(|t| t.command_arg.clone())
                .or_else(|| entry.def.command_arg.clone()),
            edits_files: settings
                .and_then(|t| t.edits_files)
                .unwrap_or(trusted && entry.def.edits_files),
            builtin: server.and_then(ServerConfig::builtin),
        }
    }
}

#[cfg(test)]
mod tests {
    use tern_mcp::ToolDef;

    use super::*;

    fn entry(server: &str, tool: &str, command_arg: Option<&str>, edits: bool) -> ToolEntry {
        ToolEntry {
            name: format!("{server}__{tool}"),
            server: server.into(),
            tool: tool.into(),
            def: ToolDef {
                name: tool.into(),
                title: None,
                description: String::new(),
                input_schema: serde_json::json!({"type": "object"}),
                output_schema: None,
                annotations: Default::default(),
                command_arg: command_arg.map(Into::into),
                edits_files: edits,
            },
        }
    }

    fn settings(toml: &str) -> GatewaySettings {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".tern")).unwrap();
        std::fs::write(home.join(".tern/config.toml"), toml).unwrap();
        let env = |k: &str| (k == "HOME").then(|| home.display().to_string());
        let paths = ConfigPaths::resolve(dir.path(), &env).unwrap();
        let config = Config::load(&paths, &Default::default(), &env).unwrap();
        GatewaySettings::from_config(&config, &paths, dir.path().into(), vec![], None)
    }

    #[test]
    fn facts_come_from_config_and_trusted_self_description_never_from_names() {
        let s = settings(
            "[mcp_servers.fs]\ncommand = \"third-party-fs\"\n\
             [mcp_servers.mine]\ncommand = \"m\"\ntrust_annotations = true\n\
             [mcp_servers.mine.tools.exec]\ncommand_arg = \"cmd\"\ntimeout_sec = 7\n",
        );
        // A third-party server *named* fs declaring an edit tool is not trusted to say so.
        let p = s.policy(&entry("fs", "write_file", None, true));
        assert!(!p.trusted && !p.edits_files);
        let p = s.policy(&entry("mine", "write", None, true));
        assert!(p.trusted && p.edits_files);
        let p = s.policy(&entry("mine", "exec", None, false));
        assert_eq!(p.command_arg.as_deref(), Some("cmd"));
        assert_eq!(p.limits.timeout, std::time::Duration::from_secs(7));
        // A tool's own declaration of its command argument counts for any server.
        let p = s.policy(&entry("fs", "run", Some("command"), false));
        assert_eq!(p.command_arg.as_deref(), Some("command"));
        // Unknown servers: untrusted, default limits.
        let p = s.policy(&entry("ghost", "x", None, true));
        assert_eq!(p.limits, ToolLimits::default());
        assert!(!p.trusted && !p.edits_files);
    }

    #[test]
    fn built_in_servers_are_trusted_and_declare_their_edit_tools() {
        let s = settings("");
        let p = s.policy(&entry("fs", "edit_file", None, true));
        assert!(p.trusted && p.edits_files);
        let p = s.policy(&entry("fs", "read_file", None, false));
        assert!(p.trusted && !p.edits_files);
    }
}
