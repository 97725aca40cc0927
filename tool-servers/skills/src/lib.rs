//! tern-skills: an MCP server (stdio) for Agent Skills — folders holding a `SKILL.md`
//! (instructions with YAML frontmatter) and the scripts and references it uses, in the open
//! format of agentskills.io that Claude Code, Codex, Gemini CLI and others read.
//!
//! The server finds the skills below the skills folders it is given ([`discover`]), checks
//! each `SKILL.md` against the specification ([`frontmatter`]) and offers them the way the
//! format intends — progressive disclosure:
//!
//! 1. the listing (name and description of each skill, never the body) is the server's
//!    `instructions`, in the `initialize` result and in `server/discover` alike, for a host to
//!    put in its system prompt; with `--listing both` (the default) it is also in the
//!    description of `load`, whose `name` is then an enum of the skills, for any other client;
//! 2. `load {name}` returns the body, the skill's absolute folder (so the model can run its
//!    scripts with a shell tool, under that tool's sandbox) and the list of its files;
//! 3. `read_file {skill, path}` reads one of those files, confined to the skill's folder
//!    (component by component from a directory handle: no `..`, no absolute path, no symlink
//!    leads out; see [`files`]); `list` reports every skill with its source and every skill
//!    skipped, with file, line and what is wrong.
//!
//! A broken skill never breaks the server: it is skipped, reported by `list`, logged to stderr
//! and by `--check`. With no skill at all the server offers no tool and no instructions, so it
//! costs a model nothing. Every tool is read-only.
//!
//! ## What a host can rely on
//!
//! - `load`'s result `_meta["tern/skill"]` is `{"name", "directory", "allowed_tools"}`;
//!   `allowed-tools` is reported, never enforced here.
//! - The deny globs a host sends in the request `_meta["tern/deny_paths"]` (as tern does to
//!   every trusted server) are enforced like tern-fs does: `read_file` refuses a denied path
//!   ("denied by the host's rule"), `load` leaves denied files out of its list.
//! - `list`'s `structuredContent` is `{"skills": [...], "problems": [{"file", "line",
//!   "severity", "message"}], "searched": [{"dir", "scope", "exists"}]}`.
//! - Skills are found once, at startup; a restart sees new ones.
//!
//! ```no_run
//! use clap::Parser;
//! # async fn demo() -> Result<(), tern_tool_common::ServeError> {
//! let args = tern_skills::Args::parse_from([
//!     "tern-skills", "--project", ".", "--user-dir", "/home/me/.agents/skills",
//! ]);
//! tern_skills::run(args).await // serves MCP on stdin/stdout until the client hangs up
//! # }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod deny;
pub mod discover;
pub mod files;
pub mod frontmatter;
mod render;
mod server;

use std::path::PathBuf;

pub use deny::DENY_META_KEY;
pub use discover::{Catalog, Notice, Scope, Skill, Source};
pub use server::{Listing, SKILL_META, SkillsServer};

/// Command-line flags, shared by `tern-skills` and `tern serve skills`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "tern-skills",
    version,
    about = "tern's Agent Skills MCP server over stdio"
)]
pub struct Args {
    /// A project whose skills to offer, from DIR/.agents/skills, DIR/.tern/skills and
    /// DIR/.claude/skills (repeatable). Its skills win over the user's on a name collision.
    /// Give only a project the user trusts: its skills become instructions to the model.
    #[arg(long = "project", value_name = "DIR")]
    pub projects: Vec<PathBuf>,
    /// A folder of the user's skills, each a subfolder holding a SKILL.md (repeatable; e.g.
    /// ~/.agents/skills, $TERN_HOME/skills, ~/.claude/skills). Earlier folders win a collision.
    #[arg(long = "user-dir", value_name = "DIR")]
    pub user_dirs: Vec<PathBuf>,
    /// Where the listing of skills goes: `both` (the server's instructions and the
    /// description of `load`) or `instructions` (keeps `load`'s definition the same whatever
    /// skills exist, for a host that pins tool definitions).
    #[arg(long, value_enum, value_name = "WHERE", default_value_t = Listing::Both)]
    pub listing: Listing,
    /// Print the skills found and every problem, then exit: 0 when no skill was skipped, 1
    /// otherwise.
    #[arg(long)]
    pub check: bool,
}

impl Args {
    /// The skills folders to search, in order of precedence: the projects', then the user's;
    /// absolute, so every path reported names the file wherever it is read.
    pub fn sources(&self) -> Vec<Source> {
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let mut sources: Vec<Source> = self
            .projects
            .iter()
            .flat_map(|p| discover::project_sources(&absolute(p)))
            .collect();
        sources.extend(self.user_dirs.iter().map(|dir| Source {
            dir: absolute(dir),
            scope: Scope::User,
        }));
        sources
    }
}

/// The runtime tern-skills runs on (the standalone binary and `tern serve skills` alike).
///
/// One thread: every call reads one small file or lists one folder.
pub const RUNTIME: tern_tool_common::Runtime = tern_tool_common::Runtime::CurrentThread;

/// Finds the skills `args` names and logs every problem (stderr: a host keeps it in the
/// server's log).
pub fn discover(args: &Args) -> Catalog {
    let catalog = discover::discover(&args.sources());
    for notice in &catalog.notices {
        tracing::warn!("{notice}");
    }
    tracing::debug!(
        skills = catalog.skills.len(),
        "tern-skills found its skills"
    );
    catalog
}

/// `--check`: the report to print, and whether every skill found is usable.
pub fn check(args: &Args) -> (String, bool) {
    let catalog = discover::discover(&args.sources());
    (render::report(&catalog), !catalog.has_errors())
}

/// Runs the server over stdio until the client disconnects.
pub async fn run(args: Args) -> Result<(), tern_tool_common::ServeError> {
    let catalog = discover(&args);
    tern_tool_common::serve_stdio(SkillsServer::new(catalog, args.listing)).await
}
