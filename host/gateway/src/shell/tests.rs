use std::path::Path;

use super::*;

fn ws() -> PathScope {
    PathScope {
        cwd: "/p".into(),
        roots: vec!["/p".into()],
        home: Some("/home/u".into()),
        tern_home: "/home/u/.tern".into(),
    }
}

fn texts(a: &Analysis) -> Vec<&str> {
    a.commands.iter().map(|c| c.text.as_str()).collect()
}

#[test]
fn compound_lines_split_into_simple_commands() {
    let a = analyze("git status && curl x | grep y", &ws());
    assert_eq!(texts(&a), ["git status", "curl x", "grep y"]);
    assert!(a.risks.is_empty(), "{:?}", a.risks);
    // A shell at the end of a pipe runs what came down it: its commands are not in the text.
    let a = analyze("git status && curl x | sh", &ws());
    assert_eq!(texts(&a), ["git status", "curl x", "sh"]);
    assert!(a.opaque, "{:?}", a.risks);
    for (line, expected) in [
        ("a; b", vec!["a", "b"]),
        ("a\nb", vec!["a", "b"]),
        ("a || b & c", vec!["a", "b", "c"]),
        ("{ a; (b); }", vec!["a", "b"]),
        ("if a; then b; else c; fi", vec!["a", "b", "c"]),
        ("while a; do b; done", vec!["a", "b"]),
    ] {
        let a = analyze(line, &ws());
        assert_eq!(texts(&a), expected, "{line}");
    }
}

#[test]
fn fifty_trues_then_rm_keeps_the_rm() {
    let line = format!("{}rm -rf /", "true && ".repeat(50));
    let a = analyze(&line, &ws());
    assert_eq!(a.commands.len(), 51);
    assert_eq!(a.commands[50].text, "rm -rf /");
}

#[test]
fn normalization() {
    for (line, expected) in [
        ("/usr/bin/git push", "git push"),
        ("env X=1 git status", "git status"),
        ("env -i -u Y X=1 /bin/git status", "git status"),
        ("X=1 git status", "git status"),
        ("command git status", "git status"),
        ("cd src && cargo test", "cargo test"),
        ("git commit -m \"a b\"", "git commit -m 'a b'"),
        ("./git status", "./git status"),
        ("/tmp/git status", "/tmp/git status"),
    ] {
        let a = analyze(line, &ws());
        assert_eq!(texts(&a), [expected], "{line}");
        assert!(a.risks.is_empty(), "{line}: {:?}", a.risks);
    }
    // A cd outside the roots must be allowed itself.
    let a = analyze("cd /etc && ls", &ws());
    assert_eq!(texts(&a), ["cd /etc", "ls"]);
}

#[test]
fn run_time_constructs_are_risks_and_their_commands_still_seen() {
    for line in [
        "echo $(rm -rf /)",
        "echo `rm -rf /`",
        "echo \"$(rm -rf /)\"",
        "diff <(rm -rf /) x",
        "cat > >(rm -rf /)",
    ] {
        let a = analyze(line, &ws());
        assert!(!a.risks.is_empty(), "{line}");
        assert!(texts(&a).contains(&"rm -rf /"), "{line}: {:?}", texts(&a));
    }
    for line in [
        "eval ls",
        "exec ls",
        "echo $HOME",
        "PATH=/tmp git status",
        "LD_PRELOAD=/x.so git status",
        "env GIT_PAGER=sh git log",
        "env -S 'a b' ls",
        "f() { ls; }",
        "git -c core.pager=sh log",
        "find . -exec rm {} \\;",
        "echo hi > /etc/passwd",
        "cat < /etc/shadow",
        "ls 2> ../outside.txt",
        "cd - && ls",
        "echo 'unterminated",
        "(( x = 1 ))",
        "cat <<EOF\n$(id)\nEOF\n",
    ] {
        let a = analyze(line, &ws());
        assert!(!a.risks.is_empty(), "{line}: {:?}", a);
    }
}

#[test]
fn redirections_inside_roots_are_fine_and_config_writes_are_flagged() {
    let a = analyze("cargo test > out.txt 2>&1 < in.txt; ls > /dev/null", &ws());
    assert!(a.risks.is_empty(), "{:?}", a.risks);
    for line in [
        "echo x > .tern/config.toml",
        "echo x >> .TERN/new.toml",
        "cd .tern && echo x > config.toml",
        "echo x &> /home/u/.tern/config.toml",
        "echo x > ~/.tern/config.toml",
    ] {
        let a = analyze(line, &ws());
        assert_eq!(a.protected_writes.len(), 1, "{line}: {a:?}");
    }
    let a = analyze("cp evil .tern/config.toml", &ws());
    assert!(!a.risks.is_empty());
    let a = analyze("cp --target-directory=.tern evil", &ws());
    assert!(!a.risks.is_empty());
    assert_eq!(ws().normalize("x"), Path::new("/p/x"));
}

/// F1: words the shell expands may not reach a protected config location unseen.
#[test]
fn globs_and_braces_that_may_reach_protected_config_are_caught() {
    for line in [
        "cd .ter? && cat ../evil.toml > config.toml",
        "cd .t* && cat ../evil.toml > config.toml",
        "cp evil.toml .ter?",
        "cp evil.toml .ter?/config.toml",
        "mv evil.toml .{tern,x}/config.toml",
        "cat .ter?/config.toml",
        "cd .tern && cp ../evil.toml config.toml",
        "tee ~/.ter*/config.toml < evil.toml",
    ] {
        let a = analyze(line, &ws());
        assert!(
            !a.risks.is_empty() || !a.protected_writes.is_empty(),
            "{line}: {a:?}"
        );
    }
    for line in [
        "echo x >> .ter?/config.toml",
        "cat ../evil.toml > .t{e,x}rn/config.toml",
        "cat evil > ~/.TER[N]/config.toml",
        "cat evil > .{s..u}ern/config.toml",
    ] {
        let a = analyze(line, &ws());
        assert_eq!(a.protected_writes.len(), 1, "{line}: {a:?}");
    }
    for line in [
        "ls *.rs",
        "cat src/*",
        "grep -n foo *",
        "cp a.txt b.{txt,bak}",
        "echo '.ter?' \".t*\" \\.ter\\?",
        "[ -f x ] && echo y",
        "git log HEAD@{1}",
    ] {
        let a = analyze(line, &ws());
        assert!(
            a.risks.is_empty() && a.protected_writes.is_empty(),
            "{line}: {a:?}"
        );
    }
}

/// A skill's script in `$TERN_HOME/skills` or `.tern/skills` may be an interpreter's script
/// operand; anything else naming those folders (a write, another argument, a symlink out of
/// them, a missing file) still counts as naming a protected location.
#[test]
fn an_interpreter_may_run_a_skills_script_from_a_protected_skills_folder() {
    let dir = tempfile::tempdir().unwrap();
    let tern_home = dir.path().join("home/.tern");
    let project = dir.path().join("p");
    let script = tern_home.join("skills/report/scripts/run.sh");
    let project_script = project.join(".tern/skills/lint/lint.py");
    for f in [&script, &project_script] {
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, "echo hi\n").unwrap();
    }
    std::fs::write(tern_home.join("config.toml"), "").unwrap();
    std::os::unix::fs::symlink(
        tern_home.join("config.toml"),
        tern_home.join("skills/report/scripts/config-link"),
    )
    .unwrap();
    let ws = PathScope {
        cwd: project.clone(),
        roots: vec![project.clone()],
        home: None,
        tern_home: tern_home.clone(),
    };
    let s = script.display();
    for ok in [
        format!("bash {s} data.csv"),
        format!("/usr/bin/sh {s}"),
        "python3 .tern/skills/lint/lint.py src".to_string(),
    ] {
        let a = analyze(&ok, &ws);
        assert!(a.risks.is_empty(), "{ok}: {:?}", a.risks);
    }
    let home = tern_home.display();
    for risky in [
        format!("cp evil {s}"),
        format!("bash -x {s}"),
        format!("bash {s} {s}"),
        format!("bash {home}/config.toml"),
        format!("bash {home}/skills/report/scripts/config-link"),
        format!("bash {home}/skills/report/scripts/missing.sh"),
        format!("cat {s}"),
    ] {
        let a = analyze(&risky, &ws);
        assert!(!a.risks.is_empty(), "{risky} is let through");
    }
}
