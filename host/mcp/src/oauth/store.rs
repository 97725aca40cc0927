//! Where tern keeps what an authorization earned: `$TERN_HOME/oauth/NAME.json`, one file per
//! server, `0600` in a `0700` directory, never written through a symlink, replaced atomically
//! (so a second tern process reads the old file or the new one, never half of one).
//!
//! Credentials are keyed by the issuer of the authorization server that gave them (SEP-2352): a
//! server that moves to another authorization server gets a new registration there, and no
//! client id, secret or refresh token of the old one is ever sent to the new one.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};
use tern_protocol::files;

use super::AuthError;

/// Everything stored for one server.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct ServerAuth {
    /// The MCP endpoint these credentials were obtained for. When the configured `url` changes,
    /// they are not used (a token is bound to its resource).
    pub(crate) url: String,
    /// The resource identifier from the server's protected resource metadata (RFC 8707).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resource: Option<String>,
    /// The issuer whose token is the current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) issuer: Option<String>,
    /// Scopes the server asked for during a run that the token lacks: the next
    /// `tern mcp login` asks for them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) wanted_scopes: Vec<String>,
    /// Per authorization server, by issuer.
    #[serde(default)]
    pub(crate) issuers: BTreeMap<String, IssuerEntry>,
}

impl ServerAuth {
    /// The current token, if any.
    pub(crate) fn token(&self) -> Option<&TokenSet> {
        self.issuers.get(self.issuer.as_ref()?)?.token.as_ref()
    }

    /// The entry of `issuer`, made when missing.
    pub(crate) fn entry(&mut self, issuer: &str) -> &mut IssuerEntry {
        self.issuers.entry(issuer.to_string()).or_default()
    }

    /// Every secret value in the file: what the redactor must never let through.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut out = Vec::new();
        for entry in self.issuers.values() {
            if let Some(t) = &entry.token {
                out.push(t.access_token.clone());
                out.extend(t.refresh_token.clone());
            }
            if let Some(c) = &entry.client {
                out.extend(c.client_secret.clone());
            }
        }
        out
    }
}

/// What tern holds for one authorization server.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct IssuerEntry {
    /// The client tern registered (dynamically) or named itself with (a metadata document).
    /// A client id from the config is not stored: the config stays its one home.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client: Option<StoredClient>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token: Option<TokenSet>,
    /// Endpoints from its metadata, for refreshing and revoking without discovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) revocation_endpoint: Option<String>,
}

/// A client identity at one authorization server.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct StoredClient {
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt` or `none`.
    pub(crate) auth_method: String,
    /// The redirect URI it was registered with (a dynamic registration is only good for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) redirect_uri: Option<String>,
    /// `private_key_jwt`: the algorithm chosen for this authorization server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) signing_alg: Option<String>,
    /// `private_key_jwt`: the configured key and the issuer it signs for. Never saved: the key
    /// stays where the config names it.
    #[serde(skip)]
    pub(crate) signer: Option<Signer>,
}

/// What signs a `private_key_jwt` client's assertions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Signer {
    pub(crate) key: super::ClientKey,
    /// The authorization server's issuer identifier: the assertion's `aud`.
    pub(crate) audience: String,
}

/// An access token and what came with it.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct TokenSet {
    pub(crate) access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    /// The scopes granted (the token response's `scope`, else what was asked for).
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "…"))
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl TokenSet {
    /// Whether the token is past (or within a minute of) its expiry.
    pub(crate) fn expired(&self) -> bool {
        self.expires_at.is_some_and(|at| now() + 60 >= at)
    }
}

/// Unix seconds now.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One server's file.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    path: PathBuf,
}

impl Store {
    pub(crate) fn new(dir: &Path, server: &str) -> Self {
        Self {
            path: dir.join(format!("{server}.json")),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What is stored for `url`: nothing when there is no file or it is for another endpoint.
    pub(crate) fn load_for(&self, url: &str) -> Result<ServerAuth, AuthError> {
        Ok(self
            .load()?
            .filter(|a| a.url == url)
            .unwrap_or_else(|| ServerAuth {
                url: url.to_string(),
                ..ServerAuth::default()
            }))
    }

    /// The file as stored, if there is one.
    pub(crate) fn load(&self) -> Result<Option<ServerAuth>, AuthError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io_error("read", &e)),
        };
        serde_json::from_str(&text).map(Some).map_err(|e| {
            AuthError::Local(format!(
                "{} is not a credentials file tern can read ({e}); delete it with `tern mcp logout`",
                self.path.display()
            ))
        })
    }

    /// Replaces the file with `auth`: written to a private temporary file, then renamed over.
    pub(crate) fn save(&self, auth: &ServerAuth) -> Result<(), AuthError> {
        let json = serde_json::to_vec_pretty(auth)
            .map_err(|e| AuthError::Local(format!("cannot encode credentials: {e}")))?;
        files::write_atomic(&self.path, &json).map_err(|e| self.io_error("write", &e))
    }

    /// Deletes the file; `false` when there was none.
    pub(crate) fn remove(&self) -> Result<bool, AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.io_error("delete", &e)),
        }
    }

    fn io_error(&self, what: &str, e: &std::io::Error) -> AuthError {
        AuthError::Local(format!("cannot {what} {}: {e}", self.path.display()))
    }
}

/// Every token, refresh token and client secret stored under `dir`, for the redactor.
pub fn stored_secrets(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str::<ServerAuth>(&t).ok())
        .flat_map(|a| a.secrets())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ServerAuth {
        let mut a = ServerAuth {
            url: "http://127.0.0.1:1/mcp".into(),
            issuer: Some("http://as".into()),
            ..ServerAuth::default()
        };
        a.entry("http://as").token = Some(TokenSet {
            access_token: "at-123456".into(),
            refresh_token: Some("rt-123456".into()),
            expires_at: Some(now() + 3600),
            scopes: vec!["a".into()],
        });
        a
    }

    #[cfg(unix)]
    #[test]
    fn credentials_are_private_replaced_whole_and_bound_to_their_url() {
        let dir = tempfile::tempdir().unwrap();
        let oauth = dir.path().join("oauth");
        let store = Store::new(&oauth, "remote");
        store.save(&sample()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.path()), 0o600);
        assert_eq!(mode(&oauth), 0o700);
        assert_eq!(
            store
                .load_for("http://127.0.0.1:1/mcp")
                .unwrap()
                .token()
                .unwrap()
                .access_token,
            "at-123456"
        );
        assert!(
            store
                .load_for("http://elsewhere/mcp")
                .unwrap()
                .token()
                .is_none()
        );
        let secrets = stored_secrets(&oauth);
        assert!(secrets.contains(&"at-123456".to_string()), "{secrets:?}");
        assert!(secrets.contains(&"rt-123456".to_string()), "{secrets:?}");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&oauth).unwrap().count(), 1);
        assert!(store.remove().unwrap());
        assert!(!store.remove().unwrap());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_in_place_of_the_file_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let oauth = dir.path().join("oauth");
        std::fs::create_dir_all(&oauth).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, oauth.join("remote.json")).unwrap();
        Store::new(&oauth, "remote").save(&sample()).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(
            !std::fs::symlink_metadata(oauth.join("remote.json"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn tokens_show_no_secret_in_debug_output() {
        let t = sample().token().unwrap().clone();
        let s = format!("{t:?}");
        assert!(!s.contains("at-123456") && !s.contains("rt-123456"), "{s}");
    }
}
