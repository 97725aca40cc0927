//! Discovery: which authorization server guards an MCP server, and how to talk to it.
//!
//! - Protected resource metadata (RFC 9728): at the `resource_metadata` URL of the server's
//!   `WWW-Authenticate` challenge, else at the well-known locations — the one with the
//!   endpoint's path first (`/.well-known/oauth-protected-resource/mcp`), then the root.
//!   Its `resource` must name this server (same origin, a path prefix of the endpoint):
//!   metadata naming another resource is refused before anything is sent anywhere.
//! - Authorization server metadata (RFC 8414, OpenID Connect Discovery 1.0): for an issuer
//!   with a path, `/.well-known/oauth-authorization-server/PATH`, then
//!   `/.well-known/openid-configuration/PATH`, then `PATH/.well-known/openid-configuration`;
//!   without one, the first two at the root. The document's `issuer` must be the issuer the
//!   URL was built from, character for character (RFC 8414 §3.3), or it is not used.

use serde::Deserialize;
use serde_json::Value;

use super::{
    AuthError,
    challenge::Challenge,
    net::{self, Reply},
};

/// What a protected resource publishes about itself (RFC 9728 §2).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResourceMetadata {
    /// The resource identifier, exactly as published: sent as `resource` (RFC 8707).
    pub(crate) resource: String,
    pub(crate) authorization_servers: Vec<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
}

/// What an authorization server publishes (RFC 8414 §2), the fields tern uses.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    /// Absent on a server that grants only `client_credentials` (no person to send anywhere).
    #[serde(default)]
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    /// RFC 8414 `grant_types_supported` (absent means `authorization_code` and `implicit`).
    #[serde(default)]
    pub(crate) grant_types_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) revocation_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// The JWS algorithms it takes for `private_key_jwt` assertions.
    #[serde(default)]
    pub(crate) token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents (an `https` URL as the client id) are accepted.
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
}

impl ServerMetadata {
    /// The server grants `client_credentials` and not `authorization_code`: a machine-to-machine
    /// authorization server (the MCP OAuth client-credentials extension, SEP-1046), where no
    /// person can authorize anything.
    pub(crate) fn client_credentials_only(&self) -> bool {
        self.grant_types_supported.as_ref().is_some_and(|g| {
            g.iter().any(|x| x == "client_credentials")
                && !g.iter().any(|x| x == "authorization_code")
        })
    }
}

/// Finds the protected resource metadata of the MCP endpoint `endpoint`.
pub(crate) async fn resource_metadata(
    http: &reqwest::Client,
    endpoint: &str,
    challenge: &Challenge,
) -> Result<ResourceMetadata, AuthError> {
    let server = net::parse_url(endpoint, "the server URL")?;
    let mut candidates = Vec::new();
    if let Some(url) = &challenge.resource_metadata {
        candidates.push(url.clone());
    }
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    let mut tried = Vec::new();
    for url in candidates {
        let what = format!("fetching the protected resource metadata at {url}");
        let reply = net::get(http, &url, &what).await?;
        if !reply.ok() {
            tried.push(format!("{url} (HTTP {})", reply.status));
            continue;
        }
        let metadata = parse_resource(&reply, &url)?;
        check_resource(&metadata.resource, &server)?;
        return Ok(metadata);
    }
    Err(AuthError::Discovery(format!(
        "the server asks for authorization but publishes no protected resource metadata (tried {})",
        tried.join(", ")
    )))
}

fn parse_resource(reply: &Reply, url: &str) -> Result<ResourceMetadata, AuthError> {
    let bad =
        |why: &str| AuthError::Discovery(format!("the protected resource metadata at {url} {why}"));
    let json = reply.json().ok_or_else(|| bad("is not JSON"))?;
    let resource = json
        .get("resource")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("has no `resource`"))?
        .to_string();
    let authorization_servers: Vec<String> = strings(&json, "authorization_servers")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad("names no authorization server (`authorization_servers`)"))?;
    Ok(ResourceMetadata {
        resource,
        authorization_servers,
        scopes_supported: strings(&json, "scopes_supported"),
    })
}

fn strings(json: &Value, key: &str) -> Option<Vec<String>> {
    json.get(key)?.as_array().map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

/// The metadata's `resource` must be this server: same scheme, host and port, and a path that
/// is the endpoint's path or a prefix of it ending at a `/` (RFC 9728 §3.3, RFC 8707 §2).
fn check_resource(resource: &str, server: &url::Url) -> Result<(), AuthError> {
    let mismatch = || AuthError::ResourceMismatch {
        resource: resource.to_string(),
        server: server.to_string(),
    };
    let r = url::Url::parse(resource).map_err(|_| mismatch())?;
    if r.fragment().is_some()
        || r.scheme() != server.scheme()
        || r.host_str().map(str::to_ascii_lowercase)
            != server.host_str().map(str::to_ascii_lowercase)
        || r.port_or_known_default() != server.port_or_known_default()
    {
        return Err(mismatch());
    }
    let prefix = r.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    let covers = path == prefix || path.starts_with(&format!("{prefix}/"));
    if covers { Ok(()) } else { Err(mismatch()) }
}

/// Finds and checks the metadata of the authorization server `issuer`.
pub(crate) async fn server_metadata(
    http: &reqwest::Client,
    issuer: &str,
) -> Result<ServerMetadata, AuthError> {
    let url = net::parse_url(issuer, "the authorization server")?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(AuthError::Discovery(format!(
            "the authorization server `{issuer}` is not an issuer identifier (it has a query or fragment)"
        )));
    }
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let candidates = if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    };
    let mut tried = Vec::new();
    for candidate in candidates {
        let what = format!("fetching the authorization server metadata at {candidate}");
        let reply = net::get(http, &candidate, &what).await?;
        if !reply.ok() {
            tried.push(format!("{candidate} (HTTP {})", reply.status));
            continue;
        }
        let metadata: ServerMetadata = serde_json::from_slice(&reply.body).map_err(|e| {
            AuthError::Discovery(format!(
                "the authorization server metadata at {candidate} cannot be read: {e}"
            ))
        })?;
        if metadata.issuer != issuer {
            return Err(AuthError::IssuerMismatch {
                expected: issuer.to_string(),
                found: metadata.issuer,
                at: candidate,
            });
        }
        check_server(&metadata)?;
        return Ok(metadata);
    }
    Err(AuthError::Discovery(format!(
        "the authorization server `{issuer}` publishes no metadata (tried {})",
        tried.join(", ")
    )))
}

/// PKCE with S256 must be advertised (the MCP spec: a client MUST refuse to proceed without
/// it), and the endpoints that receive secrets must be HTTPS or on this machine.
fn check_server(m: &ServerMetadata) -> Result<(), AuthError> {
    // PKCE protects the authorization code; a server without that grant issues no code.
    let s256 = m.client_credentials_only()
        || m.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|x| x == "S256"));
    if !s256 {
        return Err(AuthError::Discovery(format!(
            "the authorization server `{}` does not advertise PKCE with S256 \
             (code_challenge_methods_supported), which MCP requires",
            m.issuer
        )));
    }
    for (what, endpoint) in [
        (
            "authorization_endpoint",
            Some(&m.authorization_endpoint).filter(|e| !e.is_empty()),
        ),
        ("token_endpoint", Some(&m.token_endpoint)),
        ("registration_endpoint", m.registration_endpoint.as_ref()),
    ] {
        let Some(endpoint) = endpoint else { continue };
        let url = net::parse_url(endpoint, what)?;
        if !net::secure(&url) {
            return Err(AuthError::Discovery(format!(
                "the authorization server's {what} `{endpoint}` is plain HTTP to another machine"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    #[test]
    fn the_resource_must_be_this_server_or_a_path_prefix_of_it() {
        let server = url("http://localhost:3000/mcp");
        assert!(check_resource("http://localhost:3000/mcp", &server).is_ok());
        assert!(check_resource("http://localhost:3000", &server).is_ok());
        assert!(check_resource("http://LOCALHOST:3000/", &server).is_ok());
        assert!(check_resource("https://evil.example.com/mcp", &server).is_err());
        assert!(check_resource("http://localhost:3001/mcp", &server).is_err());
        assert!(check_resource("http://localhost:3000/mc", &server).is_err());
        assert!(check_resource("http://localhost:3000/mcp/other", &server).is_err());
        assert!(check_resource("http://localhost:3000/mcp#x", &server).is_err());
        assert!(check_resource("https://localhost:3000/mcp", &server).is_err());
    }

    #[test]
    fn endpoints_that_get_secrets_are_https_or_local() {
        let mut m = ServerMetadata {
            issuer: "https://as.example".into(),
            authorization_endpoint: "https://as.example/authorize".into(),
            token_endpoint: "http://127.0.0.1:9/token".into(),
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            ..ServerMetadata::default()
        };
        assert!(check_server(&m).is_ok());
        m.token_endpoint = "http://as.example/token".into();
        assert!(check_server(&m).is_err());
        m.token_endpoint = "https://as.example/token".into();
        m.code_challenge_methods_supported = Some(vec!["plain".into()]);
        assert!(check_server(&m).unwrap_err().to_string().contains("S256"));
    }

    #[test]
    fn a_server_granting_only_client_credentials_is_told_apart() {
        let mut m = ServerMetadata::default();
        assert!(
            !m.client_credentials_only(),
            "absent means authorization_code"
        );
        m.grant_types_supported = Some(vec!["client_credentials".into()]);
        assert!(m.client_credentials_only());
        // Such a server issues no code, so no PKCE is needed; its token endpoint is still checked.
        m.issuer = "http://127.0.0.1:9/".into();
        m.token_endpoint = "http://127.0.0.1:9/token".into();
        assert!(check_server(&m).is_ok(), "{:?}", check_server(&m));
        m.token_endpoint = "http://as.example/token".into();
        assert!(check_server(&m).is_err(), "plain HTTP to another machine");
        m.grant_types_supported = Some(vec![
            "authorization_code".into(),
            "client_credentials".into(),
        ]);
        assert!(!m.client_credentials_only());
    }
}
