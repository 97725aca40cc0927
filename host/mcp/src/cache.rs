//! The last tool list of each server, remembered across runs (`$TERN_HOME/tool-cache.json`), so
//! a server that is still starting can have its tools offered at once and confirmed when it is
//! up — one slow server never holds the first model request back.
//!
//! An entry is keyed by what launches the server (its name, command and arguments, or URL): a
//! different command line is a different server. The server's version is kept with its tools;
//! when the server comes up with other tools, the table takes the real ones and says so.
//!
//! The MCP era the server spoke is kept too: a server that never answers `server/discover` would
//! otherwise cost the probe's timeout (seconds) at the start of every run, not only the first.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Mutex,
};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{
    connect::Era,
    spec::{ServerSpec, TransportSpec},
    table::ToolDef,
};

/// One remembered list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) server_version: String,
    pub(crate) tools: Vec<ToolDef>,
    /// The era it connected in (absent in files written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) era: Option<Era>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    entries: BTreeMap<String, Entry>,
}

/// The cache file, read once at start and written when a list changes.
#[derive(Debug)]
pub(crate) struct ToolCache {
    path: Option<PathBuf>,
    file: Mutex<File>,
}

impl ToolCache {
    /// The cache at `path` (none: nothing is remembered). A missing or unreadable file is an
    /// empty cache: it only ever saves time.
    pub(crate) fn load(path: Option<&Path>) -> Self {
        let file = path
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Self {
            path: path.map(Path::to_path_buf),
            file: Mutex::new(file),
        }
    }

    /// What launches `spec`, as a key.
    pub(crate) fn key(spec: &ServerSpec) -> Option<String> {
        let launch = match &spec.transport {
            TransportSpec::Stdio { program, args, .. } => {
                format!("stdio\0{program}\0{}", args.join("\0"))
            }
            TransportSpec::Http { url, .. } => format!("http\0{url}"),
            TransportSpec::Unavailable { .. } => return None,
        };
        let digest = Sha256::digest(format!("{}\0{launch}", spec.name).as_bytes());
        Some(digest.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The tools remembered for `key`.
    pub(crate) fn get(&self, key: &str) -> Option<Entry> {
        self.file.lock().ok()?.entries.get(key).cloned()
    }

    /// Remembers `tools` and the `era` they were listed in for `key`; writes the file when it
    /// changed.
    pub(crate) fn put(&self, key: String, server_version: &str, tools: &[ToolDef], era: Era) {
        let Some(path) = &self.path else { return };
        let Ok(mut file) = self.file.lock() else {
            return;
        };
        let entry = Entry {
            server_version: server_version.to_owned(),
            tools: tools.to_vec(),
            era: Some(era),
        };
        if file.entries.get(&key) == Some(&entry) {
            return;
        }
        file.entries.insert(key, entry);
        if let Err(e) = write_private(path, &file) {
            tracing::debug!("tool cache {} not written: {e}", path.display());
        }
    }
}

/// Written whole, then renamed over, `0600`: the cache is under `$TERN_HOME` like everything
/// of tern's.
fn write_private(path: &Path, file: &File) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(file).map_err(std::io::Error::other)?;
    tern_protocol::files::write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            title: None,
            description: "d".into(),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            annotations: Default::default(),
            command_arg: None,
            edits_files: true,
        }
    }

    #[test]
    fn lists_survive_a_restart_keyed_by_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tool-cache.json");
        let spec = |args: &[&str]| {
            ServerSpec::new(
                "s",
                TransportSpec::Stdio {
                    program: "srv".into(),
                    args: args.iter().map(|a| a.to_string()).collect(),
                    env: Default::default(),
                    pass_env: vec![],
                    cwd: None,
                },
            )
        };
        let key = ToolCache::key(&spec(&["--a"])).unwrap();
        ToolCache::load(Some(&path)).put(key.clone(), "1.0", &[def("x")], Era::Initialize);
        let again = ToolCache::load(Some(&path));
        assert_eq!(again.get(&key).unwrap().tools, vec![def("x")]);
        assert_eq!(again.get(&key).unwrap().era, Some(Era::Initialize));
        assert!(
            again
                .get(&ToolCache::key(&spec(&["--b"])).unwrap())
                .is_none()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // A damaged file is an empty cache, not an error.
        std::fs::write(&path, "not json").unwrap();
        assert!(ToolCache::load(Some(&path)).get(&key).is_none());
    }
}
