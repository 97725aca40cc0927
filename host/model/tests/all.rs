//! One integration binary for tern-model (link once): see suite/.
mod suite;
