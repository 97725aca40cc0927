//! Which values of the environment are secrets the redactor must keep out of every file.

use std::collections::BTreeMap;

use tern_gateway::Secret;

/// API keys, tokens, secrets and passwords in the environment (values of 8 characters or more,
/// so that short values such as `1` are not scrubbed from every line).
pub fn from_env(env: &BTreeMap<String, String>) -> Vec<Secret> {
    env.iter()
        .filter(|(k, v)| {
            v.len() >= 8
                && (k.ends_with("_API_KEY")
                    || k.ends_with("_TOKEN")
                    || k.ends_with("_SECRET")
                    || k.ends_with("_PASSWORD"))
        })
        .map(|(_, v)| Secret::new(v.clone()))
        .collect()
}

/// The secrets of a run: [`from_env`], and every OAuth token and client secret stored under
/// `$TERN_HOME/oauth` (tokens obtained later in the run are added as they arrive).
pub fn for_run(ws: &crate::workspace::Workspace) -> Vec<Secret> {
    let mut out = from_env(&ws.env);
    out.extend(
        tern_mcp::oauth::stored_secrets(&ws.paths.oauth_dir())
            .into_iter()
            .map(Secret::new),
    );
    out
}
