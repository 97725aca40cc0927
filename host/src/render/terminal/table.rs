//! Markdown tables as aligned columns (issue 26, item 4): the rows of a table are held while it
//! streams and drawn at once when it ends, each column as wide as its widest cell, shrunk and
//! wrapped when the table is wider than the terminal.

use unicode_width::UnicodeWidthStr;

use super::style::{BOLD, DIM, Palette};

/// Whether `line` is a row of a pipe table (`| a | b |`).
pub fn is_row(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.len() > 1
}

/// The cells of a row, trimmed (escaped pipes `\|` stay in their cell).
fn cells(row: &str) -> Vec<String> {
    let t = row.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    let mut out = vec![String::new()];
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(last) = out.last_mut() {
                    last.push('|');
                }
            }
            '|' => out.push(String::new()),
            c => {
                if let Some(last) = out.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// A delimiter row (`|---|:--:|`).
fn is_delimiter(cells: &[String]) -> bool {
    !cells.is_empty()
        && cells.iter().all(|c| {
            let c = c.trim_matches(':');
            !c.is_empty() && c.chars().all(|ch| ch == '-')
        })
}

/// `text` in lines of at most `width` columns, broken at spaces where it can be.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let current = lines.last().map_or(0, |l| l.width());
        let need = if current == 0 { 0 } else { 1 } + word.width();
        if current > 0 && current + need > width {
            lines.push(String::new());
        }
        if let Some(line) = lines.last_mut()
            && !line.is_empty()
        {
            line.push(' ');
        }
        // A word longer than the column is cut into pieces.
        for c in word.chars() {
            let used = lines.last().map_or(0, |l| l.width());
            if used + c.to_string().width() > width {
                lines.push(String::new());
            }
            if let Some(l) = lines.last_mut() {
                l.push(c);
            }
        }
    }
    lines
}

/// The table `rows` (raw lines) drawn for a terminal `columns` wide.
pub fn render(rows: &[String], columns: usize, p: Palette) -> Vec<String> {
    let parsed: Vec<Vec<String>> = rows.iter().map(|r| cells(r)).collect();
    let header_rows = parsed.iter().position(|r| is_delimiter(r));
    let body: Vec<&Vec<String>> = parsed.iter().filter(|r| !is_delimiter(r)).collect();
    let n = body.iter().map(|r| r.len()).max().unwrap_or(0);
    if n == 0 {
        return rows.to_vec();
    }
    let mut widths = vec![1; n];
    for row in &body {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.width());
        }
    }
    // ` │ ` between columns; shrink the widest column until the table fits.
    let room = columns.saturating_sub(3 * (n - 1)).max(n * 3);
    while widths.iter().sum::<usize>() > room {
        let Some(widest) = (0..n).max_by_key(|&i| widths[i]) else {
            break;
        };
        if widths[widest] <= 3 {
            break;
        }
        widths[widest] -= 1;
    }
    let sep = p.paint(DIM, " │ ");
    let mut out = Vec::new();
    for (index, row) in body.iter().enumerate() {
        let header = header_rows.is_some_and(|h| index < h);
        let wrapped: Vec<Vec<String>> = (0..n)
            .map(|i| wrap(row.get(i).map_or("", String::as_str), widths[i]))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for k in 0..height {
            let line: Vec<String> = (0..n)
                .map(|i| {
                    let text = wrapped[i].get(k).map_or("", String::as_str);
                    let pad = " ".repeat(widths[i].saturating_sub(text.width()));
                    let text = if header {
                        p.paint(BOLD, text)
                    } else {
                        text.to_string()
                    };
                    format!("{text}{pad}")
                })
                .collect();
            out.push(line.join(&sep).trim_end().to_string());
        }
        if header && header_rows == Some(index + 1) {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(p.paint(DIM, &rule.join("─┼─")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    const TABLE: &str = "| Crate | Lines | Why |\n|---|--:|---|\n| tern-fs | 1200 | files |\n| tern-gateway | 900 | every call, checked and audited |";

    #[test]
    fn a_table_is_drawn_as_aligned_columns() {
        let out = render(&rows(TABLE), 120, Palette { color: false });
        insta::assert_snapshot!(out.join("\n"));
        // Every row puts its separators at the same columns.
        let at: Vec<Option<usize>> = out
            .iter()
            .map(|l| l.chars().position(|c| c == '│' || c == '┼'))
            .collect();
        assert!(at.windows(2).all(|w| w[0] == w[1]), "{out:#?}");
    }

    #[test]
    fn a_wide_table_wraps_to_the_terminal() {
        let out = render(&rows(TABLE), 30, Palette { color: false });
        insta::assert_snapshot!(out.join("\n"));
        assert!(out.iter().all(|l| l.width() <= 30), "{out:#?}");
        assert!(out.iter().any(|l| l.contains("checked")));
    }

    #[test]
    fn rows_and_escaped_pipes() {
        assert!(is_row("| a | b |") && !is_row("a | b") && !is_row("|"));
        assert_eq!(cells(r"| a \| b | c |"), vec!["a | b", "c"]);
        assert!(is_delimiter(&cells("|:--|--:|")));
    }
}
