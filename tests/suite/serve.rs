//! `tern serve NAME` and the standalone binaries start and answer `--help` alike.
use std::process::Command;

#[test]
fn tern_serve_help_lists_every_builtin_server() {
    let out = Command::new(tern_e2e::bin("tern"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in ["fs", "shell", "web", "lsp"] {
        assert!(
            text.contains(name),
            "`tern serve --help` misses {name}: {text}"
        );
    }
}
