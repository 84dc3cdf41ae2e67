//! Work rows: one unit of pipeline work at one stage.

use crate::model::ids::{Fence, MessageId, Millis, RowId};
use crate::model::lane::LaneKey;
pub use crate::model::stage::Stage;
use serde::{Deserialize, Serialize};

/// When a claim could next hand out a row, as a read of the state sees it: what a claim that
/// waits for work (docs/SPEC.md §4.7a) sleeps on between attempts. Read-only and advisory: the
/// claim itself, proposed, always decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimChance {
    /// A claim now may hand out a row.
    Now,
    /// Nothing before this time unless an entry changes the rows (the earliest backoff, or the
    /// end of the lease that holds the lane).
    At(Millis),
    /// Nothing until an entry changes the rows.
    OnChange,
    /// Too costly to tell (many due rows the claim's filters skip): only the claim can say.
    Unknown,
}

/// A work row's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    Pending,
    Inflight,
    Done,
    Dead,
    Cancelled,
}

impl RowStatus {
    pub const ALL: [RowStatus; 5] = [
        Self::Pending,
        Self::Inflight,
        Self::Done,
        Self::Dead,
        Self::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Inflight => "inflight",
            Self::Done => "done",
            Self::Dead => "dead",
            Self::Cancelled => "cancelled",
        }
    }

    /// Pending or inflight: the row still has work to do.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Pending | Self::Inflight)
    }
}

/// Who holds an inflight row, until when, under which fence. Present exactly when the row is
/// inflight, so a pending row with an owner cannot be represented.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Claim {
    pub owner: String,
    pub lease_expires_at: Millis,
    pub fence: Fence,
}

/// A work row: one unit of a message's work in one stage.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WorkRow {
    /// Also the global insertion `seq`.
    pub id: RowId,
    pub message_id: MessageId,
    pub stage: Stage,
    pub channel_id: String,
    pub destination_name: Option<String>,
    pub handler_name: Option<String>,
    pub payload: String,
    pub status: RowStatus,
    pub attempts: u32,
    pub next_attempt_at: Millis,
    pub last_error: Option<String>,
    pub created_at: Millis,
    pub updated_at: Millis,
    /// The current claim: present exactly when the row is `inflight`.
    pub claim: Option<Claim>,
    /// The fence of the most recent claim, kept after completion so a late duplicate
    /// completion can be told apart from a stale one.
    pub last_fence: Option<Fence>,
}

impl WorkRow {
    /// Whether the row passes the optional channel and destination filters of ClaimReady,
    /// ReplayDead and the dead-letter view (a row without a destination fails a destination
    /// filter).
    pub fn matches(&self, channel: Option<&str>, destination: Option<&str>) -> bool {
        channel.is_none_or(|c| c == self.channel_id)
            && destination.is_none_or(|d| Some(d) == self.destination_name.as_deref())
    }

    /// The name of the FIFO lane this row belongs to: the destination for outbound rows, the
    /// channel for every other stage.
    pub fn lane_name(&self) -> &str {
        match self.stage {
            Stage::Outbound => self.destination_name.as_deref().unwrap_or(""),
            _ => &self.channel_id,
        }
    }

    pub fn lane(&self) -> LaneKey {
        LaneKey::new(self.stage, self.lane_name())
    }
}
