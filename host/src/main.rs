//! The `tern` binary. Errors are printed once, here, at the edge, as `error: … / caused by: …`.
//! Exit codes: 0 success, 1 failure, 2 usage or config error, 130 interrupted.
use std::{io::Write, process::ExitCode};

use clap::Parser;
use tern::{
    cli::{Cli, Command, McpCommand, RunFlags, ServeCommand},
    commands,
    error::{ConfigFailure, UsageError},
    workspace::Workspace,
};

/// Whether a person is at the keyboard: stdin and stdout are both a terminal.
fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

fn main() -> ExitCode {
    // Inside the namespace `tern eval` made for a Harbor verifier (internal, not a command a
    // person types): no runtime, no tracing, nothing but the mounts and the exec.
    let mut raw = std::env::args_os().skip(1);
    if raw.next().as_deref() == Some(std::ffi::OsStr::new(commands::eval::isolate::SUBCOMMAND)) {
        let args: Vec<std::ffi::OsString> = raw.collect();
        return ExitCode::from(u8::try_from(commands::eval::isolate::enter(&args)).unwrap_or(1));
    }
    let cli = Cli::parse();
    // Plain `tern` is a new REPL session; `tern resume` continues one.
    let mut command = cli.command.unwrap_or(Command::Resume {
        session_id: None,
        fresh: true,
        all: false,
        flags: RunFlags::default(),
    });
    // `tern -m NAME` before a command: the command's own `--model` wins.
    if let Some(model) = cli.model.clone() {
        match &mut command {
            Command::Resume { flags, .. } | Command::Run { flags, .. } => {
                flags.model.get_or_insert(model);
            }
            _ => {
                return report(
                    &UsageError(
                        "--model before a command goes with the REPL, `run` or `resume`\n\
                         hint: put it after the command, e.g. `tern eval --model NAME`"
                            .into(),
                    )
                    .into(),
                );
            }
        }
    }
    if let Command::Serve { server } = command {
        return serve(server, &cli.global);
    }
    if let Command::Completions { shell } = command {
        let mut cmd = <Cli as clap::CommandFactory>::command();
        // Generated into memory, then written: `tern completions bash | head` closes the pipe
        // early, and a reader that stops reading is not an error worth a panic or a message.
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut cmd, "tern", &mut script);
        return match std::io::stdout().write_all(&script) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(e) => report(&anyhow::Error::from(e).context("cannot write the completions")),
        };
    }
    init_tracing();
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => return report(&e.into()),
    };
    let load = cli.global.load_options();
    // `tern acp` loads a workspace per editor session, in the folder the editor opened: none
    // here (its config errors are answered to the editor, its notices are events).
    if let Command::Acp { flags } = command {
        let base = commands::acp::Base { load, flags };
        return match runtime.block_on(commands::acp::run(base)) {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(e) => report(&e),
        };
    }
    // Before the workspace: a broken plugin must not stop `tern plugin remove` from removing it.
    if let Command::Plugin { command } = command {
        let mut out = std::io::stdout();
        return match commands::plugin::run(cli.global.cd.as_deref(), &load, command, &mut out) {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(e) => report(&e),
        };
    }
    let result = runtime.block_on(async {
        let mut ws = Workspace::load(cli.global.cd.as_deref(), &load)?;
        let mut err = std::io::stderr();
        for notice in ws.notices() {
            let _ = writeln!(err, "notice: {notice}");
        }
        // Not locked for the whole command: the run's printers write to stdout from other
        // threads.
        let mut out = std::io::stdout();
        match command {
            Command::Serve { .. }
            | Command::Completions { .. }
            | Command::Acp { .. }
            | Command::Plugin { .. } => Ok(0),
            Command::Resume {
                session_id,
                fresh,
                all,
                flags,
            } => {
                if let Some(notice) = flags.apply(&mut ws.config) {
                    let _ = writeln!(err, "notice: {notice}");
                }
                let sessions = ws.paths.sessions_dir();
                let session = match session_id {
                    Some(id) => Some(id),
                    None if fresh => None,
                    // On a terminal the person picks; elsewhere the newest one is taken.
                    None if interactive() => {
                        match commands::repl::pick_session(&sessions, &ws.cwd, all, &mut out)
                            .await?
                        {
                            Some(id) => Some(id),
                            None => return Ok(0),
                        }
                    }
                    None if all => Some(tern::agent::session::latest(&sessions)?),
                    None => Some(tern::agent::session::latest_in(&sessions, &ws.cwd)?),
                };
                commands::repl::run(&ws, session).await
            }
            Command::Run {
                goal,
                goal_flag,
                output_format,
                continue_session,
                images,
                flags,
            } => {
                if let Some(notice) = flags.apply(&mut ws.config) {
                    let _ = writeln!(err, "notice: {notice}");
                }
                let goal = commands::run::read_goal(goal.or(goal_flag))?;
                let session = if continue_session {
                    Some(tern::agent::session::latest_in(
                        &ws.paths.sessions_dir(),
                        &ws.cwd,
                    )?)
                } else {
                    None
                };
                commands::run::run(&ws, goal, images, output_format, session).await
            }
            Command::Tools { json } => commands::tools::run(&ws, json, &mut out, &mut err).await,
            Command::Trust => commands::trust::run(&ws, &mut out),
            Command::Hooks { command } => match command {
                tern::cli::HooksCommand::List => commands::hooks::list(&ws, &mut out),
                tern::cli::HooksCommand::Import { file, user } => {
                    commands::hooks::import(&ws, &file, user, &mut out)
                }
            },
            Command::Sandbox {
                sandbox,
                network,
                command,
            } => commands::sandbox::run(&ws, sandbox, network, &command, &mut err),
            Command::Runs { limit } => commands::runs::list(&ws, limit, &mut out),
            Command::Rewind {
                session_id,
                to,
                code,
                conversation,
                undo,
            } => {
                let what = commands::rewind::what(code, conversation);
                commands::rewind::run(&ws, session_id, to, what, undo, &mut out).await
            }
            Command::Trace { run_id, format } => {
                commands::runs::trace(&ws, &run_id, format, &mut out)
            }
            Command::Eval {
                command: Some(tern::cli::EvalCommand::Convert { src, dest }),
                ..
            } => commands::eval::convert::run(&ws.cwd.join(src), &ws.cwd.join(dest), &mut out),
            Command::Eval {
                command: None,
                dir,
                replay,
                oracle,
                local,
                jobs,
                repeat,
                report,
                baseline,
                token_tolerance,
                step_tolerance,
                model,
                variant,
                jobs_dir,
                export,
                flags,
            } => {
                let one_model = (model.len() == 1).then(|| model[0].clone());
                let args = commands::eval::EvalArgs {
                    dir: dir.unwrap_or_default(),
                    agent: if oracle {
                        commands::eval::Agent::Oracle
                    } else if replay {
                        commands::eval::Agent::Replay
                    } else {
                        commands::eval::Agent::Live
                    },
                    local,
                    jobs,
                    repeat,
                    report,
                    baseline,
                    tolerance: commands::eval::Tolerance {
                        tokens_pct: token_tolerance,
                        steps_pct: step_tolerance,
                    },
                    flags: flags.run_flags(one_model),
                    models: if model.len() > 1 { model } else { Vec::new() },
                    variants: variant,
                    jobs_dir,
                    export_swebench: export == Some(tern::cli::ExportFormat::Swebench),
                };
                commands::eval::run(&ws, &load, args, &mut out).await
            }
            Command::Demo { speed } => commands::demo::run(&ws, speed, &mut out).await,
            Command::Replay {
                source,
                in_place,
                workspace,
                keep,
                output_format,
            } => {
                let args = commands::replay::ReplayArgs {
                    source,
                    in_place,
                    workspace,
                    keep,
                    output: output_format,
                };
                commands::replay::run(&ws, &load, args).await
            }
            Command::Mcp { command } => match command {
                McpCommand::List { json } => commands::mcp::list(&ws, json, &mut out).await,
                McpCommand::Doctor { name, json } => {
                    commands::mcp::doctor(&ws, name.as_deref(), json, &mut out).await
                }
                McpCommand::Import { file } => commands::mcp::import(&ws, &file, &mut out),
                McpCommand::Approve { name } => commands::mcp::approve(&ws, &name, &mut out).await,
                McpCommand::Login { name } => {
                    let err = std::sync::Arc::new(std::sync::Mutex::new(std::io::stderr()));
                    commands::login::login(&ws, &name, &mut out, err).await
                }
                McpCommand::Logout { name } => commands::login::logout(&ws, &name, &mut out).await,
            },
        }
    });
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => report(&e),
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// Logs go to stderr, tern's own errors only by default: what a person needs to see (retries,
/// server failures) is already an event the printer shows, in one clean line. Libraries' log
/// lines (rmcp's `worker quit with fatal …`) appear only when asked for with `TERN_LOG` (or
/// `RUST_LOG`), e.g. `TERN_LOG=debug`. Colours only on a terminal.
fn init_tracing() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("TERN_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off,tern=error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Prints an error chain once and picks the exit code (2 for usage and config errors).
fn report(e: &anyhow::Error) -> ExitCode {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "error: {e}");
    for cause in e.chain().skip(1) {
        let _ = writeln!(err, "caused by: {cause}");
    }
    if e.downcast_ref::<ConfigFailure>().is_some()
        || e.downcast_ref::<UsageError>().is_some()
        || e.downcast_ref::<tern::agent::session::SessionError>()
            .is_some()
    {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}

/// `tern serve NAME`: the same code path as the standalone binaries (the agent server, tern
/// itself, also takes the global config flags).
fn serve(server: ServeCommand, global: &tern::cli::GlobalArgs) -> ExitCode {
    use tern_tool_common::{Runtime, serve_main};
    tern_tool_common::init_tracing();
    match server {
        ServeCommand::Fs(args) => serve_main(tern_fs::RUNTIME, tern_fs::run(args)),
        ServeCommand::Shell(mut args) => {
            // The editor-terminal runner is started as `tern serve shell --run-plan FILE`.
            args.invoked_as = vec!["serve".into(), "shell".into()];
            serve_main(tern_shell::RUNTIME, tern_shell::run(args))
        }
        ServeCommand::Web(args) => serve_main(tern_web::RUNTIME, tern_web::run(args)),
        ServeCommand::Lsp(args) => serve_main(tern_lsp::RUNTIME, tern_lsp::run(args)),
        ServeCommand::Catalog(args) => serve_main(tern_catalog::RUNTIME, tern_catalog::run(args)),
        ServeCommand::Todo(args) => serve_main(tern_todo::RUNTIME, tern_todo::run(args)),
        ServeCommand::Plan(args) => serve_main(tern_plan::RUNTIME, tern_plan::run(args)),
        // `--check` reports on stdout and exits, like the standalone binary; not a server then.
        ServeCommand::Skills(args) if args.check => {
            let (report, ok) = tern_skills::check(&args);
            let _ = writeln!(std::io::stdout(), "{report}");
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        ServeCommand::Skills(args) => serve_main(tern_skills::RUNTIME, tern_skills::run(args)),
        // A sub-run drives a model and a pool of its own servers: the host's runtime.
        ServeCommand::Agent(args) => serve_main(
            Runtime::Workers(2),
            tern::serve_agent::serve(args, global.load_options(), global.cd.as_deref()),
        ),
    }
}
