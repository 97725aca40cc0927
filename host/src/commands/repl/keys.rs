//! The keyboard while a turn runs: one reader of stdin, started before a turn and stopped (its
//! thread joined) before the line editor reads again.
//!
//! Why one reader: a question used to read stdin with a blocking `read_line` on a thread of its
//! own; when Ctrl-C ended the question, that thread lived on and swallowed the next line typed
//! at `tern>` (issue 26). Here the only reader polls stdin with a short timeout and checks a stop
//! flag between polls, so it never outlives the turn; questions *claim* its keys for as long as
//! they are on screen, and a dropped claim receives nothing more.
//!
//! The terminal is put in non-canonical mode without echo, but keeps `ISIG`: Ctrl-C still
//! raises SIGINT, which the REPL turns into cancelling the turn. Esc, which no signal carries,
//! is read here and cancels the turn too.

use std::{
    os::fd::AsFd,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
    time::Duration,
};

use nix::{
    poll::{PollFd, PollFlags, PollTimeout, poll},
    sys::termios::{LocalFlags, SetArg, Termios, tcgetattr, tcsetattr},
};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// One key, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Char(char),
    Enter,
    Esc,
    Up,
    Down,
    Backspace,
    /// Shift-Tab (`ESC [ Z`): cycles the permission mode while a turn runs.
    BackTab,
    /// Ctrl-C read as a byte (when the terminal does not turn it into SIGINT).
    CtrlC,
    /// Ctrl-D.
    Eof,
    /// A sequence or control key with no meaning here.
    Other,
}

/// Turns bytes into keys. An escape byte with nothing after it in the same read is Esc: a
/// terminal sends an arrow key's sequence in one write.
pub(super) fn decode(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let text = String::from_utf8_lossy(bytes);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let key = match c {
            '\x1b' => match chars.peek() {
                None => Key::Esc,
                Some('[') | Some('O') => {
                    chars.next();
                    // Parameters, then the final byte (a letter or `~`).
                    let mut last = None;
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() || c == '~' {
                            last = Some(c);
                            break;
                        }
                    }
                    match last {
                        Some('A') => Key::Up,
                        Some('B') => Key::Down,
                        Some('Z') => Key::BackTab,
                        _ => Key::Other,
                    }
                }
                // Alt+key, or Esc typed before another key.
                Some(_) => Key::Esc,
            },
            '\r' | '\n' => Key::Enter,
            '\x7f' | '\x08' => Key::Backspace,
            '\x03' => Key::CtrlC,
            '\x04' => Key::Eof,
            c if c.is_control() => Key::Other,
            c => Key::Char(c),
        };
        keys.push(key);
    }
    keys
}

#[derive(Default)]
struct State {
    /// `reading` guards alive.
    readers: usize,
    thread: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    /// The terminal settings to restore.
    saved: Option<Termios>,
    /// The question that has the keys now.
    claim: Option<(u64, UnboundedSender<Key>)>,
    next_claim: u64,
    /// What Esc cancels.
    turn: Option<CancellationToken>,
    /// Typed while the turn ran: the next prompt starts with it.
    typed_ahead: String,
    /// What Shift-Tab does while a turn runs (the REPL: the next permission mode).
    on_back_tab: Option<Arc<dyn Fn() + Send + Sync>>,
}

/// The REPL's keyboard between prompts.
#[derive(Clone, Default)]
pub(super) struct Keys {
    state: Arc<Mutex<State>>,
}

impl Keys {
    /// Reads keys until the guard is dropped (nested guards share one reader). `turn` is what
    /// Esc cancels.
    pub(super) fn reading(&self, turn: Option<CancellationToken>) -> Reading {
        let Ok(mut s) = self.state.lock() else {
            return Reading(None);
        };
        if turn.is_some() {
            s.turn = turn;
        }
        s.readers += 1;
        if s.thread.is_none() {
            s.saved = enter_key_mode();
            let stop = Arc::new(AtomicBool::new(false));
            let state = self.state.clone();
            let flag = stop.clone();
            let handle = std::thread::spawn(move || read_loop(&state, &flag));
            s.thread = Some((stop, handle));
        }
        Reading(Some(self.clone()))
    }

    /// Whether keys can be read at all (stdin is a terminal).
    pub(super) fn available() -> bool {
        use std::io::IsTerminal;
        std::io::stdin().is_terminal()
    }

    /// Sends every key to the returned receiver until the claim is dropped (then the receiver
    /// is closed, so a thread waiting on it ends).
    pub(super) fn claim(&self) -> (Claim, UnboundedReceiver<Key>) {
        let (tx, rx) = unbounded_channel();
        let id = match self.state.lock() {
            Ok(mut s) => {
                s.next_claim += 1;
                let id = s.next_claim;
                s.claim = Some((id, tx));
                id
            }
            Err(_) => 0,
        };
        (
            Claim {
                keys: self.clone(),
                id,
            },
            rx,
        )
    }

    /// Runs `f` when Shift-Tab is pressed while a turn runs (and no question has the keys).
    pub(super) fn on_back_tab(&self, f: Arc<dyn Fn() + Send + Sync>) {
        if let Ok(mut s) = self.state.lock() {
            s.on_back_tab = Some(f);
        }
    }

    /// What was typed while the last turn ran.
    pub(super) fn take_typed_ahead(&self) -> String {
        self.state
            .lock()
            .map(|mut s| std::mem::take(&mut s.typed_ahead))
            .unwrap_or_default()
    }

    /// Cancels the running turn (Esc); false when no turn is running.
    pub(super) fn cancel_turn(&self) -> bool {
        match self.state.lock() {
            Ok(s) => match &s.turn {
                Some(turn) => {
                    turn.cancel();
                    true
                }
                None => false,
            },
            Err(_) => false,
        }
    }

    fn release(&self) {
        let thread = match self.state.lock() {
            Ok(mut s) => {
                s.readers = s.readers.saturating_sub(1);
                if s.readers > 0 {
                    return;
                }
                s.turn = None;
                s.thread.take()
            }
            Err(_) => None,
        };
        if let Some((stop, handle)) = thread {
            stop.store(true, Ordering::SeqCst);
            let _ = handle.join();
        }
        if let Ok(mut s) = self.state.lock()
            && let Some(saved) = s.saved.take()
        {
            let _ = tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &saved);
        }
    }
}

/// Reading keys until dropped; dropping joins the reader thread.
pub(super) struct Reading(Option<Keys>);

impl Drop for Reading {
    fn drop(&mut self) {
        if let Some(keys) = self.0.take() {
            keys.release();
        }
    }
}

/// A question's hold on the keys.
pub(super) struct Claim {
    keys: Keys,
    id: u64,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Ok(mut s) = self.keys.state.lock()
            && s.claim.as_ref().is_some_and(|(id, _)| *id == self.id)
        {
            s.claim = None;
        }
    }
}

/// Non-canonical input without echo; signals kept. `None` when stdin is not a terminal.
fn enter_key_mode() -> Option<Termios> {
    let stdin = std::io::stdin();
    let saved = tcgetattr(stdin.as_fd()).ok()?;
    let mut raw = saved.clone();
    raw.local_flags
        .remove(LocalFlags::ICANON | LocalFlags::ECHO);
    tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw).ok()?;
    Some(saved)
}

fn read_loop(state: &Mutex<State>, stop: &AtomicBool) {
    let stdin = std::io::stdin();
    let mut buf = [0u8; 256];
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(50u16)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        }
        let n = match nix::unistd::read(stdin.as_fd(), &mut buf) {
            Ok(0) => {
                // End of input: nothing more will come.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Ok(n) => n,
            Err(_) => continue,
        };
        let Ok(mut s) = state.lock() else { return };
        for key in decode(&buf[..n]) {
            if let Some((_, tx)) = &s.claim {
                let _ = tx.send(key);
                continue;
            }
            match key {
                Key::Esc => {
                    if let Some(turn) = &s.turn {
                        turn.cancel();
                    }
                }
                Key::BackTab => {
                    if let Some(f) = s.on_back_tab.clone() {
                        f();
                    }
                }
                Key::Char(c) => s.typed_ahead.push(c),
                Key::Backspace => {
                    s.typed_ahead.pop();
                }
                _ => {}
            }
        }
    }
}

/// A line typed at a question: shown as it is typed, Backspace erases.
#[derive(Default)]
pub(super) struct LineInput {
    text: String,
}

/// What one key did to a [`LineInput`].
#[derive(Debug, PartialEq, Eq)]
pub(super) enum LineStep {
    /// Write this to the screen (the echo) and read on.
    Echo(String),
    /// The line, Enter pressed.
    Done(String),
    /// Esc, Ctrl-C or Ctrl-D.
    Cancel,
}

impl LineInput {
    pub(super) fn feed(&mut self, key: Key) -> LineStep {
        match key {
            Key::Char(c) => {
                self.text.push(c);
                LineStep::Echo(crate::render::sanitize(&c.to_string()))
            }
            Key::Backspace => match self.text.pop() {
                Some(_) => LineStep::Echo("\x08 \x08".into()),
                None => LineStep::Echo(String::new()),
            },
            Key::Enter => LineStep::Done(std::mem::take(&mut self.text)),
            Key::Esc | Key::CtrlC | Key::Eof => LineStep::Cancel,
            Key::Up | Key::Down | Key::BackTab | Key::Other => LineStep::Echo(String::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_become_keys() {
        assert_eq!(
            decode(b"1\x1b[A\x1b[B\r\x7f"),
            [
                Key::Char('1'),
                Key::Up,
                Key::Down,
                Key::Enter,
                Key::Backspace
            ]
        );
        assert_eq!(decode(b"\x1b"), [Key::Esc]);
        assert_eq!(decode("é\x03".as_bytes()), [Key::Char('é'), Key::CtrlC]);
        assert_eq!(decode(b"\x1bOB"), [Key::Down]);
        assert_eq!(decode(b"\x1b[Z"), [Key::BackTab]);
    }

    #[test]
    fn a_line_is_edited_and_ended() {
        let mut line = LineInput::default();
        for k in decode(b"noo") {
            line.feed(k);
        }
        assert_eq!(
            line.feed(Key::Backspace),
            LineStep::Echo("\x08 \x08".into())
        );
        assert_eq!(line.feed(Key::Enter), LineStep::Done("no".into()));
        assert_eq!(line.feed(Key::Esc), LineStep::Cancel);
    }
}
