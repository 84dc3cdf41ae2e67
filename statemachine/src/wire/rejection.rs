//! Rejections: why a command did not apply. A rejected command is a no-op (nothing changed, not
//! even the clock). Encoded by position; pinned by `tests/golden_wire.rs`.

use crate::model::ids::{ApprovalId, Fence, MessageId, Millis, RowId};
use serde::{Deserialize, Serialize};

/// A command that does not apply to the current state. Applied as a no-op: nothing changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum Rejection {
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    #[error("message {0} not found")]
    UnknownMessage(MessageId),
    #[error("row {0} not found")]
    UnknownRow(RowId),
    #[error("approval {0} not found")]
    UnknownApproval(ApprovalId),
    #[error("principal {0} not found")]
    UnknownPrincipal(String),
    #[error("row {row} is {status}, expected {expected}")]
    WrongStatus {
        row: RowId,
        status: String,
        expected: String,
    },
    #[error("row {row} wrong stage {stage}")]
    WrongStage { row: RowId, stage: String },
    #[error("stale fence {presented} for row {row} (current {current:?})")]
    StaleFence {
        row: RowId,
        presented: Fence,
        current: Option<Fence>,
    },
    /// Never produced: a busy lane is not a rejection but an ordinary answer of a FIFO claim
    /// ([`FifoEmpty::LaneBusy`](crate::wire::outcome::FifoEmpty::LaneBusy) inside
    /// [`Outcome::FifoClaimed`](crate::wire::outcome::Outcome::FifoClaimed), docs/SPEC.md §4.3
    /// step 1). It stays in place for the encoding, which `tests/golden_wire.rs` pins.
    #[error("lane {lane} is held by {holder} until {expires_at}")]
    LaneBusy {
        lane: String,
        holder: String,
        expires_at: Millis,
    },
    #[error("config version mismatch: expected {expected}, current {current}")]
    VersionMismatch { expected: u64, current: u64 },
    #[error("approval {0} already decided")]
    AlreadyDecided(ApprovalId),
    #[error("approval {0} expired")]
    ApprovalExpired(ApprovalId),
    #[error("the approver must differ from the requester")]
    SelfApproval,
    /// A unique value (a user id, a username, a session token hash) is already taken.
    #[error("{field} {value} already exists")]
    AlreadyExists { field: String, value: String },
    #[error("user {0} not found")]
    UnknownUser(String),
    #[error("role {0} not found")]
    UnknownRole(String),
    // --- messagefoundry store: queue side ---
    #[error("approval {0} not found")]
    UnknownApprovalKey(String),
    // --- dual control (docs/SPEC.md §9.5) ---
    /// An approval presented for an action cannot authorize it: not approved (yet), expired,
    /// already used, or it names another operation or other parameters.
    #[error("approval {id} cannot authorize this action: {reason}")]
    ApprovalNotUsable { id: ApprovalId, reason: String },
    // --- security (docs/SPEC.md §9.4) ---
    /// A claim, renewal or release under an owner name another principal claims under.
    #[error("the lease owner '{owner}' belongs to principal {principal}; claim under an owner name of your own")]
    OwnerOfAnother { owner: String, principal: String },
    // --- Request-Id reuse (docs/SPEC.md §10.5) ---
    /// The `(actor, request id)` already answered a different request (another route, path,
    /// body or command-bearing header) inside the window the answer is remembered: the first
    /// answer is not handed to a request it does not belong to, and nothing is applied.
    #[error("request id {request_id} was already used for a different request")]
    RequestIdReused { request_id: String },
    // --- a principal acts only on what is its own (docs/SPEC.md §9.8) ---
    /// A row action on a row whose current claim another principal made, by a caller the
    /// proposer did not vouch for as an operator (the envelope's [`as_operator`](crate::wire::command::Envelope::as_operator)).
    #[error("row {row} is claimed by another principal; acting on it needs the operator role")]
    ClaimOfAnother { row: RowId },
    /// A name bound to another principal (`rules::lease_owner`, docs/SPEC.md §9.8): a lease
    /// owner name or an engine node id, used (or reserved by an admin) first by `principal`.
    /// `field` is the command's field that carried it. Supersedes [`Rejection::OwnerOfAnother`],
    /// which named no field and is no longer produced.
    #[error("the {field} '{name}' belongs to principal {principal}; use a name of your own")]
    NameOfAnother {
        field: String,
        name: String,
        principal: String,
    },
    // --- channels (docs/SPEC.md §6.1) ---
    /// A message or row for a channel the configuration does not name, while its `channels`
    /// section names some and not `"*"` (`rules::channels`). `field` is the command's field
    /// that carried it.
    #[error(
        "channel '{channel}' is not configured: the config's channels section names the channels \
         that take messages (add it, or \"*\" to take any)"
    )]
    UnknownChannel { field: String, channel: String },
}

impl Rejection {
    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        Rejection::Invalid {
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    /// Stable machine-readable code for APIs.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::Invalid { .. } => "invalid",
            Rejection::UnknownMessage(_)
            | Rejection::UnknownRow(_)
            | Rejection::UnknownApproval(_)
            | Rejection::UnknownPrincipal(_)
            | Rejection::UnknownUser(_)
            | Rejection::UnknownRole(_)
            | Rejection::UnknownApprovalKey(_)
            | Rejection::UnknownChannel { .. } => "not_found",
            Rejection::WrongStatus { .. } | Rejection::WrongStage { .. } => "wrong_status",
            Rejection::StaleFence { .. } => "stale_fence",
            Rejection::LaneBusy { .. } => "lane_busy",
            Rejection::VersionMismatch { .. } => "version_mismatch",
            Rejection::AlreadyDecided(_) => "already_decided",
            Rejection::ApprovalExpired(_) => "expired",
            Rejection::SelfApproval => "self_approval",
            Rejection::AlreadyExists { .. } => "already_exists",
            Rejection::ApprovalNotUsable { .. } => "approval_not_usable",
            Rejection::OwnerOfAnother { .. } => "owner_of_another_principal",
            Rejection::RequestIdReused { .. } => "request_id_reused",
            Rejection::ClaimOfAnother { .. } => "claim_of_another_principal",
            Rejection::NameOfAnother { .. } => "owner_of_another_principal",
        }
    }
}
