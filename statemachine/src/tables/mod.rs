//! Typed access to each table: what it holds, under which key, and the reads and writes the
//! layers above need. Besides [`crate::storage::keys`] (the encoding), this is the only code
//! that knows a key layout; rules and commands go through these functions.
//!
//! Reads take a [`Txn`] (the apply overlay, or the query layer's read view); writes take a
//! [`Db`], which also carries the counters and the command's clock reading. A `Db` parameter is
//! named `cx` like the apply context that derefs to it, so code moves between the layers as is.

pub(crate) mod approvals;
pub(crate) mod audit;
pub(crate) mod children;
pub(crate) mod config;
pub(crate) mod coordination;
pub(crate) mod covered;
pub(crate) mod ended;
pub(crate) mod idempotency;
pub(crate) mod lanes;
pub(crate) mod lease_owners;
pub(crate) mod messages;
pub(crate) mod meta;
pub(crate) mod paused;
pub(crate) mod principals;
pub(crate) mod reference;
pub(crate) mod requests;
pub(crate) mod responses;
pub(crate) mod row_retry;
pub(crate) mod rows;
pub(crate) mod sessions;
pub(crate) mod state;
pub(crate) mod tallies;
pub(crate) mod users;

use crate::model::ids::Millis;
use crate::model::meta::MetaState;
use crate::storage::{Store, Txn};

/// What one command reads and writes: the batch overlay, the counters, and `t`, the state
/// machine's clock for this command (the proposer's reading clamped monotonic).
pub(crate) struct Db<'t, 's> {
    pub txn: &'t mut Txn<'s, dyn Store + 's>,
    pub meta: &'t mut MetaState,
    pub t: Millis,
}
