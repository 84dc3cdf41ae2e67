//! Captured responses of destinations (CompleteWithResponse) and the reference a
//! `response`-stage row carries to one of them (IngressHandoff re-ingests it).

use crate::model::ids::{MessageId, Millis};
use serde::{Deserialize, Serialize};

/// A captured response of a destination.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CapturedResponse {
    pub message_id: MessageId,
    pub destination: String,
    pub response_seq: u32,
    pub body: String,
    pub outcome: String,
    pub detail: Option<String>,
    pub captured_at: Millis,
}

/// What a `response`-stage row's payload points at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseRef {
    pub message_id: MessageId,
    pub destination: String,
    pub seq: u32,
}
