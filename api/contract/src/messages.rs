//! Producing and reading messages: enqueue, the message list and one message, replay, dead
//! letters, the counts.

use crate::model;
use raftlane_statemachine::model::ids::MessageId;
use raftlane_statemachine::model::message::{Event, Message};
use raftlane_statemachine::model::response::CapturedResponse;
use raftlane_statemachine::row::WorkRow;
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
    #[schemars(with = "Option<model::ReceivedStatus>")]
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
    #[schemars(with = "u64")]
    pub message_id: MessageId,
    pub duplicate: bool,
    /// The log index the enqueue was applied at.
    pub index: u64,
}

/// `GET /v1/messages`: newest first, bodies decrypted, only channels the token may see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageList {
    pub messages: Vec<ListedMessage>,
}

/// A message of `GET /v1/messages` (its members as in `GET /v1/messages/{id}` `message`) with
/// the kind of its newest event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListedMessage {
    #[serde(flatten)]
    #[schemars(with = "model::Message")]
    pub message: Message,
    #[schemars(with = "Option<model::EventKind>")]
    pub last_event: Option<raftlane_statemachine::model::message::EventKind>,
}

impl From<raftlane_statemachine::query::ListedMessage> for ListedMessage {
    fn from(m: raftlane_statemachine::query::ListedMessage) -> Self {
        ListedMessage {
            message: m.message,
            last_event: m.last_event,
        }
    }
}

/// `GET /v1/messages/{id}`: a message with its events, rows and captured responses.
///
/// Members in the order the server has always sent them (alphabetical: this answer used to be
/// built as a JSON map).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageDetail {
    #[schemars(with = "Vec<model::Event>")]
    pub events: Vec<Event>,
    #[schemars(with = "model::Message")]
    pub message: Message,
    #[schemars(with = "Vec<model::CapturedResponse>")]
    pub responses: Vec<CapturedResponse>,
    #[schemars(with = "Vec<model::WorkRow>")]
    pub rows: Vec<WorkRow>,
}

impl From<raftlane_statemachine::query::MessageView> for MessageDetail {
    fn from(v: raftlane_statemachine::query::MessageView) -> Self {
        MessageDetail {
            events: v.events,
            message: v.message,
            responses: v.responses,
            rows: v.rows,
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

/// `GET /v1/dead-letters`: dead outbound rows, payloads decrypted, each with its message's
/// identifying fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeadLetters {
    pub dead_letters: Vec<DeadLetterRow>,
}

/// A dead outbound row (its members as in `GET /v1/messages/{id}` `rows[]`) with its message's
/// `control_id`, `message_type`, `received_at` and `summary`, which a dead-letter screen shows
/// beside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DeadLetterRow {
    #[serde(flatten)]
    #[schemars(with = "model::WorkRow")]
    pub row: WorkRow,
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    /// Absent only for a row whose message is gone.
    pub received_at: Option<u64>,
    pub summary: Option<String>,
}

impl From<raftlane_statemachine::query::DeadLetter> for DeadLetterRow {
    fn from(d: raftlane_statemachine::query::DeadLetter) -> Self {
        DeadLetterRow {
            row: d.row,
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
/// Members in the order the server has always sent them (alphabetical: this answer used to be
/// built as a JSON map).
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
