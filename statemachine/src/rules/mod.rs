//! The rules: each invariant of the pipeline, stated once, read and written through
//! [`crate::tables`] and never through raw keys.
//!
//! - [`fifo`]: where FIFO is decided: lane order, the head, and who may hold a lane.
//! - [`fence`]: a completion must present the fence of the row's current claim.
//! - [`finalizer`]: a message's terminal status follows from its rows.
//! - [`retry`]: a row's retry policy, its one check, the attempt limit (a lease expiry counts)
//!   and the backoff of a failed attempt.
//! - [`registry`]: which destination and handler names the config registers (handoffs refuse
//!   others; the config's orphan sweep dead-letters them).
//! - [`pause`]: an outbound row of a paused destination is handed to no one.
//! - [`channels`]: which channels take messages (the config's `channels`, when it names any).
//! - [`dedupe`]: how long an idempotency key answers with its message.
//! - [`validate`]: the input checks every command (and the API) makes.
//! - [`ad_groups`]: how the AD group maps name a group.
//! - [`lease_owner`]: a lease owner name (an engine node id too) belongs to the principal that
//!   first used it, or that an admin reserved it for.
//! - [`claim_owner`]: a row's claim is its principal's: others act on it only as operators.
//! - [`principal_name`]: principal names (and the engine's usernames) have one normal form and
//!   are told apart by their skeletons.
//!
//! A rule that stops a command says so with an [`ApplyError`]: a typed rejection, which the
//! apply layer turns into a no-op, or a storage failure.

pub mod ad_groups;
pub mod channels;
pub mod claim_owner;
pub mod dedupe;
pub mod fence;
pub mod fifo;
pub mod finalizer;
pub mod lease_owner;
pub mod pause;
pub mod principal_name;
pub mod registry;
pub mod retry;
pub mod validate;

use crate::storage::StoreError;
use crate::wire::rejection::Rejection;

/// Why a command could not be applied: a typed rejection (a no-op) or a storage failure
/// (fatal for this replica).
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Rejected(#[from] Rejection),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type ApplyResult<T> = Result<T, ApplyError>;
