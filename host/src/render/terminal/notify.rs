//! Getting the person's attention when tern waits for them (issue 26, item 5): an approval
//! question, or the end of a turn long enough that they may have looked away.
//!
//! Terminals that show desktop notifications get one: OSC 9 (iTerm2, WezTerm, Ghostty, Windows
//! Terminal) or OSC 777 (VTE terminals such as GNOME Terminal, and urxvt), detected from the
//! environment the way other terminal CLIs do. Everything else — and tmux or screen, which would
//! swallow the sequence — gets BEL, which terminals turn into a bell, a flash or a tab marker.

use std::time::Duration;

use tern_config::UiSection;

/// The sequence a terminal understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `\x07`.
    Bel,
    /// `ESC ] 9 ; message BEL`.
    Osc9,
    /// `ESC ] 777 ; notify ; title ; message BEL`.
    Osc777,
}

impl Style {
    /// The style for the terminal described by `env` (a variable's value, if set).
    pub fn detect(env: &dyn Fn(&str) -> Option<String>) -> Self {
        // A multiplexer passes OSC sequences only when configured to; BEL always gets through.
        if env("TMUX").is_some() || env("STY").is_some() {
            return Style::Bel;
        }
        let program = env("TERM_PROGRAM").unwrap_or_default();
        let term = env("TERM").unwrap_or_default();
        if matches!(program.as_str(), "iTerm.app" | "WezTerm" | "ghostty")
            || env("WT_SESSION").is_some()
        {
            Style::Osc9
        } else if env("VTE_VERSION").is_some() || term.starts_with("rxvt") {
            Style::Osc777
        } else {
            Style::Bel
        }
    }

    /// The bytes that notify with `message` (control characters removed, so a tool name
    /// cannot end the sequence early).
    pub fn sequence(self, message: &str) -> String {
        let clean: String = message.chars().filter(|c| !c.is_control()).collect();
        match self {
            Style::Bel => "\x07".into(),
            Style::Osc9 => format!("\x1b]9;{clean}\x07"),
            Style::Osc777 => format!("\x1b]777;notify;tern;{clean}\x07"),
        }
    }
}

/// `[ui] notify` and `notify_after_sec`, with the terminal's style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notifier {
    /// `None`: `[ui] notify = false`.
    style: Option<Style>,
    after: Duration,
}

impl Notifier {
    pub fn new(ui: &UiSection, env: &dyn Fn(&str) -> Option<String>) -> Self {
        Self {
            style: ui.notify.then(|| Style::detect(env)),
            after: ui.notify_after,
        }
    }

    /// Never notifies.
    pub fn off() -> Self {
        Self {
            style: None,
            after: Duration::MAX,
        }
    }

    /// The sequence for an approval that waits, if notifications are on.
    pub fn approval(&self, tool: &str) -> Option<String> {
        self.style
            .map(|s| s.sequence(&format!("tern: approval needed for {tool}")))
    }

    /// The sequence for a turn that ended after `took`, if notifications are on and it ran at
    /// least `[ui] notify_after_sec`.
    pub fn turn_ended(&self, took: Duration, how: &str) -> Option<String> {
        self.style
            .filter(|_| took >= self.after)
            .map(|s| s.sequence(&format!("tern: turn {how} after {}s", took.as_secs())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_style_follows_the_terminal_and_a_multiplexer_gets_bel() {
        assert_eq!(Style::detect(&env(&[("TERM", "xterm")])), Style::Bel);
        assert_eq!(
            Style::detect(&env(&[("TERM_PROGRAM", "iTerm.app")])),
            Style::Osc9
        );
        assert_eq!(
            Style::detect(&env(&[("VTE_VERSION", "7600")])),
            Style::Osc777
        );
        assert_eq!(
            Style::detect(&env(&[("TERM_PROGRAM", "WezTerm"), ("TMUX", "/tmp/t")])),
            Style::Bel
        );
    }

    #[test]
    fn sequences_carry_no_control_characters_from_the_message() {
        assert_eq!(Style::Osc9.sequence("a\x07b\x1b"), "\x1b]9;ab\x07");
        assert_eq!(
            Style::Osc777.sequence("done"),
            "\x1b]777;notify;tern;done\x07"
        );
    }

    #[test]
    fn a_turn_notifies_only_past_the_threshold_and_never_when_off() {
        let ui = UiSection::default();
        let n = Notifier::new(&ui, &env(&[]));
        assert_eq!(n.turn_ended(Duration::from_secs(3), "finished"), None);
        assert_eq!(
            n.turn_ended(Duration::from_secs(12), "finished").as_deref(),
            Some("\x07")
        );
        assert_eq!(n.approval("fs__write_file").as_deref(), Some("\x07"));
        let off = Notifier::new(
            &UiSection {
                notify: false,
                ..ui
            },
            &env(&[]),
        );
        assert_eq!(off.approval("x"), None);
        assert_eq!(off.turn_ended(Duration::from_secs(99), "finished"), None);
    }
}
