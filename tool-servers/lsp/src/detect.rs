//! Which language servers there are: the ones `--server LANG=COMMAND` names, else the first
//! known one found on `PATH` for each language.
//!
//! Found means runnable: a name on `PATH` can be a rustup proxy for a component that is not
//! installed (`rust-analyzer` is one on every rustup machine), which fails the moment it is
//! started — such a proxy counts only when some toolchain under `$RUSTUP_HOME` (default
//! `~/.rustup`) has the program. That is a look at the file system, not a run of the proxy:
//! detection runs at every start of tern, and asking rustup costs it a few hundred
//! milliseconds.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A language tern-lsp knows how to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    Rust,
    Python,
    /// TypeScript and JavaScript (one server for both).
    TypeScript,
    Go,
    /// C and C++ (one server for both).
    C,
}

impl Language {
    pub const ALL: [Language; 5] = [
        Language::Rust,
        Language::Python,
        Language::TypeScript,
        Language::Go,
        Language::C,
    ];

    /// The name used in `--server LANG=…` and in results.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
            Self::TypeScript => "typescript",
            Self::Go => "go",
            Self::C => "c",
        }
    }

    /// The name people know it by.
    pub fn display(self) -> &'static str {
        match self {
            Self::Rust => "Rust",
            Self::Python => "Python",
            Self::TypeScript => "TypeScript/JavaScript",
            Self::Go => "Go",
            Self::C => "C/C++",
        }
    }

    /// The servers looked for on `PATH`, in order of preference: program and arguments.
    pub fn known_servers(self) -> &'static [&'static [&'static str]] {
        match self {
            Self::Rust => &[&["rust-analyzer"]],
            Self::Python => &[
                &["pyright-langserver", "--stdio"],
                &["basedpyright-langserver", "--stdio"],
            ],
            Self::TypeScript => &[&["typescript-language-server", "--stdio"]],
            Self::Go => &[&["gopls"]],
            Self::C => &[&["clangd"]],
        }
    }

    /// The language of a file, by its extension, and the LSP `languageId` to open it with.
    pub fn of_path(path: &Path) -> Option<(Language, &'static str)> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "rs" => (Self::Rust, "rust"),
            "py" | "pyi" => (Self::Python, "python"),
            "ts" | "mts" | "cts" => (Self::TypeScript, "typescript"),
            "tsx" => (Self::TypeScript, "typescriptreact"),
            "js" | "mjs" | "cjs" => (Self::TypeScript, "javascript"),
            "jsx" => (Self::TypeScript, "javascriptreact"),
            "go" => (Self::Go, "go"),
            "c" | "h" => (Self::C, "c"),
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp" => (Self::C, "cpp"),
            _ => return None,
        })
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Language {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "rust" | "rs" => Self::Rust,
            "python" | "py" => Self::Python,
            "typescript" | "ts" | "javascript" | "js" => Self::TypeScript,
            "go" | "golang" => Self::Go,
            "c" | "cpp" | "c++" => Self::C,
            other => {
                return Err(format!(
                    "unknown language `{other}` (known: rust, python, typescript, go, c)"
                ));
            }
        })
    }
}

/// One `--server LANG=COMMAND` flag: a command (split on whitespace) or `off`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFlag {
    pub language: Language,
    /// `None`: `LANG=off`, the language is not served.
    pub command: Option<Vec<String>>,
}

impl FromStr for ServerFlag {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let Some((lang, command)) = s.split_once('=') else {
            return Err(format!(
                "`{s}` is not LANG=COMMAND (e.g. python=\"pyright-langserver --stdio\", or rust=off)"
            ));
        };
        let language: Language = lang.trim().parse()?;
        let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
        let command = match words.as_slice() {
            [] => {
                return Err(format!(
                    "`{s}`: the command is empty (use {lang}=off to turn it off)"
                ));
            }
            [off] if off == "off" => None,
            _ => Some(words),
        };
        Ok(Self { language, command })
    }
}

/// A language server to start for a language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    pub language: Language,
    /// The program as found (absolute when it came from `PATH`).
    pub program: PathBuf,
    pub args: Vec<String>,
    /// What the user or the table calls it (`pyright-langserver --stdio`).
    pub shown: String,
}

/// What detection found.
#[derive(Debug, Clone, Default)]
pub struct Detected {
    /// The servers, one per language at most, in [`Language::ALL`] order.
    pub servers: Vec<ServerCommand>,
    /// Why a known server that is on `PATH` does not count (a broken rustup proxy).
    pub notes: Vec<String>,
}

impl Detected {
    /// The server for `language`, if any.
    pub fn get(&self, language: Language) -> Option<&ServerCommand> {
        self.servers.iter().find(|s| s.language == language)
    }

    /// "rust-analyzer (Rust), pyright-langserver or basedpyright-langserver (Python), …":
    /// everything detection looks for, for messages.
    pub fn looked_for() -> String {
        Language::ALL
            .iter()
            .map(|l| {
                let names: Vec<&str> = l.known_servers().iter().map(|c| c[0]).collect();
                format!("{} ({})", names.join(" or "), l.display())
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Why a configured server cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("--server {language}={command}: `{program}` {why}")]
pub struct ConfigError {
    language: Language,
    command: String,
    program: String,
    why: String,
}

/// Resolves the flags and, for every language they do not name, looks on `path_var` (the
/// `PATH`) for a known server — unless `detect` is false.
pub fn detect(
    flags: &[ServerFlag],
    detect: bool,
    path_var: Option<&OsString>,
) -> Result<Detected, ConfigError> {
    let mut found = Detected::default();
    for language in Language::ALL {
        // The last flag for a language wins, as later flags override earlier ones.
        if let Some(flag) = flags.iter().rev().find(|f| f.language == language) {
            let Some(words) = &flag.command else { continue };
            let shown = words.join(" ");
            let program = find_program(&words[0], path_var).ok_or_else(|| ConfigError {
                language,
                command: shown.clone(),
                program: words[0].clone(),
                why: "is not an executable file, nor a program on PATH".into(),
            })?;
            found.servers.push(ServerCommand {
                language,
                program,
                args: words[1..].to_vec(),
                shown,
            });
            continue;
        }
        if !detect {
            continue;
        }
        for candidate in language.known_servers() {
            let Some(program) = find_program(candidate[0], path_var) else {
                continue;
            };
            if let Err(why) = check_proxy(&program) {
                found.notes.push(format!("{}: {why}", candidate[0]));
                continue;
            }
            found.servers.push(ServerCommand {
                language,
                program,
                args: candidate[1..].iter().map(|a| a.to_string()).collect(),
                shown: candidate.join(" "),
            });
            break;
        }
    }
    Ok(found)
}

/// `name` as an executable file: a path (with a `/`) as is, else the first match on `PATH`.
fn find_program(name: &str, path_var: Option<&OsString>) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return is_executable(&p).then_some(p);
    }
    std::env::split_paths(path_var?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A program that is a rustup proxy runs only when its component is installed in a
/// toolchain: look for it there.
fn check_proxy(program: &Path) -> Result<(), String> {
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf());
    let is_proxy = real
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("rustup"));
    if !is_proxy {
        return Ok(());
    }
    let Some(name) = program.file_name() else {
        return Err("is not a file".into());
    };
    let home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")));
    let installed = home
        .and_then(|h| std::fs::read_dir(h.join("toolchains")).ok())
        .into_iter()
        .flatten()
        .flatten()
        .any(|toolchain| is_executable(&toolchain.path().join("bin").join(name)));
    if installed {
        Ok(())
    } else {
        Err(format!(
            "the rustup proxy on PATH has no toolchain with the component (`rustup component \
             add {}` installs it)",
            name.to_string_lossy()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_commands_and_off() {
        let f: ServerFlag = "python=pyright-langserver --stdio".parse().unwrap();
        assert_eq!(f.language, Language::Python);
        assert_eq!(
            f.command.unwrap(),
            ["pyright-langserver".to_string(), "--stdio".to_string()]
        );
        let off: ServerFlag = "rust=off".parse().unwrap();
        assert_eq!(off.command, None);
        assert!("rust".parse::<ServerFlag>().is_err());
        assert!(
            "cobol=x"
                .parse::<ServerFlag>()
                .unwrap_err()
                .contains("unknown language")
        );
        assert!("go=".parse::<ServerFlag>().is_err());
    }

    #[test]
    fn files_map_to_languages() {
        assert_eq!(
            Language::of_path(Path::new("a/b.tsx")),
            Some((Language::TypeScript, "typescriptreact"))
        );
        assert_eq!(
            Language::of_path(Path::new("x.HPP")),
            Some((Language::C, "cpp"))
        );
        assert_eq!(Language::of_path(Path::new("README")), None);
        assert!(
            Detected::looked_for()
                .contains("pyright-langserver or basedpyright-langserver (Python)")
        );
    }

    #[test]
    fn detection_finds_programs_on_path_and_refuses_missing_configured_ones() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let gopls = dir.path().join("gopls");
        std::fs::write(&gopls, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&gopls, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Not executable: does not count.
        std::fs::write(dir.path().join("clangd"), "").unwrap();
        let path = OsString::from(dir.path());
        let found = detect(&[], true, Some(&path)).unwrap();
        assert_eq!(found.servers.len(), 1);
        assert_eq!(found.servers[0].language, Language::Go);
        assert_eq!(found.servers[0].program, gopls);

        let off = detect(&["go=off".parse().unwrap()], true, Some(&path)).unwrap();
        assert!(off.servers.is_empty());
        let none = detect(&[], false, Some(&path)).unwrap();
        assert!(none.servers.is_empty());
        let err = detect(
            &["python=no-such-server --stdio".parse().unwrap()],
            true,
            Some(&path),
        )
        .unwrap_err();
        assert!(err.to_string().contains("no-such-server"), "{err}");
    }
}
