//! The standalone `tern-catalog` binary: the same server as `tern serve catalog`.
use clap::Parser;

fn main() -> std::process::ExitCode {
    tern_tool_common::init_tracing();
    let args = tern_catalog::Args::parse();
    tern_tool_common::serve_main(tern_catalog::RUNTIME, tern_catalog::run(args))
}
