//! Fenced row actions: handoffs between stages, completions, failures, dead letters (docs/SPEC.md §3.7, §4.4a, §5).

use crate::model::config::RetryPolicy;
use crate::model::ids::{Fence, RowId};
use crate::wire::command::produce::Delivery;
use serde::{Deserialize, Serialize};

/// The handoffs that consume a claimed FIFO row and hand its message on: what
/// [`HandOnThenClaimNext`] may carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HandOn {
    Route(RouteHandoff),
    Handoff(Handoff),
    Transform(TransformHandoff),
}

impl HandOn {
    /// The row the handoff consumes.
    pub fn row_id(&self) -> RowId {
        match self {
            HandOn::Route(c) => c.row_id,
            HandOn::Handoff(c) => c.row_id,
            HandOn::Transform(c) => c.row_id,
        }
    }
}

/// A handoff of a claimed row, then ClaimNextFifo of that row's lane for `owner`, in one entry:
/// a stage worker's "handed this one on, give me the next" costs one consensus round trip
/// instead of two, as [`DoneThenClaimNext`] does for the delivery worker. Answers
/// `Outcome::HandedOnThenClaimed`; when the handoff is rejected nothing is applied, the claim
/// included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandOnThenClaimNext {
    pub action: HandOn,
    pub owner: String,
    pub ttl_ms: u64,
}

/// Ingress → routed: the ingress row is consumed, one routed row per handler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteHandoff {
    pub row_id: RowId,
    pub fence: Fence,
    pub handlers: Vec<HandlerWork>,
    pub disposition: RouteDisposition,
}

/// Ingress → outbound: the ingress row is consumed, one outbound row per delivery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    pub row_id: RowId,
    pub fence: Fence,
    pub deliveries: Vec<Delivery>,
    pub disposition: HandoffDisposition,
}

/// Routed → outbound, with the transform's state changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransformHandoff {
    pub row_id: RowId,
    pub fence: Fence,
    pub deliveries: Vec<Delivery>,
    pub state_ops: Vec<StateOp>,
}

/// The row's work is done.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkDone {
    pub row_id: RowId,
    pub fence: Fence,
}

/// An outbound row is done and the destination answered: the response is captured, and
/// re-ingested on `reingress_to` if given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompleteWithResponse {
    pub row_id: RowId,
    pub fence: Fence,
    pub body: String,
    pub outcome: String,
    pub detail: Option<String>,
    pub reingress_to: Option<String>,
}

/// Response → a new message on `loopback_channel`, correlated with its origin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngressHandoff {
    pub row_id: RowId,
    pub fence: Fence,
    pub loopback_channel: String,
    pub depth_cap: u32,
    /// The child message's key and fields, when the caller names them (see [`ChildKey`]).
    pub child: Option<ChildKey>,
}

/// An attempt failed: retry after the policy's backoff, or dead-letter the row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkFailed {
    pub row_id: RowId,
    pub fence: Fence,
    pub error: String,
    pub retry: RetryPolicy,
}

/// Dead-letter a row at once (a worker under its fence, or an operator without one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetterNow {
    pub row_id: RowId,
    pub fence: Option<Fence>,
    pub error: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerWork {
    pub handler: String,
    pub payload: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateOp {
    pub namespace: String,
    pub key: String,
    /// JSON text.
    pub value: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(
        description = "What a `route` did with an ingress row (absent in a request: from its handlers)."
    )
)]
#[serde(rename_all = "snake_case")]
pub enum RouteDisposition {
    Routed,
    Unrouted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(
        description = "What a `handoff` did with a row (absent in a request: from its deliveries)."
    )
)]
#[serde(rename_all = "snake_case")]
pub enum HandoffDisposition {
    Routed,
    Filtered,
    Unrouted,
}

/// The child of an [`IngressHandoff`] named and described by the caller (docs/SPEC.md §14.7):
/// the child is found again by `key` (the engine's own derived id), carries the caller's
/// `control_id`, `message_type` and `summary`, and with `peek_failed` is recorded in `error`
/// without an ingress row. The handoff then answers `Reingressed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildKey {
    pub key: String,
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    pub summary: Option<String>,
    pub peek_failed: bool,
}
