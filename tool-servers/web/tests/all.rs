//! Integration tests: the real `tern-web` binary over MCP (and the library's
//! redirect loop with an injected resolver), against a tiny HTTP server on loopback.
// Helpers here are test code too: a panic is a test failure with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
