//! The slash commands tern answers itself, as one table: `/help`, Tab completion and the REPL's
//! dispatch all read it (and editors get it over ACP), so a command cannot be listed and not
//! handled, or handled and not listed.

/// A command tern answers itself; the REPL's dispatch matches on it exhaustively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommand {
    Help,
    Tools,
    Mcp,
    Cost,
    Expand,
    Context,
    Compact,
    Clear,
    Todo,
    Thinking,
    Rewind,
    Diff,
    Allow,
    Skills,
    Mode,
    Model,
    Exit,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct SlashSpec {
    pub command: SlashCommand,
    /// Typed after `/`.
    pub name: &'static str,
    /// Other names that do the same.
    pub aliases: &'static [&'static str],
    /// How its argument is written in help (`""`: none; `[X]`: optional).
    pub args: &'static str,
    /// One line for `/help`.
    pub help: &'static str,
}

impl SlashSpec {
    /// Whether the command needs an argument (`/allow RULE`).
    pub fn needs_arg(&self) -> bool {
        !self.args.is_empty() && !self.args.starts_with('[')
    }
}

/// Every command, in the order `/help` lists them.
pub const SLASH_COMMANDS: &[SlashSpec] = &[
    SlashSpec {
        command: SlashCommand::Help,
        name: "help",
        aliases: &[],
        args: "",
        help: "this list",
    },
    SlashSpec {
        command: SlashCommand::Tools,
        name: "tools",
        aliases: &[],
        args: "",
        help: "the tools the model can call",
    },
    SlashSpec {
        command: SlashCommand::Mcp,
        name: "mcp",
        aliases: &[],
        args: "",
        help: "the MCP servers, their status and their resources",
    },
    SlashSpec {
        command: SlashCommand::Cost,
        name: "cost",
        aliases: &[],
        args: "",
        help: "tokens used and what they cost, per model call and in total",
    },
    SlashSpec {
        command: SlashCommand::Expand,
        name: "expand",
        aliases: &[],
        args: "",
        help: "the last folded tool output in full (also Ctrl-O)",
    },
    SlashSpec {
        command: SlashCommand::Context,
        name: "context",
        aliases: &[],
        args: "",
        help: "how full the context window is, and with what",
    },
    SlashSpec {
        command: SlashCommand::Compact,
        name: "compact",
        aliases: &[],
        args: "[FOCUS]",
        help: "summarize the conversation now (FOCUS: what the summary must keep)",
    },
    SlashSpec {
        command: SlashCommand::Clear,
        name: "clear",
        aliases: &[],
        args: "",
        help: "start a fresh conversation (new session)",
    },
    SlashSpec {
        command: SlashCommand::Todo,
        name: "todo",
        aliases: &[],
        args: "",
        help: "the session's todo list as the model last wrote it",
    },
    SlashSpec {
        command: SlashCommand::Thinking,
        name: "thinking",
        aliases: &[],
        args: "",
        help: "show the model's thinking in full, or fold it to one line again (the default)",
    },
    SlashSpec {
        command: SlashCommand::Rewind,
        name: "rewind",
        aliases: &["undo"],
        args: "[TURN[.CALL] [code|conversation|both] | undo]",
        help: "list the turns and shell calls, or put files and/or conversation back to before one",
    },
    SlashSpec {
        command: SlashCommand::Diff,
        name: "diff",
        aliases: &[],
        args: "[TURN]",
        help: "what changed in the files since the checkpoint before TURN (default: the last)",
    },
    SlashSpec {
        command: SlashCommand::Allow,
        name: "allow",
        aliases: &[],
        args: "RULE",
        help: "allow calls matching RULE for the rest of this session",
    },
    SlashSpec {
        command: SlashCommand::Skills,
        name: "skills",
        aliases: &[],
        args: "",
        help: "the Agent Skills found, with their source (and any broken one)",
    },
    SlashSpec {
        command: SlashCommand::Mode,
        name: "mode",
        aliases: &[],
        args: "[default|accept-edits|plan|read-only]",
        help: "show or change the permission mode (plan: read-only tools until you approve a plan); \
               Shift-Tab cycles default → accept-edits → plan",
    },
    SlashSpec {
        command: SlashCommand::Model,
        name: "model",
        aliases: &[],
        args: "[NAME]",
        help: "show the model, or talk to NAME (same provider) from the next request on",
    },
    SlashSpec {
        command: SlashCommand::Exit,
        name: "exit",
        aliases: &["quit"],
        args: "",
        help: "leave (also Ctrl-D, or Ctrl-C twice at an empty prompt)",
    },
];

impl SlashCommand {
    /// Whether the command means something without a terminal, so `tern acp` offers it to the
    /// editor (`/expand`, `/thinking` and `/exit` are about the terminal; `/mode` is ACP's own
    /// `session/set_mode`; `/model` swaps the terminal run's adapter, and ACP v1 has no model
    /// selection).
    pub fn over_acp(self) -> bool {
        use SlashCommand::*;
        match self {
            Help | Tools | Mcp | Cost | Context | Compact | Clear | Todo | Rewind | Diff
            | Allow | Skills => true,
            Expand | Thinking | Mode | Model | Exit => false,
        }
    }
}

/// The row of `name` (a name or an alias).
pub fn lookup(name: &str) -> Option<&'static SlashSpec> {
    SLASH_COMMANDS
        .iter()
        .find(|s| s.name == name || s.aliases.contains(&name))
}

/// `/help`'s text: the table, then what else a line may be.
pub fn help_text() -> String {
    let mut out = String::from("Slash commands (answered by tern, never sent to the model):\n");
    for s in SLASH_COMMANDS {
        let usage = match s.args {
            "" => format!("/{}", s.name),
            args => format!("/{} {args}", s.name),
        };
        out.push_str(&format!("  {usage:<18} {}\n", s.help));
    }
    out.push_str(
        "  /SERVER:PROMPT [ARG=VALUE | VALUE]…   expand a server's MCP prompt and send it\n\
         Anything else is sent to the model; @SERVER:URI in it attaches that server's resource \
         (Tab\ncompletes it). Ctrl-C during a turn cancels it.",
    );
    out
}

/// The names (and aliases) starting with `prefix`, for Tab completion, in table order.
pub fn completions(prefix: &str) -> Vec<&'static str> {
    SLASH_COMMANDS
        .iter()
        .flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied()))
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// [`completions`], then the dynamic commands (custom commands from markdown files) that
/// start with `prefix` and are not shadowed by a built-in name.
pub fn completions_with(prefix: &str, dynamic: &[String]) -> Vec<String> {
    let mut names: Vec<String> = completions(prefix).into_iter().map(String::from).collect();
    for name in dynamic {
        if name.starts_with(prefix) && lookup(name).is_none() && !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant, through a match that stops compiling when one is added.
    fn all() -> Vec<SlashCommand> {
        use SlashCommand::*;
        let every = [
            Help, Tools, Mcp, Cost, Expand, Context, Compact, Clear, Todo, Thinking, Rewind, Diff,
            Allow, Skills, Mode, Model, Exit,
        ];
        for c in every {
            match c {
                Help | Tools | Mcp | Cost | Expand | Context | Compact | Clear | Todo
                | Thinking | Rewind | Diff | Allow | Skills | Mode | Model | Exit => {}
            }
        }
        every.to_vec()
    }

    #[test]
    fn help_lists_exactly_the_dispatch_table() {
        let help = help_text();
        let listed: Vec<&str> = help
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix('/'))
            .map(|l| l.split_whitespace().next().unwrap_or(""))
            .filter(|n| !n.contains(':'))
            .collect();
        let table: Vec<&str> = SLASH_COMMANDS.iter().map(|s| s.name).collect();
        assert_eq!(listed, table, "{help}");
        // Every command dispatches, once, under its name and its aliases.
        for command in all() {
            let rows: Vec<_> = SLASH_COMMANDS
                .iter()
                .filter(|s| s.command == command)
                .collect();
            assert_eq!(rows.len(), 1, "{command:?}");
            for name in std::iter::once(rows[0].name).chain(rows[0].aliases.iter().copied()) {
                assert_eq!(lookup(name).map(|s| s.command), Some(command), "{name}");
            }
        }
        assert!(lookup("nope").is_none());
    }

    #[test]
    fn completion_offers_names_and_aliases_by_prefix() {
        assert_eq!(completions("c"), ["cost", "context", "compact", "clear"]);
        assert_eq!(completions("q"), ["quit"]);
        assert!(completions("z").is_empty());
        let dynamic = ["review".to_string(), "clear".to_string()];
        assert_eq!(
            completions_with("c", &dynamic),
            ["cost", "context", "compact", "clear"]
        );
        assert_eq!(completions_with("r", &dynamic), ["rewind", "review"]);
        assert!(lookup("allow").is_some_and(SlashSpec::needs_arg));
        assert!(lookup("compact").is_some_and(|s| !s.needs_arg()));
    }
}
