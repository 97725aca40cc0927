//! Shell commands as permission rules see them (issue 4, item 3).
//!
//! A command line is parsed with brush-parser (a real bash grammar, not regexes) into the simple
//! commands it runs — across `&&`, `||`, `;`, `|`, newlines, `&`, groups, subshells, control flow
//! and the inside of substitutions — each normalized (`/usr/bin/git` → `git`, `env X=1 git` →
//! `git`, a leading `cd dir &&` folded into the working directory). An allow rule must match
//! every one of them. Constructs whose effect the text does not show — substitutions, `eval`,
//! process substitution, redirections outside the roots, exec-style flags, anything unparsable —
//! are *risks*: they make the command fall to ask however the allow rules read.

mod flags;
pub mod glob;
pub mod options;
mod redirects;
mod words;
mod wrappers;

use std::path::PathBuf;

use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, SimpleCommand,
};

use crate::paths::PathScope;
use words::{Literal, literal};
pub use words::{canonical, quote, split_pattern};

/// How deep command substitutions inside command substitutions are followed before the command
/// counts as unreadable.
const MAX_DEPTH: usize = 8;

/// How many wrapped commands one simple command may stand for before the rest is not
/// followed (`sudo nice timeout 5 rm …` is three levels; a line of sixty wrappers is an attack
/// on the analysis, and says so as a risk).
const MAX_FORMS: usize = 64;

/// Directories whose programs are the same as the bare name (`/usr/bin/git` is `git`); a path
/// elsewhere (`./git`, `/tmp/git`) stays a path, which no `git …` rule matches.
const SYSTEM_BIN_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
    "/opt/homebrew/bin",
];

/// Interpreters whose first operand is a script they read and run (a skill's script in a
/// protected skills folder may be that operand without counting as naming the location).
const SCRIPT_RUNNERS: &[&str] = &[
    "bash", "sh", "dash", "zsh", "python", "python3", "node", "ruby", "perl",
];

/// Variables that change which program runs or what it runs, so `PATH=/tmp git status` is not
/// `git status`.
fn dangerous_var(name: &str) -> bool {
    let exact = [
        "PATH",
        "BASH_ENV",
        "ENV",
        "IFS",
        "PS4",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "PAGER",
        "EDITOR",
        "VISUAL",
        "MANPAGER",
        "LESSOPEN",
        "LESSCLOSE",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "NODE_OPTIONS",
        "PERL5OPT",
        "RUSTC_WRAPPER",
        "CARGO_HOME",
    ];
    exact.contains(&name) || ["LD_", "DYLD_", "GIT_"].iter().any(|p| name.starts_with(p))
}

/// One simple command, normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    /// Program first, arguments after, unquoted (raw text for dynamic words).
    pub words: Vec<String>,
    /// [`canonical`] form of `words`: what command patterns match.
    pub text: String,
    /// The commands it may run through a wrapper (`timeout 5 rm -rf x` → `rm -rf x`, and
    /// the over-approximations `5 rm -rf x`, `x`): what deny and ask rules match besides
    /// `words`. Allow rules never look here.
    pub wrapped: Vec<Vec<String>>,
    /// The files its redirections write (`> out.txt`, as written; `/dev/null` and the like
    /// aside), its own and an enclosing group's: an allow rule for the command alone does not
    /// cover them (`git status *` must not allow `git status > any-file`).
    pub writes: Vec<String>,
}

/// What a command line does, as far as the text tells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command it runs, in order.
    pub commands: Vec<Simple>,
    /// Why it must not be allowed by a rule (empty: rules decide).
    pub risks: Vec<String>,
    /// Some of its risks hide *which programs run* (a program decided at run time, `eval`,
    /// `sh -c`, a shell reading its input, `env -S`, `find -exec`/`-delete`, …), so a deny rule
    /// could match what runs without the gateway seeing it. `yolo` denies such a command when a
    /// deny rule names the tool, instead of allowing what nobody could check.
    pub opaque: bool,
    /// Writes into protected config locations (redirections): always denied.
    pub protected_writes: Vec<PathBuf>,
    /// Every path the line names — argument words, redirection targets, what its globs match
    /// on disk now — normalized: what deny rules on paths compare (F4: `cat .env` under a rule
    /// denying `**/.env`).
    pub paths: Vec<PathBuf>,
}

/// Parses and normalizes `command` as run in `ws.cwd`.
pub fn analyze(command: &str, ws: &PathScope) -> Analysis {
    let mut walker = Walker {
        ws,
        cwd: ws.cwd.clone(),
        out: Analysis::default(),
    };
    walker.source(command, 0);
    walker.out
}

struct Walker<'a> {
    ws: &'a PathScope,
    cwd: PathBuf,
    out: Analysis,
}

impl Walker<'_> {
    fn risk(&mut self, why: impl Into<String>) {
        let why = why.into();
        if !self.out.risks.contains(&why) {
            self.out.risks.push(why);
        }
    }

    /// A risk that hides which programs run ([`Analysis::opaque`]).
    fn opaque(&mut self, why: impl Into<String>) {
        self.out.opaque = true;
        self.risk(why);
    }

    fn source(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.opaque("command substitutions nested too deep to read");
            return;
        }
        let mut parser = brush_parser::Parser::new(
            std::io::Cursor::new(text.as_bytes()),
            &brush_parser::ParserOptions::default(),
        );
        match parser.parse_program() {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            Err(err) => {
                self.opaque(format!("the shell parser cannot read it ({err})"));
                // Deny rules still see the whole text as one command.
                let words = split_pattern(text);
                self.out.commands.push(Simple {
                    text: canonical(&words),
                    words,
                    wrapped: Vec::new(),
                    writes: Vec::new(),
                });
            }
        }
    }

    fn list(&mut self, list: &CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, _separator) in &list.0 {
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, depth),
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        for command in &pipeline.seq {
            self.command(command, depth);
        }
    }

    fn command(&mut self, command: &Command, depth: usize) {
        match command {
            Command::Simple(simple) => self.simple(simple, depth),
            Command::Compound(compound, redirects) => {
                let mut writes = Vec::new();
                if let Some(list) = redirects {
                    for r in &list.0 {
                        writes.extend(self.redirect(r, depth));
                    }
                }
                let first = self.out.commands.len();
                self.compound(compound, depth);
                // `{ git status; } > file`: every command of the group writes there.
                for c in &mut self.out.commands[first..] {
                    c.writes.extend(writes.iter().cloned());
                }
            }
            Command::Function(f) => {
                self.opaque(format!("it defines a shell function `{}`", f.fname.value));
                self.compound(&f.body.0, depth);
            }
            Command::ExtendedTest(..) => self.risk("a `[[ … ]]` test"),
        }
    }

    fn compound(&mut self, compound: &CompoundCommand, depth: usize) {
        // A subshell's or group's `cd` does not outlive it.
        let saved = self.cwd.clone();
        match compound {
            CompoundCommand::BraceGroup(g) => self.list(&g.list, depth),
            CompoundCommand::Subshell(s) => self.list(&s.list, depth),
            CompoundCommand::IfClause(c) => {
                self.list(&c.condition, depth);
                self.list(&c.then, depth);
                for e in c.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond, depth);
                    }
                    self.list(&e.body, depth);
                }
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0, depth);
                self.list(&w.1.list, depth);
            }
            CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value, depth);
                }
                // The loop variable makes the body's `$var` dynamic, which the words report.
                self.list(&f.body.list, depth);
            }
            CompoundCommand::CaseClause(c) => {
                self.word(&c.value.value, depth);
                for item in &c.cases {
                    if let Some(list) = &item.cmd {
                        self.list(list, depth);
                    }
                }
            }
            CompoundCommand::Arithmetic(_) | CompoundCommand::ArithmeticForClause(_) => {
                self.risk("arithmetic evaluation (( … ))");
            }
            CompoundCommand::Coprocess(c) => {
                self.opaque("a coprocess");
                self.command(&c.body, depth);
            }
        }
        self.cwd = saved;
    }

    /// Unquotes a word, following any substitutions inside it.
    fn word(&mut self, raw: &str, depth: usize) -> Literal {
        let mut subs = Vec::new();
        let lit = literal(raw, &mut subs);
        if let Literal::Dynamic { why, .. } = &lit {
            self.risk(format!("{why} in `{raw}`"));
        }
        for sub in subs {
            self.source(&sub, depth + 1);
        }
        lit
    }

    fn simple(&mut self, cmd: &SimpleCommand, depth: usize) {
        let mut items: Vec<&CommandPrefixOrSuffixItem> = Vec::new();
        items.extend(cmd.prefix.iter().flat_map(|p| p.0.iter()));
        let mut words: Vec<String> = Vec::new();
        // Arguments the shell expands into file names, as written.
        let mut globs: Vec<String> = Vec::new();
        let mut name_seen = false;
        let mut writes = Vec::new();
        let name_item = cmd
            .word_or_name
            .as_ref()
            .map(|w| CommandPrefixOrSuffixItem::Word(w.clone()));
        items.extend(name_item.iter());
        items.extend(cmd.suffix.iter().flat_map(|s| s.0.iter()));
        for item in items {
            match item {
                CommandPrefixOrSuffixItem::Word(w) => {
                    let is_program = !name_seen;
                    name_seen = true;
                    let lit = self.word(&w.value, depth);
                    if is_program && let Literal::Dynamic { .. } = &lit {
                        self.opaque(format!("the program `{}` is decided at run time", w.value));
                    }
                    if let Literal::Glob { text, pattern } = &lit
                        && !is_program
                    {
                        self.glob_word(text, pattern, Access::Names);
                        globs.push(text.clone());
                    }
                    words.push(lit.text().to_owned());
                }
                CommandPrefixOrSuffixItem::AssignmentWord(assignment, w) => {
                    let name = match &assignment.name {
                        ast::AssignmentName::VariableName(n)
                        | ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
                    };
                    let lit = self.word(&w.value, depth);
                    if name_seen {
                        // `export X=1`, `declare X=1`: an argument of the command.
                        words.push(lit.text().to_owned());
                    }
                    if dangerous_var(&name) {
                        self.opaque(format!("it sets {name}, which changes what programs run"));
                    }
                }
                CommandPrefixOrSuffixItem::IoRedirect(r) => writes.extend(self.redirect(r, depth)),
                CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    self.risk("a process substitution <(…)");
                    self.list(&sub.list, depth);
                }
            }
        }
        let words = self.normalize(words);
        if words.is_empty() {
            return;
        }
        if words[0] == "cd" {
            match words.get(1) {
                Some(dir) if globs.contains(dir) => {
                    self.risk(format!("a `cd` to `{dir}`, which the shell expands"));
                }
                _ if self.cd(&words) => return,
                _ => {}
            }
        }
        if self.ws.is_protected(&self.cwd) {
            self.risk(format!(
                "it runs in {}, a protected config location",
                self.cwd.display()
            ));
        }
        if let Some(why) = flags::risk(&words) {
            self.opaque(why);
        }
        for (i, w) in words[1..].iter().enumerate() {
            // `--flag=PATH` names a path too.
            let w = match w.split_once('=') {
                Some((flag, value)) if flag.starts_with('-') => value,
                _ if w.starts_with('-') => continue,
                _ => w.as_str(),
            };
            let path = self.ws.normalize_from(&self.cwd, w);
            // `bash $TERN_HOME/skills/x/run.sh …`: the interpreter reads a skill's script; only
            // that operand, right after the interpreter, is let through.
            let skill_script = i == 0
                && SCRIPT_RUNNERS.contains(&words[0].as_str())
                && self.ws.is_protected_skill_file(&path);
            if looks_like_path(w) && self.ws.is_protected(&path) && !skill_script {
                self.risk(format!("it names `{w}`, a protected config location"));
            }
            self.out.paths.push(path);
        }
        let wrapped = self.wrapped(&words, depth);
        self.out.commands.push(Simple {
            text: canonical(&words),
            words,
            wrapped,
            writes,
        });
    }

    /// The commands `words` runs through wrappers, followed through wrappers of wrappers.
    /// Scripts (`sh -c STR`, `eval`) are parsed as command lines of their own, so their
    /// commands join the analysis as commands in their own right.
    fn wrapped(&mut self, words: &[String], depth: usize) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = Vec::new();
        let mut queue = vec![words.to_vec()];
        while let Some(w) = queue.pop() {
            let found = match wrappers::inner(&w) {
                wrappers::Inner::None => continue,
                wrappers::Inner::Arguments => wrappers::candidates(&w),
                wrappers::Inner::Segments(segments) => segments,
                wrappers::Inner::Script(script) => {
                    self.source(&script, depth + 1);
                    continue;
                }
            };
            for mut form in found {
                strip_bin_dir(&mut form);
                if out.len() >= MAX_FORMS {
                    self.opaque("more wrapped commands than the gateway follows");
                    return out;
                }
                if let Some(why) = flags::risk(&form) {
                    self.opaque(why);
                }
                if !out.contains(&form) {
                    queue.push(form.clone());
                    out.push(form);
                }
            }
        }
        out
    }

    /// Strips what does not change the program: a system bin directory, `env` with plain
    /// assignments, `command`, `builtin`, `nohup`.
    fn normalize(&mut self, mut words: Vec<String>) -> Vec<String> {
        loop {
            if strip_bin_dir(&mut words) {
                continue;
            }
            let Some(first) = words.first() else {
                return words;
            };
            match first.as_str() {
                "env" => {
                    let mut i = 1;
                    while let Some(w) = words.get(i) {
                        if let Some((name, _)) = w.split_once('=').filter(|(n, _)| is_name(n)) {
                            if dangerous_var(name) {
                                self.opaque(format!(
                                    "it sets {name}, which changes what programs run"
                                ));
                            }
                            i += 1;
                        } else if matches!(w.as_str(), "-i" | "--ignore-environment" | "-") {
                            i += 1;
                        } else if w == "-u" || w == "--unset" {
                            i += 2;
                        } else if w.starts_with("--unset=") {
                            i += 1;
                        } else if w.starts_with('-') {
                            self.opaque(format!("`env {w}` is not understood"));
                            return words;
                        } else {
                            break;
                        }
                    }
                    if i >= words.len() {
                        return words;
                    }
                    words.drain(..i);
                }
                "command" | "builtin" | "nohup"
                    if words.get(1).is_some_and(|w| !w.starts_with('-')) =>
                {
                    words.remove(0);
                }
                _ => return words,
            }
        }
    }

    /// A `cd` to a literal directory inside the roots moves the working directory and needs no
    /// rule; returns false when the `cd` must be checked like any command.
    fn cd(&mut self, words: &[String]) -> bool {
        let target = match words.get(1..) {
            Some([]) | None => self.ws.home.clone(),
            Some([dir]) if dir != "-" => Some(self.ws.normalize_from(&self.cwd, dir)),
            _ => None,
        };
        match target {
            Some(dir) if self.ws.in_roots(&dir) => {
                self.cwd = dir;
                true
            }
            Some(dir) => {
                self.cwd = dir;
                false
            }
            None => {
                self.risk("a `cd` the gateway cannot follow");
                false
            }
        }
    }
}

/// `/usr/bin/rm` → `rm`: a program in a system bin directory is the bare name. Returns whether
/// the first word changed.
fn strip_bin_dir(words: &mut [String]) -> bool {
    let Some(first) = words.first_mut() else {
        return false;
    };
    match first.rsplit_once('/') {
        Some((dir, name))
            if SYSTEM_BIN_DIRS.contains(&if dir.is_empty() { "/" } else { dir })
                && !name.is_empty() =>
        {
            *first = name.to_owned();
            true
        }
        _ => false,
    }
}

/// What a command does with a path it names, as far as protection goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// A redirection writes it.
    Writes,
    /// An argument names it (the program may write it).
    Names,
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn looks_like_path(word: &str) -> bool {
    !word.starts_with('-') && (word.contains('/') || word.starts_with('.') || word.starts_with('~'))
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
