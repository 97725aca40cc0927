//! Commands that run another command (F5): `nice rm -rf x`, `timeout 5 rm -rf x`,
//! `echo x | xargs rm -rf`, `sudo rm -rf x`, `busybox rm -rf x`, `sh -c 'rm -rf x'`,
//! `find . -exec rm -rf {} ;`. A deny rule for `rm -rf *` must see the `rm` inside each.
//!
//! The wrapped command is found without knowing each wrapper's options: every argument that
//! is not an option could be where it starts (`timeout -s KILL 5 rm …` yields `KILL 5 rm …`,
//! `5 rm …` and `rm …`). That over-approximation is only ever used to *deny* or *ask* — an
//! allow rule still has to match the command as written.

/// What a simple command runs besides itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inner {
    /// Nothing: an ordinary program.
    None,
    /// The command in its arguments, after the wrapper's own options.
    Arguments,
    /// A script given as a string (`sh -c STR`, `eval ARGS`, `su -c STR`, `watch ARGS`).
    Script(String),
    /// Commands between markers (`find … -exec CMD {} ;`).
    Segments(Vec<Vec<String>>),
}

/// Programs that run the command their arguments name.
const RUNNERS: &[&str] = &[
    "nice",
    "timeout",
    "xargs",
    "sudo",
    "doas",
    "busybox",
    "toybox",
    "stdbuf",
    "ionice",
    "chrt",
    "taskset",
    "setsid",
    "time",
    "nohup",
    "env",
    "command",
    "builtin",
    "exec",
    "strace",
    "ltrace",
    "unbuffer",
    "flock",
    "systemd-run",
    "firejail",
    "unshare",
    "nsenter",
    "chroot",
    "runuser",
    "fakeroot",
    "setpriv",
    "prlimit",
    "numactl",
    "cgexec",
    "torsocks",
    "proxychains",
    "proxychains4",
    "parallel",
    "caffeinate",
    "nocache",
    "sg",
];

const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash"];

/// What `words` (program first, normalized) runs besides itself.
pub fn inner(words: &[String]) -> Inner {
    let Some((program, args)) = words.split_first() else {
        return Inner::None;
    };
    let program = program.as_str();
    if SHELLS.contains(&program) {
        return shell_script(args).map_or(Inner::None, Inner::Script);
    }
    match program {
        "eval" if !args.is_empty() => Inner::Script(args.join(" ")),
        "watch" => {
            let command: Vec<&str> = args
                .iter()
                .map(String::as_str)
                .skip_while(|a| a.starts_with('-'))
                .collect();
            Inner::Script(command.join(" "))
        }
        "su" | "sg" | "runuser" | "script" | "flock" if command_option(args).is_some() => {
            command_option(args).map_or(Inner::None, Inner::Script)
        }
        "find" => Inner::Segments(find_exec(args)),
        p if RUNNERS.contains(&p) => Inner::Arguments,
        _ => Inner::None,
    }
}

/// The candidate commands of an [`Inner::Arguments`] wrapper: the arguments from each word
/// that is not an option on.
pub fn candidates(words: &[String]) -> Vec<Vec<String>> {
    (1..words.len())
        .filter(|&i| !words[i].starts_with('-') && !words[i].is_empty())
        .map(|i| words[i..].to_vec())
        .collect()
}

/// `sh -c STR …`: the string, which is the first argument that is not an option, when a short
/// option cluster holds `c`.
fn shell_script(args: &[String]) -> Option<String> {
    let has_c = args
        .iter()
        .take_while(|a| a.starts_with('-') || a.starts_with('+'))
        .any(|a| {
            a.strip_prefix('-')
                .is_some_and(|o| !o.starts_with('-') && o.contains('c'))
        });
    if !has_c {
        return None;
    }
    args.iter()
        .find(|a| !a.starts_with('-') && !a.starts_with('+'))
        .cloned()
}

/// `-c STR`, `-cSTR`, `--command=STR`, `--command STR`.
pub(crate) fn command_option(args: &[String]) -> Option<String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-c" || a == "--command" {
            return it.next().cloned();
        }
        if let Some(s) = a.strip_prefix("--command=") {
            return Some(s.to_owned());
        }
        if let Some(s) = a
            .strip_prefix("-c")
            .filter(|s| !s.is_empty() && !a.starts_with("--"))
        {
            return Some(s.to_owned());
        }
        // A cluster ending in `c` (`script -qc CMD`): the next word is the command.
        if !a.starts_with("--") && a.len() > 2 && a.starts_with('-') && a.ends_with('c') {
            return it.next().cloned();
        }
    }
    None
}

/// The commands of `-exec`, `-execdir`, `-ok` and `-okdir`, each up to its `;` or `+`.
fn find_exec(args: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let segment: Vec<String> = it
                .by_ref()
                .take_while(|w| *w != ";" && *w != "+")
                .cloned()
                .collect();
            if !segment.is_empty() {
                out.push(segment);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn runners_offer_every_possible_start() {
        assert_eq!(inner(&w("timeout -s KILL 5 rm -rf x")), Inner::Arguments);
        assert_eq!(
            candidates(&w("timeout -s KILL 5 rm -rf x")),
            [w("KILL 5 rm -rf x"), w("5 rm -rf x"), w("rm -rf x"), w("x")]
        );
        assert_eq!(inner(&w("ls -la")), Inner::None);
    }

    #[test]
    fn scripts_and_exec_segments_are_found() {
        let sh = vec!["sh".to_string(), "-ec".into(), "rm -rf x".into()];
        assert_eq!(inner(&sh), Inner::Script("rm -rf x".into()));
        assert_eq!(inner(&w("bash script.sh")), Inner::None);
        assert_eq!(inner(&w("eval rm -rf x")), Inner::Script("rm -rf x".into()));
        let su = vec![
            "su".to_string(),
            "-c".into(),
            "rm -rf x".into(),
            "root".into(),
        ];
        assert_eq!(inner(&su), Inner::Script("rm -rf x".into()));
        assert_eq!(
            inner(&w("find . -name y -exec rm -rf {} ; -print")),
            Inner::Segments(vec![w("rm -rf {}")])
        );
    }
}
