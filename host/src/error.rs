//! The errors the binary turns into exit code 2 (usage or configuration), as opposed to 1 (a
//! failed run). Everything else is `anyhow` with context, printed once at the edge.

/// A usage or configuration problem found before the run starts: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A config file problem (file, line, key): exit code 2.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ConfigFailure(#[from] pub tern_config::ConfigError);
