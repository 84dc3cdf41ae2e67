//! Encryption at rest (docs/SPEC.md §2.6): the keyring and the value encoding.
//!
//! Covered values (message raw/error, work-row payload/last_error, event detail, state values,
//! reference values, captured response body/detail) are encrypted with this keyring, once,
//! before the command is proposed, so the Raft log, snapshots and every replica's state hold the
//! same ciphertext and `apply` stays free of cryptography; reads decrypt on the way out. Which
//! values those are, and the one place both happen, is the write path's
//! [`crate::write::at_rest`].
//!
//! Encoded value: `enc:v1:{key_id}:{base64(nonce ‖ ciphertext ‖ tag)}` with AES-256-GCM, a random
//! 96-bit nonce per value and the standard base64 alphabet with padding. A value that does not
//! start with `enc:v1:` is a legacy plaintext and passes through unchanged.
//!
//! A [`Keyring`] holds one active key (used for every new encryption) and any number of retired
//! keys (used only to decrypt). It is parsed from `RAFTLANE_KEYRING`:
//! `k2:BASE64KEY,k1:BASE64KEY` — comma-separated `id:base64(32 bytes)`, the first is active.
//! Key ids are 1–64 characters of `[A-Za-z0-9_.-]`.
//!
//! Some event details are composed by the state machine around an encrypted value (a retry's
//! `attempt 2: enc:v1:…`); [`Keyring::open`] decrypts every such embedded token.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use rand::RngCore;
use std::collections::BTreeMap;
use std::fmt;

/// Marks an encrypted value.
pub const PREFIX: &str = "enc:v1:";
/// Environment variable holding the keyring.
pub const KEYRING_ENV: &str = "RAFTLANE_KEYRING";

const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
const KEY_LEN: usize = 32;
const MAX_KEY_ID_LEN: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// The value names a key this keyring does not hold.
    #[error("unknown key id '{0}'")]
    UnknownKey(String),
    /// Authentication failed: wrong key material or a tampered value.
    #[error("authentication failed under key '{0}' (wrong key or tampered value)")]
    BadTag(String),
    /// Not a well-formed `enc:v1:` value.
    #[error("malformed encrypted value: {0}")]
    Malformed(String),
    /// The keyring specification is invalid.
    #[error("invalid keyring: {0}")]
    Config(String),
    #[error("encryption failed")]
    Encrypt,
}

/// One active key plus retired ones. `Debug` shows only key ids.
#[derive(Clone)]
pub struct Keyring {
    active: String,
    /// Key ids in the order given (active first).
    order: Vec<String>,
    keys: BTreeMap<String, Aes256Gcm>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("active", &self.active)
            .field("keys", &self.order)
            .finish()
    }
}

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

fn is_b64_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')
}

/// Split the text after `enc:v1:` into `(key_id, base64, consumed bytes)`.
fn split_token(rest: &str) -> Option<(&str, &str, usize)> {
    let id_len = rest.find(|c: char| !is_id_char(c)).unwrap_or(rest.len());
    if id_len == 0 || id_len > MAX_KEY_ID_LEN || !rest[id_len..].starts_with(':') {
        return None;
    }
    let body = &rest[id_len + 1..];
    let b64_len = body.find(|c: char| !is_b64_char(c)).unwrap_or(body.len());
    if b64_len == 0 {
        return None;
    }
    Some((&rest[..id_len], &body[..b64_len], id_len + 1 + b64_len))
}

/// The key id of an encrypted value (`None` for plaintext or a malformed value).
pub fn key_id_of(value: &str) -> Option<&str> {
    split_token(value.strip_prefix(PREFIX)?).map(|(id, _, _)| id)
}

/// Whether `value` looks encrypted (starts with `enc:v1:`).
pub fn is_encrypted(value: &str) -> bool {
    value.starts_with(PREFIX)
}

impl Keyring {
    /// A keyring from `(id, 32-byte key)` pairs; the first is active.
    pub fn new(keys: Vec<(String, [u8; KEY_LEN])>) -> Result<Self, CryptoError> {
        let Some(active) = keys.first().map(|(id, _)| id.clone()) else {
            return Err(CryptoError::Config("no keys".into()));
        };
        let mut ring = Keyring {
            active,
            order: Vec::with_capacity(keys.len()),
            keys: BTreeMap::new(),
        };
        for (id, key) in keys {
            if id.is_empty() || id.len() > MAX_KEY_ID_LEN || !id.chars().all(is_id_char) {
                return Err(CryptoError::Config(format!(
                    "key id '{id}' must be 1-{MAX_KEY_ID_LEN} characters of A-Z a-z 0-9 _ . -"
                )));
            }
            let cipher = Aes256Gcm::new_from_slice(&key)
                .map_err(|_| CryptoError::Config(format!("key '{id}' is not 32 bytes")))?;
            if ring.keys.insert(id.clone(), cipher).is_some() {
                return Err(CryptoError::Config(format!("key id '{id}' appears twice")));
            }
            ring.order.push(id);
        }
        Ok(ring)
    }

    /// Parse `k2:BASE64KEY,k1:BASE64KEY` (first = active). Whitespace around entries is ignored.
    pub fn parse(spec: &str) -> Result<Self, CryptoError> {
        let mut keys = Vec::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (id, b64) = entry
                .split_once(':')
                .ok_or_else(|| CryptoError::Config("each entry must be id:base64key".into()))?;
            let bytes = B64
                .decode(b64.trim())
                .map_err(|_| CryptoError::Config(format!("key '{id}' is not valid base64")))?;
            let key: [u8; KEY_LEN] = bytes.try_into().map_err(|_| {
                CryptoError::Config(format!("key '{id}' must decode to {KEY_LEN} bytes"))
            })?;
            keys.push((id.trim().to_string(), key));
        }
        Self::new(keys)
    }

    /// The keyring in `RAFTLANE_KEYRING`; `None` (encryption off) when unset or blank.
    pub fn from_env() -> Result<Option<Self>, CryptoError> {
        match std::env::var(KEYRING_ENV) {
            Ok(spec) if !spec.trim().is_empty() => Self::parse(&spec).map(Some),
            Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(CryptoError::Config(format!("{KEYRING_ENV} is not UTF-8")))
            }
        }
    }

    pub fn active_id(&self) -> &str {
        &self.active
    }

    /// Every key id, active first.
    pub fn key_ids(&self) -> &[String] {
        &self.order
    }

    /// Encrypt under the active key with a fresh random nonce.
    pub fn encrypt(&self, plaintext: &str) -> Result<String, CryptoError> {
        let cipher = self.keys.get(&self.active).ok_or(CryptoError::Encrypt)?;
        let mut nonce = [0u8; NONCE_LEN];
        rand::thread_rng().fill_bytes(&mut nonce);
        let sealed = cipher
            .encrypt(Nonce::from_slice(&nonce), plaintext.as_bytes())
            .map_err(|_| CryptoError::Encrypt)?;
        let mut blob = Vec::with_capacity(NONCE_LEN + sealed.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&sealed);
        Ok(format!("{PREFIX}{}:{}", self.active, B64.encode(blob)))
    }

    fn decrypt_token(&self, key_id: &str, b64: &str) -> Result<String, CryptoError> {
        let cipher = self
            .keys
            .get(key_id)
            .ok_or_else(|| CryptoError::UnknownKey(key_id.to_string()))?;
        let blob = B64
            .decode(b64)
            .map_err(|_| CryptoError::Malformed("bad base64".into()))?;
        if blob.len() < NONCE_LEN + TAG_LEN {
            return Err(CryptoError::Malformed("too short".into()));
        }
        let (nonce, sealed) = blob.split_at(NONCE_LEN);
        let plain = cipher
            .decrypt(Nonce::from_slice(nonce), sealed)
            .map_err(|_| CryptoError::BadTag(key_id.to_string()))?;
        String::from_utf8(plain).map_err(|_| CryptoError::Malformed("not UTF-8".into()))
    }

    /// Decrypt a whole value; a legacy plaintext (no `enc:v1:` prefix) passes through.
    pub fn decrypt(&self, value: &str) -> Result<String, CryptoError> {
        let Some(rest) = value.strip_prefix(PREFIX) else {
            return Ok(value.to_string());
        };
        match split_token(rest) {
            Some((id, b64, used)) if used == rest.len() => self.decrypt_token(id, b64),
            _ => Err(CryptoError::Malformed(
                "not enc:v1:{key_id}:{base64}".into(),
            )),
        }
    }

    /// Decrypt every `enc:v1:` token inside `value` (a whole encrypted value, or a detail the
    /// state machine composed around one), leaving the text around them as it is. Text that
    /// merely contains `enc:v1:` without a well-formed token after it is left alone.
    pub fn open(&self, value: &str) -> Result<String, CryptoError> {
        let mut out = String::with_capacity(value.len());
        let mut rest = value;
        while let Some(at) = rest.find(PREFIX) {
            out.push_str(&rest[..at]);
            let after = &rest[at + PREFIX.len()..];
            match split_token(after) {
                Some((id, b64, used)) => {
                    out.push_str(&self.decrypt_token(id, b64)?);
                    rest = &after[used..];
                }
                None => {
                    out.push_str(PREFIX);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    /// Whether `value` is exactly one token under the active key (nothing for rotation to do).
    pub fn is_current(&self, value: &str) -> bool {
        value.strip_prefix(PREFIX).is_some_and(|rest| {
            split_token(rest).is_some_and(|(id, _, used)| used == rest.len() && id == self.active)
        })
    }

    /// Rotation of one value: `None` when there is nothing to do (empty, or already exactly one
    /// token under the active key); otherwise its plaintext (every embedded token decrypted,
    /// legacy plaintext as it is) encrypted under the active key. An error means no configured
    /// key can decrypt it.
    pub fn rotate(&self, value: &str) -> Result<Option<String>, CryptoError> {
        if value.is_empty() || self.is_current(value) {
            return Ok(None);
        }
        let plain = self.open(value)?;
        self.encrypt(&plain).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(spec: &[(&str, u8)]) -> Keyring {
        Keyring::new(
            spec.iter()
                .map(|(id, b)| (id.to_string(), [*b; KEY_LEN]))
                .collect(),
        )
        .expect("keyring")
    }

    #[test]
    fn round_trip_and_format() {
        let k = ring(&[("k1", 1)]);
        let c = k.encrypt("hello ünïcode").expect("encrypt");
        assert!(c.starts_with("enc:v1:k1:"));
        assert_eq!(key_id_of(&c), Some("k1"));
        assert_eq!(k.decrypt(&c).expect("decrypt"), "hello ünïcode");
        // A fresh nonce every time.
        assert_ne!(k.encrypt("x").expect("e"), k.encrypt("x").expect("e"));
        assert_eq!(k.decrypt(&k.encrypt("").expect("e")).expect("d"), "");
        let blob = B64.decode(c.trim_start_matches("enc:v1:k1:")).expect("b64");
        assert_eq!(blob.len(), NONCE_LEN + "hello ünïcode".len() + TAG_LEN);
    }

    #[test]
    fn legacy_plaintext_passes_through() {
        let k = ring(&[("k1", 1)]);
        assert_eq!(k.decrypt("plain body").expect("d"), "plain body");
        assert_eq!(k.open("plain body").expect("d"), "plain body");
        assert_eq!(k.decrypt("").expect("d"), "");
        // Text mentioning the prefix without a token after it is left alone.
        assert_eq!(k.open("see enc:v1: docs").expect("d"), "see enc:v1: docs");
    }

    #[test]
    fn wrong_key_is_an_error() {
        let a = ring(&[("k1", 1)]);
        let c = a.encrypt("secret").expect("e");
        let unknown = ring(&[("k2", 2)]);
        assert_eq!(
            unknown.decrypt(&c),
            Err(CryptoError::UnknownKey("k1".into()))
        );
        // Same id, different key material.
        let impostor = ring(&[("k1", 9)]);
        assert_eq!(impostor.decrypt(&c), Err(CryptoError::BadTag("k1".into())));
    }

    #[test]
    fn tampering_is_detected() {
        let k = ring(&[("k1", 1)]);
        let c = k.encrypt("amount=100").expect("e");
        let body = c.trim_start_matches("enc:v1:k1:");
        let mut blob = B64.decode(body).expect("b64");
        for i in [0, NONCE_LEN, blob.len() - 1] {
            let mut t = blob.clone();
            t[i] ^= 1;
            let forged = format!("enc:v1:k1:{}", B64.encode(&t));
            assert_eq!(k.decrypt(&forged), Err(CryptoError::BadTag("k1".into())));
        }
        blob.truncate(NONCE_LEN + TAG_LEN - 1);
        let short = format!("enc:v1:k1:{}", B64.encode(&blob));
        assert!(matches!(k.decrypt(&short), Err(CryptoError::Malformed(_))));
        assert!(matches!(
            k.decrypt("enc:v1:k1:!!!"),
            Err(CryptoError::Malformed(_))
        ));
        assert!(matches!(
            k.decrypt(&format!("{c} trailing")),
            Err(CryptoError::Malformed(_))
        ));
    }

    #[test]
    fn rotation_decrypts_old_ids() {
        let old = ring(&[("k1", 1)]);
        let c1 = old.encrypt("v").expect("e");
        let new = ring(&[("k2", 2), ("k1", 1)]);
        assert_eq!(new.active_id(), "k2");
        assert_eq!(new.decrypt(&c1).expect("d"), "v");
        assert!(!new.is_current(&c1));
        let c2 = new.rotate(&c1).expect("rotate").expect("changed");
        assert!(c2.starts_with("enc:v1:k2:"));
        assert!(new.is_current(&c2));
        assert_eq!(new.rotate(&c2).expect("rotate"), None);
        assert_eq!(new.rotate("").expect("rotate"), None);
        // Only the new key is needed afterwards.
        assert_eq!(ring(&[("k2", 2)]).decrypt(&c2).expect("d"), "v");
        // Legacy plaintext gets encrypted.
        let p = new.rotate("plain").expect("rotate").expect("changed");
        assert_eq!(new.decrypt(&p).expect("d"), "plain");
    }

    #[test]
    fn embedded_tokens_are_opened_and_rotated() {
        let old = ring(&[("k1", 1)]);
        let detail = format!("attempt 2: {}", old.encrypt("timeout").expect("e"));
        let new = ring(&[("k2", 2), ("k1", 1)]);
        assert_eq!(new.open(&detail).expect("open"), "attempt 2: timeout");
        let r = new.rotate(&detail).expect("rotate").expect("changed");
        assert_eq!(new.decrypt(&r).expect("d"), "attempt 2: timeout");
        assert!(ring(&[("k3", 3)]).open(&detail).is_err());
        assert!(ring(&[("k3", 3)]).rotate(&detail).is_err());
    }

    #[test]
    fn keyring_parsing() {
        let k1 = B64.encode([1u8; 32]);
        let k2 = B64.encode([2u8; 32]);
        let ring = Keyring::parse(&format!("k2:{k2}, k1:{k1}")).expect("parse");
        assert_eq!(ring.active_id(), "k2");
        assert_eq!(ring.key_ids(), ["k2".to_string(), "k1".to_string()]);
        assert!(!format!("{ring:?}").contains(&k2));
        assert!(Keyring::parse("").is_err());
        assert!(Keyring::parse("k1").is_err());
        assert!(Keyring::parse(&format!("k1:{}", B64.encode([1u8; 16]))).is_err());
        assert!(Keyring::parse("k1:not base64!").is_err());
        assert!(Keyring::parse(&format!("k1:{k1},k1:{k2}")).is_err());
        assert!(Keyring::parse(&format!("bad id:{k1}")).is_err());
    }
}
