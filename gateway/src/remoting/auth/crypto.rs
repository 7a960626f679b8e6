//! Secrets: user passwords are HMAC keys (a request's signature is
//! `Base64(HMAC-SHA1(password, content))`), so they are kept encrypted, not hashed:
//! AES-256-GCM under the SHA-256 of `auth.encryption_key`, a random 96-bit nonce per
//! encryption, the user name as associated data (a password copied onto another user's row
//! does not decrypt). Stored as Base64 of nonce ‖ ciphertext ‖ tag.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use ring::{digest, hmac};

/// Encrypts and decrypts passwords at rest.
pub(crate) struct Cipher {
    key: LessSafeKey,
    rng: SystemRandom,
}

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cipher(AES-256-GCM)")
    }
}

impl Cipher {
    /// The cipher of `auth.encryption_key`.
    pub(crate) fn new(encryption_key: &str) -> Self {
        let k = digest::digest(&digest::SHA256, encryption_key.as_bytes());
        let key = UnboundKey::new(&AES_256_GCM, k.as_ref()).expect("a SHA-256 is an AES-256 key");
        Self {
            key: LessSafeKey::new(key),
            rng: SystemRandom::new(),
        }
    }

    /// `password` of `user`, sealed.
    ///
    /// # Errors
    /// The system's random source failed.
    pub(crate) fn seal(&self, user: &str, password: &str) -> Result<String, String> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng
            .fill(&mut nonce)
            .map_err(|_| "no random nonce".to_owned())?;
        let mut buf = password.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(user.as_bytes()),
                &mut buf,
            )
            .map_err(|_| "encryption failed".to_owned())?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        Ok(STANDARD.encode(out))
    }

    /// The password sealed for `user`.
    ///
    /// # Errors
    /// Not this key's, not this user's, or damaged.
    pub(crate) fn open(&self, user: &str, sealed: &str) -> Result<String, String> {
        let bad = || {
            format!("the stored password of user {user} does not decrypt with auth.encryption_key")
        };
        let raw = STANDARD.decode(sealed).map_err(|_| bad())?;
        if raw.len() < NONCE_LEN {
            return Err(bad());
        }
        let (nonce, ct) = raw.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| bad())?;
        let mut buf = ct.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(user.as_bytes()), &mut buf)
            .map_err(|_| bad())?;
        String::from_utf8(plain.to_vec()).map_err(|_| bad())
    }
}

/// The HMAC-SHA1 key a user's signatures are checked with.
pub(crate) fn signing_key(password: &str) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, password.as_bytes())
}

/// Whether `signature` (Base64) is the HMAC of `content` under `key`, compared in constant
/// time.
pub(crate) fn verify(key: &hmac::Key, content: &[u8], signature: &str) -> bool {
    match STANDARD.decode(signature.trim()) {
        Ok(tag) => hmac::verify(key, content, &tag).is_ok(),
        Err(_) => false,
    }
}

/// `Base64(HMAC-SHA1(secret, content))`: what a client puts in `Signature`.
#[cfg(test)]
pub(crate) fn sign(secret: &str, content: &[u8]) -> String {
    STANDARD.encode(hmac::sign(&signing_key(secret), content).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_passwords_open_only_with_their_key_and_user() {
        let c = Cipher::new("sixteen-or-more-characters");
        let sealed = c.seal("alice", "s3cret-password").expect("seal");
        assert!(!sealed.contains("s3cret"));
        assert_ne!(
            sealed,
            c.seal("alice", "s3cret-password").expect("seal"),
            "fresh nonce"
        );
        assert_eq!(c.open("alice", &sealed).expect("open"), "s3cret-password");
        assert!(c.open("bob", &sealed).is_err(), "bound to its user");
        assert!(
            Cipher::new("another-key-entirely")
                .open("alice", &sealed)
                .is_err()
        );
        assert!(c.open("alice", "not base64!").is_err());
        assert!(c.open("alice", "AAAA").is_err());
    }

    #[test]
    fn signatures_verify_in_base64_and_fail_otherwise() {
        let sig = sign("sk", b"content");
        let key = signing_key("sk");
        assert!(verify(&key, b"content", &sig));
        assert!(!verify(&key, b"content!", &sig));
        assert!(!verify(&signing_key("other"), b"content", &sig));
        assert!(!verify(&key, b"content", "%%%"));
        assert!(!verify(&key, b"content", ""));
    }
}
