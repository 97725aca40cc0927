//! One integration binary for tern-model (link once): see suite/.
// Helpers outside #[test] fns are not covered by clippy.toml's allow-*-in-tests; a panic in a
// test helper is a test failure with a backtrace, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
