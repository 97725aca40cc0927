//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! tern's own rather than rmcp's `TokioChildProcess` for one reason: rmcp drops a line over its
//! limit with a log line and nothing else, so the call waiting for that reply hangs until its
//! timeout (issue 15, F10: `fs__read_file` with a 10 MB path argument gets a 20 MB error reply
//! back). Here an oversized line is still never buffered whole, but its envelope is scanned
//! ([`super::scan`]) and the request it answers fails at once with a local error naming the
//! size. The child's lifecycle (its own process group, close → SIGTERM → kill) is the same as
//! rmcp's.

use std::{sync::Arc, time::Duration};

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use rmcp::{
    RoleClient,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{ChildStderr, ChildStdin, ChildStdout},
    sync::Mutex,
};

use super::{LocalFailure, StdoutNoise, TaskSupport, scan::EnvelopeScan};

/// The largest message accepted from a server: the same 16 MiB rmcp and the streamable HTTP
/// client use, so a reply acceptable over one transport is acceptable over the other.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// How long the child gets after stdin closes, and again after SIGTERM.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// A spawned stdio server.
pub(crate) struct StdioTransport {
    child: ChildGuard,
    stdout: BufReader<ChildStdout>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    line: Vec<u8>,
    /// Set while the rest of an oversized line is being skipped (and scanned).
    oversized: Option<(EnvelopeScan, usize)>,
    max_line: usize,
    task_support: TaskSupport,
    noise: StdoutNoise,
}

impl StdioTransport {
    /// Spawns `cmd` with piped stdin, stdout and stderr; returns the transport and the stderr pipe
    /// (which the caller must drain).
    pub(crate) fn spawn(
        mut cmd: CommandWrap,
        task_support: TaskSupport,
        noise: StdoutNoise,
    ) -> std::io::Result<(Self, Option<ChildStderr>)> {
        cmd.command_mut()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn()?;
        let stdin = child.inner_mut().stdin().take();
        let stdout = child.inner_mut().stdout().take();
        let stderr = child.inner_mut().stderr().take();
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(std::io::Error::other(
                "the child's stdio pipes were not set up",
            ));
        };
        Ok((
            Self {
                child: ChildGuard(Some(child)),
                stdout: BufReader::with_capacity(64 * 1024, stdout),
                stdin: Arc::new(Mutex::new(Some(stdin))),
                line: Vec::new(),
                oversized: None,
                max_line: MAX_MESSAGE_BYTES,
                task_support,
                noise,
            },
            stderr,
        ))
    }

    /// Lowers the message limit (tests use it to trigger F10 without 16 MiB of traffic).
    #[cfg(test)]
    pub(crate) fn with_max_line(mut self, max: usize) -> Self {
        self.max_line = max;
        self
    }

    /// The child's process id.
    pub(crate) fn id(&self) -> Option<u32> {
        self.child.0.as_ref().and_then(|c| c.id())
    }

    /// Reads until one message is ready (or a local failure stands in for one); `None` at EOF.
    async fn next_message(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            // No await between `fill_buf` and `consume`: a cancelled receive (it is polled in a
            // `select!`) leaves the partial line in `self.line` for the next call.
            let (consumed, complete) = {
                let available = match self.stdout.fill_buf().await {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::debug!("reading the server's stdout failed: {e}");
                        return None;
                    }
                };
                if available.is_empty() {
                    return None;
                }
                let newline = memchr(available);
                let take = newline.map_or(available.len(), |i| i + 1);
                let chunk = &available[..take];
                if let Some((scan, len)) = self.oversized.as_mut() {
                    scan.feed(chunk);
                    *len += take;
                } else if self.line.len() + take > self.max_line {
                    let mut scan = EnvelopeScan::default();
                    scan.feed(&self.line);
                    scan.feed(chunk);
                    let len = self.line.len() + take;
                    self.line = Vec::new();
                    self.oversized = Some((scan, len));
                } else {
                    self.line.extend_from_slice(chunk);
                }
                (take, newline.is_some())
            };
            self.stdout.consume(consumed);
            if !complete {
                continue;
            }
            if let Some((scan, len)) = self.oversized.take() {
                let envelope = scan.finish();
                let failure = LocalFailure::ReplyTooLarge {
                    bytes: len,
                    limit: self.max_line,
                };
                match (envelope.is_response, envelope.id) {
                    (true, Some(id)) => return Some(failure.into_error_message(id)),
                    _ => {
                        tracing::warn!(
                            bytes = len,
                            "dropped a message from the server over the {} byte limit",
                            self.max_line
                        );
                        continue;
                    }
                }
            }
            let line = std::mem::take(&mut self.line);
            note_task_support(&line, &self.task_support);
            if let Some(msg) = parse_line(&line, &self.noise) {
                return Some(msg);
            }
        }
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        drop(self.stdin.lock().await.take());
        let Some(child) = self.child.0.as_mut() else {
            return Ok(());
        };
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
            self.child.0 = None;
            return Ok(());
        }
        if child.signal(libc::SIGTERM).is_ok()
            && tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok()
        {
            self.child.0 = None;
            return Ok(());
        }
        let result = Box::into_pin(child.kill()).await;
        self.child.0 = None;
        result
    }
}

/// One line: a message, or `None` to skip it. A response whose body does not parse still
/// answers its request (with the reason), so a call never waits on a reply it already got.
fn parse_line(line: &[u8], noise: &StdoutNoise) -> Option<RxJsonRpcMessage<RoleClient>> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
        Ok(msg) => Some(msg),
        Err(e) => {
            let mut scan = EnvelopeScan::default();
            scan.feed(line);
            let envelope = scan.finish();
            match (envelope.is_response, envelope.id) {
                (true, Some(id)) if e.is_data() => Some(
                    LocalFailure::UnreadableReply {
                        reason: e.to_string(),
                    }
                    .into_error_message(id),
                ),
                _ => {
                    // A banner or a log line on stdout: other SDKs skip these too.
                    tracing::debug!("skipping a line that is not a JSON-RPC message: {e}");
                    noise.note(line);
                    None
                }
            }
        }
    }
}

/// Records `execution.taskSupport` of the tools in a `tools/list` reply. Only lines that
/// mention it are parsed twice.
fn note_task_support(line: &[u8], support: &TaskSupport) {
    const NEEDLE: &[u8] = b"\"taskSupport\"";
    if !line.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
        return;
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
        return;
    };
    for tool in value["result"]["tools"].as_array().into_iter().flatten() {
        if let (Some(name), Some(s)) = (
            tool["name"].as_str(),
            tool["execution"]["taskSupport"].as_str(),
        ) {
            support.note(name, s);
        }
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        let bytes = serde_json::to_vec(&item).map(|mut b| {
            b.push(b'\n');
            b
        });
        async move {
            let bytes = bytes.map_err(std::io::Error::other)?;
            let mut guard = stdin.lock().await;
            let Some(pipe) = guard.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the server's stdin is closed",
                ));
            };
            pipe.write_all(&bytes).await?;
            pipe.flush().await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.next_message()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shutdown()
    }
}

/// Kills the child (its whole process group) when the transport is dropped without `close`.
struct ChildGuard(Option<Box<dyn ChildWrapper>>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let Some(mut child) = self.0.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    let _ = Box::into_pin(child.kill()).await;
                });
            }
            Err(_) => {
                let _ = child.start_kill();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{NumberOrString, ServerJsonRpcMessage};

    fn sh(script: &str) -> StdioTransport {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c").arg(script);
        StdioTransport::spawn(
            CommandWrap::from(cmd),
            TaskSupport::default(),
            StdoutNoise::default(),
        )
        .unwrap()
        .0
    }

    #[tokio::test]
    async fn an_oversized_reply_answers_its_request_with_a_local_error() {
        // A 3 kB reply (id last, as the TypeScript SDK writes it) against a 1 kB limit, then a
        // normal one: the first becomes an error for id 7, and the stream carries on.
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"result\":{{\"t\":\"{}\"}},\"id\":7}}",
            "x".repeat(3000)
        );
        let script =
            format!("printf '%s\\n' '{big}' '{{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{{}}}}'");
        let mut t = sh(&script).with_max_line(1000);
        let Some(ServerJsonRpcMessage::Error(err)) = t.receive().await else {
            panic!("expected a local error")
        };
        assert_eq!(err.id, Some(NumberOrString::Number(7)));
        assert!(err.error.message.contains("3"), "{:?}", err.error);
        assert_eq!(
            LocalFailure::of(&err.error),
            Some(LocalFailure::ReplyTooLarge {
                bytes: big.len() + 1,
                limit: 1000
            })
        );
        let Some(ServerJsonRpcMessage::Response(ok)) = t.receive().await else {
            panic!("the stream must continue after an oversized line")
        };
        assert_eq!(ok.id, NumberOrString::Number(8));
        assert!(t.receive().await.is_none());
    }

    #[tokio::test]
    async fn banners_are_skipped_and_a_malformed_reply_still_answers() {
        let mut t = sh("echo 'hello, I am a banner'; \
             echo '{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":\"not a list\"}}'");
        match t.receive().await {
            Some(ServerJsonRpcMessage::Response(r)) => {
                // Untagged results may still parse as a custom result: fine, it is delivered.
                assert_eq!(r.id, NumberOrString::Number(3));
            }
            Some(ServerJsonRpcMessage::Error(e)) => {
                assert_eq!(e.id, Some(NumberOrString::Number(3)));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            t.noise.get(),
            (1, Some("hello, I am a banner".to_string())),
            "the banner is counted for `tern mcp doctor`"
        );
    }
}
