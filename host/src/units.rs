//! How numbers read to a person — token counts and costs — wherever tern writes them: the
//! terminal, reports (`tern runs`, `tern eval`), and the text `tern serve agent` returns to
//! another agent's model. A neutral module, so that serving and commands need not reach into the
//! renderers for it.

/// `12.1k`, `950`, `1.2M`.
pub fn format_tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// `$0.0123` (four decimals under a cent, two above).
pub fn format_cost(usd: f64) -> String {
    if usd < 0.01 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

/// `512 B`, `120 KB`, `3.9 MB` (decimal units, as file managers show sizes).
pub fn format_bytes(n: usize) -> String {
    match n {
        0..=999 => format!("{n} B"),
        1_000..=999_999 => format!("{} KB", (n as f64 / 1000.0).round()),
        _ => format!("{:.1} MB", n as f64 / 1_000_000.0),
    }
}
