//! Authentication of node-to-node calls (Raft RPCs and the API's `/internal/...` routes) with
//! the shared cluster secret.
//!
//! Every request carries
//! `x-raftlane-auth: <ts_ms>.<nonce>.<target id>.<head MAC>.<body MAC>` (a random 128-bit nonce
//! and HMAC-SHA256s, in hex): the head MAC covers the request path, the timestamp, the nonce and
//! the id of the node the call is meant for; the body MAC all of that and the SHA-256 of the
//! body. The receiver checks, before it reads the body (a client without the secret cannot make
//! it read one):
//! - that the call is meant for it (a call signed for node 2 is refused by node 3, so a request
//!   captured on its way to one node cannot be played to another),
//! - the freshness of the timestamp (a clock-skew window),
//! - the head MAC,
//! - that it has not seen the nonce within the window ([`NonceCache`]): an identical request
//!   played again is refused,
//!
//! then the body MAC before anything is decoded. The secret never travels, a captured request
//! cannot be sent to another endpoint, with another body, to another node or twice. MACs are
//! compared in constant time.
//!
//! The nonce memory is bounded: a nonce is forgotten once its timestamp has left the freshness
//! window (a replay would then be refused as stale), and at most [`MAX_NONCES`] are held; a node
//! whose memory is full refuses further calls (fail closed) until entries age out.
//!
//! HMAC is implemented here over `sha2` (RFC 2104; checked against RFC 4231 vectors below)
//! rather than pulling in another crate.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use subtle::ConstantTimeEq;

/// The request header carrying the signature.
pub const AUTH_HEADER: &str = "x-raftlane-auth";
const DOMAIN_HEAD: &[u8] = b"raftlane-node-v2-head\n";
const DOMAIN_BODY: &[u8] = b"raftlane-node-v2-body\n";

/// Bytes of a request's nonce.
pub const NONCE_BYTES: usize = 16;

/// Most nonces one verifier remembers at once: 1,000,000 (about 50 MB at worst), far above
/// what a freshness window of signed calls holds (Raft's 5 minutes at 1,000 calls a second
/// per peer is 300,000).
pub const MAX_NONCES: usize = 1_000_000;

/// How long a nonce is remembered when the freshness check is off (`max_skew_ms == 0`).
const RETENTION_WITHOUT_SKEW_MS: u64 = 300_000;

/// HMAC-SHA256 of the concatenation of `parts` under `key` (the `hmac` crate).
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes a key of any length (a long one is hashed first): no key is refused.
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(key) else {
        unreachable!("HMAC-SHA256 accepts keys of every length")
    };
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

/// Equality whose running time does not depend on where the inputs differ (the `subtle`
/// crate; inputs of different lengths are unequal at once, their lengths are not secret).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    bool::from(a.ct_eq(b))
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing {AUTH_HEADER} header")]
    Missing,
    #[error("malformed {AUTH_HEADER} header")]
    Malformed,
    /// The call's timestamp is further from this node's clock than the skew bound: one of the
    /// two clocks is wrong (or the call is an old one replayed).
    #[error("clock skew: the caller's clock is {} ms {} this node's, beyond the bound of {bound_ms} ms", .skew_ms.unsigned_abs(), if *.skew_ms > 0 { "ahead of" } else { "behind" })]
    Skew { skew_ms: i64, bound_ms: u64 },
    #[error("bad signature")]
    BadSignature,
    #[error("the call was signed for node {signed_for}, not for this node ({this_node})")]
    OtherNode { signed_for: u64, this_node: u64 },
    #[error("replayed request (its nonce was already used)")]
    Replayed,
    #[error("too many recent signed calls to remember their nonces; try again later")]
    NonceMemoryFull,
}

/// What a refused caller is told, whatever the reason: the reason itself (which node the call
/// was signed for, how far the clocks are apart, what was expected) stays in this node's log.
/// A caller that holds the secret can read it there; one that does not learns nothing from the
/// answer to help it forge a call.
pub const REFUSED_MESSAGE: &str = "node-to-node authentication failed";

impl AuthError {
    /// The stable error code a refusal answers with: `clock_skew` for a timestamp beyond the
    /// skew bound (a forwarding node answers its client `503 clock_skew` rather than report a
    /// wrong secret, docs/SPEC.md §2.1; the size of the skew is not said: the caller measures
    /// it from the clock header every answer carries), `unauthorized` for everything else.
    pub fn public_code(&self) -> &'static str {
        match self {
            AuthError::Skew { .. } => "clock_skew",
            _ => "unauthorized",
        }
    }

    /// The JSON error body of a refusal, in the API's shape
    /// (`{"error": {"code", "message"}}`): [`Self::public_code`] and [`REFUSED_MESSAGE`] only.
    pub fn public_body(&self) -> String {
        serde_json::json!({
            "error": { "code": self.public_code(), "message": REFUSED_MESSAGE }
        })
        .to_string()
    }
}

/// The nonces seen within the freshness window, each with the time it may be forgotten.
/// Shared by every clone of a [`ClusterAuth`].
#[derive(Debug, Default)]
struct NonceCache {
    seen: HashSet<[u8; NONCE_BYTES]>,
    /// `(forget at, nonce)`, oldest first: what eviction walks.
    by_expiry: BTreeSet<(u64, [u8; NONCE_BYTES])>,
}

impl NonceCache {
    /// Remember `nonce` until `forget_at`; `Err` when it was already there (a replay) or the
    /// memory is full. Entries whose time has passed are dropped first.
    fn insert(
        &mut self,
        nonce: [u8; NONCE_BYTES],
        forget_at: u64,
        now_ms: u64,
    ) -> Result<(), AuthError> {
        while let Some(&(at, old)) = self.by_expiry.first() {
            if at > now_ms {
                break;
            }
            self.by_expiry.pop_first();
            self.seen.remove(&old);
        }
        if self.seen.contains(&nonce) {
            return Err(AuthError::Replayed);
        }
        if self.seen.len() >= MAX_NONCES {
            return Err(AuthError::NonceMemoryFull);
        }
        self.seen.insert(nonce);
        self.by_expiry.insert((forget_at, nonce));
        Ok(())
    }

    fn len(&self) -> usize {
        self.seen.len()
    }
}

/// Signs and verifies node-to-node requests with the cluster secret. Clones share the nonce
/// memory.
#[derive(Clone)]
pub struct ClusterAuth {
    secret: Vec<u8>,
    /// Largest accepted |now - ts| in ms; 0 disables the check.
    max_skew_ms: u64,
    nonces: Arc<Mutex<NonceCache>>,
}

impl std::fmt::Debug for ClusterAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterAuth")
            .field("secret", &"<redacted>")
            .field("max_skew_ms", &self.max_skew_ms)
            .finish()
    }
}

/// The signed fields of a request besides its path and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ts: u64,
    nonce: [u8; NONCE_BYTES],
    target: u64,
}

impl Stamp {
    fn text(&self) -> String {
        format!("{}\n{}\n{}", self.ts, hex::encode(self.nonce), self.target)
    }
}

impl ClusterAuth {
    /// The freshness window (the clock-skew bound), in ms; 0: none.
    pub fn max_skew_ms(&self) -> u64 {
        self.max_skew_ms
    }

    pub fn new(secret: impl AsRef<[u8]>, max_skew_ms: u64) -> Self {
        Self {
            secret: secret.as_ref().to_vec(),
            max_skew_ms,
            nonces: Arc::new(Mutex::new(NonceCache::default())),
        }
    }

    fn head_mac(&self, path: &str, stamp: &Stamp) -> [u8; 32] {
        hmac_sha256(
            &self.secret,
            &[DOMAIN_HEAD, path.as_bytes(), b"\n", stamp.text().as_bytes()],
        )
    }

    fn body_mac(&self, path: &str, stamp: &Stamp, body: &[u8]) -> [u8; 32] {
        let body_hash = Sha256::digest(body);
        hmac_sha256(
            &self.secret,
            &[
                DOMAIN_BODY,
                path.as_bytes(),
                b"\n",
                stamp.text().as_bytes(),
                b"\n",
                &body_hash,
            ],
        )
    }

    /// The header value for a request to node `target`'s `path` with `body`, stamped `ts_ms`,
    /// under a fresh random nonce.
    pub fn sign(&self, target: u64, path: &str, ts_ms: u64, body: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_BYTES];
        rand::thread_rng().fill_bytes(&mut nonce);
        self.sign_with_nonce(target, path, ts_ms, nonce, body)
    }

    /// [`Self::sign`] with a given nonce (tests build replays with it).
    pub fn sign_with_nonce(
        &self,
        target: u64,
        path: &str,
        ts_ms: u64,
        nonce: [u8; NONCE_BYTES],
        body: &[u8],
    ) -> String {
        let stamp = Stamp {
            ts: ts_ms,
            nonce,
            target,
        };
        format!(
            "{ts_ms}.{}.{target}.{}.{}",
            hex::encode(nonce),
            hex::encode(self.head_mac(path, &stamp)),
            hex::encode(self.body_mac(path, &stamp, body))
        )
    }

    /// Check the header's shape, target node, freshness, head MAC and nonce: everything but the
    /// body, so it runs before the body is read. `this_node` is the id of the receiving node.
    /// A request that passes has used up its nonce.
    pub fn check_head(
        &self,
        header: Option<&str>,
        path: &str,
        this_node: u64,
        now_ms: u64,
    ) -> Result<Verified, AuthError> {
        let header = header.ok_or(AuthError::Missing)?;
        let parts: Vec<&str> = header.trim().split('.').collect();
        let [ts, nonce_hex, target, head_hex, body_hex] = parts[..] else {
            return Err(AuthError::Malformed);
        };
        let ts: u64 = ts.parse().map_err(|_| AuthError::Malformed)?;
        let target: u64 = target.parse().map_err(|_| AuthError::Malformed)?;
        let mut nonce = [0u8; NONCE_BYTES];
        let mut head = [0u8; 32];
        let mut body = [0u8; 32];
        hex::decode_to_slice(nonce_hex, &mut nonce).map_err(|_| AuthError::Malformed)?;
        hex::decode_to_slice(head_hex, &mut head).map_err(|_| AuthError::Malformed)?;
        hex::decode_to_slice(body_hex, &mut body).map_err(|_| AuthError::Malformed)?;
        if target != this_node {
            return Err(AuthError::OtherNode {
                signed_for: target,
                this_node,
            });
        }
        if self.max_skew_ms > 0 && ts.abs_diff(now_ms) > self.max_skew_ms {
            let skew_ms = if ts >= now_ms {
                i64::try_from(ts - now_ms).unwrap_or(i64::MAX)
            } else {
                i64::try_from(now_ms - ts).map_or(i64::MIN, |d| -d)
            };
            return Err(AuthError::Skew {
                skew_ms,
                bound_ms: self.max_skew_ms,
            });
        }
        let stamp = Stamp { ts, nonce, target };
        if !constant_time_eq(&self.head_mac(path, &stamp), &head) {
            return Err(AuthError::BadSignature);
        }
        // Only a request carrying a valid head MAC reaches the nonce memory, so a caller
        // without the secret cannot fill it.
        let window = match self.max_skew_ms {
            0 => RETENTION_WITHOUT_SKEW_MS,
            skew => skew,
        };
        let forget_at = ts.max(now_ms).saturating_add(window);
        self.nonces
            .lock()
            .map_err(|_| AuthError::NonceMemoryFull)?
            .insert(nonce, forget_at, now_ms)?;
        Ok(Verified {
            stamp,
            body_mac: body,
        })
    }

    /// Check the body MAC of a request whose head passed [`Self::check_head`].
    pub fn check_body(&self, path: &str, head: &Verified, body: &[u8]) -> Result<(), AuthError> {
        if constant_time_eq(&self.body_mac(path, &head.stamp, body), &head.body_mac) {
            Ok(())
        } else {
            Err(AuthError::BadSignature)
        }
    }

    /// How many nonces this verifier remembers now.
    pub fn remembered_nonces(&self) -> usize {
        self.nonces.lock().map(|c| c.len()).unwrap_or(0)
    }
}

/// A request head that passed [`ClusterAuth::check_head`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    stamp: Stamp,
    body_mac: [u8; 32],
}

impl Verified {
    /// The caller's clock when it signed (ms since the Unix epoch).
    pub fn signed_at_ms(&self) -> u64 {
        self.stamp.ts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_vectors() {
        // Test case 1.
        let mac = hmac_sha256(&[0x0b; 20], &[b"Hi There"]);
        assert_eq!(
            hex::encode(mac),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2, message split in parts.
        let mac = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block size.
        let mac = hmac_sha256(
            &[0xaa; 131],
            &[b"Test Using Larger Than Block-Size Key - Hash Key First"],
        );
        assert_eq!(
            hex::encode(mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn sign_verify() {
        let a = ClusterAuth::new("s3cret", 1000);
        let h = a.sign(2, "/raft/vote", 5000, b"body");
        let head = a.check_head(Some(&h), "/raft/vote", 2, 5500).unwrap();
        assert_eq!(a.check_body("/raft/vote", &head, b"body"), Ok(()));
        assert_eq!(
            a.check_body("/raft/vote", &head, b"bodz"),
            Err(AuthError::BadSignature)
        );
        // Each check below uses a fresh signature: a passed head has used up its nonce.
        let fresh = || a.sign(2, "/raft/vote", 5000, b"body");
        assert_eq!(
            a.check_head(Some(&fresh()), "/raft/append", 2, 5500),
            Err(AuthError::BadSignature)
        );
        let other = ClusterAuth::new("other", 1000);
        assert_eq!(
            other.check_head(Some(&fresh()), "/raft/vote", 2, 5500),
            Err(AuthError::BadSignature)
        );
        assert_eq!(
            a.check_head(Some(&fresh()), "/raft/vote", 2, 7000),
            Err(AuthError::Skew {
                skew_ms: -2000,
                bound_ms: 1000
            })
        );
        assert_eq!(
            a.check_head(None, "/raft/vote", 2, 5000),
            Err(AuthError::Missing)
        );
        assert_eq!(
            a.check_head(Some("nonsense"), "/raft/vote", 2, 5000),
            Err(AuthError::Malformed)
        );
        // The former three-part format is refused.
        assert_eq!(
            a.check_head(Some("5000.00.00"), "/raft/vote", 2, 5000),
            Err(AuthError::Malformed)
        );
        assert_eq!(
            a.check_head(Some("5000.zz.2.zz.zz"), "/raft/vote", 2, 5000),
            Err(AuthError::Malformed)
        );
        // The timestamp is covered: shifting it breaks the head MAC.
        let shifted = fresh().replacen("5000", "5001", 1);
        assert_eq!(
            a.check_head(Some(&shifted), "/raft/vote", 2, 5000),
            Err(AuthError::BadSignature)
        );
        // A head from one request cannot carry another body.
        let h2 = a.sign(2, "/raft/vote", 5000, b"other body");
        let head2 = a.check_head(Some(&h2), "/raft/vote", 2, 5000).unwrap();
        assert_eq!(
            a.check_body("/raft/vote", &head2, b"body"),
            Err(AuthError::BadSignature)
        );
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn a_replayed_signature_is_refused_and_its_nonce_forgotten_after_the_window() {
        let a = ClusterAuth::new("s3cret", 1000);
        let h = a.sign(1, "/raft/append", 10_000, b"x");
        assert!(a.check_head(Some(&h), "/raft/append", 1, 10_000).is_ok());
        // A clone (the server's copy) shares the memory.
        let server = a.clone();
        assert_eq!(
            server.check_head(Some(&h), "/raft/append", 1, 10_100),
            Err(AuthError::Replayed)
        );
        // Once the window has passed the replay is stale, and the nonce is let go.
        assert_eq!(
            a.check_head(Some(&h), "/raft/append", 1, 11_500),
            Err(AuthError::Skew {
                skew_ms: -1500,
                bound_ms: 1000
            })
        );
        let later = a.sign(1, "/raft/append", 12_500, b"x");
        assert!(a
            .check_head(Some(&later), "/raft/append", 1, 12_500)
            .is_ok());
        assert_eq!(a.remembered_nonces(), 1, "the expired nonce was evicted");
    }

    #[test]
    fn the_target_node_is_signed() {
        let a = ClusterAuth::new("s3cret", 0);
        let for_2 = a.sign(2, "/raft/vote", 1, b"v");
        assert_eq!(
            a.check_head(Some(&for_2), "/raft/vote", 3, 1),
            Err(AuthError::OtherNode {
                signed_for: 2,
                this_node: 3
            })
        );
        // Rewriting the target in the header breaks the MAC.
        let parts: Vec<&str> = for_2.split('.').collect();
        let retargeted = format!("{}.{}.3.{}.{}", parts[0], parts[1], parts[3], parts[4]);
        assert_eq!(
            a.check_head(Some(&retargeted), "/raft/vote", 3, 1),
            Err(AuthError::BadSignature)
        );
        assert!(a.check_head(Some(&for_2), "/raft/vote", 2, 1).is_ok());
    }

    #[test]
    fn a_refusal_tells_the_caller_nothing_but_its_code() {
        let reasons = [
            AuthError::Missing,
            AuthError::Malformed,
            AuthError::Skew {
                skew_ms: -123_456,
                bound_ms: 30_000,
            },
            AuthError::BadSignature,
            AuthError::OtherNode {
                signed_for: 7,
                this_node: 3,
            },
            AuthError::Replayed,
            AuthError::NonceMemoryFull,
        ];
        for reason in reasons {
            let body: serde_json::Value =
                serde_json::from_str(&reason.public_body()).expect("JSON");
            let code = if matches!(reason, AuthError::Skew { .. }) {
                "clock_skew"
            } else {
                "unauthorized"
            };
            assert_eq!(
                body,
                serde_json::json!({"error": {"code": code, "message": REFUSED_MESSAGE}}),
                "{reason}"
            );
            assert!(
                !reason.public_body().contains(|c: char| c.is_ascii_digit()),
                "{reason}"
            );
        }
    }

    #[test]
    fn the_nonce_memory_is_bounded() {
        let mut cache = NonceCache::default();
        for i in 0..MAX_NONCES as u64 {
            let mut nonce = [0u8; NONCE_BYTES];
            nonce[..8].copy_from_slice(&i.to_le_bytes());
            cache.insert(nonce, 1_000 + i % 7, 0).unwrap();
        }
        assert_eq!(
            cache.insert([0xff; NONCE_BYTES], 2_000, 0),
            Err(AuthError::NonceMemoryFull)
        );
        // Time passing frees it.
        assert_eq!(cache.insert([0xff; NONCE_BYTES], 2_000, 1_500), Ok(()));
        assert_eq!(cache.len(), 1);
    }
}
