//! tern's built-in servers under another agent (issue 23 item 1): every tool of tern-fs,
//! tern-shell, tern-web and `tern serve agent`, called by Claude Code (`claude.rs`) and by
//! Codex (`codex.rs`), each driven against the repo's mock model server with no network but
//! loopback. Each client runs one session in which its scripted model calls every tool once
//! (these peers take a while to start), and the test reads, in the last request the client sent
//! the model, what the model was given for each call.
//!
//! Both clients show the model only `JSON.stringify(structuredContent)` when a result has it
//! (anthropics/claude-code#54450; Codex measured, `notes/wave3/peers-codex-tasks.md`): before
//! issue 23 every `read_file` reached the model as metadata without the file's text. So each
//! step's expectations below are the data the real tool produced (file text, diff, byte counts,
//! directory entries, the fetched page, the sub-agent's answer), each as the text says it or as
//! the structured result does: they hold whichever of the two the client passed on.
//!
//! The fixture is shared: the same files, the same calls and the same expectations for both
//! clients; only how a client names a tool and hands back its result differs.

mod claude;
mod codex;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tern_e2e::bin;
use tern_e2e::run_env::{CANARY, RunEnv};

/// What the sub-agent behind `tern serve agent`'s `run` answers (its own mock model).
const KOALA: &str = "The koala sleeps in notes.txt.";
/// The body of the file `write_file` creates: 18 bytes.
const MADE: &str = "kookaburra laughs\n";

/// One tool call of the session and what its result must carry.
pub struct Step {
    /// The MCP server's name in the client's configuration (`fs`, `shell`, `web`, `agent`).
    pub server: &'static str,
    pub tool: &'static str,
    pub args: Value,
    pub expect: Expect,
}

/// One MCP server as a stdio command, for a client's configuration.
pub struct Server {
    pub name: &'static str,
    pub command: PathBuf,
    pub args: Vec<String>,
    /// Set on top of what the client passes on of its own environment.
    pub env: Vec<(String, String)>,
}

pub enum Expect {
    /// Every one of these, each given as its alternatives: how the tool's text says it, and how
    /// its `structuredContent` does (the clients pass on one or the other).
    Carries(&'static [&'static [&'static str]]),
    /// tern-fs's image block (`read_file` of a PNG): each client treats it its own way.
    Image,
}

/// The scratch project, a local web page for tern-web, and the sub-agent's own mock model
/// and `$TERN_HOME` for `tern serve agent`.
pub struct Workspace {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub page_url: String,
    /// Request lines the page server received.
    page_hits: Arc<Mutex<Vec<String>>>,
    /// The sub-agent's model and `$TERN_HOME` (fs and shell on, web and lsp off).
    pub agent: RunEnv,
}

impl Workspace {
    pub async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(
            root.join("notes.txt"),
            "the quokka line\nsecond: wombat-42\n",
        )
        .unwrap();
        std::fs::write(root.join("shot.png"), super::images::png()).unwrap();
        let (page_url, page_hits) = serve_page();
        let agent = RunEnv::new().await;
        agent.answer(KOALA);
        Workspace {
            _dir: dir,
            root,
            page_url,
            page_hits,
            agent,
        }
    }

    /// Every tool of the four servers, at least once, in the order the model calls them.
    pub fn steps(&self) -> Vec<Step> {
        let step = |server, tool, args, expect| Step {
            server,
            tool,
            args,
            expect,
        };
        vec![
            // read_file: the file's lines themselves, not only metadata about them.
            step(
                "fs",
                "read_file",
                json!({"path": "notes.txt"}),
                Expect::Carries(&[&["the quokka line"], &["second: wombat-42"]]),
            ),
            step(
                "fs",
                "read_file",
                json!({"path": "shot.png"}),
                Expect::Image,
            ),
            // edit_file: the diff, not only the count of replacements.
            step(
                "fs",
                "edit_file",
                json!({"path": "notes.txt", "old_string": "wombat-42", "new_string": "numbat-7"}),
                Expect::Carries(&[&["-second: wombat-42"], &["+second: numbat-7"]]),
            ),
            step(
                "fs",
                "grep",
                json!({"pattern": "numbat", "output_mode": "content"}),
                Expect::Carries(&[&["notes.txt:2:second: numbat-7"]]),
            ),
            // write_file: where and how much (18 bytes), into a directory it creates.
            step(
                "fs",
                "write_file",
                json!({"path": "sub/made.txt", "content": MADE}),
                Expect::Carries(&[
                    &["sub/made.txt"],
                    &["wrote 18 bytes", r#""bytes_written":18"#],
                ]),
            ),
            // list_dir: each entry with its kind, and the PNG's size (70 bytes).
            step(
                "fs",
                "list_dir",
                json!({}),
                Expect::Carries(&[
                    &["notes.txt"],
                    &["shot.png  (70 bytes)", r#""name":"shot.png","size":70"#],
                    &["dir      sub/", r#""type":"dir""#],
                ]),
            ),
            // glob: the matching paths, the new file's included.
            step(
                "fs",
                "glob",
                json!({"pattern": "**/*.txt"}),
                Expect::Carries(&[&["notes.txt"], &["sub/made.txt"]]),
            ),
            // shell run: the output and the exit code.
            step(
                "shell",
                "run",
                json!({"command": "echo platypus-$((6*7)); exit 3"}),
                Expect::Carries(&[&["platypus-42"], &["exit code 3"]]),
            ),
            // web fetch: the page as Markdown (heading and body), from a loopback server
            // (tern-web runs with --allow-private, else its SSRF guard refuses 127.0.0.1).
            step(
                "web",
                "fetch",
                json!({"url": self.page_url}),
                Expect::Carries(&[
                    &["# Platypus page"],
                    &["echidna echidna"],
                    &["(200, text/html", r#""status":200"#],
                ]),
            ),
            // `tern serve agent` run: the sub-agent's own answer, and that it succeeded.
            step(
                "agent",
                "run",
                json!({"goal": "Where does the koala sleep?", "profile": "explore"}),
                Expect::Carries(&[&[KOALA], &["success"]]),
            ),
        ]
    }

    /// The four servers as stdio commands.
    pub fn servers(&self) -> Vec<Server> {
        let root = self.root.to_string_lossy().into_owned();
        let at_root = vec!["--root".to_owned(), root.clone()];
        let server = |name, command, args, env| Server {
            name,
            command,
            args,
            env,
        };
        vec![
            server("fs", bin("tern-fs"), at_root.clone(), vec![]),
            server("shell", bin("tern-shell"), at_root, vec![]),
            server(
                "web",
                bin("tern-web"),
                vec!["--allow-private".into()],
                vec![],
            ),
            server(
                "agent",
                bin("tern"),
                vec!["serve".into(), "agent".into(), "--root".into(), root],
                vec![
                    (
                        "TERN_HOME".into(),
                        self.agent.home.path().to_string_lossy().into_owned(),
                    ),
                    ("ANTHROPIC_API_KEY".into(), CANARY.into()),
                    ("ANTHROPIC_BASE_URL".into(), self.agent.server.url()),
                ],
            ),
        ]
    }

    /// Checks what the model was given for each step (`given[i]` for `steps[i]`, the image
    /// step excluded: the caller checks it its own way) and that the tools really ran.
    pub fn assert_given(&self, client: &str, steps: &[Step], given: &[String]) {
        assert_eq!(
            given.len(),
            steps.len(),
            "{client}: one result per call: {given:#?}"
        );
        for (step, said) in steps.iter().zip(given) {
            let Expect::Carries(wanted) = step.expect else {
                continue;
            };
            for any in wanted {
                assert!(
                    any.iter().any(|w| said.contains(w)),
                    "{client}: {}.{} reached the model without any of {any:?}: {said}",
                    step.server,
                    step.tool
                );
            }
        }
        // The effects, so no step can pass on a result that was made up.
        assert_eq!(
            std::fs::read_to_string(self.root.join("notes.txt")).unwrap(),
            "the quokka line\nsecond: numbat-7\n"
        );
        assert_eq!(
            std::fs::read_to_string(self.root.join("sub/made.txt")).unwrap(),
            MADE
        );
        let hits = self.page_hits.lock().unwrap().clone();
        assert_eq!(hits, ["GET /page HTTP/1.1"], "{client}: page requests");
        let asked = self.agent.server.model_requests();
        assert_eq!(asked.len(), 1, "{client}: the sub-agent's model calls");
        assert!(
            String::from_utf8_lossy(&asked[0].body).contains("Where does the koala sleep?"),
            "{client}: the sub-agent was not given the goal"
        );
    }
}

/// A one-page web server on loopback: `GET /page` is an HTML page whose text only tern-web's
/// fetch and conversion could have produced in Markdown. Returns its URL and the request lines.
fn serve_page() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(Mutex::new(Vec::new()));
    let seen = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]);
            let line = request.lines().next().unwrap_or_default().to_owned();
            seen.lock().unwrap().push(line);
            let body = format!(
                "<html><body><h1>Platypus page</h1><p>{}</p></body></html>",
                "echidna ".repeat(12)
            );
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \
                 {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (format!("http://127.0.0.1:{port}/page"), hits)
}

/// `path` as a TOML or JSON string literal.
pub fn quoted(path: &Path) -> String {
    Value::String(path.to_string_lossy().into_owned()).to_string()
}
