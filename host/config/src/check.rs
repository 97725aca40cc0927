//! Checks every section uses: the error for a bad value, durations, server names. A leaf module,
//! so that the sections and the layer that gathers them never import each other.

use std::time::Duration;

use crate::error::{ConfigError, Location};

/// The error for a value that parses but is not allowed, at `at` under `key`.
pub(crate) fn invalid(at: Location, key: &str, message: &str) -> ConfigError {
    ConfigError::Invalid {
        at,
        key: key.to_owned(),
        message: message.to_owned(),
    }
}

/// A positive number of seconds, or `None`.
pub(crate) fn seconds(value: f64) -> Option<Duration> {
    if value > 0.0 {
        Duration::try_from_secs_f64(value).ok()
    } else {
        None
    }
}

/// Whether `name` can be a server name: it prefixes tool names, which providers limit to
/// `[a-zA-Z0-9_-]`.
pub(crate) fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
