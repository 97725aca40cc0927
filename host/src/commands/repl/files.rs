//! `@path` mentions of project files: the files Tab completes (fuzzy, as in Claude Code:
//! `@mrs` finds `host/src/main.rs`) and the words of a line that name one. The list honours
//! `.gitignore` and skips hidden directories; the file itself is read through the gateway
//! (`Engine::read_mentioned_file`), never here.

use std::path::Path;

/// Files listed at most (a huge tree must not stall the prompt).
const MAX_FILES: usize = 20_000;
/// Completions offered at most.
const MAX_MATCHES: usize = 30;

/// The project's files under `cwd`, relative, `/`-separated, sorted.
pub(super) fn project_files(cwd: &Path) -> Vec<String> {
    let mut out: Vec<String> = ignore::WalkBuilder::new(cwd)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            let rel = e.path().strip_prefix(cwd).ok()?;
            Some(rel.to_string_lossy().replace('\\', "/"))
        })
        .take(MAX_FILES)
        .collect();
    out.sort();
    out
}

/// How well `path` matches `query` (lower is better), or `None`: a substring beats a scattered
/// subsequence, a match in the file name beats one in the directories, shorter paths win ties.
fn score(query: &str, path: &str) -> Option<usize> {
    let (q, p) = (query.to_lowercase(), path.to_lowercase());
    let name = p.rsplit('/').next().unwrap_or(&p);
    if name.starts_with(&q) {
        return Some(p.len());
    }
    if name.contains(&q) {
        return Some(1_000 + p.len());
    }
    if p.contains(&q) {
        return Some(2_000 + p.len());
    }
    // A subsequence: the gaps between the matched characters count against it.
    let mut gaps = 0;
    let mut chars = p.chars();
    for c in q.chars() {
        let mut skipped = 0;
        loop {
            match chars.next() {
                Some(x) if x == c => break,
                Some(_) => skipped += 1,
                None => return None,
            }
        }
        gaps += skipped;
    }
    Some(10_000 + gaps * 10 + p.len())
}

/// The files matching `query`, best first.
pub(super) fn fuzzy(query: &str, files: &[String]) -> Vec<String> {
    let mut scored: Vec<(usize, &String)> = files
        .iter()
        .filter_map(|f| score(query, f).map(|s| (s, f)))
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(MAX_MATCHES)
        .map(|(_, f)| f.clone())
        .collect()
}

/// The project files `line` mentions: words `@PATH` naming a file under `cwd` (trailing
/// punctuation dropped, as at the end of a sentence); `@server:uri` words are resources.
pub(super) fn mentioned(line: &str, cwd: &Path, servers: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for word in line.split_whitespace() {
        let Some(rest) = word.strip_prefix('@') else {
            continue;
        };
        if let Some((server, _)) = rest.split_once(':')
            && servers.iter().any(|s| s == server)
        {
            continue;
        }
        let path = [
            rest,
            rest.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']),
        ]
        .into_iter()
        .find(|p| !p.is_empty() && cwd.join(p).is_file());
        if let Some(p) = path
            && !out.iter().any(|o| o == p)
        {
            out.push(p.to_string());
        }
    }
    out
}

/// The block a read file becomes in the message.
pub(super) fn block(path: &str, text: &str) -> String {
    format!(
        "<file path=\"{}\">\n{}\n</file>",
        path.replace('&', "&amp;").replace('"', "&quot;"),
        text.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_prefers_names_then_substrings_then_scattered_letters() {
        let files: Vec<String> = [
            "host/src/main.rs",
            "docs/domain.md",
            "src/remains.txt",
            "x/y",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(fuzzy("main", &files)[0], "host/src/main.rs");
        // Scattered letters: fewer gaps first; "src/remains.txt" has no `r` after its `m`.
        assert_eq!(fuzzy("mrs", &files), ["host/src/main.rs"]);
        assert_eq!(
            fuzzy("srm", &files),
            ["src/remains.txt", "host/src/main.rs"]
        );
        assert!(fuzzy("zzz", &files).is_empty());
    }

    #[test]
    fn files_honour_gitignore_and_mentions_name_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "x").unwrap();
        std::fs::write(dir.path().join("skip.log"), "x").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        assert_eq!(project_files(dir.path()), ["src/lib.rs"]);
        let servers = vec!["docs".to_string()];
        assert_eq!(
            mentioned("see @src/lib.rs, @docs:a @missing.rs", dir.path(), &servers),
            ["src/lib.rs"]
        );
    }
}
