//! Producing and reading messages: enqueue, the message list and one message, replay, dead
//! letters, the counts; and the queries of the lists and of one message.

use crate::comma_list::CommaList;
use crate::page::{Offset, PageLimit};
use crate::read::Consistency;
use raftlane_statemachine::model::ids::{Fence, MessageId, RowId};
use raftlane_statemachine::model::message::{Correlation, Event, Message, MessageStatus};
use raftlane_statemachine::model::response::CapturedResponse;
use raftlane_statemachine::row::{Claim, RowStatus, Stage, WorkRow};
use raftlane_statemachine::wire::command::ReceivedStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `POST /v1/channels/{channel}/messages` with `Content-Type: application/json`. (Any other
/// content type sends the raw body as it is, with these members as `X-` headers.)
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnqueueRequest {
    /// The message itself; not empty.
    pub raw: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// A JSON object, kept with the message as its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub metadata: Option<Value>,
    /// A message its producer has routed already: one outbound row per delivery (none: the
    /// message is `unrouted`). Proposes EnqueueMessage instead of EnqueueIngress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<Vec<crate::rows::DeliveryBody>>,
    /// A message recorded as `filtered` or `error` on receipt, with no row (RecordReceived);
    /// not with `deliveries`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ReceivedStatus>,
    /// The reason of an `error` message; only with `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl EnqueueRequest {
    /// A message with only its body.
    pub fn raw(raw: impl Into<String>) -> Self {
        EnqueueRequest {
            raw: raw.into(),
            ..Self::default()
        }
    }
}

/// `POST /v1/channels/{channel}/messages`: 201 for a new message, 200 for a duplicate of an
/// earlier idempotency key (then `message_id` is the first message's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Enqueued {
    pub message_id: MessageId,
    pub duplicate: bool,
    /// The log index the enqueue was applied at.
    pub index: u64,
}

/// `GET /v1/messages`: newest first, only channels the token may see, without bodies (a body is
/// read with `GET /v1/messages/{id}?body=true`, which records the view: docs/SPEC.md §9.7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageList {
    pub messages: Vec<ListedMessage>,
    /// More may follow: pass it as `cursor` for the next page (absent: the list is done). A
    /// page holds at most `limit` (1 to 1000) messages and examines at most 10,000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<u64>,
}

/// A message's members without its body (`raw`): what lists and body-less reads carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageMeta {
    pub id: MessageId,
    pub channel_id: String,
    pub received_at: u64,
    pub source_type: Option<String>,
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    pub status: MessageStatus,
    pub error: Option<String>,
    pub summary: Option<String>,
    /// A JSON object, as its text.
    pub metadata: Option<String>,
    pub correlation: Option<Correlation>,
    /// The producer's idempotency key.
    pub idempotency_key: Option<String>,
    pub purged: bool,
}

impl MessageMeta {
    /// The message's members and its body, apart.
    pub fn split(m: Message) -> (MessageMeta, String) {
        let meta = MessageMeta {
            id: m.id,
            channel_id: m.channel_id,
            received_at: m.received_at,
            source_type: m.source_type,
            control_id: m.control_id,
            message_type: m.message_type,
            status: m.status,
            error: m.error,
            summary: m.summary,
            metadata: m.metadata,
            correlation: m.correlation,
            idempotency_key: m.idempotency_key,
            purged: m.purged,
        };
        (meta, m.raw)
    }
}

/// A work row's members without its payload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RowMeta {
    pub id: RowId,
    pub message_id: MessageId,
    pub stage: Stage,
    pub channel_id: String,
    pub destination_name: Option<String>,
    pub handler_name: Option<String>,
    pub status: RowStatus,
    pub attempts: u32,
    pub next_attempt_at: u64,
    pub last_error: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    pub claim: Option<Claim>,
    pub last_fence: Option<Fence>,
}

impl RowMeta {
    /// The row's members and its payload, apart.
    pub fn split(r: WorkRow) -> (RowMeta, String) {
        let meta = RowMeta {
            id: r.id,
            message_id: r.message_id,
            stage: r.stage,
            channel_id: r.channel_id,
            destination_name: r.destination_name,
            handler_name: r.handler_name,
            status: r.status,
            attempts: r.attempts,
            next_attempt_at: r.next_attempt_at,
            last_error: r.last_error,
            created_at: r.created_at,
            updated_at: r.updated_at,
            claim: r.claim,
            last_fence: r.last_fence,
        };
        (meta, r.payload)
    }
}

/// A message of `GET /v1/messages` with the kind of its newest event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListedMessage {
    #[serde(flatten)]
    pub message: MessageMeta,
    pub last_event: Option<raftlane_statemachine::model::message::EventKind>,
}

impl From<raftlane_statemachine::query::ListedMessage> for ListedMessage {
    fn from(m: raftlane_statemachine::query::ListedMessage) -> Self {
        ListedMessage {
            message: MessageMeta::split(m.message).0,
            last_event: m.last_event,
        }
    }
}

/// `GET /v1/messages/{id}`: a message with its events, rows and captured responses. Bodies
/// (`message.raw`, `rows[].payload`, `responses[].body`) only with `?body=true`, a read that
/// records a `viewed` event (its index in `viewed_index`).
///
/// Members in alphabetical order, the order clients read on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageDetail {
    pub events: Vec<Event>,
    pub message: DetailMessage,
    pub responses: Vec<DetailResponse>,
    pub rows: Vec<DetailRow>,
    /// The log index of the `viewed` event a body read recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewed_index: Option<u64>,
}

/// The message of [`MessageDetail`]: its body only when asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DetailMessage {
    #[serde(flatten)]
    pub meta: MessageMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

/// A row of [`MessageDetail`]: its payload only when bodies were asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DetailRow {
    #[serde(flatten)]
    pub meta: RowMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
}

/// A captured response of [`MessageDetail`]: its body only when bodies were asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DetailResponse {
    pub message_id: MessageId,
    pub destination: String,
    pub response_seq: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    pub outcome: String,
    pub detail: Option<String>,
    pub captured_at: u64,
}

impl MessageDetail {
    /// The answer for `v`, with its bodies when `bodies`.
    pub fn new(v: raftlane_statemachine::query::MessageView, bodies: bool) -> Self {
        let keep = |b: String| bodies.then_some(b);
        let (meta, raw) = MessageMeta::split(v.message);
        MessageDetail {
            events: v.events,
            message: DetailMessage {
                meta,
                raw: keep(raw),
            },
            responses: v
                .responses
                .into_iter()
                .map(|r: CapturedResponse| DetailResponse {
                    message_id: r.message_id,
                    destination: r.destination,
                    response_seq: r.response_seq,
                    body: keep(r.body),
                    outcome: r.outcome,
                    detail: r.detail,
                    captured_at: r.captured_at,
                })
                .collect(),
            rows: v
                .rows
                .into_iter()
                .map(|r| {
                    let (meta, payload) = RowMeta::split(r);
                    DetailRow {
                        meta,
                        payload: keep(payload),
                    }
                })
                .collect(),
            viewed_index: None,
        }
    }
}

/// `POST /v1/messages/{id}/replay` and `POST /v1/dead-letters/replay`: how many rows were put
/// back to pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Requeued {
    pub index: u64,
    pub requeued: u64,
}

/// `POST /v1/dead-letters/replay` (an empty body is `{}`: every dead row the token may see).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayDeadRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
}

/// `GET /v1/dead-letters`: dead outbound rows without their payloads, each with its message's
/// identifying fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeadLetters {
    pub dead_letters: Vec<DeadLetterRow>,
}

/// A dead outbound row (its members as in `GET /v1/messages/{id}` `rows[]`, without the
/// payload) with its message's `control_id`, `message_type`, `received_at` and `summary`, which
/// a dead-letter screen shows beside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeadLetterRow {
    #[serde(flatten)]
    pub row: RowMeta,
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    /// Absent only for a row whose message is gone.
    pub received_at: Option<u64>,
    pub summary: Option<String>,
}

impl From<raftlane_statemachine::query::DeadLetter> for DeadLetterRow {
    fn from(d: raftlane_statemachine::query::DeadLetter) -> Self {
        DeadLetterRow {
            row: RowMeta::split(d.row).0,
            control_id: d.control_id,
            message_type: d.message_type,
            received_at: Some(d.received_at),
            summary: d.summary,
        }
    }
}

/// `GET /v1/messages/count` and `GET /v1/dead-letters/count`: how many pass the filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Count {
    pub count: u64,
}

/// `POST /v1/messages/{id}/viewed` (an empty body is `{}`): who looked at the message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ViewedRequest {
    /// The viewer recorded as the event's detail (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

/// `POST /v1/messages/{id}/viewed`: the `viewed` event was appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Viewed {
    pub index: u64,
}

/// `GET /v1/stats`: row counts by stage and status, for every channel.
///
/// Members in alphabetical order, the order clients read on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Stats {
    /// The state machine's clock (ms since the epoch).
    pub clock: u64,
    pub last_applied: u64,
    pub messages: u64,
    /// stage → status → rows.
    pub rows: BTreeMap<String, BTreeMap<String, u64>>,
}

impl From<raftlane_statemachine::query::Stats> for Stats {
    fn from(s: raftlane_statemachine::query::Stats) -> Self {
        Stats {
            clock: s.clock,
            last_applied: s.last_applied,
            messages: s.messages,
            rows: s.rows,
        }
    }
}

// --- queries ---

/// The filters of `GET /v1/messages` and `GET /v1/messages/count` (a count ignores `limit`,
/// `offset` and `cursor`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageQuery {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<MessageStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_id: Option<String>,
    /// Comma-separated: only these channels (narrows the token's own scope, never widens it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_channels: Option<CommaList>,
    #[serde(default, skip_serializing_if = "PageLimit::is_default")]
    pub limit: PageLimit<50>,
    #[serde(default, skip_serializing_if = "Offset::is_zero")]
    pub offset: Offset,
    /// The previous page's `next_cursor`: the list goes on below it (docs/SPEC.md §10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<u64>,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}

/// The query of `GET /v1/messages/{id}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageDetailQuery {
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
    /// `true`: the answer carries the bodies, and the read is recorded as a `viewed` event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<bool>,
    /// With `body=true`: `false` reads the bodies without recording a view. Only for callers
    /// that process messages (role worker and above: they receive payloads in claims anyway),
    /// e.g. an engine that records its users' views itself (`POST /v1/messages/{id}/viewed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_view: Option<bool>,
    /// With `body=true`: the person the caller reads for, recorded in the `viewed` event beside
    /// the caller's principal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub viewer: Option<String>,
}

/// Which stages' dead rows a dead-letter listing covers: one stage, or `all` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterStage {
    Ingress,
    Routed,
    Outbound,
    Response,
    All,
}

impl DeadLetterStage {
    /// The stages this names.
    pub fn stages(self) -> Vec<Stage> {
        match self {
            DeadLetterStage::Ingress => vec![Stage::Ingress],
            DeadLetterStage::Routed => vec![Stage::Routed],
            DeadLetterStage::Outbound => vec![Stage::Outbound],
            DeadLetterStage::Response => vec![Stage::Response],
            DeadLetterStage::All => Stage::ALL.to_vec(),
        }
    }
}

impl From<Stage> for DeadLetterStage {
    fn from(stage: Stage) -> Self {
        match stage {
            Stage::Ingress => DeadLetterStage::Ingress,
            Stage::Routed => DeadLetterStage::Routed,
            Stage::Outbound => DeadLetterStage::Outbound,
            Stage::Response => DeadLetterStage::Response,
        }
    }
}

/// The order of a dead-letter page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterOrder {
    /// Row-id order.
    RowId,
    /// Newest dead first (then row id, descending).
    NewestFailed,
}

/// The filters of `GET /v1/dead-letters` and `GET /v1/dead-letters/count` (a count ignores
/// `limit`, `offset` and `order`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeadLetterQuery {
    /// `outbound` (the default: messagefoundry's dead letters), another stage, or `all`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<DeadLetterStage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// Comma-separated: only these channels (narrows the token's scope).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_channels: Option<CommaList>,
    #[serde(default, skip_serializing_if = "PageLimit::is_default")]
    pub limit: PageLimit<100>,
    #[serde(default, skip_serializing_if = "Offset::is_zero")]
    pub offset: Offset,
    /// `newest_failed`: newest dead first (then row id, descending); absent: row-id order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<DeadLetterOrder>,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}
