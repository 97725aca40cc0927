//! A server's stderr: drained continuously (a full pipe would block the server)
//! into a bounded ring of recent lines and, optionally, a per-server log file.

use std::{
    collections::VecDeque,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader},
    sync::watch,
};

/// Lines kept per server.
pub(crate) const TAIL_LINES: usize = 200;
/// Longest line kept; the rest of a longer line is cut (a server printing a
/// megabyte without a newline must not grow our memory).
const MAX_LINE_BYTES: usize = 4096;

/// The recent stderr of one server, shared between the drain task and readers.
#[derive(Debug, Clone)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// `true` once the current process's stderr reached EOF.
    closed: watch::Sender<bool>,
}

impl StderrTail {
    pub(crate) fn new() -> Self {
        Self {
            lines: Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES))),
            closed: watch::Sender::new(true),
        }
    }

    fn push(&self, line: String) {
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    /// The last `n` lines.
    pub(crate) fn last(&self, n: usize) -> Vec<String> {
        match self.lines.lock() {
            Ok(lines) => lines
                .iter()
                .skip(lines.len().saturating_sub(n))
                .cloned()
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Waits (bounded) until the current process's stderr is fully drained, so a
    /// crash report carries the lines the server printed just before dying.
    pub(crate) async fn settle(&self, max: Duration) {
        let mut rx = self.closed.subscribe();
        let _ = tokio::time::timeout(max, rx.wait_for(|closed| *closed)).await;
    }

    /// Starts draining `stream` (one process's stderr) in a task.
    pub(crate) fn drain<R>(&self, stream: R, log_file: Option<PathBuf>, server: String)
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        self.closed.send_replace(false);
        let tail = self.clone();
        tokio::spawn(async move {
            let mut file = match log_file {
                Some(path) => open_log(&path).await,
                None => None,
            };
            let mut reader = BufReader::new(stream);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match read_line_capped(&mut reader, &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let line = String::from_utf8_lossy(&buf)
                    .trim_end_matches(['\n', '\r'])
                    .to_string();
                if let Some(f) = file.as_mut() {
                    let _ = f.write_all(line.as_bytes()).await;
                    let _ = f.write_all(b"\n").await;
                }
                tracing::debug!(server = %server, "stderr: {line}");
                tail.push(line);
            }
            if let Some(f) = file.as_mut() {
                let _ = f.flush().await;
            }
            tail.closed.send_replace(true);
        });
    }
}

async fn open_log(path: &std::path::Path) -> Option<tokio::fs::File> {
    if let Some(dir) = path.parent() {
        let _ = tokio::fs::create_dir_all(dir).await;
    }
    tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await
        .ok()
}

/// Reads one line, keeping at most [`MAX_LINE_BYTES`] of it and discarding the rest.
async fn read_line_capped<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    out: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let n = chunk.len();
        let room = MAX_LINE_BYTES.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..n.min(room)]);
        reader.consume(n);
        total += n;
        if done {
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_last_lines_and_caps_long_ones() {
        let tail = StderrTail::new();
        let mut text = String::new();
        for i in 0..300 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str(&"x".repeat(100_000));
        text.push('\n');
        tail.drain(std::io::Cursor::new(text.into_bytes()), None, "t".into());
        tail.settle(Duration::from_secs(5)).await;
        let last = tail.last(TAIL_LINES);
        assert_eq!(last.len(), TAIL_LINES);
        assert_eq!(last[0], "line 101");
        assert_eq!(last[TAIL_LINES - 2], "line 299");
        assert_eq!(last[TAIL_LINES - 1].len(), MAX_LINE_BYTES);
    }
}
