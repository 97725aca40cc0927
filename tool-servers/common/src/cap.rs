//! Bounded capture of output whose size we do not control.
//!
//! A command like `yes` produces output forever; a tool must keep reading it (or
//! the writer blocks and never exits) without letting memory grow. [`HeadTail`]
//! keeps the first `limit/2` and the last `limit/2` characters and counts the rest.

/// Keeps the head and the tail of a stream of text within a character budget.
#[derive(Debug, Clone)]
pub struct HeadTail {
    head_budget: usize,
    tail_budget: usize,
    head: String,
    head_chars: usize,
    /// The UTF-8 bytes of the last `tail_chars` characters (whole characters
    /// only). It may hold more than `tail_budget` characters between trims
    /// ([`Self::trim_tail`]): dropping the oldest characters one read at a time
    /// was a per-character loop, trimming once per [`Self::tail_slack`] bytes is
    /// a `memmove`.
    tail: Vec<u8>,
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
            tail: Vec::new(),
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
        // `tail_budget` characters can survive. Find where they start from the
        // end, so the cost is the tail's size, not the chunk's.
        if n >= self.tail_budget {
            let start = last_chars_start(rest, self.tail_budget);
            self.tail.clear();
            self.tail.extend_from_slice(&rest.as_bytes()[start..]);
            self.tail_chars = self.tail_budget;
        } else {
            self.tail.extend_from_slice(rest.as_bytes());
            self.tail_chars += n;
            if self.tail.len() > self.tail_slack() {
                self.trim_tail();
            }
        }
    }

    /// How many bytes the tail may grow to before it is trimmed: twice the most
    /// its budget can take (4 bytes a character), and at least 64 KiB, so a trim
    /// comes at most once per that many bytes pushed.
    fn tail_slack(&self) -> usize {
        (self.tail_budget * 8).max(64 * 1024)
    }

    /// Keeps only the last `tail_budget` characters of the tail.
    fn trim_tail(&mut self) {
        if self.tail_chars <= self.tail_budget {
            return;
        }
        // Only whole characters of valid `&str`s were ever stored.
        let start = match std::str::from_utf8(&self.tail) {
            Ok(text) => last_chars_start(text, self.tail_budget),
            Err(_) => 0,
        };
        self.tail.drain(..start);
        self.tail_chars = self.tail_budget;
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
    pub fn finish(mut self) -> Capped {
        self.trim_tail();
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
        // Only whole characters of valid `&str`s were ever stored.
        text.push_str(&String::from_utf8_lossy(&self.tail));
        Capped {
            text,
            truncated: omitted > 0,
            total_chars: self.total_chars,
            total_bytes: self.total_bytes,
            omitted_chars: omitted,
        }
    }
}

/// The byte index in `s` where its last `k` characters start (0 when it has
/// fewer).
///
/// Steps back by the number of characters still missing (each is at least one
/// byte), to the start of the character landed in, and counts what it passed
/// with the standard library's fast counter: for ASCII one step, for any text a
/// few — never a character-by-character walk.
fn last_chars_start(s: &str, k: usize) -> usize {
    let mut start = s.len();
    let mut have = 0;
    while have < k && start > 0 {
        let mut next = start.saturating_sub(k - have);
        while !s.is_char_boundary(next) {
            next -= 1;
        }
        // [next, start) holds at most `k - have` characters: stepping back
        // `k - have` bytes passes at most that many starts, and backing up to a
        // boundary only happens when some of those bytes were continuations.
        have += s[next..start].chars().count();
        start = next;
    }
    start
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
    fn the_last_characters_are_found_in_any_text() {
        for text in ["", "abc", "ééé", "a→b€c𝄞d", "𝄞𝄞𝄞x", "xé→𝄞"] {
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            for k in 0..=chars.len() + 2 {
                let want = if k >= chars.len() {
                    0
                } else if k == 0 {
                    text.len()
                } else {
                    chars[chars.len() - k].0
                };
                assert_eq!(last_chars_start(text, k), want, "{text:?} k={k}");
            }
        }
    }

    #[test]
    fn a_tail_trimmed_while_streaming_matches_one_push() {
        // Small pieces of multi-byte text, far more than the tail's slack, so the
        // tail is trimmed many times mid-stream.
        let text: String = (0..60_000)
            .map(|i| ['a', 'é', '→', '𝄞', '\n'][i % 5])
            .collect();
        let mut whole = HeadTail::new(1001);
        whole.push_str(&text);
        let whole = whole.finish();
        let chars: Vec<char> = text.chars().collect();
        for chunk in [1, 3, 499, 500, 501] {
            let mut parts = HeadTail::new(1001);
            for piece in chars.chunks(chunk) {
                parts.push_str(&piece.iter().collect::<String>());
            }
            assert_eq!(parts.finish(), whole, "chunk {chunk}");
        }
        let tail: String = chars[chars.len() - 501..].iter().collect();
        assert!(whole.text.ends_with(&tail));
    }

    #[test]
    fn memory_is_bounded_by_the_limit() {
        let mut c = HeadTail::new(1000);
        let chunk = "y\n".repeat(4096);
        for _ in 0..1000 {
            c.push_str(&chunk);
        }
        assert!(c.head.len() <= 500);
        assert!(c.tail.len() <= c.tail_slack() + chunk.len());
        assert_eq!(c.total_bytes(), 8192 * 1000);
        let out = c.finish();
        assert_eq!(out.omitted_chars, 8192 * 1000 - 1000);
        assert!(out.text.ends_with(&"y\n".repeat(250)), "{}", out.text);
    }
}
