//! The standalone `tern-lsp` binary: the same server as `tern serve lsp`.
use clap::Parser;

fn main() -> std::process::ExitCode {
    tern_tool_common::init_tracing();
    let args = tern_lsp::Args::parse();
    tern_tool_common::serve_main(tern_lsp::RUNTIME, tern_lsp::run(args))
}
