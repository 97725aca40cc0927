//! `--export swebench`: predictions in SWE-bench's format, one JSON object per line with
//! `instance_id`, `model_name_or_path` and `model_patch` (the harness's `KEY_INSTANCE_ID`,
//! `KEY_MODEL`, `KEY_PREDICTION`), the patch being what the agent changed in the workspace as
//! a `git apply`-able diff.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde::Serialize;

/// One line of `predictions.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub instance_id: String,
    pub model_name_or_path: String,
    pub model_patch: String,
}

/// The files of a tree (relative paths → bytes), as `copy_tree` copies them: `.git` and what
/// `.gitignore` leaves out stay out, and so do the top-level names in `exclude`.
fn files(root: &Path, exclude: &[String]) -> anyhow::Result<BTreeMap<PathBuf, Vec<u8>>> {
    let mut out = BTreeMap::new();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_global(false)
        .parents(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walk {
        let entry = entry?;
        if !entry.file_type().is_some_and(|k| k.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let top = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        if top.is_some_and(|t| exclude.contains(&t)) {
            continue;
        }
        out.insert(rel.to_path_buf(), std::fs::read(entry.path())?);
    }
    Ok(out)
}

/// What changed from `before` to `after`, as a unified diff `git apply` takes (`a/` and `b/`
/// prefixes, new and deleted files marked). Files that are not UTF-8 text are left out.
pub fn workspace_diff(before: &Path, after: &Path, exclude: &[String]) -> anyhow::Result<String> {
    let old = files(before, exclude)?;
    let new = files(after, exclude)?;
    let mut paths: Vec<&PathBuf> = old.keys().chain(new.keys()).collect();
    paths.sort();
    paths.dedup();
    let mut patch = String::new();
    for path in paths {
        let p = path.to_string_lossy();
        let (a, b) = (old.get(path), new.get(path));
        if a == b {
            continue;
        }
        let text = |bytes: Option<&Vec<u8>>| match bytes {
            None => Some(String::new()),
            Some(b) => String::from_utf8(b.clone()).ok(),
        };
        let (Some(a_text), Some(b_text)) = (text(a), text(b)) else {
            continue;
        };
        let (from, to) = (
            if a.is_some() {
                format!("a/{p}")
            } else {
                "/dev/null".into()
            },
            if b.is_some() {
                format!("b/{p}")
            } else {
                "/dev/null".into()
            },
        );
        patch.push_str(&format!("diff --git a/{p} b/{p}\n"));
        if a.is_none() {
            patch.push_str("new file mode 100644\n");
        } else if b.is_none() {
            patch.push_str("deleted file mode 100644\n");
        }
        let diff = similar::TextDiff::from_lines(&a_text, &b_text);
        patch.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&from, &to)
                .to_string(),
        );
    }
    Ok(patch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_marks_changed_new_and_deleted_files() {
        let before = tempfile::tempdir().unwrap();
        let after = tempfile::tempdir().unwrap();
        for (dir, files) in [
            (
                before.path(),
                &[
                    ("a.txt", "one\ntwo\n"),
                    ("gone.txt", "x\n"),
                    ("Dockerfile", "FROM a\n"),
                ][..],
            ),
            (
                after.path(),
                &[
                    ("a.txt", "one\n2\n"),
                    ("new/b.txt", "hi\n"),
                    ("Dockerfile", "FROM b\n"),
                ][..],
            ),
        ] {
            for (name, text) in files {
                let p = dir.join(name);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
        }
        let patch =
            workspace_diff(before.path(), after.path(), &["Dockerfile".to_string()]).unwrap();
        assert_eq!(
            patch,
            "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n\
             diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n\
             @@ -1 +0,0 @@\n-x\n\
             diff --git a/new/b.txt b/new/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new/b.txt\n\
             @@ -0,0 +1 @@\n+hi\n"
        );
        assert_eq!(
            workspace_diff(before.path(), before.path(), &[]).unwrap(),
            ""
        );
    }
}
