//! An incremental Server-Sent Events parser (WHATWG "event stream interpretation").
//!
//! Bytes go in as they arrive from the socket; complete events come out as soon as their blank
//! line is seen, so a text delta is never held back waiting for more data.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when absent (OpenAI sends only `data:`).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Feeds bytes, yields events.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being read (not yet terminated).
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

/// The stream had bytes that are not UTF-8.
#[derive(Debug, Clone, thiserror::Error)]
#[error("SSE line is not valid UTF-8: {0}")]
pub struct SseError(String);

impl SseParser {
    /// Creates an empty parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Consumes `chunk` and appends every event it completes to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(b'\n') = rest.first() {
                rest = &rest[1..];
            }
        }
        while let Some(pos) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.line.extend_from_slice(&rest[..pos]);
            let terminator = rest[pos];
            rest = &rest[pos + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out)?;
        }
        self.line.extend_from_slice(rest);
        Ok(())
    }

    /// The stream ended: treats an unterminated last line and event as complete.
    ///
    /// The spec says to drop an event without its blank line, but recorded provider streams end
    /// with `data: {"type":"message_stop"}` and no newline at all (anthropic-sdk-python fixtures),
    /// so dropping it would lose the end of the turn.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.process_line(&line, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let line = std::str::from_utf8(line)
            .map_err(|_| SseError(String::from_utf8_lossy(line).into_owned()))?;
        if line.starts_with(':') {
            return Ok(()); // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` steer browser reconnection, which we do not do.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            });
        } else {
            self.event.clear();
        }
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in input.chunks(piece) {
            p.feed(c, &mut out).unwrap();
        }
        p.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn same_events_whatever_the_chunking_and_line_endings() {
        let lf = b"event: a\ndata: 1\n\n: comment\ndata: x\ndata: y\n\nevent: b\ndata: {\"k\":2}";
        let crlf = b"event: a\r\ndata: 1\r\n\r\n: comment\r\ndata: x\r\ndata: y\r\n\r\nevent: b\r\ndata: {\"k\":2}";
        let cr = b"event: a\rdata: 1\r\r: comment\rdata: x\rdata: y\r\revent: b\rdata: {\"k\":2}";
        let want = vec![
            SseEvent {
                event: "a".into(),
                data: "1".into(),
            },
            SseEvent {
                event: String::new(),
                data: "x\ny".into(),
            },
            SseEvent {
                event: "b".into(),
                data: "{\"k\":2}".into(),
            },
        ];
        for input in [&lf[..], &crlf[..], &cr[..]] {
            for piece in 1..input.len() {
                assert_eq!(parse_in_pieces(input, piece), want, "piece size {piece}");
            }
        }
    }

    #[test]
    fn event_is_dispatched_at_its_blank_line_not_later() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.feed(b"data: first\n", &mut out).unwrap();
        assert!(out.is_empty());
        p.feed(b"\ndata: sec", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data, "first");
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        assert!(p.feed(b"data: \xff\xfe\n\n", &mut out).is_err());
    }
}
