//! Where a path argument really points: `~`, `.`, `..` and the working directory resolved, and
//! whether that is inside the roots or inside a protected config location.
//!
//! Rules match the *normalized absolute* path (issue 4, item 2), so `./src/../.env`,
//! `/work/p/.env` and `.env` are the same file to a rule. Normalization is lexical (the file may
//! not exist yet); protection additionally resolves symlinks of the part that does exist, so a
//! link pointing into `.tern/` does not launder a write.

use std::path::{Component, Path, PathBuf};

/// The directories a path is resolved against and checked for.
#[derive(Debug, Clone)]
pub struct PathScope {
    /// The working directory relative paths start from.
    pub cwd: PathBuf,
    /// The directories tools may work in (what the pool offers as MCP roots).
    pub roots: Vec<PathBuf>,
    /// The user's home, for `~`.
    pub home: Option<PathBuf>,
    /// `$TERN_HOME`: write-protected, like every `.tern/` directory.
    pub tern_home: PathBuf,
}

impl PathScope {
    /// `raw` as a normalized absolute path: `~` expanded, relative paths joined to `cwd`, `.` and
    /// `..` folded (never above `/`).
    pub fn normalize(&self, raw: &str) -> PathBuf {
        self.normalize_from(&self.cwd, raw)
    }

    /// Like [`PathScope::normalize`], relative to `base` (a shell command's `cd`).
    pub fn normalize_from(&self, base: &Path, raw: &str) -> PathBuf {
        let expanded = match (raw.strip_prefix('~'), &self.home) {
            (Some(""), Some(home)) => home.clone(),
            (Some(rest), Some(home)) if rest.starts_with('/') => {
                home.join(rest.trim_start_matches('/'))
            }
            _ => PathBuf::from(raw),
        };
        let joined = if expanded.is_absolute() {
            expanded
        } else {
            base.join(expanded)
        };
        lexical(&joined)
    }

    /// The names under which rules must see `path` (normalized): itself, the path with its
    /// symlinks resolved (what is actually opened: `link` → `.env`), and that resolved path
    /// written under the root as the rules name it (when a root is itself reached through a
    /// symlink, `/tmp/p` being `/private/tmp/p`).
    pub fn variants(&self, path: &Path) -> Vec<PathBuf> {
        let mut out = vec![path.to_path_buf()];
        let resolved = resolve_existing(path);
        if resolved != path {
            for root in &self.roots {
                let real_root = resolve_existing(root);
                if let Ok(rest) = resolved.strip_prefix(&real_root) {
                    let under_root = lexical(&root.join(rest));
                    if !out.contains(&under_root) {
                        out.push(under_root);
                    }
                }
            }
            if !out.contains(&resolved) {
                out.push(resolved);
            }
        }
        out
    }

    /// Whether `path` (normalized) lies inside one of the roots.
    pub fn in_roots(&self, path: &Path) -> bool {
        self.roots
            .iter()
            .any(|root| path.starts_with(lexical(root)))
    }

    /// Whether `path` (normalized) is a protected config location or inside one: `$TERN_HOME`, or
    /// any directory named `.tern`, compared without regard to case (case-insensitive
    /// filesystems would otherwise let `.TERN/config.toml` through), also after following the
    /// symlinks of the part of the path that exists.
    pub fn is_protected(&self, path: &Path) -> bool {
        self.protected_lexically(path) || self.protected_lexically(&resolve_existing(path))
    }

    /// Whether `path` (normalized) is an existing file in a skills folder of a protected
    /// location (`$TERN_HOME/skills/…` or a project's `.tern/skills/…`), both as written and with
    /// its symlinks resolved: a skill's script, which an interpreter reads and runs (issue 19:
    /// skills' scripts run with `shell__run` under the sandbox). Writing there stays protected.
    pub fn is_protected_skill_file(&self, path: &Path) -> bool {
        let resolved = resolve_existing(path);
        if !resolved.is_file() {
            return false;
        }
        let skills = [
            lexical(&self.tern_home).join("skills"),
            resolve_existing(&self.tern_home).join("skills"),
        ];
        let in_skills = |p: &Path| {
            let components: Vec<Component<'_>> = p.components().collect();
            skills.iter().any(|s| p.starts_with(s))
                || components.windows(2).any(|pair| {
                    matches!(pair, [Component::Normal(a), Component::Normal(b)]
                        if *a == ".tern" && *b == "skills")
                })
        };
        in_skills(path) && in_skills(&resolved)
    }

    fn protected_lexically(&self, path: &Path) -> bool {
        let lower = |p: &Path| PathBuf::from(p.to_string_lossy().to_lowercase());
        let path = lower(path);
        let homes = [lexical(&self.tern_home), resolve_existing(&self.tern_home)];
        if homes.iter().any(|home| path.starts_with(lower(home))) {
            return true;
        }
        path.components()
            .any(|c| matches!(c, Component::Normal(name) if name == ".tern"))
    }
}

/// Folds `.` and `..` without touching the filesystem.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The canonical form of the longest existing prefix of `path`, with the rest appended: symlinks
/// resolved as far as the filesystem knows them, for files that do not exist yet too.
fn resolve_existing(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut out = canonical;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return lexical(&out);
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(dir: &Path) -> PathScope {
        PathScope {
            cwd: dir.join("proj"),
            roots: vec![dir.join("proj")],
            home: Some(dir.join("home")),
            tern_home: dir.join("home/.config/tern-home"),
        }
    }

    #[test]
    fn normalizes_tilde_dot_and_dotdot() {
        let w = ws(Path::new("/x"));
        assert_eq!(w.normalize("a/./b/../c"), Path::new("/x/proj/a/c"));
        assert_eq!(w.normalize("~/.ssh/id"), Path::new("/x/home/.ssh/id"));
        assert_eq!(w.normalize("~"), Path::new("/x/home"));
        assert_eq!(w.normalize("/../../etc"), Path::new("/etc"));
        assert_eq!(w.normalize("../other"), Path::new("/x/other"));
        assert!(w.in_roots(&w.normalize("src/x")));
        assert!(!w.in_roots(&w.normalize("../proj2/x")));
    }

    #[test]
    fn config_locations_are_protected_in_any_case_and_before_they_exist() {
        let dir = tempfile::tempdir().unwrap();
        let w = ws(dir.path());
        for p in [
            ".tern/config.toml",
            ".TERN/Config.toml",
            "sub/.Tern/new-file",
            "../home/.config/tern-home/config.toml",
            "../home/.config/TERN-HOME/audit.jsonl",
        ] {
            assert!(w.is_protected(&w.normalize(p)), "{p}");
        }
        for p in ["src/main.rs", ".ternx/a", "tern/a"] {
            assert!(!w.is_protected(&w.normalize(p)), "{p}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn variants_name_what_a_symlink_opens() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join(".env"), "").unwrap();
        std::os::unix::fs::symlink(real.join(".env"), real.join("link")).unwrap();
        // The root as the user named it goes through a symlink of its own.
        std::os::unix::fs::symlink(&real, dir.path().join("proj")).unwrap();
        let w = ws(dir.path());
        let v = w.variants(&w.normalize("link"));
        assert!(v.contains(&dir.path().join("proj/.env")), "{v:?}");
        assert!(
            v.contains(&real.canonicalize().unwrap().join(".env")),
            "{v:?}"
        );
        assert_eq!(w.variants(Path::new("/")), [PathBuf::from("/")]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_into_a_config_dir_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let w = ws(dir.path());
        std::fs::create_dir_all(dir.path().join("proj/.tern")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("proj/.tern"), dir.path().join("proj/link"))
            .unwrap();
        assert!(w.is_protected(&w.normalize("link/config.toml")));
    }
}
