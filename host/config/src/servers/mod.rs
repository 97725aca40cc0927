//! `[mcp_servers.NAME]`: what the server pool needs to start and talk to one MCP server — raw
//! (as written in one layer), layered (merged over the layers) and resolved (checked, `${VAR}`s
//! expanded), one file each.
//!
//! Key names follow Codex's `config.toml` so users can paste their existing entries.

mod codex;
mod layer;
mod raw;
mod resolve;
mod resolved;

pub(crate) use layer::ServersLayer;
pub(crate) use raw::RawServer;
pub use resolved::*;
