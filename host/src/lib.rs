//! The tern host: CLI, agent loop, server pool, gateway, context and events.
//!
//! The engine (loop, gateway, pool) emits typed events and never prints;
//! renderers subscribe to them. Commands write to the writer they are given.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod cli;
pub mod commands;
pub mod context;
pub mod events;
pub mod render;
pub mod repl;
pub mod runner;
pub mod servers;
pub mod session;
pub mod tools;
