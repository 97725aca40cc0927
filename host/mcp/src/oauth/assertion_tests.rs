//! The fixtures in `testdata/` were made with OpenSSL 3 (`openssl genpkey`, `openssl ec
//! -pubout`), apart from this code; the expected RS256 token was signed with Python's
//! `cryptography`. Test keys only: they authenticate nothing anywhere.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P384_SHA384_FIXED, RSA_PKCS1_2048_8192_SHA256,
    RSA_PSS_2048_8192_SHA256, UnparsedPublicKey, VerificationAlgorithm,
};
use serde_json::Value;

use super::*;

const RSA_PKCS8: &[u8] = include_bytes!("testdata/rsa-pkcs8.pem");
const RSA_PKCS1: &[u8] = include_bytes!("testdata/rsa-pkcs1.pem");
const RSA_PUBLIC: &[u8] = include_bytes!("testdata/rsa-public.der");
const P256_PKCS8: &[u8] = include_bytes!("testdata/p256-pkcs8.pem");
const P256_SEC1: &[u8] = include_bytes!("testdata/p256-sec1.pem");
const P256_SEC1_NO_PUBLIC: &[u8] = include_bytes!("testdata/p256-sec1-nopub.pem");
const P256_PUBLIC: &[u8] = include_bytes!("testdata/p256-public.bin");
const P384_PKCS8: &[u8] = include_bytes!("testdata/p384-pkcs8.pem");
const P384_PUBLIC: &[u8] = include_bytes!("testdata/p384-public.bin");
const ED25519: &[u8] = include_bytes!("testdata/ed25519.pem");

fn key(pem: &[u8]) -> ClientKey {
    ClientKey::from_pem(pem, None, None).unwrap()
}

/// The three parts, the header and claims decoded, the signature checked against the public
/// key OpenSSL derived.
fn verified(token: &str, public: &[u8], alg: &'static dyn VerificationAlgorithm) -> (Value, Value) {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "{token}");
    let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    let input = format!("{}.{}", parts[0], parts[1]);
    UnparsedPublicKey::new(alg, public)
        .verify(input.as_bytes(), &signature)
        .expect("the signature verifies with the key's public half");
    let json = |p: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap();
    (json(parts[0]), json(parts[1]))
}

#[test]
fn rs256_is_byte_for_byte_what_another_implementation_signs() {
    let key = ClientKey::from_pem(RSA_PKCS8, None, Some("k1".into())).unwrap();
    let claims = Claims {
        iss: "tern-ci",
        sub: "tern-ci",
        aud: "https://as.example",
        iat: 1_700_000_000,
        exp: 1_700_000_300,
        jti: "j-1",
    };
    // PKCS#1 v1.5 is deterministic: Python `cryptography` signed the same input with this key.
    let want = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImsxIn0.eyJpc3MiOiJ0ZXJuLWNpIiwic3ViIjoidGVybi1jaSIsImF1ZCI6Imh0dHBzOi8vYXMuZXhhbXBsZSIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwMDAwMzAwLCJqdGkiOiJqLTEifQ.f8Qw_3dy9qZy5tpN52Us0tBjzlIRQaVovq87uQoxy9Tl4XioYFXoXDij9w7QbAxlHObKS39TZUVVHsnpniYiXQ753F2QFDPYtBGhp3BH7FTSB_kXfi8KzoQb8fDdBo2jH86A_n2zGc1iIyxT5KwrvO2_C5WHN4wBRL9nWLBV2tpsQIwbkiHmcjlWe2bMlMoNNKFWJicVkFWDFG7P_B92ImOvOMDOmc9ae74O0eYuLb1WmC2wU0W3zSuaxvzAwGpm7_IOagQ6LmUSuioyNVyyWqseEqooZ40viKXTxbGTQOXX1onab75uqBzeK-ncQZIiEN9hGoNsd_5VKBJlpi6REg";
    assert_eq!(key.sign(&claims, SigningAlg::Rs256).unwrap(), want);
    // The PKCS#1 file of the same key signs the same.
    let pkcs1 = ClientKey::from_pem(RSA_PKCS1, None, Some("k1".into())).unwrap();
    assert_eq!(pkcs1.sign(&claims, SigningAlg::Rs256).unwrap(), want);
}

#[test]
fn an_assertion_names_the_client_the_issuer_and_lives_five_minutes() {
    let key = key(P256_PKCS8);
    let alg = key.alg_for(None).unwrap();
    assert_eq!(alg, SigningAlg::Es256);
    let token = key
        .assertion("cc-client", "https://as.example/tenant", alg)
        .unwrap();
    let (header, claims) = verified(&token, P256_PUBLIC, &ECDSA_P256_SHA256_FIXED);
    assert_eq!(header, serde_json::json!({"alg": "ES256", "typ": "JWT"}));
    assert_eq!(claims["iss"], "cc-client");
    assert_eq!(claims["sub"], "cc-client");
    assert_eq!(claims["aud"], "https://as.example/tenant");
    let iat = claims["iat"].as_u64().unwrap();
    assert!(iat.abs_diff(now()) <= 5, "{claims}");
    assert_eq!(claims["exp"].as_u64().unwrap(), iat + 300);
    // A fresh jti every time: an assertion is never replayable as another.
    let again = key
        .assertion("cc-client", "https://as.example/tenant", alg)
        .unwrap();
    let (_, claims2) = verified(&again, P256_PUBLIC, &ECDSA_P256_SHA256_FIXED);
    assert_eq!(claims["jti"].as_str().unwrap().len(), 43);
    assert_ne!(claims["jti"], claims2["jti"]);
}

#[test]
fn every_key_format_signs_its_algorithms() {
    let (_, c) = verified(
        &key(P256_SEC1)
            .assertion("c", "https://as", SigningAlg::Es256)
            .unwrap(),
        P256_PUBLIC,
        &ECDSA_P256_SHA256_FIXED,
    );
    assert_eq!(c["sub"], "c");
    let p384 = key(P384_PKCS8);
    assert_eq!(p384.alg_for(None).unwrap(), SigningAlg::Es384);
    let (h, _) = verified(
        &p384
            .assertion("c", "https://as", SigningAlg::Es384)
            .unwrap(),
        P384_PUBLIC,
        &ECDSA_P384_SHA384_FIXED,
    );
    assert_eq!(h["alg"], "ES384");
    let rsa = key(RSA_PKCS8);
    assert_eq!(rsa.alg_for(None).unwrap(), SigningAlg::Rs256);
    verified(
        &rsa.assertion("c", "https://as", SigningAlg::Rs256).unwrap(),
        RSA_PUBLIC,
        &RSA_PKCS1_2048_8192_SHA256,
    );
    let (h, _) = verified(
        &rsa.assertion("c", "https://as", SigningAlg::Ps256).unwrap(),
        RSA_PUBLIC,
        &RSA_PSS_2048_8192_SHA256,
    );
    assert_eq!(h["alg"], "PS256");
}

#[test]
fn the_algorithm_follows_the_config_then_what_the_server_lists() {
    let rsa = key(RSA_PKCS8);
    let offered = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        rsa.alg_for(Some(&offered(&["PS256", "ES256"]))).unwrap(),
        SigningAlg::Ps256
    );
    let err = rsa
        .alg_for(Some(&offered(&["ES256"])))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("signed with ES256 only") && err.contains("RS256, PS256"),
        "{err}"
    );
    let pinned = ClientKey::from_pem(RSA_PKCS8, Some(SigningAlg::Rs256), None).unwrap();
    assert!(pinned.alg_for(Some(&offered(&["PS256"]))).is_err());
    assert_eq!(pinned.alg_for(None).unwrap(), SigningAlg::Rs256);
}

#[test]
fn unusable_keys_say_why_and_what_to_do() {
    let err = |pem: &[u8], alg| ClientKey::from_pem(pem, alg, None).unwrap_err();
    assert!(matches!(err(b"not a key", None), KeyError::NotPem(_)));
    let cut = &P256_PKCS8[..P256_PKCS8.len() - 30];
    assert!(
        matches!(err(cut, None), KeyError::NotPem(_)),
        "{:?}",
        err(cut, None)
    );
    let public_only = b"-----BEGIN PUBLIC KEY-----\nMAA=\n-----END PUBLIC KEY-----\n";
    assert!(matches!(err(public_only, None), KeyError::NotPem(m) if m.contains("no private key")));
    let encrypted =
        b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n";
    assert_eq!(err(encrypted, None), KeyError::Encrypted);
    assert!(matches!(err(ED25519, None), KeyError::Unsupported(_)));
    assert!(
        matches!(err(P256_SEC1_NO_PUBLIC, None), KeyError::Unsupported(m) if m.contains("without its public key"))
    );
    let wrong = err(P256_PKCS8, Some(SigningAlg::Rs256));
    assert_eq!(
        wrong,
        KeyError::WrongAlg {
            kind: "a P-256",
            alg: "RS256",
            fits: "ES256".into()
        }
    );
    for e in [
        err(ED25519, None),
        wrong,
        KeyError::Encrypted,
        err(b"x", None),
    ] {
        assert!(e.to_string().contains("\nhint: "), "{e}");
    }
}

#[test]
fn keys_compare_by_their_bytes_and_never_print_them() {
    assert_eq!(key(P256_PKCS8), key(P256_PKCS8));
    assert_ne!(key(P256_PKCS8), key(P384_PKCS8));
    let shown = format!("{:?}", key(RSA_PKCS8));
    assert!(
        shown.contains("an RSA") && !shown.contains("MII"),
        "{shown}"
    );
}
