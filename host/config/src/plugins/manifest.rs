//! Reading one plugin folder: its manifest, its components, and the config layer they make.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{ConfigError, Result};
use crate::hooks::HookEvent;
use crate::layers::Layer;
use crate::layers::parse_layer;
use crate::locate::SourceName;

/// Which agent's layout a plugin folder is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `.claude-plugin/plugin.json`.
    ClaudeCode,
    /// `.codex-plugin/plugin.json`.
    Codex,
}

impl Layout {
    /// The manifest's path inside the plugin folder.
    pub fn manifest(self) -> &'static str {
        match self {
            Self::ClaudeCode => ".claude-plugin/plugin.json",
            Self::Codex => ".codex-plugin/plugin.json",
        }
    }

    /// A name for listings.
    pub fn label(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
        }
    }
}

/// An MCP server a plugin adds, as the person asked to enable it should see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginServer {
    pub name: String,
    /// The command line (or URL) that will run.
    pub launch: String,
}

/// A hook a plugin adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginHook {
    pub event: HookEvent,
    pub matcher: Option<String>,
    pub command: String,
}

/// Everything one plugin folder adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginContents {
    pub name: String,
    /// The manifest's `version`, or `unversioned`.
    pub version: String,
    pub description: Option<String>,
    pub layout: Layout,
    /// The folder `${CLAUDE_PLUGIN_ROOT}` was replaced by (the installed copy).
    pub root: PathBuf,
    /// The `[mcp_servers]` and `[[hooks.EVENT]]` tables the plugin makes, as TOML.
    pub layer_toml: String,
    pub servers: Vec<PluginServer>,
    pub hooks: Vec<PluginHook>,
    /// Folders of skill folders, for the skills server.
    pub skill_dirs: Vec<PathBuf>,
    /// The skills' folder names.
    pub skills: Vec<String>,
    /// Folders of custom commands.
    pub command_dirs: Vec<PathBuf>,
    /// The commands' names (`dir:name` for one in a subfolder).
    pub commands: Vec<String>,
    /// The agents' names: each is an agent profile (`[agents.NAME]`) while the plugin is
    /// enabled, a `profile` of `agent__run`.
    pub agents: Vec<String>,
    /// What was skipped, one readable line each.
    pub warnings: Vec<String>,
}

/// `plugin.json`; other keys (author, homepage, keywords, Codex's `interface`…) are metadata.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawManifest {
    name: Option<Value>,
    version: Option<Value>,
    description: Option<String>,
    commands: Option<Value>,
    agents: Option<Value>,
    skills: Option<Value>,
    hooks: Option<Value>,
    mcp_servers: Option<Value>,
}

fn plugin_error(message: String) -> ConfigError {
    ConfigError::Plugin { message }
}

/// Reads the plugin in `dir`, with `${CLAUDE_PLUGIN_ROOT}` standing for `installed_at` (where
/// it is, or will be, installed).
pub fn read_plugin(dir: &Path, installed_at: &Path) -> Result<PluginContents> {
    read_plugin_layer(dir, installed_at).map(|(contents, _)| contents)
}

/// [`read_plugin`], and the layer for [`crate::Config::load`].
pub(crate) fn read_plugin_layer(
    dir: &Path,
    installed_at: &Path,
) -> Result<(PluginContents, Layer)> {
    let layout = [Layout::ClaudeCode, Layout::Codex]
        .into_iter()
        .find(|l| dir.join(l.manifest()).is_file())
        .ok_or_else(|| {
            plugin_error(format!(
                "{} is not a plugin: it has neither .claude-plugin/plugin.json nor \
                 .codex-plugin/plugin.json\nhint: a plugin folder holds its manifest there, next to \
                 skills/, commands/, hooks/hooks.json and .mcp.json",
                dir.display()
            ))
        })?;
    let manifest_path = dir.join(layout.manifest());
    let manifest: RawManifest = serde_json::from_value(read_json(&manifest_path)?)
        .map_err(|e| plugin_error(format!("{}: {e}", manifest_path.display())))?;
    let name = match manifest.name {
        Some(Value::String(name)) if valid_name(&name) => name,
        Some(Value::String(name)) => {
            return Err(plugin_error(format!(
                "{}: plugin name {name:?} may only use letters, digits, '-', '_' and '.', and must \
                 start with a letter or digit",
                manifest_path.display()
            )));
        }
        Some(_) => {
            return Err(plugin_error(format!(
                "{}: `name` must be a string",
                manifest_path.display()
            )));
        }
        None => {
            return Err(plugin_error(format!(
                "{}: no `name`; a plugin manifest needs one",
                manifest_path.display()
            )));
        }
    };
    let version = match manifest.version {
        None => "unversioned".to_owned(),
        Some(Value::String(v)) if valid_name(&v) => v,
        Some(other) => {
            return Err(plugin_error(format!(
                "{}: version {other} is not a plain version string like \"1.2.0\"",
                manifest_path.display()
            )));
        }
    };
    let mut contents = PluginContents {
        name,
        version,
        description: manifest.description,
        layout,
        root: installed_at.to_path_buf(),
        layer_toml: String::new(),
        servers: Vec::new(),
        hooks: Vec::new(),
        skill_dirs: Vec::new(),
        skills: Vec::new(),
        command_dirs: Vec::new(),
        commands: Vec::new(),
        agents: Vec::new(),
        warnings: Vec::new(),
    };
    let from = |key: &str, value: Option<Value>, default: &str| -> Result<Vec<Component2>> {
        components(dir, &manifest_path, key, value, default)
    };

    // MCP servers, then hooks, each file converted by the importers `tern mcp import` and
    // `tern hooks import` use, into one TOML text.
    let mut toml_text = String::new();
    for part in from("mcpServers", manifest.mcp_servers, ".mcp.json")? {
        let part_name = part.name();
        let mut value = part.value()?;
        substitute_root(&mut value, installed_at);
        if value.get("mcpServers").is_none() {
            value = serde_json::json!({ "mcpServers": value });
        }
        let report = crate::import_mcp_json(&value.to_string(), &toml_text)
            .map_err(|e| plugin_error(format!("{part_name}: {e}")))?;
        toml_text = report.config_text;
        contents.warnings.extend(report.warnings);
    }
    for part in from("hooks", manifest.hooks, "hooks/hooks.json")? {
        let part_name = part.name();
        let mut value = part.value()?;
        substitute_root(&mut value, installed_at);
        if value.get("hooks").is_none() {
            value = serde_json::json!({ "hooks": value });
        }
        let report = crate::import_claude_hooks(&value.to_string(), &toml_text, &part_name)
            .map_err(|e| plugin_error(format!("{part_name}: {e}")))?;
        toml_text = report.config_text;
        contents.warnings.extend(report.warnings);
    }
    // Agents, each a `[agents.NAME]` profile of the same layer.
    for part in from("agents", manifest.agents, "agents")? {
        let Component2::File(path) = part else {
            return Err(plugin_error(format!(
                "{}: `agents` must name folders or files",
                manifest_path.display()
            )));
        };
        let mut files = Vec::new();
        if path.is_dir() {
            markdown_files(&path, &mut files);
        } else {
            files.push(path);
        }
        for file in files {
            let agent = super::agent_file::read_agent(&file).map_err(plugin_error)?;
            if contents.agents.contains(&agent.name) {
                return Err(plugin_error(format!(
                    "{}: a second agent named `{}` in this plugin",
                    file.display(),
                    agent.name
                )));
            }
            toml_text.push('\n');
            toml_text.push_str(&agent.toml);
            contents.warnings.extend(agent.warnings);
            contents.agents.push(agent.name);
        }
    }
    let mut layer = parse_layer(
        &SourceName::File(super::plugin_source(&contents.name)),
        &toml_text,
    )?;
    // Scripts a plugin runs find their folder through this variable, as in Claude Code.
    let root_var = || {
        (
            "CLAUDE_PLUGIN_ROOT".to_owned(),
            installed_at.display().to_string(),
        )
    };
    for hook in layer.hooks.hooks_mut() {
        hook.env.push(root_var());
    }
    for server in layer.servers.0.values_mut() {
        if server.command.is_some() {
            let (key, value) = root_var();
            server.env.entry(key).or_insert(value);
        }
    }
    for (server, s) in &layer.servers.0 {
        let launch = match (&s.command, &s.url) {
            (Some(command), _) => std::iter::once(command.clone())
                .chain(s.args.clone().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(url)) => url.clone(),
            (None, None) => "(nothing to run)".to_owned(),
        };
        contents.servers.push(PluginServer {
            name: server.clone(),
            launch,
        });
    }
    for hook in layer.hooks.hooks() {
        contents.hooks.push(PluginHook {
            event: hook.event,
            matcher: hook.matcher.clone(),
            command: hook.command.clone(),
        });
    }
    contents.layer_toml = toml_text;

    for part in from("skills", manifest.skills, "skills")? {
        let Component2::File(path) = part else {
            return Err(plugin_error(format!(
                "{}: `skills` must name folders",
                manifest_path.display()
            )));
        };
        // A path to one skill's own folder: the skills server takes the folder of folders.
        let folder = if path.join("SKILL.md").is_file() {
            path.parent().map(Path::to_path_buf).unwrap_or(path)
        } else {
            path
        };
        if !contents.skill_dirs.contains(&folder) {
            contents.skills.extend(subfolders_with(&folder, "SKILL.md"));
            contents.skill_dirs.push(folder);
        }
    }
    for part in from("commands", manifest.commands, "commands")? {
        let Component2::File(path) = part else {
            return Err(plugin_error(format!(
                "{}: `commands` must name folders",
                manifest_path.display()
            )));
        };
        if path.is_file() {
            contents.warnings.push(format!(
                "skipped command file {}: tern reads commands from folders (put it in commands/)",
                path.display()
            ));
            continue;
        }
        markdown_names(&path, &path, &mut contents.commands);
        contents.command_dirs.push(path);
    }
    Ok((contents, layer))
}

/// A component the manifest names, or the default file that exists.
enum Component2 {
    /// A file or folder inside the plugin.
    File(PathBuf),
    /// An object written inline in `plugin.json`.
    Inline { manifest: PathBuf, value: Value },
}

impl Component2 {
    fn name(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Inline { manifest, .. } => manifest.display().to_string(),
        }
    }

    fn value(self) -> Result<Value> {
        match self {
            Self::File(path) => read_json(&path),
            Self::Inline { value, .. } => Ok(value),
        }
    }
}

/// The default `default` (when it exists) and the manifest's `key`: a path, a list of paths, or
/// (for `hooks` and `mcpServers`) an inline object. Each path once.
fn components(
    dir: &Path,
    manifest: &Path,
    key: &str,
    value: Option<Value>,
    default: &str,
) -> Result<Vec<Component2>> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut add_path = |path: PathBuf, out: &mut Vec<Component2>| {
        let id = path.canonicalize().unwrap_or_else(|_| path.clone());
        if seen.insert(id) {
            out.push(Component2::File(path));
        }
    };
    let default = dir.join(default);
    if default.exists() {
        add_path(default, &mut out);
    }
    let inside = |rel: &str| -> Result<PathBuf> {
        let path = Path::new(rel);
        if path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
            return Err(plugin_error(format!(
                "{}: `{key}` path {rel:?} must stay inside the plugin folder (relative, no `..`)",
                manifest.display()
            )));
        }
        let full = dir.join(path);
        if !full.exists() {
            return Err(plugin_error(format!(
                "{}: `{key}` names {rel:?}, which does not exist in the plugin",
                manifest.display()
            )));
        }
        Ok(full)
    };
    let items = match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(other) => vec![other],
    };
    for item in items {
        match item {
            Value::String(rel) => add_path(inside(&rel)?, &mut out),
            Value::Object(_) if key == "hooks" || key == "mcpServers" => {
                out.push(Component2::Inline {
                    manifest: manifest.to_path_buf(),
                    value: item,
                })
            }
            _ => {
                return Err(plugin_error(format!(
                    "{}: `{key}` must be a path or a list of paths",
                    manifest.display()
                )));
            }
        }
    }
    Ok(out)
}

/// Parses a JSON file; a syntax error names the file, line and column.
fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| {
        let message = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = message.strip_suffix(&suffix).unwrap_or(&message);
        plugin_error(format!(
            "{}:{}:{}: malformed JSON: {message}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

/// Replaces `${CLAUDE_PLUGIN_ROOT}` (and `$CLAUDE_PLUGIN_ROOT`) in every string of `value`.
fn substitute_root(value: &mut Value, root: &Path) {
    let root = root.display().to_string();
    match value {
        Value::String(s) => {
            *s = s
                .replace("${CLAUDE_PLUGIN_ROOT}", &root)
                .replace("$CLAUDE_PLUGIN_ROOT", &root);
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| substitute_root(v, Path::new(&root))),
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| substitute_root(v, Path::new(&root))),
        _ => {}
    }
}

/// A plugin name or version: safe as (part of) a folder name.
pub(crate) fn valid_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
}

/// The names of `dir`'s subfolders that hold `file`, sorted.
fn subfolders_with(dir: &Path, file: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join(file).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The `*.md` files under `dir`, sorted (symlinked folders are not followed).
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// `*.md` under `dir`, as `sub:name`, sorted (symlinked folders are not followed).
fn markdown_names(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            markdown_names(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "md")
            && let Ok(rel) = path.with_extension("").strip_prefix(root)
        {
            let name: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push(name.join(":"));
        }
    }
}
