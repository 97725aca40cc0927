//! The standalone `tern-web` binary: the same server as `tern serve web`.
use clap::Parser;

fn main() -> std::process::ExitCode {
    tern_tool_common::init_tracing();
    let args = tern_web::Args::parse();
    tern_tool_common::serve_main(tern_web::RUNTIME, tern_web::run(args))
}
