//! One integration binary for tern-checkpoint (keeps link time down); the cases live in `suite/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
