//! Issue F6: programs named in a repository's git config must not run when a
//! command like `git status` or `git diff` runs through tern-shell.

use serde_json::json;

use super::support::{start, text};

/// A repository whose `.git/config` names a marker-writing script for every
/// key that git runs a program from on `status`, `diff`, `commit`.
fn booby_trapped_repo(root: &std::path::Path, markers: &std::path::Path) {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .expect("git is installed");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q", "."]);
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    git(&["add", "a.txt"]);
    git(&[
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-qm",
        "init",
    ]);
    let script = markers.join("mark.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch {}/MARK-$1\nexit 0\n", markers.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = script.display();
    for (key, value) in [
        ("core.fsmonitor", format!("{s} fsmonitor")),
        ("diff.external", format!("{s} external")),
        ("core.pager", format!("{s} pager")),
        (
            "core.hooksPath",
            markers.join("hooks").display().to_string(),
        ),
        ("credential.helper", format!("!{s} credential")),
    ] {
        git(&["config", key, &value]);
    }
    std::fs::create_dir_all(markers.join("hooks")).unwrap();
    let hook = markers.join("hooks/pre-commit");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ntouch {}/MARK-hook\n", markers.display()),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.join("a.txt"), "two\n").unwrap();
}

#[tokio::test]
async fn repository_config_programs_do_not_run() {
    // `--git-writes`: the commit below writes objects, refs and the index.
    for mode in [&["--git-writes"][..], &["--sandbox", "full-access"][..]] {
        let s = start(mode, &[]).await;
        let markers = s.dir.path().canonicalize().unwrap().join("tmp");
        booby_trapped_repo(&s.root, &markers);
        // Sanity: the trap is real — plain git outside tern-shell fires it.
        let out = std::process::Command::new("git")
            .args(["status", "--short"])
            .current_dir(&s.root)
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(
            markers.join("MARK-fsmonitor").exists(),
            "the trap did not fire outside"
        );
        std::fs::remove_file(markers.join("MARK-fsmonitor")).unwrap();

        let r = s
            .run(json!({"command": "git status --short; git diff; git diff --no-ext-diff; \
                 git -c user.email=t@t -c user.name=t commit -qam two; echo commit=$?; git log --oneline | wc -l"}))
            .await;
        let t = text(&r);
        let fired: Vec<String> = std::fs::read_dir(&markers)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("MARK-"))
            .collect();
        assert!(
            fired.is_empty(),
            "{mode:?}: config programs ran: {fired:?}\n{t}"
        );
        assert!(t.contains(" M a.txt"), "{t}");
        assert!(t.contains("diff.external is disabled"), "{t}");
        assert!(t.contains("+two"), "--no-ext-diff gives the diff: {t}");
        assert!(t.contains("commit=0") && t.contains("2\n"), "{t}");
    }
}
