//! Exactly-once writes across retries: the remembered answer of each request id.
//!
//! A proposer cannot always tell whether a write took effect: the leader may step down after
//! appending the entry, or the answer may be lost on the way back. Retrying blindly would apply
//! the command twice (a second claim, a second audit row, a config CAS answered 412 although it
//! succeeded). So every write carries a request id chosen by its proposer; the first time an
//! `(actor, request id)` takes effect its answer is stored for [`REQUEST_TTL_MS`], and a retry
//! inside that window gets [`Outcome::Repeated`] with the original index and answer instead of
//! being applied again. `ExpireRecords` drops the records once their window is over. Rejections
//! are not stored: they changed nothing, so their retry is simply judged again.
//!
//! A request id names one request, not any request: the answer of an envelope with a
//! [`Envelope::fingerprint`] is stored with the fingerprint of the HTTP request it answers, and
//! an envelope that repeats the id with another fingerprint (another route, path, body) is
//! refused with [`Rejection::RequestIdReused`] rather than handed an answer that is not its own
//! (docs/SPEC.md §10.5). The fingerprint is computed by the proposer from the request, not from
//! the command, because the command of a retry legitimately differs from the first one's (values
//! encrypted at rest under a fresh nonce, a new random token, the node's clock).

use crate::model::ids::Millis;
use crate::model::meta::MetaState;
use crate::storage::{Store, StoreError, Txn};
use crate::tables::requests::{self, RequestRecord};
use crate::wire::command::Envelope;
use crate::wire::outcome::{Outcome, Response};
use crate::wire::rejection::Rejection;

/// How long an answer is remembered: far longer than any client or forwarding retry window.
pub const REQUEST_TTL_MS: Millis = 120_000;
/// Longest request id accepted.
pub const MAX_REQUEST_ID_LEN: usize = 64;

/// A request id must be 1 to 64 visible ASCII characters.
pub fn check_id(id: &str) -> Result<(), Rejection> {
    if id.is_empty() || id.len() > MAX_REQUEST_ID_LEN || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Rejection::invalid(
            "request_id",
            format!("must be 1 to {MAX_REQUEST_ID_LEN} visible ASCII characters"),
        ));
    }
    Ok(())
}

/// Apply one envelope, exactly once per request id: a request id already answered gets that
/// answer back ([`Outcome::Repeated`]) and changes nothing; a new one is applied and, when it
/// took effect, its answer remembered. A rejection is not remembered: it changed nothing, so
/// applying its retry cannot apply anything twice (and bad input still changes nothing).
///
/// `log_index` is the entry's index (what a repeat reports); `op` is the operation id the
/// command runs under (the same, or a batched envelope's own id: see
/// [`crate::wire::command::op_id`]).
pub(crate) fn once<'s>(
    txn: &mut Txn<'s, dyn Store + 's>,
    meta: &mut MetaState,
    log_index: u64,
    op: u64,
    envelope: &Envelope,
) -> Result<Response, StoreError> {
    let Some(id) = envelope.request_id.as_deref() else {
        return super::single::command(txn, meta, op, envelope);
    };
    if let Err(r) = check_id(id) {
        return Ok(Err(r));
    }
    let fingerprint = envelope.fingerprint.as_ref();
    if let Some(record) = requests::get(txn, &envelope.actor, id)? {
        // An answer bound to a request is given only to that request; one stored without a
        // fingerprint (by an older build) answers any repeat, as it always did.
        if let Some(bound) = requests::fingerprint(txn, &envelope.actor, id)? {
            if fingerprint != Some(&bound) {
                return Ok(Err(Rejection::RequestIdReused {
                    request_id: id.to_string(),
                }));
            }
        }
        return Ok(Ok(Outcome::Repeated {
            index: record.index,
            response: Box::new(record.response),
        }));
    }
    let response = super::single::command(txn, meta, op, envelope)?;
    if response.is_ok() {
        let record = RequestRecord {
            index: log_index,
            expires_at: meta.clock.saturating_add(REQUEST_TTL_MS),
            response: response.clone(),
        };
        requests::put(txn, &envelope.actor, id, &record, fingerprint);
    }
    Ok(response)
}
