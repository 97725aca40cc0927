//! The standalone `tern-plan` binary: the same server as `tern serve plan`.
use clap::Parser;

fn main() -> std::process::ExitCode {
    tern_tool_common::init_tracing();
    let args = tern_plan::Args::parse();
    tern_tool_common::serve_main(tern_plan::RUNTIME, tern_plan::run(args))
}
