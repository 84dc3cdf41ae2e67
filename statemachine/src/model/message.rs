//! Messages and their append-only event history.

use crate::model::ids::{MessageId, Millis};
use serde::{Deserialize, Serialize};

/// Where a message is in its life. Terminal statuses are set only by handoffs or the finalizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    Received,
    Routed,
    Unrouted,
    Filtered,
    Processed,
    Error,
}

impl MessageStatus {
    /// A terminal status: nothing more will happen to the message unless an operator replays it.
    pub fn is_terminal(self) -> bool {
        !matches!(self, Self::Received | Self::Routed)
    }

    pub const ALL: [MessageStatus; 6] = [
        Self::Received,
        Self::Routed,
        Self::Unrouted,
        Self::Filtered,
        Self::Processed,
        Self::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Received => "received",
            Self::Routed => "routed",
            Self::Unrouted => "unrouted",
            Self::Filtered => "filtered",
            Self::Processed => "processed",
            Self::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// Correlation of a message created by re-ingesting a captured response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Correlation {
    /// The message whose response produced this one.
    pub correlation_id: MessageId,
    /// The first message of the chain.
    pub root_id: MessageId,
    /// 1 for a direct child of an original message.
    pub depth: u32,
    /// The `response_seq` of the captured response that was re-ingested.
    pub reingress_of_seq: u32,
}

/// A message as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Message {
    pub id: MessageId,
    pub channel_id: String,
    pub received_at: Millis,
    pub source_type: Option<String>,
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    pub raw: String,
    pub status: MessageStatus,
    pub error: Option<String>,
    pub summary: Option<String>,
    /// JSON text supplied by the producer (validated by the API, stored verbatim).
    pub metadata: Option<String>,
    pub correlation: Option<Correlation>,
    /// The producer's idempotency key, so the key's expiry can start when the message ends.
    pub idempotency_key: Option<String>,
    /// Set once [`PurgeMessageBodies`](crate::wire::command::PurgeMessageBodies) blanked the
    /// bodies.
    pub purged: bool,
}

/// Kinds of message events (docs/SPEC.md §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Received,
    Routed,
    Unrouted,
    Filtered,
    Transformed,
    Delivered,
    Failed,
    Dead,
    Replayed,
    Cancelled,
    Reingressed,
    Viewed,
    Error,
}

/// One event of a message's history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Event {
    pub ts: Millis,
    pub event: EventKind,
    pub destination: Option<String>,
    pub detail: Option<String>,
}
