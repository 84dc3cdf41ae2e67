//! The answers of commands: what `apply` returns for each, as it travels back to the proposer
//! and as a remembered answer is stored (see [`crate::apply::request`]). Encoded by position
//! like commands; pinned by `tests/golden_wire.rs`.

use crate::model::ids::{ApprovalId, Fence, MessageId, Millis, RowId};
use crate::model::retention::RetentionCursor;
use crate::model::row::Stage;
use crate::wire::rejection::Rejection;
use serde::{Deserialize, Serialize};

/// A claimed row as handed to a worker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ClaimedRow {
    pub row_id: RowId,
    pub message_id: MessageId,
    pub stage: Stage,
    pub channel_id: String,
    pub destination_name: Option<String>,
    pub handler_name: Option<String>,
    pub payload: String,
    pub attempts: u32,
    pub fence: Fence,
    pub lease_expires_at: Millis,
}

/// Why a FIFO claim returned nothing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FifoEmpty {
    /// No pending row in the lane.
    Empty,
    /// The head is backing off until `due_at`; the lane waits for it.
    NotDue { due_at: Millis },
    /// Another owner holds the lane.
    LaneBusy { holder: String, expires_at: Millis },
}

/// The successful result of a command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    Enqueued {
        message_id: MessageId,
        duplicate: bool,
    },
    Claimed(Vec<ClaimedRow>),
    FifoClaimed(Result<ClaimedRow, FifoEmpty>),
    /// Number of rows (or records) affected.
    Count(u64),
    /// A handoff; `false` when the row was already consumed under this fence (idempotent retry).
    HandedOff(bool),
    /// IngressHandoff: the child message, or `None` when the row was dead-lettered instead.
    Reingressed(Option<MessageId>),
    /// MarkFailed: the row's new status.
    Failed {
        dead: bool,
        next_attempt_at: Millis,
    },
    ConfigVersion(u64),
    Audit {
        seq: u64,
        hash: String,
    },
    Approval(ApprovalId),
    Done,
    /// The responses of a [`Command::Batch`](crate::wire::command::Command::Batch), in order.
    Batch(Vec<Response>),
    /// A retried request (same actor and request id) that was already applied at `index`:
    /// its first answer, unchanged, and nothing was applied again.
    Repeated {
        index: u64,
        response: Box<Response>,
    },
    /// A group's leadership lease after a campaign (docs/SPEC.md §15.2).
    Leader(crate::model::coordination::LeaderLease),
    /// [`IssueToken`](crate::wire::command::IssueToken): the nonce the stored token was
    /// derived from (a retry re-derives the token from it).
    TokenIssued {
        nonce: String,
    },
    /// [`RetentionPage`](crate::wire::command::RetentionPage): how many ended messages the page
    /// examined, how many it purged (blanked, deleted or indexed), and the key it stopped at
    /// (`None`: nothing older than the cutoff is left, the pass is done for now).
    RetentionPaged {
        examined: u64,
        purged: u64,
        next: Option<RetentionCursor>,
    },
    /// [`HandOnThenClaimNext`](crate::wire::command::HandOnThenClaimNext): whether the handoff
    /// applied (`false`: the row was already consumed under this fence), and the lane's FIFO
    /// claim as ClaimNextFifo answers it (`None`: the row was gone, so no claim was made).
    HandedOnThenClaimed {
        applied: bool,
        next: Option<Result<ClaimedRow, FifoEmpty>>,
    },
}

impl Outcome {
    /// The variant's name, for an error that must say what came back without showing it (a
    /// remembered answer may carry payloads or other callers' data).
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Enqueued { .. } => "enqueued",
            Outcome::Claimed(_) => "claimed",
            Outcome::FifoClaimed(_) => "fifo_claimed",
            Outcome::Count(_) => "count",
            Outcome::HandedOff(_) => "handed_off",
            Outcome::Reingressed(_) => "reingressed",
            Outcome::Failed { .. } => "failed",
            Outcome::ConfigVersion(_) => "config_version",
            Outcome::Audit { .. } => "audit",
            Outcome::Approval(_) => "approval",
            Outcome::Done => "done",
            Outcome::Batch(_) => "batch",
            Outcome::Repeated { .. } => "repeated",
            Outcome::Leader(_) => "leader",
            Outcome::TokenIssued { .. } => "token_issued",
            Outcome::RetentionPaged { .. } => "retention_paged",
            Outcome::HandedOnThenClaimed { .. } => "handed_on_then_claimed",
        }
    }
}

/// What `apply` returns for one command.
pub type Response = Result<Outcome, Rejection>;
