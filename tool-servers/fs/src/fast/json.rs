//! JSON written straight into the reply buffer, byte for byte what `serde_json` writes.
//!
//! serde_json escapes a string one byte at a time through a lookup table; for a
//! `read_file` reply (the file's text twice, ~6 KB) that loop was 46 % of the server's
//! instructions per call. [`escape_into`] finds the next byte that needs escaping eight
//! bytes at a time (SWAR: no `unsafe`, no target features) and copies the clean runs
//! whole. Its output is serde_json's exactly (`serialize_str`: `\"`, `\\`, `\b`, `\f`,
//! `\n`, `\r`, `\t`, other control bytes as `\u00xx` with lowercase hex; DEL and
//! non-ASCII as they are) — `tests::escapes_exactly_like_serde_json` checks every byte
//! value and mixed strings against serde_json itself.

/// Bytes of a u64 all set to `b`.
const fn splat(b: u8) -> u64 {
    u64::from_le_bytes([b; 8])
}

const LOW7: u64 = splat(0x7f);
const HIGH: u64 = splat(0x80);

/// A word whose high bit is set in every byte of `chunk` that JSON needs escaped
/// (`< 0x20`, `"`, `\`) and clear in every other byte. Exact per byte (no carries
/// between bytes: each byte's low seven bits are handled on their own).
fn needs_escape(chunk: u64) -> u64 {
    let low = chunk & LOW7;
    // Bytes whose low seven bits equal a value get 0x80 from adding 0x7f to their XOR
    // with it only when that XOR is non-zero; so "not (x + 0x7f) & 0x80" marks equality.
    let is_quote = !((low ^ splat(b'"')) + LOW7);
    let is_backslash = !((low ^ splat(b'\\')) + LOW7);
    // Below 0x20: adding 0x60 to the low seven bits stays under 0x80.
    let is_control = !(low + splat(0x60));
    // A byte with its own high bit set (UTF-8 beyond ASCII) never needs escaping.
    (is_quote | is_backslash | is_control) & !chunk & HIGH
}

/// Appends `s` to `out` escaped as the inside of a JSON string (no quotes).
pub(crate) fn escape_into(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 16);
    let mut clean_from = 0;
    while let Some(at) = next_escape(bytes, clean_from) {
        out.extend_from_slice(&bytes[clean_from..at]);
        push_escape(out, bytes[at]);
        clean_from = at + 1;
    }
    out.extend_from_slice(&bytes[clean_from..]);
}

/// Index of the first byte at or after `from` that needs escaping: sixteen bytes per step,
/// the last few through the table.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    let mut blocks = rest.chunks_exact(16);
    let mut base = from;
    for block in &mut blocks {
        let (a, b) = block.split_at(8);
        let (a, b) = (needs_escape(word(a)), needs_escape(word(b)));
        if a | b != 0 {
            let within = if a != 0 {
                a.trailing_zeros() / 8
            } else {
                8 + b.trailing_zeros() / 8
            };
            return Some(base + within as usize);
        }
        base += 16;
    }
    blocks
        .remainder()
        .iter()
        .position(|&b| ESCAPE[b as usize] != 0)
        .map(|k| base + k)
}

/// Eight bytes as a little-endian word (the first byte lowest, so `trailing_zeros` finds it).
fn word(eight: &[u8]) -> u64 {
    // Always eight bytes here (halves of a 16-byte block): the conversion cannot fail.
    u64::from_le_bytes(eight.try_into().unwrap_or_default())
}

/// Appends `s` as a JSON string (quotes included).
pub(crate) fn string_into(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    escape_into(out, s);
    out.push(b'"');
}

fn push_escape(out: &mut Vec<u8>, byte: u8) {
    match ESCAPE[byte as usize] {
        b'u' => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(byte >> 4) as usize]);
            out.push(HEX[(byte & 0xf) as usize]);
        }
        short => out.extend_from_slice(&[b'\\', short]),
    }
}

/// serde_json's table (`ser.rs`, `ESCAPE`): the letter after the backslash, `u` for
/// `\u00xx`, 0 for a byte written as is.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

/// Appends an unsigned integer in decimal.
pub(crate) fn u64_into(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut n = n;
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ours(s: &str) -> String {
        let mut out = Vec::new();
        string_into(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_exactly_like_serde_json() {
        // Every byte value that is a whole character, at every position in a word.
        for c in (0u32..0x80).chain([0xe9, 0x2028, 0x1f600]) {
            let c = char::from_u32(c).unwrap();
            for pad in 0..17 {
                let s = format!("{}{c}{}", "a".repeat(pad), "b".repeat(16 - pad));
                assert_eq!(ours(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
            }
        }
        let mixed = [
            "",
            "plain",
            "     1\tline one\n     2\tline \"two\" \\ end\r\n",
            "\u{0}\u{1}\u{1f}\u{7f}é€😀\t\u{b}\u{c}\u{8}",
            "\\\\\\\"\"\"\n\n\n\n\n\n\n\n\n\n",
            "é\"é\"é\"é\"é\"é\"é\"é\"",
            "\u{fffd}\u{fffd} lossy replacement characters",
        ];
        for s in mixed {
            assert_eq!(ours(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn a_pseudo_random_corpus_matches_serde_json() {
        // xorshift over a small alphabet rich in the bytes that matter.
        let alphabet: Vec<char> = "ab \t\n\r\"\\\u{0}\u{1f}\u{7f}é😀/<>".chars().collect();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in 0..200 {
            let s: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            assert_eq!(ours(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn integers_match_serde_json() {
        for n in [0, 1, 9, 10, 99, 100, 12345, u64::MAX] {
            let mut out = Vec::new();
            u64_into(&mut out, n);
            assert_eq!(out, serde_json::to_vec(&n).unwrap());
        }
    }
}
