//! The environment a stdio server starts with.
//!
//! Cleared, then only the allow-list ([`crate::DEFAULT_ENV_ALLOW`]), the
//! configured `env_vars` names and the explicit `env` table. A server never
//! sees the host's API keys unless the user configured them for it.

use std::collections::BTreeMap;

use crate::DEFAULT_ENV_ALLOW;

/// Builds a child environment from the host's, per the rules above.
pub(crate) fn child_env(
    host: &BTreeMap<String, String>,
    pass_env: &[String],
    explicit: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (k, v) in host {
        let allowed = DEFAULT_ENV_ALLOW
            .iter()
            .any(|pat| match pat.strip_suffix('*') {
                Some(prefix) => k.starts_with(prefix),
                None => k == pat,
            })
            || pass_env.iter().any(|p| p == k);
        if allowed {
            out.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in explicit {
        out.insert(k.clone(), v.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> BTreeMap<String, String> {
        [
            ("PATH", "/bin"),
            ("HOME", "/root"),
            ("LC_ALL", "C"),
            ("ANTHROPIC_API_KEY", "sk-ant-canary"),
            ("GITHUB_TOKEN", "ghp_x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn api_keys_never_pass_by_default() {
        let env = child_env(&host(), &[], &BTreeMap::new());
        assert_eq!(env.get("PATH").map(String::as_str), Some("/bin"));
        assert_eq!(env.get("LC_ALL").map(String::as_str), Some("C"));
        assert!(!env.contains_key("ANTHROPIC_API_KEY"));
        assert!(!env.contains_key("GITHUB_TOKEN"));
    }

    #[test]
    fn env_vars_and_explicit_env_are_added() {
        let explicit = [("FOO".to_string(), "bar".to_string())].into();
        let env = child_env(&host(), &["GITHUB_TOKEN".to_string()], &explicit);
        assert_eq!(env.get("GITHUB_TOKEN").map(String::as_str), Some("ghp_x"));
        assert_eq!(env.get("FOO").map(String::as_str), Some("bar"));
        assert!(!env.contains_key("ANTHROPIC_API_KEY"));
    }
}
