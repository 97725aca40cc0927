//! The environment a command sees.
//!
//! The server itself may run with secrets in its environment (an agent host
//! typically holds `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, cloud credentials). A
//! model-written command must not be able to read them with `env`, so the child
//! starts from an empty environment and gets back only an allow-list of harmless
//! variables, plus whatever the operator named with `--env-allow`.

use std::ffi::{OsStr, OsString};

/// Variables passed through from the server's environment when present.
const ALWAYS_ALLOWED: &[&str] = &[
    "HOME", "PATH", "USER", "LANG", "TERM", "TMPDIR", "TZ", "SHELL",
];

/// Prefixes passed through (locale categories: `LC_ALL`, `LC_CTYPE`, …).
const ALLOWED_PREFIXES: &[&str] = &["LC_"];

/// Set for every command, overriding the parent: nothing may wait for a human.
/// A pager or a credential prompt would otherwise block until the timeout.
const FORCED: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_EDITOR", "true"),
];

/// Git configuration forced on every command through `GIT_CONFIG_COUNT` /
/// `GIT_CONFIG_KEY_n` / `GIT_CONFIG_VALUE_n`, which override every config file
/// (issue F6). A repository's `.git/config` can name programs that git runs on
/// an innocent `git status` or `git diff` — the kind of command a permission
/// rule allows without asking. Each key here is one such program, reset to a
/// harmless value. What cannot be reset by key (per-driver
/// `diff.<driver>.textconv`, `filter.<driver>.*`, `merge.<driver>.driver`,
/// selected by `.gitattributes`) is covered by the sandbox keeping
/// `.git/config` read-only; see the README's "Git configuration" section.
pub const GIT_CONFIG: &[(&str, &str)] = &[
    // Runs on `git status` and every index refresh.
    ("core.fsmonitor", "false"),
    // Hooks (commit, checkout, merge…): none.
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("core.askPass", ""),
    ("core.sshCommand", "ssh"),
    ("core.gitProxy", "none"),
    // An empty value clears every helper configured before it.
    ("credential.helper", ""),
    ("protocol.ext.allow", "never"),
    ("gpg.program", "gpg"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.x509.program", "gpgsm"),
    // No value makes git use its own diff (an empty one fails to run ""), so
    // an external diff is replaced by a message saying how to get the diff.
    (
        "diff.external",
        "echo \"tern: diff.external is disabled (it runs a program named in git config); \
         use git diff --no-ext-diff\" >&2; false #",
    ),
];

/// Used when the server itself has no `PATH`, so `bash -c 'ls'` still works.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Builds the child's environment from the parent's, keeping only allowed names.
///
/// `extra` holds the exact names given with `--env-allow`.
pub fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    extra: &[String],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = parent
        .into_iter()
        .filter(|(name, _)| is_allowed(name, extra))
        .filter(|(name, _)| !FORCED.iter().any(|(forced, _)| name == *forced))
        // Ours replace any the parent passed on, or the numbering would clash.
        .filter(|(name, _)| !name.to_str().is_some_and(|n| n.starts_with("GIT_CONFIG_")))
        .collect();
    if !env.iter().any(|(name, _)| name == "PATH") {
        env.push(("PATH".into(), FALLBACK_PATH.into()));
    }
    env.extend(
        FORCED
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value))),
    );
    env.push((
        "GIT_CONFIG_COUNT".into(),
        GIT_CONFIG.len().to_string().into(),
    ));
    for (i, (key, value)) in GIT_CONFIG.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}").into(), (*key).into()));
        env.push((format!("GIT_CONFIG_VALUE_{i}").into(), (*value).into()));
    }
    env.sort();
    env
}

fn is_allowed(name: &OsStr, extra: &[String]) -> bool {
    let Some(name) = name.to_str() else {
        // A non-UTF-8 name cannot be on any list we were given.
        return false;
    };
    ALWAYS_ALLOWED.contains(&name)
        || ALLOWED_PREFIXES.iter().any(|p| name.starts_with(p))
        || extra.iter().any(|allowed| allowed == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(vars: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        vars.iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    fn get<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsString> {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    #[test]
    fn secrets_are_dropped_and_allow_listed_names_kept() {
        let env = child_env(
            parent(&[
                ("ANTHROPIC_API_KEY", "sk-ant-canary"),
                ("AWS_SECRET_ACCESS_KEY", "x"),
                ("HOME", "/home/u"),
                ("PATH", "/bin"),
                ("LC_ALL", "C.UTF-8"),
                ("MY_TOOL_CONFIG", "keep"),
            ]),
            &["MY_TOOL_CONFIG".to_string()],
        );
        assert_eq!(get(&env, "ANTHROPIC_API_KEY"), None);
        assert_eq!(get(&env, "AWS_SECRET_ACCESS_KEY"), None);
        assert_eq!(
            get(&env, "HOME").map(|v| v.as_os_str()),
            Some(OsStr::new("/home/u"))
        );
        assert_eq!(
            get(&env, "PATH").map(|v| v.as_os_str()),
            Some(OsStr::new("/bin"))
        );
        assert!(get(&env, "LC_ALL").is_some());
        assert!(get(&env, "MY_TOOL_CONFIG").is_some());
    }

    #[test]
    fn forced_values_override_the_parent() {
        let env = child_env(parent(&[("PAGER", "less")]), &["PAGER".to_string()]);
        assert_eq!(
            get(&env, "PAGER").map(|v| v.as_os_str()),
            Some(OsStr::new("cat"))
        );
        assert_eq!(env.iter().filter(|(k, _)| k == "PAGER").count(), 1);
        assert_eq!(
            get(&env, "GIT_TERMINAL_PROMPT").map(|v| v.as_os_str()),
            Some(OsStr::new("0"))
        );
    }

    #[test]
    fn git_config_overrides_are_numbered_and_replace_the_parents() {
        let env = child_env(
            parent(&[("GIT_CONFIG_COUNT", "1"), ("GIT_CONFIG_KEY_0", "x")]),
            &[
                "GIT_CONFIG_COUNT".to_string(),
                "GIT_CONFIG_KEY_0".to_string(),
            ],
        );
        let count = GIT_CONFIG.len().to_string();
        assert_eq!(
            get(&env, "GIT_CONFIG_COUNT").map(|v| v.as_os_str()),
            Some(OsStr::new(&count))
        );
        assert_eq!(
            get(&env, "GIT_CONFIG_KEY_0").map(|v| v.as_os_str()),
            Some(OsStr::new("core.fsmonitor"))
        );
        let last = GIT_CONFIG.len() - 1;
        assert!(get(&env, &format!("GIT_CONFIG_VALUE_{last}")).is_some());
    }

    #[test]
    fn a_missing_path_gets_a_usable_default() {
        let env = child_env(parent(&[]), &[]);
        assert_eq!(
            get(&env, "PATH").map(|v| v.as_os_str()),
            Some(OsStr::new(FALLBACK_PATH))
        );
    }

    #[test]
    fn a_prefix_match_is_not_a_substring_match() {
        let env = child_env(parent(&[("XLC_FOO", "1"), ("HOMEX", "1")]), &[]);
        assert_eq!(get(&env, "XLC_FOO"), None);
        assert_eq!(get(&env, "HOMEX"), None);
    }
}
