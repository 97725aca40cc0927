//! The terminal as a shared resource: the streamed output (stdout), a spinner (stderr), and
//! questions asked in between (approvals), which must never draw over one another.
//!
//! Every write goes through one lock. The spinner only draws when the cursor is at the start of
//! an empty line, erases itself before anything else is written, and stays away while a
//! question is on screen ([`Screen::pause`]).

use std::{
    io::Write,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

type Sink = Box<dyn Write + Send>;

struct State {
    out: Sink,
    err: Sink,
    /// Draw a spinner at all (a terminal on stderr, colour on).
    spinner_enabled: bool,
    spinner: Option<(String, Instant)>,
    progress: Option<String>,
    /// The spinner's line is on screen now.
    drawn: bool,
    /// Questions pending: no spinner until they are answered.
    paused: usize,
    frame: usize,
    /// The last output line has text and no newline yet.
    mid_line: bool,
    /// The last long tool output shown folded, for Ctrl-O in the REPL.
    folded: Option<String>,
    /// The model's last thinking, for `/thinking` when it was shown folded.
    thought: Option<String>,
    /// Output written while a question is on screen, shown once it is answered: a notice
    /// printed under a menu would break the menu's redraw and push it off screen.
    held: String,
}

/// The shared terminal.
pub struct Screen {
    state: Mutex<State>,
    columns: usize,
    alive: AtomicBool,
    /// Thinking streams in full (`/thinking`) instead of one folded line.
    thinking_shown: AtomicBool,
}

impl Screen {
    /// The real terminal. The spinner thread runs while the returned screen is alive.
    pub fn terminal(color: bool) -> Arc<Screen> {
        use std::io::IsTerminal;
        let spinner = color && std::io::stderr().is_terminal();
        let columns = terminal_size::terminal_size()
            .map(|(w, _)| usize::from(w.0))
            .filter(|w| *w > 0)
            .unwrap_or(80);
        let screen = Arc::new(Screen::new(
            Box::new(std::io::stdout()),
            Box::new(std::io::stderr()),
            spinner,
            columns,
        ));
        if spinner {
            let weak = Arc::downgrade(&screen);
            std::thread::spawn(move || {
                while let Some(screen) = weak.upgrade() {
                    if !screen.alive.load(Ordering::SeqCst) {
                        break;
                    }
                    screen.tick();
                    drop(screen);
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
        screen
    }

    /// A screen over the given writers (tests capture what would be shown).
    pub fn new(out: Sink, err: Sink, spinner_enabled: bool, columns: usize) -> Screen {
        Screen {
            state: Mutex::new(State {
                out,
                err,
                spinner_enabled,
                spinner: None,
                progress: None,
                drawn: false,
                paused: 0,
                frame: 0,
                mid_line: false,
                folded: None,
                thought: None,
                held: String::new(),
            }),
            columns: columns.max(1),
            alive: AtomicBool::new(true),
            thinking_shown: AtomicBool::new(false),
        }
    }

    /// Terminal width in columns.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Whether the cursor is after text on the current line.
    pub fn mid_line(&self) -> bool {
        self.state.lock().map(|s| s.mid_line).unwrap_or(false)
    }

    /// Writes `text` to the output, erasing the spinner first.
    pub fn write(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let Ok(mut s) = self.state.lock() else { return };
        if s.paused > 0 {
            s.held.push_str(text);
            return;
        }
        write_out(&mut s, text);
    }

    /// Shows `label` (with elapsed seconds) in the spinner; `None` hides it.
    pub fn spin(&self, label: Option<String>) {
        let Ok(mut s) = self.state.lock() else { return };
        s.spinner = label.map(|l| (l, Instant::now()));
        s.progress = None;
        if s.spinner.is_none() {
            erase_spinner(&mut s);
        }
    }

    /// Adds a progress note to the spinner.
    pub fn progress(&self, note: String) {
        if let Ok(mut s) = self.state.lock() {
            s.progress = Some(note);
        }
    }

    /// Hides the spinner until the guard is dropped: a question is being asked.
    pub fn pause(self: &Arc<Self>) -> Paused {
        if let Ok(mut s) = self.state.lock() {
            erase_spinner(&mut s);
            s.paused += 1;
        }
        Paused(self.clone())
    }

    /// Writes a question on stderr (the spinner is paused by the caller).
    pub fn ask(&self, text: &str) {
        let Ok(mut s) = self.state.lock() else { return };
        if s.mid_line {
            let _ = s.out.write_all(b"\n");
            let _ = s.out.flush();
            s.mid_line = false;
        }
        let _ = s.err.write_all(text.as_bytes());
        let _ = s.err.flush();
    }

    /// Keeps `output` for a later "expand".
    pub fn fold(&self, output: String) {
        if let Ok(mut s) = self.state.lock() {
            s.folded = Some(output);
        }
    }

    /// The last folded output.
    pub fn folded(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.folded.clone())
    }

    /// Whether the model's thinking is shown in full (`/thinking` toggles it; folded by default).
    pub fn shows_thinking(&self) -> bool {
        self.thinking_shown.load(Ordering::SeqCst)
    }

    /// Shows thinking in full from now on (`true`) or folds it to one line.
    pub fn show_thinking(&self, on: bool) {
        self.thinking_shown.store(on, Ordering::SeqCst);
    }

    /// Keeps the model's last thinking for `/thinking`.
    pub fn keep_thought(&self, text: String) {
        if let Ok(mut s) = self.state.lock() {
            s.thought = Some(text);
        }
    }

    /// The model's last thinking.
    pub fn thought(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.thought.clone())
    }

    /// One spinner frame.
    fn tick(&self) {
        let Ok(mut s) = self.state.lock() else { return };
        if !s.spinner_enabled || s.paused > 0 || s.mid_line {
            return;
        }
        let Some((label, since)) = &s.spinner else {
            return;
        };
        let progress = s
            .progress
            .as_deref()
            .map(|p| format!(" · {p}"))
            .unwrap_or_default();
        let line = format!(
            "\r\x1b[2K{} {label} {:.1}s{progress}",
            FRAMES[s.frame % FRAMES.len()],
            since.elapsed().as_secs_f64()
        );
        s.frame += 1;
        let _ = s.err.write_all(line.as_bytes());
        let _ = s.err.flush();
        s.drawn = true;
    }

    /// Stops the spinner for good.
    pub fn close(&self) {
        self.alive.store(false, Ordering::SeqCst);
        if let Ok(mut s) = self.state.lock() {
            erase_spinner(&mut s);
            s.spinner = None;
        }
    }
}

fn write_out(s: &mut State, text: &str) {
    erase_spinner(s);
    let _ = s.out.write_all(text.as_bytes());
    let _ = s.out.flush();
    if let Some(last) = text.chars().last() {
        s.mid_line = last != '\n';
    }
}

fn erase_spinner(s: &mut State) {
    if s.drawn {
        let _ = s.err.write_all(b"\r\x1b[2K");
        let _ = s.err.flush();
        s.drawn = false;
    }
}

/// Resumes the spinner when dropped.
pub struct Paused(Arc<Screen>);

impl Drop for Paused {
    fn drop(&mut self) {
        if let Ok(mut s) = self.0.state.lock() {
            s.paused = s.paused.saturating_sub(1);
            if s.paused == 0 && !s.held.is_empty() {
                let held = std::mem::take(&mut s.held);
                write_out(&mut s, &held);
            }
        }
    }
}

/// A writer into shared memory, for tests.
#[cfg(test)]
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

#[cfg(test)]
impl Captured {
    /// Everything written so far.
    pub fn text(&self) -> String {
        self.0
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

#[cfg(test)]
impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut b) = self.0.lock() {
            b.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured() -> (Arc<Screen>, Captured, Captured) {
        let (out, err) = (Captured::default(), Captured::default());
        let screen = Arc::new(Screen::new(
            Box::new(out.clone()),
            Box::new(err.clone()),
            true,
            80,
        ));
        (screen, out, err)
    }

    #[test]
    fn the_spinner_stays_away_from_text_and_questions() {
        let (screen, out, err) = captured();
        screen.spin(Some("fs__edit_file".into()));
        screen.tick();
        assert!(err.text().contains("fs__edit_file"));
        // A question pauses it: ticks draw nothing, and it was erased first.
        let before = err.text().len();
        let paused = screen.pause();
        assert!(err.text()[before..].contains("\r\x1b[2K"));
        screen.ask("Allow? [y]es / [a]lways / [n]o, tell the model why ");
        let asked = err.text().len();
        screen.tick();
        screen.tick();
        assert_eq!(
            err.text().len(),
            asked,
            "the spinner drew over the question"
        );
        // Output written meanwhile waits for the answer.
        screen.write("notice\n");
        assert_eq!(out.text(), "");
        drop(paused);
        assert_eq!(out.text(), "notice\n");
        screen.tick();
        assert!(err.text().len() > asked, "resumed after the answer");
        // Never on a line that has text.
        screen.spin(None);
        screen.write("partial");
        screen.spin(Some("x".into()));
        let len = err.text().len();
        screen.tick();
        assert_eq!(err.text().len(), len);
        assert_eq!(out.text(), "notice\npartial");
    }
}
