//! PKCE (RFC 7636, S256 only: the MCP spec requires it) and the random values of a flow.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use sha2::{Digest, Sha256};

use super::AuthError;

/// A PKCE pair: the verifier kept by tern, the challenge sent in the authorization request.
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl Pkce {
    /// A fresh pair: 32 random bytes (43 base64url characters, RFC 7636 §4.1) and their S256.
    pub(crate) fn new() -> Result<Self, AuthError> {
        let verifier = random_token()?;
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Ok(Self {
            verifier,
            challenge,
        })
    }
}

/// 32 random bytes, base64url: a code verifier or a `state`.
pub(crate) fn random_token() -> Result<String, AuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| AuthError::Local(format!("no randomness from the OS: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_s256_of_the_verifier() {
        // Computed apart from this code (Python: urlsafe_b64encode(sha256(v)) without `=`).
        let verifier = "dBjftJeZ4CVP-mJ92IZqAvqFAm1cpkpeGBvQBQB9kxA";
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        assert_eq!(challenge, "SO85qUCb8ZyZZSLWYsOKBkBgDeJRt9s4iTVYxnJ0Ej0");
        let p = Pkce::new().unwrap();
        assert_eq!(p.verifier.len(), 43);
        assert_ne!(p.verifier, Pkce::new().unwrap().verifier);
    }
}
