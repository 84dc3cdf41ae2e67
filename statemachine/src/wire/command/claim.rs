//! Claiming work: unordered and FIFO claims, lease renewal, release and reclaim (docs/SPEC.md §4).

use crate::model::ids::{Fence, RowId};
use crate::model::row::Stage;
use serde::{Deserialize, Serialize};

/// Up to `limit` due rows of `stage` for `owner`, in due order, unordered across lanes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimReady {
    pub stage: Stage,
    pub limit: u32,
    pub channel: Option<String>,
    pub destination: Option<String>,
    pub owner: String,
    pub ttl_ms: u64,
}

/// The head of one lane for `owner`, in strict FIFO order (docs/SPEC.md §4.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimNextFifo {
    pub stage: Stage,
    pub lane: String,
    pub owner: String,
    pub ttl_ms: u64,
}

/// Extend `owner`'s leases on these rows and on their lanes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenewLeases {
    pub ids: Vec<RowId>,
    pub owner: String,
    pub ttl_ms: u64,
}

/// Return every row whose lease expired to pending (of one stage, or all).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReclaimExpired {
    pub stage: Option<Stage>,
}

/// Give a lane back before its lease ends; only its owner may.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseLane {
    pub stage: Stage,
    pub lane: String,
    pub owner: String,
}

/// MarkDone of a row, then ClaimNextFifo of the row's own lane for `owner`, in one entry: a FIFO
/// lane worker's "finished this one, give me the next" costs one consensus round trip instead
/// of two. Answers like ClaimNextFifo (`Outcome::FifoClaimed`); when the done is rejected
/// nothing is applied, the claim included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoneThenClaimNext {
    pub row_id: RowId,
    pub fence: Fence,
    pub owner: String,
    pub ttl_ms: u64,
}

/// ClaimNextFifo with the row claim's owner apart from the lane lease's owner (docs/SPEC.md
/// §14.1): the claim is recorded for `owner`, the lane lease is taken (or verified) for
/// `lane_owner`, and with `lane_owner: None` no lane lease is taken at all (a live lease of
/// another owner still keeps the lane busy). `ClaimNextFifo {owner}` is this command with
/// `lane_owner: Some(owner)`. Answers `Outcome::FifoClaimed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimFifoHead {
    pub stage: Stage,
    pub lane: String,
    /// The owner recorded in the row's claim (what RenewLeases and completions go by).
    pub owner: String,
    /// Who holds the lane lease; `None`: the claim takes no lane lease.
    pub lane_owner: Option<String>,
    pub ttl_ms: u64,
}
