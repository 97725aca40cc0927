//! `[lsp]`: what the gateway does with a language server after a file edit (issue 20).

use serde::Deserialize;
use toml::Spanned;

use crate::check::invalid;
use crate::error::Result;
use crate::locate::SourceText;

/// What the host adds to a successful `fs__edit_file`/`fs__write_file` result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AfterEdit {
    /// The new error-level diagnostics of the edited file (from `lsp__diagnostics`).
    #[default]
    Errors,
    /// Nothing.
    Off,
}

/// `[lsp]` as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLsp {
    pub(crate) after_edit: Option<Spanned<String>>,
    pub(crate) after_edit_wait_ms: Option<u64>,
}

/// `[lsp]` keys set so far, layer over layer.
#[derive(Debug, Default, Clone)]
pub(crate) struct LspLayer {
    after_edit: Option<AfterEdit>,
    after_edit_wait_ms: Option<u64>,
}

impl LspLayer {
    pub(crate) fn from_raw(raw: RawLsp, source: &SourceText<'_>) -> Result<Self> {
        let after_edit = raw
            .after_edit
            .map(|v| match v.get_ref().as_str() {
                "errors" => Ok(AfterEdit::Errors),
                "off" => Ok(AfterEdit::Off),
                _ => Err(invalid(
                    source.locate(v.span().start),
                    "lsp.after_edit",
                    "must be \"errors\" or \"off\"",
                )),
            })
            .transpose()?;
        Ok(Self {
            after_edit,
            after_edit_wait_ms: raw.after_edit_wait_ms,
        })
    }

    pub(crate) fn merge(&mut self, later: LspLayer) {
        if later.after_edit.is_some() {
            self.after_edit = later.after_edit;
        }
        if later.after_edit_wait_ms.is_some() {
            self.after_edit_wait_ms = later.after_edit_wait_ms;
        }
    }

    pub(crate) fn resolve(self) -> LspSection {
        let d = LspSection::default();
        LspSection {
            after_edit: self.after_edit.unwrap_or(d.after_edit),
            after_edit_wait_ms: self.after_edit_wait_ms.unwrap_or(d.after_edit_wait_ms),
        }
    }
}

/// `[lsp]`, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LspSection {
    /// `after_edit` (default `"errors"`): after a successful file edit, ask the `lsp` server
    /// (when one is running) for the file's new error diagnostics and append them to the
    /// result the model reads.
    pub after_edit: AfterEdit,
    /// `after_edit_wait_ms` (default 3000): how long the language server may take to publish
    /// them.
    pub after_edit_wait_ms: u64,
}

impl Default for LspSection {
    fn default() -> Self {
        Self {
            after_edit: AfterEdit::Errors,
            after_edit_wait_ms: 3000,
        }
    }
}
