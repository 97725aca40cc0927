//! The tern host: CLI, agent engine, commands and renderers.
//!
//! Dependencies point one way: `cli` and `workspace` describe the command line and the place it
//! runs in; `agent` is the engine (loop, pool, gateway, events), which never prints and knows no
//! terminal; `render` turns events into output; `commands` wire the three together.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod atif;
pub mod cli;
pub mod commands;
pub mod custom_commands;
pub mod error;
pub mod render;
pub mod serve_agent;
pub mod slash_commands;
pub mod telemetry;
pub mod units;
pub mod workspace;
