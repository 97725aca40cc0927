//! Command-line interface: the `tern` binary's arguments, and how they become config.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use tern_config::{LoadOptions, PermissionMode, Provider, RuleList};

/// tern — a terminal AI agent whose every capability is an MCP server.
///
/// Exit codes: 0 success, 1 failure (a failed run, a failing server), 2 usage or
/// config error, 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "tern", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Model name for the REPL (`tern -m NAME`), as the provider spells it; `tern run` and
    /// `tern resume` take it too.
    #[arg(short = 'm', long = "model", value_name = "NAME")]
    pub model: Option<String>,
    /// Without a command, tern starts the interactive REPL.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every command understands.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Work in DIR instead of the current directory.
    #[arg(short = 'C', long = "cd", value_name = "DIR", global = true)]
    pub cd: Option<PathBuf>,
    /// An extra config file, above the user and project configs.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Override one config key (TOML value), e.g. `-c mcp_servers.web.enabled=false`.
    #[arg(short = 'c', value_name = "KEY=VALUE", global = true)]
    pub overrides: Vec<String>,
    /// Permission mode for this run.
    #[arg(long, value_enum, global = true)]
    pub mode: Option<ModeArg>,
    /// Allow tool calls matching RULE, e.g. `--allow 'shell__run(cargo test *)'`.
    #[arg(long = "allow", value_name = "RULE", global = true)]
    pub allow: Vec<String>,
    /// Always ask before tool calls matching RULE.
    #[arg(long = "ask", value_name = "RULE", global = true)]
    pub ask: Vec<String>,
    /// Deny tool calls matching RULE (a deny always wins).
    #[arg(long = "deny", value_name = "RULE", global = true)]
    pub deny: Vec<String>,
}

impl GlobalArgs {
    /// The config layers these flags add (`--config`, `-c`, rules, `--mode`).
    pub fn load_options(&self) -> LoadOptions {
        let mut rules = Vec::new();
        for (list, items) in [
            (RuleList::Allow, &self.allow),
            (RuleList::Ask, &self.ask),
            (RuleList::Deny, &self.deny),
        ] {
            rules.extend(items.iter().map(|r| (list, r.clone())));
        }
        LoadOptions {
            config_file: self.config.clone(),
            overrides: self.overrides.clone(),
            rules,
            mode: self.mode.map(|m| match m {
                ModeArg::Default => PermissionMode::Default,
                ModeArg::AcceptEdits => PermissionMode::AcceptEdits,
                ModeArg::ReadOnly => PermissionMode::ReadOnly,
                ModeArg::Yolo => PermissionMode::Yolo,
                ModeArg::Plan => PermissionMode::Plan,
            }),
            ..LoadOptions::default()
        }
    }
}

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// Ask before anything not marked read-only by a trusted server.
    Default,
    /// Also allow file edits inside the roots.
    AcceptEdits,
    /// Deny every tool not marked read-only.
    ReadOnly,
    /// Allow everything no rule denies.
    Yolo,
    /// Plan first: only read-only tools and the todo list; the model ends with `plan__exit`
    /// and nothing is written.
    Plan,
}

/// `tern eval convert`.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Convert tern-format tasks (one, or a suite) into Harbor's format, into DEST.
    Convert {
        /// A tern task directory, or a suite of them.
        src: PathBuf,
        /// The new directory to write.
        dest: PathBuf,
    },
}

/// `tern eval --export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// SWE-bench predictions JSONL, the patch from each workspace's diff.
    Swebench,
}

/// The run flags of `tern eval` (its `--model` may be repeated, so it is its own).
#[derive(Debug, Clone, Default, Args)]
pub struct EvalFlags {
    /// `anthropic` or `openai` (overrides `[model] provider`).
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,
    /// Model turns before a run stops, unless the task sets its own.
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// The OS sandbox of shell commands (overrides `[sandbox] mode`).
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<tern_sandbox::Mode>,
}

impl EvalFlags {
    /// As `tern run`'s flags, with one model.
    pub fn run_flags(&self, model: Option<String>) -> RunFlags {
        RunFlags {
            model,
            provider: self.provider,
            max_steps: self.max_steps,
            sandbox: self.sandbox,
            accept_elicitation_defaults: false,
        }
    }
}

/// Flags of `tern run` and the REPL.
#[derive(Debug, Clone, Default, Args)]
pub struct RunFlags {
    /// Model name as the provider spells it (overrides `[model] name`).
    #[arg(short = 'm', long)]
    pub model: Option<String>,
    /// `anthropic` or `openai` (overrides `[model] provider`).
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,
    /// Model turns before the run stops (default: `[agent] max_steps`, 50).
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// The OS sandbox of shell commands (overrides `[sandbox] mode`): `read-only`,
    /// `workspace-write` (the default: write only in the workspace and TMPDIR) or `full-access`
    /// (no sandbox).
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<tern_sandbox::Mode>,
    /// Accept a server's form elicitation with the defaults it declares, instead of declining
    /// (nobody is asked in a headless run; a request without defaults is still declined).
    #[arg(long)]
    pub accept_elicitation_defaults: bool,
}

impl RunFlags {
    /// Lays these flags over the loaded config: they are the topmost layer below the managed
    /// policy. The notice, when the policy lowered `--sandbox`.
    pub fn apply(&self, config: &mut tern_config::Config) -> Option<tern_config::Notice> {
        if let Some(model) = &self.model {
            config.model.name = Some(model.clone());
        }
        if let Some(provider) = self.provider {
            config.model.provider = Some(match provider {
                ProviderArg::Anthropic => Provider::Anthropic,
                ProviderArg::Openai => Provider::Openai,
            });
        }
        if let Some(max_steps) = self.max_steps {
            config.agent.max_steps = max_steps;
        }
        if self.accept_elicitation_defaults {
            config.agent.accept_elicitation_defaults = true;
        }
        self.sandbox.and_then(|mode| config.bound_sandbox(mode))
    }
}

/// `--provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderArg {
    Anthropic,
    Openai,
}

/// `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Streamed text for people.
    Text,
    /// Only the events, one JSON object per line.
    Jsonl,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one goal headless and exit (goal from the argument, or stdin).
    ///
    /// Tool calls that would need approval are denied, and the result says which
    /// `--allow` rule would permit them. Exit codes: 0 success, 1 failed run or
    /// max_steps, 2 usage/config error, 130 interrupted.
    Run {
        /// What to do. `-` or nothing reads it from stdin.
        #[arg(conflicts_with = "goal_flag")]
        goal: Option<String>,
        /// The goal, as a flag (the spelling other agent CLIs' scripts use).
        #[arg(long = "goal", value_name = "TEXT")]
        goal_flag: Option<String>,
        /// `text` for people, `jsonl` for scripts (stdout is then only events).
        #[arg(long, value_enum, default_value = "text")]
        output_format: OutputFormat,
        /// Continue the most recent session.
        #[arg(long = "continue")]
        continue_session: bool,
        /// Attach an image (PNG, JPEG, GIF or WebP, told by its content) to the goal; repeat
        /// for more. A file in the workspace is read through the fs server like any read.
        #[arg(long = "image", value_name = "FILE")]
        images: Vec<std::path::PathBuf>,
        #[command(flatten)]
        flags: RunFlags,
    },
    /// Be an Agent Client Protocol agent over stdio, for editors (Zed, JetBrains, Neovim…).
    ///
    /// Speaks ACP version 1 (JSON-RPC, one message per line) on stdin/stdout; logs go to
    /// stderr. Each editor session is a tern session in the folder the editor opened, with
    /// the editor answering tern's permission questions.
    Acp {
        #[command(flatten)]
        flags: RunFlags,
    },
    /// Run one of tern's built-in MCP tool servers over stdio (or streamable HTTP with
    /// `--http ADDR`).
    ///
    /// Identical to the standalone `tern-fs`, `tern-shell` and `tern-web` binaries;
    /// other MCP clients can launch `tern serve fs --root DIR` directly, or connect to
    /// `tern serve fs --root DIR --http 127.0.0.1:8765` at `http://127.0.0.1:8765/mcp`.
    Serve {
        #[command(subcommand)]
        server: ServeCommand,
    },
    /// Manage and inspect the configured MCP servers.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Show the merged tool table the model sees.
    Tools {
        /// Stable JSON for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Continue a saved session in the REPL. Without an id, on a terminal: pick one of this
    /// project's sessions (`--all`: any project's); otherwise the most recent one.
    Resume {
        /// The session id (`$TERN_HOME/sessions/<id>.jsonl`).
        session_id: Option<String>,
        /// Start a new session instead (what plain `tern` does).
        #[arg(skip)]
        fresh: bool,
        /// Without an id: choose among every project's sessions, not only this directory's.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        flags: RunFlags,
    },
    /// Trust this project's `.tern/config.toml` (until it changes).
    Trust,
    /// Hooks: commands run at fixed points of a run, in Claude Code's protocol.
    Hooks {
        #[command(subcommand)]
        command: HooksCommand,
    },
    /// Plugins: skills, commands, hooks and MCP servers installed together, from a folder in
    /// Claude Code's or Codex's plugin layout.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// List recent runs, newest first.
    Runs {
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Put back the files and/or the conversation of a session as they were before one of its
    /// turns (from the checkpoints recorded before each turn), or undo the last rewind.
    ///
    /// Without `--to` or `--undo`, lists the session's turns with the files each changed.
    /// Exit codes: 0 done, 1 the rewind failed, 2 usage error.
    Rewind {
        /// The session id (default: the most recent session).
        session_id: Option<String>,
        /// The point to go back to: TURN (the state before that turn) or TURN.CALL (before that
        /// shell call of the turn; files only), numbers from the listing.
        #[arg(long, value_name = "TURN[.CALL]", conflicts_with = "undo")]
        to: Option<crate::agent::checkpoints::Point>,
        /// Rewind the files only.
        #[arg(long, conflicts_with = "conversation")]
        code: bool,
        /// Rewind the conversation only.
        #[arg(long)]
        conversation: bool,
        /// Undo the last rewind (files and conversation as it found them).
        #[arg(long)]
        undo: bool,
    },
    /// Show a run's events as a readable timeline.
    Trace {
        /// The run id (a unique prefix is enough), from `tern runs`.
        run_id: String,
        /// `text` (a timeline) or `atif` (an ATIF trajectory, JSON, as Harbor reads it).
        #[arg(long, value_enum, default_value = "text")]
        format: crate::commands::runs::TraceFormat,
    },
    /// Watch tern fix a bug: a recorded session, replayed offline (no API key needed).
    ///
    /// The tool calls run for real in a fresh copy of a small project, which is left in a temp
    /// directory (its path is printed at the end).
    Demo {
        /// Playback speed: 2 plays twice as fast.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
    },
    /// Run a suite of tasks and measure the agent: pass/fail, pass@1 and pass^k, steps, tool
    /// calls, tokens, cost.
    ///
    /// DIR holds task directories (or is one), in tern's format (`task.toml` with a goal and a
    /// check command, the fixture project, optionally a recording) or Harbor's (`task.toml`,
    /// `instruction.md`, `environment/`, `tests/test.sh`). Each trial runs in a fresh copy with
    /// the configured model, with `--replay` from its recording (offline), or with `--oracle`
    /// from the task's reference solution. Every trial's logs, with the run as an ATIF
    /// trajectory, go to `$TERN_HOME/evals/JOB/`. Exit codes: 0 all passed (with `--baseline`:
    /// no regression), 1 otherwise, 2 usage error.
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Eval {
        #[command(subcommand)]
        command: Option<EvalCommand>,
        /// The suite directory, or one task directory.
        #[arg(required = true)]
        dir: Option<PathBuf>,
        /// Re-drive each task's shipped recording instead of calling the model.
        #[arg(long, conflicts_with = "oracle")]
        replay: bool,
        /// Run each Harbor task's `solution/solve.sh` instead of the agent (checks the tasks).
        #[arg(long)]
        oracle: bool,
        /// Run Harbor tasks that name a container on this machine, in a copy of `environment/`.
        #[arg(long)]
        local: bool,
        /// Trials to run at once.
        #[arg(short = 'j', long = "jobs", default_value_t = 1, value_name = "N")]
        jobs: usize,
        /// Run every task K times: the table shows pass@1 and pass^K (all K passed).
        #[arg(long, default_value_t = 1, value_name = "K")]
        repeat: u32,
        /// Write the JSON report to FILE.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// Compare with an earlier report; exit 1 on a regression.
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// Tokens may grow this many percent over the baseline before it is a regression.
        #[arg(long, default_value_t = 10.0, value_name = "PCT")]
        token_tolerance: f64,
        /// Steps may grow this many percent over the baseline before it is a regression.
        #[arg(long, default_value_t = 10.0, value_name = "PCT")]
        step_tolerance: f64,
        /// The model; give it more than once to compare models side by side.
        #[arg(long, value_name = "MODEL")]
        model: Vec<String>,
        /// A config file for one more configuration to compare (laid over the others).
        #[arg(long, value_name = "FILE")]
        variant: Vec<PathBuf>,
        /// Where the trials' directories go (default `$TERN_HOME/evals`).
        #[arg(long, value_name = "DIR")]
        jobs_dir: Option<PathBuf>,
        /// Also write predictions: `swebench` (instance_id, model_name_or_path, model_patch).
        #[arg(long, value_enum, value_name = "FORMAT")]
        export: Option<ExportFormat>,
        #[command(flatten)]
        flags: EvalFlags,
    },
    /// Re-drive a recorded run: model turns from the recording, tool calls for real.
    ///
    /// Works in a scratch copy of the recorded run's directory as it is now (or of
    /// `--workspace DIR`), reports per call whether the result matches the recording and ends
    /// with a divergence summary. Permission rules of the current config apply; what they leave
    /// to a question is answered with the recorded decision (nothing is asked). Exit codes:
    /// 0 identical (times, ids and durations ignored), 1 diverged, 2 usage error.
    Replay {
        /// A run id (a unique prefix is enough) or an events.jsonl file.
        #[arg(value_name = "RUN_ID|FILE")]
        source: String,
        /// Run in the directory itself instead of a scratch copy (its files change).
        #[arg(long)]
        in_place: bool,
        /// Start from this directory instead of the recorded run's.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Keep the scratch copy and print where it is.
        #[arg(long, conflicts_with = "in_place")]
        keep: bool,
        /// `text` for people, `jsonl` for scripts (stdout is then only events).
        #[arg(long, value_enum, default_value = "text")]
        output_format: OutputFormat,
    },
    /// Run one command under the shell's OS sandbox, to see what it allows.
    ///
    /// The policy is `[sandbox]` from the config (default: write only in this directory and
    /// TMPDIR, no network, `.git/hooks`, `.git/config`, `.tern` and `$TERN_HOME` read-only),
    /// changed by the flags. Exits with the command's status (128 + N when killed by signal N).
    Sandbox {
        /// Override `[sandbox] mode`.
        #[arg(long, value_enum, value_name = "MODE")]
        sandbox: Option<tern_sandbox::Mode>,
        /// Override `[sandbox] network`.
        #[arg(long, value_enum)]
        network: Option<tern_sandbox::Network>,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<std::ffi::OsString>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `tern plugin …`
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Install a plugin and enable it, after showing what it adds.
    ///
    /// SOURCE is a plugin folder, a git URL (cloned with the system `git`) or
    /// MARKETPLACE/PLUGIN from an added marketplace. Without a terminal to ask on, `--yes` is
    /// required.
    Add {
        source: String,
        /// Enable it without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Show the installed plugins and what each adds.
    List,
    /// Uninstall a plugin: its folder and everything it added go.
    Remove { name: String },
    /// Fetch a plugin again from where it was installed from.
    Update {
        name: String,
        /// Enable the new version without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Turn an installed plugin back on, after showing what it adds.
    Enable {
        name: String,
        /// Enable it without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Turn a plugin off (it stays installed): nothing it adds is loaded.
    Disable { name: String },
    /// Plugin marketplaces: folders or repositories listing plugins by name.
    Marketplace {
        #[command(subcommand)]
        command: MarketplaceCommand,
    },
}

/// `tern plugin marketplace …`
#[derive(Debug, Subcommand)]
pub enum MarketplaceCommand {
    /// Add a marketplace (a folder or git URL with `.claude-plugin/marketplace.json`).
    Add { source: String },
    /// Show the added marketplaces and their plugins.
    List,
    /// Forget a marketplace (plugins installed from it stay).
    Remove { name: String },
}

/// `tern hooks …`
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Show the hooks in effect, by event, with where each is configured.
    List,
    /// Add the hooks of a Claude Code settings file (`.claude/settings.json`) to a config.
    ///
    /// A file inside the project goes to the project's `.tern/config.toml` (which then needs
    /// `tern trust` again), any other to your config.toml.
    Import {
        /// The settings file with a `hooks` object.
        file: PathBuf,
        /// Write to your config.toml even for a project's settings.
        #[arg(long)]
        user: bool,
    },
}

/// `tern mcp …`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every server and show its status.
    List {
        /// Stable JSON for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Start servers and lint them: schemas, descriptions, names, token cost.
    /// Exits 1 when a server fails.
    Doctor {
        /// Only this server.
        name: Option<String>,
        /// Stable JSON for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Add the servers of a Claude/Cursor-style `.mcp.json` to your config.toml.
    Import {
        /// The `.mcp.json` file.
        file: PathBuf,
    },
    /// Accept the current tool definitions of a server whose tools changed.
    Approve {
        /// The server.
        name: String,
    },
    /// Authorize tern for an HTTP server that asks for OAuth, and store the tokens.
    ///
    /// Prints the authorization URL and opens it (`TERN_OAUTH_BROWSER`: unset = the system
    /// browser, `none` = print only, `fetch` = tern fetches it itself, else a command the URL is
    /// appended to), then waits up to five minutes for the redirect to a loopback port.
    Login {
        /// The server.
        name: String,
    },
    /// Forget (and revoke, where the server offers it) what `tern mcp login` stored.
    Logout {
        /// The server.
        name: String,
    },
}

/// The built-in servers `tern serve` can run.
#[derive(Debug, Subcommand)]
pub enum ServeCommand {
    /// Files: read, write, edit, list, glob, grep — confined to the roots.
    Fs(tern_fs::Args),
    /// Run shell commands in a root with timeouts, caps and a clean environment.
    Shell(tern_shell::Args),
    /// Fetch web pages as readable text, with an SSRF guard.
    Web(tern_web::Args),
    /// Diagnostics, definition, references, hover and symbols from the language servers on
    /// PATH (or `--server LANG=COMMAND`); offers no tools when none is found.
    Lsp(tern_lsp::Args),
    /// Search the tools tern deferred (tern starts this one itself when needed).
    Catalog(tern_catalog::Args),
    /// The session's todo list: `write` replaces it, `read` returns it.
    Todo(tern_todo::Args),
    /// Plan mode's `exit` tool: the model hands its finished plan to the user for approval.
    Plan(tern_plan::Args),
    /// Agent Skills: list `SKILL.md` folders by name and description, load one, read its files.
    Skills(tern_skills::Args),
    /// tern itself as a tool: `run` hands a goal to a sub-agent and returns its answer.
    ///
    /// Sub-agents are headless and read-only unless `--mode` says otherwise; they work inside
    /// the roots (`--root`, else the client's, else this directory). The global `--config`,
    /// `-c`, `--allow`/`--deny` apply to every sub-agent.
    Agent(crate::serve_agent::Args),
}
