//! The interactive REPL (`tern`, `tern resume`): a line editor with history,
//! slash commands answered by the program itself (never sent to the model),
//! approval prompts inline, and Ctrl-C that cancels the current turn (a second
//! Ctrl-C at an empty prompt exits).

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

use async_trait::async_trait;
use rustyline::{DefaultEditor, error::ReadlineError};
use tern_gateway::{Approval, ApprovalRequest, Approver};
use tern_model::Usage;
use tokio_util::sync::CancellationToken;

use crate::{
    commands::Ctx,
    events::{AgentEvent, Envelope, RunStatus, Subscriber},
    render::{TerminalPrinter, format_tokens},
    runner::{Engine, OutputFormat, RunRequest},
};

const HELP: &str = "\
Slash commands (answered by tern, never sent to the model):
  /help          this list
  /tools         the tools the model can call
  /mcp           the MCP servers and their status
  /cost          tokens used, per model call and in total
  /clear         start a fresh conversation (new session)
  /allow RULE    allow calls matching RULE for the rest of this session
  /exit          leave (also Ctrl-D, or Ctrl-C twice at an empty prompt)
  /SERVER:PROMPT [ARG=VALUE | VALUE]…   expand a server's MCP prompt and send it
Anything else is sent to the model. Ctrl-C during a turn cancels it.";

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

/// Asks the user, on the terminal, whether a tool call may run.
struct TerminalApprover {
    /// Serializes questions when read-only calls run concurrently.
    lock: tokio::sync::Mutex<()>,
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, request: ApprovalRequest) -> Approval {
        let _one_at_a_time = self.lock.lock().await;
        let mut text = format!(
            "\n\x1b[1m{}\x1b[0m wants to run `{}` ({})\n  arguments: {}\n",
            request.server,
            request.tool,
            request.reasons.join("; "),
            request.arguments
        );
        for p in &request.paths {
            text.push_str(&format!("  {}: {}\n", p.arg, p.path.display()));
        }
        if let Some(c) = &request.command {
            text.push_str(&format!("  commands: {}\n", c.commands.join(" | ")));
            if !c.risks.is_empty() {
                text.push_str(&format!("  risks: {}\n", c.risks.join("; ")));
            }
        }
        let always = request.always_rules.first().cloned();
        text.push_str(match &always {
            Some(_) => "Allow? [y]es once / [a]lways / [n]o (optionally: n <reason>) ",
            None => "Allow? [y]es once / [n]o (optionally: n <reason>) ",
        });
        let answer = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr();
            let _ = write!(err, "{text}");
            let _ = err.flush();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await;
        let line = match answer {
            Ok(Ok(line)) => line.trim().to_string(),
            _ => String::new(),
        };
        match line
            .split_once(' ')
            .map_or((line.as_str(), ""), |(a, b)| (a, b))
        {
            ("y" | "yes", _) => Approval::Once,
            ("a" | "always", _) if always.is_some() => Approval::Always,
            (_, reason) => Approval::Deny {
                reason: (!reason.trim().is_empty()).then(|| reason.trim().to_string()),
            },
        }
    }
}

/// Records each model call's usage for `/cost`.
struct CostMeter(Arc<Mutex<Vec<(u32, Usage)>>>);

impl Subscriber for CostMeter {
    fn on_event(&mut self, e: &Envelope) {
        if let AgentEvent::ModelResponse {
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

/// Runs the REPL until the user leaves. Returns the exit code.
pub async fn run(ctx: &Ctx, req: RunRequest) -> anyhow::Result<i32> {
    let approver = Arc::new(TerminalApprover {
        lock: tokio::sync::Mutex::new(()),
    });
    let req = RunRequest {
        output: OutputFormat::Text,
        ..req
    };
    let mut engine = Engine::start(ctx, &req, Box::new(TerminalPrinter::auto()), approver).await?;
    let costs = Arc::new(Mutex::new(Vec::new()));
    engine.bus.subscribe(Box::new(CostMeter(costs.clone())));
    if let Some(msg) = engine.required_failure() {
        engine.bus.emit(AgentEvent::Error { message: msg });
    }
    let history = ctx.paths.tern_home.join("history");
    let mut editor = DefaultEditor::new()?;
    let _ = editor.load_history(&history);
    let mut out = std::io::stdout();
    writeln!(out, "tern — type /help for commands, /exit to leave.")?;

    let mut total = Usage::default();
    let mut steps = 0;
    let mut last = crate::agent::TurnOutcome {
        status: RunStatus::Success,
        steps: 0,
        usage: Usage::default(),
        answer: None,
        error: None,
    };
    let mut interrupted_once = false;
    loop {
        let (ed, line) = tokio::task::spawn_blocking(move || {
            let line = editor.readline("tern> ");
            (editor, line)
        })
        .await?;
        editor = ed;
        let line = match line {
            Ok(l) => {
                interrupted_once = false;
                l
            }
            Err(ReadlineError::Interrupted) => {
                if interrupted_once {
                    break;
                }
                interrupted_once = true;
                writeln!(out, "(Ctrl-C again to exit)")?;
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let input = line.trim();
        if input.is_empty() {
            continue;
        }
        let mut pending_input: Option<String> = None;
        let input_owned: String;
        let _ = editor.add_history_entry(input);
        if let Some(cmd) = input.strip_prefix('/') {
            let (name, arg) = cmd.split_once(' ').unwrap_or((cmd, ""));
            match name {
                "exit" | "quit" => break,
                "help" => {
                    writeln!(out, "{HELP}")?;
                    let prompts = engine.pool.prompts().await;
                    if !prompts.is_empty() {
                        writeln!(out, "MCP prompts:")?;
                        for p in prompts {
                            let args: Vec<String> = p
                                .arguments
                                .iter()
                                .map(|(n, req)| if *req { n.clone() } else { format!("[{n}]") })
                                .collect();
                            writeln!(
                                out,
                                "  /{}:{} {}  {}",
                                p.server,
                                p.name,
                                args.join(" "),
                                p.description
                            )?;
                        }
                    }
                }
                "tools" => {
                    for e in engine.gateway.refresh_table().entries() {
                        let desc = e.def.description.lines().next().unwrap_or("");
                        writeln!(
                            out,
                            "  {}  {}",
                            e.name,
                            desc.chars().take(70).collect::<String>()
                        )?;
                    }
                }
                "mcp" => {
                    for s in engine.pool.statuses() {
                        let state = serde_json::to_value(&s.state)
                            .ok()
                            .and_then(|v| v["status"].as_str().map(str::to_string))
                            .unwrap_or_default();
                        writeln!(out, "  {:<12} {:<10} {} tools", s.name, state, s.tools)?;
                    }
                }
                "cost" => {
                    let v = costs.lock().map(|v| v.clone()).unwrap_or_default();
                    for (i, (step, u)) in v.iter().enumerate() {
                        writeln!(
                            out,
                            "  call {:>3} (step {step}): {} in, {} cache read, {} cache write, {} out",
                            i + 1,
                            format_tokens(u.input),
                            format_tokens(u.cache_read),
                            format_tokens(u.cache_creation),
                            format_tokens(u.output)
                        )?;
                    }
                    let prompt: u64 = v.iter().map(|(_, u)| u.total_input()).sum();
                    let cached: u64 = v.iter().map(|(_, u)| u.cache_read).sum();
                    let output: u64 = v.iter().map(|(_, u)| u.output).sum();
                    let hit = if prompt > 0 {
                        cached as f64 * 100.0 / prompt as f64
                    } else {
                        0.0
                    };
                    writeln!(
                        out,
                        "  total: {} model call(s), {} in ({} cached, {hit:.0}% hit), {} out",
                        v.len(),
                        format_tokens(prompt),
                        format_tokens(cached),
                        format_tokens(output)
                    )?;
                }
                "clear" => {
                    engine.transcript.clear();
                    engine.session_id = crate::session::new_session_id();
                    writeln!(
                        out,
                        "conversation cleared (new session {})",
                        engine.session_id
                    )?;
                }
                "allow" if !arg.trim().is_empty() => {
                    match engine.gateway.allow_for_session(arg.trim()) {
                        Ok(()) => writeln!(out, "allowed for this session: {}", arg.trim())?,
                        Err(e) => writeln!(out, "not a valid rule: {e}")?,
                    }
                }
                _ if name.contains(':') => {
                    let (server, prompt) = name.split_once(':').unwrap_or((name, ""));
                    let prompts = engine.pool.prompts().await;
                    let Some(info) = prompts
                        .iter()
                        .find(|p| p.server == server && p.name == prompt)
                    else {
                        writeln!(
                            out,
                            "no prompt `{prompt}` on server `{server}`; /help lists them"
                        )?;
                        continue;
                    };
                    let args = match prompt_arguments(&info.arguments, arg) {
                        Ok(a) => a,
                        Err(e) => {
                            writeln!(out, "/{name}: {e}")?;
                            continue;
                        }
                    };
                    match engine.pool.get_prompt(server, prompt, args).await {
                        Ok(text) if !text.trim().is_empty() => pending_input = Some(text),
                        Ok(_) => writeln!(out, "/{name} expanded to nothing")?,
                        Err(e) => writeln!(out, "/{name} failed: {e}")?,
                    }
                }
                _ => writeln!(out, "unknown command /{name}; /help lists them")?,
            }
            let Some(text) = pending_input.take() else {
                continue;
            };
            input_owned = text;
        } else {
            input_owned = input.to_string();
        }
        let input = input_owned.as_str();
        // A turn: Ctrl-C cancels this turn only.
        engine.cancel = CancellationToken::new();
        let cancel = engine.cancel.clone();
        let ctrl_c = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
        last = engine.turn(input, ctx).await;
        ctrl_c.abort();
        steps += last.steps;
        total.input += last.usage.input;
        total.output += last.usage.output;
        total.cache_read += last.usage.cache_read;
        total.cache_creation += last.usage.cache_creation;
        if last.status == RunStatus::Cancelled {
            writeln!(out, "\n(cancelled)")?;
        }
        writeln!(out)?;
    }
    let _ = std::fs::create_dir_all(&ctx.paths.tern_home);
    let _ = editor.save_history(&history);
    let outcome = crate::agent::TurnOutcome {
        status: if last.status == RunStatus::Cancelled {
            RunStatus::Success
        } else {
            last.status
        },
        ..last
    };
    engine.finish(&outcome, &total, steps).await;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::prompt_arguments;

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
