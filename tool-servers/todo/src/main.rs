//! The standalone `tern-todo` binary: the same server as `tern serve todo`.
use clap::Parser;

fn main() -> std::process::ExitCode {
    tern_tool_common::init_tracing();
    let args = tern_todo::Args::parse();
    tern_tool_common::serve_main(tern_todo::RUNTIME, tern_todo::run(args))
}
