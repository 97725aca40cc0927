//! Errors a user can act on: every one names the file, line and key it is about.

use std::fmt;
use std::path::PathBuf;

use crate::expand::ExpandError;

/// `Result` with [`ConfigError`].
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// Where in which config source something was written.
///
/// `column` is 0 for sources without columns (a `-c` argument, a `--allow` flag), whose `line` is then
/// the 1-based position of that argument on the command line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// The file, or a pseudo path such as `-c`, `--allow` or [`crate::DEFAULTS_SOURCE`].
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters), or 0 when the source has no columns.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.column == 0 {
            write!(f, "{}:{}", self.file.display(), self.line)
        } else {
            write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
        }
    }
}

/// Everything that can go wrong loading, trusting or editing config.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Bad TOML, an unknown key or a value of the wrong type.
    #[error("{at}: {message}")]
    Toml {
        /// Where.
        at: Location,
        /// The dotted key the error is about, when it is about one.
        key: Option<String>,
        /// What is wrong, naming the key.
        message: String,
    },
    /// Well-formed TOML that does not make a valid config (a server without a command, a bad rule…).
    #[error("{at}: {key}: {message}")]
    Invalid {
        /// Where.
        at: Location,
        /// The dotted key, e.g. `mcp_servers.git.url`.
        key: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A `${VAR}` that cannot be expanded.
    #[error("{at}: mcp_servers.{server}.{key}: {error}")]
    Expand {
        /// Where the server is defined (the last layer that set it).
        at: Location,
        /// Server name.
        server: String,
        /// The key holding the reference, e.g. `env.TOKEN` or `args[2]`.
        key: String,
        /// What is wrong; [`ExpandError::variable`] names the variable.
        error: ExpandError,
    },
    /// A `-c key=value` argument that is not of that shape.
    #[error("-c {arg:?}: {message}")]
    Override {
        /// The argument as given.
        arg: String,
        /// What is wrong.
        message: String,
    },
    /// `$TERN_HOME` is not set and there is no home directory to put `~/.tern` in.
    #[error("cannot locate tern's home: neither TERN_HOME nor HOME is set")]
    NoHome,
    /// The trust store is unreadable or there is nothing to trust.
    #[error("{}: {message}", path.display())]
    Trust {
        /// The trust store or project config.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An `.mcp.json` that cannot be imported, or a config.toml it cannot be merged into.
    #[error("import: {message}")]
    Import {
        /// What is wrong, naming the server.
        message: String,
    },
    /// A plugin folder, marketplace or the plugin state that cannot be used (the message names
    /// the file, and its line for bad JSON).
    #[error("{message}")]
    Plugin {
        /// What is wrong and where.
        message: String,
    },
    /// The managed policy cannot be read, or forbids what was asked (`--mode yolo`).
    #[error("{message}")]
    Policy {
        /// What is wrong, naming the policy file, with a hint.
        message: String,
    },
    /// The config text cannot take the requested edit (e.g. `permissions` is not a table).
    #[error("cannot edit config: {message}")]
    Edit {
        /// What is wrong.
        message: String,
    },
}

impl ConfigError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
