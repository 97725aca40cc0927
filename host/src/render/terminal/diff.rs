//! Unified diffs, coloured.

use super::style::{BOLD, CYAN, DIM, GREEN, Palette, RED};

/// The lines of `diff`, each styled by its kind and indented by `indent`.
pub fn render(diff: &str, indent: &str, p: Palette) -> Vec<String> {
    diff.lines()
        .map(|l| {
            let styled = if l.starts_with("+++") || l.starts_with("---") {
                p.paint(BOLD, l)
            } else if l.starts_with("@@") {
                p.paint(CYAN, l)
            } else if l.starts_with('+') {
                p.paint(GREEN, l)
            } else if l.starts_with('-') {
                p.paint(RED, l)
            } else {
                p.paint(DIM, l)
            };
            format!("{indent}{styled}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_coloured_by_kind() {
        let diff = "--- a\n+++ a\n@@ -1 +1 @@\n-old\n+new\n ctx";
        let lines = render(diff, "  ", Palette { color: true });
        assert_eq!(lines[3], "  \x1b[31m-old\x1b[0m");
        assert_eq!(lines[4], "  \x1b[32m+new\x1b[0m");
        assert!(lines[2].starts_with("  \x1b[36m@@"));
        let plain = render(diff, "", Palette { color: false });
        assert_eq!(plain.join("\n"), diff);
    }
}
