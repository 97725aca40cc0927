//! `read_file`: numbered text lines, bounded per call, never blocking; an image file (PNG,
//! JPEG, GIF, WebP by its bytes) as an MCP image block, bounded in size; other binary refused.

use std::io::{BufRead, BufReader, Read};

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock};
use schemars::JsonSchema;
use serde::Deserialize;
use tern_protocol::image::{self, ImageFormat};

use super::output::ReadOutput;
use super::{Context, failure, resolve, success};
use crate::deny::Deny;
use crate::resolve::Intent;

/// Bytes at the start of a file inspected to decide whether it is text
/// (the same window `git` and ripgrep use for their binary heuristics).
const SNIFF_BYTES: usize = 8 * 1024;

/// Parameters of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct ReadFileParams {
    /// The file to read: relative to the first root, or an absolute path inside a root.
    pub path: String,
    /// First line to show, counting from 1 (default 1). When a read is cut, its
    /// result gives the `next_offset` to continue from.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Maximum number of lines to show (default: as many as fit in the per-call byte limit).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Why a read stopped before the end of the file.
enum Stop {
    /// Reached the end of the file.
    Eof,
    /// Shown `limit` lines; more follow.
    Limit,
    /// The per-call byte budget ran out; more follows.
    Bytes,
}

/// Characters of a result kept free for the notes [`finish`] appends (the continuation note, a
/// cut line's note), so a page that fills the host's cap still fits with them.
const NOTE_RESERVE: usize = 512;

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

pub(crate) fn read_file(
    ctx: &Context,
    deny: &Deny,
    p: ReadFileParams,
    host_max_chars: Option<u64>,
) -> CallToolResult {
    const ACTION: &str = "read";
    let budget = Budget::new(ctx.limits.max_read_bytes, host_max_chars);
    let resolved = match resolve(&ctx.roots, ACTION, &p.path, Intent::Open) {
        Ok(r) => r,
        Err(result) => return result,
    };
    let (mut file, stat) = match resolved.open_file() {
        Ok(f) => f,
        Err(e) => return failure(ACTION, &p.path, e),
    };
    // Checked on the opened file's own metadata, so a hard link is caught too.
    if let Some(why) = deny.refusal(&ctx.roots, &p.path, resolved.path(), Some(&stat)) {
        return failure(ACTION, &p.path, why);
    }
    // The first bytes decide whether this is an image (never the name): an image is returned
    // as an MCP image block the model can look at, from disk even when an editor holds the
    // text of files (editors keep no image buffers).
    let total_bytes = u64::try_from(stat.st_size).unwrap_or(0);
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    if let Err(e) = (&mut file)
        .take(ImageFormat::SNIFF_LEN as u64)
        .read_to_end(&mut head)
    {
        return failure(ACTION, &p.path, e);
    }
    if let Some(format) = image::sniff(&head) {
        return read_image(
            file,
            head,
            format,
            total_bytes,
            &p,
            ctx.limits.max_image_bytes,
        );
    }
    if let Some(editor) = &ctx.editor {
        // Confined and checked on disk above; the text is the editor's (its buffer).
        drop(file);
        return match editor.read(resolved.path()) {
            Ok(text) => read_text(text, &p, budget),
            Err(e) => failure(ACTION, &p.path, e),
        };
    }
    // A small file is read up to the size fstat gave, which spares the read that
    // would only report the end of the file. A size of 0 may be a lie (procfs,
    // sysfs), so then the sniff window is read as usual. The image check's bytes are
    // already in `head`.
    let first = match total_bytes {
        0 => SNIFF_BYTES as u64,
        n => n.min(SNIFF_BYTES as u64),
    };
    let rest = first.saturating_sub(head.len() as u64);
    if let Err(e) = (&mut file).take(rest).read_to_end(&mut head) {
        return failure(ACTION, &p.path, e);
    }
    if looks_binary(&head) {
        return failure(
            ACTION,
            &p.path,
            format!(
                "it looks like a binary file ({total_bytes} bytes; a NUL byte or invalid UTF-8 \
                 in its first 8 KiB); read_file shows text only"
            ),
        );
    }
    let offset = p.offset.unwrap_or(1).max(1);
    // Most files an agent reads fit in the sniffed head: render from it directly,
    // without a second buffer (this is the hot path of every read).
    let rendered = if head.len() < SNIFF_BYTES {
        render(
            &mut std::io::Cursor::new(head),
            offset,
            p.limit,
            budget,
            total_bytes,
        )
    } else {
        let mut reader =
            BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(file));
        render(&mut reader, offset, p.limit, budget, total_bytes)
    };
    match rendered {
        Ok(r) => finish(total_bytes, offset, budget, r),
        Err(e) => failure(ACTION, &p.path, e),
    }
}

/// An image file: one image content block (base64), and a text note that the structured
/// result repeats. Bounded by `--max-image-bytes`: a larger image is refused with its size,
/// since half an image is no image.
fn read_image(
    mut file: std::fs::File,
    mut bytes: Vec<u8>,
    format: ImageFormat,
    total_bytes: u64,
    p: &ReadFileParams,
    max_bytes: usize,
) -> CallToolResult {
    const ACTION: &str = "read";
    let too_large = |size: u64| {
        failure(
            ACTION,
            &p.path,
            format!(
                "it is a {} image of {size} bytes, over the {max_bytes}-byte limit for images \
                 (--max-image-bytes); a smaller copy can be read",
                format.name()
            ),
        )
    };
    if total_bytes > max_bytes as u64 {
        return too_large(total_bytes);
    }
    // One byte past the limit tells a file that grew since fstat.
    let left = (max_bytes as u64 + 1).saturating_sub(bytes.len() as u64);
    if let Err(e) = (&mut file).take(left).read_to_end(&mut bytes) {
        return failure(ACTION, &p.path, e);
    }
    if bytes.len() > max_bytes {
        return too_large(bytes.len() as u64);
    }
    let size = bytes.len() as u64;
    let text = format!(
        "[image: {}, {} bytes; sent as an image content block]\n",
        format.mime_type(),
        size
    );
    let structured = ReadOutput {
        content: text.clone(),
        start_line: 1,
        lines_shown: 0,
        total_bytes: size,
        truncated: false,
        next_offset: None,
        mime_type: Some(format.mime_type().to_string()),
    };
    let mut result = success(text, &structured);
    result.content.push(ContentBlock::image(
        base64::engine::general_purpose::STANDARD.encode(&bytes),
        format.mime_type(),
    ));
    result
}

/// A read of text given whole (the editor's buffer): the same checks and page as from disk.
fn read_text(text: String, p: &ReadFileParams, budget: Budget) -> CallToolResult {
    const ACTION: &str = "read";
    let total_bytes = text.len() as u64;
    if text.as_bytes().contains(&0) {
        return failure(
            ACTION,
            &p.path,
            format!(
                "it looks like a binary file ({total_bytes} bytes, a NUL byte in the editor's \
                 text); read_file shows text only"
            ),
        );
    }
    let offset = p.offset.unwrap_or(1).max(1);
    let mut reader = std::io::Cursor::new(text.into_bytes());
    match render(&mut reader, offset, p.limit, budget, total_bytes) {
        Ok(r) => finish(total_bytes, offset, budget, r),
        Err(e) => failure(ACTION, &p.path, e),
    }
}

/// What [`render`] produced.
struct Rendered {
    text: String,
    shown: u64,
    /// Lines in the file, when the read reached its end.
    lines_before_offset: u64,
    stop: Stop,
    next_offset: Option<u64>,
    /// The single line shown was cut at the byte limit.
    cut_line: bool,
    /// The rendered-text budget (the host's cap), not the content budget, ended the page.
    host_cap_hit: bool,
}

fn render(
    reader: &mut impl BufRead,
    offset: u64,
    limit: Option<u64>,
    budget: Budget,
    size_hint: u64,
) -> std::io::Result<Rendered> {
    // Content plus ~8 bytes of line number per ~40-byte line: one allocation, no regrowth.
    let capacity = usize::try_from(size_hint)
        .unwrap_or(usize::MAX)
        .min(budget.content)
        .min(budget.rendered.unwrap_or(usize::MAX));
    let mut out = Rendered {
        text: String::with_capacity(capacity + capacity / 4 + 64),
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
            .map(|max| max.saturating_sub(out.text.len() + number_width(line_no) + 2));
        let room = rendered_left.map_or(left, |r| r.min(left));
        let len = read_line_capped(reader, room, &mut line)?;
        if len == 0 {
            break;
        }
        if len > room {
            out.stop = Stop::Bytes;
            out.host_cap_hit = room < left;
            if out.shown == 0 {
                // One line longer than the whole budget: show its start rather than nothing.
                push_line(&mut out.text, line_no, &line);
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
        push_line(&mut out.text, line_no, &line);
        left -= len;
        out.shown += 1;
        line_no += 1;
    }
    Ok(out)
}

/// Characters of the number `push_line_number` writes (at least 6, like `cat -n`).
fn number_width(line_no: u64) -> usize {
    (line_no.checked_ilog10().unwrap_or(0) as usize + 1).max(6)
}

fn finish(total_bytes: u64, offset: u64, budget: Budget, r: Rendered) -> CallToolResult {
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
    let structured = ReadOutput {
        content: text.clone(),
        start_line: offset,
        lines_shown: r.shown,
        total_bytes,
        truncated,
        next_offset: r.next_offset,
        mime_type: None,
    };
    success(text, &structured)
}

/// `cat -n` layout; a trailing `\r\n` or `\n` is not part of the text shown.
fn push_line(text: &mut String, line_no: u64, line: &[u8]) {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    push_line_number(text, line_no);
    // Valid UTF-8 is the common case and validates several times faster than
    // the lossy path.
    match std::str::from_utf8(line) {
        Ok(line) => text.push_str(line),
        Err(_) => text.push_str(&String::from_utf8_lossy(line)),
    }
    text.push('\n');
}

/// `{line_no:>6}\t` without the formatting machinery, which showed up in the
/// profile of every read (one call per line).
fn push_line_number(text: &mut String, line_no: u64) {
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
        text.push(' ');
    }
    text.push_str(std::str::from_utf8(&digits[start..]).unwrap_or_default());
    text.push('\t');
}

/// Reads one line (through its `\n`), keeping at most `cap` bytes of it in `out`
/// and returning its full length, so a 1 GB line never costs 1 GB of memory.
/// A kept prefix is cut back to a UTF-8 character boundary.
fn read_line_capped(
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

/// NUL anywhere, or invalid UTF-8, in the first [`SNIFF_BYTES`]; a character
/// cut by the end of the window does not count.
fn looks_binary(head: &[u8]) -> bool {
    if head.contains(&0) {
        return true;
    }
    match std::str::from_utf8(head) {
        Ok(_) => false,
        Err(e) => !(e.error_len().is_none() && head.len() == SNIFF_BYTES),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn run(data: &str, offset: u64, limit: Option<u64>, budget: usize) -> Rendered {
        render(
            &mut std::io::Cursor::new(data.as_bytes()),
            offset,
            limit,
            Budget {
                content: budget,
                rendered: None,
            },
            data.len() as u64,
        )
        .unwrap()
    }

    #[test]
    fn numbers_lines_like_cat_n() {
        let r = run("a\nb\r\nc", 1, None, 100);
        assert_eq!(r.text, "     1\ta\n     2\tb\n     3\tc\n");
        assert!(matches!(r.stop, Stop::Eof));
    }

    #[test]
    fn offset_and_limit_are_line_based() {
        let r = run("1\n2\n3\n4\n", 2, Some(2), 100);
        assert_eq!(r.text, "     2\t2\n     3\t3\n");
        assert_eq!(r.next_offset, Some(4));
        assert!(matches!(r.stop, Stop::Limit));
    }

    #[test]
    fn byte_budget_cuts_between_lines() {
        let r = run("aaaa\nbbbb\ncccc\n", 1, None, 12);
        assert_eq!(r.shown, 2);
        assert_eq!(r.next_offset, Some(3));
        assert!(matches!(r.stop, Stop::Bytes));
    }

    #[test]
    fn one_huge_line_is_shown_cut_at_a_char_boundary() {
        let r = run(&format!("{}\nnext\n", "é".repeat(100)), 1, None, 11);
        assert!(r.cut_line);
        assert_eq!(r.text, format!("     1\t{}\n", "é".repeat(5)));
        assert_eq!(r.next_offset, Some(2));
    }

    #[test]
    fn line_numbers_are_right_aligned_like_cat_n() {
        for (n, want) in [
            (1, "     1\t"),
            (123456, "123456\t"),
            (1234567, "1234567\t"),
        ] {
            let mut s = String::new();
            push_line_number(&mut s, n);
            assert_eq!(s, want);
        }
    }

    #[test]
    fn a_host_cap_pages_the_rendered_text_and_the_note_names_the_next_unseen_line() {
        let data: String = (1..=5000).map(|i| format!("line number {i}\n")).collect();
        let budget = Budget::new(512 * 1024, Some(3000));
        let r = render(
            &mut std::io::Cursor::new(data.as_bytes()),
            1,
            None,
            budget,
            data.len() as u64,
        )
        .unwrap();
        assert!(r.host_cap_hit);
        let shown = r.shown;
        let next = r.next_offset.unwrap();
        assert_eq!(next, shown + 1);
        let result = finish(data.len() as u64, 1, budget, r);
        let text = result.content[0].as_text().unwrap().text.clone();
        // The whole page and its note fit the host's cap: nothing is cut in the middle.
        assert!(text.chars().count() <= 3000, "{}", text.chars().count());
        assert!(text.contains(&format!("line number {shown}\n")));
        assert!(!text.contains(&format!("line number {next}\n")));
        assert!(
            text.contains(&format!("continue with offset={next}]")),
            "{text}"
        );
        assert!(
            text.contains("2488-character limit per call, set by the host"),
            "{text}"
        );
    }

    #[test]
    fn a_host_cap_cuts_a_single_long_line_to_fit() {
        let data = format!("{}\nnext\n", "x".repeat(10_000));
        let budget = Budget::new(512 * 1024, Some(1000));
        let r = render(
            &mut std::io::Cursor::new(data.as_bytes()),
            1,
            None,
            budget,
            data.len() as u64,
        )
        .unwrap();
        assert!(r.cut_line);
        assert!(r.text.len() <= 1000 - NOTE_RESERVE);
        assert_eq!(r.next_offset, Some(2));
    }

    #[test]
    fn binary_heuristics() {
        assert!(looks_binary(b"ab\0c"));
        assert!(looks_binary(b"caf\xe9 latin-1"));
        assert!(!looks_binary("héllo".as_bytes()));
        let mut cut = vec![b'a'; SNIFF_BYTES - 1];
        cut.push(0xc3); // first byte of a two-byte character, cut by the window
        assert!(!looks_binary(&cut));
    }
}
