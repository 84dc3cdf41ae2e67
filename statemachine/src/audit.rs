//! The per-org SHA-256 audit chain.
//!
//! ## Canonical encoding
//! `hash = SHA-256(prev_hash ‖ E)` where `prev_hash` is 32 bytes (all zero for an org's first
//! row) and `E` is, in this fixed order:
//! `seq` (u64 big-endian) ‖ `ts` (u64 big-endian) ‖ `actor` ‖ `action` ‖ `channel` ‖ `org` ‖ `detail`,
//! each string field encoded as a presence byte (`0` absent, `1` present) followed, when present,
//! by its UTF-8 length as u32 big-endian and the bytes. Lengths make the encoding unambiguous:
//! no two different rows encode to the same bytes.
//!
//! Appends are serialized by the Raft log, so the chain cannot fork, and every replica holds the
//! same chain byte for byte.

use crate::command::Outcome;
use crate::ids::Millis;
use crate::keys::Key;
use crate::machine::{ApplyResult, Ctx};
use crate::store::{Direction, Store, StoreError, Table};
use crate::txn::Txn;
use crate::validate;
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
    buf
}

pub fn row_hash(prev_hash: &[u8; 32], row: &AuditRow) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev_hash);
    h.update(canonical_encoding(row));
    h.finalize().into()
}

fn row_key(org: &str, seq: u64) -> Vec<u8> {
    Key::new().str(org).u64(seq).build()
}

fn head_key(org: &str) -> Vec<u8> {
    Key::new().str(org).build()
}

pub fn head<S: Store + ?Sized>(txn: &Txn<'_, S>, org: &str) -> Result<AuditHead, StoreError> {
    Ok(txn
        .get(Table::AuditHeads, &head_key(org))?
        .unwrap_or_default())
}

/// Append a row to `org`'s chain.
pub(crate) fn append(
    cx: &mut Ctx<'_, '_>,
    org: &str,
    action: &str,
    channel: Option<&str>,
    detail: Option<String>,
) -> ApplyResult<AuditRow> {
    let mut tip = head(cx.txn, org)?;
    let mut row = AuditRow {
        seq: tip.count,
        ts: cx.t,
        actor: (!cx.actor.is_empty()).then(|| cx.actor.to_string()),
        action: action.to_string(),
        channel_id: channel.map(str::to_string),
        org: org.to_string(),
        detail,
        prev_hash: tip.head_hash,
        hash: [0; 32],
    };
    row.hash = row_hash(&row.prev_hash, &row);
    cx.txn.put(Table::Audit, row_key(org, row.seq), &row);
    tip.count += 1;
    tip.head_hash = row.hash;
    cx.txn.put(Table::AuditHeads, head_key(org), &tip);
    Ok(row)
}

/// The audit row that data-changing operations append in the same command.
pub(crate) fn record_default(
    cx: &mut Ctx<'_, '_>,
    action: &str,
    channel: Option<&str>,
    detail: String,
) -> ApplyResult<()> {
    append(cx, DEFAULT_ORG, action, channel, Some(detail)).map(|_| ())
}

pub(crate) fn record(
    cx: &mut Ctx<'_, '_>,
    action: &str,
    channel: Option<&str>,
    org: Option<&str>,
    detail: Option<&str>,
) -> ApplyResult<Outcome> {
    validate::name("action", action)?;
    validate::opt_name("channel", channel)?;
    validate::opt_name("org", org)?;
    let row = append(
        cx,
        org.unwrap_or(DEFAULT_ORG),
        action,
        channel,
        detail.map(str::to_string),
    )?;
    Ok(Outcome::Audit {
        seq: row.seq,
        hash: hex::encode(row.hash),
    })
}

/// Close the current era of `org` with a seal row recording its `(count, head_hash)`.
pub(crate) fn seal(cx: &mut Ctx<'_, '_>, org: &str) -> ApplyResult<Outcome> {
    validate::name("org", org)?;
    let tip = head(cx.txn, org)?;
    let record = SealRecord {
        era: tip.era,
        count: tip.count,
        head_hash: hex::encode(tip.head_hash),
    };
    let detail = serde_json::to_string(&record).unwrap_or_default();
    let row = append(cx, org, SEAL_ACTION, None, Some(detail))?;
    let mut tip = head(cx.txn, org)?;
    tip.era += 1;
    cx.txn.put(Table::AuditHeads, head_key(org), &tip);
    Ok(Outcome::Audit {
        seq: row.seq,
        hash: hex::encode(row.hash),
    })
}

/// Rows of `org` from `from_seq`, at most `limit`.
pub fn list<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    org: &str,
    from_seq: u64,
    limit: usize,
) -> Result<Vec<AuditRow>, StoreError> {
    let start = row_key(org, from_seq);
    let end = crate::keys::prefix_end(&head_key(org));
    let mut out = Vec::new();
    for item in txn
        .scan(Table::Audit, &start, end.as_deref(), Direction::Forward)?
        .take(limit)
    {
        out.push(Txn::<S>::decode(Table::Audit, &item?.1)?);
    }
    Ok(out)
}

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
pub fn verify<S: Store + ?Sized>(
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
    for item in txn.scan_prefix(Table::Audit, &head_key(org), Direction::Forward)? {
        let row: AuditRow = Txn::<S>::decode(Table::Audit, &item?.1)?;
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
    let tip = head(txn, org)?;
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

/// Every org that has a chain.
pub fn orgs<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for item in txn.scan(Table::AuditHeads, &[], None, Direction::Forward)? {
        let (key, _) = item?;
        if let Some(name) = key.get(4..).and_then(|b| std::str::from_utf8(b).ok()) {
            out.push(name.to_string());
        }
    }
    Ok(out)
}
