//! # raftlane-statemachine
//!
//! The deterministic state machine that every raftlane node applies, in the same order, to the
//! same committed log. It holds the message pipeline (messages, work rows in four stages, FIFO
//! lanes and their leases), versioned configuration, transform state, reference snapshots,
//! approvals, API principals, a per-org SHA-256 audit chain, and the users, roles and sessions
//! of the engine it stores for (docs/SPEC.md §13).
//!
//! `apply` is a pure function of (state, command): no clock (the proposer stamps `now_ms` and the
//! state clamps it monotonic), no randomness (ids come from counters in state or the log index),
//! no I/O (the [`Store`] trait persists a batch's effects in one atomic write). A command that does
//! not fit the state is a typed [`Rejection`] and changes nothing.
//!
//! ## Reading order, by layer
//! Each layer uses only the layers before it (`tests/layers.rs` enforces this):
//!
//! 1. [`model`]: the plain types the state is made of (ids, messages, rows, lanes, config,
//!    principals, approvals, audit rows, users and sessions).
//! 2. [`wire`]: what travels in the log and back: [`Envelope`], [`Command`] (one struct per
//!    command), [`Outcome`], [`Rejection`], and the codec. Built from `model` types.
//! 3. [`storage`]: the [`Store`] trait and its tables, the in-memory and RocksDB stores, the
//!    write overlay a batch is applied in, the key encoding and the state digest.
//! 4. `tables`: typed access to each table; the only code (with `storage::keys`) that knows a
//!    key layout.
//! 5. [`rules`]: each invariant once: FIFO ([`rules::fifo`] is where FIFO is decided), fencing,
//!    the finalizer, retry backoff, idempotency windows, input checks.
//! 6. [`apply`]: the apply context, one module per command family with each command's `Apply`,
//!    and the dispatch (one line per command).
//! 7. [`query`]: the read side ([`query::Reader`]).
//! 8. [`machine`]: the [`StateMachine`]: batches, snapshots, the digest.

pub mod apply;
pub mod machine;
pub mod model;
pub mod query;
pub mod rules;
pub mod storage;
mod tables;
pub mod wire;

pub use machine::{BatchItem, StateMachine};
pub use model::ids::{ApprovalId, Fence, MessageId, Millis, RowId};
pub use model::meta::MetaState;
pub use rules::validate::{MAX_CLAIM_LIMIT, MAX_NAME_LEN, MAX_TTL_MS};
pub use storage::store::{MemStore, Store, StoreError, Table};
pub use wire::{ClaimedRow, Command, Envelope, FifoEmpty, Outcome, Rejection, Response};

/// Validation helpers the API runs before proposing (the same checks `apply` makes).
pub mod checks {
    pub use crate::rules::validate::{name, opt_name, ttl};
}

// Module paths kept at the root for other crates (and docs) that name them.
pub use model::row;
#[cfg(feature = "rocksdb")]
pub use storage::rocks;
pub use wire::codec;
