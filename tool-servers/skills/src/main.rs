//! The standalone `tern-skills` binary: the same server as `tern serve skills`.
use std::io::Write as _;

use clap::Parser;

fn main() -> std::process::ExitCode {
    tern_tool_common::init_tracing();
    let args = tern_skills::Args::parse();
    if args.check {
        // Not serving: stdout is the report, not the protocol.
        let (report, ok) = tern_skills::check(&args);
        let _ = writeln!(std::io::stdout(), "{report}");
        return if ok {
            std::process::ExitCode::SUCCESS
        } else {
            std::process::ExitCode::FAILURE
        };
    }
    tern_tool_common::serve_main(tern_skills::RUNTIME, tern_skills::run(args))
}
