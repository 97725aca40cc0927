//! `grep`: regex search with ripgrep's own crates, in-process.
//!
//! The pattern is handed to `grep-regex` as a value. There is no subprocess and
//! no argument vector, so a pattern like `--pre=sh` can only ever match text.

use std::fs::File;
use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, sinks::Lossy};
use ignore::overrides::OverrideBuilder;
use rmcp::model::CallToolResult;
use rustix::fs::{self as rfs, FileType, Mode, OFlags};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::glob::{search_base, walker};
use super::{Limits, failure, resolve, shown, success};
use crate::resolve::{Intent, Roots};

/// Characters of one matching line shown in `content` mode; minified files
/// would otherwise fill the context with a single line.
const MAX_LINE_CHARS: usize = 300;

/// Parameters of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct GrepParams {
    /// Regular expression to search for (Rust regex syntax, as in ripgrep), e.g.
    /// `fn\s+main` or `TODO|FIXME`. Matched line by line.
    pub pattern: String,
    /// File or directory to search: relative to the first root, or an absolute path
    /// inside a root (default: the first root). `.gitignore`d files are skipped.
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` or `src/**/*.ts`
    /// (ripgrep `--glob` rules; a leading `!` excludes instead).
    #[serde(default)]
    pub glob: Option<String>,
    /// Match without regard to case (default false).
    #[serde(default)]
    pub case_insensitive: bool,
    /// What to return: `files_with_matches` (default) lists matching files,
    /// `content` gives matching lines as `path:line:text`, `count` gives `path:count`.
    #[serde(default)]
    pub output_mode: OutputMode,
}

/// The shapes `grep` can answer in.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines as `path:line:text`.
    Content,
    /// Paths of files with at least one match.
    #[default]
    FilesWithMatches,
    /// `path:count` of matching lines per file.
    Count,
}

/// Results gathered so far, capped.
struct Hits {
    lines: Vec<String>,
    files: usize,
    cap: usize,
    truncated: bool,
    unreadable: usize,
}

pub(crate) fn grep(
    roots: &Roots,
    limits: Limits,
    p: GrepParams,
    cancel: &CancellationToken,
) -> CallToolResult {
    const ACTION: &str = "search";
    let asked = p.path.as_deref().unwrap_or(".");
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(p.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&p.pattern)
    {
        Ok(m) => m,
        Err(e) => return failure(ACTION, asked, format!("invalid regex `{}`: {e}", p.pattern)),
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let mut hits = Hits {
        lines: Vec::new(),
        files: 0,
        cap: limits.max_matches,
        truncated: false,
        unreadable: 0,
    };
    let (base, is_dir) = match search_base(roots, ACTION, p.path.as_deref()) {
        Ok(b) => b,
        Err(result) => return result,
    };
    if is_dir {
        let mut builder = walker(&base);
        if let Some(glob) = &p.glob {
            let overrides = OverrideBuilder::new(&base)
                .add(glob)
                .and_then(|o| o.build());
            match overrides {
                Ok(o) => {
                    builder.overrides(o);
                }
                Err(e) => return failure(ACTION, asked, format!("invalid glob `{glob}`: {e}")),
            }
        }
        for entry in builder.build() {
            if cancel.is_cancelled() {
                return failure(ACTION, asked, "cancelled");
            }
            let Ok(entry) = entry else { continue };
            // Only regular files; symlinks are not followed (they may lead out of the roots).
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            match open_plain(entry.path()) {
                Some(file) => search_one(
                    &mut searcher,
                    &matcher,
                    &file,
                    entry.path(),
                    p.output_mode,
                    &mut hits,
                ),
                None => hits.unreadable += 1,
            }
            if hits.truncated {
                break;
            }
        }
    } else {
        // A single file: open it through the resolver like read_file does.
        let resolved = match resolve(roots, ACTION, asked, Intent::Open) {
            Ok(r) => r,
            Err(result) => return result,
        };
        match resolved.open_file() {
            Ok((file, _)) => search_one(
                &mut searcher,
                &matcher,
                &file,
                resolved.path(),
                p.output_mode,
                &mut hits,
            ),
            Err(e) => return failure(ACTION, asked, e),
        }
    }
    report(&p, &shown(&base), hits)
}

/// Opens a walked file without following a symlink and without blocking, and
/// only if it is (still) a regular file.
fn open_plain(path: &Path) -> Option<File> {
    let fd = rfs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rfs::fstat(&fd).ok()?;
    (FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile).then(|| File::from(fd))
}

fn search_one(
    searcher: &mut Searcher,
    matcher: &grep_regex::RegexMatcher,
    file: &File,
    path: &Path,
    mode: OutputMode,
    hits: &mut Hits,
) {
    let name = shown(path);
    let mut count = 0u64;
    let result = searcher.search_file(
        matcher,
        file,
        Lossy(|line_no, line| {
            count += 1;
            match mode {
                OutputMode::Content => {
                    if hits.lines.len() == hits.cap {
                        hits.truncated = true;
                        return Ok(false);
                    }
                    hits.lines.push(format!("{name}:{line_no}:{}", clip(line)));
                    Ok(true)
                }
                // One match is enough to list the file.
                OutputMode::FilesWithMatches => Ok(false),
                OutputMode::Count => Ok(true),
            }
        }),
    );
    if result.is_err() {
        hits.unreadable += 1;
    }
    if count == 0 {
        return;
    }
    hits.files += 1;
    match mode {
        OutputMode::Content => {}
        OutputMode::FilesWithMatches | OutputMode::Count => {
            if hits.lines.len() == hits.cap {
                hits.truncated = true;
            } else if mode == OutputMode::Count {
                hits.lines.push(format!("{name}:{count}"));
            } else {
                hits.lines.push(name);
            }
        }
    }
}

/// A matching line without its terminator, cut to [`MAX_LINE_CHARS`].
fn clip(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn report(p: &GrepParams, base: &str, hits: Hits) -> CallToolResult {
    let mut text = if hits.lines.is_empty() {
        format!("no matches for `{}` under `{base}`\n", p.pattern)
    } else {
        hits.lines.join("\n") + "\n"
    };
    if hits.truncated {
        let what = match p.output_mode {
            OutputMode::Content => "matching lines",
            OutputMode::FilesWithMatches | OutputMode::Count => "files",
        };
        text.push_str(&format!(
            "[capped at {} {what}; narrow the pattern, path or glob]\n",
            hits.cap
        ));
    }
    if hits.unreadable > 0 {
        text.push_str(&format!("[{} files could not be read]\n", hits.unreadable));
    }
    let key = match p.output_mode {
        OutputMode::Content => "lines",
        OutputMode::FilesWithMatches => "files",
        OutputMode::Count => "counts",
    };
    success(
        text,
        json!({
            "path": base,
            "pattern": p.pattern,
            key: hits.lines,
            "files_matched": hits.files,
            "truncated": hits.truncated,
        }),
    )
}
