//! Slash commands: answered by tern itself, never sent to the model.

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

use tern_protocol::{Envelope, Event, Usage};

use crate::{
    agent::{Engine, Subscriber, context::budget::Breakdown},
    render::{Screen, format_cost, format_tokens},
    slash_commands::{self, SlashCommand},
};

/// The `/context` view: each part's tokens and share of the window, and what is free.
pub(super) fn context_view(b: &Breakdown, window: Option<u64>, reserve: u64) -> String {
    let share = |n: u64| match window {
        Some(w) if w > 0 => format!("{:>5.1}%", n as f64 * 100.0 / w as f64),
        _ => "     ?".to_string(),
    };
    let mut out = String::new();
    let rows = [
        ("system prompt", b.system),
        ("tool definitions", b.tools),
        ("conversation", b.history),
        ("tool output", b.tool_output),
        ("reserved for the answer", reserve),
    ];
    for (name, n) in rows {
        out.push_str(&format!(
            "  {name:<24} {:>8}  {}\n",
            format_tokens(n),
            share(n)
        ));
    }
    let used = b.total() + reserve;
    match window {
        Some(w) => {
            let free = w.saturating_sub(used);
            out.push_str(&format!(
                "  {:<24} {:>8}  {}\n",
                "free",
                format_tokens(free),
                share(free)
            ));
            out.push_str(&format!("  window: {} tokens\n", format_tokens(w)));
        }
        None => out.push_str(&format!(
            "  window: unknown (set [model] context_window); {} in use\n",
            format_tokens(used)
        )),
    }
    out
}

/// Resources `/mcp` shows per server.
const MAX_LISTED: usize = 20;

/// What a slash command asks the loop to do next.
pub(crate) enum Next {
    /// Show the prompt again.
    Prompt,
    /// Send this text to the model (an expanded MCP prompt).
    Send(String),
    /// Run a custom command's turn (its text, with its model and allowed-tools).
    Run(crate::custom_commands::Invocation),
    /// Leave the REPL.
    Exit,
}

/// Records each model call's usage for `/cost`.
pub(crate) struct CostMeter(pub Arc<Mutex<Vec<(u32, Usage)>>>);

impl Subscriber for CostMeter {
    fn on_event(&mut self, e: &Envelope) {
        if let Event::ModelResponse {
            step,
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_creation_tokens,
            ..
        } = &e.event
            && let Ok(mut v) = self.0.lock()
        {
            v.push((
                *step,
                Usage {
                    input: *input_tokens,
                    output: *output_tokens,
                    cache_read: *cache_read_tokens,
                    cache_creation: *cache_creation_tokens,
                },
            ));
        }
    }
}

/// Everything a slash command may use.
/// The REPL writes to the terminal; `tern acp` to a buffer it sends as message chunks.
pub(crate) struct Slash<'a> {
    pub engine: &'a mut Engine,
    pub screen: &'a Screen,
    pub costs: &'a Mutex<Vec<(u32, Usage)>>,
    pub out: &'a mut (dyn Write + Send),
}

impl Slash<'_> {
    /// Runs `/name arg`: a command of the table, else a server's prompt (`/SERVER:PROMPT`).
    pub async fn run(&mut self, name: &str, arg: &str) -> std::io::Result<Next> {
        let Some(spec) = slash_commands::lookup(name) else {
            if let Some(custom) = self
                .engine
                .custom_commands()
                .into_iter()
                .find(|c| c.name == name)
            {
                return match custom.invoke(arg) {
                    Ok(invocation) => Ok(Next::Run(invocation)),
                    Err(e) => {
                        writeln!(self.out, "error: /{name}: {e}")?;
                        Ok(Next::Prompt)
                    }
                };
            }
            if name.contains(':') {
                return self.prompt(name, arg).await;
            }
            writeln!(self.out, "unknown command /{name}; /help lists them")?;
            return Ok(Next::Prompt);
        };
        let arg = arg.trim();
        if spec.needs_arg() && arg.is_empty() {
            writeln!(
                self.out,
                "usage: /{} {}  ({})",
                spec.name, spec.args, spec.help
            )?;
            return Ok(Next::Prompt);
        }
        match spec.command {
            SlashCommand::Exit => return Ok(Next::Exit),
            SlashCommand::Help => self.help().await?,
            SlashCommand::Tools => {
                for e in self.engine.tools().entries() {
                    let desc = e.def.description.lines().next().unwrap_or("");
                    let desc: String = desc.chars().take(70).collect();
                    writeln!(self.out, "  {}  {desc}", e.name)?;
                }
            }
            SlashCommand::Mcp => self.mcp().await?,
            SlashCommand::Cost => self.cost()?,
            SlashCommand::Context => {
                let breakdown = self.engine.context();
                let (window, reserve) = self.engine.window();
                write!(self.out, "{}", context_view(&breakdown, window, reserve))?;
            }
            SlashCommand::Compact => {
                let focus = Some(arg).filter(|f| !f.is_empty());
                let breakdown = self.engine.compact(focus).await;
                let (window, reserve) = self.engine.window();
                write!(self.out, "{}", context_view(&breakdown, window, reserve))?;
            }
            SlashCommand::Expand => match self.screen.folded() {
                Some(text) => writeln!(self.out, "{text}")?,
                None => writeln!(self.out, "nothing folded yet")?,
            },
            SlashCommand::Clear => {
                let id = self.engine.clear().await;
                writeln!(self.out, "conversation cleared (new session {id})")?;
            }
            SlashCommand::Todo => match self.engine.todo() {
                Some(list) => {
                    for line in crate::render::todo_lines(&list, false) {
                        writeln!(self.out, "{line}")?;
                    }
                }
                None => writeln!(
                    self.out,
                    "no todo list in this session yet (the model keeps one with todo__write)"
                )?,
            },
            SlashCommand::Thinking => {
                let on = !self.screen.shows_thinking();
                self.screen.show_thinking(on);
                if on {
                    writeln!(self.out, "thinking is shown in full from now on")?;
                    if let Some(thought) = self.screen.thought() {
                        writeln!(self.out, "the last thinking:")?;
                        for line in crate::render::thought_lines(&thought, false) {
                            writeln!(self.out, "{line}")?;
                        }
                    }
                } else {
                    writeln!(self.out, "thinking is folded to one line again")?;
                }
            }
            SlashCommand::Rewind => self.rewind(name, arg).await?,
            SlashCommand::Diff => {
                let turn = match arg {
                    "" => None,
                    n => match n.parse::<u64>() {
                        Ok(n) => Some(n),
                        Err(_) => {
                            writeln!(
                                self.out,
                                "usage: /diff [TURN]  (TURN: a number from /rewind)"
                            )?;
                            return Ok(Next::Prompt);
                        }
                    },
                };
                match self.engine.diff_since(turn).await {
                    Ok((n, diff)) if diff.trim().is_empty() => {
                        writeln!(self.out, "no file changed since before turn {n}")?
                    }
                    Ok((n, diff)) => {
                        writeln!(self.out, "changes since before turn {n}:")?;
                        write!(self.out, "{}", crate::render::sanitize(&diff))?;
                    }
                    Err(e) => writeln!(self.out, "{e}")?,
                }
            }
            SlashCommand::Skills => {
                let text = self.engine.list_skills().await;
                writeln!(self.out, "{text}")?;
            }
            SlashCommand::Mode => self.mode(arg)?,
            SlashCommand::Model => match arg.trim() {
                "" => writeln!(self.out, "model: {}", self.engine.model_name())?,
                name => match self.engine.set_model(name) {
                    Ok(()) => writeln!(self.out, "model: {name} (from the next request)")?,
                    Err(e) => writeln!(self.out, "{e}")?,
                },
            },
            SlashCommand::Allow => match self.engine.allow(arg) {
                Ok(()) => writeln!(self.out, "allowed for this session: {arg}")?,
                Err(e) => writeln!(self.out, "not a valid rule: {e}")?,
            },
        }
        Ok(Next::Prompt)
    }

    /// `/mode`: the current permission mode, or a switch to another (for the next calls).
    fn mode(&mut self, arg: &str) -> std::io::Result<()> {
        use tern_config::PermissionMode;
        let gateway = self.engine.gateway();
        if arg.is_empty() {
            return writeln!(self.out, "mode: {}", gateway.mode());
        }
        let modes = [
            PermissionMode::Default,
            PermissionMode::AcceptEdits,
            PermissionMode::Plan,
            PermissionMode::ReadOnly,
        ];
        match modes.into_iter().find(|m| m.to_string() == arg) {
            Some(mode) => {
                gateway.set_mode(mode);
                writeln!(self.out, "mode: {mode}")
            }
            None => writeln!(
                self.out,
                "unknown mode `{arg}`\nhint: /mode default, accept-edits, plan or read-only \
                 (yolo only from the command line: --mode yolo)"
            ),
        }
    }

    /// `/rewind`: the turns (no argument), a rewind (`TURN [code|conversation|both]`), or the
    /// undo of the last one (`undo`, or the `/undo` alias with no argument).
    async fn rewind(&mut self, name: &str, arg: &str) -> std::io::Result<()> {
        use crate::agent::checkpoints::Rewind;
        let mut words = arg.split_whitespace();
        let first = words.next();
        let outcome = match (name, first) {
            ("undo", None) | (_, Some("undo")) => self.engine.undo_rewind().await,
            (_, None) => {
                match self.engine.turns().await {
                    Ok(turns) if turns.is_empty() => writeln!(self.out, "no turn recorded yet")?,
                    Ok(turns) => {
                        for line in crate::commands::rewind::turn_lines(&turns) {
                            writeln!(self.out, "{line}")?;
                        }
                        writeln!(
                            self.out,
                            "rewind with /rewind TURN [code|conversation|both] (default both) or \
                             /rewind TURN.CALL code (before that shell call); /rewind undo \
                             reverses it"
                        )?;
                    }
                    Err(e) => writeln!(self.out, "{e}")?,
                }
                return Ok(());
            }
            (_, Some(n)) => {
                let what = match words.next() {
                    None | Some("both") => Some(Rewind::Both),
                    Some("code") => Some(Rewind::Code),
                    Some("conversation") => Some(Rewind::Conversation),
                    Some(_) => None,
                };
                match (n.parse::<crate::agent::checkpoints::Point>(), what) {
                    (Ok(point), Some(what)) => self.engine.rewind(point, what).await,
                    _ => {
                        writeln!(
                            self.out,
                            "usage: /rewind [TURN[.CALL] [code|conversation|both] | undo]"
                        )?;
                        return Ok(());
                    }
                }
            }
        };
        match outcome {
            Ok(done) => {
                for line in crate::commands::rewind::rewound_lines(&done) {
                    writeln!(self.out, "{line}")?;
                }
            }
            Err(e) => writeln!(self.out, "{e}")?,
        }
        Ok(())
    }

    /// `/mcp`: each server, its state and tools, and the resources it lists (`@server:uri`
    /// attaches one to a message).
    async fn mcp(&mut self) -> std::io::Result<()> {
        let resources = self.engine.resources().await;
        for s in self.engine.servers() {
            let state = s.state.label();
            let listed: Vec<_> = resources.iter().filter(|r| r.server == s.name).collect();
            let extra = if listed.is_empty() {
                String::new()
            } else {
                format!(", {} resources", listed.len())
            };
            writeln!(
                self.out,
                "  {:<12} {:<10} {} tools{extra}",
                s.name, state, s.tools
            )?;
            for r in listed.iter().take(MAX_LISTED) {
                let kind = r
                    .mime_type
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default();
                let about = r.title.as_deref().unwrap_or(&r.name);
                writeln!(self.out, "    @{}:{}{kind}  {about}", s.name, r.uri)?;
            }
            if listed.len() > MAX_LISTED {
                writeln!(
                    self.out,
                    "    … {} more (type @{}: and Tab)",
                    listed.len() - MAX_LISTED,
                    s.name
                )?;
            }
        }
        Ok(())
    }

    async fn help(&mut self) -> std::io::Result<()> {
        writeln!(self.out, "{}", slash_commands::help_text())?;
        let custom = self.engine.custom_commands();
        if !custom.is_empty() {
            writeln!(self.out, "Custom commands:")?;
            for c in custom {
                let usage = match c.argument_hint.as_str() {
                    "" => format!("/{}", c.name),
                    hint => format!("/{} {hint}", c.name),
                };
                writeln!(self.out, "  {usage:<18} {} ({})", c.description, c.source)?;
            }
        }
        let prompts = self.engine.prompts().await;
        if !prompts.is_empty() {
            writeln!(self.out, "MCP prompts:")?;
            for p in prompts {
                let args: Vec<String> = p
                    .arguments
                    .iter()
                    .map(|(n, req)| if *req { n.clone() } else { format!("[{n}]") })
                    .collect();
                writeln!(
                    self.out,
                    "  /{}:{} {}  {}",
                    p.server,
                    p.name,
                    args.join(" "),
                    p.description
                )?;
            }
        }
        Ok(())
    }

    fn cost(&mut self) -> std::io::Result<()> {
        let calls = self.costs.lock().map(|v| v.clone()).unwrap_or_default();
        let priced = |u: &Usage| {
            self.engine
                .cost(u)
                .map(|c| format!(", {}", format_cost(c)))
                .unwrap_or_default()
        };
        for (i, (step, u)) in calls.iter().enumerate() {
            writeln!(
                self.out,
                "  call {:>3} (step {step}): {} in, {} cache read, {} cache write, {} out{}",
                i + 1,
                format_tokens(u.input),
                format_tokens(u.cache_read),
                format_tokens(u.cache_creation),
                format_tokens(u.output),
                priced(u)
            )?;
        }
        let mut total = Usage::default();
        for (_, u) in &calls {
            total.add(u);
        }
        writeln!(
            self.out,
            "  total: {} model call(s), {} in ({} cached, {:.0}% hit), {} out{}",
            calls.len(),
            format_tokens(total.total_input()),
            format_tokens(total.cache_read),
            total.cache_hit_percent(),
            format_tokens(total.output),
            priced(&total)
        )?;
        // Sub-agents ran on their own (maybe other) model: their cost is what they reported.
        let sub = self.engine.delegated();
        if sub.calls > 0 {
            writeln!(
                self.out,
                "  sub-agents: {} run(s), {} in ({} cached), {} out{}",
                sub.calls,
                format_tokens(sub.usage.total_input()),
                format_tokens(sub.usage.cache_read),
                format_tokens(sub.usage.output),
                sub.add_cost(Some(0.0))
                    .map(|c| format!(", {}", format_cost(c)))
                    .unwrap_or_else(|| ", cost unknown".into())
            )?;
            writeln!(
                self.out,
                "  with sub-agents: {} in, {} out{}",
                format_tokens(sub.add_usage(&total).total_input()),
                format_tokens(sub.add_usage(&total).output),
                sub.add_cost(self.engine.cost(&total))
                    .map(|c| format!(", {}", format_cost(c)))
                    .unwrap_or_default()
            )?;
        }
        Ok(())
    }

    /// `/server:prompt args`: expands the prompt and sends it.
    async fn prompt(&mut self, name: &str, arg: &str) -> std::io::Result<Next> {
        let (server, prompt) = name.split_once(':').unwrap_or((name, ""));
        let prompts = self.engine.prompts().await;
        let Some(info) = prompts
            .iter()
            .find(|p| p.server == server && p.name == prompt)
        else {
            writeln!(
                self.out,
                "no prompt `{prompt}` on server `{server}`; /help lists them"
            )?;
            return Ok(Next::Prompt);
        };
        let args = match prompt_arguments(&info.arguments, arg) {
            Ok(a) => a,
            Err(e) => {
                writeln!(self.out, "/{name}: {e}")?;
                return Ok(Next::Prompt);
            }
        };
        match self.engine.expand_prompt(server, prompt, args).await {
            Ok(text) if !text.trim().is_empty() => Ok(Next::Send(text)),
            Ok(_) => {
                writeln!(self.out, "/{name} expanded to nothing")?;
                Ok(Next::Prompt)
            }
            Err(e) => {
                writeln!(self.out, "/{name} failed: {e}")?;
                Ok(Next::Prompt)
            }
        }
    }
}

/// Maps `/server:prompt` arguments onto the prompt's declared arguments:
/// `key=value` by name, bare words to the remaining arguments in order (the last
/// one takes the rest of the line).
pub fn prompt_arguments(
    declared: &[(String, bool)],
    line: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let mut out = serde_json::Map::new();
    let mut positional = Vec::new();
    for word in line.split_whitespace() {
        match word.split_once('=') {
            Some((k, v)) if declared.iter().any(|(n, _)| n == k) => {
                out.insert(k.to_string(), serde_json::Value::String(v.to_string()));
            }
            _ => positional.push(word),
        }
    }
    let free: Vec<&String> = declared
        .iter()
        .map(|(n, _)| n)
        .filter(|n| !out.contains_key(n.as_str()))
        .collect();
    for (i, name) in free.iter().enumerate() {
        if positional.is_empty() {
            break;
        }
        let value = if i + 1 == free.len() {
            std::mem::take(&mut positional).join(" ")
        } else {
            positional.remove(0).to_string()
        };
        out.insert((*name).clone(), serde_json::Value::String(value));
    }
    if !positional.is_empty() {
        return Err(format!("too many arguments: {}", positional.join(" ")));
    }
    for (name, required) in declared {
        if *required && !out.contains_key(name) {
            return Err(format!("missing required argument `{name}`"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{Breakdown, context_view, prompt_arguments};

    #[test]
    fn the_context_view_adds_up_to_the_window() {
        let b = Breakdown {
            system: 2_000,
            tools: 3_000,
            history: 10_000,
            tool_output: 25_000,
        };
        let view = context_view(&b, Some(200_000), 8_000);
        assert!(view.contains("tool output") && view.contains("25.0k") && view.contains("12.5%"));
        assert!(
            view.contains("free") && view.contains("152.0k") && view.contains("76.0%"),
            "{view}"
        );
        let unknown = context_view(&b, None, 8_000);
        assert!(unknown.contains("window: unknown"), "{unknown}");
    }

    fn declared() -> Vec<(String, bool)> {
        vec![("name".into(), true), ("style".into(), false)]
    }

    #[test]
    fn prompt_arguments_by_name_and_position() {
        let a = prompt_arguments(&declared(), "style=formal Ada").unwrap();
        assert_eq!(a["name"], "Ada");
        assert_eq!(a["style"], "formal");
        let a = prompt_arguments(&declared(), "Ada very warm").unwrap();
        assert_eq!(a["name"], "Ada");
        assert_eq!(a["style"], "very warm");
        assert!(
            prompt_arguments(&declared(), "")
                .unwrap_err()
                .contains("`name`")
        );
        assert!(prompt_arguments(&[("x".into(), false)], "a b").is_ok());
    }
}
