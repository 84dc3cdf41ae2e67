//! Applying commands: one log entry's command to the state, exactly once, all or nothing.
//!
//! The path of an entry: [`entry`] unpacks a [`Batch`](crate::wire::command::Batch)
//! ([`batch`]); each envelope goes through [`request`] (a request id already answered gets its
//! answer back), then [`command`]: the clock is clamped, a [`Ctx`] is built, [`dispatch`] hands
//! the command to its own [`Apply`] implementation, and a rejection rolls back everything the
//! command wrote.
//!
//! One module per command family, each holding its commands' `Apply` implementations:
//! [`enqueue`], [`claim`], [`handoff`], [`complete`], [`replay`], [`config`], [`state`]
//! (transform state and reference snapshots), [`retention`], [`audit`], [`approval`],
//! [`principal`], [`rewrite`], [`batch`], and the engine's auth store: [`users`] (users, roles,
//! AD group maps) and [`sessions`]. The invariants they rely on are [`crate::rules`].

pub(crate) mod approval;
mod as_operator;
pub(crate) mod audit;
pub(crate) mod batch;
pub(crate) mod claim;
mod client_clock;
pub(crate) mod complete;
pub(crate) mod config;
mod context;
pub(crate) mod coordination;
pub(crate) mod dispatch;
pub(crate) mod enqueue;
pub(crate) mod handoff;
pub(crate) mod principal;
pub(crate) mod replay;
pub mod request;
pub(crate) mod retention;
pub(crate) mod retention_page;
pub mod rewrite;
pub(crate) mod sessions;
pub(crate) mod state;
pub(crate) mod users;

pub(crate) use context::{Apply, Ctx};
pub use context::{ApplyError, ApplyResult};

use crate::model::meta::MetaState;
use crate::storage::{Store, StoreError, Txn};
use crate::tables::Db;
use crate::wire::command::{Command, Envelope};
use crate::wire::outcome::Response;

/// Apply the command of the log entry at `index`: a batch envelope by envelope, anything else
/// as one command.
pub(crate) fn entry<'s>(
    txn: &mut Txn<'s, dyn Store + 's>,
    meta: &mut MetaState,
    index: u64,
    envelope: &Envelope,
) -> Result<Response, StoreError> {
    match &envelope.command {
        Command::Batch(batch) => batch::apply_group(txn, meta, index, &batch.commands),
        _ => request::once(txn, meta, index, index, envelope),
    }
}

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
    let (t, command) = client_clock::time_of(meta, envelope);
    let result = {
        let mut cx = Ctx {
            db: Db { txn, meta, t },
            index: op,
            actor: &envelope.actor,
            operator: false,
        };
        dispatch::dispatch(&mut cx, command)
    };
    match result {
        Ok(outcome) => {
            txn.release(cp);
            Ok(Ok(outcome))
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
