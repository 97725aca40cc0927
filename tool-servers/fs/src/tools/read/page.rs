//! A page of `read_file`: numbered lines rendered within the content and host budgets, and the
//! notes that say where the page stopped and how to go on (issue 26 item 7: what the model is
//! told must be what it was shown).

use std::io::BufRead;

use super::super::output::ReadOutput;

/// Why a read stopped before the end of the file.
pub(super) enum Stop {
    /// Reached the end of the file.
    Eof,
    /// Shown `limit` lines; more follow.
    Limit,
    /// The per-call byte budget ran out; more follows.
    Bytes,
}

/// Characters of a result kept free for the notes [`finish`] appends (the continuation note, a
/// cut line's note), so a page that fills the host's cap still fits with them.
pub(super) const NOTE_RESERVE: usize = 512;

/// The budgets one read works within: file content (`--max-read-bytes`) and the rendered text
/// (numbered lines), which the host's cap on what it shows the model bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Bytes of file content.
    pub(crate) content: usize,
    /// Bytes (so at most as many characters) of rendered lines, when the host sent a cap.
    pub(crate) rendered: Option<usize>,
}

impl Budget {
    /// The server's content limit and, from the host's `max_output_chars`, room for the rendered
    /// page: the host cuts a longer result in the middle, which would hide lines the
    /// continuation note claims were shown (issue 26, item 7).
    pub(crate) fn new(max_read_bytes: usize, host_max_chars: Option<u64>) -> Self {
        Self {
            content: max_read_bytes,
            rendered: host_max_chars.map(|cap| {
                usize::try_from(cap)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(NOTE_RESERVE)
                    .max(64)
            }),
        }
    }
}

/// What [`render`] produced.
pub(super) struct Rendered {
    pub(super) text: String,
    pub(super) shown: u64,
    /// Lines in the file, when the read reached its end.
    pub(super) lines_before_offset: u64,
    pub(super) stop: Stop,
    pub(super) next_offset: Option<u64>,
    /// The single line shown was cut at the byte limit.
    pub(super) cut_line: bool,
    /// The rendered-text budget (the host's cap), not the content budget, ended the page.
    pub(super) host_cap_hit: bool,
}

/// Whether the text being rendered is known to be valid UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Utf8 {
    /// Validated as a whole before rendering (a file that fits the sniff window): its lines,
    /// split at newlines and cut at character boundaries, are valid too.
    Checked,
    /// Each line is validated as it is shown; invalid bytes become U+FFFD.
    Unchecked,
}

pub(super) fn render(
    reader: &mut impl BufRead,
    offset: u64,
    limit: Option<u64>,
    budget: Budget,
    size_hint: u64,
) -> std::io::Result<Rendered> {
    render_from(reader, offset, limit, budget, size_hint, Utf8::Unchecked)
}

pub(super) fn render_from(
    reader: &mut impl BufRead,
    offset: u64,
    limit: Option<u64>,
    budget: Budget,
    size_hint: u64,
    utf8: Utf8,
) -> std::io::Result<Rendered> {
    // Content plus ~8 bytes of line number per ~40-byte line: one allocation, no regrowth.
    let capacity = usize::try_from(size_hint)
        .unwrap_or(usize::MAX)
        .min(budget.content)
        .min(budget.rendered.unwrap_or(usize::MAX));
    // The page as bytes, each line pushed as the text it shows (so `page.len()` is the
    // text's length); made a `String` once at the end.
    let mut page = Vec::with_capacity(capacity + capacity / 4 + 64);
    let mut out = Rendered {
        text: String::new(),
        shown: 0,
        lines_before_offset: 0,
        stop: Stop::Eof,
        next_offset: None,
        cut_line: false,
        host_cap_hit: false,
    };
    let mut line_no = 1;
    let mut scratch = Vec::new();
    while line_no < offset {
        if read_line_capped(reader, 0, &mut scratch)? == 0 {
            out.lines_before_offset = line_no - 1;
            return Ok(out);
        }
        line_no += 1;
    }
    out.lines_before_offset = line_no - 1;
    let mut left = budget.content;
    let mut line = Vec::new();
    loop {
        if limit.is_some_and(|l| out.shown >= l) {
            if !reader.fill_buf()?.is_empty() {
                out.stop = Stop::Limit;
                out.next_offset = Some(line_no);
            }
            break;
        }
        line.clear();
        // Room for this line's content in the rendered page: what is left after its number,
        // its tab and its newline.
        let rendered_left = budget
            .rendered
            .map(|max| max.saturating_sub(page.len() + number_width(line_no) + 2));
        let room = rendered_left.map_or(left, |r| r.min(left));
        // A whole line that fits, already in the reader's buffer, is shown from there
        // (what `read_line_capped` would copy out first).
        let buffered = reader.fill_buf()?;
        if let Some(end) = memchr::memchr(b'\n', buffered).map(|i| i + 1)
            && end <= room
        {
            push_line(&mut page, line_no, &buffered[..end], utf8);
            reader.consume(end);
            left -= end;
            out.shown += 1;
            line_no += 1;
            continue;
        }
        let len = read_line_capped(reader, room, &mut line)?;
        if len == 0 {
            break;
        }
        if len > room {
            out.stop = Stop::Bytes;
            out.host_cap_hit = room < left;
            if out.shown == 0 {
                // One line longer than the whole budget: show its start rather than nothing.
                push_line(&mut page, line_no, &line, utf8);
                out.shown = 1;
                out.cut_line = true;
                line_no += 1;
                if !reader.fill_buf()?.is_empty() {
                    out.next_offset = Some(line_no);
                }
            } else {
                out.next_offset = Some(line_no);
            }
            break;
        }
        push_line(&mut page, line_no, &line, utf8);
        left -= len;
        out.shown += 1;
        line_no += 1;
    }
    // Every line went in as valid UTF-8 (checked, validated or made lossy), so this
    // validation of the whole page succeeds; the lossy fallback is never taken.
    out.text = String::from_utf8(page)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(out)
}

/// Characters of the number `push_line_number` writes (at least 6, like `cat -n`).
pub(super) fn number_width(line_no: u64) -> usize {
    (line_no.checked_ilog10().unwrap_or(0) as usize + 1).max(6)
}

/// The page: the text with its notes, and the facts `structuredContent` repeats.
pub(super) fn finish(total_bytes: u64, offset: u64, budget: Budget, r: Rendered) -> ReadOutput {
    let mut text = r.text;
    // The limit that ended the page, as the notes name it.
    let limit = match (r.host_cap_hit, budget.rendered) {
        (true, Some(chars)) => format!("{chars}-character limit per call, set by the host"),
        _ => format!("{}-byte limit per call", budget.content),
    };
    let last = offset + r.shown.saturating_sub(1);
    let truncated = matches!(r.stop, Stop::Bytes);
    if r.shown == 0 && offset > 1 {
        text.push_str(&format!(
            "[offset {offset} is past the end of the file: it has {} lines]\n",
            r.lines_before_offset
        ));
    } else if total_bytes == 0 && r.shown == 0 {
        text.push_str("[empty file]\n");
    }
    if r.cut_line {
        text.push_str(&format!(
            "\n[line {offset} is longer than the {limit} and was cut]\n"
        ));
    }
    match (&r.stop, r.next_offset) {
        (Stop::Bytes, Some(next)) => text.push_str(&format!(
            "\n[truncated: showed lines {offset}-{last} of a {total_bytes}-byte file \
             ({limit}); continue with offset={next}]\n"
        )),
        (Stop::Limit, Some(next)) => text.push_str(&format!(
            "\n[showed lines {offset}-{last}; more follow, continue with offset={next}]\n"
        )),
        _ => {}
    }
    ReadOutput {
        content: text,
        start_line: offset,
        lines_shown: r.shown,
        total_bytes,
        truncated,
        next_offset: r.next_offset,
        mime_type: None,
    }
}

/// `cat -n` layout; a trailing `\r\n` or `\n` is not part of the text shown.
pub(super) fn push_line(page: &mut Vec<u8>, line_no: u64, line: &[u8], utf8: Utf8) {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    push_line_number(page, line_no);
    match utf8 {
        Utf8::Checked => page.extend_from_slice(line),
        // Valid UTF-8 is the common case and validates several times faster than
        // the lossy path.
        Utf8::Unchecked => match std::str::from_utf8(line) {
            Ok(_) => page.extend_from_slice(line),
            Err(_) => page.extend_from_slice(String::from_utf8_lossy(line).as_bytes()),
        },
    }
    page.push(b'\n');
}

/// `{line_no:>6}\t` without the formatting machinery, which showed up in the
/// profile of every read (one call per line).
pub(super) fn push_line_number(page: &mut Vec<u8>, line_no: u64) {
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    let mut n = line_no;
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for _ in (digits.len() - start)..6 {
        page.push(b' ');
    }
    page.extend_from_slice(&digits[start..]);
    page.push(b'\t');
}

/// Reads one line (through its `\n`), keeping at most `cap` bytes of it in `out`
/// and returning its full length, so a 1 GB line never costs 1 GB of memory.
/// A kept prefix is cut back to a UTF-8 character boundary.
pub(super) fn read_line_capped(
    reader: &mut impl BufRead,
    cap: usize,
    out: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let room = cap.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let n = chunk.len();
        total += n;
        reader.consume(n);
        if done {
            break;
        }
    }
    if total > cap {
        // Drop a partial character at the cut.
        while !out.is_empty() && std::str::from_utf8(out).is_err_and(|e| e.error_len().is_none()) {
            out.pop();
        }
    }
    Ok(total)
}
