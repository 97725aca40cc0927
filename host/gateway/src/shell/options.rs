//! Options of common commands in one spelling, so that a deny rule written one way catches the
//! others (F5): `rm -rf`, `rm -fr`, `rm -r -f`, `rm -R --force` and `rm --rec --fo` are one
//! command to `getopt`, and must be one command to a rule.
//!
//! Only programs in the table are normalized: a program's options cannot be split or renamed
//! without knowing which take a value (`cp -t DIR`, `git commit -m MSG`). Anything else is
//! matched on its words as written.

use std::collections::BTreeSet;

use super::words::canonical;
use crate::wildcard::wildcard;

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arity {
    /// `-f`; a long spelling may still carry `=VALUE` (`--backup=numbered`).
    Flag,
    /// `-t DIR`, `-tDIR`, `--target-directory=DIR`, `--target-directory DIR`.
    Value,
}

/// One option: its spellings and what they all mean.
struct Opt {
    spellings: &'static [&'static str],
    /// The canonical tokens the option stands for (`git branch -D` is `--delete --force`).
    canon: &'static [&'static str],
    arity: Arity,
}

const fn flag(spellings: &'static [&'static str], canon: &'static [&'static str]) -> Opt {
    Opt {
        spellings,
        canon,
        arity: Arity::Flag,
    }
}

const fn value(spellings: &'static [&'static str], canon: &'static [&'static str]) -> Opt {
    Opt {
        spellings,
        canon,
        arity: Arity::Value,
    }
}

/// A command with its options in canonical spelling: what a normalized rule compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// The program, with the subcommand for git (`git push`).
    pub program: String,
    /// Canonical option tokens, a value attached with `=` (`--target-directory=DIR`); `--`
    /// when the command had one.
    pub options: BTreeSet<String>,
    /// The operands in order.
    pub operands: Vec<String>,
}

impl Normalized {
    /// Whether the command `c` is one this pattern (a rule's words, normalized alike) names:
    /// the same program, every option of the pattern present (in any order, among others),
    /// and the operands matching with `*` as the wildcard.
    pub fn covers(&self, c: &Normalized) -> bool {
        if self.program != c.program {
            return false;
        }
        let options_present = self
            .options
            .iter()
            .all(|p| c.options.iter().any(|o| wildcard(p, o)));
        let pattern = canonical(&self.operands);
        let text = canonical(&c.operands);
        options_present
            && (wildcard(&pattern, &text)
                || pattern == "*"
                || pattern.strip_suffix(" *").is_some_and(|head| head == text))
    }
}

/// `words` (program first, already stripped of `/usr/bin/` and the like) with its options
/// normalized, when the program is one whose options are known.
pub fn normalize(words: &[String]) -> Option<Normalized> {
    let (program, args) = words.split_first()?;
    if program.contains('*') {
        return None;
    }
    if program == "git" {
        let mut options = BTreeSet::new();
        let mut operands = Vec::new();
        let rest = parse(
            args,
            GIT_GLOBAL,
            &mut options,
            &mut operands,
            Stop::AtOperand,
        );
        let sub = operands.pop()?;
        let spec = git_spec(&sub)?;
        parse(rest, spec, &mut options, &mut operands, Stop::Never);
        return Some(Normalized {
            program: format!("git {sub}"),
            options,
            operands,
        });
    }
    let spec = spec(program)?;
    let mut options = BTreeSet::new();
    let mut operands = Vec::new();
    parse(args, spec, &mut options, &mut operands, Stop::Never);
    Some(Normalized {
        program: program.clone(),
        options,
        operands,
    })
}

/// Where option parsing stops.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// At the first operand (git's global options end at the subcommand).
    AtOperand,
    /// Never: GNU tools take options after operands too.
    Never,
}

/// Parses `args` against `spec`; returns what was not consumed (after a [`Stop::AtOperand`]).
fn parse<'a>(
    args: &'a [String],
    spec: &[Opt],
    options: &mut BTreeSet<String>,
    operands: &mut Vec<String>,
    stop: Stop,
) -> &'a [String] {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            options.insert("--".into());
            operands.extend(args[i..].iter().cloned());
            return &[];
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            match find_long(spec, name) {
                Some(opt) => {
                    let value = match (opt.arity, attached) {
                        (_, Some(v)) => Some(v.to_owned()),
                        (Arity::Value, None) => {
                            i += 1;
                            Some(args.get(i - 1).cloned().unwrap_or_default())
                        }
                        (Arity::Flag, None) => None,
                    };
                    insert(options, opt, value);
                }
                None => {
                    options.insert(arg.clone());
                }
            }
            continue;
        }
        let is_option = arg.len() > 1
            && arg.starts_with('-')
            && !arg[1..].starts_with(|c: char| c.is_ascii_digit());
        if !is_option {
            operands.push(arg.clone());
            if stop == Stop::AtOperand {
                return &args[i..];
            }
            continue;
        }
        let cluster = &arg[1..];
        for (at, c) in cluster.char_indices() {
            let short = format!("-{c}");
            match spec.iter().find(|o| o.spellings.contains(&short.as_str())) {
                Some(opt) if opt.arity == Arity::Value => {
                    let rest = &cluster[at + c.len_utf8()..];
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).cloned().unwrap_or_default()
                    } else {
                        rest.to_owned()
                    };
                    insert(options, opt, Some(value));
                    break;
                }
                Some(opt) => insert(options, opt, None),
                None => {
                    options.insert(short);
                }
            }
        }
    }
    &[]
}

fn insert(options: &mut BTreeSet<String>, opt: &Opt, value: Option<String>) {
    for canon in opt.canon {
        options.insert(match &value {
            Some(v) => format!("{canon}={v}"),
            None => (*canon).to_owned(),
        });
    }
}

/// A long option by its full name, else by an unambiguous prefix (`--rec` is `--recursive`,
/// as getopt_long and git's parse-options both accept).
fn find_long<'s>(spec: &'s [Opt], name: &str) -> Option<&'s Opt> {
    let longs = |o: &'s Opt| o.spellings.iter().filter_map(|s| s.strip_prefix("--"));
    let exact = spec.iter().find(|o| longs(o).any(|s| s == name));
    if exact.is_some() || name.is_empty() {
        return exact;
    }
    let mut hits = spec
        .iter()
        .filter(|o| longs(o).any(|s| s.starts_with(name)));
    match (hits.next(), hits.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

fn spec(program: &str) -> Option<&'static [Opt]> {
    Some(match program {
        "rm" => RM,
        "rmdir" => RMDIR,
        "cp" => CP,
        "mv" => MV,
        "ln" => LN,
        "chmod" => CHMOD,
        "chown" | "chgrp" => CHOWN,
        "mkdir" => MKDIR,
        "shred" => SHRED,
        "truncate" => TRUNCATE,
        _ => return None,
    })
}

fn git_spec(sub: &str) -> Option<&'static [Opt]> {
    Some(match sub {
        "push" => GIT_PUSH,
        "clean" => GIT_CLEAN,
        "reset" => GIT_RESET,
        "branch" => GIT_BRANCH,
        "checkout" => GIT_CHECKOUT,
        "commit" => GIT_COMMIT,
        "restore" => GIT_RESTORE,
        "stash" | "status" | "log" | "diff" | "show" | "add" | "fetch" | "pull" | "tag"
        | "rebase" | "merge" | "switch" | "rm" | "mv" => &[],
        _ => return None,
    })
}

const RM: &[Opt] = &[
    flag(&["-f", "--force"], &["-f"]),
    flag(&["-r", "-R", "--recursive"], &["-r"]),
    flag(&["-d", "--dir"], &["-d"]),
    flag(&["-i"], &["-i"]),
    flag(&["-I"], &["-I"]),
    flag(&["--interactive"], &["--interactive"]),
    flag(&["-v", "--verbose"], &["-v"]),
    flag(&["--one-file-system"], &["--one-file-system"]),
    flag(&["--no-preserve-root"], &["--no-preserve-root"]),
    flag(&["--preserve-root"], &["--preserve-root"]),
];

const RMDIR: &[Opt] = &[
    flag(&["-p", "--parents"], &["-p"]),
    flag(&["-v", "--verbose"], &["-v"]),
    flag(
        &["--ignore-fail-on-non-empty"],
        &["--ignore-fail-on-non-empty"],
    ),
];

const CP: &[Opt] = &[
    flag(&["-a", "--archive"], &["-a"]),
    flag(&["-b", "--backup"], &["-b"]),
    flag(&["-d"], &["-d"]),
    flag(&["-f", "--force"], &["-f"]),
    flag(&["-H"], &["-H"]),
    flag(&["-i", "--interactive"], &["-i"]),
    flag(&["-l", "--link"], &["-l"]),
    flag(&["-L", "--dereference"], &["-L"]),
    flag(&["-n", "--no-clobber"], &["-n"]),
    flag(&["-P", "--no-dereference"], &["-P"]),
    flag(&["-p"], &["-p"]),
    flag(&["--preserve"], &["--preserve"]),
    flag(&["-r", "-R", "--recursive"], &["-r"]),
    flag(&["-s", "--symbolic-link"], &["-s"]),
    value(&["-S", "--suffix"], &["--suffix"]),
    value(&["-t", "--target-directory"], &["--target-directory"]),
    flag(&["-T", "--no-target-directory"], &["-T"]),
    flag(&["-u", "--update"], &["-u"]),
    flag(&["-v", "--verbose"], &["-v"]),
    flag(&["-x", "--one-file-system"], &["-x"]),
];

const MV: &[Opt] = &[
    flag(&["-b", "--backup"], &["-b"]),
    flag(&["-f", "--force"], &["-f"]),
    flag(&["-i", "--interactive"], &["-i"]),
    flag(&["-n", "--no-clobber"], &["-n"]),
    value(&["-S", "--suffix"], &["--suffix"]),
    value(&["-t", "--target-directory"], &["--target-directory"]),
    flag(&["-T", "--no-target-directory"], &["-T"]),
    flag(&["-u", "--update"], &["-u"]),
    flag(&["-v", "--verbose"], &["-v"]),
];

const LN: &[Opt] = &[
    flag(&["-b", "--backup"], &["-b"]),
    flag(&["-f", "--force"], &["-f"]),
    flag(&["-i", "--interactive"], &["-i"]),
    flag(&["-L", "--logical"], &["-L"]),
    flag(&["-n", "--no-dereference"], &["-n"]),
    flag(&["-P", "--physical"], &["-P"]),
    flag(&["-r", "--relative"], &["-r"]),
    flag(&["-s", "--symbolic"], &["-s"]),
    value(&["-S", "--suffix"], &["--suffix"]),
    value(&["-t", "--target-directory"], &["--target-directory"]),
    flag(&["-T", "--no-target-directory"], &["-T"]),
    flag(&["-v", "--verbose"], &["-v"]),
];

const CHMOD: &[Opt] = &[
    flag(&["-c", "--changes"], &["-c"]),
    flag(&["-f", "--silent", "--quiet"], &["-f"]),
    flag(&["-v", "--verbose"], &["-v"]),
    flag(&["-R", "--recursive"], &["-R"]),
    value(&["--reference"], &["--reference"]),
    flag(&["--preserve-root"], &["--preserve-root"]),
    flag(&["--no-preserve-root"], &["--no-preserve-root"]),
];

const CHOWN: &[Opt] = &[
    flag(&["-c", "--changes"], &["-c"]),
    flag(&["-f", "--silent", "--quiet"], &["-f"]),
    flag(&["-v", "--verbose"], &["-v"]),
    flag(&["-R", "--recursive"], &["-R"]),
    flag(&["-h", "--no-dereference"], &["-h"]),
    flag(&["-H"], &["-H"]),
    flag(&["-L"], &["-L"]),
    flag(&["-P"], &["-P"]),
    value(&["--reference"], &["--reference"]),
    value(&["--from"], &["--from"]),
    flag(&["--preserve-root"], &["--preserve-root"]),
    flag(&["--no-preserve-root"], &["--no-preserve-root"]),
];

const MKDIR: &[Opt] = &[
    flag(&["-p", "--parents"], &["-p"]),
    flag(&["-v", "--verbose"], &["-v"]),
    value(&["-m", "--mode"], &["--mode"]),
];

const SHRED: &[Opt] = &[
    flag(&["-f", "--force"], &["-f"]),
    value(&["-n", "--iterations"], &["--iterations"]),
    value(&["-s", "--size"], &["--size"]),
    flag(&["-u"], &["-u"]),
    flag(&["--remove"], &["-u"]),
    flag(&["-v", "--verbose"], &["-v"]),
    flag(&["-x", "--exact"], &["-x"]),
    flag(&["-z", "--zero"], &["-z"]),
];

const TRUNCATE: &[Opt] = &[
    flag(&["-c", "--no-create"], &["-c"]),
    flag(&["-o", "--io-blocks"], &["-o"]),
    value(&["-r", "--reference"], &["--reference"]),
    value(&["-s", "--size"], &["--size"]),
];

const GIT_GLOBAL: &[Opt] = &[
    value(&["-C"], &["-C"]),
    value(&["-c"], &["-c"]),
    value(&["--git-dir"], &["--git-dir"]),
    value(&["--work-tree"], &["--work-tree"]),
    value(&["--namespace"], &["--namespace"]),
    flag(&["-p", "--paginate"], &["--paginate"]),
    flag(&["-P", "--no-pager"], &["--no-pager"]),
    flag(&["--bare"], &["--bare"]),
    flag(&["--no-replace-objects"], &["--no-replace-objects"]),
    flag(&["--literal-pathspecs"], &["--literal-pathspecs"]),
    flag(&["--no-optional-locks"], &["--no-optional-locks"]),
];

const GIT_PUSH: &[Opt] = &[
    flag(&["-f", "--force"], &["--force"]),
    flag(&["--force-with-lease"], &["--force-with-lease"]),
    flag(&["--force-if-includes"], &["--force-if-includes"]),
    flag(&["-d", "--delete"], &["--delete"]),
    flag(&["-u", "--set-upstream"], &["--set-upstream"]),
    flag(&["-n", "--dry-run"], &["--dry-run"]),
    flag(&["-q", "--quiet"], &["--quiet"]),
    flag(&["-v", "--verbose"], &["--verbose"]),
    flag(&["--all", "--branches"], &["--all"]),
    flag(&["--mirror"], &["--mirror"]),
    flag(&["--tags"], &["--tags"]),
    flag(&["--follow-tags"], &["--follow-tags"]),
    flag(&["--no-verify"], &["--no-verify"]),
    flag(&["--prune"], &["--prune"]),
    flag(&["--atomic"], &["--atomic"]),
    value(&["-o", "--push-option"], &["--push-option"]),
    value(&["--repo"], &["--repo"]),
];

const GIT_CLEAN: &[Opt] = &[
    flag(&["-f", "--force"], &["--force"]),
    flag(&["-d"], &["-d"]),
    flag(&["-x"], &["-x"]),
    flag(&["-X"], &["-X"]),
    flag(&["-n", "--dry-run"], &["--dry-run"]),
    flag(&["-q", "--quiet"], &["--quiet"]),
    flag(&["-i", "--interactive"], &["--interactive"]),
    value(&["-e", "--exclude"], &["--exclude"]),
];

const GIT_RESET: &[Opt] = &[
    flag(&["--hard"], &["--hard"]),
    flag(&["--soft"], &["--soft"]),
    flag(&["--mixed"], &["--mixed"]),
    flag(&["--merge"], &["--merge"]),
    flag(&["--keep"], &["--keep"]),
    flag(&["-q", "--quiet"], &["--quiet"]),
    flag(&["-p", "--patch"], &["--patch"]),
    flag(&["-N", "--intent-to-add"], &["--intent-to-add"]),
];

const GIT_BRANCH: &[Opt] = &[
    flag(&["-d", "--delete"], &["--delete"]),
    flag(&["-D"], &["--delete", "--force"]),
    flag(&["-f", "--force"], &["--force"]),
    flag(&["-m", "--move"], &["--move"]),
    flag(&["-M"], &["--move", "--force"]),
    flag(&["-c", "--copy"], &["--copy"]),
    flag(&["-C"], &["--copy", "--force"]),
    flag(&["-r", "--remotes"], &["--remotes"]),
    flag(&["-a", "--all"], &["--all"]),
    flag(&["-l", "--list"], &["--list"]),
    flag(&["-v", "--verbose"], &["--verbose"]),
    flag(&["-q", "--quiet"], &["--quiet"]),
    value(&["-u", "--set-upstream-to"], &["--set-upstream-to"]),
];

const GIT_CHECKOUT: &[Opt] = &[
    flag(&["-f", "--force"], &["--force"]),
    value(&["-b"], &["-b"]),
    value(&["-B"], &["-B"]),
    value(&["--orphan"], &["--orphan"]),
    flag(&["--detach"], &["--detach"]),
    flag(&["-q", "--quiet"], &["--quiet"]),
    flag(&["-p", "--patch"], &["--patch"]),
    flag(&["-m", "--merge"], &["--merge"]),
    flag(&["-t", "--track"], &["--track"]),
    flag(&["--ours"], &["--ours"]),
    flag(&["--theirs"], &["--theirs"]),
];

const GIT_COMMIT: &[Opt] = &[
    flag(&["-a", "--all"], &["--all"]),
    value(&["-m", "--message"], &["--message"]),
    value(&["-F", "--file"], &["--file"]),
    value(&["-C", "--reuse-message"], &["--reuse-message"]),
    flag(&["-n", "--no-verify"], &["--no-verify"]),
    flag(&["--amend"], &["--amend"]),
    flag(&["-q", "--quiet"], &["--quiet"]),
    flag(&["-v", "--verbose"], &["--verbose"]),
    flag(&["-s", "--signoff"], &["--signoff"]),
    flag(&["--allow-empty"], &["--allow-empty"]),
    flag(&["--no-edit"], &["--no-edit"]),
];

const GIT_RESTORE: &[Opt] = &[
    value(&["-s", "--source"], &["--source"]),
    flag(&["-S", "--staged"], &["--staged"]),
    flag(&["-W", "--worktree"], &["--worktree"]),
    flag(&["-p", "--patch"], &["--patch"]),
    flag(&["-q", "--quiet"], &["--quiet"]),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn n(line: &str) -> Normalized {
        normalize(
            &line
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
        .unwrap()
    }

    #[test]
    fn every_spelling_of_rm_rf_is_one_command() {
        let pattern = n("rm -rf *");
        for line in [
            "rm -rf x",
            "rm -fr x",
            "rm -r -f x",
            "rm -R -f x",
            "rm --recursive --force x",
            "rm --rec --fo x",
            "rm -v -fr x",
            "rm x -rf",
            "rm -rfv -- x",
            "rm -rf",
        ] {
            assert!(pattern.covers(&n(line)), "{line}: {:?}", n(line));
        }
        for line in ["rm -r x", "rm -f x", "rm x", "rmdir -p x"] {
            assert!(!pattern.covers(&n(line)), "{line}");
        }
    }

    #[test]
    fn values_stay_with_their_options() {
        assert_eq!(
            n("cp -rt dir a b").options,
            ["--target-directory=dir", "-r"].map(String::from).into()
        );
        assert_eq!(n("cp -rt dir a b").operands, ["a", "b"]);
        assert_eq!(
            n("cp --target-directory dir a").options,
            n("cp -tdir a").options
        );
        let commit = n("git commit -am msg");
        assert_eq!(commit.program, "git commit");
        assert_eq!(
            commit.options,
            ["--all", "--message=msg"].map(String::from).into()
        );
        assert!(commit.operands.is_empty());
    }

    #[test]
    fn git_subcommands_and_global_options() {
        let pattern = n("git push --force *");
        for line in [
            "git push -f origin main",
            "git -C sub push --force origin",
            "git --no-pager push origin main -f",
            "git push origin main --force",
        ] {
            assert!(pattern.covers(&n(line)), "{line}");
        }
        assert!(!pattern.covers(&n("git push origin main")));
        assert!(!pattern.covers(&n("git push --force-with-lease origin")));
        assert!(n("git branch -D x").options.contains("--force"));
        assert!(n("git branch --delete --force x") == n("git branch -D x"));
        assert!(normalize(&["git".into(), "frobnicate".into()]).is_none());
        assert!(normalize(&["curl".into(), "-X".into()]).is_none());
    }

    #[test]
    fn ambiguous_long_prefixes_are_left_as_written() {
        // `--no` could be --no-dereference or --no-target-directory or --no-clobber.
        assert!(n("cp --no a b").options.contains("--no"));
    }
}
