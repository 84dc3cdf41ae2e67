//! The answers of commands: what `apply` returns for each, as it travels back to the proposer
//! and as a remembered answer is stored (see [`crate::apply::request`]). Encoded by position
//! like commands; pinned by `tests/golden_wire.rs`.

use crate::model::ids::{ApprovalId, Fence, MessageId, Millis, RowId};
use crate::model::retention::RetentionCursor;
use crate::model::row::Stage;
use crate::wire::log_format::LogFormat;
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
    /// When the row was created (ms since the epoch): for an ingress row the message's
    /// receipt, for a later stage its handoff. The same at every claim of the row, so a worker
    /// that runs the row again sees the same ingest time. Absent while the cluster writes a log
    /// format before 4.
    //
    // Not part of the encoded outcome: a remembered answer and a forwarded one are encoded by
    // position, and this member came after them, so it is written only where a reader asks for
    // names (JSON); the encoded answer carries the times in `Outcome::Dated`.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "named_only")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Millis>"))]
    pub created_at: Option<Millis>,
}

/// A member written only to a human-readable format (JSON) and absent from the binary one:
/// bincode writes a unit as no bytes, so the encoding by position is what it was without the
/// member.
mod named_only {
    use crate::model::ids::Millis;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Millis>, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            value.serialize(s)
        } else {
            s.serialize_unit()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Millis>, D::Error> {
        if d.is_human_readable() {
            Option::<Millis>::deserialize(d)
        } else {
            <()>::deserialize(d).map(|()| None)
        }
    }
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
    /// From log format 4: a claiming answer (`Claimed`, `FifoClaimed`, `HandedOnThenClaimed`)
    /// and the creation time of each row it claimed, in the order [`Outcome::claimed_rows`]
    /// lists them. The times travel beside the rows because an encoded row has no room for
    /// them ([`ClaimedRow::created_at`]); [`Outcome::undated`] puts them back.
    Dated {
        created_at: Vec<Millis>,
        outcome: Box<Outcome>,
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
            Outcome::Dated { outcome, .. } => outcome.kind(),
        }
    }

    /// The rows this answer claimed, in order (none for an answer that claims nothing).
    pub fn claimed_rows(&mut self) -> Vec<&mut ClaimedRow> {
        match self {
            Outcome::Claimed(rows) => rows.iter_mut().collect(),
            Outcome::FifoClaimed(Ok(row))
            | Outcome::HandedOnThenClaimed {
                next: Some(Ok(row)),
                ..
            } => vec![row],
            _ => Vec::new(),
        }
    }

    /// The answer as `apply` gives it under `format`: from format 4 a claiming answer moves
    /// its rows' creation times into [`Outcome::Dated`]; before, they are dropped (an answer
    /// of an older format says nothing of them, whichever node applied it). Either way the
    /// answer is the same whether it was just applied, remembered, or decoded after a
    /// forward.
    pub(crate) fn dated(mut self, format: LogFormat) -> Outcome {
        let created_at: Vec<Millis> = self
            .claimed_rows()
            .into_iter()
            .map(|row| row.created_at.take().unwrap_or_default())
            .collect();
        if format >= LogFormat::V4 && !created_at.is_empty() {
            Outcome::Dated {
                created_at,
                outcome: Box::new(self),
            }
        } else {
            self
        }
    }

    /// The answer with the creation times of a [`Outcome::Dated`] put back into its rows, as
    /// the API answers it; any other answer as it is.
    pub fn undated(self) -> Outcome {
        let Outcome::Dated {
            created_at,
            outcome,
        } = self
        else {
            return self;
        };
        let mut outcome = *outcome;
        for (row, at) in outcome.claimed_rows().into_iter().zip(created_at) {
            row.created_at = Some(at);
        }
        outcome
    }
}

/// What `apply` returns for one command.
pub type Response = Result<Outcome, Rejection>;
