//! Reading a `SKILL.md`: its YAML frontmatter, checked against the Agent Skills
//! specification (agentskills.io/specification), and its markdown body.
//!
//! The rules and how strictly each one is applied follow the specification and its client
//! guide ("How to add skills support to your agent"): a skill without a usable `name` or
//! `description`, or whose YAML cannot be read at all, is skipped with an error; cosmetic
//! breaches (a name that does not match its folder, a description over 1024 characters, an
//! unknown field) are warnings and the skill still loads, because skills written for other
//! clients often bend them. The guide's most common case of "YAML other clients accept" — an
//! unquoted value containing `: ` — is read as text, with a warning. Every problem names its
//! line in the file.

use std::collections::BTreeMap;

use saphyr::{LoadableYamlNode as _, MarkedYaml, Scalar, YamlData};

/// Longest `name` the specification allows, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest `description`, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility`, in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;

/// Fields other agents define that tern reads but does not act on, so they are not reported as
/// unknown: Claude Code's skill frontmatter (`model`, `context`, `agent`, `hooks`,
/// `argument-hint`, `user-invocable`; `disable-model-invocation` is acted on, see
/// [`Frontmatter::model_invocable`]).
const OTHER_CLIENTS_FIELDS: &[&str] = &[
    "argument-hint",
    "user-invocable",
    "model",
    "context",
    "agent",
    "hooks",
];

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The skill cannot be offered; it is skipped.
    Error,
    /// The skill loads, but breaks a rule of the specification.
    Warning,
}

/// One problem in a `SKILL.md`, at a line of the file when it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Error or warning.
    pub severity: Severity,
    /// 1-based line in `SKILL.md`.
    pub line: Option<usize>,
    /// What is wrong, in a sentence.
    pub message: String,
}

impl Problem {
    fn error(line: Option<usize>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            line,
            message: message.into(),
        }
    }

    fn warning(line: Option<usize>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            line,
            message: message.into(),
        }
    }
}

/// The fields of a valid frontmatter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frontmatter {
    /// The skill's name, what `load` takes.
    pub name: String,
    /// What the skill does and when to use it: all the model sees before loading it.
    pub description: String,
    /// `license`: a licence name or the name of a bundled licence file.
    pub license: Option<String>,
    /// `compatibility`: what the skill needs from its environment.
    pub compatibility: Option<String>,
    /// `allowed-tools`: the tools the skill expects to use (experimental in the specification;
    /// reported, never enforced here).
    pub allowed_tools: Vec<String>,
    /// `metadata`: free string keys and values.
    pub metadata: BTreeMap<String, String>,
    /// False when `disable-model-invocation: true` (Claude Code): only the user may start
    /// the skill, so it is left out of what the model is offered.
    pub model_invocable: bool,
}

/// A `SKILL.md`, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The frontmatter's fields.
    pub frontmatter: Frontmatter,
    /// The markdown after the frontmatter, trimmed.
    pub body: String,
    /// Rules the skill breaks without being unusable.
    pub warnings: Vec<Problem>,
}

/// Reads `text` (a whole `SKILL.md`) of a skill in a folder named `folder`. `Err` holds every
/// problem found, at least one of them an error.
pub fn parse(text: &str, folder: &str) -> Result<Parsed, Vec<Problem>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (yaml, body) = split(text).map_err(|p| vec![p])?;
    match read(&yaml, body, folder, Vec::new()) {
        Ok(parsed) => Ok(parsed),
        Err(Failure::Invalid(problems)) => Err(problems),
        Err(Failure::Yaml(first)) => {
            // The guide's fallback: `description: Use when: …` is read as text.
            let Some((fixed, lines)) = quote_colon_values(&yaml) else {
                return Err(vec![first]);
            };
            let warnings = lines
                .into_iter()
                .map(|line| {
                    Problem::warning(
                        Some(line),
                        "the value contains `: `, which YAML reads as a nested mapping; it was \
                         read as text — put it in quotes",
                    )
                })
                .collect();
            match read(&fixed, body, folder, warnings) {
                Ok(parsed) => Ok(parsed),
                Err(Failure::Invalid(problems)) => Err(problems),
                // Still not YAML: the original error is the one that names the real problem.
                Err(Failure::Yaml(_)) => Err(vec![first]),
            }
        }
    }
}

/// Why [`read`] failed: the YAML itself (worth the fallback), or the fields.
enum Failure {
    Yaml(Problem),
    Invalid(Vec<Problem>),
}

fn read(yaml: &str, body: &str, folder: &str, problems: Vec<Problem>) -> Result<Parsed, Failure> {
    let docs = MarkedYaml::load_from_str(yaml).map_err(|e| Failure::Yaml(scan_problem(&e)))?;
    fields(yaml, docs, body, folder, problems).map_err(Failure::Invalid)
}

fn fields(
    yaml: &str,
    docs: Vec<MarkedYaml<'_>>,
    body: &str,
    folder: &str,
    mut problems: Vec<Problem>,
) -> Result<Parsed, Vec<Problem>> {
    let Some(root) = docs.into_iter().next() else {
        return Err(vec![Problem::error(
            Some(2),
            "the frontmatter is empty; `name` and `description` are required",
        )]);
    };
    let Some(mapping) = root.data.as_mapping() else {
        return Err(vec![Problem::error(
            Some(line_of(&root)),
            "the frontmatter must be a mapping of `key: value` lines",
        )]);
    };
    let mut name = None;
    let mut description = None;
    let mut fm = Frontmatter {
        name: String::new(),
        description: String::new(),
        license: None,
        compatibility: None,
        allowed_tools: Vec::new(),
        metadata: BTreeMap::new(),
        model_invocable: true,
    };
    for (key, value) in mapping {
        let line = Some(line_of(key));
        let Some(key) = key.data.as_str() else {
            problems.push(Problem::warning(line, "a key that is not text was ignored"));
            continue;
        };
        match key {
            "name" => match text_value(yaml, value) {
                Some(v) if !v.trim().is_empty() => name = Some((v.trim().to_string(), line)),
                Some(_) => problems.push(Problem::error(line, "`name` is empty")),
                None => problems.push(Problem::error(line, "`name` must be text")),
            },
            "description" => match text_value(yaml, value) {
                Some(v) if !v.trim().is_empty() => description = Some((v.trim().to_string(), line)),
                Some(_) => problems.push(Problem::error(line, "`description` is empty")),
                None => problems.push(Problem::error(line, "`description` must be text")),
            },
            "license" => match text_value(yaml, value) {
                Some(v) => fm.license = Some(v.trim().to_string()).filter(|v| !v.is_empty()),
                None => problems.push(Problem::warning(line, "`license` must be text; ignored")),
            },
            "compatibility" => match text_value(yaml, value) {
                Some(v) => {
                    let n = v.chars().count();
                    if n > MAX_COMPATIBILITY_CHARS {
                        problems.push(Problem::warning(
                            line,
                            format!(
                                "`compatibility` is {n} characters long; the limit is \
                                 {MAX_COMPATIBILITY_CHARS}"
                            ),
                        ));
                    }
                    fm.compatibility = Some(v.trim().to_string()).filter(|v| !v.is_empty());
                }
                None => problems.push(Problem::warning(
                    line,
                    "`compatibility` must be text; ignored",
                )),
            },
            "allowed-tools" => match allowed_tools(value) {
                Some(tools) => fm.allowed_tools = tools,
                None => problems.push(Problem::warning(
                    line,
                    "`allowed-tools` must be a space-separated string (or a list of tool names); \
                     ignored",
                )),
            },
            "metadata" => metadata(yaml, value, &mut fm.metadata, &mut problems),
            "disable-model-invocation" => match value.data.as_bool() {
                Some(b) => fm.model_invocable = !b,
                None => problems.push(Problem::warning(
                    line,
                    "`disable-model-invocation` must be true or false; ignored",
                )),
            },
            other if OTHER_CLIENTS_FIELDS.contains(&other) => {}
            other => problems.push(Problem::warning(
                line,
                format!(
                    "unknown field `{other}` (the specification defines name, description, \
                     license, compatibility, metadata and allowed-tools; put your own keys under \
                     `metadata`)"
                ),
            )),
        }
    }
    match &name {
        Some((n, line)) => problems.extend(
            name_rules(n, folder)
                .into_iter()
                .map(|m| Problem::warning(*line, m)),
        ),
        None if !problems.iter().any(|p| p.message.starts_with("`name`")) => problems.push(
            Problem::error(Some(1), "the required field `name` is missing"),
        ),
        None => {}
    }
    match &description {
        Some((d, line)) => {
            let n = d.chars().count();
            if n > MAX_DESCRIPTION_CHARS {
                problems.push(Problem::warning(
                    *line,
                    format!(
                        "`description` is {n} characters long; the limit is {MAX_DESCRIPTION_CHARS}"
                    ),
                ));
            }
        }
        None if !problems
            .iter()
            .any(|p| p.message.starts_with("`description`")) =>
        {
            problems.push(Problem::error(
                Some(1),
                "the required field `description` is missing",
            ))
        }
        None => {}
    }
    if problems.iter().any(|p| p.severity == Severity::Error) {
        return Err(problems);
    }
    let (Some((name, _)), Some((description, _))) = (name, description) else {
        return Err(problems);
    };
    fm.name = name;
    fm.description = description;
    Ok(Parsed {
        frontmatter: fm,
        body: body.trim().to_string(),
        warnings: problems,
    })
}

/// The `name` rules of the specification that `name` breaks, as sentences.
pub fn name_rules(name: &str, folder: &str) -> Vec<String> {
    let mut broken = Vec::new();
    let n = name.chars().count();
    if n > MAX_NAME_CHARS {
        broken.push(format!(
            "`name` is {n} characters long; the limit is {MAX_NAME_CHARS}"
        ));
    }
    if name
        .chars()
        .any(|c| !(c.is_lowercase() || c.is_numeric() || c == '-'))
    {
        broken.push(format!(
            "`name` `{name}` may only hold lowercase letters, digits and hyphens"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        broken.push("`name` must not start or end with a hyphen".to_string());
    }
    if name.contains("--") {
        broken.push("`name` must not contain two hyphens in a row".to_string());
    }
    if name != folder {
        broken.push(format!(
            "`name` `{name}` does not match its folder `{folder}`"
        ));
    }
    broken
}

/// Splits a `SKILL.md` into its frontmatter (without the `---` lines, with a blank first line
/// in place of the opening one so YAML line numbers are file line numbers) and its body.
fn split(text: &str) -> Result<(String, &str), Problem> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(Problem::error(
            Some(1),
            "SKILL.md must start with a `---` line opening its YAML frontmatter",
        ));
    }
    let mut yaml = String::from("\n");
    let mut offset = first.len();
    for line in lines {
        offset += line.len();
        if line.trim_end() == "---" {
            return Ok((yaml, &text[offset..]));
        }
        yaml.push_str(line.trim_end_matches(['\n', '\r']));
        yaml.push('\n');
    }
    Err(Problem::error(
        Some(1),
        "the frontmatter opened on line 1 is never closed by a `---` line",
    ))
}

fn scan_problem(e: &saphyr::ScanError) -> Problem {
    // Markers are 1-based lines of the text given, which starts with the blank line standing
    // for the opening `---`: they are file lines already.
    Problem::error(
        Some(e.marker().line().max(1)),
        format!("invalid YAML: {}", e.info()),
    )
}

fn line_of(node: &MarkedYaml<'_>) -> usize {
    node.span.start.line().max(1)
}

/// A top-level `key: value` line whose plain value holds `: ` rewritten with the value
/// single-quoted, and the lines changed; `None` when there is no such line.
fn quote_colon_values(yaml: &str) -> Option<(String, Vec<usize>)> {
    let mut changed = Vec::new();
    let mut out = String::with_capacity(yaml.len() + 16);
    for (i, line) in yaml.lines().enumerate() {
        let fixed = (|| {
            if line.starts_with([' ', '\t', '#', '-']) {
                return None;
            }
            let (key, value) = line.split_once(": ")?;
            let value = value.trim();
            if key.contains([' ', '"', '\'']) || !value.contains(": ") {
                return None;
            }
            if value.starts_with(['"', '\'', '|', '>', '[', '{', '&', '*', '!']) {
                return None;
            }
            Some(format!("{key}: '{}'", value.replace('\'', "''")))
        })();
        match fixed {
            Some(f) => {
                out.push_str(&f);
                changed.push(i + 1);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    (!changed.is_empty()).then_some((out, changed))
}

/// A scalar read as text: strings as they are, other scalars (`1.0`, `true`) as written.
fn text_value(yaml: &str, node: &MarkedYaml<'_>) -> Option<String> {
    match &node.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        YamlData::Value(Scalar::Null) => Some(String::new()),
        YamlData::Value(_) => Some(source_text(yaml, node)),
        YamlData::Representation(s, _, _) => Some(s.to_string()),
        _ => None,
    }
}

/// The characters a node spans in `yaml`: a non-string scalar exactly as written (`1.0`
/// stays `1.0`, where the number would print `1`).
fn source_text(yaml: &str, node: &MarkedYaml<'_>) -> String {
    let (start, end) = (node.span.start.index(), node.span.end.index());
    yaml.chars()
        .skip(start)
        .take(end.saturating_sub(start))
        .collect::<String>()
        .trim()
        .to_string()
}

/// `allowed-tools`: a string of names separated by spaces (the specification) or commas
/// (Claude Code), where a space inside parentheses belongs to the name (`Bash(git log:*)`),
/// or a YAML list of names.
fn allowed_tools(node: &MarkedYaml<'_>) -> Option<Vec<String>> {
    if let Some(list) = node.data.as_sequence() {
        return list
            .iter()
            .map(|item| item.data.as_str().map(|s| s.trim().to_string()))
            .collect();
    }
    let text = node.data.as_str()?;
    Some(tern_tool_common::allowed_tools::split(text))
}

/// `metadata`: a mapping from text keys to text values (scalars are taken as written).
fn metadata(
    yaml: &str,
    node: &MarkedYaml<'_>,
    into: &mut BTreeMap<String, String>,
    problems: &mut Vec<Problem>,
) {
    let Some(mapping) = node.data.as_mapping() else {
        problems.push(Problem::warning(
            Some(line_of(node)),
            "`metadata` must be a mapping of `key: value` lines; ignored",
        ));
        return;
    };
    for (key, value) in mapping {
        let line = Some(line_of(key));
        match (text_value(yaml, key), text_value(yaml, value)) {
            (Some(k), Some(v)) => {
                into.insert(k, v);
            }
            (Some(k), None) => problems.push(Problem::warning(
                line,
                format!("`metadata.{k}` must be a single value, not a list or mapping; ignored"),
            )),
            (None, _) => problems.push(Problem::warning(
                line,
                "a `metadata` key that is not text was ignored",
            )),
        }
    }
}

#[cfg(test)]
mod tests;
