//! Applying commands: one log entry's command to the state, exactly once, all or nothing.
//!
//! The path of an entry: [`entry`] unpacks a [`Batch`](crate::wire::command::Batch)
//! ([`batch`]); each envelope goes through [`request`] (a request id already answered gets its
//! answer back), then [`single`]: the clock is clamped, a [`Ctx`] is built, [`dispatch`] hands
//! the command to its own [`Apply`] implementation, and a rejection rolls back everything the
//! command wrote.
//!
//! One module per command family, each holding its commands' `Apply` implementations:
//! [`enqueue`], [`claim`], [`handoff`], [`complete`], [`replay`], [`config`], [`state`]
//! (transform state and reference snapshots), [`retention`], [`audit`], [`approval`],
//! [`principal`], [`rewrite`], [`batch`], and the engine's auth store: [`users`] (users, roles,
//! AD group maps) and [`sessions`]. The invariants they rely on are [`crate::rules`].

pub(crate) mod approval;
pub(crate) mod audit;
pub(crate) mod batch;
pub(crate) mod claim;
mod client_clock;
pub(crate) mod complete;
pub(crate) mod config;
mod context;
pub(crate) mod coordination;
pub(crate) mod destinations;
pub(crate) mod dispatch;
pub(crate) mod enqueue;
pub(crate) mod handoff;
mod log_format;
pub(crate) mod principal;
pub(crate) mod replay;
pub mod request;
pub(crate) mod retention;
pub(crate) mod retention_page;
pub mod rewrite;
pub(crate) mod sessions;
pub(crate) mod single;
pub(crate) mod state;
pub(crate) mod users;

pub(crate) use context::{Apply, Ctx};
pub use context::{ApplyError, ApplyResult};

use crate::model::meta::MetaState;
use crate::storage::{Store, StoreError, Txn};
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
        Command::Batch(batch) if envelope.is_batch() => {
            batch::apply_group(txn, meta, index, &batch.commands)
        }
        _ => request::once(txn, meta, index, index, envelope),
    }
}
