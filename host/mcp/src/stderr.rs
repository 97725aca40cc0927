//! A server's stderr: drained continuously (a full pipe would block the server)
//! into a bounded ring of recent lines and, optionally, a per-server log file.
//!
//! The log file is capped: past [`crate::PoolOptions::max_log_bytes`] (10 MiB) it is renamed to `NAME.log.1` (replacing the
//! previous one) and a new file starts, so a server flooding stderr costs at most twice the cap
//! on disk (issue 15, F11). Logs hold whatever a server prints, so files are 0600 in a 0700
//! directory.

use std::{
    collections::VecDeque,
    path::{Path, PathBuf},
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
/// Default size at which a server's log file is rotated ([`crate::PoolOptions::max_log_bytes`]).
pub const MAX_LOG_BYTES: u64 = 10 * 1024 * 1024;

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

    /// Starts draining `stream` (one process's stderr) in a task, into the ring and, when
    /// given, `log_file` rotated at `cap` bytes.
    pub(crate) fn drain<R>(&self, stream: R, log_file: Option<PathBuf>, server: String, cap: u64)
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        self.closed.send_replace(false);
        let tail = self.clone();
        tokio::spawn(async move {
            let mut log = match log_file {
                Some(path) => LogFile::open(path, cap).await,
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
                if let Some(l) = log.as_mut() {
                    l.write_line(&line).await;
                }
                tracing::debug!(server = %server, "stderr: {line}");
                tail.push(line);
            }
            if let Some(l) = log.as_mut() {
                l.flush().await;
            }
            tail.closed.send_replace(true);
        });
    }
}

/// A server's log file, rotated at its cap.
struct LogFile {
    path: PathBuf,
    file: tokio::fs::File,
    written: u64,
    cap: u64,
}

impl LogFile {
    /// Opens (appends to) `path`, rotating first when it is already at the cap.
    async fn open(path: PathBuf, cap: u64) -> Option<Self> {
        let written = tokio::fs::metadata(&path).await.map_or(0, |m| m.len());
        let mut log = Self {
            file: open_private(&path).await?,
            path,
            written,
            cap,
        };
        if log.written >= cap {
            log.rotate().await;
        }
        Some(log)
    }

    async fn write_line(&mut self, line: &str) {
        let len = line.len() as u64 + 1;
        if self.written > 0 && self.written + len > self.cap {
            self.rotate().await;
        }
        let _ = self.file.write_all(line.as_bytes()).await;
        let _ = self.file.write_all(b"\n").await;
        self.written += len;
    }

    /// `NAME.log` → `NAME.log.1` (replacing it), and a fresh `NAME.log`.
    async fn rotate(&mut self) {
        let _ = self.file.flush().await;
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        if tokio::fs::rename(&self.path, &old).await.is_ok()
            && let Some(file) = open_private(&self.path).await
        {
            self.file = file;
            self.written = 0;
        }
    }

    async fn flush(&mut self) {
        let _ = self.file.flush().await;
    }
}

/// Opens `path` for appending the way tern opens all its files: `0600` in a `0700` directory
/// (an older, looser one is tightened), never through a symlink.
async fn open_private(path: &Path) -> Option<tokio::fs::File> {
    let path = path.to_path_buf();
    let opened = tokio::task::spawn_blocking(move || tern_protocol::files::open_append(&path))
        .await
        .ok()?;
    match opened {
        Ok(file) => Some(tokio::fs::File::from_std(file)),
        Err(e) => {
            tracing::warn!("server log not written: {e}");
            None
        }
    }
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
        tail.drain(
            std::io::Cursor::new(text.into_bytes()),
            None,
            "t".into(),
            MAX_LOG_BYTES,
        );
        tail.settle(Duration::from_secs(5)).await;
        let last = tail.last(TAIL_LINES);
        assert_eq!(last.len(), TAIL_LINES);
        assert_eq!(last[0], "line 101");
        assert_eq!(last[TAIL_LINES - 2], "line 299");
        assert_eq!(last[TAIL_LINES - 1].len(), MAX_LINE_BYTES);
    }

    #[tokio::test]
    async fn the_log_file_is_capped_rotated_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        let path = logs.join("flood.log");
        // A log left at the cap by an earlier run is rotated before anything is appended.
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::write(&path, "x".repeat(1000)).unwrap();
        let tail = StderrTail::new();
        let mut text = String::new();
        for i in 0..500 {
            text.push_str(&format!("line {i:04} of a flood\n"));
        }
        tail.drain(
            std::io::Cursor::new(text.into_bytes()),
            Some(path.clone()),
            "flood".into(),
            1000,
        );
        tail.settle(Duration::from_secs(5)).await;
        let current = std::fs::read_to_string(&path).unwrap();
        let old = std::fs::read_to_string(logs.join("flood.log.1")).unwrap();
        assert!(current.len() <= 1000, "{}", current.len());
        assert!(
            old.len() <= 1000 && old.starts_with("line "),
            "{}",
            old.len()
        );
        assert!(current.ends_with("line 0499 of a flood\n"), "{current}");
        assert!(!logs.join("flood.log.2").exists());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&logs.join("flood.log.1")), 0o600);
        assert_eq!(mode(&logs), 0o700);
    }

    #[tokio::test]
    async fn a_symlink_planted_at_the_log_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep").unwrap();
        let path = logs.join("evil.log");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let tail = StderrTail::new();
        tail.drain(
            std::io::Cursor::new(b"written through the link?\n".to_vec()),
            Some(path.clone()),
            "evil".into(),
            MAX_LOG_BYTES,
        );
        tail.settle(Duration::from_secs(5)).await;
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // The tail still has the line: only the file is refused.
        assert_eq!(tail.last(1), ["written through the link?"]);
    }
}
