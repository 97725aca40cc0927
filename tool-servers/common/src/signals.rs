//! SIGTERM and Ctrl-C end a server cleanly, over stdio as over HTTP: the session is cancelled
//! (and with it every call in flight, as a client's `notifications/cancelled` would), so a
//! server stopped by whoever launched it ends its work — a shell command's process group, a
//! sub-agent's run and its `run_finished` — instead of dying in the middle of it.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// SIGTERM and SIGINT, registered before the server takes requests (over HTTP, before it
/// announces itself): from then on a signal means "shut down", not the default "die".
pub(crate) struct Signals {
    term: Option<Signal>,
    int: Option<Signal>,
}

impl Signals {
    pub(crate) fn register() -> Self {
        let register = |kind: SignalKind, name: &str| {
            signal(kind)
                .inspect_err(|e| tracing::warn!("cannot watch for {name}: {e}"))
                .ok()
        };
        Self {
            term: register(SignalKind::terminate(), "SIGTERM"),
            int: register(SignalKind::interrupt(), "SIGINT"),
        }
    }

    pub(crate) async fn recv(mut self) {
        let one = |s: &mut Option<Signal>| {
            let s = s.take();
            async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
        };
        let (term, int) = (one(&mut self.term), one(&mut self.int));
        tokio::select! {
            () = term => {}
            () = int => {}
        }
    }
}
