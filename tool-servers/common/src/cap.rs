//! Bounded capture of output whose size we do not control.
//!
//! A command like `yes` produces output forever; a tool must keep reading it (or
//! the writer blocks and never exits) without letting memory grow. [`HeadTail`]
//! keeps the first `limit/2` and the last `limit/2` characters and counts the rest.

use std::collections::VecDeque;

/// Keeps the head and the tail of a stream of text within a character budget.
#[derive(Debug, Clone)]
pub struct HeadTail {
    head_budget: usize,
    tail_budget: usize,
    head: String,
    head_chars: usize,
    /// The UTF-8 bytes of the last `tail_chars` characters (whole characters
    /// only). Bytes, not `char`s: a flood replaces the tail once per read, and
    /// copying bytes is a `memcpy` where pushing `char`s is a loop.
    tail: VecDeque<u8>,
    tail_chars: usize,
    total_chars: u64,
    total_bytes: u64,
}

/// The final text of a [`HeadTail`], with what was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    /// Head, a marker line when something was cut, then tail.
    pub text: String,
    /// True when characters were dropped.
    pub truncated: bool,
    /// Characters seen in all.
    pub total_chars: u64,
    /// Bytes seen in all (UTF-8 length of what was pushed).
    pub total_bytes: u64,
    /// Characters dropped from the middle.
    pub omitted_chars: u64,
}

impl HeadTail {
    /// A capture that keeps at most `limit` characters (plus the marker).
    pub fn new(limit: usize) -> Self {
        let head_budget = limit / 2;
        Self {
            head_budget,
            tail_budget: limit - head_budget,
            head: String::new(),
            head_chars: 0,
            tail: VecDeque::new(),
            tail_chars: 0,
            total_chars: 0,
            total_bytes: 0,
        }
    }

    /// Appends text. Memory stays bounded by the limit whatever is pushed.
    pub fn push_str(&mut self, s: &str) {
        self.total_bytes += s.len() as u64;
        let mut rest = s;
        if self.head_chars < self.head_budget {
            let mut chars = rest.char_indices();
            let mut split = rest.len();
            for (i, c) in chars.by_ref() {
                if self.head_chars == self.head_budget {
                    split = i;
                    break;
                }
                self.head.push(c);
                self.head_chars += 1;
            }
            self.total_chars += rest[..split].chars().count() as u64;
            rest = &rest[split..];
        }
        if rest.is_empty() {
            return;
        }
        let n = rest.chars().count();
        self.total_chars += n as u64;
        if self.tail_budget == 0 {
            return;
        }
        // A flood pushes chunks larger than the tail: only their last
        // `tail_budget` characters can survive. Find where they start by
        // walking back from the end, so the cost is the tail's size, not the
        // chunk's (a 1 GiB flood was spending a fifth of its time here).
        if n >= self.tail_budget {
            let start = rest
                .char_indices()
                .rev()
                .nth(self.tail_budget - 1)
                .map_or(0, |(i, _)| i);
            self.tail.clear();
            self.tail.extend(&rest.as_bytes()[start..]);
            self.tail_chars = self.tail_budget;
        } else {
            let mut overflow = (self.tail_chars + n).saturating_sub(self.tail_budget);
            while overflow > 0 {
                // Drop one character: its lead byte, then its continuation bytes.
                self.tail.pop_front();
                while self.tail.front().is_some_and(|b| b & 0xC0 == 0x80) {
                    self.tail.pop_front();
                }
                overflow -= 1;
                self.tail_chars -= 1;
            }
            self.tail.extend(rest.as_bytes());
            self.tail_chars += n;
        }
    }

    /// Bytes pushed so far.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Characters pushed so far.
    pub fn total_chars(&self) -> u64 {
        self.total_chars
    }

    /// Finishes the capture.
    pub fn finish(self) -> Capped {
        let kept = self.head_chars as u64 + self.tail_chars as u64;
        let omitted = self.total_chars - kept;
        let mut text = self.head;
        if omitted > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[… {omitted} characters omitted of {} …]\n",
                self.total_chars
            ));
        }
        let tail: Vec<u8> = self.tail.into();
        // Only whole characters of valid `&str`s were ever stored.
        text.push_str(&String::from_utf8_lossy(&tail));
        Capped {
            text,
            truncated: omitted > 0,
            total_chars: self.total_chars,
            total_bytes: self.total_bytes,
            omitted_chars: omitted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_whole() {
        let mut c = HeadTail::new(100);
        c.push_str("hello\nworld\n");
        let out = c.finish();
        assert_eq!(out.text, "hello\nworld\n");
        assert!(!out.truncated);
        assert_eq!(out.total_bytes, 12);
    }

    #[test]
    fn long_text_keeps_head_and_tail_and_says_what_was_cut() {
        let mut c = HeadTail::new(10);
        for i in 0..100 {
            c.push_str(&format!("{}", i % 10));
        }
        let out = c.finish();
        assert!(out.truncated);
        assert_eq!(out.omitted_chars, 90);
        assert!(out.text.starts_with("01234\n"), "{}", out.text);
        assert!(out.text.ends_with("56789"), "{}", out.text);
        assert!(out.text.contains("90 characters omitted of 100"));
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        let mut c = HeadTail::new(4);
        c.push_str("ééééééé");
        let out = c.finish();
        assert!(out.text.starts_with("éé"));
        assert!(out.text.ends_with("éé"));
        assert_eq!(out.total_bytes, 14);
    }

    #[test]
    fn chunked_and_whole_pushes_agree() {
        let text: String = (0..5000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect::<String>()
            + "é→x";
        let mut whole = HeadTail::new(300);
        whole.push_str(&text);
        let whole = whole.finish();
        for chunk in [1, 7, 150, 299, 300, 301, 1000] {
            let mut parts = HeadTail::new(300);
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(chunk) {
                parts.push_str(&piece.iter().collect::<String>());
            }
            assert_eq!(parts.finish(), whole, "chunk {chunk}");
        }
        assert!(whole.text.ends_with("é→x"));
        assert_eq!(whole.total_chars, 5003);
    }

    #[test]
    fn memory_is_bounded_by_the_limit() {
        let mut c = HeadTail::new(1000);
        let chunk = "y\n".repeat(4096);
        for _ in 0..1000 {
            c.push_str(&chunk);
        }
        assert!(c.head.len() <= 500);
        assert!(c.tail.len() <= 500 * 4 && c.tail_chars <= 500);
        assert_eq!(c.total_bytes(), 8192 * 1000);
    }
}
