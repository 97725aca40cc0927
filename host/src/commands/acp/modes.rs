//! ACP session modes (`SessionMode`, `session/set_mode`): tern's permission modes as an editor
//! offers them.

use serde_json::{Value, json};
use tern_config::PermissionMode;

/// The modes an editor may pick (ACP `SessionMode`s): tern's permission modes, without `yolo`
/// (which the command line can still set, and is then listed as the current one).
pub const MODES: &[(PermissionMode, &str, &str)] = &[
    (
        PermissionMode::Default,
        "Default",
        "ask before edits, commands and anything not read-only",
    ),
    (
        PermissionMode::AcceptEdits,
        "Accept edits",
        "file edits inside the workspace run without asking",
    ),
    (
        PermissionMode::ReadOnly,
        "Read-only",
        "every tool that is not read-only is denied",
    ),
    (
        PermissionMode::Plan,
        "Plan",
        "read-only tools and the todo list only; the agent ends with a plan (plan__exit) and writes nothing",
    ),
];

/// ACP `SessionModeState` for a session whose mode is `current`.
pub fn mode_state(current: PermissionMode) -> Value {
    let mut modes: Vec<Value> = MODES
        .iter()
        .map(|(m, name, description)| {
            json!({"id": m.to_string(), "name": name, "description": description})
        })
        .collect();
    if !MODES.iter().any(|(m, ..)| *m == current) {
        modes.push(json!({"id": current.to_string(), "name": current.to_string()}));
    }
    json!({"currentModeId": current.to_string(), "availableModes": modes})
}

/// The permission mode an ACP mode id names.
pub fn parse_mode(id: &str) -> Option<PermissionMode> {
    [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::ReadOnly,
        PermissionMode::Yolo,
        PermissionMode::Plan,
    ]
    .into_iter()
    .find(|m| m.to_string() == id)
}
