//! Who tern is to an authorization server, in the order the MCP spec gives: a client id from the
//! config (pre-registration), then a Client ID Metadata Document (an `https` URL as the client
//! id, when the server supports them and one is configured), then Dynamic Client Registration
//! (RFC 7591) — and how that client authenticates at the token endpoint
//! (`client_secret_basic`, `client_secret_post`, `private_key_jwt` (RFC 7523) or `none`).

use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Value, json};

use super::{
    AuthError, OAuthSpec,
    assertion::ASSERTION_TYPE,
    metadata::ServerMetadata,
    net,
    store::{Signer, StoredClient},
};

/// What the client is called where a person sees it (the consent screen).
const CLIENT_NAME: &str = "tern";

/// `client_secret_basic`, `client_secret_post`, `private_key_jwt`, `none`.
pub(crate) const BASIC: &str = "client_secret_basic";
pub(crate) const POST: &str = "client_secret_post";
pub(crate) const PRIVATE_KEY_JWT: &str = "private_key_jwt";
pub(crate) const NONE: &str = "none";

/// The client for `server`: configured, then a metadata document, then one registered before
/// for `redirect_uri`, then a new registration. `None` from the last step is an error naming
/// what to configure.
pub(crate) async fn client(
    http: &reqwest::Client,
    spec: &OAuthSpec,
    server: &ServerMetadata,
    known: Option<&StoredClient>,
    redirect_uri: &str,
) -> Result<StoredClient, AuthError> {
    if let Some(client_id) = &spec.client_id {
        if let Some(key) = &spec.client_key {
            let alg = key.alg_for(
                server
                    .token_endpoint_auth_signing_alg_values_supported
                    .as_deref(),
            )?;
            return Ok(StoredClient {
                client_id: client_id.clone(),
                auth_method: PRIVATE_KEY_JWT.to_string(),
                signing_alg: Some(alg.name().to_string()),
                signer: Some(Signer {
                    key: key.clone(),
                    audience: server.issuer.clone(),
                }),
                ..StoredClient::default()
            });
        }
        let auth_method = method_for(None, spec.client_secret.is_some(), server);
        return Ok(StoredClient {
            client_id: client_id.clone(),
            client_secret: spec.client_secret.clone(),
            auth_method,
            ..StoredClient::default()
        });
    }
    if let Some(url) = &spec.client_metadata_url
        && server.client_id_metadata_document_supported
    {
        return Ok(StoredClient {
            client_id: url.clone(),
            auth_method: NONE.to_string(),
            ..StoredClient::default()
        });
    }
    if let Some(known) = known
        && known
            .redirect_uri
            .as_deref()
            .is_none_or(|r| r == redirect_uri)
    {
        return Ok(known.clone());
    }
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(AuthError::Discovery(format!(
            "the authorization server `{}` offers no dynamic client registration: set \
             `oauth.client_id` (and `client_secret_env`) for this server, registered with it",
            server.issuer
        )));
    };
    register(http, endpoint, server, redirect_uri).await
}

/// RFC 7591 registration of a native client (SEP-837: `application_type`) that may refresh
/// (SEP-2207: `refresh_token` in `grant_types`).
async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    server: &ServerMetadata,
    redirect_uri: &str,
) -> Result<StoredClient, AuthError> {
    let supported = server.token_endpoint_auth_methods_supported.as_deref();
    let wanted = match supported {
        Some(methods) if !methods.iter().any(|m| m == NONE) => {
            if methods.iter().any(|m| m == BASIC) {
                BASIC
            } else if methods.iter().any(|m| m == POST) {
                POST
            } else {
                NONE
            }
        }
        _ => NONE,
    };
    let body = json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted,
        "application_type": "native",
    });
    let what = format!("registering with the authorization server at {endpoint}");
    let reply = net::send(http.post(endpoint).json(&body), &what).await?;
    if !reply.ok() {
        return Err(AuthError::Refused {
            step: "client registration",
            reason: reply.oauth_error(),
        });
    }
    let json = reply
        .json()
        .ok_or_else(|| AuthError::Http(format!("{what}: the answer is not JSON")))?;
    let field = |k: &str| json.get(k).and_then(Value::as_str).map(str::to_string);
    let client_id = field("client_id")
        .ok_or_else(|| AuthError::Http(format!("{what}: the answer has no client_id")))?;
    let client_secret = field("client_secret");
    let auth_method = method_for(
        field("token_endpoint_auth_method").as_deref(),
        client_secret.is_some(),
        server,
    );
    Ok(StoredClient {
        client_id,
        client_secret,
        auth_method,
        redirect_uri: Some(redirect_uri.to_string()),
        ..StoredClient::default()
    })
}

/// How a client authenticates at the token endpoint: what its registration says, else (with a
/// secret) `client_secret_basic` unless the server lists only `client_secret_post`, else `none`.
fn method_for(registered: Option<&str>, has_secret: bool, server: &ServerMetadata) -> String {
    if let Some(m) = registered.filter(|m| [BASIC, POST, NONE].contains(m)) {
        return m.to_string();
    }
    if !has_secret {
        return NONE.to_string();
    }
    match server.token_endpoint_auth_methods_supported.as_deref() {
        // RFC 8414 §2: omitted means client_secret_basic.
        None => BASIC.to_string(),
        Some(methods) if methods.iter().any(|m| m == BASIC) => BASIC.to_string(),
        Some(methods) if methods.iter().any(|m| m == POST) => POST.to_string(),
        Some(_) => NONE.to_string(),
    }
}

/// Adds the client's authentication to a token-endpoint request: the `Authorization: Basic`
/// header (RFC 6749 §2.3.1: id and secret form-encoded first), `client_id` (and
/// `client_secret`) in the body, or a fresh signed assertion (RFC 7523 §2.2) with the
/// `client_id`.
pub(crate) fn authenticate(
    client: &StoredClient,
    request: reqwest::RequestBuilder,
    params: &mut Vec<(&'static str, String)>,
) -> Result<reqwest::RequestBuilder, AuthError> {
    Ok(match (client.auth_method.as_str(), &client.client_secret) {
        (PRIVATE_KEY_JWT, _) => {
            let Some(signer) = &client.signer else {
                return Err(AuthError::Local(format!(
                    "client `{}` authenticates with a private key (`private_key_jwt`), and none \
                     is configured\nhint: set `oauth.private_key_file` or `private_key_env` for \
                     this server",
                    client.client_id
                )));
            };
            let alg = match client
                .signing_alg
                .as_deref()
                .and_then(super::SigningAlg::parse)
            {
                Some(alg) => alg,
                None => signer.key.alg_for(None)?,
            };
            params.push(("client_id", client.client_id.clone()));
            params.push(("client_assertion_type", ASSERTION_TYPE.to_string()));
            params.push((
                "client_assertion",
                signer
                    .key
                    .assertion(&client.client_id, &signer.audience, alg)?,
            ));
            request
        }
        (BASIC, Some(secret)) => {
            let encode =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let credentials = format!("{}:{}", encode(&client.client_id), encode(secret));
            request.header(
                reqwest::header::AUTHORIZATION,
                format!("Basic {}", STANDARD.encode(credentials)),
            )
        }
        (POST, Some(secret)) => {
            params.push(("client_id", client.client_id.clone()));
            params.push(("client_secret", secret.clone()));
            request
        }
        _ => {
            params.push(("client_id", client.client_id.clone()));
            request
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(methods: Option<&[&str]>) -> ServerMetadata {
        ServerMetadata {
            token_endpoint_auth_methods_supported: methods
                .map(|m| m.iter().map(|s| s.to_string()).collect()),
            ..ServerMetadata::default()
        }
    }

    #[test]
    fn the_auth_method_follows_the_registration_then_the_server() {
        assert_eq!(method_for(Some(POST), true, &server(None)), POST);
        assert_eq!(method_for(None, false, &server(Some(&[BASIC]))), NONE);
        assert_eq!(method_for(None, true, &server(None)), BASIC);
        assert_eq!(method_for(None, true, &server(Some(&[POST]))), POST);
        assert_eq!(method_for(None, true, &server(Some(&[NONE]))), NONE);
    }

    #[test]
    fn basic_credentials_are_form_encoded_before_base64() {
        let client = StoredClient {
            client_id: "id:1".into(),
            client_secret: Some("s e+c".into()),
            auth_method: BASIC.into(),
            ..StoredClient::default()
        };
        let http = crate::http_client().build().unwrap_or_default();
        let mut params = Vec::new();
        let req = authenticate(&client, http.post("http://127.0.0.1:9/token"), &mut params)
            .unwrap()
            .build()
            .unwrap();
        let header = req.headers()[reqwest::header::AUTHORIZATION]
            .to_str()
            .unwrap();
        let decoded = STANDARD
            .decode(header.trim_start_matches("Basic "))
            .unwrap();
        assert_eq!(String::from_utf8(decoded).unwrap(), "id%3A1:s+e%2Bc");
        assert!(params.is_empty());
    }
}
