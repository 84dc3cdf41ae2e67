//! Checking an audit chain: every link, every seal, the stored head, and an anchor kept
//! elsewhere (how rows are hashed is [`crate::model::audit`]).

use crate::model::audit::{row_hash, SealRecord, SEAL_ACTION};
use crate::storage::{Store, StoreError, Txn};
use crate::tables::audit;
use serde::{Deserialize, Serialize};

/// The outcome of verifying a chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verification {
    pub ok: bool,
    pub count: u64,
    pub head_hash: String,
    pub eras: u64,
    /// The first row that failed, and why.
    pub first_bad_seq: Option<u64>,
    pub reason: Option<String>,
}

/// Recompute `org`'s chain; check every link, every seal against the era it closes, the stored
/// head, and, given an anchor `(count, head_hash)` kept elsewhere, that row `count − 1` still has
/// that hash (rows appended after the anchor do not fail it).
pub(crate) fn verify<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    org: &str,
    anchor: Option<(u64, [u8; 32])>,
) -> Result<Verification, StoreError> {
    let mut prev = [0u8; 32];
    let mut expected_seq = 0u64;
    let mut eras = 0u64;
    let mut anchor_seen = anchor.is_some_and(|(count, _)| count == 0);
    let fail = |seq: u64, reason: String, count: u64, prev: [u8; 32], eras: u64| Verification {
        ok: false,
        count,
        head_hash: hex::encode(prev),
        eras,
        first_bad_seq: Some(seq),
        reason: Some(reason),
    };
    for row in audit::chain(txn, org)? {
        let row = row?;
        if row.seq != expected_seq {
            return Ok(fail(
                expected_seq,
                format!("row {expected_seq} missing"),
                expected_seq,
                prev,
                eras,
            ));
        }
        if row.prev_hash != prev || row_hash(&prev, &row) != row.hash {
            return Ok(fail(
                row.seq,
                "hash mismatch".into(),
                expected_seq,
                prev,
                eras,
            ));
        }
        if row.action == SEAL_ACTION {
            let seal: Option<SealRecord> = row
                .detail
                .as_deref()
                .and_then(|d| serde_json::from_str(d).ok());
            let good = seal.is_some_and(|s| {
                s.era == eras && s.count == row.seq && s.head_hash == hex::encode(prev)
            });
            if !good {
                return Ok(fail(
                    row.seq,
                    "seal does not match the era it closes".into(),
                    expected_seq,
                    prev,
                    eras,
                ));
            }
            eras += 1;
        }
        prev = row.hash;
        expected_seq += 1;
        if let Some((count, hash)) = anchor {
            if expected_seq == count {
                if prev != hash {
                    return Ok(fail(
                        row.seq,
                        "anchored row was rewritten".into(),
                        expected_seq,
                        prev,
                        eras,
                    ));
                }
                anchor_seen = true;
            }
        }
    }
    let tip = audit::head(txn, org)?;
    if tip.count != expected_seq || tip.head_hash != prev {
        return Ok(fail(
            expected_seq,
            "stored head does not match the chain".into(),
            expected_seq,
            prev,
            eras,
        ));
    }
    if anchor.is_some() && !anchor_seen {
        return Ok(fail(
            expected_seq,
            "chain is shorter than the anchor (truncated)".into(),
            expected_seq,
            prev,
            eras,
        ));
    }
    Ok(Verification {
        ok: true,
        count: expected_seq,
        head_hash: hex::encode(prev),
        eras,
        first_bad_seq: None,
        reason: None,
    })
}
