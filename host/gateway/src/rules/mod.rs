//! Permission rules, compiled, and how they apply to one call.
//!
//! Deny and ask rules fire when *any* part of a call matches (any simple command of a shell line,
//! any element of an array); allow rules must cover *all* of it — every simple command matched by
//! some allow rule — so adding `&& rm -rf ~` to an allowed command never rides along.

mod matcher;
mod parse;

use globset::GlobMatcher;
use serde_json::{Map, Value};
use tern_config::{Permissions, RuleList, RuleSource};

use crate::paths::PathScope;
use crate::shell::Analysis;
pub use matcher::{Domain, Quantifier, is_path_arg, wildcard};
use matcher::{Glob, Matcher};
pub use parse::{ArgTarget, RawArg, RawPattern, RawRule, RuleParseError, parse_rule};

/// One compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The text as written, e.g. `shell__run(cargo test *)`.
    pub text: String,
    /// Which list it is in.
    pub list: RuleList,
    /// Where it came from, as the audit names it: `file:line`, `--allow:1`, `user:always`.
    pub origin: String,
    tool: GlobMatcher,
    args: Vec<(ArgTarget, Matcher)>,
}

/// The facts of one call that rules look at.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    /// The model-facing tool name, `server__tool`.
    pub name: &'a str,
    /// The arguments (an object; validated).
    pub args: &'a Map<String, Value>,
    /// The argument holding a shell command, when the tool has one.
    pub command_arg: Option<&'a str>,
    /// That command, analyzed.
    pub shell: Option<&'a Analysis>,
    pub ws: &'a PathScope,
}

/// Which parts of a call an allow rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// None of it.
    Nothing,
    /// All of it (the rule has no command pattern and the rest matched).
    Whole,
    /// These simple commands of the shell line (by index).
    Commands(Vec<usize>),
}

impl Rule {
    /// Compiles `text` for `list`, with path patterns resolved in `ws`.
    pub fn compile(
        text: &str,
        list: RuleList,
        origin: String,
        ws: &PathScope,
    ) -> Result<Self, RuleParseError> {
        let raw = parse_rule(text)?;
        let tool = globset::GlobBuilder::new(&raw.tool_glob)
            .literal_separator(false)
            .build()
            .map_err(|e| RuleParseError {
                rule: text.to_owned(),
                message: format!("bad tool glob: {e}"),
            })?
            .compile_matcher();
        let args = raw
            .args
            .into_iter()
            .map(|a| {
                let m = match a.pattern {
                    RawPattern::Domain(d) => Matcher::Domain(Domain::new(&d)),
                    RawPattern::Glob(g) => Matcher::Glob(Box::new(Glob::new(&g, ws))),
                };
                (a.target, m)
            })
            .collect();
        Ok(Self {
            text: text.to_owned(),
            list,
            origin,
            tool,
            args,
        })
    }

    /// Whether the rule names this tool at all.
    pub fn names_tool(&self, name: &str) -> bool {
        self.tool.is_match(name)
    }

    /// The glob of a rule that is about one path argument only (`fs__*(path: **/.env)`): a
    /// statement that the file is off limits, which the shell and file servers enforce too.
    pub fn path_glob(&self) -> Option<&Glob> {
        match self.args.as_slice() {
            [(ArgTarget::Named(name), Matcher::Glob(g))] if is_path_arg(name) => Some(g),
            _ => None,
        }
    }

    /// Deny/ask semantics: does any part of the call match?
    ///
    /// A rule about one path argument also matches a shell command naming that path, whatever
    /// tool the rule names (F4): `cat .env` reads what `fs__read_file(path: .env)` would.
    pub fn matches_any(&self, f: &CallFacts<'_>) -> bool {
        if let (Some(a), Some(g)) = (f.shell, self.path_glob())
            && a.paths.iter().any(|p| {
                f.ws.variants(p)
                    .iter()
                    .any(|v| g.matches_path(v, Quantifier::Any))
            })
        {
            return true;
        }
        if !self.names_tool(f.name) {
            return false;
        }
        self.args
            .iter()
            .all(|(target, m)| match resolve(target, f) {
                Target::Command => match (f.shell, m) {
                    (Some(a), Matcher::Glob(g)) => a.commands.iter().any(|c| g.names_command(c)),
                    _ => false,
                },
                Target::Value(name, v) => {
                    m.matches_value(v, is_path_arg(name), f.ws, Quantifier::Any)
                }
                // A bare pattern on a tool that takes no command (`fs__read_file(**/.env)`):
                // the person means its files. Deny and ask read it as a pattern over the
                // call's path arguments (matching more is the safe side); allow never does
                // (`covers`), so it cannot widen what a rule permits.
                Target::Missing
                    if matches!(target, ArgTarget::Command) && f.command_arg.is_none() =>
                {
                    f.args
                        .iter()
                        .filter(|(name, _)| is_path_arg(name))
                        .any(|(_, v)| m.matches_value(v, true, f.ws, Quantifier::Any))
                }
                Target::Missing => false,
            })
    }

    /// Allow semantics: which parts of the call does this rule cover?
    pub fn covers(&self, f: &CallFacts<'_>) -> Coverage {
        if !self.names_tool(f.name) {
            return Coverage::Nothing;
        }
        let mut commands: Option<Vec<usize>> = None;
        for (target, m) in &self.args {
            match resolve(target, f) {
                Target::Command => {
                    let (Some(a), Matcher::Glob(g)) = (f.shell, m) else {
                        return Coverage::Nothing;
                    };
                    let hit: Vec<usize> = (0..a.commands.len())
                        .filter(|&i| g.covers_command(&a.commands[i]))
                        .filter(|i| commands.as_ref().is_none_or(|c| c.contains(i)))
                        .collect();
                    commands = Some(hit);
                }
                Target::Value(name, v) => {
                    if !m.matches_value(v, is_path_arg(name), f.ws, Quantifier::All) {
                        return Coverage::Nothing;
                    }
                }
                Target::Missing => return Coverage::Nothing,
            }
        }
        match commands {
            None => Coverage::Whole,
            Some(c) if c.is_empty() => Coverage::Nothing,
            Some(c) => Coverage::Commands(c),
        }
    }
}

enum Target<'a> {
    Command,
    Value(&'a str, &'a Value),
    Missing,
}

fn resolve<'a>(target: &'a ArgTarget, f: &CallFacts<'a>) -> Target<'a> {
    match target {
        ArgTarget::Command => match f.command_arg {
            Some(_) if f.shell.is_some() => Target::Command,
            _ => Target::Missing,
        },
        ArgTarget::Named(name) if f.command_arg == Some(name.as_str()) && f.shell.is_some() => {
            Target::Command
        }
        ArgTarget::Named(name) => match f.args.get_key_value(name.as_str()) {
            Some((k, v)) => Target::Value(k.as_str(), v),
            None => Target::Missing,
        },
        ArgTarget::Url => ["url", "uri", "href", "link"]
            .iter()
            .find_map(|k| f.args.get_key_value(*k))
            .map_or(Target::Missing, |(k, v)| Target::Value(k.as_str(), v)),
    }
}

/// Every rule from config, by list.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub deny: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub allow: Vec<Rule>,
}

impl RuleSet {
    /// Compiles config's `[permissions]` lists. Every rule that fails is reported with its origin.
    pub fn from_permissions(p: &Permissions, ws: &PathScope) -> Result<Self, Vec<RuleParseError>> {
        let mut set = RuleSet::default();
        let mut errors = Vec::new();
        for (list, sources) in [
            (RuleList::Deny, &p.deny),
            (RuleList::Ask, &p.ask),
            (RuleList::Allow, &p.allow),
        ] {
            for source in sources {
                match Rule::compile(&source.rule, list, origin(source), ws) {
                    Ok(rule) => set.push(rule),
                    Err(mut e) => {
                        e.rule = format!("{} ({})", e.rule, origin(source));
                        errors.push(e);
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(set)
        } else {
            Err(errors)
        }
    }

    /// The deny globs a trusted file server must enforce itself in a call of `tool` (the
    /// request `_meta` key `tern/deny_paths`): a search over the root or a hard link to a
    /// denied file never shows a path argument the gateway could check (F4).
    pub fn deny_globs_for(&self, tool: &str) -> Vec<String> {
        self.deny_globs_where(|r| r.names_tool(tool))
    }

    /// The deny globs of every rule about one path argument, whatever tool it names: what a
    /// shell server must hide from its commands, as [`Rule::matches_any`] applies such a rule
    /// to every shell command naming the path (issue 24, item 3).
    pub fn deny_globs_for_shell(&self) -> Vec<String> {
        self.deny_globs_where(|_| true)
    }

    fn deny_globs_where(&self, keep: impl Fn(&Rule) -> bool) -> Vec<String> {
        let mut globs: Vec<String> = self
            .deny
            .iter()
            .filter(|r| keep(r))
            .filter_map(|r| r.path_glob().map(Glob::deny_glob))
            .collect();
        globs.dedup();
        globs
    }

    /// Adds one rule to its list.
    pub fn push(&mut self, rule: Rule) {
        match rule.list {
            RuleList::Deny => self.deny.push(rule),
            RuleList::Ask => self.ask.push(rule),
            RuleList::Allow => self.allow.push(rule),
        }
    }
}

/// `file:line`, as the audit log names a rule's origin.
pub fn origin(source: &RuleSource) -> String {
    format!("{}:{}", source.file.display(), source.line)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::shell::analyze;

    fn ws() -> PathScope {
        PathScope {
            cwd: "/p".into(),
            roots: vec!["/p".into()],
            home: Some("/home/u".into()),
            tern_home: "/home/u/.tern".into(),
        }
    }

    fn rule(text: &str, list: RuleList) -> Rule {
        Rule::compile(text, list, "t:1".into(), &ws()).unwrap()
    }

    #[test]
    fn allow_must_cover_every_simple_command() {
        let w = ws();
        let args = json!({"command": "git status && rm -rf x"});
        let args = args.as_object().unwrap();
        let a = analyze("git status && rm -rf x", &w);
        let f = CallFacts {
            name: "shell__run",
            args,
            command_arg: Some("command"),
            shell: Some(&a),
            ws: &w,
        };
        assert_eq!(
            rule("shell__run(git *)", RuleList::Allow).covers(&f),
            Coverage::Commands(vec![0])
        );
        assert_eq!(
            rule("shell__run", RuleList::Allow).covers(&f),
            Coverage::Whole
        );
        assert_eq!(rule("fs__*", RuleList::Allow).covers(&f), Coverage::Nothing);
        assert!(rule("shell__run(rm -rf *)", RuleList::Deny).matches_any(&f));
        assert!(rule("shell__run(command: rm *)", RuleList::Deny).matches_any(&f));
        assert!(!rule("shell__run(curl *)", RuleList::Deny).matches_any(&f));
    }

    fn shell_facts<'a>(
        w: &'a PathScope,
        args: &'a Map<String, Value>,
        a: &'a Analysis,
    ) -> CallFacts<'a> {
        CallFacts {
            name: "shell__run",
            args,
            command_arg: Some("command"),
            shell: Some(a),
            ws: w,
        }
    }

    /// F5: a deny rule written one way catches the other spellings and the wrappers.
    #[test]
    fn deny_rules_see_through_option_spellings_and_wrappers() {
        let w = ws();
        let deny = rule("shell__run(rm -rf *)", RuleList::Deny);
        for line in [
            "rm -rf build",
            "rm -fr build",
            "rm -r -f build",
            "rm -R -f build",
            "rm --recursive --force build",
            "rm --rec --force build",
            "rm -v -rf build",
            "/bin/rm -rf build",
            "\\rm -rf build",
            "nice rm -rf build",
            "nice -n 5 rm -rf build",
            "timeout 5 rm -rf build",
            "timeout -s KILL 5s rm -fr build",
            "echo build | xargs rm -rf",
            "echo build | xargs -n1 rm -r -f",
            "env X=1 rm -rf build",
            "command rm -rf build",
            "sudo rm -rf build",
            "sudo -u root -- rm -rf build",
            "doas rm -rf build",
            "busybox rm -rf build",
            "sudo nice timeout 5 busybox rm -fr build",
            "sh -c 'rm -rf build'",
            "sudo bash -c \"rm -r -f build\"",
            "find . -name build -exec rm -rf {} +",
            "git status && (cd sub; rm -fr x)",
        ] {
            let args = json!({ "command": line });
            let a = analyze(line, &w);
            let f = shell_facts(&w, args.as_object().unwrap(), &a);
            assert!(deny.matches_any(&f), "{line}: {:?}", a.commands);
        }
        for line in [
            "rm -r build",
            "rm build",
            "rmdir -p build",
            "echo rm -rf build",
            "git rm -rf build",
        ] {
            let args = json!({ "command": line });
            let a = analyze(line, &w);
            let f = shell_facts(&w, args.as_object().unwrap(), &a);
            assert!(!deny.matches_any(&f), "{line}: {:?}", a.commands);
        }
        // Allow rules still match the command as written only.
        let line = "nice rm -rf build";
        let args = json!({ "command": line });
        let a = analyze(line, &w);
        let f = shell_facts(&w, args.as_object().unwrap(), &a);
        assert_eq!(
            rule("shell__run(rm -fr *)", RuleList::Allow).covers(&f),
            Coverage::Nothing
        );
    }

    /// F4: a rule about a path is about the file, whichever tool reaches it.
    #[test]
    fn path_deny_rules_apply_to_the_paths_a_shell_command_names() {
        let w = ws();
        let deny = rule("fs__*(path: **/.env)", RuleList::Deny);
        for line in [
            "cat .env",
            "cat ./sub/../.env",
            "cat < .env",
            "grep -n KEY /p/.env",
            "sudo cat --file=.env",
            "cd sub && cat ../.env",
        ] {
            let args = json!({ "command": line });
            let a = analyze(line, &w);
            let f = shell_facts(&w, args.as_object().unwrap(), &a);
            assert!(deny.matches_any(&f), "{line}: {:?}", a.paths);
        }
        for line in ["cat .envrc", "cat x", "ls -la"] {
            let args = json!({ "command": line });
            let a = analyze(line, &w);
            let f = shell_facts(&w, args.as_object().unwrap(), &a);
            assert!(!deny.matches_any(&f), "{line}: {:?}", a.paths);
        }
        // Rules with more than a path, or about no path, keep to their tools.
        let both = rule("fs__*(path: **/.env, encoding: x)", RuleList::Deny);
        let line = "cat .env";
        let args = json!({ "command": line });
        let a = analyze(line, &w);
        assert!(!both.matches_any(&shell_facts(&w, args.as_object().unwrap(), &a)));
        let mut set = RuleSet::default();
        set.push(deny);
        set.push(rule("web__*(url: domain:x.com)", RuleList::Deny));
        assert_eq!(set.deny_globs_for("fs__grep"), ["**/.[eE][nN][vV]"]);
        assert!(set.deny_globs_for("git__log").is_empty());
    }

    #[test]
    fn keyed_rules_on_paths_and_urls() {
        let w = ws();
        let args = json!({"path": "sub/../.env", "url": "https://docs.rs/x"});
        let f = CallFacts {
            name: "fs__read_file",
            args: args.as_object().unwrap(),
            command_arg: None,
            shell: None,
            ws: &w,
        };
        assert!(rule("fs__*(path: **/.env)", RuleList::Deny).matches_any(&f));
        assert!(rule("*(path: /p/.env)", RuleList::Deny).matches_any(&f));
        assert!(!rule("*(path: ~/.ssh/**)", RuleList::Deny).matches_any(&f));
        assert!(!rule("*(nope: x)", RuleList::Deny).matches_any(&f));
        assert_eq!(
            rule("x__y(url: domain:docs.rs)", RuleList::Allow).covers(&f),
            Coverage::Nothing
        );
        assert_eq!(
            rule("fs__*(domain:docs.rs)", RuleList::Allow).covers(&f),
            Coverage::Whole
        );
        // A bare pattern on a tool without a command argument is about its paths when it
        // denies (`sub/../.env` is `.env`), and never allows anything.
        assert!(!rule("fs__read_file(cat *)", RuleList::Deny).matches_any(&f));
        assert!(rule("fs__read_file(**/.env)", RuleList::Deny).matches_any(&f));
        assert!(rule("fs__read_file(.env)", RuleList::Ask).matches_any(&f));
        assert!(!rule("fs__read_file(**/*.rs)", RuleList::Deny).matches_any(&f));
        assert_eq!(
            rule("fs__read_file(**/.env)", RuleList::Allow).covers(&f),
            Coverage::Nothing
        );
    }
}
