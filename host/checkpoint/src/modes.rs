//! The permission bits of every regular file in a checkpoint.
//!
//! git keeps one bit of a file's mode (executable or not), so a `chmod 600 .env` would be
//! invisible to it and a restore would bring the file back `0644`: wider than the user left
//! it. A checkpoint therefore records the full bits (`0o7777`) itself — as the most common
//! value plus the files that differ, which is a handful of entries in any real tree whatever
//! the umask was.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::paths;

/// Permission bits per file path (bytes, relative to the workspace).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Modes {
    default: u32,
    except: BTreeMap<Vec<u8>, u32>,
}

impl Modes {
    /// The modes of these files, stored as the most common one plus the exceptions.
    pub(crate) fn from_files(files: Vec<(Vec<u8>, u32)>) -> Self {
        let mut counts: HashMap<u32, usize> = HashMap::new();
        for (_, mode) in &files {
            *counts.entry(*mode).or_default() += 1;
        }
        // Ties go to the smaller mode, so the same files always give the same record.
        let default = counts
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map_or(0o644, |(mode, _)| mode);
        let except = files
            .into_iter()
            .filter(|(_, mode)| *mode != default)
            .collect();
        Self { default, except }
    }

    /// Records `mode` for the regular file at `path` (the default stays what it was: a
    /// checkpoint changes a few files, not what is common).
    pub(crate) fn set(&mut self, path: &[u8], mode: u32) {
        if mode == self.default {
            self.except.remove(path);
        } else {
            self.except.insert(path.to_vec(), mode);
        }
    }

    /// Forgets `path` (no longer a recorded regular file).
    pub(crate) fn remove(&mut self, path: &[u8]) {
        self.except.remove(path);
    }

    /// The recorded bits of the regular file at `path`.
    pub(crate) fn get(&self, path: &[u8]) -> u32 {
        self.except.get(path).copied().unwrap_or(self.default)
    }
}

#[derive(Serialize, Deserialize)]
struct Wire {
    default: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    except: BTreeMap<String, String>,
}

impl Serialize for Modes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            default: format!("{:o}", self.default),
            except: self
                .except
                .iter()
                .map(|(p, m)| (paths::escape(p), format!("{m:o}")))
                .collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Modes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let wire = Wire::deserialize(d)?;
        let octal = |s: &str| {
            u32::from_str_radix(s, 8)
                .ok()
                .filter(|m| *m <= 0o7777)
                .ok_or_else(|| D::Error::custom(format!("`{s}` is not a file mode")))
        };
        let mut except = BTreeMap::new();
        for (path, mode) in &wire.except {
            let bytes = paths::unescape(path)
                .ok_or_else(|| D::Error::custom(format!("malformed path `{path}`")))?;
            except.insert(bytes, octal(mode)?);
        }
        Ok(Self {
            default: octal(&wire.default)?,
            except,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_mode_is_the_default_and_the_rest_are_listed() {
        let modes = Modes::from_files(vec![
            (b"a".to_vec(), 0o664),
            (b"b".to_vec(), 0o664),
            (b"run.sh".to_vec(), 0o775),
            (b".env".to_vec(), 0o600),
        ]);
        assert_eq!(modes.get(b"a"), 0o664);
        assert_eq!(modes.get(b"run.sh"), 0o775);
        assert_eq!(modes.get(b".env"), 0o600);
        let json = serde_json::to_string(&modes).unwrap();
        assert_eq!(
            json,
            r#"{"default":"664","except":{".env":"600","run.sh":"775"}}"#
        );
        let back: Modes = serde_json::from_str(&json).unwrap();
        assert_eq!(back, modes);
        assert!(serde_json::from_str::<Modes>(r#"{"default":"99999"}"#).is_err());
    }
}
