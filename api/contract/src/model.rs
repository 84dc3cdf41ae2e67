//! The OpenAPI schemas of the state machine's plain types that answers carry as they are
//! (a claimed row, a message, a work row, a configuration document, ...).
//!
//! Those types live in `raftlane-statemachine`, whose serde attributes also fix their bytes in
//! the log (`tests/golden/*.hex`), so the schema derive cannot be added there without touching
//! the wire types. Instead each gets a schema-only twin here with the same members and serde
//! attributes, named by `#[schemars(with = ...)]` on the contract fields that hold the real
//! type. The twins never serialize anything; what keeps them true is the test
//! `examples_conform_to_their_schemas` (`tests/schemas.rs`), which serializes real values of every
//! real type and checks each member against these schemas, so a member added to a state-machine
//! type without its twin fails there.
//!
//! The ids (`Fence`, `MessageId`, `RowId`, `ApprovalId`) are `#[serde(transparent)]` integers
//! and `Millis` is a `u64`, so the twins hold `u64`s (and contract fields of those types say
//! `#[schemars(with = "u64")]`).

use schemars::JsonSchema;
use std::collections::{BTreeMap, BTreeSet};

/// A pipeline stage; each stage has its own lanes.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Ingress,
    Routed,
    Outbound,
    Response,
}

/// A work row's status.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    Pending,
    Inflight,
    Done,
    Dead,
    Cancelled,
}

/// A message's status.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    Received,
    Routed,
    Unrouted,
    Filtered,
    Processed,
    Error,
}

/// What happened to a message.
#[derive(JsonSchema)]
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

/// What a `route` did with an ingress row (absent in a request: from its handlers).
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RouteDisposition {
    Routed,
    Unrouted,
}

/// How a message recorded on receipt ended (RecordReceived): no row is made for it.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReceivedStatus {
    Filtered,
    Error,
}

/// What a `handoff` did with a row (absent in a request: from its deliveries).
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HandoffDisposition {
    Routed,
    Filtered,
    Unrouted,
}

/// An approval's status at the time of the read (`expired` once past `expires_at`).
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Rejected,
    Expired,
    /// Approved, then used by the action it named; it cannot be used again.
    Consumed,
}

/// A principal's role.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Admin,
    Operator,
    Worker,
    Viewer,
    /// Everything a viewer reads but bodies.
    Metadata,
    /// messagefoundry's engine: the routes its store and coordinator call (docs/SPEC.md §9.3).
    Engine,
}

/// A claimed row as handed to a worker, with the fence every action on it must carry.
#[derive(JsonSchema)]
pub struct ClaimedRow {
    pub row_id: u64,
    pub message_id: u64,
    pub stage: Stage,
    pub channel_id: String,
    pub destination_name: Option<String>,
    pub handler_name: Option<String>,
    pub payload: String,
    pub attempts: u32,
    pub fence: u64,
    pub lease_expires_at: u64,
}

/// Where a re-ingressed message came from.
#[derive(JsonSchema)]
pub struct Correlation {
    pub correlation_id: u64,
    pub root_id: u64,
    pub depth: u32,
    pub reingress_of_seq: u32,
}

/// A message as stored (its `raw` body decrypted for the reader).
#[derive(JsonSchema)]
pub struct Message {
    pub id: u64,
    pub channel_id: String,
    pub received_at: u64,
    pub source_type: Option<String>,
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    pub raw: String,
    pub status: MessageStatus,
    pub error: Option<String>,
    pub summary: Option<String>,
    /// A JSON object, as its text.
    pub metadata: Option<String>,
    pub correlation: Option<Correlation>,
    pub idempotency_key: Option<String>,
    pub purged: bool,
}

/// One event of a message's history.
#[derive(JsonSchema)]
pub struct Event {
    pub ts: u64,
    pub event: EventKind,
    pub destination: Option<String>,
    pub detail: Option<String>,
}

/// A row's current claim.
#[derive(JsonSchema)]
pub struct Claim {
    pub owner: String,
    pub lease_expires_at: u64,
    pub fence: u64,
}

/// A work row: one unit of a message's work in one stage.
#[derive(JsonSchema)]
pub struct WorkRow {
    pub id: u64,
    pub message_id: u64,
    pub stage: Stage,
    pub channel_id: String,
    pub destination_name: Option<String>,
    pub handler_name: Option<String>,
    pub payload: String,
    pub status: RowStatus,
    pub attempts: u32,
    pub next_attempt_at: u64,
    pub last_error: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    pub claim: Option<Claim>,
    pub last_fence: Option<u64>,
}

/// A destination's answer to a delivery.
#[derive(JsonSchema)]
pub struct CapturedResponse {
    pub message_id: u64,
    pub destination: String,
    pub response_seq: u32,
    pub body: String,
    pub outcome: String,
    pub detail: Option<String>,
    pub captured_at: u64,
}

/// Who holds a lane until when.
#[derive(JsonSchema)]
pub struct LaneLease {
    pub owner: String,
    pub expires_at: u64,
}

/// A retry policy as configured (the multiplier in thousandths).
#[derive(JsonSchema)]
pub struct RetryPolicy {
    pub max_attempts: Option<u32>,
    pub backoff_ms: u64,
    pub multiplier_milli: u32,
    pub max_backoff_ms: u64,
}

/// A channel's configuration.
#[derive(Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ChannelConfig {
    pub description: Option<String>,
}

/// A destination's configuration.
#[derive(Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct DestinationConfig {
    pub url: Option<String>,
    pub retry: Option<RetryPolicy>,
}

/// A handler's configuration.
#[derive(Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct HandlerConfig {
    pub channel: Option<String>,
}

/// How long the cluster keeps what (absent: forever; the dedupe window: 24 h).
#[derive(Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    pub message_bodies_ms: Option<u64>,
    pub dead_letters_ms: Option<u64>,
    pub state_ms: Option<u64>,
    pub dedupe_window_ms: Option<u64>,
}

/// The whole configuration document (`PUT /v1/config` replaces it whole).
#[derive(Default, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ConfigDoc {
    pub channels: BTreeMap<String, ChannelConfig>,
    pub destinations: BTreeMap<String, DestinationConfig>,
    pub handlers: BTreeMap<String, HandlerConfig>,
    pub retention: RetentionConfig,
    pub approvals_required: BTreeSet<String>,
}
