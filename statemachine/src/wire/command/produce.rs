//! Producing messages: a new message with its ingress row, a received record, a message with its deliveries (docs/SPEC.md §3.6).

use serde::{Deserialize, Serialize};

/// A new message on `channel`, with one ingress row (docs/SPEC.md §4.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnqueueIngress {
    pub channel: String,
    pub raw: String,
    pub fields: MessageFields,
    pub idempotency_key: Option<String>,
}

/// A message the producer already judged (filtered or in error): recorded, no rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordReceived {
    pub channel: String,
    pub raw: String,
    pub fields: MessageFields,
    pub status: ReceivedStatus,
    pub error: Option<String>,
}

/// A new message already routed by its producer: one outbound row per delivery.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnqueueMessage {
    pub channel: String,
    pub raw: String,
    pub fields: MessageFields,
    pub deliveries: Vec<Delivery>,
    pub idempotency_key: Option<String>,
}

/// Optional descriptive fields of a new message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageFields {
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    pub source_type: Option<String>,
    pub summary: Option<String>,
    /// JSON text.
    pub metadata: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub destination: String,
    pub payload: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(
        description = "How a message recorded on receipt ended (RecordReceived): no row is made for it."
    )
)]
#[serde(rename_all = "snake_case")]
pub enum ReceivedStatus {
    Filtered,
    Error,
}
