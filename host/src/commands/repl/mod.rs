//! The interactive REPL (`tern`, `tern resume`): a line editor with history, slash commands
//! answered by tern itself (never sent to the model), approval questions inline, Ctrl-O to
//! expand folded tool output, and Ctrl-C that cancels the current turn (a second Ctrl-C at an
//! empty prompt exits).

mod approver;
mod attach;
mod elicit;
mod external_editor;
mod files;
mod keys;
mod mentions;
mod notices;
mod pasted;
mod picker;
mod plan;
mod prompt;
pub(crate) mod slash;

use std::{
    io::{IsTerminal, Write},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use rustyline::{
    Cmd, ConditionalEventHandler, Editor, Event as KeyEvent, EventContext, EventHandler, KeyCode,
    KeyEvent as Key, Modifiers, RepeatCount, error::ReadlineError, history::DefaultHistory,
};
use tern_protocol::RunStatus;
use tokio_util::sync::CancellationToken;

/// `tern resume`'s session picker.
pub use self::picker::pick as pick_session;
/// How `/server:prompt` arguments map onto a prompt's (also used by `tern acp`).
pub(crate) use self::slash::prompt_arguments;
use self::{
    approver::{Targets, TerminalApprover},
    elicit::TerminalElicitor,
    keys::Keys,
    mentions::ReplHelper,
    slash::{CostMeter, Next, Slash},
};
use crate::{
    agent::{Engine, EngineOptions, TurnOutcome},
    render::{Mode, Notifier, Screen, TerminalPrinter},
    workspace::Workspace,
};

/// Ctrl-O: ends the line and asks for the folded output.
struct ExpandKey(Arc<AtomicBool>);

impl ConditionalEventHandler for ExpandKey {
    fn handle(&self, _: &KeyEvent, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        self.0.store(true, Ordering::SeqCst);
        Some(Cmd::AcceptLine)
    }
}

/// Runs the REPL until the user leaves. Returns the exit code.
pub async fn run(ws: &Workspace, session: Option<String>) -> anyhow::Result<i32> {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let printer = TerminalPrinter::on(Screen::terminal(color), color, Mode::Interactive)
        .in_workspace(&ws.cwd);
    let screen = printer.screen();
    // Esc cancels a running turn (keys.rs): the spinner says so.
    screen.hint(Some("esc to interrupt".into()));
    // One question on the screen at a time: an approval or a server's request for input.
    let turn = Arc::new(tokio::sync::Mutex::new(()));
    // The one reader of stdin while a turn runs (the line editor reads between turns).
    let keys = Keys::default();
    let sandbox = &ws.config.sandbox;
    let targets = Targets {
        cwd: ws.cwd.clone(),
        project: ws.paths.rules_target(&ws.cwd).0,
        user: ws.paths.user_config.clone(),
        sandbox: format!("{}, network {}", sandbox.mode, sandbox.network),
    };
    let notifier = Notifier::new(&ws.config.ui, &|k| ws.var(k));
    let approver = Arc::new(
        TerminalApprover::new(screen.clone(), turn.clone(), color, keys.clone(), targets)
            .with_notifier(notifier),
    );
    let options = EngineOptions {
        goal: crate::commands::runs::INTERACTIVE.into(),
        session,
        // The prompt never waits for a server that is not required.
        server_grace: Some(std::time::Duration::ZERO),
        elicitor: Some(Arc::new(TerminalElicitor::new(
            screen.clone(),
            turn,
            keys.clone(),
        ))),
        ..EngineOptions::default()
    };
    let mut engine = Engine::start(
        ws,
        options,
        crate::agent::Outputs::for_workspace(ws, Box::new(printer))?,
        approver,
    )
    .await?;
    let costs = Arc::new(Mutex::new(Vec::new()));
    engine.subscribe(Box::new(CostMeter(costs.clone())));
    let proposed = Arc::new(Mutex::new(None));
    engine.subscribe(Box::new(plan::PlanCatcher(proposed.clone())));
    if let Some(msg) = engine.required_failure() {
        engine.report_error(msg);
    }

    let history = ws.paths.tern_home.join("history");
    // A lone Esc is a key after 50 ms, not the start of a sequence that eats the next key.
    let config = rustyline::Config::builder()
        .keyseq_timeout(Some(50))
        .build();
    let mut editor: Editor<ReplHelper, DefaultHistory> = Editor::with_config(config)?;
    let helper = ReplHelper::default();
    editor.set_helper(Some(helper.clone()));
    let _ = editor.load_history(&history);
    // What `@server:` completes to: listed now, and again after every turn.
    helper.set(&engine.resources().await);
    helper.set_commands(custom_names(&engine));
    refresh_files(&helper, ws);
    let expand = Arc::new(AtomicBool::new(false));
    editor.bind_sequence(
        KeyEvent::KeySeq(vec![Key(KeyCode::Char('O'), Modifiers::CTRL)]),
        EventHandler::Conditional(Box::new(ExpandKey(expand.clone()))),
    );
    // Multi-line input: Alt-Enter and Ctrl-J start a new line (as does a trailing `\`).
    editor.bind_sequence(
        KeyEvent::KeySeq(vec![Key(KeyCode::Enter, Modifiers::ALT)]),
        EventHandler::Simple(Cmd::Newline),
    );
    editor.bind_sequence(
        KeyEvent::KeySeq(vec![Key(KeyCode::Char('J'), Modifiers::CTRL)]),
        EventHandler::Simple(Cmd::Newline),
    );
    // Shift-Tab (`ESC [ Z`) cycles the permission mode.
    let cycle = Arc::new(AtomicBool::new(false));
    editor.bind_sequence(
        KeyEvent::KeySeq(vec![Key(KeyCode::BackTab, Modifiers::NONE)]),
        EventHandler::Conditional(Box::new(prompt::CycleKey(cycle.clone()))),
    );
    // Ctrl-G opens the input in $VISUAL / $EDITOR.
    let edit = Arc::new(AtomicBool::new(false));
    editor.bind_sequence(
        KeyEvent::KeySeq(vec![Key(KeyCode::Char('G'), Modifiers::CTRL)]),
        EventHandler::Conditional(Box::new(external_editor::EditorKey(edit.clone()))),
    );
    // Esc twice opens /rewind.
    let rewind = Arc::new(AtomicBool::new(false));
    editor.bind_sequence(
        KeyEvent::KeySeq(vec![Key(KeyCode::Esc, Modifiers::NONE)]),
        EventHandler::Conditional(Box::new(prompt::EscKey {
            rewind: rewind.clone(),
            last: Mutex::new(None),
        })),
    );
    // Shift-Tab while a turn runs: the mode changes for the turn's next calls.
    let gateway = engine.gateway();
    keys.on_back_tab(Arc::new(move || {
        gateway.set_mode(prompt::next_mode(gateway.mode()));
    }));
    // Background notices (a server that failed) print above the prompt, not into the line.
    let notices = notices::AbovePrompt::start(&mut editor);
    let first_model = engine.model_name().to_string();
    let mut out = std::io::stdout();
    writeln!(
        out,
        "tern — type /help for commands, /exit to leave, Ctrl-O to expand folded output, \
         Shift-Tab to cycle the mode, Ctrl-G to edit in $EDITOR."
    )?;

    let mut last: Option<TurnOutcome> = None;
    let mut interrupted_once = false;
    let mut keep = String::new();
    loop {
        let initial = std::mem::take(&mut keep);
        let model = engine.model_name().to_string();
        let shown = prompt::prompt(
            engine.gateway().mode(),
            Some(model.as_str()).filter(|m| *m != first_model),
        );
        let ask = shown.clone();
        let prompting = notices.as_ref().map(|n| screen.above_prompt(n.printer()));
        let (ed, line) = tokio::task::spawn_blocking(move || {
            let line = editor.readline_with_initial(ask.as_str(), (&initial, ""));
            (editor, line)
        })
        .await?;
        drop(prompting);
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
        if cycle.swap(false, Ordering::SeqCst) {
            // Shift-Tab: the next mode, the prompt redrawn in place, the typed text kept.
            let gateway = engine.gateway();
            gateway.set_mode(prompt::next_mode(gateway.mode()));
            if std::io::stdout().is_terminal() {
                write!(out, "{}", prompt::erase(&shown, &line, screen.columns()))?;
                out.flush()?;
            }
            keep = line;
            continue;
        }
        if rewind.swap(false, Ordering::SeqCst) {
            // Esc-Esc: the turns to go back to, and `/rewind ` ready for the number.
            let mut slash = Slash {
                engine: &mut engine,
                screen: &screen,
                costs: &costs,
                out: &mut out,
            };
            slash.run("rewind", "").await?;
            keep = if line.trim().is_empty() {
                "/rewind ".to_string()
            } else {
                line
            };
            continue;
        }
        if edit.swap(false, Ordering::SeqCst) {
            // Ctrl-G: the line edited in the editor comes back as the input, not sent yet.
            let dir = ws.paths.tern_home.join("tmp");
            let typed = line.clone();
            let edited =
                tokio::task::spawn_blocking(move || external_editor::edit(&typed, &dir)).await?;
            keep = match edited {
                Ok(text) => text,
                Err(e) => {
                    writeln!(out, "{e}")?;
                    line
                }
            };
            continue;
        }
        if expand.swap(false, Ordering::SeqCst) {
            // Ctrl-O: show the folded output, then give back what was being typed.
            let mut slash = Slash {
                engine: &mut engine,
                screen: &screen,
                costs: &costs,
                out: &mut out,
            };
            slash.run("expand", "").await?;
            keep = line;
            continue;
        }
        let line = mentions::join_continued(&line);
        let input = line.trim();
        if input.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(input);
        let mut images = Vec::new();
        let mut command = None;
        // A dragged file's absolute path starts with `/` too: that is a message, not a command.
        let slash_command = input
            .strip_prefix('/')
            .filter(|_| !pasted::starts_with_path(input, &ws.cwd));
        let text = match slash_command {
            Some(cmd) => {
                let (name, arg) = cmd.split_once(' ').unwrap_or((cmd, ""));
                let mut slash = Slash {
                    engine: &mut engine,
                    screen: &screen,
                    costs: &costs,
                    out: &mut out,
                };
                match slash.run(name, arg).await? {
                    Next::Exit => break,
                    Next::Prompt => continue,
                    Next::Send(text) => text,
                    Next::Run(invocation) => {
                        let text = invocation.text.clone();
                        command = Some(invocation);
                        text
                    }
                }
            }
            None => match attach::attach(&engine, ws, input, &mut out).await? {
                Some(attached) => {
                    images = attached.images;
                    attached.text
                }
                None => {
                    // A mention could not be read: give the line back to fix it.
                    keep = input.to_string();
                    continue;
                }
            },
        };
        let mut text = text;
        let started = std::time::Instant::now();
        let outcome = loop {
            // A turn: Ctrl-C cancels this turn only.
            let cancel = CancellationToken::new();
            let on_ctrl_c = cancel.clone();
            let ctrl_c = tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    on_ctrl_c.cancel();
                }
            });
            // Keys typed during the turn: Esc cancels it, a question claims them, the rest is
            // kept for the next prompt. The reader is stopped (joined) before anything reads the
            // terminal again (the prompt, or a plan's review).
            let reading = keys.reading(Some(cancel.clone()));
            // A custom command's model and allowed-tools hold for its own turn only; attached
            // images go with the first message only (not with a plan's feedback).
            let images = std::mem::take(&mut images);
            let outcome = match command.take() {
                Some(invocation) => engine.submit_with(&invocation, images, &cancel).await,
                None => engine.submit_with_images(&text, images, &cancel).await,
            };
            drop(reading);
            ctrl_c.abort();
            keep = keys.take_typed_ahead();
            // Plan mode: a proposed plan is approved, sent back with feedback, or dropped.
            let plan = proposed.lock().ok().and_then(|mut p| p.take());
            let Some(plan) = plan.filter(|_| outcome.status == RunStatus::Success) else {
                break outcome;
            };
            // The plan's question is read by the line editor too: news goes above it.
            let prompting = notices.as_ref().map(|n| screen.above_prompt(n.printer()));
            let (ed, answer) = plan::review(editor, &mut out).await?;
            drop(prompting);
            editor = ed;
            match answer {
                Some(answer) => {
                    text = plan::next_turn(&engine, &plan, answer, &mut out).await?;
                }
                None => break outcome,
            }
        };
        let refresh = engine.resources_later();
        helper.set_commands(custom_names(&engine));
        refresh_files(&helper, ws);
        let helper = helper.clone();
        tokio::spawn(async move { helper.set(&refresh.await) });
        if outcome.status == RunStatus::Cancelled {
            writeln!(out, "\n(cancelled)")?;
        } else if let Some(bell) = notifier.turn_ended(started.elapsed(), outcome.status.as_str()) {
            // A turn the person cancelled needs no call back; one that ended on its own does.
            write!(out, "{bell}")?;
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
    // The loop ends when the person ends the input (Ctrl-D, `/exit`).
    engine.ending_because(crate::agent::EndReason::PromptInputExit);
    engine.finish(status, last.as_ref()).await;
    Ok(0)
}

/// Lists the project's files for `@path` completion, on a thread of its own (a large tree
/// must not hold the prompt back).
fn refresh_files(helper: &ReplHelper, ws: &Workspace) {
    let (helper, cwd) = (helper.clone(), ws.cwd.clone());
    tokio::task::spawn_blocking(move || helper.set_files(files::project_files(&cwd)));
}

/// The custom commands' names, for Tab completion.
fn custom_names(engine: &Engine) -> Vec<String> {
    engine
        .custom_commands()
        .into_iter()
        .map(|c| c.name)
        .collect()
}
