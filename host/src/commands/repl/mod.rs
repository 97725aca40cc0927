//! The interactive REPL (`tern`, `tern resume`): a line editor with history,
//! slash commands answered by the program itself (never sent to the model),
//! approval prompts inline, and Ctrl-C that cancels the current turn (a second
//! Ctrl-C at an empty prompt exits).

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

use rustyline::{DefaultEditor, error::ReadlineError};
use tern_protocol::{Envelope, Event, RunStatus, Usage};
use tokio_util::sync::CancellationToken;

use crate::{
    agent::{Engine, EngineOptions, Subscriber, TurnOutcome},
    render::{TerminalPrinter, format_tokens},
    workspace::Workspace,
};

mod approver;

use approver::TerminalApprover;

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

/// Records each model call's usage for `/cost`.
struct CostMeter(Arc<Mutex<Vec<(u32, Usage)>>>);

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

/// Runs the REPL until the user leaves. Returns the exit code.
pub async fn run(ws: &Workspace, session: Option<String>) -> anyhow::Result<i32> {
    let approver = Arc::new(TerminalApprover::new());
    let options = EngineOptions {
        goal: "(interactive)".into(),
        session,
    };
    let mut engine =
        Engine::start(ws, options, Box::new(TerminalPrinter::auto()), approver).await?;
    let costs = Arc::new(Mutex::new(Vec::new()));
    engine.subscribe(Box::new(CostMeter(costs.clone())));
    if let Some(msg) = engine.required_failure() {
        engine.report_error(msg);
    }
    let history = ws.paths.tern_home.join("history");
    let mut editor = DefaultEditor::new()?;
    let _ = editor.load_history(&history);
    let mut out = std::io::stdout();
    writeln!(out, "tern — type /help for commands, /exit to leave.")?;

    let mut last: Option<TurnOutcome> = None;
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
                    let prompts = engine.prompts().await;
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
                    for e in engine.tools().entries() {
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
                    for s in engine.servers() {
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
                    let id = engine.clear();
                    writeln!(out, "conversation cleared (new session {id})")?;
                }
                "allow" if !arg.trim().is_empty() => match engine.allow(arg.trim()) {
                    Ok(()) => writeln!(out, "allowed for this session: {}", arg.trim())?,
                    Err(e) => writeln!(out, "not a valid rule: {e}")?,
                },
                _ if name.contains(':') => {
                    let (server, prompt) = name.split_once(':').unwrap_or((name, ""));
                    let prompts = engine.prompts().await;
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
                    match engine.expand_prompt(server, prompt, args).await {
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
        let cancel = CancellationToken::new();
        let on_ctrl_c = cancel.clone();
        let ctrl_c = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.cancel();
            }
        });
        let outcome = engine.submit(input, &cancel).await;
        ctrl_c.abort();
        if outcome.status == RunStatus::Cancelled {
            writeln!(out, "\n(cancelled)")?;
        }
        writeln!(out)?;
        last = Some(outcome);
    }
    let _ = std::fs::create_dir_all(&ws.paths.tern_home);
    let _ = editor.save_history(&history);
    // Leaving the REPL is a success even when the last turn was cancelled.
    let status = match last.as_ref().map(|l| l.status) {
        None | Some(RunStatus::Cancelled) => RunStatus::Success,
        Some(status) => status,
    };
    engine.finish(status, last.as_ref()).await;
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
