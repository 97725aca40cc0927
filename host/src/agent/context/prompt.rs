//! The context a model request is built from: the built-in system prompt, a
//! description of the environment, and the project's rules (`AGENTS.md`).
//!
//! These system blocks come first and change rarely, so the request prefix stays
//! byte-stable from turn to turn and the provider's prompt cache keeps hitting.

use std::path::{Path, PathBuf};

/// The built-in system prompt (`config/system_prompt.md`).
pub const SYSTEM_PROMPT: &str = include_str!("../../../../config/system_prompt.md");

/// Project rules beyond this many bytes are cut (and the model is told).
pub const MAX_RULES_BYTES: usize = 32 * 1024;

/// The system blocks for a run in `cwd`.
pub fn system_blocks(cwd: &Path, date: &str) -> Vec<String> {
    let mut blocks = vec![SYSTEM_PROMPT.trim_end().to_string(), environment(cwd, date)];
    if let Some(rules) = project_rules(cwd) {
        blocks.push(rules);
    }
    blocks
}

/// Working directory, OS, date and a git summary.
pub fn environment(cwd: &Path, date: &str) -> String {
    let mut s = format!(
        "Environment:\n- working directory: {}\n- OS: {} ({})\n- date: {date}\n",
        cwd.display(),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    match git_summary(cwd) {
        Some(g) => s.push_str(&format!("- git: {g}\n")),
        None => s.push_str("- git: not a git repository\n"),
    }
    s
}

/// `branch X` (or `detached at abc1234`), read from the repository's files.
///
/// Never by running `git`: a repository's own config can make `git status` run programs
/// (`core.fsmonitor`, filters), and this runs before any model turn or rule.
fn git_summary(cwd: &Path) -> Option<String> {
    let root = repo_root(cwd)?;
    let dot_git = root.join(".git");
    // A worktree or submodule has a `.git` file pointing at the real directory.
    let git_dir = if dot_git.is_file() {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        root.join(target)
    } else {
        dot_git
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    Some(match head.strip_prefix("ref: ") {
        Some(r) => format!("branch {}", r.strip_prefix("refs/heads/").unwrap_or(r)),
        None => format!("detached at {}", head.get(..7).unwrap_or(head)),
    })
}

/// The repository root above `cwd` (the nearest directory with `.git`).
fn repo_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// `AGENTS.md` files from the repository root down to `cwd` (a directory
/// without one falls back to `CLAUDE.md`), root first, capped in size.
pub fn project_rules(cwd: &Path) -> Option<String> {
    let stop = repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
    let mut dirs: Vec<&Path> = Vec::new();
    for d in cwd.ancestors() {
        dirs.push(d);
        if d == stop {
            break;
        }
    }
    dirs.reverse();
    let mut out = String::new();
    for dir in dirs {
        let file = ["AGENTS.md", "CLAUDE.md"]
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file());
        let Some(file) = file else { continue };
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        out.push_str(&format!(
            "Project rules from {} (follow them):\n{}\n",
            file.display(),
            text.trim_end()
        ));
    }
    if out.is_empty() {
        return None;
    }
    if out.len() > MAX_RULES_BYTES {
        let cut = (0..=MAX_RULES_BYTES)
            .rev()
            .find(|i| out.is_char_boundary(*i))
            .unwrap_or(0);
        out.truncate(cut);
        out.push_str(&format!(
            "\n[project rules cut at {MAX_RULES_BYTES} bytes]\n"
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_md_is_found_from_the_repo_root_down_with_claude_md_as_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root rule").unwrap();
        std::fs::write(root.join("a/CLAUDE.md"), "claude rule").unwrap();
        std::fs::write(root.join("a/b/AGENTS.md"), "leaf rule").unwrap();
        // Above the repo: must not be read.
        let rules = project_rules(&root.join("a/b")).unwrap();
        let root_at = rules.find("root rule").unwrap();
        let claude_at = rules.find("claude rule").unwrap();
        let leaf_at = rules.find("leaf rule").unwrap();
        assert!(root_at < claude_at && claude_at < leaf_at, "{rules}");
    }

    #[test]
    fn rules_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "x".repeat(100_000)).unwrap();
        let rules = project_rules(dir.path()).unwrap();
        assert!(rules.len() < MAX_RULES_BYTES + 100);
        assert!(rules.contains("project rules cut"));
    }

    #[test]
    fn the_branch_is_read_without_running_git_so_repo_config_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(root)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q", "-b", "feature/x"]);
        // A repository that runs a program whenever git looks at its work tree.
        let marker = root.join("fsmonitor-ran");
        let hook = root.join("hook.sh");
        std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        git(&["config", "core.fsmonitor", &hook.display().to_string()]);
        std::fs::write(root.join("f"), "x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = environment(root, "2026-12-01");
        assert!(env.contains("- git: branch feature/x"), "{env}");
        assert!(
            !marker.exists(),
            "building the context ran the repository's fsmonitor"
        );
    }

    #[test]
    fn the_prefix_is_stable_for_the_same_directory_and_day() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            system_blocks(dir.path(), "2026-11-30"),
            system_blocks(dir.path(), "2026-11-30")
        );
    }
}
