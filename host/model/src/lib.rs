//! Model adapters (stub; being built).
#![deny(clippy::print_stdout, clippy::print_stderr)]
