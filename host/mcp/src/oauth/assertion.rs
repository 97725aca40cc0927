//! `private_key_jwt` client authentication (RFC 7523 §2.2, OpenID Connect Core §9; the MCP
//! client-credentials extension, SEP-1046): instead of a secret, the client sends a short-lived
//! JWT signed with its private key, whose public half the authorization server holds.
//!
//! The key comes from the config as PEM (PKCS#8, PKCS#1 `RSA PRIVATE KEY` or SEC1 `EC PRIVATE
//! KEY`); RSA keys sign RS256 (or PS256), P-256 keys ES256, P-384 keys ES384. The assertion
//! names the client as `iss` and `sub`, the authorization server's issuer identifier as `aud`
//! (what the MCP SDKs send and RFC 7523bis requires; one audience for every endpoint), a fresh
//! `jti`, and lives five minutes.

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{
    rand::SystemRandom,
    signature::{self, EcdsaKeyPair, RsaKeyPair},
};
use rustls::pki_types::{PrivateKeyDer, pem::PemObject};
use serde::Serialize;

use super::{AuthError, pkce::random_token, store::now};

/// `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
pub(crate) const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is good for, in seconds (the MCP SDKs' default).
const LIFETIME: u64 = 300;

/// The algorithms tern signs with, for messages.
const SUPPORTED: &str = "RS256, PS256 (RSA keys), ES256 (P-256 keys), ES384 (P-384 keys)";

/// A JWS algorithm tern can sign with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigningAlg {
    Rs256,
    Ps256,
    Es256,
    Es384,
}

impl SigningAlg {
    /// Its JWS name (RFC 7518).
    pub fn name(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Ps256 => "PS256",
            Self::Es256 => "ES256",
            Self::Es384 => "ES384",
        }
    }

    /// From its JWS name.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Rs256, Self::Ps256, Self::Es256, Self::Es384]
            .into_iter()
            .find(|a| a.name() == name)
    }
}

/// Why a configured private key cannot be used. Each message says what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error(
        "is not a PEM private key ({0})\nhint: give a PEM file with a `-----BEGIN PRIVATE \
         KEY-----` (PKCS#8), `RSA PRIVATE KEY` or `EC PRIVATE KEY` block, unencrypted"
    )]
    NotPem(String),
    #[error(
        "holds an encrypted private key, which tern cannot unlock\nhint: decrypt it, e.g. \
         `openssl pkcs8 -in KEY -out KEY.plain.pem`"
    )]
    Encrypted,
    #[error(
        "is a private key of a kind tern cannot sign with ({0})\nhint: use an RSA (2048 bits or \
         more), P-256 or P-384 key; tern signs {SUPPORTED}"
    )]
    Unsupported(String),
    #[error(
        "is {kind} key, which cannot sign {alg}\nhint: set `signing_alg` to one of {fits}, or \
         configure a key for {alg}"
    )]
    WrongAlg {
        kind: &'static str,
        alg: &'static str,
        fits: String,
    },
}

/// A client's private key for `private_key_jwt`, parsed once. Compared by its DER bytes.
#[derive(Clone)]
pub struct ClientKey {
    pair: Arc<Pair>,
    der: Arc<[u8]>,
    /// `signing_alg` from the config; otherwise the key's own first algorithm, or one the
    /// authorization server lists.
    configured: Option<SigningAlg>,
    /// `key_id`: sent as the JWT's `kid`, for a server holding several keys of the client.
    key_id: Option<String>,
}

enum Pair {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair, SigningAlg),
}

impl ClientKey {
    /// Parses a PEM private key, checking it can sign `alg` when one is given.
    pub fn from_pem(
        pem: &[u8],
        alg: Option<SigningAlg>,
        key_id: Option<String>,
    ) -> Result<Self, KeyError> {
        if String::from_utf8_lossy(pem).contains("ENCRYPTED PRIVATE KEY") {
            return Err(KeyError::Encrypted);
        }
        let key = PrivateKeyDer::from_pem_slice(pem).map_err(|e| KeyError::NotPem(pem_why(&e)))?;
        let (pair, der) = match &key {
            PrivateKeyDer::Pkcs8(k) => (pkcs8_pair(k.secret_pkcs8_der())?, k.secret_pkcs8_der()),
            PrivateKeyDer::Pkcs1(k) => (
                Pair::Rsa(
                    RsaKeyPair::from_der(k.secret_pkcs1_der())
                        .map_err(|e| KeyError::Unsupported(format!("RSA: {e}")))?,
                ),
                k.secret_pkcs1_der(),
            ),
            PrivateKeyDer::Sec1(k) => (sec1_pair(k.secret_sec1_der())?, k.secret_sec1_der()),
            _ => return Err(KeyError::Unsupported("an unknown PEM block".into())),
        };
        let key = Self {
            pair: Arc::new(pair),
            der: der.into(),
            configured: alg,
            key_id,
        };
        if let Some(alg) = alg
            && !key.fits().contains(&alg)
        {
            return Err(KeyError::WrongAlg {
                kind: key.kind(),
                alg: alg.name(),
                fits: names(&key.fits()),
            });
        }
        Ok(key)
    }

    /// The algorithms this key can sign, preferred first.
    fn fits(&self) -> Vec<SigningAlg> {
        match &*self.pair {
            Pair::Rsa(_) => vec![SigningAlg::Rs256, SigningAlg::Ps256],
            Pair::Ec(_, alg) => vec![*alg],
        }
    }

    fn kind(&self) -> &'static str {
        match &*self.pair {
            Pair::Rsa(_) => "an RSA",
            Pair::Ec(_, SigningAlg::Es384) => "a P-384",
            Pair::Ec(..) => "a P-256",
        }
    }

    /// The algorithm to sign with for an authorization server that lists `offered`
    /// (`token_endpoint_auth_signing_alg_values_supported`; `None`: it does not say).
    pub(crate) fn alg_for(&self, offered: Option<&[String]>) -> Result<SigningAlg, AuthError> {
        let candidates = match self.configured {
            Some(alg) => vec![alg],
            None => self.fits(),
        };
        let Some(offered) = offered else {
            return Ok(candidates[0]);
        };
        candidates
            .iter()
            .copied()
            .find(|a| offered.iter().any(|o| o == a.name()))
            .ok_or_else(|| {
                AuthError::Discovery(format!(
                    "the authorization server accepts client assertions signed with {} only; the \
                     configured key signs {}",
                    offered.join(", "),
                    names(&candidates)
                ))
            })
    }

    /// A fresh assertion for `client_id` to present to the authorization server `audience`.
    pub(crate) fn assertion(
        &self,
        client_id: &str,
        audience: &str,
        alg: SigningAlg,
    ) -> Result<String, AuthError> {
        let iat = now();
        let claims = Claims {
            iss: client_id,
            sub: client_id,
            aud: audience,
            iat,
            exp: iat + LIFETIME,
            jti: &random_token()?,
        };
        self.sign(&claims, alg)
    }

    fn sign(&self, claims: &Claims<'_>, alg: SigningAlg) -> Result<String, AuthError> {
        let header = Header {
            alg: alg.name(),
            typ: "JWT",
            kid: self.key_id.as_deref(),
        };
        let input = format!("{}.{}", part(&header)?, part(claims)?);
        let rng = SystemRandom::new();
        let failed = |_| {
            AuthError::Local(format!(
                "signing the client assertion ({}) failed",
                alg.name()
            ))
        };
        let signature = match (&*self.pair, alg) {
            (Pair::Rsa(pair), SigningAlg::Rs256 | SigningAlg::Ps256) => {
                let padding: &'static dyn signature::RsaEncoding = if alg == SigningAlg::Rs256 {
                    &signature::RSA_PKCS1_SHA256
                } else {
                    &signature::RSA_PSS_SHA256
                };
                let mut out = vec![0u8; pair.public().modulus_len()];
                pair.sign(padding, &rng, input.as_bytes(), &mut out)
                    .map_err(failed)?;
                out
            }
            (Pair::Ec(pair, own), _) if *own == alg => pair
                .sign(&rng, input.as_bytes())
                .map_err(failed)?
                .as_ref()
                .to_vec(),
            _ => {
                return Err(AuthError::Local(format!(
                    "{} key cannot sign {}",
                    self.kind(),
                    alg.name()
                )));
            }
        };
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

impl PartialEq for ClientKey {
    fn eq(&self, other: &Self) -> bool {
        self.der == other.der && self.configured == other.configured && self.key_id == other.key_id
    }
}

impl Eq for ClientKey {}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientKey")
            .field("kind", &self.kind())
            .field("signing_alg", &self.configured.map(SigningAlg::name))
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// The JOSE header; field order is the serialization order.
#[derive(Serialize)]
struct Header<'a> {
    alg: &'a str,
    typ: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kid: Option<&'a str>,
}

/// The claims RFC 7523 §3 asks for; field order is the serialization order.
#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: &'a str,
}

/// One part of the token: its JSON, base64url.
fn part<T: Serialize>(value: &T) -> Result<String, AuthError> {
    let bytes = serde_json::to_vec(value)
        .map_err(|e| AuthError::Local(format!("cannot write a client assertion: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// A PKCS#8 key: P-256, then P-384, then RSA.
fn pkcs8_pair(der: &[u8]) -> Result<Pair, KeyError> {
    let rng = SystemRandom::new();
    let ec = [
        (
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            SigningAlg::Es256,
        ),
        (
            &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
            SigningAlg::Es384,
        ),
    ];
    let mut why = Vec::new();
    for (curve, alg) in ec {
        match EcdsaKeyPair::from_pkcs8(curve, der, &rng) {
            Ok(pair) => return Ok(Pair::Ec(pair, alg)),
            Err(e) => why.push(format!("{}: {e}", alg.name())),
        }
    }
    match RsaKeyPair::from_pkcs8(der) {
        Ok(pair) => Ok(Pair::Rsa(pair)),
        Err(e) => {
            let rsa = e.to_string();
            // Name the one failure that was not just "another algorithm".
            let detail = std::iter::once(format!("RSA: {rsa}"))
                .chain(why)
                .find(|w| !w.ends_with("WrongAlgorithm"))
                .unwrap_or_else(|| "not RSA, P-256 or P-384".to_string());
            Err(KeyError::Unsupported(detail))
        }
    }
}

/// A SEC1 `EC PRIVATE KEY`: wrapped in PKCS#8 (RFC 5208) for each curve in turn; the key names
/// its curve, and the wrong wrapping is refused.
fn sec1_pair(sec1: &[u8]) -> Result<Pair, KeyError> {
    let rng = SystemRandom::new();
    // id-ecPublicKey, then prime256v1 / secp384r1.
    const EC_PUBLIC_KEY: &[u8] = &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    let curves: [(&[u8], _, _); 2] = [
        (
            &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07],
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            SigningAlg::Es256,
        ),
        (
            &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22],
            &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
            SigningAlg::Es384,
        ),
    ];
    let mut last = String::new();
    for (oid, curve, alg) in curves {
        let algorithm = der(0x30, &[EC_PUBLIC_KEY, oid].concat());
        let pkcs8 = der(
            0x30,
            &[&[0x02, 0x01, 0x00][..], &algorithm, &der(0x04, sec1)].concat(),
        );
        match EcdsaKeyPair::from_pkcs8(curve, &pkcs8, &rng) {
            Ok(pair) => return Ok(Pair::Ec(pair, alg)),
            Err(e) => last = e.to_string(),
        }
    }
    Err(KeyError::Unsupported(format!(
        "an EC key not on P-256 or P-384, or without its public key ({last})"
    )))
}

/// One DER element: tag, definite length, contents.
fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
    let len = contents.len();
    let mut out = vec![tag];
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(contents);
    out
}

fn pem_why(e: &rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::NoItemsFound => "no private key block found".to_string(),
        Error::MissingSectionEnd { .. } => "a block has no END line".to_string(),
        Error::IllegalSectionStart { .. } => "a BEGIN line is malformed".to_string(),
        Error::Base64Decode(why) => format!("bad base64: {why}"),
        other => other.to_string(),
    }
}

fn names(algs: &[SigningAlg]) -> String {
    algs.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
#[path = "assertion_tests.rs"]
mod tests;
