//! When roots take away what a server's own arguments gave it.
//!
//! Some servers replace the directories named on their command line with the client's roots
//! the moment the client offers any (`@modelcontextprotocol/server-filesystem` does): offered
//! only tern's working directory, such a server can no longer read the directory it was
//! configured for (issue 11, item 8). tern cannot know which servers behave so, so it points out
//! the possibility wherever it exists: a directory in a server's arguments that no root covers.

use std::path::{Path, PathBuf};

use crate::spec::TransportSpec;

/// Existing directories named by a stdio server's arguments that none of `roots` contains.
/// Nothing when roots are off (`None`): then nothing is narrowed.
pub(crate) fn narrowed(transport: &TransportSpec, roots: Option<&[PathBuf]>) -> Vec<PathBuf> {
    let (TransportSpec::Stdio { args, cwd, .. }, Some(roots)) = (transport, roots) else {
        return Vec::new();
    };
    let roots: Vec<PathBuf> = roots.iter().map(|r| canonical(r)).collect();
    args.iter()
        .filter_map(|arg| {
            // `--root=/x` and `/x` alike.
            let value = arg.split_once('=').map_or(arg.as_str(), |(_, v)| v);
            let path = Path::new(value);
            let path = match cwd {
                Some(dir) if path.is_relative() => dir.join(path),
                _ if path.is_relative() => return None,
                _ => path.to_path_buf(),
            };
            path.is_dir().then(|| canonical(&path))
        })
        .filter(|dir| !roots.iter().any(|root| dir.starts_with(root)))
        .collect()
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(args: &[&Path]) -> TransportSpec {
        TransportSpec::Stdio {
            program: "server".into(),
            args: args.iter().map(|p| p.display().to_string()).collect(),
            env: Default::default(),
            pass_env: Vec::new(),
            cwd: None,
        }
    }

    #[test]
    fn a_directory_outside_every_root_is_reported() {
        let work = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let inside = work.path().join("sub");
        std::fs::create_dir(&inside).unwrap();
        let t = stdio(&[data.path(), &inside, Path::new("/no/such/dir")]);
        let roots = [work.path().to_path_buf()];
        assert_eq!(
            narrowed(&t, Some(&roots)),
            [std::fs::canonicalize(data.path()).unwrap()]
        );
        assert!(narrowed(&t, None).is_empty(), "roots off narrow nothing");
        let both = [work.path().to_path_buf(), data.path().to_path_buf()];
        assert!(narrowed(&t, Some(&both)).is_empty());
    }
}
