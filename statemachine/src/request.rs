//! Exactly-once writes across retries: the remembered answer of each request id.
//!
//! A proposer cannot always tell whether a write took effect: the leader may step down after
//! appending the entry, or the answer may be lost on the way back. Retrying blindly would apply
//! the command twice (a second claim, a second audit row, a config CAS answered 412 although it
//! succeeded). So every write carries a request id chosen by its proposer; the first time an
//! `(actor, request id)` takes effect its answer is stored here for [`REQUEST_TTL_MS`], and a
//! retry inside that window gets [`Outcome::Repeated`] with the original index and answer
//! instead of being applied again. `ExpireRecords` drops the records once their window is over.
//! Rejections are not stored: they changed nothing, so their retry is simply judged again.

use crate::command::{Outcome, Rejection, Response};
use crate::ids::Millis;
use crate::keys::Key;
use crate::machine::Ctx;
use crate::store::{Direction, Store, StoreError, Table};
use crate::txn::Txn;
use serde::{Deserialize, Serialize};

/// How long an answer is remembered: far longer than any client or forwarding retry window.
pub const REQUEST_TTL_MS: Millis = 120_000;
/// Longest request id accepted.
pub const MAX_REQUEST_ID_LEN: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct RequestRecord {
    index: u64,
    expires_at: Millis,
    response: Response,
}

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

fn key(actor: &str, id: &str) -> Vec<u8> {
    Key::new().str(actor).str(id).build()
}

/// The answer already given to `(actor, id)`, as a [`Outcome::Repeated`].
pub(crate) fn remembered<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    actor: &str,
    id: &str,
) -> Result<Option<Response>, StoreError> {
    let record: Option<RequestRecord> = txn.get(Table::Requests, &key(actor, id))?;
    Ok(record.map(|r| {
        Ok(Outcome::Repeated {
            index: r.index,
            response: Box::new(r.response),
        })
    }))
}

/// Remember `response`, the answer given at `index`, until `t + REQUEST_TTL_MS`.
pub(crate) fn remember<S: Store + ?Sized>(
    txn: &mut Txn<'_, S>,
    t: Millis,
    index: u64,
    actor: &str,
    id: &str,
    response: &Response,
) {
    let k = key(actor, id);
    let expires_at = t.saturating_add(REQUEST_TTL_MS);
    txn.put_raw(
        Table::RequestExpiry,
        Key::new().u64(expires_at).bytes(&k).build(),
        Vec::new(),
    );
    txn.put(
        Table::Requests,
        k,
        &RequestRecord {
            index,
            expires_at,
            response: response.clone(),
        },
    );
}

/// Forget every answer whose window ended before `cx.t`; returns how many.
pub(crate) fn expire(cx: &mut Ctx<'_, '_>) -> Result<u64, StoreError> {
    let end = Key::new().u64(cx.t).build();
    let mut keys = Vec::new();
    for item in cx
        .txn
        .scan(Table::RequestExpiry, &[], Some(&end), Direction::Forward)?
    {
        keys.push(item?.0);
    }
    let count = keys.len() as u64;
    for k in keys {
        // expires_at (8) ‖ actor ‖ request id: the record's key is everything after the expiry.
        if let Some(record) = k.get(8..) {
            cx.txn.delete(Table::Requests, record.to_vec());
        }
        cx.txn.delete(Table::RequestExpiry, k);
    }
    Ok(count)
}
