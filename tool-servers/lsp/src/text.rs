//! Positions as the model writes them and as LSP wants them.
//!
//! The model counts lines and columns from 1, in characters; LSP counts from 0, with columns
//! in UTF-16 code units (the protocol's default `positionEncoding`, the one every server
//! supports). Converting needs the line's text.

/// The `line`-th line of `text` (0-based), without its line break.
pub fn line(text: &str, line: usize) -> Option<&str> {
    text.split('\n')
        .nth(line)
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// The UTF-16 offset of character `chars` (0-based) in `line`.
pub fn utf16_of_char(line: &str, chars: usize) -> u32 {
    let units: usize = line.chars().take(chars).map(char::len_utf16).sum();
    u32::try_from(units).unwrap_or(u32::MAX)
}

/// The character index (0-based) of UTF-16 offset `units` in `line` (clamped to its end).
pub fn char_of_utf16(line: &str, units: u32) -> usize {
    let mut seen = 0u32;
    for (i, c) in line.chars().enumerate() {
        if seen >= units {
            return i;
        }
        seen += c.len_utf16() as u32;
    }
    line.chars().count()
}

/// Where `symbol` first occurs on `line` as a whole word (0-based character index), else
/// anywhere.
pub fn find_symbol(line: &str, symbol: &str) -> Option<usize> {
    if symbol.is_empty() {
        return None;
    }
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut fallback = None;
    for (byte, _) in line.match_indices(symbol) {
        let before = line[..byte].chars().next_back();
        let after = line[byte + symbol.len()..].chars().next();
        let chars = line[..byte].chars().count();
        if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
            return Some(chars);
        }
        fallback.get_or_insert(chars);
    }
    fallback
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_convert_through_utf16() {
        let l = "é😀x = 1";
        // é is 1 unit, 😀 is 2.
        assert_eq!(utf16_of_char(l, 2), 3);
        assert_eq!(char_of_utf16(l, 3), 2);
        assert_eq!(char_of_utf16(l, 99), l.chars().count());
        assert_eq!(line("a\r\nbc\n", 1), Some("bc"));
        assert_eq!(line("a", 3), None);
    }

    #[test]
    fn symbols_are_found_as_whole_words_first() {
        assert_eq!(
            find_symbol("total = subtotal + total_x + total", "total"),
            Some(0)
        );
        assert_eq!(find_symbol("x = subtotal", "total"), Some(7));
        assert_eq!(find_symbol("a.b(tot)", "total"), None);
        assert_eq!(find_symbol("é = add(1)", "add"), Some(4));
    }
}
