//! `[context]`: how the context window is spent — when the conversation is compacted, and when
//! the tool table is deferred behind a search.

use serde::Deserialize;
use toml::Spanned;

use crate::check::invalid;
use crate::error::Result;
use crate::locate::SourceText;

/// `[context]` as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawContext {
    pub(crate) compact_at: Option<Spanned<f64>>,
    pub(crate) compact_to: Option<Spanned<f64>>,
    pub(crate) summarize: Option<bool>,
    pub(crate) defer_tools_share: Option<Spanned<f64>>,
    pub(crate) defer_tools_count: Option<usize>,
    pub(crate) core_tools: Option<Vec<String>>,
}

/// `[context]` keys set so far, layer over layer.
#[derive(Debug, Default, Clone)]
pub(crate) struct ContextLayer {
    compact_at: Option<f64>,
    compact_to: Option<f64>,
    summarize: Option<bool>,
    defer_tools_share: Option<f64>,
    defer_tools_count: Option<usize>,
    core_tools: Option<Vec<String>>,
}

impl ContextLayer {
    /// Checks one layer's values (each share is a fraction of the window).
    pub(crate) fn from_raw(raw: RawContext, source: &SourceText<'_>) -> Result<Self> {
        let share = |key: &str, value: Option<Spanned<f64>>| -> Result<Option<f64>> {
            value
                .map(|v| {
                    let f = *v.get_ref();
                    if f > 0.0 && f <= 1.0 {
                        Ok(f)
                    } else {
                        Err(invalid(
                            source.locate(v.span().start),
                            &format!("context.{key}"),
                            "must be a share of the window: more than 0 and at most 1",
                        ))
                    }
                })
                .transpose()
        };
        Ok(Self {
            compact_at: share("compact_at", raw.compact_at)?,
            compact_to: share("compact_to", raw.compact_to)?,
            summarize: raw.summarize,
            defer_tools_share: share("defer_tools_share", raw.defer_tools_share)?,
            defer_tools_count: raw.defer_tools_count,
            core_tools: raw.core_tools,
        })
    }

    /// Lays the keys `later` sets over these.
    pub(crate) fn merge(&mut self, later: ContextLayer) {
        macro_rules! over {
            ($($field:ident),*) => {$(
                if later.$field.is_some() {
                    self.$field = later.$field;
                }
            )*};
        }
        over!(
            compact_at,
            compact_to,
            summarize,
            defer_tools_share,
            defer_tools_count,
            core_tools
        );
    }

    /// The resolved section, with defaults for what no layer set.
    pub(crate) fn resolve(self) -> ContextSection {
        let d = ContextSection::default();
        let compact_at = self.compact_at.unwrap_or(d.compact_at);
        ContextSection {
            compact_at,
            // Aiming above the trigger would compact again at once.
            compact_to: self.compact_to.unwrap_or(d.compact_to).min(compact_at),
            summarize: self.summarize.unwrap_or(d.summarize),
            defer_tools_share: self.defer_tools_share.unwrap_or(d.defer_tools_share),
            defer_tools_count: self.defer_tools_count.unwrap_or(d.defer_tools_count),
            core_tools: self.core_tools.unwrap_or_default(),
        }
    }
}

/// `[context]`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextSection {
    /// `compact_at` (default 0.8): compact before a request would fill more than this share of
    /// the usable window (the window minus the answer's `max_tokens`).
    pub compact_at: f64,
    /// `compact_to` (default 0.5): what a compaction aims for, as a share of the usable window.
    pub compact_to: f64,
    /// `summarize` (default true): when eliding old tool output is not enough, replace older
    /// turns with a summary the model writes. Off: elision only.
    pub summarize: bool,
    /// `defer_tools_share` (default 0.1): defer tools when the table would take more than this
    /// share of the window…
    pub defer_tools_share: f64,
    /// `defer_tools_count` (default 64): …or has more tools than this.
    pub defer_tools_count: usize,
    /// `core_tools`: tools (`server__tool`) always offered even when the table is deferred,
    /// besides the built-in servers' tools.
    pub core_tools: Vec<String>,
}

impl Default for ContextSection {
    fn default() -> Self {
        Self {
            compact_at: 0.8,
            compact_to: 0.5,
            summarize: true,
            defer_tools_share: 0.1,
            defer_tools_count: 64,
            core_tools: Vec::new(),
        }
    }
}
