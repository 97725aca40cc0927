//! End-to-end tests of the gateway through the real pool and real servers (`tern-fs`,
//! `tern-shell`, `tern-test-server`). One integration binary; the cases live in `suite/`.
// Harness helpers are not #[test] functions, so clippy.toml's test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
