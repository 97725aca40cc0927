//! Python through pyright: the type error an edit introduces, definition, hover, references,
//! symbols, confinement — what the model would ask after writing code.

use serde_json::json;

use super::Lsp;

const APP: &str = "\
def add(a: int, b: int) -> int:
    \"\"\"Adds two numbers.\"\"\"
    return a + b


total: int = add(1, 2)
";

#[tokio::test]
async fn a_type_error_is_reported_with_its_position_severity_and_source() {
    let lsp = Lsp::python(&[("app.py", &format!("{APP}name: str = add(1, 2)\n"))], &[]).await;
    let (text, s) = lsp
        .ok("diagnostics", json!({"path": "app.py", "wait_ms": 30000}))
        .await;
    assert_eq!(s["settled"], true, "{text}");
    assert_eq!(s["language"], "python");
    assert_eq!(s["counts"]["error"], 1, "{text}");
    let d = &s["diagnostics"][0];
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(7), Some(13)),
        "{d}"
    );
    assert_eq!(d["severity"], "error");
    assert_eq!(d["source"], "Pyright");
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("\"int\"") && message.contains("\"str\""),
        "{message}"
    );
    assert!(
        text.contains("app.py:7:13: error: ") && text.contains("(Pyright)"),
        "{text}"
    );
    lsp.stop().await;
}

#[tokio::test]
async fn after_an_edit_only_the_errors_it_introduced_are_new() {
    // A file with a problem of its own from the start.
    let lsp = Lsp::python(&[("app.py", &format!("{APP}old: str = 1\n"))], &[]).await;
    let args = json!({"path": "app.py", "severity": "error", "new_only": true, "wait_ms": 30000});
    let (_, first) = lsp.ok("diagnostics", args.clone()).await;
    assert_eq!(
        first["counts"]["error"], 1,
        "the first call reports everything: {first}"
    );

    // The edit a model makes: a call with the wrong type.
    lsp.put(
        "app.py",
        &format!("{APP}old: str = 1\nbroken: int = add(\"1\", 2)\n"),
    );
    let (text, after) = lsp.ok("diagnostics", args.clone()).await;
    let new = after["diagnostics"].as_array().unwrap();
    assert_eq!(new.len(), 1, "{text}");
    assert_eq!(new[0]["line"], 8, "{text}");
    assert!(
        new[0]["message"]
            .as_str()
            .unwrap()
            .contains("\"Literal['1']\""),
        "{text}"
    );
    assert!(text.contains("new errors"), "{text}");

    // Nothing changed: nothing new (and answered from what the server already said).
    let started = std::time::Instant::now();
    let (text, again) = lsp.ok("diagnostics", args).await;
    assert_eq!(again["diagnostics"], json!([]), "{text}");
    assert!(text.contains("no new errors"), "{text}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));

    // The fix clears it.
    lsp.put("app.py", APP);
    let (_, fixed) = lsp
        .ok("diagnostics", json!({"path": "app.py", "wait_ms": 30000}))
        .await;
    assert_eq!(fixed["diagnostics"], json!([]), "{fixed}");
    lsp.stop().await;
}

#[tokio::test]
async fn definition_hover_references_and_symbols_answer_about_real_code() {
    let lsp = Lsp::python(
        &[
            ("app.py", APP),
            ("pkg/use.py", "from app import add\n\nprint(add(2, 3))\n"),
        ],
        &[],
    )
    .await;
    let (text, s) = lsp
        .ok(
            "definition",
            json!({"path": "pkg/use.py", "line": 3, "symbol": "add"}),
        )
        .await;
    assert_eq!(s["locations"][0]["path"], "app.py", "{text}");
    assert_eq!(s["locations"][0]["line"], 1, "{text}");
    assert!(
        text.contains("app.py:1:5: def add(a: int, b: int) -> int:"),
        "{text}"
    );

    let (hover, _) = lsp
        .ok(
            "hover",
            json!({"path": "app.py", "line": 6, "symbol": "add"}),
        )
        .await;
    // Pyright's hover: the signature in a code block (one parameter per line), then the
    // docstring.
    for part in ["(function) def add(", "a: int", "b: int", ") -> int"] {
        assert!(hover.contains(part), "{part}: {hover}");
    }
    assert!(hover.contains("Adds two numbers."), "{hover}");

    let (refs, s) = lsp
        .ok(
            "references",
            json!({"path": "app.py", "line": 1, "column": 5}),
        )
        .await;
    let paths: Vec<_> = s["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["path"].as_str().unwrap().to_string(),
                l["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(paths.contains(&("app.py".into(), 1)), "{refs}");
    assert!(paths.contains(&("app.py".into(), 6)), "{refs}");

    let (outline, s) = lsp.ok("symbols", json!({"path": "app.py"})).await;
    assert!(outline.contains("function add (line 1-3)"), "{outline}");
    assert!(
        outline.contains("\n  variable a (line 1)"),
        "nested under add: {outline}"
    );
    assert!(outline.contains("\nvariable total (line 6)"), "{outline}");
    assert_eq!(s["total"], 4, "{outline}");
    assert_eq!(s["symbols"][1]["depth"], 1, "{s}");

    let (found, _) = lsp
        .ok("symbols", json!({"query": "add", "language": "python"}))
        .await;
    assert!(
        found.contains("function add") && found.contains("app.py:1"),
        "{found}"
    );

    // Bad positions are the caller's to fix, and say how.
    let (text, _) = lsp
        .err(
            "hover",
            json!({"path": "app.py", "line": 6, "symbol": "nope"}),
        )
        .await;
    assert!(text.contains("`nope` does not occur on line 6"), "{text}");
    let (text, _) = lsp
        .err(
            "definition",
            json!({"path": "app.py", "line": 99, "column": 1}),
        )
        .await;
    assert!(text.contains("past the end"), "{text}");
    lsp.stop().await;
}

#[tokio::test]
async fn files_outside_the_root_and_files_no_server_handles_are_refused_clearly() {
    let lsp = Lsp::python(&[("app.py", APP), ("README.md", "# hi\n")], &[]).await;
    let outside = lsp.root.parent().unwrap().join("secret.py");
    std::fs::write(&outside, "x: int = 'no'\n").unwrap();
    let (text, s) = lsp
        .err("diagnostics", json!({"path": outside.to_str().unwrap()}))
        .await;
    assert!(text.contains("outside"), "{text}");
    assert_eq!(s["error"], "unreadable");
    let (text, _) = lsp
        .err("diagnostics", json!({"path": "../secret.py"}))
        .await;
    assert!(text.contains("outside"), "{text}");

    let (text, s) = lsp.err("diagnostics", json!({"path": "README.md"})).await;
    assert_eq!(s["error"], "no_server", "{s}");
    assert!(text.contains("no language server handles"), "{text}");
    lsp.stop().await;
}

#[tokio::test]
async fn the_language_server_ends_with_the_mcp_session() {
    let lsp = Lsp::python(&[("app.py", APP)], &[]).await;
    lsp.ok("diagnostics", json!({"path": "app.py", "wait_ms": 30000}))
        .await;
    let root = lsp.root.clone();
    let langserver = super::npm_bin().join("pyright-langserver");
    let real = std::fs::canonicalize(&langserver).unwrap();
    let mine = || {
        super::processes_mentioning(&real)
            .into_iter()
            .chain(super::processes_mentioning(&langserver))
            .filter(|c| c.contains("--stdio"))
            .count()
    };
    assert!(
        mine() >= 1,
        "pyright should be running for {}",
        root.display()
    );
    let before = mine();
    lsp.stop().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while mine() >= before && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(mine() < before, "pyright outlived the server");
}
