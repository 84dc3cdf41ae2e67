//! The one error type of the write path.

use crate::backend::ProposeError;
use crate::crypto::CryptoError;
use raftlane_statemachine::wire::rewrite::ValueRef;
use raftlane_statemachine::{Outcome, Rejection, RowId, StoreError};
use std::sync::Arc;

/// Why a write, a linearizable read or a membership change through [`super::Proposer`] did
/// not succeed. Each variant is one answer the HTTP layer gives (its `From<WriteError>` for
/// `ApiError` keeps the status, code and message of each).
#[derive(Debug, Clone, thiserror::Error)]
pub enum WriteError {
    /// No leader accepted the call within the retry window (leader changes, unreachable
    /// leaders, dropped proposals); `last` is why the last attempt failed. Retrying later is
    /// safe: a write keeps its request id, a read or a membership change is idempotent.
    #[error("no leader accepted the {what}")]
    NoLeader {
        /// What was attempted: "write", "linearizable read", "membership change".
        what: &'static str,
        #[source]
        last: ProposeError,
    },
    /// A linearizable read had its read index, but this node did not apply it in time.
    #[error("this node did not apply the read index in time")]
    NotApplied(#[source] ProposeError),
    /// Refused for a reason retrying will not fix.
    #[error("refused: {0}")]
    Refused(String),
    /// Raft refused the membership change (another change in progress, a voter that is not a
    /// member yet, ...).
    #[error("membership change refused: {0}")]
    MembershipRefused(String),
    /// A membership change raftlane's rules refuse before anything is appended, or a learner
    /// removed again for not catching up (`raftlane_raft::membership_rules`,
    /// `raftlane_raft::learners`): 400 naming `field` when `invalid`, else 409.
    #[error("membership change refused: {field}: {reason}")]
    MembershipRule {
        field: String,
        reason: String,
        invalid: bool,
    },
    /// The membership change may or may not have been made (it timed out, e.g. a learner still
    /// catching up): unlike a write, it is not blindly retried.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// The node cannot serve (storage failure, shutting down, no cluster secret to reach the
    /// leader with).
    #[error("node failure: {0}")]
    Fatal(String),
    /// A node's Raft core stopped on a storage error (a full disk): this one, or the leader a
    /// write was forwarded to. Another node can serve; this one exits to be restarted.
    #[error("{0}")]
    StorageUnavailable(String),
    /// A covered value could not be encrypted, so the command was not proposed: nothing
    /// covered is ever proposed in the clear while a keyring is configured.
    #[error("cannot encrypt a covered value before proposing it")]
    Seal(#[source] CryptoError),
    /// Reading this node's state failed (a policy default or an idle-claim check reads it).
    #[error("cannot read the local state")]
    Read(#[source] Arc<StoreError>),
    /// A request a policy of the write path refuses before anything is proposed (a retry
    /// policy out of bounds): the same refusal the state machine gives bad input, answered the
    /// same way.
    #[error(transparent)]
    Invalid(Rejection),
    /// A FIFO claim dead-lettered this many undecryptable heads in a row and gave up for this
    /// request, so a lane of nothing but poison answers in bounded time (the lane has moved
    /// on: claiming again continues).
    #[error("{contained} undecryptable rows dead-lettered in this lane; claim again")]
    PoisonLane { contained: usize },
    /// This node's clock is further off the cluster's than the skew bound, so the other nodes
    /// refuse its calls: nothing was proposed (`raftlane_raft::clock`).
    #[error("{0}")]
    ClockSkew(String),
    /// The state machine refused a command a workflow of this layer proposed (applied as a
    /// no-op: nothing changed), answered as the refusal of a route's own proposal is.
    #[error(transparent)]
    Rejected(Rejection),
    /// A command answered an outcome of another shape than it gives (a programming error,
    /// reported rather than panicking).
    #[error("unexpected outcome ({})", .0.kind())]
    UnexpectedOutcome(Box<Outcome>),
    /// A row action that needs its row (a `fail`'s retry policy, a `claim_next`'s lane) names
    /// a row that does not exist.
    #[error("row {0} not found")]
    RowNotFound(RowId),
    /// Key rotation found a covered value no configured key decrypts; nothing was written for
    /// that value's batch (docs/SPEC.md §2.6).
    #[error("rotation stopped, nothing written for this value's batch: {target:?}")]
    Undecryptable {
        target: ValueRef,
        /// The key id the value names, when it names one.
        key_id: Option<String>,
        #[source]
        cause: CryptoError,
    },
    /// Key rotation asked of a node without a keyring: encryption at rest is off here.
    #[error("encryption at rest is off on this node")]
    NoKeyring,
    /// A created token that the principal does not hold once its write applied: a concurrent
    /// rotation replaced it, or a retried request's token cannot be derived again here (no
    /// cluster secret). The token is not shown.
    #[error("the principal '{name}' does not hold the token of this request")]
    TokenNotIssued { name: String },
}

impl From<StoreError> for WriteError {
    fn from(e: StoreError) -> Self {
        WriteError::Read(Arc::new(e))
    }
}

impl WriteError {
    /// The error a retry loop settled on (a fatal error, a refusal, or an unknown outcome the
    /// caller must not repeat) while attempting `what`. The loop does not settle on a leader
    /// change or an unavailable cluster; were it to, that is a leader not found.
    pub(crate) fn settled(what: &'static str, e: ProposeError) -> Self {
        match e {
            ProposeError::Fatal(m) => WriteError::Fatal(m),
            ProposeError::StorageUnavailable(m) => WriteError::StorageUnavailable(m),
            ProposeError::ClockSkew(m) => WriteError::ClockSkew(m),
            ProposeError::Refused(m) => WriteError::Refused(m),
            ProposeError::MembershipRule {
                field,
                reason,
                invalid,
            } => WriteError::MembershipRule {
                field,
                reason,
                invalid,
            },
            ProposeError::Unknown(m) => WriteError::OutcomeUnknown(m),
            last @ (ProposeError::ForwardToLeader(_) | ProposeError::Unavailable(_)) => {
                WriteError::NoLeader { what, last }
            }
        }
    }

    /// Why waiting for a read index to be applied here failed.
    pub(crate) fn not_applied(e: ProposeError) -> Self {
        match e {
            ProposeError::Fatal(m) => WriteError::Fatal(m),
            ProposeError::StorageUnavailable(m) => WriteError::StorageUnavailable(m),
            ProposeError::ClockSkew(m) => WriteError::ClockSkew(m),
            ProposeError::Refused(m) => WriteError::Refused(m),
            e @ ProposeError::MembershipRule { .. } => WriteError::Refused(e.to_string()),
            other => WriteError::NotApplied(other),
        }
    }
}
