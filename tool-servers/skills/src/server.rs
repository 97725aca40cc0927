//! The MCP face of tern-skills: `load`, `read_file` and `list`, and the listing in the
//! server's instructions.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, MetaObject, RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::deny::{DENY_META_KEY, Deny};
use crate::discover::{Catalog, MAX_SKILL_MD_BYTES, Notice, Scope, Searched, Skill};
use crate::{files, frontmatter, render};

/// The result `_meta` key of a loaded skill: `{"name", "directory", "allowed_tools"}`, so a
/// host knows which skill is active (and what it declares) without parsing text — tern's
/// gateway narrows the turn to `allowed_tools` with `[skills] honor_allowed_tools`.
pub const SKILL_META: &str = tern_tool_common::meta::SKILL;

/// Largest file `read_file` reads; bigger ones are for the shell (`head`, `grep`).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Most text one `read_file` call returns; `next_offset` says where to go on.
const MAX_RETURNED_BYTES: usize = 256 * 1024;

/// Where the listing of skills (name and description) is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Listing {
    /// In the server's instructions and in `load`'s description (any MCP client sees it).
    Both,
    /// In the server's instructions only: `load`'s definition stays the same whatever skills
    /// exist, for a host that pins tool definitions and puts instructions in its prompt.
    Instructions,
}

/// Parameters of `load`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct LoadParams {
    /// The skill's name, as listed.
    pub name: String,
}

/// Parameters of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct ReadFileParams {
    /// The skill's name.
    pub skill: String,
    /// The file: relative to the skill's folder (e.g. `references/forms.md`), or an absolute
    /// path inside it.
    pub path: String,
    /// First line to return, 1-based (default 1).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// Lines to return at most (default: the rest of the file, up to 256 KiB).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// `structuredContent` of `load`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct Loaded {
    /// The skill's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its folder (absolute, symlinks resolved): relative paths in the body start here.
    pub directory: PathBuf,
    /// The body of its SKILL.md.
    pub body: String,
    /// Its other files, relative to `directory`.
    pub files: Vec<String>,
    /// True when the skill has more files than listed.
    pub files_truncated: bool,
    /// `allowed-tools` as declared (not enforced by this server).
    pub allowed_tools: Vec<String>,
    /// `license`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// `compatibility`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    /// `metadata`.
    pub metadata: BTreeMap<String, String>,
}

/// `structuredContent` of `read_file`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct FileRead {
    /// The skill.
    pub skill: String,
    /// The file's real path.
    pub path: PathBuf,
    /// The lines returned.
    pub content: String,
    /// First line returned (1-based).
    pub first_line: u64,
    /// Last line returned (0 for an empty file).
    pub last_line: u64,
    /// Lines in the file.
    pub total_lines: u64,
    /// Where to continue, when lines are left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
}

/// One skill in `list`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct Entry {
    /// The skill's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its folder.
    pub directory: PathBuf,
    /// `project` or `user`.
    pub scope: Scope,
    /// The skills folder it was found in.
    pub source: PathBuf,
    /// False for `disable-model-invocation: true`: only the user may start it.
    pub model_invocable: bool,
}

/// `structuredContent` of `list`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct Report {
    /// The valid skills, by name.
    pub skills: Vec<Entry>,
    /// Skills skipped (`error`) and rules broken (`warning`), each with its file and line.
    pub problems: Vec<Notice>,
    /// The skills folders searched, in order of precedence.
    pub searched: Vec<Searched>,
}

/// The skills server. Cheap to clone (rmcp clones the handler per session).
#[derive(Clone)]
pub struct SkillsServer {
    catalog: Arc<Catalog>,
    instructions: Option<String>,
    /// Built once, after discovery: descriptions and schemas say which skills exist.
    tool_router: ToolRouter<SkillsServer>,
}

fn failure(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

fn structured<T: Serialize>(text: String, value: &T) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(serde_json::to_value(value).unwrap_or(Value::Null));
    result
}

impl SkillsServer {
    /// The skill called `name`, or the result telling the model which names exist.
    fn skill(&self, name: &str) -> Result<&Skill, CallToolResult> {
        self.catalog.get(name).ok_or_else(|| {
            let names: Vec<&str> = self
                .catalog
                .skills
                .iter()
                .map(|s| s.frontmatter.name.as_str())
                .collect();
            failure(format!(
                "There is no skill named `{name}`. The skills are: {}.",
                names.join(", ")
            ))
        })
    }

    /// A server over `catalog`, with the listing where `listing` says.
    pub fn new(catalog: Catalog, listing: Listing) -> Self {
        let mut router = Self::tool_router();
        let offered: Vec<Value> = catalog
            .offered()
            .map(|s| Value::String(s.frontmatter.name.clone()))
            .collect();
        if catalog.skills.is_empty() {
            // Nothing to load: no tool costs the model any context. `list` stays only to report
            // why skills were skipped.
            router.remove_route("load");
            router.remove_route("read_file");
            if catalog.notices.is_empty() {
                router.remove_route("list");
            }
        } else if let Some(route) = router.map.get_mut("load") {
            let with_listing = listing == Listing::Both;
            route.attr.description =
                Some(Cow::Owned(render::load_description(&catalog, with_listing)));
            if with_listing && !offered.is_empty() {
                // The client guide's advice: an enum keeps the model from inventing names.
                let mut schema = (*route.attr.input_schema).clone();
                if let Some(Value::Object(name)) =
                    schema.get_mut("properties").and_then(|p| p.get_mut("name"))
                {
                    name.insert("enum".into(), Value::Array(offered));
                }
                route.attr.input_schema = Arc::new(schema);
            }
        }
        Self {
            instructions: render::instructions(&catalog),
            catalog: Arc::new(catalog),
            tool_router: router,
        }
    }
}

#[tool_router]
impl SkillsServer {
    #[tool(
        name = "load",
        description = "Load an Agent Skill by name.",
        output_schema = schema_for_output::<Loaded>(),
        annotations(
            title = "Load a skill",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn load(
        &self,
        Parameters(p): Parameters<LoadParams>,
        meta: RequestMetaObject,
    ) -> CallToolResult {
        let skill = match self.skill(&p.name) {
            Ok(s) => s,
            Err(result) => return result,
        };
        let deny = match Deny::for_call(&skill.dir, meta.get(DENY_META_KEY)) {
            Ok(deny) => deny,
            Err(e) => return failure(format!("cannot load skill `{}`: {e}", p.name)),
        };
        // Read again at activation: the body the model gets is the file as it is now.
        let text = match files::read_text(&skill.dir, "SKILL.md", MAX_SKILL_MD_BYTES) {
            Ok((_, text)) => text,
            Err(e) => return failure(format!("cannot load skill `{}`: {e}", p.name)),
        };
        let folder = skill
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parsed = match frontmatter::parse(&text, &folder) {
            Ok(parsed) => parsed,
            Err(problems) => {
                let lines: Vec<String> = problems
                    .iter()
                    .map(|p| match p.line {
                        Some(line) => format!("- line {line}: {}", p.message),
                        None => format!("- {}", p.message),
                    })
                    .collect();
                return failure(format!(
                    "cannot load skill `{}`: its SKILL.md ({}) changed and is now invalid:\n{}",
                    p.name,
                    skill.dir.join("SKILL.md").display(),
                    lines.join("\n")
                ));
            }
        };
        let mut listing = files::list(&skill.dir).unwrap_or_default();
        // Files the host denies are left out without a word: not even their names show.
        listing
            .files
            .retain(|f| deny.rule(&skill.dir.join(f)).is_none());
        let text = render::loaded(skill, &parsed.body, &listing);
        let fm = &skill.frontmatter;
        let mut result = structured(
            text,
            &Loaded {
                name: fm.name.clone(),
                description: fm.description.clone(),
                directory: skill.dir.clone(),
                body: parsed.body,
                files: listing.files,
                files_truncated: listing.truncated,
                allowed_tools: fm.allowed_tools.clone(),
                license: fm.license.clone(),
                compatibility: fm.compatibility.clone(),
                metadata: fm.metadata.clone(),
            },
        );
        let mut meta = MetaObject::new();
        meta.insert(
            SKILL_META.into(),
            json!({
                "name": fm.name,
                "directory": skill.dir,
                "allowed_tools": fm.allowed_tools,
            }),
        );
        result.meta = Some(meta);
        result
    }

    #[tool(
        name = "read_file",
        description = "Read a text file of a loaded Agent Skill (a reference, a template, a \
            script's source): `path` is relative to the skill's folder, or absolute inside it. \
            Paths that lead outside the skill's folder are refused. Returns up to 256 KiB; \
            continue at `next_offset`.",
        output_schema = schema_for_output::<FileRead>(),
        annotations(
            title = "Read a skill's file",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn read_file(
        &self,
        Parameters(p): Parameters<ReadFileParams>,
        meta: RequestMetaObject,
    ) -> CallToolResult {
        let skill = match self.skill(&p.skill) {
            Ok(s) => s,
            Err(result) => return result,
        };
        let refused = |why: String| {
            failure(format!(
                "cannot read `{}` of skill `{}`: {why}",
                p.path, p.skill
            ))
        };
        let deny = match Deny::for_call(&skill.dir, meta.get(DENY_META_KEY)) {
            Ok(deny) => deny,
            Err(e) => return refused(e.to_string()),
        };
        // The path as named (anchored at the folder), then the real one opened.
        if let Some(rule) = deny.rule(&skill.dir.join(&p.path)) {
            return refused(format!("denied by the host's rule `{rule}`"));
        }
        let (real, text) = match files::read_text(&skill.dir, &p.path, MAX_FILE_BYTES) {
            Ok(read) => read,
            Err(e) => {
                let hint = match e {
                    files::ReadError::TooLarge { .. } | files::ReadError::Binary { .. } => {
                        "\nhint: use your shell tool on it instead (e.g. `head`, `grep`, or run it)"
                    }
                    files::ReadError::Folder(_)
                    | files::ReadError::Outside { .. }
                    | files::ReadError::LinkEscapes { .. }
                    | files::ReadError::Open(_)
                    | files::ReadError::Io { .. } => "",
                };
                return failure(format!(
                    "cannot read `{}` of skill `{}`: {e}{hint}",
                    p.path, p.skill
                ));
            }
        };
        if let Some(rule) = deny.rule(&real) {
            return refused(format!("denied by the host's rule `{rule}`"));
        }
        let read = slice(&text, p.offset.unwrap_or(1), p.limit);
        let mut shown = read.content.clone();
        if let Some(next) = read.next_offset {
            shown.push_str(&format!(
                "\n[lines {}-{} of {}; continue with offset {next}]",
                read.first_line, read.last_line, read.total_lines
            ));
        }
        structured(
            shown,
            &FileRead {
                skill: p.skill,
                path: real,
                ..read
            },
        )
    }

    #[tool(
        name = "list",
        description = "List the Agent Skills found (name, description, folder, whether it is \
            the project's or the user's), the skills skipped because their SKILL.md is broken \
            (file, line, what is wrong), and the folders searched.",
        output_schema = schema_for_output::<Report>(),
        annotations(
            title = "List skills",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list(&self) -> CallToolResult {
        let catalog = &self.catalog;
        let skills = catalog
            .skills
            .iter()
            .map(|s| Entry {
                name: s.frontmatter.name.clone(),
                description: s.frontmatter.description.clone(),
                directory: s.dir.clone(),
                scope: s.source.scope,
                source: s.source.dir.clone(),
                model_invocable: s.frontmatter.model_invocable,
            })
            .collect();
        structured(
            render::report(catalog),
            &Report {
                skills,
                problems: catalog.notices.clone(),
                searched: catalog.searched.clone(),
            },
        )
    }
}

/// Lines `offset..offset+limit` of `text` (1-based), cut at [`MAX_RETURNED_BYTES`] on a line
/// boundary (a single longer line is cut at a character boundary).
fn slice(text: &str, offset: u64, limit: Option<u64>) -> FileRead {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len() as u64;
    let first = offset.max(1);
    let wanted_end = limit.map_or(total, |l| {
        first.saturating_add(l).saturating_sub(1).min(total)
    });
    let mut content = String::new();
    let mut last = first.saturating_sub(1);
    for n in first..=wanted_end {
        let Some(line) = lines.get((n - 1) as usize) else {
            break;
        };
        if content.len() + line.len() > MAX_RETURNED_BYTES {
            if content.is_empty() {
                let mut cut = MAX_RETURNED_BYTES;
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                content.push_str(&line[..cut]);
                last = n;
            }
            break;
        }
        content.push_str(line);
        last = n;
    }
    // Lines left in the file (not asked for, or cut by the byte budget) continue here.
    let next_offset = (last < total).then_some(last + 1);
    FileRead {
        skill: String::new(),
        path: PathBuf::new(),
        content,
        first_line: first,
        last_line: last,
        total_lines: total,
        next_offset,
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for SkillsServer {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(tern_tool_common::implementation(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ));
        match &self.instructions {
            Some(text) => config.with_instructions(text.clone()),
            None => config,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_follow_offset_limit_and_the_byte_budget() {
        let text = "a\nb\nc\nd\n";
        let r = slice(text, 2, Some(2));
        assert_eq!(
            (r.content.as_str(), r.first_line, r.last_line),
            ("b\nc\n", 2, 3)
        );
        assert_eq!(r.next_offset, Some(4));
        let r = slice(text, 1, None);
        assert_eq!((r.content.as_str(), r.next_offset), (text, None));
        let r = slice(text, 9, None);
        assert_eq!((r.content.as_str(), r.next_offset), ("", None));
        let big = "x".repeat(MAX_RETURNED_BYTES) + "\nsecond\n";
        let r = slice(&big, 1, None);
        assert_eq!(r.content.len(), MAX_RETURNED_BYTES);
        assert_eq!(r.next_offset, Some(2));
        let r = slice("", 1, None);
        assert_eq!((r.total_lines, r.last_line, r.next_offset), (0, 0, None));
    }
}
