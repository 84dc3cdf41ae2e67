//! Transform state (`namespace, key → value` with per-namespace versions) and reference
//! snapshots (named sets replaced whole).

use crate::model::ids::{MessageId, Millis};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateEntry {
    /// JSON text.
    pub value: String,
    pub set_at: Millis,
    pub message_id: MessageId,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceSnapshot {
    pub version: u64,
    pub rows: BTreeMap<String, String>,
    pub synced_at: Millis,
    pub row_count: u64,
}
