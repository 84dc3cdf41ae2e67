//! # raftlane-contract
//!
//! What a raftlane node and its clients agree on over HTTP, in one place: header names, how a
//! name becomes a path segment, the error body, and the typed requests and answers of the
//! routes a worker calls. The server parses and answers with these types and the Rust client
//! sends and decodes them, so a change to a field shows up on both sides at compile time.
//!
//! It depends only on the state machine's plain types (ids, stages, claimed rows), not on
//! storage or Raft, so a program that only calls the API never compiles RocksDB.

pub mod cluster;
pub mod error;
pub mod headers;
pub mod path;
pub mod rows;
pub mod work;

pub use cluster::{ConfigWritten, StateDigest};
pub use error::{ErrorBody, ErrorDetail};
pub use raftlane_statemachine::model::ids::{ApprovalId, Fence, MessageId, Millis, RowId};
pub use raftlane_statemachine::row::{RowStatus, Stage};
pub use raftlane_statemachine::wire::command::{HandoffDisposition, RouteDisposition};
pub use raftlane_statemachine::ClaimedRow;
pub use rows::{
    ClaimNext, DeadBody, DeliveryBody, DoneBody, FailBody, HandoffBody, ReingressBody,
    ResponseBody, RetryBody, RouteBody, RouteHandler, RowAction, RowActionItem, RowActionsRequest,
    StateOpBody, TransformBody,
};
pub use work::{Enqueued, FifoClaim, FifoEmptyReason};
