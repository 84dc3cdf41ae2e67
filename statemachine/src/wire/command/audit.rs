//! Audit rows, seals and views (docs/SPEC.md §7, §9.8).

use crate::model::ids::MessageId;
use serde::{Deserialize, Serialize};

/// Append a row to an org's audit chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordAudit {
    pub action: String,
    pub channel: Option<String>,
    pub org: Option<String>,
    pub detail: Option<String>,
    /// Whom the row names as its actor.
    pub author: AuditAuthor,
}

/// Whom an audit row names as its actor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuditAuthor {
    /// The envelope's principal.
    Principal,
    /// Someone the caller names (absent when `None`), not the envelope's principal
    /// (docs/SPEC.md §14.5): the engine records its own users' actions.
    Named(Option<String>),
}

/// Close the current era of an org's chain with a seal row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealAuditEpoch {
    pub org: String,
}

/// Someone opened a message's body: its history gets the event `viewed`, with the viewer as
/// detail (docs/SPEC.md §14.6). Answers `Done`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordView {
    pub message_id: MessageId,
    pub viewer: Option<String>,
}
