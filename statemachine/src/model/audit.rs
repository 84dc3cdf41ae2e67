//! The per-org SHA-256 audit chain.
//!
//! ## Canonical encoding
//! `hash = SHA-256(prev_hash ‖ E)` where `prev_hash` is 32 bytes (all zero for an org's first
//! row) and `E` is, in this fixed order:
//! `seq` (u64 big-endian) ‖ `ts` (u64 big-endian) ‖ `actor` ‖ `action` ‖ `channel` ‖ `org` ‖ `detail`,
//! each string field encoded as a presence byte (`0` absent, `1` present) followed, when present,
//! by its UTF-8 length as u32 big-endian and the bytes, then, only for a row that records one
//! (docs/SPEC.md §9.8), `principal` encoded the same way. Lengths make the encoding
//! unambiguous: no two different rows encode to the same bytes (a row with a principal has
//! bytes after its detail, one without has none), and rows written before principals were
//! recorded hash as they always did.
//!
//! Appends are serialized by the Raft log, so the chain cannot fork, and every replica holds the
//! same chain byte for byte. Appending is [`crate::tables::audit`]; checking a chain is
//! [`crate::query::audit`].

use crate::model::ids::Millis;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const DEFAULT_ORG: &str = "default";
/// The action of a seal row.
pub const SEAL_ACTION: &str = "audit.seal";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    pub seq: u64,
    pub ts: Millis,
    pub actor: Option<String>,
    pub action: String,
    pub channel_id: Option<String>,
    pub org: String,
    pub detail: Option<String>,
    pub prev_hash: [u8; 32],
    pub hash: [u8; 32],
    /// The authenticated principal that wrote the row, when the caller named its `actor`
    /// (RecordAudit naming its actor): the row reads "actor via principal", and the actor is never recorded
    /// instead of who wrote it. `None`: the actor is the principal. Kept beside the row
    /// (`AuditPrincipals`), so the stored row's encoding is unchanged; covered by the hash.
    #[serde(skip)]
    pub principal: Option<String>,
}

/// The tip of an org's chain: the anchor a verifier can keep elsewhere.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditHead {
    /// Rows in the chain (= next seq).
    pub count: u64,
    pub head_hash: [u8; 32],
    /// Number of seals so far (era 0 is the first).
    pub era: u64,
}

/// What a seal row's detail records about the era it closes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealRecord {
    pub era: u64,
    pub count: u64,
    pub head_hash: String,
}

fn put_str(buf: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => buf.push(0),
        Some(s) => {
            buf.push(1);
            buf.extend_from_slice(&(s.len() as u32).to_be_bytes());
            buf.extend_from_slice(s.as_bytes());
        }
    }
}

/// The canonical encoding `E` of a row's content (see the module docs).
pub fn canonical_encoding(row: &AuditRow) -> Vec<u8> {
    let mut buf = Vec::with_capacity(64 + row.action.len());
    buf.extend_from_slice(&row.seq.to_be_bytes());
    buf.extend_from_slice(&row.ts.to_be_bytes());
    put_str(&mut buf, row.actor.as_deref());
    put_str(&mut buf, Some(&row.action));
    put_str(&mut buf, row.channel_id.as_deref());
    put_str(&mut buf, Some(&row.org));
    put_str(&mut buf, row.detail.as_deref());
    if let Some(principal) = &row.principal {
        put_str(&mut buf, Some(principal));
    }
    buf
}

pub fn row_hash(prev_hash: &[u8; 32], row: &AuditRow) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev_hash);
    h.update(canonical_encoding(row));
    h.finalize().into()
}
