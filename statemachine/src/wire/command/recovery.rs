//! Taking work back and requeueing it: replays, cancels, pauses, resets, recoveries and the registry sweeps (docs/SPEC.md §5, §9.8).

use crate::model::ids::MessageId;
use crate::model::row::Stage;
use serde::{Deserialize, Serialize};

/// Recover a message's stuck rows, or re-send its done ones.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replay {
    pub message_id: MessageId,
}

/// Requeue dead outbound rows matching the filters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayDead {
    pub channel: Option<String>,
    pub destination: Option<String>,
}

/// Cancel pending rows queued to a destination (all, or only the head).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelQueued {
    pub destination: String,
    pub channel: Option<String>,
    pub top_only: bool,
}

/// Pause a destination (`paused: true`: none of its outbound rows is handed out until it is
/// resumed; rows already out finish as they would) or resume it (docs/SPEC.md §4.9). Answers
/// `Count(1)` when that changed the destination, `Count(0)` when it already was so. Audited
/// `destination.pause` / `destination.resume`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetDestinationPaused {
    pub destination: String,
    pub paused: bool,
    pub reason: Option<String>,
}

/// Every inflight row (of `stage`, or of every stage) back to pending, whatever its lease and
/// owner: a single process's start-up recovery (docs/SPEC.md §14.2). Answers `Count`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResetStaleInflight {
    pub stage: Option<Stage>,
}

/// A new leader's take-over (docs/SPEC.md §14.9): every inflight row claimed by anyone but
/// `owner` back to pending whatever its lease, and every lane lease not held by `lane_owner`
/// (every lease, when `None`) dropped, in one command. Answers `Count(rows)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoverInflightOnPromotion {
    pub owner: String,
    pub lane_owner: Option<String>,
}

/// Dead-letter every live outbound row whose destination is not one of `destinations` (the
/// engine's registry): docs/SPEC.md §14.3. Answers `Count`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetterMissingDestinations {
    pub destinations: Vec<String>,
}

/// Dead-letter every live routed row whose handler is not one of `handlers`: docs/SPEC.md
/// §14.3. Answers `Count`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetterMissingHandlers {
    pub handlers: Vec<String>,
}
