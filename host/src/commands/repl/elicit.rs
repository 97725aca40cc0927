//! The REPL's elicitor: a server's request for input, asked at the terminal while the turn
//! waits — a form field by field (each answer checked as it is typed: type, bounds, format,
//! options; Enter takes the default the server declares), or a URL to open.
//!
//! Like the approver it pauses the spinner, and the two share one lock, so only one question is
//! ever on the screen. Everything a server wrote is sanitised before it is shown.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tern_mcp::{
    Browser, ElicitationAnswer, ElicitationKind, ElicitationRequest, Elicitor, FieldKind, FormField,
};

use crate::render::{Screen, sanitize};

/// Asks the person, at the terminal.
pub(super) struct TerminalElicitor {
    screen: Arc<Screen>,
    /// Shared with the approver: one question at a time.
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl TerminalElicitor {
    pub(super) fn new(screen: Arc<Screen>, turn: Arc<tokio::sync::Mutex<()>>) -> Self {
        Self { screen, turn }
    }
}

#[async_trait]
impl Elicitor for TerminalElicitor {
    async fn elicit(&self, request: &ElicitationRequest) -> ElicitationAnswer {
        let _one_at_a_time = self.turn.lock().await;
        let _paused = self.screen.pause();
        let screen = self.screen.clone();
        let request = request.clone();
        let asked = tokio::task::spawn_blocking(move || {
            let mut io = Terminal { screen };
            match &request.kind {
                ElicitationKind::Form {
                    message, fields, ..
                } => ask_form(&request.server, message, fields, &mut io),
                ElicitationKind::Url { message, url } => {
                    ask_url(&request.server, message, url, &mut io)
                }
            }
        })
        .await;
        asked.unwrap_or(ElicitationAnswer::Cancel)
    }
}

/// Where questions go and answers come from (the terminal, or a script in tests).
pub(super) trait Io {
    fn say(&mut self, text: &str);
    /// The next line typed; `None` at end of input.
    fn read(&mut self) -> Option<String>;
    /// Opens `url` in the browser.
    fn open(&mut self, url: &str);
}

struct Terminal {
    screen: Arc<Screen>,
}

impl Io for Terminal {
    fn say(&mut self, text: &str) {
        self.screen.ask(text);
    }

    fn read(&mut self) -> Option<String> {
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    }

    fn open(&mut self, url: &str) {
        // The system browser; nothing to wait for.
        let _ = Browser::System.open(url);
    }
}

/// A form, field by field. `!decline` or `!cancel` at any field ends it so.
pub(super) fn ask_form(
    server: &str,
    message: &str,
    fields: &[FormField],
    io: &mut dyn Io,
) -> ElicitationAnswer {
    io.say(&format!(
        "\n{} asks: {}\n  (Enter takes the [default]; * is required; !decline or !cancel ends the form)\n",
        sanitize(server),
        sanitize(message)
    ));
    let mut content = Map::new();
    for field in fields {
        if let Some(d) = &field.description {
            io.say(&format!("  {}\n", sanitize(d)));
        }
        if let FieldKind::Choice(options) | FieldKind::Choices { options, .. } = &field.kind {
            let listed: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{}) {}", i + 1, sanitize(&c.label)))
                .collect();
            io.say(&format!("    {}\n", listed.join("  ")));
        }
        let default = field
            .default
            .as_ref()
            .map(|d| format!(" [{}]", sanitize(&shown(d, &field.kind))))
            .unwrap_or_default();
        let prompt = format!(
            "  {}{} ({}){default}: ",
            sanitize(field.label()),
            if field.required { "*" } else { "" },
            field.hint()
        );
        loop {
            io.say(&prompt);
            let Some(line) = io.read() else {
                return ElicitationAnswer::Cancel;
            };
            match line.trim() {
                "!decline" => return ElicitationAnswer::Decline,
                "!cancel" => return ElicitationAnswer::Cancel,
                _ => {}
            }
            match field.parse(&line) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                    break;
                }
                Ok(None) => match &field.default {
                    Some(d) => {
                        content.insert(field.name.clone(), d.clone());
                        break;
                    }
                    None if field.required => io.say("    required\n"),
                    None => break,
                },
                Err(why) => io.say(&format!("    {why}\n")),
            }
        }
    }
    loop {
        io.say(&format!(
            "Send this to {}? [y]es / [n]o, decline / [c]ancel: ",
            sanitize(server)
        ));
        match io.read().as_deref().map(str::trim) {
            Some("y" | "Y" | "yes") => return ElicitationAnswer::Accept(content),
            Some("n" | "N" | "no") => return ElicitationAnswer::Decline,
            Some("c" | "C" | "cancel") | None => return ElicitationAnswer::Cancel,
            Some(_) => {}
        }
    }
}

/// A URL to visit: shown with its host, opened on request, then done or not.
pub(super) fn ask_url(
    server: &str,
    message: &str,
    url: &str,
    io: &mut dyn Io,
) -> ElicitationAnswer {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| "an unknown host".to_string());
    io.say(&format!(
        "\n{} asks you to open a page on {}: {}\n  {}\n",
        sanitize(server),
        sanitize(&host),
        sanitize(message),
        sanitize(url)
    ));
    // A scheme tern does not open (`file:`, `vscode:`, …) is shown, never handed to a browser.
    let openable = tern_mcp::may_open(url);
    if let Err(why) = &openable {
        io.say(&format!("  (not offered to open: {why})\n"));
    }
    loop {
        io.say(match openable {
            Ok(()) => "[o]pen it / [y]es, done / [n]o, decline / [c]ancel: ",
            Err(_) => "[y]es, done / [n]o, decline / [c]ancel: ",
        });
        match io.read().as_deref().map(str::trim) {
            Some("o" | "O" | "open") if openable.is_ok() => {
                io.open(url);
                io.say("  opened in the browser\n");
            }
            Some("y" | "Y" | "yes" | "done") => return ElicitationAnswer::Accept(Map::new()),
            Some("n" | "N" | "no") => return ElicitationAnswer::Decline,
            Some("c" | "C" | "cancel") | None => return ElicitationAnswer::Cancel,
            Some(_) => {}
        }
    }
}

/// A default as it is typed: a choice by its label, a list joined, a boolean as yes/no.
fn shown(value: &Value, kind: &FieldKind) -> String {
    let label = |v: &str, options: &[tern_mcp::Choice]| {
        options
            .iter()
            .find(|c| c.value == v)
            .map_or_else(|| v.to_string(), |c| c.label.clone())
    };
    match (value, kind) {
        (Value::String(s), FieldKind::Choice(o)) => label(s, o),
        (Value::Array(items), FieldKind::Choices { options, .. }) => items
            .iter()
            .filter_map(Value::as_str)
            .map(|s| label(s, options))
            .collect::<Vec<_>>()
            .join(", "),
        (Value::Bool(b), _) => if *b { "yes" } else { "no" }.to_string(),
        (Value::String(s), _) => s.clone(),
        (other, _) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Answers from a script; what was said, kept.
    struct Script {
        lines: Vec<&'static str>,
        said: String,
        opened: Vec<String>,
    }

    impl Io for Script {
        fn say(&mut self, text: &str) {
            self.said.push_str(text);
        }
        fn read(&mut self) -> Option<String> {
            (!self.lines.is_empty()).then(|| format!("{}\n", self.lines.remove(0)))
        }
        fn open(&mut self, url: &str) {
            self.opened.push(url.to_string());
        }
    }

    fn script(lines: &[&'static str]) -> Script {
        Script {
            lines: lines.to_vec(),
            said: String::new(),
            opened: Vec::new(),
        }
    }

    fn fields() -> Vec<FormField> {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "Who you are", "default": "Ada"},
            "age": {"type": "integer", "minimum": 0},
            "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}], "default": "g"},
            "note": {"type": "string"}
        }, "required": ["age"]});
        let order = ["name", "age", "color", "note"].map(String::from);
        tern_mcp::form_fields(&schema, Some(&order))
    }

    #[test]
    fn a_form_is_asked_field_by_field_with_defaults_and_retries() {
        let mut io = script(&["", "-3", "", "41", "", "", "y"]);
        let answer = ask_form("srv", "Tell me\x1b[2J", &fields(), &mut io);
        let ElicitationAnswer::Accept(content) = answer else {
            panic!("{answer:?}")
        };
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada", "age": 41, "color": "g"})
        );
        assert!(io.said.contains("srv asks: Tell me^[[2J"), "{}", io.said);
        assert!(io.said.contains("  Who you are\n"), "{}", io.said);
        assert!(io.said.contains("name (text) [Ada]: "), "{}", io.said);
        assert!(io.said.contains("-3 is outside at least 0"), "{}", io.said);
        assert!(io.said.contains("    required\n"), "{}", io.said);
        assert!(io.said.contains("1) Red  2) Green"), "{}", io.said);
        assert!(
            io.said.contains("color (one of 1-2) [Green]: "),
            "{}",
            io.said
        );
    }

    #[test]
    fn a_form_can_be_declined_or_cancelled_anywhere() {
        let mut io = script(&["Bo", "!decline"]);
        assert_eq!(
            ask_form("srv", "m", &fields(), &mut io),
            ElicitationAnswer::Decline
        );
        let mut io = script(&["Bo", "1", "1", "", "c"]);
        assert_eq!(
            ask_form("srv", "m", &fields(), &mut io),
            ElicitationAnswer::Cancel
        );
        let mut io = script(&["Bo"]);
        assert_eq!(
            ask_form("srv", "m", &fields(), &mut io),
            ElicitationAnswer::Cancel,
            "end of input cancels"
        );
    }

    #[test]
    fn a_url_of_another_scheme_is_shown_but_never_opened() {
        for url in [
            "file:///etc/passwd",
            "vscode://file/home/u/.bashrc",
            "javascript:alert(1)",
            "http://evil.example.com/",
        ] {
            let mut io = script(&["o", "c"]);
            assert_eq!(
                ask_url("srv", "Look", url, &mut io),
                ElicitationAnswer::Cancel
            );
            assert!(io.opened.is_empty(), "{url} was opened");
            assert!(
                io.said.contains("not offered to open"),
                "{url}: {}",
                io.said
            );
            assert!(!io.said.contains("[o]pen"), "{url}: {}", io.said);
        }
        // On this machine plain http is fine (a local authorization page).
        let mut io = script(&["o", "y"]);
        ask_url("srv", "Sign in", "http://127.0.0.1:8976/callback", &mut io);
        assert_eq!(io.opened, ["http://127.0.0.1:8976/callback"]);
    }

    #[test]
    fn a_url_is_shown_with_its_host_and_opened_on_request() {
        let mut io = script(&["o", "y"]);
        let answer = ask_url("srv", "Sign in", "https://auth.example.com/x?y=1", &mut io);
        assert_eq!(answer, ElicitationAnswer::Accept(Map::new()));
        assert_eq!(io.opened, ["https://auth.example.com/x?y=1"]);
        assert!(
            io.said.contains("open a page on auth.example.com: Sign in"),
            "{}",
            io.said
        );
        let mut io = script(&["n"]);
        assert_eq!(
            ask_url("srv", "Sign in", "https://a.b/", &mut io),
            ElicitationAnswer::Decline
        );
        assert!(io.opened.is_empty());
    }
}
