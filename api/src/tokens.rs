//! Token material: how a bearer token is hashed to be looked up ([`sha256_hex`]) and compared
//! ([`ct_eq`]), and the key created tokens are derived under ([`token_key`]).

use sha2::{Digest, Sha256};

/// The hex SHA-256 of a token: what the state keeps and principals are looked up by.
pub fn sha256_hex(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Constant-time equality (one implementation for the whole node, on the `subtle` crate).
pub use raftlane_raft::auth::constant_time_eq as ct_eq;

/// The key tokens are derived under (see `write::token_issue`), derived from the cluster secret so
/// that the secret itself is not used for two purposes. `None` without a secret: an empty key
/// would make every token computable from its nonce, which the log keeps.
pub fn token_key(cluster_secret: &str) -> Option<[u8; 32]> {
    (!cluster_secret.is_empty()).then(|| {
        raftlane_raft::auth::hmac_sha256(cluster_secret.as_bytes(), &[b"raftlane-token-key-v1"])
    })
}
