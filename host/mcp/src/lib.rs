//! tern's MCP server pool.
//!
//! Every capability tern has is an MCP server. This crate launches every
//! configured server concurrently (stdio child processes or streamable HTTP),
//! supervises them (a crashed stdio server is restarted with backoff and its
//! in-flight calls end at once with its stderr tail), and merges their tools into
//! one deterministic [`ToolTable`] of `server__tool` names.
//!
//! It is the only crate of the host that speaks rmcp: the rest of tern sees
//! [`ServerSpec`], [`ToolEntry`], [`ToolOutput`] and the shared events of
//! `tern-protocol`, so an rmcp
//! rename touches one crate.
//!
//! The pool never prints. It reports what happens as `tern_protocol::Event`s
//! through an [`EventSink`].
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod cache;
mod call;
mod client;
mod connect;
mod elicitation;
mod env;
mod error;
mod event;
pub mod oauth;
mod output;
pub mod pins;
mod pool;
mod resources;
mod roots;
mod slot;
mod spec;
mod stderr;
mod supervise;
pub mod table;
mod task;
mod task_ext;
mod text;
mod transport;

pub use connect::Era;
pub use elicitation::{
    Choice, ElicitationAnswer, ElicitationKind, ElicitationRequest, Elicitor, FieldKind, FormField,
    check as check_form, form_fields,
};
pub use error::{CallError, StartError};
pub use event::{EventSink, Progress, TaskProgress};
pub use oauth::{Browser, ClientKey, KeyError, OAuthOptions, OAuthSpec, SigningAlg, may_open};
pub use output::{DIFF_MIME, ToolOutput};
pub use pool::{
    CallOptions, HeldKind, HeldTool, PromptInfo, ServerPool, ServerState, ServerStatus, StrayStdout,
};
pub use resources::{ResourceInfo, ResourceText};
pub use spec::{
    DEFAULT_MAX_TOOL_BYTES, ElicitationPolicy, Lifecycle, PoolOptions, RootsSetting, ServerSpec,
    ToolFilter, TransportSpec,
};
pub use stderr::MAX_LOG_BYTES;
pub use table::{
    META_COMMAND_ARG, META_EDITS_FILES, ToolAnnotations, ToolDef, ToolEntry, ToolTable,
};

/// The environment variables a stdio server inherits from the host when nothing
/// else is configured. API keys are deliberately absent (issue #3, "never the host's
/// API keys unless configured"). `LC_*` is matched as a prefix.
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    "HOME", "PATH", "USER", "LANG", "LC_*", "TERM", "TMPDIR", "TZ", "SHELL",
];

/// An HTTP client builder with TLS ready. tern builds rustls with the `ring` provider only
/// (no C library beyond ring's own; see CONTRIBUTING.md, "Dependencies"), and reqwest without a
/// provider of its own panics at `build()` unless one is installed for the process: this
/// installs it (once; later calls find it there) before handing out the builder.
pub fn http_client() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}
