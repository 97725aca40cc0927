//! Deferred tools: when the tool table would take too much of the window, the model gets a core
//! set and `tool_search`, and finds the rest by searching — on every provider, because the
//! search is an ordinary MCP tool (tern's catalog server) called through the gateway.

use std::collections::{BTreeMap, BTreeSet};

use tern_config::{ContextSection, Defer, ServerConfig};
use tern_mcp::ToolEntry;

/// The server name of tern's own tool search.
pub const SEARCH_SERVER: &str = "tern";
/// The model-facing name of the search tool.
pub const SEARCH_TOOL: &str = "tern__tool_search";

/// What to offer the model, and what waits behind the search.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Offered in the table (including the search tool when anything is deferred).
    pub offered: Vec<ToolEntry>,
    /// Findable through `tool_search`.
    pub deferred: Vec<ToolEntry>,
    /// Tokens of the whole table, and of what is offered (0 when the table has no search tool
    /// and nothing deferrable: then nothing was counted).
    pub full_tokens: u64,
    pub offered_tokens: u64,
}

/// Decides which tools to defer. `tokens` counts one definition; `window` is the model's, when
/// known; `active` are deferred tools the model has found (offered from then on).
pub fn plan(
    entries: &[ToolEntry],
    servers: &BTreeMap<String, ServerConfig>,
    context: &ContextSection,
    window: Option<u64>,
    active: &BTreeSet<String>,
    tokens: impl Fn(&ToolEntry) -> u64,
) -> Plan {
    let (search, tools): (Vec<&ToolEntry>, Vec<&ToolEntry>) =
        entries.iter().partition(|e| e.server == SEARCH_SERVER);
    let policy = |e: &ToolEntry| -> Defer {
        let Some(server) = servers.get(&e.server) else {
            return Defer::Auto;
        };
        // tern's own servers are the core set.
        match server.builtin() {
            Some(_) => Defer::Never,
            None => server.defer,
        }
    };
    let candidate =
        |e: &ToolEntry| !active.contains(&e.name) && !context.core_tools.contains(&e.name);
    // The table is counted only when something may be deferred or the search reports it:
    // counting may wait for a vocabulary still loading, and the first request of a run with
    // only tern's own servers (no search, nothing deferrable) must not.
    let counted = !search.is_empty()
        || tools
            .iter()
            .any(|e| candidate(e) && policy(e) == Defer::Auto);
    let full_tokens: u64 = match counted {
        true => tools.iter().map(|e| tokens(e)).sum(),
        false => 0,
    };
    let too_large = tools.len() > context.defer_tools_count
        || window.is_some_and(|w| full_tokens as f64 > context.defer_tools_share * w as f64);
    let deferrable = |e: &ToolEntry| {
        candidate(e)
            && match policy(e) {
                Defer::Never => false,
                Defer::Always => true,
                Defer::Auto => too_large,
            }
    };
    let (deferred, mut offered): (Vec<ToolEntry>, Vec<ToolEntry>) =
        tools.into_iter().cloned().partition(|e| deferrable(e));
    // Without the search tool nothing can be found: offer everything rather than hide it.
    if deferred.is_empty() || search.is_empty() {
        let all: Vec<ToolEntry> = offered.into_iter().chain(deferred).collect();
        return Plan {
            offered_tokens: full_tokens,
            offered: all,
            deferred: Vec::new(),
            full_tokens,
        };
    }
    offered.extend(search.into_iter().cloned());
    offered.sort_by(|a, b| a.name.cmp(&b.name));
    let offered_tokens = offered.iter().map(&tokens).sum();
    Plan {
        offered,
        deferred,
        full_tokens,
        offered_tokens,
    }
}

/// The config with tern's tool search added as server `tern`, when any configured server's
/// tools could be deferred (tern's own servers never are). The search reads `catalog`.
pub fn with_tool_search<'c>(
    config: &'c tern_config::Config,
    catalog: &std::path::Path,
) -> Result<std::borrow::Cow<'c, tern_config::Config>, String> {
    if let Some(taken) = config.mcp_servers.get(SEARCH_SERVER) {
        return Err(format!(
            "{}: the server name `{SEARCH_SERVER}` is reserved for tern's own tool search; \
             rename the server",
            taken.defined_at
        ));
    }
    let deferrable = config
        .enabled_servers()
        .any(|s| s.builtin().is_none() && s.defer != tern_config::Defer::Never);
    if !deferrable {
        return Ok(std::borrow::Cow::Borrowed(config));
    }
    tern_protocol::files::write(catalog, b"[]")
        .map_err(|e| format!("cannot write the tool catalog {}: {e}", catalog.display()))?;
    let mut config = config.clone();
    config.mcp_servers.insert(
        SEARCH_SERVER.to_owned(),
        tern_config::ServerConfig::internal(
            SEARCH_SERVER,
            tern_config::Builtin::Catalog,
            vec!["--catalog".into(), catalog.display().to_string()],
        ),
    );
    Ok(std::borrow::Cow::Owned(config))
}

#[cfg(test)]
mod tests {
    use tern_mcp::ToolDef;

    use super::*;

    fn entry(server: &str, tool: &str) -> ToolEntry {
        ToolEntry {
            name: format!("{server}__{tool}"),
            server: server.into(),
            tool: tool.into(),
            def: ToolDef {
                name: tool.into(),
                title: None,
                description: "d".into(),
                input_schema: serde_json::json!({"type": "object"}),
                output_schema: None,
                annotations: Default::default(),
                command_arg: None,
                edits_files: false,
            },
        }
    }

    fn servers(toml: &str) -> BTreeMap<String, ServerConfig> {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home/.tern");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), toml).unwrap();
        let env = |k: &str| (k == "TERN_HOME").then(|| home.display().to_string());
        let paths = tern_config::ConfigPaths::resolve(dir.path(), &env).unwrap();
        tern_config::Config::load(&paths, &Default::default(), &env)
            .unwrap()
            .mcp_servers
    }

    fn table(n: usize) -> Vec<ToolEntry> {
        let mut t = vec![entry("fs", "read_file"), entry("tern", "tool_search")];
        t.extend((0..n).map(|i| entry("big", &format!("t{i}"))));
        t
    }

    #[test]
    fn a_large_table_keeps_the_built_ins_and_the_search_and_defers_the_rest() {
        let servers = servers("[mcp_servers.big]\ncommand = \"big\"\n");
        let ctx = ContextSection::default();
        let p = plan(
            &table(300),
            &servers,
            &ctx,
            Some(200_000),
            &BTreeSet::new(),
            |_| 50,
        );
        let names: Vec<&str> = p.offered.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["fs__read_file", "tern__tool_search"]);
        assert_eq!(p.deferred.len(), 300);
        assert_eq!(p.full_tokens, 301 * 50);
        assert_eq!(p.offered_tokens, 100);
        // Found tools are offered from then on.
        let active = BTreeSet::from(["big__t7".to_string()]);
        let p = plan(&table(300), &servers, &ctx, Some(200_000), &active, |_| 50);
        assert!(p.offered.iter().any(|e| e.name == "big__t7"));
        assert_eq!(p.deferred.len(), 299);
    }

    #[test]
    fn small_tables_stay_whole_unless_a_server_says_always() {
        let ctx = ContextSection::default();
        let auto = servers("[mcp_servers.big]\ncommand = \"big\"\n");
        let p = plan(
            &table(10),
            &auto,
            &ctx,
            Some(200_000),
            &BTreeSet::new(),
            |_| 50,
        );
        assert!(p.deferred.is_empty());
        assert!(
            !p.offered.iter().any(|e| e.name == SEARCH_TOOL),
            "no search without deferral"
        );
        let always = servers("[mcp_servers.big]\ncommand = \"big\"\ndefer = \"always\"\n");
        let p = plan(
            &table(10),
            &always,
            &ctx,
            Some(200_000),
            &BTreeSet::new(),
            |_| 50,
        );
        assert_eq!(p.deferred.len(), 10);
        // The share of the window counts too: 10 tools of 3 000 tokens in a 200k window.
        let p = plan(
            &table(10),
            &auto,
            &ctx,
            Some(200_000),
            &BTreeSet::new(),
            |_| 3_000,
        );
        assert_eq!(p.deferred.len(), 10);
        let never = servers("[mcp_servers.big]\ncommand = \"big\"\ndefer = \"never\"\n");
        let p = plan(
            &table(300),
            &never,
            &ctx,
            Some(200_000),
            &BTreeSet::new(),
            |_| 50,
        );
        assert!(p.deferred.is_empty());
    }

    #[test]
    fn core_tools_and_a_missing_search_keep_tools_offered() {
        let servers = servers("[mcp_servers.big]\ncommand = \"big\"\n");
        let ctx = ContextSection {
            core_tools: vec!["big__t3".into()],
            ..ContextSection::default()
        };
        let p = plan(&table(300), &servers, &ctx, None, &BTreeSet::new(), |_| 50);
        assert!(p.offered.iter().any(|e| e.name == "big__t3"));
        let without_search: Vec<ToolEntry> = table(300)
            .into_iter()
            .filter(|e| e.server != "tern")
            .collect();
        let p = plan(
            &without_search,
            &servers,
            &ctx,
            None,
            &BTreeSet::new(),
            |_| 50,
        );
        assert!(
            p.deferred.is_empty(),
            "nothing can be found without the search"
        );
        assert_eq!(p.offered.len(), 301);
    }
}
