//! One command applied under its operation id: its time fixed first, a [`Ctx`] built, the
//! command handed to its own [`Apply`](crate::apply::Apply) by [`dispatch`], and everything it
//! wrote rolled back if it is rejected.

use crate::apply::context::{ApplyError, Ctx};
use crate::apply::{client_clock, dispatch};
use crate::model::meta::MetaState;
use crate::storage::{Store, StoreError, Txn};
use crate::tables::Db;
use crate::wire::command::Envelope;
use crate::wire::outcome::Response;

/// Apply one command under operation id `op`: its time is fixed first (the proposer's clock
/// clamped monotonic, or a test client's exact time: [`client_clock::time_of`]); a rejection
/// rolls back everything it wrote.
pub(crate) fn command<'s>(
    txn: &mut Txn<'s, dyn Store + 's>,
    meta: &mut MetaState,
    op: u64,
    envelope: &Envelope,
) -> Result<Response, StoreError> {
    let saved_meta = meta.clone();
    let cp = txn.checkpoint();
    let t = client_clock::time_of(meta, envelope);
    let result = {
        let mut cx = Ctx {
            db: Db { txn, meta, t },
            index: op,
            actor: &envelope.actor,
            operator: envelope.as_operator,
            format: envelope.format,
        };
        dispatch::dispatch(&mut cx, &envelope.command)
    };
    match result {
        Ok(outcome) => {
            txn.release(cp);
            Ok(Ok(outcome.dated(envelope.format)))
        }
        Err(ApplyError::Rejected(r)) => {
            // A rejection changes nothing, not even the clock: "bad input changes nothing".
            txn.rollback(cp);
            *meta = saved_meta;
            Ok(Err(r))
        }
        Err(ApplyError::Store(e)) => Err(e),
    }
}
