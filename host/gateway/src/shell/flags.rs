//! Arguments that make an allowed program run something else or write where it should not.
//!
//! These are the allow-list bypasses other agents shipped (issue 4, "Why"): `git -c
//! core.pager=sh`, `find -exec`, `sed 's/x/y/e'`, `rg --pre`, `tar --to-command`. A command using
//! one falls to ask even when an allow rule like `git *` matches its text.

/// Why `words` (a normalized simple command, program first) must be asked about, if it must.
pub fn risk(words: &[String]) -> Option<String> {
    let (program, args) = words.split_first()?;
    match program.as_str() {
        "eval" | "exec" | "source" | "." | "trap" | "alias" => {
            Some(format!("`{program}` runs text the gateway cannot check"))
        }
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "fish"
            if args.iter().any(|a| short_cluster_has(a, 'c')) =>
        {
            Some(format!(
                "`{program} -c` runs a command string the gateway cannot check"
            ))
        }
        // No script operand (or `-s`): the commands come from its input — a pipe
        // (`… | sh`), a here-string (`bash <<< …`) — which the gateway never sees.
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "fish" | "ash"
            if args
                .iter()
                .all(|a| a.starts_with('-') || a.starts_with('+'))
                || args.iter().any(|a| short_cluster_has(a, 's')) =>
        {
            Some(format!(
                "`{program}` reads commands from its input, which the gateway cannot check"
            ))
        }
        "su" | "sg" | "runuser" | "script" | "flock"
            if super::wrappers::command_option(args).is_some() =>
        {
            Some(format!(
                "`{program} -c` runs a command string the gateway cannot check"
            ))
        }
        "git" => git(args),
        "find" => find(args),
        "sed" => sed(args),
        "rg" => long(args, &["--pre"]).map(|f| format!("`rg {f}` runs a program on every file")),
        "tar" => tar(args),
        _ => None,
    }
}

/// `-xyz` contains `c` as a short option (not a `--long` option).
fn short_cluster_has(arg: &str, c: char) -> bool {
    arg.strip_prefix('-')
        .is_some_and(|rest| !rest.starts_with('-') && rest.contains(c))
}

/// The first argument equal to one of `flags` or starting with `flag=`.
fn long<'a>(args: &'a [String], flags: &[&str]) -> Option<&'a str> {
    args.iter().map(String::as_str).find(|a| {
        flags
            .iter()
            .any(|f| a == f || a.starts_with(&format!("{f}=")))
    })
}

fn git(args: &[String]) -> Option<String> {
    // Global options come before the subcommand.
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if !arg.starts_with('-') {
            break;
        }
        if arg == "-c" || (arg.starts_with("-c") && !arg.starts_with("--")) {
            return Some("`git -c` sets config such as core.pager or core.sshCommand".into());
        }
        if arg.starts_with("--config-env") || arg.starts_with("--exec-path") {
            return Some(format!("`git {arg}` changes what git runs"));
        }
        // These take a separate value.
        if matches!(
            arg.as_str(),
            "-C" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
            i += 1;
        }
        i += 1;
    }
    let sub = args.get(i).map(String::as_str).unwrap_or_default();
    let rest = args.get(i + 1..).unwrap_or_default();
    let exec_flags: &[&str] = &[
        "--upload-pack",
        "--receive-pack",
        "--exec",
        "--output",
        "--open-files-in-pager",
        "--extcmd",
        "--tool",
        "--config",
    ];
    if let Some(flag) = long(rest, exec_flags) {
        return Some(format!(
            "`git {sub} {flag}` can run or write arbitrary things"
        ));
    }
    let short_exec = match sub {
        "rebase" | "difftool" => Some('x'),
        "grep" => Some('O'),
        "clone" | "fetch" | "pull" | "ls-remote" | "archive" => Some('u'),
        _ => None,
    };
    if let Some(c) = short_exec
        && rest.iter().any(|a| short_cluster_has(a, c))
    {
        return Some(format!("`git {sub} -{c}` runs a program"));
    }
    match sub {
        "filter-branch" | "filter-repo" => Some(format!("`git {sub}` runs scripts")),
        "submodule" if rest.iter().any(|a| a == "foreach") => {
            Some("`git submodule foreach` runs a command".into())
        }
        "bisect" if rest.iter().any(|a| a == "run") => {
            Some("`git bisect run` runs a command".into())
        }
        // Writing git config can set core.pager, aliases and hooks paths that run later.
        "config" if !git_config_is_read(rest) => {
            Some("`git config` can set programs git runs later (core.pager, alias.*)".into())
        }
        _ => None,
    }
}

fn git_config_is_read(args: &[String]) -> bool {
    let reads = [
        "--get",
        "--get-all",
        "--get-regexp",
        "--list",
        "-l",
        "get",
        "list",
    ];
    args.iter().any(|a| reads.contains(&a.as_str()))
        || args.iter().filter(|a| !a.starts_with('-')).count() <= 1
}

fn find(args: &[String]) -> Option<String> {
    let actions = [
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    ];
    args.iter()
        .find(|a| actions.contains(&a.as_str()))
        .map(|a| format!("`find {a}` runs a command or changes files"))
}

fn tar(args: &[String]) -> Option<String> {
    let flags = [
        "--to-command",
        "--use-compress-program",
        "--checkpoint-action",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
    ];
    if let Some(flag) = long(args, &flags) {
        return Some(format!("`tar {flag}` runs a program"));
    }
    // `-I PROG`, `-F SCRIPT`, also inside clusters and old-style `tar xIf …`.
    let old_style = args.first().filter(|a| !a.starts_with('-'));
    let bad = |a: &str| a.contains('I') || a.contains('F');
    if args
        .iter()
        .any(|a| short_cluster_has(a, 'I') || short_cluster_has(a, 'F'))
        || old_style.is_some_and(|a| bad(a))
    {
        return Some("`tar -I`/`-F` runs a program".into());
    }
    None
}

fn sed(args: &[String]) -> Option<String> {
    let mut scripts = Vec::new();
    let mut operands = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let a = arg.as_str();
        if a == "-i"
            || a.starts_with("--in-place")
            || (short_cluster_has(a, 'i') && !a.starts_with("--"))
        {
            return Some("`sed -i` edits files in place".into());
        }
        if a == "-f" || a.starts_with("--file") || short_cluster_has(a, 'f') {
            return Some("`sed -f` reads its script from a file the gateway cannot check".into());
        }
        if a == "-e" || a == "--expression" {
            scripts.extend(it.next().cloned());
        } else if let Some(s) = a.strip_prefix("--expression=") {
            scripts.push(s.to_owned());
        } else if let Some(s) = a.strip_prefix("-e").filter(|_| !a.starts_with("--")) {
            scripts.push(s.to_owned());
        } else if a == "--" {
            operands.extend(it.by_ref().cloned());
        } else if !a.starts_with('-') || a == "-" {
            operands.push(arg.clone());
        }
    }
    if scripts.is_empty() {
        scripts.extend(operands.into_iter().next());
    }
    scripts.iter().find_map(|s| sed_script_risk(s))
}

/// Scans a sed script for the commands that run programs (`e`, the `e` flag of `s`) or write
/// files (`w`, `W`, the `w` flag). Anything it cannot follow counts as risky.
pub fn sed_script_risk(script: &str) -> Option<String> {
    scan_sed(&script.chars().collect::<Vec<_>>()).err()
}

const SED_UNREADABLE: &str = "a sed script the gateway cannot follow";

fn scan_sed(c: &[char]) -> Result<(), String> {
    let unreadable = || SED_UNREADABLE.to_owned();
    let mut i = 0;
    while i < c.len() {
        // Separators, blanks, and addresses (`1`, `$`, `/re/`, `\,re,`, `1,5`, `1~2`, `!`).
        match c[i] {
            ';' | '\n' | ' ' | '\t' | '{' | '}' | '!' | ',' | '~' | '$' => {
                i += 1;
                continue;
            }
            d if d.is_ascii_digit() => {
                i += 1;
                continue;
            }
            '/' => {
                i = skip_delimited(c, i + 1, '/').ok_or_else(unreadable)?;
                // `I` / `M` address flags.
                while i < c.len() && (c[i] == 'I' || c[i] == 'M') {
                    i += 1;
                }
                continue;
            }
            '\\' => {
                let d = *c.get(i + 1).ok_or_else(unreadable)?;
                i = skip_delimited(c, i + 2, d).ok_or_else(unreadable)?;
                continue;
            }
            '#' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            _ => {}
        }
        let cmd = c[i];
        i += 1;
        match cmd {
            'e' => return Err("sed's `e` command runs a shell command".into()),
            'w' | 'W' => return Err("sed's `w` command writes a file".into()),
            's' | 'y' => {
                let d = *c.get(i).ok_or_else(unreadable)?;
                if d == '\\' || d == '\n' {
                    return Err(unreadable());
                }
                i = skip_delimited(c, i + 1, d).ok_or_else(unreadable)?;
                i = skip_delimited(c, i, d).ok_or_else(unreadable)?;
                if cmd == 's' {
                    while i < c.len() && !matches!(c[i], ';' | '\n' | '}') {
                        match c[i] {
                            'e' => return Err("sed's `s///e` flag runs the pattern space".into()),
                            'w' => return Err("sed's `s///w` flag writes a file".into()),
                            _ => i += 1,
                        }
                    }
                }
            }
            // Text runs to the end of the line; labels and exit codes to `;` too.
            'a' | 'i' | 'c' | 'r' | 'R' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'q' | 'Q' | 'l' | 'L' => {
                while i < c.len() && !matches!(c[i], '\n' | ';' | '}') {
                    i += 1;
                }
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'z' | 'F' => {}
            _ => return Err(unreadable()),
        }
    }
    Ok(())
}

/// The index after the closing unescaped `d` that ends a part started at `i`.
fn skip_delimited(c: &[char], mut i: usize, d: char) -> Option<usize> {
    while i < c.len() {
        if c[i] == '\\' {
            i += 2;
            continue;
        }
        if c[i] == d {
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(cmd: &str) -> Option<String> {
        risk(&cmd.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn exec_style_flags_are_risky() {
        for cmd in [
            "git -c core.pager=sh log",
            "git -ccore.pager=sh log",
            "git --config-env=core.pager=X log",
            "git -C sub -c x=y status",
            "git fetch --upload-pack=evil origin",
            "git rebase -x make main",
            "git rebase --exec=make main",
            "git diff --output=/tmp/x",
            "git grep -O foo",
            "git submodule foreach rm",
            "git config core.pager sh",
            "git config alias.st !sh",
            "find . -exec rm {} ;",
            "find . -name x -delete",
            "find . -fprint /etc/x",
            "rg --pre ./evil pattern",
            "rg --pre=./evil pattern",
            "tar --to-command=sh -xf a.tar",
            "tar -I evil -xf a.tar",
            "tar xIf evil a.tar",
            "sed -i s/a/b/ f",
            "sed -f script.sed f",
            "eval ls",
            "exec ls",
            "source x.sh",
            "bash -c ls",
            "sh -ec ls",
        ] {
            assert!(r(cmd).is_some(), "{cmd}");
        }
    }

    #[test]
    fn ordinary_uses_are_not() {
        for cmd in [
            "git status",
            "git -C sub status",
            "git add -u",
            "git log --oneline",
            "git config --get user.name",
            "git config user.name",
            "find . -name *.rs",
            "rg -n foo src",
            "tar -tzf a.tar.gz",
            "tar xzf a.tar.gz",
            "sed -n 1,5p f",
            "sed s/a/b/g f",
            "bash script.sh",
        ] {
            assert_eq!(r(cmd), None, "{cmd}");
        }
    }

    #[test]
    fn sed_scripts_are_scanned() {
        for script in [
            "s/a/b/e",
            "1e id",
            "/x/e id",
            "s/a/b/w /tmp/out",
            "w out",
            "s,a,b,ge",
            "p;s/x/y/e",
            "$!{e id\n}",
            "s/a",
            "k",
        ] {
            assert!(sed_script_risk(script).is_some(), "{script}");
        }
        for script in [
            "s/a/b/g",
            "s/e/w/",
            "1,5p",
            "/foo/d",
            "s|a/e|b|2",
            "$!N;P;D",
            "y/abc/xyz/",
            "/start/,/end/{s/x/y/;p}",
            "a\\ text with e and w",
        ] {
            assert_eq!(sed_script_risk(script), None, "{script}");
        }
        assert!(r("sed -e p -e s/a/b/e f").is_some());
        assert!(r("sed --expression=1e f").is_some());
        assert!(r("sed -n s/a/b/ep f").is_some());
    }
}
