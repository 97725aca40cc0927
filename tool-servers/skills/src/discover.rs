//! Finding skills: the folders holding a `SKILL.md` below the skills folders the host names.
//!
//! Following the Agent Skills client guide: a skills folder's subfolders that contain a file
//! named exactly `SKILL.md` are skills; a subfolder without one is searched a little deeper
//! (collections group skills by topic), within bounds so a huge tree cannot stall startup;
//! `.git`, `node_modules` and hidden folders are skipped. On a name collision the skill found
//! first wins — project folders are searched before user folders, so a project's skill
//! overrides the user's — and the shadowed one is reported. A broken skill is reported and
//! skipped; it never stops the others.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::files;
use crate::frontmatter::{self, Frontmatter, Severity};

/// A `SKILL.md` larger than this is refused (the specification recommends under 500 lines).
pub const MAX_SKILL_MD_BYTES: u64 = 1024 * 1024;
/// Folder levels below a skills folder searched for `SKILL.md`.
const MAX_DEPTH: usize = 3;
/// Folders looked at per skills folder, at most.
const MAX_DIRS: usize = 2000;

/// Whose skills a folder holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The project's (`.agents/skills`, `.tern/skills`, `.claude/skills`).
    Project,
    /// The user's (`~/.agents/skills`, `$TERN_HOME/skills`, `~/.claude/skills`).
    User,
}

/// A skills folder to search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The folder whose subfolders are skills.
    pub dir: PathBuf,
    /// Whose it is.
    pub scope: Scope,
}

/// A skill that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its frontmatter.
    pub frontmatter: Frontmatter,
    /// The skill's folder, symlinks resolved: the folder its files are confined to.
    pub dir: PathBuf,
    /// The skills folder it was found in.
    pub source: Source,
}

/// Something wrong with a skill (or a skills folder), for `list` and `--check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct Notice {
    /// The file (a `SKILL.md`) or folder concerned.
    pub file: PathBuf,
    /// 1-based line in `file`, when the problem has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// `error`: the skill was skipped; `warning`: it loads anyway.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match self.line {
            Some(line) => write!(
                f,
                "{}:{line}: {severity}: {}",
                self.file.display(),
                self.message
            ),
            None => write!(f, "{}: {severity}: {}", self.file.display(), self.message),
        }
    }
}

/// A skills folder and whether it exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct Searched {
    /// The folder.
    pub dir: PathBuf,
    /// Whose skills it holds.
    pub scope: Scope,
    /// False when the folder does not exist (which is fine: most do not).
    pub exists: bool,
}

/// Everything discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    /// The valid skills, sorted by name.
    pub skills: Vec<Skill>,
    /// Skills skipped and rules broken, in the order found.
    pub notices: Vec<Notice>,
    /// The folders searched, in order of precedence.
    pub searched: Vec<Searched>,
}

impl Catalog {
    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.frontmatter.name == name)
    }

    /// Skills the model may start itself (not `disable-model-invocation`).
    pub fn offered(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.frontmatter.model_invocable)
    }

    /// True when a skill was skipped for an error.
    pub fn has_errors(&self) -> bool {
        self.notices.iter().any(|n| n.severity == Severity::Error)
    }
}

/// The skills folders of a project, in precedence order: the cross-client `.agents/skills`,
/// tern's own `.tern/skills`, then Claude Code's `.claude/skills`.
pub fn project_sources(project: &Path) -> Vec<Source> {
    [".agents/skills", ".tern/skills", ".claude/skills"]
        .iter()
        .map(|rel| Source {
            dir: project.join(rel),
            scope: Scope::Project,
        })
        .collect()
}

/// Searches `sources` in order (earlier wins a name collision).
pub fn discover(sources: &[Source]) -> Catalog {
    let mut catalog = Catalog::default();
    let mut seen_dirs: HashSet<PathBuf> = HashSet::new();
    for source in sources {
        let exists = source.dir.is_dir();
        catalog.searched.push(Searched {
            dir: source.dir.clone(),
            scope: source.scope,
            exists,
        });
        if !exists {
            if source.dir.exists() {
                catalog.notices.push(Notice {
                    file: source.dir.clone(),
                    line: None,
                    severity: Severity::Warning,
                    message: "this skills folder is not a directory; ignored".to_string(),
                });
            }
            continue;
        }
        let mut budget = MAX_DIRS;
        let mut found = Vec::new();
        search(
            &source.dir,
            0,
            &mut budget,
            &mut found,
            &mut catalog.notices,
        );
        for dir in found {
            let Ok(real) = std::fs::canonicalize(&dir) else {
                continue;
            };
            // The same folder reached twice (one skills folder linked to another) is one skill.
            if !seen_dirs.insert(real.clone()) {
                continue;
            }
            if let Some(skill) = load(&dir, real, source, &mut catalog.notices) {
                match catalog.get(&skill.frontmatter.name) {
                    Some(first) => catalog.notices.push(Notice {
                        file: skill.dir.join("SKILL.md"),
                        line: None,
                        severity: Severity::Warning,
                        message: format!(
                            "skill `{}` is shadowed by the one in {} (found first); not offered",
                            skill.frontmatter.name,
                            first.dir.display()
                        ),
                    }),
                    None => catalog.skills.push(skill),
                }
            }
        }
    }
    catalog
        .skills
        .sort_by(|a, b| a.frontmatter.name.cmp(&b.frontmatter.name));
    catalog
}

/// Collects the folders below `dir` that hold a `SKILL.md`, in name order.
fn search(
    dir: &Path,
    depth: usize,
    budget: &mut usize,
    found: &mut Vec<PathBuf>,
    notices: &mut Vec<Notice>,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            notices.push(Notice {
                file: dir.to_path_buf(),
                line: None,
                severity: Severity::Warning,
                message: format!("cannot list this folder: {e}"),
            });
            return;
        }
    };
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.as_encoded_bytes();
            !(name.starts_with(b".") || name == b"node_modules")
        })
        .map(|e| e.path())
        // A skill folder may be a symlink (a skill kept in a repository of its own): followed
        // here, where the user put it; its files are then confined to where it leads.
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        if *budget == 0 {
            notices.push(Notice {
                file: dir.to_path_buf(),
                line: None,
                severity: Severity::Warning,
                message: format!(
                    "stopped searching after {MAX_DIRS} folders; skills further down are not found"
                ),
            });
            return;
        }
        *budget -= 1;
        if sub.join("SKILL.md").is_file() {
            found.push(sub);
        } else if depth + 1 < MAX_DEPTH {
            search(&sub, depth + 1, budget, found, notices);
        }
    }
}

/// Reads and validates the skill in `dir` (whose real path is `real`); reports and skips it
/// when it is broken.
fn load(dir: &Path, real: PathBuf, source: &Source, notices: &mut Vec<Notice>) -> Option<Skill> {
    let skill_md = dir.join("SKILL.md");
    let text = match files::read_text(&real, "SKILL.md", MAX_SKILL_MD_BYTES) {
        Ok((_, text)) => text,
        Err(e) => {
            notices.push(Notice {
                file: skill_md,
                line: None,
                severity: Severity::Error,
                message: format!("cannot read it: {e}; skipped"),
            });
            return None;
        }
    };
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let notice = |p: frontmatter::Problem| Notice {
        file: skill_md.clone(),
        line: p.line,
        severity: p.severity,
        message: match p.severity {
            Severity::Error => format!("{}; the skill is skipped", p.message),
            Severity::Warning => p.message,
        },
    };
    match frontmatter::parse(&text, &folder) {
        Ok(parsed) => {
            notices.extend(parsed.warnings.into_iter().map(notice));
            Some(Skill {
                frontmatter: parsed.frontmatter,
                dir: real,
                source: source.clone(),
            })
        }
        Err(problems) => {
            notices.extend(problems.into_iter().map(notice));
            None
        }
    }
}
