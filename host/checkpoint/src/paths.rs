//! Workspace paths as git prints them (bytes, relative, `/`-separated) and as JSON carries
//! them (strings): a file name need not be UTF-8, so bytes that are not — and `%` itself —
//! are written `%XX`, which reads back to the same bytes.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The path of `bytes` (relative to the workspace).
pub(crate) fn from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// The bytes of a relative path.
pub(crate) fn as_bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

/// `bytes` as a string: valid UTF-8 stays as it is, except `%`; anything else is `%XX`.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '%' {
                out.push_str("%25");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The bytes [`escape`] wrote; `None` for a malformed escape.
pub(crate) fn unescape(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Serde for a relative `PathBuf` as an escaped string.
pub(crate) mod serde_path {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&escape(as_bytes(path)))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        let s = String::deserialize(d)?;
        unescape(&s)
            .map(|b| from_bytes(&b))
            .ok_or_else(|| serde::de::Error::custom(format!("malformed path escape in `{s}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_file_name_survives_the_round_trip() {
        for name in [
            &b"src/main.rs"[..],
            b"100%/done",
            b"caf\xc3\xa9",
            b"bad\xff\xfe name",
            b"%41",
        ] {
            let text = escape(name);
            assert_eq!(unescape(&text).unwrap(), name, "{text}");
        }
        assert_eq!(escape(b"a%b\xff"), "a%25b%FF");
        assert!(unescape("%4").is_none());
        assert!(unescape("%zz").is_none());
    }
}
