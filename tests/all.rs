//! One integration-test binary for the whole end-to-end suite (links once).
mod suite;
