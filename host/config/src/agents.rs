//! `[agents.NAME]`: agent profiles — what a sub-agent started by the agent server
//! (`tern serve agent`, the `run` tool) is for, what it is told, and what it may use.
//!
//! ```toml
//! [agents.explore]
//! description = "Read-only investigation: find where something is and how it works."
//! instructions = "Investigate; do not change anything. Answer with paths and line numbers."
//! model = "claude-haiku-4-5"     # default: the run's [model]
//! tools = ["fs__read_file", "fs__list_dir", "fs__glob", "fs__grep"]
//! max_steps = 20                 # default: [agent] max_steps
//! token_budget = 200000          # default: none (the server's --token-budget)
//! ```
//!
//! Layers merge key by key, as for servers, so a user can change one key of a shipped profile
//! (`[agents.explore] model = "…"`) or switch it off (`enabled = false`).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::check::{invalid, valid_server_name};
use crate::error::{Location, Result};
use crate::locate::SourceText;

/// One profile, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentProfile {
    /// The `NAME` of `[agents.NAME]` (letters, digits, `_`, `-`).
    pub name: String,
    /// `description` (required): what the profile is for. The agent server lists it in the
    /// description of its `run` tool, which is how the calling model chooses a profile.
    pub description: String,
    /// `instructions`: appended to the sub-agent's system prompt.
    pub instructions: Option<String>,
    /// `model`: the model name for the sub-agent (provider and keys from `[model]`).
    pub model: Option<String>,
    /// `tools`: patterns over model-facing tool names (`server__tool`, `*` and `?` as
    /// wildcards); only matching tools are offered or callable. Unset: every tool.
    pub tools: Option<Vec<String>>,
    /// `max_steps`: model turns before the sub-agent stops (a call may ask for fewer).
    pub max_steps: Option<u32>,
    /// `token_budget`: tokens (prompt, cached or not, plus output) the sub-agent may use
    /// before it is stopped.
    pub token_budget: Option<u64>,
    /// Where the profile was (last) configured.
    pub defined_at: Location,
}

/// `[agents.NAME]` exactly as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProfile {
    description: Option<String>,
    instructions: Option<String>,
    model: Option<String>,
    tools: Option<Vec<Spanned<String>>>,
    max_steps: Option<Spanned<u32>>,
    token_budget: Option<Spanned<u64>>,
    enabled: Option<bool>,
}

/// One profile's keys from one or more layers.
#[derive(Debug, Clone)]
struct ProfileLayer {
    description: Option<String>,
    instructions: Option<String>,
    model: Option<String>,
    tools: Option<Vec<String>>,
    max_steps: Option<u32>,
    token_budget: Option<u64>,
    enabled: Option<bool>,
    at: Location,
}

/// `[agents]` of one or more layers.
#[derive(Debug, Clone, Default)]
pub(crate) struct AgentsLayer {
    profiles: BTreeMap<String, ProfileLayer>,
}

impl AgentsLayer {
    /// Checks one layer's profiles: names, tool patterns, positive limits.
    pub(crate) fn from_raw(
        raw: Option<BTreeMap<Spanned<String>, RawProfile>>,
        source: &SourceText<'_>,
    ) -> Result<Self> {
        let mut profiles = BTreeMap::new();
        for (name, raw) in raw.unwrap_or_default() {
            let at = source.locate(name.span().start);
            let name = name.into_inner();
            if !valid_server_name(&name) {
                return Err(invalid(
                    at,
                    &format!("agents.{name}"),
                    "a profile name may only use letters, digits, '_' and '-'",
                ));
            }
            let mut tools = None;
            if let Some(patterns) = raw.tools {
                let mut list = Vec::with_capacity(patterns.len());
                for pattern in patterns {
                    if let Err(message) = check_pattern(pattern.get_ref()) {
                        return Err(invalid(
                            source.locate(pattern.span().start),
                            &format!("agents.{name}.tools"),
                            &message,
                        ));
                    }
                    list.push(pattern.into_inner());
                }
                tools = Some(list);
            }
            let zero = |key: &str, start: usize| {
                invalid(
                    source.locate(start),
                    &format!("agents.{name}.{key}"),
                    "must be at least 1",
                )
            };
            if let Some(v) = &raw.max_steps
                && *v.get_ref() == 0
            {
                return Err(zero("max_steps", v.span().start));
            }
            if let Some(v) = &raw.token_budget
                && *v.get_ref() == 0
            {
                return Err(zero("token_budget", v.span().start));
            }
            let layer = ProfileLayer {
                description: raw.description,
                instructions: raw.instructions,
                model: raw.model,
                tools,
                max_steps: raw.max_steps.map(Spanned::into_inner),
                token_budget: raw.token_budget.map(Spanned::into_inner),
                enabled: raw.enabled,
                at,
            };
            profiles.insert(name, layer);
        }
        Ok(Self { profiles })
    }

    /// The profile names this layer defines.
    pub(crate) fn names(&self) -> Vec<String> {
        self.profiles.keys().cloned().collect()
    }

    /// Whether a profile `name` is defined with a description (a layer that only switches a
    /// shipped profile off or changes one key defines none).
    pub(crate) fn defines(&self, name: &str) -> bool {
        self.profiles
            .get(name)
            .is_some_and(|p| p.description.is_some())
    }

    /// Lays `later` over these, key by key within each profile.
    pub(crate) fn merge(&mut self, later: AgentsLayer) {
        for (name, later) in later.profiles {
            let Some(slot) = self.profiles.get_mut(&name) else {
                self.profiles.insert(name, later);
                continue;
            };
            macro_rules! over {
                ($($field:ident),*) => {$(
                    if later.$field.is_some() {
                        slot.$field = later.$field;
                    }
                )*};
            }
            over!(
                description,
                instructions,
                model,
                tools,
                max_steps,
                token_budget,
                enabled
            );
            slot.at = later.at;
        }
    }

    /// The enabled profiles, by name. A profile without a description is an error: the
    /// calling model would not know what it is for.
    pub(crate) fn resolve(self) -> Result<BTreeMap<String, AgentProfile>> {
        let mut out = BTreeMap::new();
        for (name, p) in self.profiles {
            if p.enabled == Some(false) {
                continue;
            }
            let description = match p.description {
                Some(d) if !d.trim().is_empty() => d,
                _ => {
                    return Err(invalid(
                        p.at,
                        &format!("agents.{name}.description"),
                        "is required: it tells the calling model what the profile is for",
                    ));
                }
            };
            out.insert(
                name.clone(),
                AgentProfile {
                    name,
                    description,
                    instructions: p.instructions.filter(|i| !i.trim().is_empty()),
                    model: p.model,
                    tools: p.tools,
                    max_steps: p.max_steps,
                    token_budget: p.token_budget,
                    defined_at: p.at,
                },
            );
        }
        Ok(out)
    }
}

/// A tool pattern is a model-facing name (`server__tool`) with `*` or `?` wildcards: nothing a
/// glob could read as a class or an alternation, so every pattern means what it looks like.
fn check_pattern(pattern: &str) -> std::result::Result<(), String> {
    if pattern.is_empty() {
        return Err("an empty tool pattern matches nothing".into());
    }
    match pattern
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '?')))
    {
        Some(c) => Err(format!(
            "tool pattern {pattern:?} has {c:?}: a pattern is a tool name (`server__tool`) with \
             `*` or `?` as wildcards"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::check_pattern;
    use crate::{Config, ConfigError, ConfigPaths, LoadOptions};

    fn load(user: &str) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), user).unwrap();
        let paths = ConfigPaths::with_home(home, dir.path());
        Config::load(&paths, &LoadOptions::default(), &|_| None)
    }

    #[test]
    fn tool_patterns_are_names_with_wildcards() {
        assert!(check_pattern("fs__read_file").is_ok());
        assert!(check_pattern("fs__*").is_ok());
        assert!(check_pattern("*__read?").is_ok());
        assert!(check_pattern("").is_err());
        assert!(check_pattern("fs__{read,write}_file").is_err());
        assert!(check_pattern("fs__read file").is_err());
    }

    #[test]
    fn the_defaults_ship_read_only_explore_and_review_profiles() {
        let config = load("").unwrap();
        assert_eq!(
            config.agents.keys().collect::<Vec<_>>(),
            ["explore", "review"]
        );
        for profile in config.agents.values() {
            assert!(!profile.description.is_empty());
            assert!(profile.instructions.is_some());
            assert_eq!(
                profile.tools.as_deref(),
                Some(
                    &[
                        "fs__read_file".to_string(),
                        "fs__list_dir".into(),
                        "fs__glob".into(),
                        "fs__grep".into()
                    ][..]
                )
            );
            assert_eq!(profile.max_steps, Some(25));
        }
    }

    #[test]
    fn a_later_layer_changes_one_key_disables_a_profile_or_adds_one() {
        let config = load(
            "[agents.explore]\nmodel = \"small\"\ntoken_budget = 5000\n\
             [agents.review]\nenabled = false\n\
             [agents.docs]\ndescription = \"Writes docs.\"\ntools = [\"fs__*\"]\n",
        )
        .unwrap();
        let explore = &config.agents["explore"];
        assert_eq!(explore.model.as_deref(), Some("small"));
        assert_eq!(explore.token_budget, Some(5000));
        assert!(
            explore.description.contains("Read-only"),
            "kept from the defaults"
        );
        assert!(explore.defined_at.file.ends_with("config.toml"));
        assert!(!config.agents.contains_key("review"));
        assert_eq!(
            config.agents["docs"].tools.as_deref(),
            Some(&["fs__*".to_string()][..])
        );
        assert_eq!(config.agents["docs"].max_steps, None);
    }

    #[test]
    fn mistakes_name_the_file_line_and_key() {
        let err = load("[agents.x]\ndescription = \"d\"\ndescripton = \"typo\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("config.toml:3"), "{err}");
        assert!(
            err.contains("unknown key \"descripton\" in [agents.x]"),
            "{err}"
        );

        let err = load("[agents.x]\ninstructions = \"i\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("config.toml:1"), "{err}");
        assert!(err.contains("agents.x.description: is required"), "{err}");

        let err =
            load("[agents.x]\ndescription = \"d\"\ntools = [\"fs__read_file\", \"fs/[a]\"]\n")
                .unwrap_err()
                .to_string();
        assert!(err.contains("config.toml:3"), "{err}");
        assert!(err.contains("agents.x.tools"), "{err}");

        let err = load("[agents.x]\ndescription = \"d\"\nmax_steps = 0\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("agents.x.max_steps: must be at least 1"),
            "{err}"
        );

        let err = load("[agents.\"a b\"]\ndescription = \"d\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("agents.a b"), "{err}");
    }
}
