//! `tern run`: one goal, headless.

use std::{
    io::{IsTerminal, Read, Write},
    path::PathBuf,
    sync::Arc,
};

use tern_gateway::{Approver, HeadlessApprover};
use tokio_util::sync::CancellationToken;

use crate::{
    agent::{Engine, EngineOptions, Subscriber, TurnOutcome, attach::Attachment},
    cli::OutputFormat,
    error::UsageError,
    render::{JsonlPrinter, Mode, TerminalPrinter},
    workspace::Workspace,
};

/// Reads the goal from the argument, else from stdin when it is not a terminal.
pub fn read_goal(arg: Option<String>) -> Result<String, UsageError> {
    let goal = match arg {
        Some(g) if g != "-" => g,
        _ if !std::io::stdin().is_terminal() => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| UsageError(format!("cannot read the goal from stdin: {e}")))?;
            s
        }
        _ => String::new(),
    };
    if goal.trim().is_empty() {
        return Err(UsageError(
            "no goal: pass it as an argument (`tern run \"fix the tests\"`) or on stdin".into(),
        ));
    }
    Ok(goal)
}

/// `/NAME args` names a custom command: its expansion is the goal (as in the REPL), run with
/// the command's `model` and `allowed-tools` for that turn. A command whose frontmatter cannot
/// be applied is a usage error before anything starts.
fn custom_invocation(
    ws: &Workspace,
    goal: &str,
) -> Result<Option<crate::custom_commands::Invocation>, UsageError> {
    let Some(line) = goal.trim_start().strip_prefix('/') else {
        return Ok(None);
    };
    let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let Some(command) = crate::custom_commands::find(&ws.config.extension_dirs, name) else {
        return Ok(None);
    };
    command
        .invoke(args)
        .map(Some)
        .map_err(|e| UsageError(format!("custom command /{name}: {e}")))
}

/// Refuses `--image` files that do not exist before anything starts (their content is
/// checked once the run is up: a workspace file is read through the gateway).
pub fn check_image_args(ws: &Workspace, images: &[PathBuf]) -> Result<(), UsageError> {
    for path in images {
        let full = ws.cwd.join(path);
        if !full.is_file() {
            let what = if full.exists() {
                "not a regular file"
            } else {
                "no such file"
            };
            return Err(UsageError(format!(
                "--image {}: {what}\nhint: --image takes a {} file (relative paths start at {})",
                path.display(),
                tern_protocol::image::formats_list(),
                ws.cwd.display()
            )));
        }
    }
    Ok(())
}

/// Reads the `--image` files for the goal's message and shows each as attached; the message
/// (with its hint) when one cannot be attached or the model takes no images.
async fn attach_images(
    engine: &Engine,
    ws: &Workspace,
    paths: &[PathBuf],
) -> Result<Vec<Attachment>, String> {
    let mut images = Vec::new();
    for path in paths {
        let attached = engine
            .attach_image(path, &ws.cwd)
            .await
            .map_err(|e| format!("--image {e}"))?;
        images.push(attached);
    }
    engine.check_images(&images)?;
    let mut err = std::io::stderr();
    for a in &images {
        let _ = writeln!(err, "{}", a.label());
    }
    Ok(images)
}

/// Runs `goal` (with the images at `images`) to its end and returns the exit code.
pub async fn run(
    ws: &Workspace,
    goal: String,
    images: Vec<PathBuf>,
    output: OutputFormat,
    session: Option<String>,
) -> anyhow::Result<i32> {
    check_image_args(ws, &images)?;
    let printer: Box<dyn Subscriber> = match output {
        OutputFormat::Jsonl => Box::new(JsonlPrinter),
        OutputFormat::Text => Box::new(TerminalPrinter::auto(Mode::Headless).in_workspace(&ws.cwd)),
    };
    let command = custom_invocation(ws, &goal)?;
    // Headless: "ask" becomes "deny", and the result says which --allow would permit it.
    let approver: Arc<dyn Approver> = Arc::new(HeadlessApprover);
    let options = EngineOptions {
        goal: goal.clone(),
        session,
        ..EngineOptions::default()
    };
    let mut engine = Engine::start(
        ws,
        options,
        crate::agent::Outputs::for_workspace(ws, printer)?,
        approver,
    )
    .await?;

    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let outcome = match engine.required_failure() {
        Some(message) => {
            engine.report_error(message.clone());
            TurnOutcome::failed(message)
        }
        None => match attach_images(&engine, ws, &images).await {
            Ok(images) => match &command {
                Some(invocation) => engine.submit_with(invocation, images, &cancel).await,
                None => engine.submit_with_images(&goal, images, &cancel).await,
            },
            Err(message) => {
                // Nothing was sent: a usage problem, said like one on stderr (exit 2); the
                // events record it in `run_finished`.
                let outcome = TurnOutcome::failed(message.clone());
                ctrl_c.abort();
                engine.finish(outcome.status, Some(&outcome)).await;
                return Err(UsageError(message).into());
            }
        },
    };
    ctrl_c.abort();
    let status = outcome.status;
    engine.finish(status, Some(&outcome)).await;
    Ok(status.exit_code())
}
