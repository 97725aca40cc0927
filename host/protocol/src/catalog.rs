//! The contract between the host and tern's catalog server (`tern serve catalog`, which offers
//! `tern__tool_search` over the tools the host deferred): the file the host writes and the
//! structured result the server returns. Both sides use these types, so neither reads the
//! other's JSON by key — and the host links none of the server's code.

use serde::{Deserialize, Serialize};

/// One tool the host has deferred, as it writes it into the catalog file (a JSON array of these,
/// replaced whole by a rename).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The name the model calls it by (`server__tool`).
    pub name: String,
    pub description: String,
    /// Its JSON Schema for arguments.
    pub input_schema: serde_json::Value,
}

/// The search tool's `structuredContent`: the tools found, which become callable from the
/// model's next request on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    pub tools: Vec<Found>,
}

/// One tool found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Found {
    /// `server__tool`.
    pub name: String,
    /// The first line of its description.
    pub description: String,
    /// Its arguments as one line (`city: string, days?: integer`).
    pub arguments: String,
}

impl SearchResult {
    /// The names found, from a result's structured content (none when it is not this shape).
    pub fn names_in(structured: Option<&serde_json::Value>) -> Vec<String> {
        structured
            .and_then(|s| serde_json::from_value::<SearchResult>(s.clone()).ok())
            .map(|r| r.tools.into_iter().map(|t| t.name).collect())
            .unwrap_or_default()
    }
}
