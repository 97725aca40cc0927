//! `read_file`: numbered text lines, bounded per call, never blocking; an image file (PNG,
//! JPEG, GIF, WebP by its bytes) as an MCP image block, bounded in size; other binary refused.

use std::io::{BufReader, Read};

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, RequestMetaObject};
use schemars::JsonSchema;
use serde::Deserialize;
use tern_protocol::image::{self, ImageFormat};

use super::output::ReadOutput;

mod page;

use super::{Context, failure, host_max_chars, resolve, success};
use crate::deny::Deny;
use crate::resolve::Intent;
pub(crate) use page::Budget;
use page::{Utf8, finish, render, render_from};

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

/// One `read_file` call, from its arguments and request `_meta` (the host's deny rules and
/// output cap): the page of text, or (`Err`) the whole result to send as it is — a failure, or
/// an image file's image block. Both routes run exactly this — rmcp's
/// (through [`into_result`]) and the stdio fast path (`crate::fast`), which writes the page's
/// JSON itself.
pub(crate) fn call(
    ctx: &Context,
    meta: &RequestMetaObject,
    p: ReadFileParams,
) -> Result<ReadOutput, CallToolResult> {
    let deny = ctx.deny(meta, "read", &p.path)?;
    let cap = host_max_chars(meta, "read", &p.path)?;
    read_file(ctx, &deny, p, cap)
}

/// A page as the tool result: the text block and the same facts as `structuredContent`.
pub(crate) fn into_result(read: Result<ReadOutput, CallToolResult>) -> CallToolResult {
    match read {
        Ok(page) => success(page.content.clone(), &page),
        Err(failed) => failed,
    }
}

fn read_file(
    ctx: &Context,
    deny: &Deny,
    p: ReadFileParams,
    host_max_chars: Option<u64>,
) -> Result<ReadOutput, CallToolResult> {
    const ACTION: &str = "read";
    let budget = Budget::new(ctx.limits.max_read_bytes, host_max_chars);
    let resolved = resolve(&ctx.roots, ACTION, &p.path, Intent::Open)?;
    let (mut file, stat) = resolved
        .open_file()
        .map_err(|e| failure(ACTION, &p.path, e))?;
    // Checked on the opened file's own metadata, so a hard link is caught too.
    if let Some(why) = deny.refusal(&ctx.roots, &p.path, resolved.path(), Some(&stat)) {
        return Err(failure(ACTION, &p.path, why));
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
        return Err(failure(ACTION, &p.path, e));
    }
    if let Some(format) = image::sniff(&head) {
        // Not a page of text: the whole result, sent as it is by either route.
        return Err(read_image(
            file,
            head,
            format,
            total_bytes,
            &p,
            ctx.limits.max_image_bytes,
        ));
    }
    if let Some(editor) = &ctx.editor {
        // Confined and checked on disk above; the text is the editor's (its buffer).
        drop(file);
        return match editor.read(resolved.path()) {
            Ok(text) => read_text(text, &p, budget),
            Err(e) => Err(failure(ACTION, &p.path, e)),
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
        return Err(failure(ACTION, &p.path, e));
    }
    if looks_binary(&head) {
        return Err(failure(
            ACTION,
            &p.path,
            format!(
                "it looks like a binary file ({total_bytes} bytes; a NUL byte or invalid UTF-8 \
                 in its first 8 KiB); read_file shows text only"
            ),
        ));
    }
    let offset = p.offset.unwrap_or(1).max(1);
    // Most files an agent reads fit in the sniffed head: render from it directly,
    // without a second buffer (this is the hot path of every read).
    let rendered = if head.len() < SNIFF_BYTES {
        // `looks_binary` has just validated all of it as UTF-8.
        render_from(
            &mut std::io::Cursor::new(head),
            offset,
            p.limit,
            budget,
            total_bytes,
            Utf8::Checked,
        )
    } else {
        let mut reader =
            BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(file));
        render(&mut reader, offset, p.limit, budget, total_bytes)
    };
    match rendered {
        Ok(r) => Ok(finish(total_bytes, offset, budget, r)),
        Err(e) => Err(failure(ACTION, &p.path, e)),
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
fn read_text(
    text: String,
    p: &ReadFileParams,
    budget: Budget,
) -> Result<ReadOutput, CallToolResult> {
    const ACTION: &str = "read";
    let total_bytes = text.len() as u64;
    if text.as_bytes().contains(&0) {
        return Err(failure(
            ACTION,
            &p.path,
            format!(
                "it looks like a binary file ({total_bytes} bytes, a NUL byte in the editor's \
                 text); read_file shows text only"
            ),
        ));
    }
    let offset = p.offset.unwrap_or(1).max(1);
    let mut reader = std::io::Cursor::new(text.into_bytes());
    match render(&mut reader, offset, p.limit, budget, total_bytes) {
        Ok(r) => Ok(finish(total_bytes, offset, budget, r)),
        Err(e) => Err(failure(ACTION, &p.path, e)),
    }
}

/// NUL anywhere, or invalid UTF-8, in the first [`SNIFF_BYTES`]; a character
/// cut by the end of the window does not count.
fn looks_binary(head: &[u8]) -> bool {
    if memchr::memchr(0, head).is_some() {
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
    use super::page::{NOTE_RESERVE, Rendered, Stop, push_line_number};
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
            let mut s = Vec::new();
            push_line_number(&mut s, n);
            assert_eq!(s, want.as_bytes());
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
        let text = finish(data.len() as u64, 1, budget, r).content;
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
