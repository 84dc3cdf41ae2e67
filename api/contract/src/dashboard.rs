//! The operator dashboard's figures: traffic per connection (`GET /v1/metrics/connections`)
//! and the size of the state (`GET /v1/stats/storage`). Both are computed by scanning the state
//! (docs/SPEC.md §14.11): for a person's refresh, not a worker's loop.

use crate::read::Consistency;
use raftlane_statemachine::model::ids::Millis;
use raftlane_statemachine::query::dashboard;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One channel's inbound traffic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InboundTraffic {
    pub channel: String,
    /// Messages received at or after `since`.
    pub read: u64,
    /// Of those, the ones in status `error`.
    pub errored: u64,
    /// The channel's newest message (ms), whenever it came.
    pub last_at: Option<Millis>,
}

/// One (channel, destination)'s outbound traffic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DestinationTraffic {
    pub channel: String,
    pub destination: String,
    /// Rows pending or in flight now.
    pub queue_depth: u64,
    /// Rows done since `since`.
    pub written: u64,
    /// Rows dead-lettered since `since`.
    pub dead: u64,
    /// The oldest pending row's creation time (ms).
    pub oldest_pending_at: Option<Millis>,
    /// Rows done within the rate window before the request's time.
    pub recent_done: u64,
    /// The newest done row's completion time (ms).
    pub last_done_at: Option<Millis>,
}

/// `GET /v1/metrics/connections?since=&rate_window_ms=`, channels and destinations in name
/// order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionMetrics {
    pub inbound: Vec<InboundTraffic>,
    pub destinations: Vec<DestinationTraffic>,
}

impl From<dashboard::ConnectionMetrics> for ConnectionMetrics {
    fn from(m: dashboard::ConnectionMetrics) -> Self {
        ConnectionMetrics {
            inbound: m
                .inbound
                .into_iter()
                .map(|i| InboundTraffic {
                    channel: i.channel,
                    read: i.read,
                    errored: i.errored,
                    last_at: i.last_at,
                })
                .collect(),
            destinations: m
                .destinations
                .into_iter()
                .map(|d| DestinationTraffic {
                    channel: d.channel,
                    destination: d.destination,
                    queue_depth: d.queue_depth,
                    written: d.written,
                    dead: d.dead,
                    oldest_pending_at: d.oldest_pending_at,
                    recent_done: d.recent_done,
                    last_done_at: d.last_done_at,
                })
                .collect(),
        }
    }
}

/// `GET /v1/stats/storage`: how much the replicated state holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StorageStats {
    pub messages: u64,
    pub events: u64,
    /// Bytes of every key and value of the state (its logical size; a node's files also hold
    /// the Raft log and what compaction has not reclaimed yet).
    pub size_bytes: u64,
    pub last_applied: u64,
}

/// The query of `GET /v1/metrics/connections`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrafficQuery {
    /// Count what happened at or after this time (ms); absent: everything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    /// `recent_done` counts rows done within this window before the request's time (ms);
    /// absent: one minute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_window_ms: Option<u64>,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}
