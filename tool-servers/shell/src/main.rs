//! The standalone `tern-shell` binary: the same server as `tern serve shell`.
use clap::Parser;

fn main() -> std::process::ExitCode {
    tern_tool_common::init_tracing();
    let args = tern_shell::Args::parse();
    tern_tool_common::serve_main(tern_shell::RUNTIME, tern_shell::run(args))
}
