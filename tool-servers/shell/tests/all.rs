//! Integration tests: each spawns the real `tern-shell` binary and speaks MCP to
//! it with rmcp's client. One test binary keeps link time down.
// Helpers here are test code too: a panic is a test failure with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
