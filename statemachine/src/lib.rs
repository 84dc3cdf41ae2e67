//! # raftlane-statemachine
//!
//! The deterministic state machine that every raftlane node applies, in the same order, to the
//! same committed log. It holds the message pipeline (messages, work rows in four stages, FIFO
//! lanes and their leases), versioned configuration, transform state, reference snapshots,
//! approvals, API principals and a per-org SHA-256 audit chain.
//!
//! `apply` is a pure function of (state, command): no clock (the proposer stamps `now_ms` and the
//! state clamps it monotonic), no randomness (ids come from counters in state or the log index),
//! no I/O (the [`Store`] trait persists a batch's effects in one atomic write). A command that does
//! not fit the state is a typed [`Rejection`] and changes nothing.
//!
//! Reading order: [`command`] (the contract), [`machine`] (apply), then one module per concern:
//! [`lane`] (FIFO order and leases), [`claim`], [`fence`], [`handoff`], [`complete`],
//! [`finalize`], [`replay`], [`config`], [`audit`], [`approval`], [`principal`], [`retention`].

pub mod approval;
pub mod audit;
mod claim;
pub mod codec;
pub mod command;
pub mod complete;
pub mod config;
pub mod digest;
mod enqueue;
mod fence;
pub mod finalize;
mod handoff;
pub mod ids;
pub mod keys;
pub mod lane;
pub mod machine;
pub mod message;
mod messages;
pub mod principal;
pub mod query;
mod replay;
pub mod request;
mod retention;
pub mod rewrite;
pub mod row;
mod rows;
pub mod state;
pub mod store;
pub mod txn;
mod validate;

#[cfg(feature = "rocksdb")]
pub mod rocks;

pub use command::{ClaimedRow, Command, Envelope, FifoEmpty, Outcome, Rejection, Response};
pub use ids::{ApprovalId, Fence, MessageId, Millis, RowId};
pub use machine::{BatchItem, MetaState, StateMachine};
pub use store::{MemStore, Store, StoreError, Table};
pub use validate::{MAX_CLAIM_LIMIT, MAX_NAME_LEN, MAX_TTL_MS};

/// Validation helpers the API runs before proposing (the same checks `apply` makes).
pub mod checks {
    pub use crate::validate::{name, opt_name, ttl};
}
