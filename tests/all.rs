//! One integration-test binary for the whole end-to-end suite (links once).
// Test helpers outside #[test] fns unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod suite;
