//! Ranking tools against a query: BM25 over each tool's name, description and argument names.
//!
//! Names are split into words the way people write them (`get_weather_forecast`,
//! `getWeatherForecast` and `weather-forecast` all give `weather` and `forecast`), and the name's
//! words count three times, the argument names twice: a query usually names what a tool does.

use std::collections::HashMap;

pub use tern_tool_common::catalog::Entry;

/// What ranking and the search result need of an entry, beyond the shared shape.
pub trait Signature {
    /// The argument names and types, as one line (`city: string, days?: integer`).
    fn signature(&self) -> String;
    /// The argument names.
    fn argument_names(&self) -> Vec<String>;
}

impl Signature for Entry {
    fn signature(&self) -> String {
        let required: Vec<&str> = self.input_schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        self.input_schema["properties"]
            .as_object()
            .map(|props| {
                props
                    .iter()
                    .map(|(name, schema)| {
                        let ty = schema["type"].as_str().unwrap_or("any");
                        let optional = if required.contains(&name.as_str()) {
                            ""
                        } else {
                            "?"
                        };
                        format!("{name}{optional}: {ty}")
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    }

    fn argument_names(&self) -> Vec<String> {
        self.input_schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// Lower-case words of `text`, splitting on non-alphanumerics and on camelCase humps.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        } else {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// A BM25 index of a catalog.
pub struct Index {
    entries: Vec<Entry>,
    /// Term frequencies per document.
    docs: Vec<HashMap<String, f64>>,
    lengths: Vec<f64>,
    average: f64,
    /// Documents each term occurs in.
    df: HashMap<String, usize>,
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

impl Index {
    pub fn new(entries: Vec<Entry>) -> Self {
        let mut docs = Vec::with_capacity(entries.len());
        let mut df: HashMap<String, usize> = HashMap::new();
        for e in &entries {
            let mut tf: HashMap<String, f64> = HashMap::new();
            let (_, tool) = e.name.split_once("__").unwrap_or(("", &e.name));
            for w in words(tool) {
                *tf.entry(w).or_default() += 3.0;
            }
            for w in words(&e.name) {
                *tf.entry(w).or_default() += 1.0;
            }
            for arg in e.argument_names() {
                for w in words(&arg) {
                    *tf.entry(w).or_default() += 2.0;
                }
            }
            for w in words(&e.description) {
                *tf.entry(w).or_default() += 1.0;
            }
            for term in tf.keys() {
                *df.entry(term.clone()).or_default() += 1;
            }
            docs.push(tf);
        }
        let lengths: Vec<f64> = docs.iter().map(|d| d.values().sum()).collect();
        let average = if lengths.is_empty() {
            1.0
        } else {
            lengths.iter().sum::<f64>() / lengths.len() as f64
        };
        Self {
            entries,
            docs,
            lengths,
            average,
            df,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The best `limit` matches for `query`, best first (ties by name).
    pub fn search(&self, query: &str, limit: usize) -> Vec<(&Entry, f64)> {
        let terms = words(query);
        let n = self.entries.len() as f64;
        let mut scored: Vec<(usize, f64)> = self
            .docs
            .iter()
            .enumerate()
            .map(|(i, doc)| {
                let score = terms
                    .iter()
                    .filter_map(|t| {
                        let f = *doc.get(t)?;
                        let df = *self.df.get(t)? as f64;
                        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                        let norm = K1 * (1.0 - B + B * self.lengths[i] / self.average);
                        Some(idf * f * (K1 + 1.0) / (f + norm))
                    })
                    .sum::<f64>();
                (i, score)
            })
            .filter(|(_, s)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.entries[a.0].name.cmp(&self.entries[b.0].name))
        });
        scored
            .into_iter()
            .take(limit)
            .map(|(i, s)| (&self.entries[i], s))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(name: &str, description: &str, args: &[&str]) -> Entry {
        let props: serde_json::Map<String, serde_json::Value> = args
            .iter()
            .map(|a| (a.to_string(), json!({"type": "string"})))
            .collect();
        Entry {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": props, "required": [args.first()]}),
        }
    }

    #[test]
    fn words_split_names_as_people_write_them() {
        assert_eq!(words("getWeatherForecast"), ["get", "weather", "forecast"]);
        assert_eq!(words("git__log_v2"), ["git", "log", "v2"]);
        assert_eq!(words("HTTPServer up"), ["httpserver", "up"]);
    }

    #[test]
    fn the_tool_doing_what_the_query_says_comes_first() {
        let index = Index::new(vec![
            entry(
                "cal__create_event",
                "Create a calendar event.",
                &["title", "start"],
            ),
            entry(
                "wx__weather_forecast",
                "Daily forecast for a city.",
                &["city", "days"],
            ),
            entry(
                "wx__weather_alerts",
                "Severe weather alerts for a region.",
                &["region"],
            ),
            entry(
                "db__query",
                "Run a read-only SQL query against the warehouse.",
                &["sql"],
            ),
        ]);
        let hits = index.search("weather forecast for Oslo", 3);
        assert_eq!(hits[0].0.name, "wx__weather_forecast");
        assert_eq!(hits[1].0.name, "wx__weather_alerts");
        assert_eq!(
            index.search("sql", 5)[0].0.name,
            "db__query",
            "argument names count"
        );
        assert!(index.search("zebra", 5).is_empty());
        assert_eq!(index.entries[1].signature(), "city: string, days?: string");
    }
}
