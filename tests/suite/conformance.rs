//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `.ci/install-test-deps`) with tern as the client, for both requirement sets.
//!
//! The suite runs every scenario of a revision in parallel, each against its own scenario
//! server, with `tern-conformance-client` as the client command (which drives the real `tern`
//! binary — `tern mcp login` for the authorization scenarios; see
//! `tests/src/bin/tern-conformance-client.rs`). Its summary is the verdict: every scored
//! scenario must pass, and its exit code must say so too. The scenarios it runs without scoring
//! fail exactly when `tests/conformance/expected-failures.yaml` lists them (extensions tern
//! does not implement, each with its reason; the file is the suite's `--expected-failures`
//! format, for runs outside a requirement set). The run is given no such file: with one, the
//! suite leaves the unscored scenarios out of its summary.

use std::{collections::BTreeMap, path::PathBuf, process::Command, time::Instant};

use tern_e2e::{bin, dep, workspace_root};

/// Scored scenarios per requirement set (the suite's frozen lists): a different count means the
/// suite changed or did not run everything.
const SCORED: [(&str, usize); 2] = [("2025-11-25", 18), ("2026-07-28", 32)];

/// One revision's run: scenario → passed, for scored and unscored scenarios.
struct Verdicts {
    scored: BTreeMap<String, bool>,
    unscored: BTreeMap<String, bool>,
    /// The suite's exit code (0: every scored scenario passed, failures as expected).
    exit: Option<i32>,
}

/// The extension scenarios tern is expected to fail, from the file the suite is given.
fn expected_failures() -> Vec<String> {
    let path = workspace_root().join("tests/conformance/expected-failures.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| {
            let (name, reason) = l.split_once('#').expect("each entry says why, after a #");
            assert!(!reason.trim().is_empty(), "{l}");
            name.trim().to_string()
        })
        .collect()
}

/// One requirement set at a time: each runs every scenario at once, and both together (with a
/// debug build on two cores) slow servers past the run's wait for them.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_suite(revision: &str) -> Verdicts {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let bin_dir: PathBuf = dep("conformance/node_modules/.bin");
    let suite = bin_dir.join("conformance");
    assert!(
        bin_dir.join("node").exists(),
        "Node 22 missing from .deps/conformance: run `.ci/install-test-deps`"
    );
    let out_dir = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = Instant::now();
    let out = Command::new(&suite)
        .args(["client", "--command"])
        .arg(bin("tern-conformance-client"))
        // Per scenario; generous, since the whole suite runs at once next to other tests.
        .args(["--timeout", "90000"])
        .args(["--requirements", revision, "-o"])
        .arg(out_dir.path())
        .env("PATH", path)
        .env("TERN_BIN", bin("tern"))
        .env_remove("TERN_LOG")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!(
        "conformance client --requirements {revision}: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut verdicts = parse(&log);
    verdicts.exit = out.status.code();
    assert!(
        !verdicts.scored.is_empty(),
        "no summary from the suite:\n{log}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    verdicts
}

/// Reads the suite's `=== SUITE SUMMARY ===` (`✓ name: …` / `✗ name: …`) and its
/// `Not scored …` list.
fn parse(log: &str) -> Verdicts {
    let (_, summary) = log.split_once("=== SUITE SUMMARY ===").unwrap_or(("", ""));
    let (results, not_scored) = summary.split_once("Not scored").unwrap_or((summary, ""));
    let verdict = |line: &str| -> Option<(String, bool)> {
        let line = line.trim();
        let (mark, rest) = line.split_at_checked(line.char_indices().nth(1)?.0)?;
        let passed = match mark {
            "✓" => true,
            "✗" => false,
            _ => return None,
        };
        let name = rest.trim().split([':', ' ']).next()?.to_string();
        Some((name, passed))
    };
    let unscored: BTreeMap<String, bool> = not_scored.lines().filter_map(verdict).collect();
    let scored = results
        .lines()
        .filter_map(verdict)
        .filter(|(name, _)| !unscored.contains_key(name))
        .collect();
    Verdicts {
        scored,
        unscored,
        exit: None,
    }
}

fn check(revision: &str) {
    let expected = SCORED
        .iter()
        .find(|(r, _)| *r == revision)
        .map(|(_, n)| *n)
        .unwrap();
    let v = run_suite(revision);
    let passed = v.scored.values().filter(|p| **p).count();
    eprintln!(
        "{revision}: {passed}/{} scored scenarios pass; not scored: {:?}",
        v.scored.len(),
        v.unscored
    );
    assert_eq!(v.scored.len(), expected, "{:?}", v.scored);
    let failing: Vec<&String> = v
        .scored
        .iter()
        .filter(|(_, passed)| !**passed)
        .map(|(name, _)| name)
        .collect();
    assert!(failing.is_empty(), "{revision}: failing {failing:?}");
    assert_eq!(v.exit, Some(0), "{revision}: the suite's own verdict");
    // Every authorization scenario of the revision is scored (and so passed above).
    let auth = v.scored.keys().filter(|n| n.starts_with("auth/")).count();
    assert!(
        auth >= 14,
        "{revision}: only {auth} authorization scenarios scored"
    );
    // What is not scored fails exactly when listed, with its reason.
    let listed = expected_failures();
    let failing_unscored: Vec<&String> = v
        .unscored
        .iter()
        .filter(|(_, passed)| !**passed)
        .map(|(name, _)| name)
        .collect();
    let unlisted: Vec<_> = failing_unscored
        .iter()
        .filter(|n| !listed.contains(n))
        .collect();
    assert!(
        unlisted.is_empty(),
        "{revision}: failing, not listed: {unlisted:?}"
    );
    let stale: Vec<_> = listed
        .iter()
        .filter(|n| v.unscored.get(*n) == Some(&true))
        .collect();
    assert!(
        stale.is_empty(),
        "{revision}: listed as failing, but pass: {stale:?}"
    );
    // Schemas reach the model intact (issue 11, item 6): scored or not, these must pass.
    assert_eq!(
        v.unscored.get("json-schema-2020-12-preservation"),
        Some(&true),
        "{:?}",
        v.unscored
    );
}

#[test]
fn the_2025_11_25_requirements_pass() {
    check("2025-11-25");
}

#[test]
fn the_2026_07_28_requirements_pass() {
    check("2026-07-28");
}

#[test]
fn the_summary_parser_reads_the_suites_marks() {
    let log = "noise\n=== SUITE SUMMARY ===\n\n✓ initialize: 2 passed, 0 failed\n\
               ✗ auth/metadata-default: 0 passed, 7 failed\n✓ json-schema-2020-12-preservation: 9 passed\n\n\
               Total: 11 passed\n\nNot scored for 2025-11-25: 1 scenario(s) run\n  \
               ✓ json-schema-2020-12-preservation (added-after-release)\n";
    let v = parse(log);
    assert_eq!(v.scored.len(), 2);
    assert!(v.scored["initialize"]);
    assert!(!v.scored["auth/metadata-default"]);
    assert!(v.unscored["json-schema-2020-12-preservation"]);
}
