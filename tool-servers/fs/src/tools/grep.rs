//! `grep`: regex search with ripgrep's own crates, in-process.
//!
//! The pattern is handed to `grep-regex` as a value. There is no subprocess and
//! no argument vector, so a pattern like `--pre=sh` can only ever match text.
//! The tree is walked by [`crate::walk`] (in parallel, never following a link,
//! every file opened relative to its directory's handle).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, sinks::Lossy};
use ignore::overrides::{Override, OverrideBuilder};
use rmcp::model::CallToolResult;
use rustix::fs::FileType;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::glob::search_base;
use super::output::GrepOutput;
use super::{Context, failure, resolve, shown, success};
use crate::deny::Deny;
use crate::resolve::{Intent, Roots};
use crate::walk::{Entry, Flow, Rules, Visitor, walk};

/// Characters of one matching line shown in `content` mode; minified files
/// would otherwise fill the context with a single line.
const MAX_LINE_CHARS: usize = 300;

/// Parameters of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
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

/// What one worker found: `(path, lines)` per matching file, in `lines` the
/// shape the output mode asks for.
struct Found {
    files: Vec<(PathBuf, Vec<String>)>,
    unreadable: usize,
}

/// Counts results across workers, so the cap holds for the whole search.
struct Cap {
    cap: usize,
    taken: AtomicUsize,
    truncated: AtomicBool,
}

impl Cap {
    /// Takes one result slot; `false` (and the walk should stop) when none is left.
    fn take(&self) -> bool {
        if self.taken.fetch_add(1, Ordering::Relaxed) < self.cap {
            true
        } else {
            self.truncated.store(true, Ordering::Relaxed);
            false
        }
    }
}

/// Files up to this size are read whole into the worker's buffer and searched
/// as a slice: one `read` of `st_size` bytes instead of a read plus one more to
/// find the end. It is grep-searcher's own buffer size, so binary detection
/// (which looks at the first buffer) decides exactly as it does for a reader.
const SLICE_MAX: u64 = 64 * 1024;

/// What to search: an open file, or its content already read.
enum Source<'a> {
    File(&'a File),
    Slice(&'a [u8]),
}

/// One worker's search state.
struct Worker<'a> {
    /// Reused for every small file.
    buf: Vec<u8>,
    roots: &'a Roots,
    deny: &'a Deny,
    searcher: Searcher,
    matcher: RegexMatcher,
    mode: OutputMode,
    cap: &'a Cap,
    found: Found,
}

impl Visitor for Worker<'_> {
    fn visit(&mut self, entry: &Entry<'_>) -> Flow {
        // Only regular files; symlinks are never followed (they may lead out of the roots).
        if entry.kind != FileType::RegularFile {
            return Flow::Continue;
        }
        let Some((file, stat)) = entry.open_file() else {
            self.found.unreadable += 1;
            return Flow::Continue;
        };
        // Denied names never reach a visitor; another name for a denied inode does.
        if self.deny.hard_link_of(self.roots, &stat).is_some() {
            return Flow::Continue;
        }
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        let source = if size > 0 && size <= SLICE_MAX {
            self.buf.clear();
            if (&file).take(size).read_to_end(&mut self.buf).is_err() {
                self.found.unreadable += 1;
                return Flow::Continue;
            }
            Source::Slice(&self.buf)
        } else {
            Source::File(&file)
        };
        search_one(
            &mut self.searcher,
            &self.matcher,
            source,
            entry.path,
            self.mode,
            self.cap,
            &mut self.found,
        )
    }
}

pub(crate) fn grep(
    ctx: &Context,
    deny: &Deny,
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
    let searcher = || {
        SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build()
    };
    let cap = Cap {
        cap: ctx.limits.max_matches,
        taken: AtomicUsize::new(0),
        truncated: AtomicBool::new(false),
    };
    let (base, is_dir) = match search_base(&ctx.roots, ACTION, p.path.as_deref()) {
        Ok(b) => b,
        Err(result) => return result,
    };
    let mut found = Found {
        files: Vec::new(),
        unreadable: 0,
    };
    if is_dir {
        let overrides = match &p.glob {
            None => Override::empty(),
            Some(glob) => match OverrideBuilder::new(&base)
                .add(glob)
                .and_then(|o| o.build())
            {
                Ok(o) => o,
                Err(e) => return failure(ACTION, asked, format!("invalid glob `{glob}`: {e}")),
            },
        };
        if let Some(why) = deny.refusal(&ctx.roots, asked, &base, None) {
            return failure(ACTION, asked, why);
        }
        let rules = Rules::new(ctx.gitignore(), overrides, deny);
        let workers = (0..ctx.threads)
            .map(|_| Worker {
                buf: Vec::new(),
                roots: &ctx.roots,
                deny,
                searcher: searcher(),
                matcher: matcher.clone(),
                mode: p.output_mode,
                cap: &cap,
                found: Found {
                    files: Vec::new(),
                    unreadable: 0,
                },
            })
            .collect();
        let (workers, outcome) = match walk(&ctx.roots, &base, &rules, cancel, workers) {
            Ok(w) => w,
            Err(e) => return failure(ACTION, asked, e),
        };
        if outcome.cancelled {
            return failure(ACTION, asked, "cancelled");
        }
        for w in workers {
            found.files.extend(w.found.files);
            found.unreadable += w.found.unreadable;
        }
        found.unreadable += outcome.unreadable_dirs;
    } else {
        // A single file: open it through the resolver like read_file does.
        let resolved = match resolve(&ctx.roots, ACTION, asked, Intent::Open) {
            Ok(r) => r,
            Err(result) => return result,
        };
        match resolved.open_file() {
            Ok((file, stat)) => {
                if let Some(why) = deny.refusal(&ctx.roots, asked, resolved.path(), Some(&stat)) {
                    return failure(ACTION, asked, why);
                }
                search_one(
                    &mut searcher(),
                    &matcher,
                    Source::File(&file),
                    resolved.path(),
                    p.output_mode,
                    &cap,
                    &mut found,
                );
            }
            Err(e) => return failure(ACTION, asked, e),
        }
    }
    // Workers finish in any order; results are reported sorted by path.
    found.files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    report(&p, &shown(&base), found, &cap)
}

fn search_one(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    source: Source<'_>,
    path: &Path,
    mode: OutputMode,
    cap: &Cap,
    found: &mut Found,
) -> Flow {
    let mut count = 0u64;
    let mut lines = Vec::new();
    let mut full = false;
    let sink = Lossy(|line_no, line: &str| {
        count += 1;
        match mode {
            OutputMode::Content => {
                if !cap.take() {
                    full = true;
                    return Ok(false);
                }
                lines.push((line_no, clip(line)));
                Ok(true)
            }
            // One match is enough to list the file.
            OutputMode::FilesWithMatches => Ok(false),
            OutputMode::Count => Ok(true),
        }
    });
    let result = match source {
        Source::File(file) => searcher.search_file(matcher, file, sink),
        Source::Slice(bytes) => searcher.search_slice(matcher, bytes, sink),
    };
    if result.is_err() {
        found.unreadable += 1;
    }
    if count == 0 {
        return Flow::Continue;
    }
    let name = shown(path);
    let out = match mode {
        OutputMode::Content => lines
            .into_iter()
            .map(|(n, text)| format!("{name}:{n}:{text}"))
            .collect(),
        OutputMode::FilesWithMatches | OutputMode::Count => {
            if !cap.take() {
                return Flow::Stop;
            }
            if mode == OutputMode::Count {
                vec![format!("{name}:{count}")]
            } else {
                vec![name]
            }
        }
    };
    found.files.push((path.to_path_buf(), out));
    if full { Flow::Stop } else { Flow::Continue }
}

/// A matching line without its terminator, cut to [`MAX_LINE_CHARS`].
fn clip(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn report(p: &GrepParams, base: &str, found: Found, cap: &Cap) -> CallToolResult {
    let files = found.files.len();
    let lines: Vec<String> = found.files.into_iter().flat_map(|(_, l)| l).collect();
    let truncated = cap.truncated.load(Ordering::Relaxed);
    let mut notes = Vec::new();
    if lines.is_empty() {
        notes.push(format!("no matches for `{}` under `{base}`", p.pattern));
    }
    if truncated {
        let what = match p.output_mode {
            OutputMode::Content => "matching lines",
            OutputMode::FilesWithMatches | OutputMode::Count => "files",
        };
        notes.push(format!(
            "[capped at {} {what}; narrow the pattern, path or glob]",
            cap.cap
        ));
    }
    if found.unreadable > 0 {
        notes.push(format!(
            "[{} files or directories could not be read]",
            found.unreadable
        ));
    }
    let mut text = String::new();
    for line in lines.iter().chain(&notes) {
        text.push_str(line);
        text.push('\n');
    }
    let mut structured = GrepOutput {
        files: None,
        lines: None,
        counts: None,
        files_matched: files,
        truncated,
        notes,
    };
    *match p.output_mode {
        OutputMode::Content => &mut structured.lines,
        OutputMode::FilesWithMatches => &mut structured.files,
        OutputMode::Count => &mut structured.counts,
    } = Some(lines);
    success(text, &structured)
}
