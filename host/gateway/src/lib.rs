//! tern's permission and audit gateway: the one path from the agent to any tool (issue 4).
//!
//! Every tool call goes through the same stages, in order, each a module of its own:
//! [`resolve`](mod@resolve) the name → [`validate`](mod@validate) the arguments against the tool's
//! JSON Schema (the server never sees invalid ones) → decide the [`permission`] from the rules, the
//! tool's annotations and the mode, asking an [`Approver`] when it must → [`dispatch`] with the
//! tool's timeout and the turn's cancellation → [`cap`] the text for the model, spilling the full
//! output to a file → [`audit`] one JSON line per call. A failure at any stage is a
//! `ToolResult`, never a panic, and every call gets exactly one.
//!
//! The gateway never prints: it reports through an [`EventSink`]. Everything it writes (audit,
//! spill files, events, and the text handed to the model) passes the [`Redactor`].
//!
//! ```no_run
//! # async fn example(
//! #     pool: std::sync::Arc<tern_mcp::ServerPool>,
//! #     config: tern_config::Config,
//! #     paths: tern_config::ConfigPaths,
//! # ) -> Result<(), tern_gateway::GatewayError> {
//! use std::sync::Arc;
//! use tern_gateway::*;
//!
//! let cwd = std::env::current_dir().unwrap_or_default();
//! let settings = GatewaySettings::from_config(
//!     &config,
//!     &paths,
//!     cwd.clone(),
//!     vec![cwd],
//!     std::env::home_dir(),
//! );
//! let events: EventSink = Arc::new(|event| { let _ = event; /* onto the bus */ });
//! let secrets = [Secret::new(std::env::var("ANTHROPIC_API_KEY").unwrap_or_default())];
//! let recorders = Recorders::open(&paths.audit_log(), secrets, events)?;
//! let gateway = Gateway::new(pool, settings, Arc::new(HeadlessApprover), recorders)?;
//! let tools = gateway.table(); // what to offer the model
//! let outcome = gateway
//!     .call(
//!         ToolCall {
//!             id: "toolu_01".into(),
//!             name: "fs__read_file".into(),
//!             arguments: serde_json::json!({"path": "README.md"}),
//!         },
//!         CallContext { run_id: "20261130-093000-a1b2c3".into(), session_id: "s1".into(), ..Default::default() },
//!     )
//!     .await;
//! println!("{}", outcome.result.content);
//! # let _ = tools;
//! # Ok(()) }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod after_edit;
mod approver;
mod ask;
pub mod audit;
mod call;
pub mod cap;
pub mod confine;
pub mod dispatch;
mod gateway;
mod hook_stage;
pub mod hooks;
pub mod paths;
pub mod permission;
mod permit;
mod redact;
pub mod resolve;
pub mod rules;
mod session_rules;
mod settings;
pub mod shell;
mod turn_rules;
pub mod validate;
mod wildcard;

pub use approver::{
    Approval, ApprovalRequest, Approver, HeadlessApprover, ParsedCommand, ResolvedPath,
    escape_control, headless_hint,
};
pub use ask::{USER_ALWAYS, USER_ONCE, save_rules};
pub use audit::AuditRecord;
pub use call::{CallContext, CallMeta, Outcome};
pub use gateway::{Gateway, GatewayError, Recorders};
pub use paths::PathScope;
pub use redact::{REDACTED, Redactor, Secret};
pub use settings::{GatewaySettings, ProjectRules, ToolPolicy};
pub use tern_protocol::{
    Decision, ErrorKind, Event, EventSink, ToolCall, ToolResult, ignore_events,
};
pub use turn_rules::TurnRule;
