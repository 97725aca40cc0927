//! The `tern` binary. Errors are printed once, here, at the edge.
use std::process::ExitCode;

use clap::Parser;
use tern::cli::{Cli, Command, ServeCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { server } => serve(server),
    }
}

/// `tern serve NAME`: the same code path as the standalone binaries.
fn serve(server: ServeCommand) -> ExitCode {
    tern_tool_common::init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match server {
            ServeCommand::Fs(args) => tern_fs::run(args).await,
            ServeCommand::Shell(args) => tern_shell::run(args).await,
            ServeCommand::Web(args) => tern_web::run(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}
