//! Project trust: a repository's `.tern/config.toml` could start servers, set rules and env, or point the
//! model at another endpoint, so it does nothing until the user runs `tern trust` there (issue 4,
//! item 7). Trust is bound to a sha256 of the file's bytes; any change needs trust again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{ConfigError, Result};
use crate::paths::{ConfigPaths, PROJECT_CONFIG};

/// Whether a project config may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    /// Trusted, and unchanged since.
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, but the file has changed since.
    Changed,
}

/// The trusted projects, kept in `$TERN_HOME/trusted.json`.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    /// Project directory (canonical) → what was trusted.
    projects: BTreeMap<String, TrustEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustEntry {
    /// sha256 (hex) of `.tern/config.toml` when the user trusted it.
    config_sha256: String,
}

/// The hex sha256 that trust is bound to.
pub fn config_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl TrustStore {
    /// A store kept at `path`.
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// The store in `$TERN_HOME/trusted.json`.
    pub fn for_paths(paths: &ConfigPaths) -> Self {
        Self::new(paths.trust_file())
    }

    /// Trusts the current contents of `project_dir/.tern/config.toml`; returns the hash recorded.
    pub fn trust(&self, project_dir: &Path) -> Result<String> {
        let config = project_dir.join(PROJECT_CONFIG);
        let bytes = std::fs::read(&config).map_err(|err| ConfigError::Trust {
            path: config.clone(),
            message: format!("nothing to trust: {err}"),
        })?;
        let hash = config_hash(&bytes);
        let mut file = self.read()?;
        file.projects.insert(
            project_key(project_dir),
            TrustEntry {
                config_sha256: hash.clone(),
            },
        );
        self.write(&file)?;
        Ok(hash)
    }

    /// Forgets `project_dir`; returns whether it was trusted.
    pub fn untrust(&self, project_dir: &Path) -> Result<bool> {
        let mut file = self.read()?;
        let removed = file.projects.remove(&project_key(project_dir)).is_some();
        if removed {
            self.write(&file)?;
        }
        Ok(removed)
    }

    /// Whether `project_dir/.tern/config.toml`, as it is now, is trusted.
    pub fn is_trusted(&self, project_dir: &Path) -> Result<bool> {
        let config = project_dir.join(PROJECT_CONFIG);
        let bytes = std::fs::read(&config).map_err(|err| ConfigError::io(&config, err))?;
        Ok(self.status(project_dir, &bytes)? == TrustStatus::Trusted)
    }

    /// The trust status of `project_dir` for config bytes already read; the loader hashes the very
    /// bytes it then parses, so the file cannot change between the check and the use.
    pub fn status(&self, project_dir: &Path, config_bytes: &[u8]) -> Result<TrustStatus> {
        let file = self.read()?;
        Ok(match file.projects.get(&project_key(project_dir)) {
            None => TrustStatus::Untrusted,
            Some(entry) if entry.config_sha256 == config_hash(config_bytes) => TrustStatus::Trusted,
            Some(_) => TrustStatus::Changed,
        })
    }

    fn read(&self) -> Result<TrustFile> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TrustFile::default());
            }
            Err(err) => return Err(ConfigError::io(&self.path, err)),
        };
        serde_json::from_str(&text).map_err(|err| ConfigError::Trust {
            path: self.path.clone(),
            message: format!(
                "not a valid trust store ({err}); delete it and trust your projects again"
            ),
        })
    }

    /// Writes via a temporary file and a rename, so a crash never leaves a half-written store.
    fn write(&self, file: &TrustFile) -> Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|err| ConfigError::io(dir, err))?;
        }
        let mut text = serde_json::to_string_pretty(file).map_err(|err| ConfigError::Trust {
            path: self.path.clone(),
            message: err.to_string(),
        })?;
        text.push('\n');
        let tmp = self
            .path
            .with_extension(format!("json.tmp{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(|err| ConfigError::io(&tmp, err))?;
        std::fs::rename(&tmp, &self.path).map_err(|err| ConfigError::io(&self.path, err))
    }
}

/// Projects are keyed by canonical path so `./p`, `/x/../p` and a symlinked path agree.
fn project_key(project_dir: &Path) -> String {
    project_dir
        .canonicalize()
        .unwrap_or_else(|_| project_dir.to_path_buf())
        .to_string_lossy()
        .into_owned()
}
