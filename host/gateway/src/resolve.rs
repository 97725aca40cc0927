//! Stage 1, Resolve: the name the model called must be in the tool table.

use tern_mcp::{ToolEntry, ToolTable};

use tern_protocol::{ErrorKind, ToolResult};

/// How many near names an unknown-tool result suggests.
const SUGGESTIONS: usize = 3;

/// The table entry for `name`, or the error result listing the closest names.
pub fn resolve<'t>(
    table: &'t ToolTable,
    call_id: &str,
    name: &str,
) -> Result<&'t ToolEntry, Box<ToolResult>> {
    table.get(name).ok_or_else(|| {
        let close = table.closest(name, SUGGESTIONS);
        let hint = if close.is_empty() {
            "no tools are available".to_owned()
        } else {
            format!(
                "did you mean {}?",
                close
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Box::new(ToolResult::failed(
            call_id,
            ErrorKind::UnknownTool,
            format!("unknown tool `{name}`: {hint}"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tern_mcp::table::ToolDef;

    use super::*;

    #[test]
    fn unknown_names_list_the_closest() {
        let def = |n: &str| ToolDef {
            name: n.into(),
            title: None,
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            annotations: Default::default(),
            command_arg: None,
            edits_files: false,
        };
        let mut servers = BTreeMap::new();
        servers.insert(
            "fs".to_string(),
            vec![def("read_file"), def("write_file"), def("grep")],
        );
        let (table, _) = ToolTable::build(&servers);
        assert_eq!(
            resolve(&table, "c", "fs__read_file").unwrap().tool,
            "read_file"
        );
        let err = resolve(&table, "c", "fs__read_fil").unwrap_err();
        assert_eq!(err.error, Some(ErrorKind::UnknownTool));
        assert!(err.is_error);
        assert!(
            err.content.contains("did you mean `fs__read_file`"),
            "{}",
            err.content
        );
        let (empty, _) = ToolTable::build(&BTreeMap::new());
        assert!(
            resolve(&empty, "c", "x")
                .unwrap_err()
                .content
                .contains("no tools")
        );
    }
}
