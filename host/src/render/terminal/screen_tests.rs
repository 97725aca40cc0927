//! The screen's rules, on captured writers: the spinner, the live block, the prompt.

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

/// The stream last wrote two seconds ago.
fn stall(screen: &Screen) {
    if let Ok(mut s) = screen.state.lock()
        && let Some(then) = Instant::now().checked_sub(Duration::from_secs(2))
    {
        s.last_out = then;
    }
}

/// The spinner's writes with the seconds masked (they depend on the clock).
fn masked(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() && text.contains("waiting") {
            // `2.0s` → `N.Ns`; other digits (escape parameters) are kept.
            let mut num = c.to_string();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit() || **d == '.') {
                num.push(*d);
                chars.next();
            }
            if chars.peek() == Some(&'s') {
                out.push_str("N.N");
            } else {
                out.push_str(&num);
            }
            continue;
        }
        out.push(c);
    }
    out.replace('\x1b', "⟨ESC⟩")
}

#[test]
fn a_stalled_stream_shows_the_spinner_after_its_text_or_on_a_line_of_its_own() {
    let (screen, out, err) = captured();
    screen.stream("responding", Some("~42 tok/s".into()));
    screen.write("The answer is");
    screen.tick();
    assert_eq!(err.text(), "", "no spinner while the text flows");
    // Stalled mid-line: after the text, the cursor moved back to the text's end.
    stall(&screen);
    screen.tick();
    let trailing = err.text();
    assert!(
        trailing.starts_with("\x1b[2m ⠋ ~42 tok/s · waiting 2."),
        "{trailing:?}"
    );
    let width = " ⠋ ~42 tok/s · waiting 2.0s".width();
    assert!(
        trailing.ends_with(&format!("\x1b[{width}D")),
        "{trailing:?}"
    );
    // The next text erases it (to the end of the line) before it is written.
    screen.write(" 42.\n");
    assert!(err.text().ends_with("\x1b[K"), "{:?}", err.text());
    assert_eq!(out.text(), "The answer is 42.\n");
    // Stalled at the start of a line: a line of its own, with the label.
    stall(&screen);
    screen.tick();
    let line = err.text()[trailing.len() + 3..].to_string();
    assert!(
        line.starts_with("\r\x1b[2K⠙ responding · ~42 tok/s · waiting 2."),
        "{line:?}"
    );
    // A line too full to hold it: no spinner after it.
    screen.write(&"x".repeat(60));
    stall(&screen);
    let before = err.text().len();
    screen.tick();
    assert_eq!(err.text().len(), before, "drawn past the line's end");
    insta::assert_snapshot!(masked(&err.text()));
}

#[test]
fn a_live_block_is_drawn_only_on_an_empty_line_and_erased_before_anything_else() {
    let (screen, out, _err) = captured();
    let lines = ["    a".to_string(), "    b".to_string()];
    screen.write("⏺ call\n");
    let writes = screen.writes();
    screen.live(&lines);
    assert_eq!(out.text(), "⏺ call\n    a\n    b\n");
    assert_eq!(screen.writes(), writes, "the block is not a write");
    // Replaced in place: up over its two rows, erased, drawn again.
    screen.live(&lines[..1]);
    assert!(
        out.text().ends_with("    b\n\x1b[2A\r\x1b[J    a\n"),
        "{:?}",
        out.text()
    );
    // A question erases it, and nothing is drawn while it is on screen.
    let paused = screen.pause();
    assert!(out.text().ends_with("\x1b[1A\r\x1b[J"), "{:?}", out.text());
    let before = out.text().len();
    screen.live(&lines);
    assert_eq!(out.text().len(), before, "drawn under a question");
    drop(paused);
    // Output erases it first; mid-line nothing is drawn.
    screen.live(&lines);
    screen.write("partial");
    assert!(
        out.text().ends_with("\x1b[2A\r\x1b[Jpartial"),
        "{:?}",
        out.text()
    );
    let before = out.text().len();
    screen.live(&lines);
    assert_eq!(out.text().len(), before, "drawn after unfinished text");
}

#[test]
fn while_the_prompt_is_read_output_goes_above_it_a_whole_line_at_a_time() {
    let (screen, out, _err) = captured();
    let printed = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = printed.clone();
    let prompting = screen.above_prompt(Box::new(move |t| sink.lock().unwrap().push(t)));
    screen.write("[server a ");
    screen.write("failed]\nnext li");
    screen.live(&["    x".to_string()]);
    assert_eq!(*printed.lock().unwrap(), ["[server a failed]\n"]);
    assert_eq!(out.text(), "", "written into the line being typed");
    // The prompt is done: the rest is written where output goes again.
    drop(prompting);
    assert_eq!(out.text(), "next li");
    screen.write("ne\n");
    assert_eq!(printed.lock().unwrap().len(), 1);
    assert_eq!(out.text(), "next line\n");
}

#[test]
fn the_column_ignores_escapes_and_restarts_after_a_newline() {
    assert_eq!(column_after(0, "\x1b[1mab\x1b[0m", 80), 2);
    assert_eq!(column_after(5, "cd", 80), 7);
    assert_eq!(column_after(5, "x\nabc", 80), 3);
    assert_eq!(column_after(0, &"y".repeat(85), 80), 5);
    assert_eq!(column_after(3, "\x1b[2A\r\x1b[Jé", 80), 1);
}

#[test]
fn the_key_hint_ends_a_spinner_line_of_its_own_when_it_fits() {
    let (screen, _, err) = captured();
    screen.hint(Some("esc to interrupt".into()));
    screen.spin(Some("thinking".into()));
    screen.tick();
    assert!(
        err.text().ends_with("s · esc to interrupt"),
        "{:?}",
        err.text()
    );
    // Never after text of a stalled stream: it would push the spinner off the line.
    screen.spin(None);
    screen.write("partial");
    screen.stream("responding", None);
    stall(&screen);
    let before = err.text().len();
    screen.tick();
    let trailing = err.text()[before..].to_string();
    assert!(trailing.contains("waiting"), "{trailing:?}");
    assert!(!trailing.contains("esc"), "{trailing:?}");
    // A label too long for the hint: the line goes without it.
    screen.write("\n");
    screen.spin(Some("x".repeat(70)));
    let before = err.text().len();
    screen.tick();
    assert!(!err.text()[before..].contains("esc"), "{:?}", err.text());
}
