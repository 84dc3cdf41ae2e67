//! The stored documents and values: the config, reference sets, state, retention and key rotation (docs/SPEC.md §2.6, §6, §8).

use crate::model::config::ConfigDoc;
use crate::model::ids::Millis;
use crate::wire::rewrite::Rewrite;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Compare-and-set the configuration document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutConfig {
    pub expected_version: u64,
    pub config: ConfigDoc,
}

/// Replace a named reference snapshot whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteReferenceSnapshot {
    pub name: String,
    pub version: ReferenceVersion,
    pub rows: BTreeMap<String, String>,
}

/// The version a reference write names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReferenceVersion {
    /// The set's version, as given.
    Number(u64),
    /// A text label (`"v1"`): the set's numeric version becomes the previous one plus one, and
    /// the text is kept as its label (docs/SPEC.md §14.8). The write answers `Count(rows)`.
    Label(String),
}

/// Delete transform state set before `older_than`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeState {
    pub older_than: Millis,
}

/// Drop idempotency keys and decided/expired approvals whose time has passed
/// ([`Command::ExpireRecords`], a unit variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpireRecords;

/// Most ended messages one [`RetentionPage`] examines: what bounds the longest apply of a purge
/// (docs/BENCHMARKS.md, "retention"). A larger `limit` is clamped to it.
pub const MAX_RETENTION_PAGE: u32 = 1_000;

/// One bounded page of retention over the ended-message index (docs/SPEC.md §8.6): at most
/// `limit` (clamped to 1..=[`MAX_RETENTION_PAGE`]) messages of `pass`'s class that ended before
/// `older_than`, after where the pass stopped (its cursor, kept in the state). Answers `Outcome::RetentionPaged`, whose `next`
/// is `None` once nothing older than the cutoff is left; the proposer repeats it until then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPage {
    pub pass: RetentionPass,
    pub older_than: Millis,
    pub limit: u32,
}

/// What a [`RetentionPage`] does. Encoded by position: new passes go at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RetentionPass {
    /// Index messages that ended before the ended-message index existed (a one-time walk of
    /// the messages by id; `older_than` is not used).
    IndexEnded,
    /// Blank the bodies of ended, not failed, messages (what PurgeMessageBodies blanks).
    BlankBodies,
    /// Blank the bodies of failed messages (dead rows keep their payload: see below).
    BlankFailedBodies,
    /// Blank payload and error of the dead outbound rows of failed messages.
    BlankDeadLetters,
    /// Delete ended, not failed, messages with their rows, events and responses.
    DeleteEnded,
    /// Delete failed messages (dead letters) with their rows, events and responses.
    DeleteFailed,
}

impl RetentionPass {
    pub const ALL: [RetentionPass; 6] = [
        Self::IndexEnded,
        Self::BlankBodies,
        Self::BlankFailedBodies,
        Self::BlankDeadLetters,
        Self::DeleteEnded,
        Self::DeleteFailed,
    ];

    /// One byte: the pass's key in `RetentionCursors`.
    pub fn tag(self) -> u8 {
        self as u8
    }
}

/// Key rotation: compare-and-set each covered value to its re-encryption, made by the proposer
/// (see [`crate::wire::rewrite`] and [`crate::apply::rewrite`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewriteValues {
    pub items: Vec<Rewrite>,
}
