//! Incremental, lossy UTF-8 decoding of a byte stream.
//!
//! Pipe reads split the stream at arbitrary byte boundaries, often in the middle
//! of a multi-byte character. Decoding each chunk on its own would turn every
//! such split into two replacement characters; this keeps the (at most three)
//! bytes of an unfinished character until the next chunk arrives.

use tern_tool_common::HeadTail;

/// Decodes chunks of bytes into a [`HeadTail`], carrying split characters over.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    carry: Vec<u8>,
}

impl Utf8Stream {
    /// Decodes `bytes` (continuing any character left unfinished by the last call).
    pub fn push(&mut self, bytes: &[u8], out: &mut HeadTail) {
        if self.carry.is_empty() {
            self.decode(bytes, out);
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(bytes);
            self.decode(&joined, out);
        }
    }

    /// Flushes an unfinished character at the end of the stream as U+FFFD.
    pub fn finish(&mut self, out: &mut HeadTail) {
        if !self.carry.is_empty() {
            self.carry.clear();
            out.push_str("\u{FFFD}");
        }
    }

    fn decode(&mut self, mut bytes: &[u8], out: &mut HeadTail) {
        loop {
            match std::str::from_utf8(bytes) {
                Ok(text) => {
                    out.push_str(text);
                    return;
                }
                Err(e) => {
                    let (valid, rest) = bytes.split_at(e.valid_up_to());
                    // `valid_up_to` marks a boundary where the prefix is valid UTF-8.
                    out.push_str(&String::from_utf8_lossy(valid));
                    match e.error_len() {
                        // The input ends inside a character: wait for more bytes.
                        None => {
                            self.carry.extend_from_slice(rest);
                            return;
                        }
                        Some(bad) => {
                            out.push_str("\u{FFFD}");
                            bytes = &rest[bad..];
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> String {
        let mut out = HeadTail::new(1000);
        let mut d = Utf8Stream::default();
        for c in chunks {
            d.push(c, &mut out);
        }
        d.finish(&mut out);
        out.finish().text
    }

    #[test]
    fn a_character_split_across_reads_survives() {
        let bytes = "héllo → ok".as_bytes();
        for split in 0..bytes.len() {
            let (a, b) = bytes.split_at(split);
            assert_eq!(decode_chunks(&[a, b]), "héllo → ok", "split at {split}");
        }
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        assert_eq!(decode_chunks(&[b"a\xffb"]), "a\u{FFFD}b");
        assert_eq!(decode_chunks(&[b"a\xe2\x86"]), "a\u{FFFD}");
    }
}
