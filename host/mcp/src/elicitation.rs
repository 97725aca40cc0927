//! Elicitation: a server asking the person for input, in a form (flat fields of primitive
//! types: strings with lengths and formats, numbers with bounds, booleans, single and multiple
//! choice — SEP-1330 — each with an optional default, SEP-1034) or by sending them to a URL.
//!
//! Who answers is the host's choice: an [`Elicitor`] (the REPL asks at the terminal) or, with
//! nobody to ask, the pool's [`crate::ElicitationPolicy`]. This module turns the requested schema
//! into [`FormField`]s an asker can walk through, parses and checks each typed answer, and
//! checks the whole answer against the schema before it is sent — so a server never gets a
//! value its own schema refuses.

use serde_json::{Map, Value};

/// One request for input.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    /// The server asking.
    pub server: String,
    pub kind: ElicitationKind,
}

/// Form or URL.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationKind {
    /// Fill in these fields.
    Form {
        message: String,
        /// The requested schema, as sent.
        schema: Value,
        /// The fields, in the server's order.
        fields: Vec<FormField>,
    },
    /// Go to this URL (to sign in somewhere, pay, consent): nothing comes back but the answer.
    Url { message: String, url: String },
}

/// What the person (or the policy) answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// Accepted, with the form's content (empty for a URL).
    Accept(Map<String, Value>),
    /// Declined: the operation may go on without it.
    Decline,
    /// Cancelled: the person dismissed the question.
    Cancel,
}

impl ElicitationAnswer {
    /// `accept`, `decline` or `cancel`.
    pub fn action(&self) -> tern_protocol::ElicitationAction {
        match self {
            ElicitationAnswer::Accept(_) => tern_protocol::ElicitationAction::Accept,
            ElicitationAnswer::Decline => tern_protocol::ElicitationAction::Decline,
            ElicitationAnswer::Cancel => tern_protocol::ElicitationAction::Cancel,
        }
    }
}

/// Asks a person. Implemented by the REPL; one question at a time is the implementer's job.
#[async_trait::async_trait]
pub trait Elicitor: Send + Sync {
    async fn elicit(&self, request: &ElicitationRequest) -> ElicitationAnswer;
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub kind: FieldKind,
    /// The value an empty answer takes (SEP-1034).
    pub default: Option<Value>,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text {
        min_length: Option<u64>,
        max_length: Option<u64>,
        /// `email`, `uri`, `date` or `date-time`.
        format: Option<String>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    /// One of these.
    Choice(Vec<Choice>),
    /// Some of these.
    Choices {
        options: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

/// An option of a choice: the value sent, and what a person reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

/// The fields of `schema`, in `order` (the server's) where given, required ones first
/// otherwise.
pub fn form_fields(schema: &Value, order: Option<&[String]>) -> Vec<FormField> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut names: Vec<&String> = match order {
        Some(order) => order.iter().filter(|n| props.contains_key(*n)).collect(),
        None => props.keys().collect(),
    };
    for name in props.keys() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if order.is_none() {
        names.sort_by_key(|n| !required.contains(&n.as_str()));
    }
    names
        .into_iter()
        .map(|name| {
            let prop = &props[name];
            let text = |k: &str| prop.get(k).and_then(Value::as_str).map(str::to_string);
            FormField {
                name: name.clone(),
                title: text("title"),
                description: text("description"),
                required: required.contains(&name.as_str()),
                kind: field_kind(prop),
                default: prop.get("default").cloned(),
            }
        })
        .collect()
}

fn field_kind(prop: &Value) -> FieldKind {
    let num = |k: &str| prop.get(k).and_then(Value::as_f64);
    let count = |k: &str| prop.get(k).and_then(Value::as_u64);
    match prop.get("type").and_then(Value::as_str) {
        Some("boolean") => FieldKind::Boolean,
        Some(t @ ("number" | "integer")) => FieldKind::Number {
            integer: t == "integer",
            minimum: num("minimum"),
            maximum: num("maximum"),
        },
        Some("array") => FieldKind::Choices {
            options: prop.get("items").map(choices).unwrap_or_default(),
            min_items: count("minItems"),
            max_items: count("maxItems"),
        },
        _ => {
            let options = choices(prop);
            if options.is_empty() {
                FieldKind::Text {
                    min_length: count("minLength"),
                    max_length: count("maxLength"),
                    format: prop
                        .get("format")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                }
            } else {
                FieldKind::Choice(options)
            }
        }
    }
}

/// The options of an `enum` (with the legacy `enumNames` as labels), or of a `oneOf`/`anyOf`
/// of `{const, title}` (SEP-1330).
fn choices(schema: &Value) -> Vec<Choice> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let value = v.as_str()?.to_string();
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(|| value.clone(), str::to_string);
                Some(Choice { value, label })
            })
            .collect();
    }
    ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|o| {
            let value = o.get("const")?.as_str()?.to_string();
            let label = o
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| value.clone(), str::to_string);
            Some(Choice { value, label })
        })
        .collect()
}

impl FormField {
    /// What to call it: its title, else its name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// A short note on what may be typed (`yes/no`, `1-3 or names`, `an email address`, …).
    pub fn hint(&self) -> String {
        match &self.kind {
            FieldKind::Text { format, .. } => match format.as_deref() {
                Some("email") => "an email address".into(),
                Some("uri") => "a URL".into(),
                Some("date") => "a date, YYYY-MM-DD".into(),
                Some("date-time") => "a date and time, YYYY-MM-DDTHH:MM:SSZ".into(),
                _ => "text".into(),
            },
            FieldKind::Number { integer, .. } => if *integer {
                "a whole number"
            } else {
                "a number"
            }
            .into(),
            FieldKind::Boolean => "yes or no".into(),
            FieldKind::Choice(o) => format!("one of 1-{}", o.len()),
            FieldKind::Choices { options, .. } => {
                format!("some of 1-{}, separated by commas", options.len())
            }
        }
    }

    /// The value typed as `input` (`None`: left empty — the default, if any, applies), or why
    /// it does not fit.
    pub fn parse(&self, input: &str) -> Result<Option<Value>, String> {
        let input = input.trim_end_matches(['\r', '\n']);
        if input.trim().is_empty() {
            return Ok(None);
        }
        let value = match &self.kind {
            FieldKind::Text {
                min_length,
                max_length,
                format,
            } => {
                let n = input.chars().count() as u64;
                if min_length.is_some_and(|m| n < m) || max_length.is_some_and(|m| n > m) {
                    return Err(format!(
                        "{n} characters; it takes {}",
                        range(min_length.map(|m| m as f64), max_length.map(|m| m as f64))
                    ));
                }
                check_format(input, format.as_deref())?;
                Value::String(input.to_string())
            }
            FieldKind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let text = input.trim();
                let value: Value = if *integer {
                    text.parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| format!("`{text}` is not a whole number"))?
                } else {
                    let f = text
                        .parse::<f64>()
                        .ok()
                        .filter(|f| f.is_finite())
                        .ok_or_else(|| format!("`{text}` is not a number"))?;
                    serde_json::Number::from_f64(f)
                        .map(Value::Number)
                        .ok_or_else(|| format!("`{text}` is not a number"))?
                };
                let f = value.as_f64().unwrap_or_default();
                if minimum.is_some_and(|m| f < m) || maximum.is_some_and(|m| f > m) {
                    return Err(format!("{text} is outside {}", range(*minimum, *maximum)));
                }
                value
            }
            FieldKind::Boolean => match input.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Value::Bool(true),
                "n" | "no" | "false" | "0" => Value::Bool(false),
                other => return Err(format!("`{other}` is not yes or no")),
            },
            FieldKind::Choice(options) => Value::String(pick(options, input.trim())?),
            FieldKind::Choices {
                options,
                min_items,
                max_items,
            } => {
                let mut picked = Vec::new();
                for part in input.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let value = pick(options, part)?;
                    if !picked.contains(&value) {
                        picked.push(value);
                    }
                }
                let n = picked.len() as u64;
                if min_items.is_some_and(|m| n < m) || max_items.is_some_and(|m| n > m) {
                    return Err(format!(
                        "{n} chosen; it takes {}",
                        range(min_items.map(|m| m as f64), max_items.map(|m| m as f64))
                    ));
                }
                Value::Array(picked.into_iter().map(Value::String).collect())
            }
        };
        Ok(Some(value))
    }
}

/// An option by its number (1-based), value or label (case-insensitive).
fn pick(options: &[Choice], input: &str) -> Result<String, String> {
    if let Ok(n) = input.parse::<usize>()
        && let Some(c) = n.checked_sub(1).and_then(|i| options.get(i))
    {
        return Ok(c.value.clone());
    }
    options
        .iter()
        .find(|c| c.value.eq_ignore_ascii_case(input) || c.label.eq_ignore_ascii_case(input))
        .map(|c| c.value.clone())
        .ok_or_else(|| format!("`{input}` is not one of the options"))
}

fn range(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("{a} to {b}"),
        (Some(a), None) => format!("at least {a}"),
        (None, Some(b)) => format!("at most {b}"),
        (None, None) => "any".into(),
    }
}

fn check_format(input: &str, format: Option<&str>) -> Result<(), String> {
    let ok = match format {
        Some("email") => input.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !input.contains(' ')
        }),
        Some("uri") => url::Url::parse(input).is_ok(),
        Some("date") => is_date(input),
        Some("date-time") => input.split_once(['T', 't']).is_some_and(|(d, t)| {
            is_date(d)
                && t.len() >= 8
                && t[..8].chars().enumerate().all(|(i, c)| {
                    if i == 2 || i == 5 {
                        c == ':'
                    } else {
                        c.is_ascii_digit()
                    }
                })
        }),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{input}` is not {}",
            match format {
                Some("email") => "an email address",
                Some("uri") => "a URL",
                Some("date") => "a date (YYYY-MM-DD)",
                _ => "a date and time (YYYY-MM-DDTHH:MM:SSZ)",
            }
        ))
    }
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && (1..=12).contains(&s[5..7].parse::<u8>().unwrap_or(0))
        && (1..=31).contains(&s[8..10].parse::<u8>().unwrap_or(0))
}

/// Checks a whole answer against the requested schema (required fields, every constraint):
/// the last word before it is sent.
pub fn check(schema: &Value, content: &Map<String, Value>) -> Result<(), String> {
    let validator = crate::table::compile_schema(schema)?;
    let value = Value::Object(content.clone());
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Full name", "minLength": 2, "default": "Ada"},
            "email": {"type": "string", "format": "email"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "score": {"type": "number"},
            "subscribe": {"type": "boolean", "default": false},
            "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]}, "maxItems": 1}
        }, "required": ["email", "age"]})
    }

    fn field(name: &str) -> FormField {
        form_fields(&schema(), None)
            .into_iter()
            .find(|f| f.name == name)
            .unwrap()
    }

    #[test]
    fn fields_come_in_the_servers_order_or_required_first() {
        let order: Vec<String> = ["name", "email", "age"].map(String::from).to_vec();
        let names: Vec<String> = form_fields(&schema(), Some(&order))
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(&names[..3], ["name", "email", "age"]);
        assert_eq!(names.len(), 8);
        let names: Vec<String> = form_fields(&schema(), None)
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(&names[..2], ["age", "email"]);
        let name = field("name");
        assert_eq!(name.label(), "Full name");
        assert_eq!(name.default, Some(json!("Ada")));
        assert!(field("email").required);
    }

    #[test]
    fn answers_are_parsed_by_type_and_checked_against_their_constraints() {
        assert_eq!(field("name").parse("").unwrap(), None);
        assert!(field("name").parse("A").unwrap_err().contains("at least 2"));
        assert!(field("email").parse("nope").is_err());
        assert_eq!(
            field("email").parse("a@b.io").unwrap(),
            Some(json!("a@b.io"))
        );
        assert_eq!(field("age").parse(" 42 ").unwrap(), Some(json!(42)));
        assert!(field("age").parse("4.5").is_err());
        assert!(field("age").parse("200").unwrap_err().contains("0 to 150"));
        assert_eq!(field("score").parse("2.5").unwrap(), Some(json!(2.5)));
        assert_eq!(field("subscribe").parse("Yes").unwrap(), Some(json!(true)));
        assert!(field("subscribe").parse("maybe").is_err());
        assert_eq!(field("color").parse("2").unwrap(), Some(json!("g")));
        assert_eq!(field("color").parse("red").unwrap(), Some(json!("r")));
        assert_eq!(field("size").parse("Large").unwrap(), Some(json!("l")));
        assert!(field("size").parse("3").is_err());
        assert_eq!(field("tags").parse("beta").unwrap(), Some(json!(["b"])));
        assert!(
            field("tags")
                .parse("1, 2")
                .unwrap_err()
                .contains("at most 1")
        );
    }

    #[test]
    fn the_whole_answer_is_checked_against_the_schema() {
        let mut content = Map::new();
        content.insert("email".into(), json!("a@b.io"));
        assert!(check(&schema(), &content).unwrap_err().contains("age"));
        content.insert("age".into(), json!(3));
        assert!(check(&schema(), &content).is_ok());
        content.insert("color".into(), json!("blue"));
        assert!(check(&schema(), &content).is_err());
    }
}
