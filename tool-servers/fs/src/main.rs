//! The standalone `tern-fs` binary: the same server as `tern serve fs`.
use clap::Parser;

fn main() -> std::process::ExitCode {
    tern_tool_common::init_tracing();
    let args = tern_fs::Args::parse();
    tern_tool_common::serve_main(tern_fs::RUNTIME, tern_fs::run(args))
}
