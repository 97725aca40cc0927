//! `edit_file`: exact string replacement, answered with a unified diff
//! (an embedded `text/x-diff` resource, see [`super::diff`]).

use std::io::Read;

use rmcp::model::CallToolResult;
use schemars::JsonSchema;
use serde::Deserialize;

use super::diff::unified;
use super::output::EditOutput;
use super::write::{Unchanged, replace};
use super::{Context, diff_block, failure, resolve, shown, success};
use crate::deny::Deny;
use crate::resolve::{CreateParents, Intent};

/// Files larger than this are not edited in memory; a model editing a 64 MiB
/// file by string replacement is almost certainly doing the wrong thing.
const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

/// Parameters of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct EditFileParams {
    /// The file to edit: relative to the first root, or an absolute path inside a root.
    /// It must exist and be UTF-8 text; a symlink is not followed (edit its target).
    pub path: String,
    /// The exact text to replace, including whitespace and indentation. It must occur
    /// exactly once unless `replace_all` is true; add surrounding lines to make it unique.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

pub(crate) fn edit_file(ctx: &Context, deny: &Deny, p: EditFileParams) -> CallToolResult {
    const ACTION: &str = "edit";
    if p.old_string.is_empty() {
        return failure(
            ACTION,
            &p.path,
            "old_string is empty; use write_file to create a file",
        );
    }
    if p.old_string == p.new_string {
        return failure(ACTION, &p.path, "old_string and new_string are identical");
    }
    let intent = Intent::Write {
        parents: CreateParents::No,
    };
    if let Some(why) = deny.refusal_named(&ctx.roots, &p.path) {
        return failure(ACTION, &p.path, why);
    }
    let resolved = match resolve(&ctx.roots, ACTION, &p.path, intent) {
        Ok(r) => r,
        Err(result) => return result,
    };
    let (Some(name), Some(_)) = (resolved.name(), resolved.stat()) else {
        let why = if resolved.name().is_none() {
            "it is a directory"
        } else {
            "it does not exist; use write_file to create it"
        };
        return failure(ACTION, &p.path, why);
    };
    let (file, stat) = match resolved.open_file() {
        Ok(f) => f,
        Err(e) => return failure(ACTION, &p.path, e),
    };
    if let Some(why) = deny.refusal(&ctx.roots, &p.path, resolved.path(), Some(&stat)) {
        return failure(ACTION, &p.path, why);
    }
    let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
    if size > MAX_EDIT_BYTES {
        return failure(
            ACTION,
            &p.path,
            format!("it is {size} bytes; edit_file handles files up to {MAX_EDIT_BYTES} bytes"),
        );
    }
    let before = match &ctx.editor {
        // Confined and checked on disk above; the text edited is the editor's buffer.
        Some(editor) => match editor.read(resolved.path()) {
            Ok(text) => text,
            Err(e) => return failure(ACTION, &p.path, e),
        },
        None => {
            let mut bytes = Vec::new();
            if let Err(e) = file.take(MAX_EDIT_BYTES + 1).read_to_end(&mut bytes) {
                return failure(ACTION, &p.path, e);
            }
            let Ok(text) = String::from_utf8(bytes) else {
                return failure(ACTION, &p.path, "it is not UTF-8 text");
            };
            text
        }
    };
    let found = before.matches(p.old_string.as_str()).count();
    let after = match (found, p.replace_all) {
        (0, _) => {
            return failure(
                ACTION,
                &p.path,
                "old_string was not found (it must match exactly, including whitespace)",
            );
        }
        (1, _) | (_, true) => before.replace(p.old_string.as_str(), &p.new_string),
        (n, false) => {
            return failure(
                ACTION,
                &p.path,
                format!(
                    "old_string occurs {n} times; add surrounding context to make it unique, \
                     or set replace_all to replace all {n}"
                ),
            );
        }
    };
    let written = match &ctx.editor {
        Some(editor) => editor
            .write(resolved.path(), &after)
            .map_err(|e| e.to_string()),
        None => replace(
            resolved.parent(),
            name,
            after.as_bytes(),
            Some(&Unchanged::from(&stat)),
        )
        .map_err(|e| e.to_string()),
    };
    if let Err(e) = written {
        return failure(ACTION, &p.path, e);
    }
    let path = shown(resolved.path());
    let diff = unified(&path, &before, &after);
    let plural = if found == 1 { "" } else { "s" };
    let text = format!(
        "edited `{path}`: {found} replacement{plural} ({})",
        diff.stat()
    );
    let structured = EditOutput {
        path,
        replacements: found,
        lines_added: diff.added,
        lines_removed: diff.removed,
        diff: diff.text.clone(),
    };
    let mut result = success(text, &structured);
    result.content.push(diff_block(resolved.path(), diff.text));
    result
}
