//! The root the server is confined to: every file a tool reads goes through tern-fs's
//! resolver (one component at a time from a directory handle, symlinks checked), so a path
//! the model sends cannot reach outside it, and locations a language server returns outside
//! it (a standard library, a dependency cache) are named but never read.

use std::io::Read;
use std::path::{Path, PathBuf};

use tern_fs::resolve::{Intent, Roots};

/// Largest file a tool syncs to a language server.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The root, opened.
pub struct Workspace {
    roots: Roots,
    root: PathBuf,
}

impl Workspace {
    /// Opens `dir` as the root.
    pub fn open(dir: &Path) -> Result<Self, String> {
        let roots = Roots::open(&[dir.to_path_buf()]).map_err(|e| e.to_string())?;
        let root = roots
            .paths()
            .next()
            .map(Path::to_path_buf)
            .ok_or_else(|| format!("--root {} could not be opened", dir.display()))?;
        Ok(Self { roots, root })
    }

    /// The root's real path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Reads the text file at `path` (relative to the root, or absolute inside it): its real
    /// path and its content.
    pub fn read(&self, path: &str) -> Result<(PathBuf, String), String> {
        let resolved = self
            .roots
            .resolve(Path::new(path), Intent::Open)
            .map_err(|e| e.to_string())?;
        let (file, stat) = resolved.open_file().map_err(|e| e.to_string())?;
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        if size > MAX_FILE_BYTES {
            return Err(format!(
                "it is {size} bytes, over the {MAX_FILE_BYTES}-byte limit for a source file"
            ));
        }
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
        Ok((resolved.path().to_path_buf(), text))
    }

    /// The text of a file a language server named, when it lies inside the root.
    pub fn read_inside(&self, path: &Path) -> Option<String> {
        if !path.starts_with(&self.root) {
            return None;
        }
        self.read(path.to_str()?).ok().map(|(_, text)| text)
    }

    /// `path` as the model should see it: relative to the root when inside it.
    pub fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
            _ => path.to_string_lossy().into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_root_are_refused_and_shown_absolute() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(outer.path().join("secret.py"), "s = 1\n").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret.py"), root.join("link.py")).unwrap();
        let ws = Workspace::open(&root).unwrap();
        let (real, text) = ws.read("a.py").unwrap();
        assert_eq!(text, "x = 1\n");
        assert_eq!(ws.shown(&real), "a.py");
        assert!(ws.read("../secret.py").is_err());
        assert!(ws.read("link.py").unwrap_err().contains("outside"));
        let secret = std::fs::canonicalize(outer.path().join("secret.py")).unwrap();
        assert_eq!(ws.read_inside(&secret), None);
        assert_eq!(ws.shown(&secret), secret.to_string_lossy());
    }
}
