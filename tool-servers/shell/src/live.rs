//! The last lines of a running command's output, for the live tail a host shows while it runs
//! (`_meta["tern/output_tail"]` in progress notifications; see `tern_protocol::meta`).
//!
//! Only the most recent bytes are kept ([`KEEP_BYTES`]): a flood costs one bounded copy per
//! read, never memory. Lines are for a person's eyes: colour and cursor escapes are dropped, a
//! carriage return (a progress bar redrawing itself) keeps what was written after it, and a long
//! line is cut to [`OutputTail::MAX_LINE_CHARS`].

use tern_tool_common::meta::{OutputTail, cut_line};

/// Bytes of recent output kept: enough for [`OutputTail::MAX_LINES`] full lines of
/// [`OutputTail::MAX_LINE_CHARS`] characters (4 bytes each at most), and then some.
const KEEP_BYTES: usize = 16 * 1024;

/// The recent output of one command.
#[derive(Debug, Default)]
pub struct LiveTail {
    recent: Vec<u8>,
    /// Bytes before `recent` were dropped: its first line is a fragment.
    trimmed: bool,
}

impl LiveTail {
    /// Adds a chunk of output.
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = if bytes.len() > KEEP_BYTES {
            self.recent.clear();
            self.trimmed = true;
            &bytes[bytes.len() - KEEP_BYTES..]
        } else {
            bytes
        };
        self.recent.extend_from_slice(bytes);
        if self.recent.len() > KEEP_BYTES {
            let excess = self.recent.len() - KEEP_BYTES;
            self.recent.drain(..excess);
            self.trimmed = true;
        }
    }

    /// The last `max` lines (at most [`OutputTail::MAX_LINES`]), oldest first, the unfinished
    /// last line included; blank lines are skipped.
    pub fn lines(&self, max: usize) -> Vec<String> {
        let max = max.min(OutputTail::MAX_LINES);
        let text = String::from_utf8_lossy(&self.recent);
        let mut pieces: Vec<&str> = text.split('\n').collect();
        if self.trimmed && pieces.len() > 1 {
            pieces.remove(0);
        }
        let mut lines: Vec<String> = pieces
            .iter()
            .rev()
            .map(|l| readable(l))
            .filter(|l| !l.trim().is_empty())
            .take(max)
            .collect();
        lines.reverse();
        lines
    }
}

/// One line as a terminal would have left it, without escapes or control characters, cut to
/// the protocol's length.
fn readable(line: &str) -> String {
    // `\r` returns to the line's start: what follows it overwrote what came before (a trailing
    // one, as in `\r\n`, overwrote nothing).
    let line = line.trim_end_matches('\r');
    let line = line.rsplit('\r').next().unwrap_or(line);
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters up to a final byte in `@`..`~`.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ST (`ESC \`).
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    cut_line(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_with_the_unfinished_one_and_without_escapes() {
        let mut tail = LiveTail::default();
        tail.push(b"one\ntwo\n\x1b[32mthree\x1b[0m\n\nfo");
        tail.push(b"ur");
        assert_eq!(tail.lines(3), ["two", "three", "four"]);
        assert_eq!(tail.lines(99).len(), 4, "at most what there is");
        // A progress bar redraws its line: the last state shows.
        tail.push(b"\n 10%\r 50%\r100%\r\n");
        assert_eq!(tail.lines(1), ["100%"]);
        // An OSC title and a tab.
        tail.push(b"\x1b]0;title\x07a\tb\n");
        assert_eq!(tail.lines(1), ["a    b"]);
    }

    #[test]
    fn a_flood_keeps_memory_bounded_and_lines_cut() {
        let mut tail = LiveTail::default();
        for _ in 0..100 {
            tail.push(&[b'y'; 100_000]);
        }
        assert!(tail.recent.len() <= KEEP_BYTES);
        let lines = tail.lines(5);
        assert_eq!(lines.len(), 1, "one long line, its start dropped");
        assert_eq!(lines[0].chars().count(), OutputTail::MAX_LINE_CHARS);
        assert!(lines[0].ends_with(OutputTail::CUT));
        // A multi-byte character split by the trim is not an error.
        let mut tail = LiveTail::default();
        tail.push("é".repeat(KEEP_BYTES).as_bytes());
        tail.push(b"\nlast");
        assert_eq!(tail.lines(1), ["last"]);
    }
}
