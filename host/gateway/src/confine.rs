//! Part of stage 3: a call the built-in fs server's confinement will refuse is refused before
//! anyone is asked (issue 26, item 7). Asking first would have the person approve a write
//! outside the project that then fails anyway.
//!
//! The roots are the server's configured `--root` arguments (tern's defaults give `--root .`),
//! resolved as tern-fs resolves them: against the server's `cwd`, else the run's. The check is
//! lexical, like the path rules; tern-fs still checks the real path of what it opens.

use std::path::{Path, PathBuf};

use tern_config::{Builtin, ServerConfig, Transport};

use crate::paths::{PathScope, lexical};
use crate::permission::path_args;
use crate::rules::CallFacts;

/// The directories the built-in fs server `server` is confined to, or `None` for any other
/// server (whose confinement, if any, tern does not know).
pub fn fs_roots(server: &ServerConfig, scope: &PathScope) -> Option<Vec<PathBuf>> {
    let Transport::Stdio { args, cwd, .. } = &server.transport else {
        return None;
    };
    if server.transport.builtin() != Some(Builtin::Fs) {
        return None;
    }
    let base = cwd.as_deref().map_or_else(
        || scope.cwd.clone(),
        |c| scope.normalize_from(&scope.cwd, &c.to_string_lossy()),
    );
    let mut roots = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let value = match arg.strip_prefix("--root=") {
            Some(v) => Some(v.to_owned()),
            None if arg == "--root" => it.next().cloned(),
            None => None,
        };
        if let Some(v) = value {
            roots.push(lexical(&scope.normalize_from(&base, &v)));
        }
    }
    // tern-fs without `--root` serves its working directory.
    if roots.is_empty() {
        roots.push(lexical(&base));
    }
    Some(roots)
}

/// Why the call cannot succeed: a path argument outside every root.
pub fn refusal(f: &CallFacts<'_>, roots: &[PathBuf]) -> Option<String> {
    let outside = path_args(f)
        .into_iter()
        .find(|p| !roots.iter().any(|r| lexical(&p.path).starts_with(r)))?;
    Some(format!(
        "{} is outside the fs server's roots ({}), and tern-fs refuses every path outside them, \
         so the call would fail even if allowed; work inside the roots, or the user can add a \
         `--root` to `[mcp_servers.fs] args`",
        outside.path.display(),
        shown(roots)
    ))
}

fn shown(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r: &PathBuf| Path::display(r).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> PathScope {
        PathScope {
            cwd: "/p/proj".into(),
            roots: vec!["/p/proj".into()],
            home: None,
            tern_home: "/h".into(),
        }
    }

    fn server(builtin: Builtin, args: &[&str]) -> ServerConfig {
        ServerConfig::internal("x", builtin, args.iter().map(|a| a.to_string()).collect())
    }

    #[test]
    fn roots_come_from_the_fs_servers_root_arguments_only() {
        let s = scope();
        assert_eq!(
            fs_roots(&server(Builtin::Fs, &["--root", ".", "--root=../lib"]), &s),
            Some(vec![PathBuf::from("/p/proj"), PathBuf::from("/p/lib")])
        );
        assert_eq!(
            fs_roots(&server(Builtin::Fs, &[]), &s),
            Some(vec![PathBuf::from("/p/proj")])
        );
        // The shell's `--root` is no file confinement this check knows.
        assert_eq!(
            fs_roots(&server(Builtin::Shell, &["--root", "."]), &s),
            None
        );
    }
}
