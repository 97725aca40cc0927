//! `tern mcp doctor`'s check of the skills servers: the `SKILL.md` files they skipped or
//! warned about, asked of each running skills server with its `list` tool over MCP (the
//! contract in `tool-servers/skills`: `structuredContent.problems` = `[{file, line?, severity,
//! message}]`), so doctor reports what the server itself found, not a second parse.

use std::time::Duration;

use serde_json::Value;
use tern_config::{Builtin, Config};
use tern_mcp::{CallOptions, ServerPool};

/// One problem of one skill, as the server reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    /// `error` (the skill was skipped) or `warning` (it loads anyway).
    pub severity: String,
    /// `FILE[:LINE]: what is wrong`.
    pub message: String,
}

/// How long one `list` may take: it answers from the catalog the server built at startup.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// The problems each built-in skills server in `pool` reports, by server. A server that offers
/// no `list` found nothing broken; a call that fails is itself reported.
pub async fn problems(config: &Config, pool: &ServerPool) -> Vec<(String, Vec<SkillProblem>)> {
    let (table, _) = pool.table();
    let mut out = Vec::new();
    for server in config
        .enabled_servers()
        .filter(|s| s.builtin() == Some(Builtin::Skills))
    {
        let offers_list = table
            .entries()
            .iter()
            .any(|e| e.server == server.name && e.tool == "list");
        if !offers_list {
            continue;
        }
        let found = match pool
            .call(
                &server.name,
                "list",
                serde_json::Map::new(),
                CallOptions::new(LIST_TIMEOUT),
            )
            .await
        {
            Ok(output) => from_report(output.structured.as_ref()),
            Err(e) => vec![SkillProblem {
                severity: "error".into(),
                message: format!("`list` failed, skills not checked: {e}"),
            }],
        };
        if !found.is_empty() {
            out.push((server.name.clone(), found));
        }
    }
    out
}

/// The `problems` of a `list` result's `structuredContent`.
fn from_report(report: Option<&Value>) -> Vec<SkillProblem> {
    let Some(problems) = report.and_then(|r| r["problems"].as_array()) else {
        return Vec::new();
    };
    problems
        .iter()
        .map(|p| {
            let file = p["file"].as_str().unwrap_or("?");
            let at = match p["line"].as_u64() {
                Some(line) => format!("{file}:{line}"),
                None => file.to_string(),
            };
            SkillProblem {
                severity: p["severity"].as_str().unwrap_or("error").to_string(),
                message: format!("{at}: {}", p["message"].as_str().unwrap_or_default()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_name_the_file_and_line() {
        let report = serde_json::json!({"skills": [], "problems": [
            {"file": "/s/a/SKILL.md", "line": 2, "severity": "error", "message": "no `name`"},
            {"file": "/s/b", "severity": "warning", "message": "shadowed"},
        ]});
        assert_eq!(
            from_report(Some(&report)),
            [
                SkillProblem {
                    severity: "error".into(),
                    message: "/s/a/SKILL.md:2: no `name`".into()
                },
                SkillProblem {
                    severity: "warning".into(),
                    message: "/s/b: shadowed".into()
                },
            ]
        );
        assert!(from_report(None).is_empty());
    }
}
