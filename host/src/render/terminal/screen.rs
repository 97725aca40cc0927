//! The terminal as a shared resource: the streamed output (stdout), a spinner (stderr), and
//! questions asked in between (approvals), which must never draw over one another.
//!
//! Every write goes through one lock. The spinner only draws when the cursor is at the start of
//! an empty line, erases itself before anything else is written, and stays away while a
//! question is on screen ([`Screen::pause`]). A live block (the last lines of a running
//! command, [`Screen::live`]) behaves the same way: drawn under the call's line, replaced as it
//! changes, erased before anything else is written, never counted as a write.
//!
//! While the line editor reads a prompt ([`Screen::above_prompt`]), output is background news
//! (a server that failed): it goes, whole lines at a time, to a printer that draws it above the
//! prompt and redraws the prompt with what was being typed.

use std::{
    io::Write,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// A streaming spinner stays away while output flows, and comes back after this long without
/// any: the stream has stalled.
pub const STALL: Duration = Duration::from_millis(1000);

/// What the spinner shows.
struct Spinner {
    label: String,
    since: Instant,
    /// Over a stream of text: drawn only after [`STALL`] without output, and then also after the
    /// text of an unfinished line (when it fits), so a stall mid-sentence shows too.
    streaming: bool,
}

/// Where the spinner is drawn now.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Drawn {
    No,
    /// On a line of its own (the cursor was at the start of an empty line).
    Line,
    /// After the text of the current line; the cursor was moved back to the text's end.
    Trailing,
}

type Sink = Box<dyn Write + Send>;

/// Where output goes while the prompt is read: it prints the text above the prompt line.
pub type PromptPrinter = Box<dyn FnMut(String) + Send>;

struct State {
    out: Sink,
    err: Sink,
    /// Draw a spinner at all (a terminal on stderr, colour on).
    spinner_enabled: bool,
    spinner: Option<Spinner>,
    progress: Option<String>,
    /// The spinner is on screen now, and where.
    drawn: Drawn,
    /// Questions pending: no spinner until they are answered.
    paused: usize,
    frame: usize,
    /// The last output line has text and no newline yet.
    mid_line: bool,
    /// The cursor's column on that line (escape sequences not counted).
    column: usize,
    /// Writes that reached the terminal (output and questions; not the spinner): a printer
    /// compares it to know whether a line it wrote is still the last one.
    writes: u64,
    /// When output was last written.
    last_out: Instant,
    /// The last long tool output shown folded, for Ctrl-O in the REPL.
    folded: Option<String>,
    /// The model's last thinking, for `/thinking` when it was shown folded.
    thought: Option<String>,
    /// Output written while a question is on screen, shown once it is answered: a notice
    /// printed under a menu would break the menu's redraw and push it off screen.
    held: String,
    /// Rows of the live block on screen now (0: none), the cursor at the start of the line
    /// under it.
    live_rows: usize,
    /// The prompt is being read: output goes here instead, whole lines at a time.
    above_prompt: Option<PromptPrinter>,
    /// Output for `above_prompt` that does not end a line yet.
    prompt_partial: String,
    /// A key hint at the end of the spinner's line (`esc to interrupt` in the REPL).
    hint: Option<String>,
}

/// The shared terminal.
pub struct Screen {
    state: Mutex<State>,
    columns: usize,
    /// Terminal height in rows (unknown: `usize::MAX`): the cursor cannot go up further than
    /// the screen, so nothing taller is redrawn in place.
    height: usize,
    alive: AtomicBool,
    /// Thinking streams in full (`/thinking`) instead of one folded line.
    thinking_shown: AtomicBool,
}

impl Screen {
    /// The real terminal. The spinner thread runs while the returned screen is alive.
    pub fn terminal(color: bool) -> Arc<Screen> {
        use std::io::IsTerminal;
        let spinner = color && std::io::stderr().is_terminal();
        let size = terminal_size::terminal_size();
        let columns = size
            .map(|(w, _)| usize::from(w.0))
            .filter(|w| *w > 0)
            .unwrap_or(80);
        let mut screen = Screen::new(
            Box::new(std::io::stdout()),
            Box::new(std::io::stderr()),
            spinner,
            columns,
        );
        if let Some((_, h)) = size.filter(|(_, h)| h.0 > 0) {
            screen.height = usize::from(h.0);
        }
        let screen = Arc::new(screen);
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
                drawn: Drawn::No,
                paused: 0,
                frame: 0,
                mid_line: false,
                column: 0,
                writes: 0,
                last_out: Instant::now(),
                folded: None,
                thought: None,
                held: String::new(),
                live_rows: 0,
                above_prompt: None,
                prompt_partial: String::new(),
                hint: None,
            }),
            columns: columns.max(1),
            height: usize::MAX,
            alive: AtomicBool::new(true),
            thinking_shown: AtomicBool::new(false),
        }
    }

    /// Terminal width in columns.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// The same screen, `rows` high (tests; the real one asks the terminal).
    #[cfg(test)]
    pub fn with_height(mut self, rows: usize) -> Self {
        self.height = rows;
        self
    }

    /// Terminal height in rows (`usize::MAX` when unknown).
    pub fn height(&self) -> usize {
        self.height
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
        if s.above_prompt.is_some() {
            above_prompt(&mut s, text);
            return;
        }
        write_out(&mut s, text, self.columns);
    }

    /// Shows `lines` under what was written last (the line of a running call), in place of the
    /// block shown before; an empty list erases it. Each line must fit on one row. Nothing is
    /// drawn mid-line, while a question is on screen, or while the prompt is read; the next
    /// output erases the block first, and it does not count as a write ([`Screen::writes`]).
    pub fn live(&self, lines: &[String]) {
        let Ok(mut s) = self.state.lock() else { return };
        erase_live(&mut s);
        if lines.is_empty() || s.paused > 0 || s.mid_line || s.above_prompt.is_some() {
            return;
        }
        erase_spinner(&mut s);
        let mut block = String::new();
        for line in lines {
            block.push_str(line);
            block.push('\n');
        }
        let _ = s.out.write_all(block.as_bytes());
        let _ = s.out.flush();
        s.live_rows = lines.len();
    }

    /// From now until the returned guard is dropped the line editor reads a prompt: output goes
    /// to `printer`, a complete line at a time (the rest when the guard is dropped).
    pub fn above_prompt(self: &Arc<Self>, printer: PromptPrinter) -> Prompting {
        if let Ok(mut s) = self.state.lock() {
            erase_spinner(&mut s);
            erase_live(&mut s);
            s.above_prompt = Some(printer);
        }
        Prompting(self.clone())
    }

    /// Ends the spinner's line with `hint` (a key the person can press while it runs), when it
    /// fits in the width. The REPL sets `esc to interrupt`, the words Claude Code's spinner
    /// (`(esc to interrupt)`, anthropics/claude-code#16905) and Codex's status line
    /// (`Working (… • esc to interrupt)`) use; only set it where the key really works.
    pub fn hint(&self, hint: Option<String>) {
        if let Ok(mut s) = self.state.lock() {
            s.hint = hint;
        }
    }

    /// Shows `label` (with elapsed seconds) in the spinner; `None` hides it.
    pub fn spin(&self, label: Option<String>) {
        let Ok(mut s) = self.state.lock() else { return };
        s.spinner = label.map(|label| Spinner {
            label,
            since: Instant::now(),
            streaming: false,
        });
        s.progress = None;
        if s.spinner.is_none() {
            erase_spinner(&mut s);
        }
    }

    /// A spinner over streamed text with `note` (the rate): it shows only when the stream
    /// stalls ([`STALL`]), on its own line or after an unfinished one. Started once per stream;
    /// later calls only change the note.
    pub fn stream(&self, label: &str, note: Option<String>) {
        let Ok(mut s) = self.state.lock() else { return };
        match &mut s.spinner {
            Some(sp) if sp.streaming => label.clone_into(&mut sp.label),
            _ => {
                s.spinner = Some(Spinner {
                    label: label.to_string(),
                    since: Instant::now(),
                    streaming: true,
                });
            }
        }
        if note.is_some() {
            s.progress = note;
        }
    }

    /// Whether the spinner is one over streamed text ([`Screen::stream`]).
    pub fn streaming(&self) -> bool {
        self.state
            .lock()
            .is_ok_and(|s| s.spinner.as_ref().is_some_and(|sp| sp.streaming))
    }

    /// How many writes reached the terminal so far (output and questions, not the spinner).
    pub fn writes(&self) -> u64 {
        self.state.lock().map_or(0, |s| s.writes)
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
            erase_live(&mut s);
            s.paused += 1;
        }
        Paused(self.clone())
    }

    /// Writes a question on stderr (the spinner is paused by the caller).
    pub fn ask(&self, text: &str) {
        let Ok(mut s) = self.state.lock() else { return };
        erase_live(&mut s);
        if s.mid_line {
            let _ = s.out.write_all(b"\n");
            let _ = s.out.flush();
            s.mid_line = false;
        }
        let _ = s.err.write_all(text.as_bytes());
        let _ = s.err.flush();
        s.writes += 1;
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
        if !s.spinner_enabled || s.paused > 0 || s.above_prompt.is_some() {
            return;
        }
        let Some(spinner) = &s.spinner else {
            return;
        };
        let frame = FRAMES[s.frame % FRAMES.len()];
        let progress = s.progress.as_deref();
        let (text, trailing) = if spinner.streaming {
            let idle = s.last_out.elapsed();
            if idle < STALL {
                return;
            }
            let rate = progress.map(|p| format!("{p} · ")).unwrap_or_default();
            let waiting = format!("{rate}waiting {:.1}s", idle.as_secs_f64());
            if s.mid_line {
                (format!(" {frame} {waiting}"), true)
            } else {
                (format!("{frame} {} · {waiting}", spinner.label), false)
            }
        } else {
            if s.mid_line {
                return;
            }
            let progress = progress.map(|p| format!(" · {p}")).unwrap_or_default();
            let elapsed = spinner.since.elapsed().as_secs_f64();
            (
                format!("{frame} {} {elapsed:.1}s{progress}", spinner.label),
                false,
            )
        };
        // The key hint goes on a spinner line of its own, when it fits (never after text).
        let text = match &s.hint {
            Some(hint) if !trailing && text.width() + hint.width() + 3 < self.columns => {
                format!("{text} · {hint}")
            }
            _ => text,
        };
        let line = if trailing {
            // After the text, and back to its end: only when it fits on the line (a wrap would
            // move the text's end), and never at column 0 (a line exactly full is ambiguous).
            let width = text.width();
            if s.column == 0 || s.column + width + 1 >= self.columns {
                return;
            }
            let erase = if s.drawn == Drawn::Trailing {
                "\x1b[K"
            } else {
                ""
            };
            format!("{erase}\x1b[2m{text}\x1b[0m\x1b[{width}D")
        } else {
            format!("\r\x1b[2K{text}")
        };
        s.frame += 1;
        let _ = s.err.write_all(line.as_bytes());
        let _ = s.err.flush();
        s.drawn = if trailing {
            Drawn::Trailing
        } else {
            Drawn::Line
        };
    }

    /// Stops the spinner for good.
    pub fn close(&self) {
        self.alive.store(false, Ordering::SeqCst);
        if let Ok(mut s) = self.state.lock() {
            erase_spinner(&mut s);
            erase_live(&mut s);
            s.spinner = None;
        }
    }
}

fn write_out(s: &mut State, text: &str, columns: usize) {
    erase_spinner(s);
    erase_live(s);
    let _ = s.out.write_all(text.as_bytes());
    let _ = s.out.flush();
    if let Some(last) = text.chars().last() {
        s.mid_line = last != '\n';
    }
    s.column = column_after(s.column, text, columns);
    s.writes += 1;
    s.last_out = Instant::now();
}

/// The cursor's column after `text` is written from `column`: escape sequences take no room,
/// a newline or carriage return starts again at 0, a full line wraps.
fn column_after(column: usize, text: &str, columns: usize) -> usize {
    let tail = match text.rfind(['\n', '\r']) {
        Some(i) => &text[i + 1..],
        None => text,
    };
    let start = if tail.len() == text.len() { column } else { 0 };
    let mut width = 0;
    let mut chars = tail.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: parameters up to a final byte in @..~.
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        width += c.width().unwrap_or(0);
    }
    (start + width) % columns.max(1)
}

fn erase_spinner(s: &mut State) {
    let erase: &[u8] = match s.drawn {
        Drawn::No => return,
        Drawn::Line => b"\r\x1b[2K",
        Drawn::Trailing => b"\x1b[K",
    };
    let _ = s.err.write_all(erase);
    let _ = s.err.flush();
    s.drawn = Drawn::No;
}

/// Erases the live block: up to its first row, and everything from there down.
fn erase_live(s: &mut State) {
    if s.live_rows == 0 {
        return;
    }
    erase_spinner(s);
    let erase = format!("\x1b[{}A\r\x1b[J", s.live_rows);
    let _ = s.out.write_all(erase.as_bytes());
    let _ = s.out.flush();
    s.live_rows = 0;
}

/// Output while the prompt is read: each complete line goes to the printer above the prompt
/// (one call for all the lines `text` completes); an unfinished line waits for its end.
fn above_prompt(s: &mut State, text: &str) {
    s.prompt_partial.push_str(text);
    let Some(end) = s.prompt_partial.rfind('\n') else {
        return;
    };
    let rest = s.prompt_partial.split_off(end + 1);
    let lines = std::mem::replace(&mut s.prompt_partial, rest);
    if let Some(print) = s.above_prompt.as_mut() {
        print(lines);
    }
    s.writes += 1;
}

/// The prompt is being read until this is dropped ([`Screen::above_prompt`]).
pub struct Prompting(Arc<Screen>);

impl Drop for Prompting {
    fn drop(&mut self) {
        if let Ok(mut s) = self.0.state.lock() {
            s.above_prompt = None;
            let partial = std::mem::take(&mut s.prompt_partial);
            if !partial.is_empty() {
                write_out(&mut s, &partial, self.0.columns);
            }
        }
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
                write_out(&mut s, &held, self.0.columns);
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
#[path = "screen_tests.rs"]
mod tests;
