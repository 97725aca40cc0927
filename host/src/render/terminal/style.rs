//! Colours, and keeping other people's escape sequences off the terminal.

/// ANSI styles tern uses.
pub const BOLD: &str = "\x1b[1m";
pub const DIM: &str = "\x1b[2m";
pub const ITALIC: &str = "\x1b[3m";
pub const UNDERLINE: &str = "\x1b[4m";
pub const RED: &str = "\x1b[31m";
pub const GREEN: &str = "\x1b[32m";
pub const YELLOW: &str = "\x1b[33m";
pub const BLUE: &str = "\x1b[34m";
pub const MAGENTA: &str = "\x1b[35m";
pub const CYAN: &str = "\x1b[36m";
pub const RESET: &str = "\x1b[0m";

/// Whether to style at all (a terminal without `NO_COLOR`), and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Palette {
    pub color: bool,
}

impl Palette {
    /// `text` in `style`, or as it is when colour is off.
    pub fn paint(&self, style: &str, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("{style}{text}{RESET}")
        } else {
            text.to_string()
        }
    }
}

/// `text` with every control character except newline and tab shown as a visible escape, and
/// the bidirectional overrides that reorder what a reader sees escaped too.
///
/// Model text and tool output are untrusted: an `ESC ] 52` sequence would write the user's
/// clipboard, `ESC [ 2 J` clear the screen, `ESC ] 0` retitle the window, U+202E reverse a
/// command on display. Only escapes tern writes itself reach the terminal.
pub fn sanitize(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if needs_escape(c) {
            match c {
                '\x1b' => out.push_str("^["),
                '\r' => out.push_str("\\r"),
                c => out.push_str(&format!("\\u{{{:04x}}}", u32::from(c))),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_escapes_are_made_visible_and_plain_text_is_untouched() {
        assert_eq!(sanitize("plain\ttext\nline"), "plain\ttext\nline");
        // OSC 52 clipboard write, a screen clear, a window title, a bell, a bidi override.
        let hostile = "a\x1b]52;c;ZWNobw==\x07b\x1b[2Jc\x1b]0;pwned\x07d\u{202e}txt.exe\r";
        let shown = sanitize(hostile);
        assert!(!shown.contains('\x1b') && !shown.contains('\x07') && !shown.contains('\r'));
        assert!(!shown.contains('\u{202e}'));
        assert_eq!(
            shown,
            "a^[]52;c;ZWNobw==\\u{0007}b^[[2Jc^[]0;pwned\\u{0007}d\\u{202e}txt.exe\\r"
        );
    }
}
