//! The corpus both routes answer: request lines covering every branch of `read_file` and
//! `list_dir` (and lines the fast path must leave to rmcp), over a root made for it.

use std::path::Path;

use serde_json::{Value, json};

/// Which route must answer a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Route {
    Fast,
    Rmcp,
}

/// One line of the corpus: what to send, whether a reply comes, and who must answer.
pub(super) struct Line {
    pub(super) text: String,
    /// `Some` for requests (their reply is awaited), `None` for notifications and junk.
    pub(super) reply: Option<Route>,
}

pub(super) fn call(id: Value, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

pub(super) fn call_meta(id: Value, tool: &str, arguments: Value, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments, "_meta": meta}})
}

pub(super) fn push(corpus: &mut Vec<Line>, message: Value, reply: Option<Route>) {
    corpus.push(Line {
        text: message.to_string(),
        reply,
    });
}

/// Files that exercise every branch of read_file and list_dir.
pub(super) fn make_root(root: &Path, outside: &Path) {
    let put = |rel: &str, data: &[u8]| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    };
    put(
        "small.txt",
        b"one\ntwo with \"quotes\" and \\backslashes\\\nthree\t\ttabs\n",
    );
    put(
        "unicode.txt",
        "h\u{e9}llo w\u{f6}rld \u{1f600}\n\u{4e2d}\u{6587} \u{2028} \u{fffd}\r\ncrlf line\r\n"
            .as_bytes(),
    );
    put(
        "control.txt",
        b"bell \x07 esc \x1b[31m red \x1b[0m del \x7f unit \x1f vt \x0b ff \x0c bs \x08\n",
    );
    put("latin1.txt", b"caf\xe9 is not UTF-8\n");
    put("nul.bin", b"abc\0def");
    put("empty.txt", b"");
    put("no-newline.txt", b"last line without newline");
    let big: String = (1..=3000)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    put("big.txt", big.as_bytes());
    put(
        "long-line.txt",
        format!("{}\nnext\n", "x".repeat(20_000)).as_bytes(),
    );
    put("secret.txt", b"hidden\n");
    // A 1x1 PNG: read_file answers with an image block, which the fast path sends as rmcp would.
    put(
        "pixel.png",
        &[
            0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, b'I', b'H', b'D', b'R',
            0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0a, b'I',
            b'D', b'A', b'T', 0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0,
            0, 0, b'I', b'E', b'N', b'D', 0xae, 0x42, 0x60, 0x82,
        ],
    );
    // write_file in the corpus rewrites it with the same text: both servers see "replaced".
    put("written.txt", b"new\n");
    put("dir/a.txt", b"a\n");
    put("dir/b.rs", b"fn main() {}\n");
    put("dir/sub/c.txt", b"c\n");
    put("dir/\u{e9}t\u{e9} \"quoted\".txt", b"x\n");
    std::os::unix::fs::symlink("a.txt", root.join("dir/link")).unwrap();
    std::os::unix::fs::symlink(outside, root.join("escape")).unwrap();
    std::fs::write(outside.join("outside.txt"), b"outside\n").unwrap();
    std::fs::hard_link(root.join("secret.txt"), root.join("dir/hardlink")).unwrap();
}

pub(super) fn corpus(root: &Path, outside: &Path) -> Vec<Line> {
    use Route::{Fast, Rmcp};
    let mut c = Vec::new();
    let abs = |rel: &str| root.join(rel).to_string_lossy().into_owned();
    // read_file: every outcome, numeric ids.
    let reads = [
        json!({"path": "small.txt"}),
        json!({"path": abs("small.txt")}),
        json!({"path": "unicode.txt"}),
        json!({"path": "control.txt"}),
        json!({"path": "latin1.txt"}),
        json!({"path": "nul.bin"}),
        json!({"path": "empty.txt"}),
        json!({"path": "no-newline.txt"}),
        json!({"path": "big.txt", "offset": 100, "limit": 5}),
        json!({"path": "big.txt", "offset": 2999}),
        json!({"path": "big.txt", "offset": 4000}),
        json!({"path": "big.txt", "limit": 0}),
        json!({"path": "big.txt"}),
        json!({"path": "long-line.txt"}),
        json!({"path": "missing.txt"}),
        json!({"path": "dir"}),
        json!({"path": "../outside.txt"}),
        json!({"path": "escape/outside.txt"}),
        json!({"path": outside.join("outside.txt")}),
        json!({"path": "dir/link"}),
        json!({"path": ""}),
        json!({"path": "small.txt\u{0}x"}),
        json!({"path": "dir/\u{e9}t\u{e9} \"quoted\".txt"}),
        json!({"path": "small.txt", "unknown_argument": true}),
        json!({"path": "small.txt", "offset": null, "limit": null}),
        json!({"path": "pixel.png"}),
    ];
    for (i, args) in reads.into_iter().enumerate() {
        push(&mut c, call(json!(100 + i), "read_file", args), Some(Fast));
    }
    // Ids: strings (escapes, unicode, empty), negative, large, and the float form rmcp
    // reads as an integer.
    for (i, id) in [
        json!("abc"),
        json!(""),
        json!("with \"quote\", \\ and \u{e9}\u{1f600} \u{1}"),
        json!(-5),
        json!(0),
        json!(i64::MAX),
    ]
    .into_iter()
    .enumerate()
    {
        let tool = if i % 2 == 0 { "read_file" } else { "list_dir" };
        let args = if tool == "read_file" {
            json!({"path": "small.txt"})
        } else {
            json!({"path": "dir"})
        };
        push(&mut c, call(id, tool, args), Some(Fast));
    }
    c.push(Line {
        text: r#"{"jsonrpc":"2.0","id":7.0,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"small.txt"}}}"#.into(),
        reply: Some(Fast),
    });
    // The host's `_meta`: output caps (paging), deny rules, malformed values, a progress token.
    let metas = [
        (
            json!({"tern/limits": {"max_output_chars": 3000}}),
            "big.txt",
            Fast,
        ),
        (
            json!({"tern/limits": {"max_output_chars": 1000}}),
            "long-line.txt",
            Fast,
        ),
        (
            json!({"tern/limits": {"max_output_chars": 10}}),
            "small.txt",
            Fast,
        ),
        (json!({"tern/limits": "lots"}), "small.txt", Fast),
        (json!({"tern/limits": {}}), "small.txt", Fast),
        (
            json!({"tern/deny_paths": ["**/secret*"]}),
            "secret.txt",
            Fast,
        ),
        (
            json!({"tern/deny_paths": ["**/secret*"]}),
            "dir/hardlink",
            Fast,
        ),
        (
            json!({"tern/deny_paths": ["**/secret*"]}),
            "small.txt",
            Fast,
        ),
        (json!({"tern/deny_paths": 5}), "small.txt", Fast),
        (json!({"progressToken": "p1"}), "small.txt", Fast),
        (
            json!({"progressToken": 9, "tern/limits": {"max_output_chars": 500}}),
            "big.txt",
            Fast,
        ),
        // Keys other clients add (trace context, their own ids) change nothing.
        (
            json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}),
            "small.txt",
            Fast,
        ),
        (
            json!({"claudecode/toolUseId": "toolu_01", "tern/limits": {"max_output_chars": 2000}}),
            "big.txt",
            Fast,
        ),
        // Protocol-level keys are rmcp's to check.
        (
            json!({"io.modelcontextprotocol/protocolVersion": "2025-06-18"}),
            "small.txt",
            Rmcp,
        ),
        (
            json!({"io.modelcontextprotocol/logLevel": "debug"}),
            "small.txt",
            Rmcp,
        ),
        (
            json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01"}),
            "small.txt",
            Rmcp,
        ),
    ];
    for (i, (meta, path, route)) in metas.into_iter().enumerate() {
        push(
            &mut c,
            call_meta(json!(200 + i), "read_file", json!({"path": path}), meta),
            Some(route),
        );
    }
    // list_dir.
    let lists = [
        json!({}),
        json!({"path": null}),
        json!({"path": "."}),
        json!({"path": "dir"}),
        json!({"path": "dir/sub"}),
        json!({"path": "small.txt"}),
        json!({"path": "missing"}),
        json!({"path": ".."}),
        json!({"path": "escape"}),
    ];
    for (i, args) in lists.into_iter().enumerate() {
        push(&mut c, call(json!(300 + i), "list_dir", args), Some(Fast));
    }
    push(
        &mut c,
        call_meta(
            json!(320),
            "list_dir",
            json!({"path": "dir"}),
            json!({"tern/deny_paths": ["**/*.rs"]}),
        ),
        Some(Fast),
    );
    // Not for the fast path: other tools, bad arguments, unknown tools, odd envelopes.
    let others = [
        call(json!(400), "grep", json!({"pattern": "fox", "path": "."})),
        call(json!(401), "glob", json!({"pattern": "**/*.txt"})),
        call(json!(402), "read_file", json!({"path": 5})),
        call(json!(403), "read_file", json!({})),
        call(
            json!(404),
            "read_file",
            json!({"path": "small.txt", "offset": -1}),
        ),
        call(
            json!(405),
            "read_file",
            json!({"path": "small.txt", "offset": 1.5}),
        ),
        call(json!(406), "nope", json!({})),
        call(json!(407), "list_dir", json!({"path": ["dir"]})),
        json!({"jsonrpc": "2.0", "id": 408, "method": "tools/call",
               "params": {"name": "read_file"}}),
        json!({"jsonrpc": "2.0", "id": 409, "method": "tools/call",
               "params": {"name": "read_file", "arguments": null}}),
        json!({"jsonrpc": "2.0", "id": 410, "method": "tools/call", "extra": 1,
               "params": {"name": "read_file", "arguments": {"path": "small.txt"}}}),
        json!({"jsonrpc": "2.0", "id": 411, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 412, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 413, "method": "tools/call",
               "params": {"name": "write_file",
                          "arguments": {"path": "written.txt", "content": "new\n"}}}),
        json!({"jsonrpc": "2.0", "id": true, "method": "tools/call",
               "params": {"name": "read_file", "arguments": {"path": "small.txt"}}}),
    ];
    for message in others {
        push(&mut c, message, Some(Rmcp));
    }
    // Lines rmcp must see as they were written: an escaped method name, duplicate envelope
    // keys, duplicate argument keys (the last one wins, as in rmcp), CRLF, a BOM.
    let raw = [
        (
            r#"{"jsonrpc":"2.0","id":500,"method":"tools\/call","params":{"name":"read_file","arguments":{"path":"small.txt"}}}"#,
            Rmcp,
        ),
        (
            r#"{"jsonrpc":"2.0","id":501,"id":502,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"small.txt"}}}"#,
            Rmcp,
        ),
        (
            r#"{"jsonrpc":"2.0","id":503,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"nope","path":"small.txt"}}}"#,
            Fast,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":504,\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\",\"arguments\":{\"path\":\"small.txt\"}}}\r",
            Fast,
        ),
        (
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":505,\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\",\"arguments\":{\"path\":\"small.txt\"}}}",
            Rmcp,
        ),
        (
            r#"  {"params":{"arguments":{"path":"small.txt"},"name":"read_file"},"method":"tools/call","id":506,"jsonrpc":"2.0"}  "#,
            Fast,
        ),
        (
            r#"{"jsonrpc":"2.0","id":507,"method":"tools/call","params":{"name":"read_\u0066ile","arguments":{"path":"small.txt"}}}"#,
            Rmcp,
        ),
        (
            r#"{"jsonrpc":"1.0","id":508,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"small.txt"}}}"#,
            Rmcp,
        ),
    ];
    for (text, route) in raw {
        c.push(Line {
            text: text.into(),
            reply: Some(route),
        });
    }
    c
}
