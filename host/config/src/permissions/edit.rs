//! Comment-preserving edits of a config.toml, for the REPL's "always" answer (issue 4, item 6).

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use super::rules::{RuleList, check_rule_shape};
use crate::error::{ConfigError, Result};

/// Adds `rule` to `[permissions] <list>` of a config.toml's text, keeping its comments and layout.
///
/// A rule already in the list is not added twice (the text comes back unchanged). A multi-line array
/// gets the new rule on its own line, indented like the others.
pub fn append_rule(config_text: &str, list: RuleList, rule: &str) -> Result<String> {
    check_rule_shape(rule).map_err(|message| ConfigError::Edit { message })?;
    let mut doc: DocumentMut = config_text.parse().map_err(|err| ConfigError::Edit {
        message: format!("not valid TOML: {err}"),
    })?;
    let permissions = doc
        .entry("permissions")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| edit_error("`permissions` is not a table"))?;
    let key = list.key();
    if permissions.get(key).is_none() {
        permissions.insert(key, toml_edit::value(Array::new()));
    }
    let array = permissions
        .get_mut(key)
        .and_then(Item::as_array_mut)
        .ok_or_else(|| edit_error(&format!("`permissions.{key}` is not an array")))?;
    if array.iter().any(|value| value.as_str() == Some(rule)) {
        return Ok(config_text.to_owned());
    }
    push_in_style(array, rule);
    Ok(doc.to_string())
}

fn edit_error(message: &str) -> ConfigError {
    ConfigError::Edit {
        message: message.to_owned(),
    }
}

/// Pushes `rule`, copying the element indentation of a multi-line array (only the indentation: a
/// comment before the last element stays its own).
fn push_in_style(array: &mut Array, rule: &str) {
    let multiline_prefix = array
        .iter()
        .last()
        .and_then(|last| last.decor().prefix())
        .and_then(|prefix| prefix.as_str())
        .and_then(|prefix| prefix.rfind('\n').map(|i| prefix[i..].to_owned()));
    match multiline_prefix {
        Some(prefix) => {
            // The text after the last element (comments, newline before `]`) stays after the new one.
            let mut value = Value::from(rule);
            value.decor_mut().set_prefix(prefix);
            if !array.trailing_comma() {
                array.set_trailing_comma(true);
            }
            array.push_formatted(value);
        }
        None => array.push(rule),
    }
}
