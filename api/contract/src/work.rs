//! Workers' routes: FIFO and unordered claims, lanes (and the query of their list), leases.

use crate::page::PageLimit;
use crate::read::Consistency;
use raftlane_statemachine::model::ids::Millis;
use raftlane_statemachine::row::Stage;
use raftlane_statemachine::{ClaimedRow, FifoEmpty};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/lanes/{stage}/{name}/claim`: claim the lane's head for `owner`, holding the lane
/// for `ttl_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FifoClaimRequest {
    /// Who holds the lane lease (and, without `row_owner`, the row's claim).
    pub owner: String,
    pub ttl_ms: u64,
    /// `false`: take no lane lease (the single-process engine's claim); the head is still not
    /// handed out while another owner's row or live lane lease holds the lane. Absent: `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane_lease: Option<bool>,
    /// The row's claim owner when it is not `owner` (an engine process claiming under its
    /// node's lane lease). docs/SPEC.md §14.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_owner: Option<String>,
    /// Wait up to this long (0 to 30,000 ms) for the head to become claimable when it is not
    /// now; absent or 0: answer at once. docs/SPEC.md §4.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

/// Why a FIFO claim handed out nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FifoEmptyReason {
    /// No pending row in the lane.
    Empty,
    /// The head is backing off until `due_at`; the lane waits for it (FIFO never skips it).
    NotDue,
    /// Another owner holds the lane until `expires_at`.
    LaneBusy,
}

/// `POST /v1/lanes/{stage}/{lane}/claim` (and `next` of a `done` with `claim_next`): the lane's
/// head with its fence, or why there is none. Absent members are not sent: `{"item": {...}}`, or
/// `{"item": null, "reason": "not_due", "due_at": ...}`, or `{"item": null, "reason":
/// "lane_busy", "holder": ..., "expires_at": ...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FifoClaim {
    pub item: Option<ClaimedRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<FifoEmptyReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Millis>,
}

impl From<Result<ClaimedRow, FifoEmpty>> for FifoClaim {
    fn from(claim: Result<ClaimedRow, FifoEmpty>) -> Self {
        let none = FifoClaim {
            item: None,
            reason: None,
            due_at: None,
            holder: None,
            expires_at: None,
        };
        match claim {
            Ok(item) => FifoClaim {
                item: Some(item),
                ..none
            },
            Err(FifoEmpty::Empty) => FifoClaim {
                reason: Some(FifoEmptyReason::Empty),
                ..none
            },
            Err(FifoEmpty::NotDue { due_at }) => FifoClaim {
                reason: Some(FifoEmptyReason::NotDue),
                due_at: Some(due_at),
                ..none
            },
            Err(FifoEmpty::LaneBusy { holder, expires_at }) => FifoClaim {
                reason: Some(FifoEmptyReason::LaneBusy),
                holder: Some(holder),
                expires_at: Some(expires_at),
                ..none
            },
        }
    }
}

/// `POST /v1/lanes/{stage}/{name}/release`: give the lane lease back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseRequest {
    pub owner: String,
}

/// `POST /v1/lanes/{stage}/{name}/release`: whether `owner` held the lane (and now does not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Released {
    pub released: bool,
}

/// `POST /v1/lanes/outbound/{dest}/cancel` (an empty body is `{}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    /// Only this channel's rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Only the lane's head.
    #[serde(default)]
    pub top_only: bool,
}

/// `POST /v1/lanes/outbound/{dest}/cancel`: how many pending rows were cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Cancelled {
    pub cancelled: u64,
}

/// `POST /v1/claims`: up to `limit` due rows of `stage` (unordered), each leased to `owner`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimRequest {
    /// The stage whose due rows are claimed.
    pub stage: Stage,
    /// 1 to the server's claim limit.
    pub limit: u32,
    pub owner: String,
    pub ttl_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// Wait up to this long (0 to 30,000 ms) for a row to claim when none is due now; absent
    /// or 0: answer at once. docs/SPEC.md §4.8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

/// `POST /v1/claims`: the rows claimed, payloads decrypted (possibly none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Claimed {
    pub items: Vec<ClaimedRow>,
}

/// `POST /v1/leases/renew`: extend `owner`'s leases on these rows (and their lanes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenewRequest {
    pub owner: String,
    /// Row ids.
    pub ids: Vec<u64>,
    pub ttl_ms: u64,
}

/// `POST /v1/leases/renew`: how many leases were extended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Renewed {
    pub renewed: u64,
}

/// `GET /v1/lanes/{stage}/{name}`: the lane's depth, oldest row and holder; one item of
/// `GET /v1/lanes`.
///
/// Members in alphabetical order, the order clients read on the wire; absent values are
/// `null`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LaneStatus {
    /// Pending rows.
    pub depth: u64,
    /// The lane's lease while it is live.
    pub holder: Option<raftlane_statemachine::model::lane::LaneLease>,
    /// Inflight rows.
    pub inflight: u64,
    /// `"{stage}:{name}"`.
    pub lane: String,
    /// The lane's name: a channel's, or for `outbound` a destination's.
    pub name: String,
    /// `created_at` of the oldest pending row.
    pub oldest: Option<Millis>,
    /// How long the oldest pending row has waited, by the cluster's time when read.
    pub oldest_age_ms: Option<u64>,
    pub stage: String,
}

impl LaneStatus {
    /// The lane as read, its oldest row's age taken at the cluster's time `now_ms`.
    pub fn at(v: raftlane_statemachine::query::LaneView, now_ms: Millis) -> Self {
        LaneStatus {
            depth: v.depth,
            holder: v.holder,
            inflight: v.inflight,
            lane: v.lane,
            name: v.name,
            oldest_age_ms: v.oldest_created_at.map(|t| now_ms.saturating_sub(t)),
            oldest: v.oldest_created_at,
            stage: v.stage.as_str().to_string(),
        }
    }
}

/// `GET /v1/lanes`: a page of lanes in the store's order: stage (ingress, routed, outbound,
/// response), then name, shorter names first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LaneList {
    pub lanes: Vec<LaneStatus>,
    /// Pass as `cursor` for the next page (`"{stage}:{name}"` of this page's last lane);
    /// `null`: this was the last page.
    pub next_cursor: Option<String>,
}

/// The query of `GET /v1/lanes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LaneListQuery {
    /// Only lanes of this stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// Lanes per page (default 100).
    #[serde(default, skip_serializing_if = "PageLimit::is_default")]
    pub limit: PageLimit<100>,
    /// The previous page's `next_cursor`: the list goes on after that lane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// `stale`: answered from this node's state as it is; absent or `linearizable`: after
    /// catching up with the leader's commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistency: Option<Consistency>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Enqueued;
    use raftlane_statemachine::model::ids::{Fence, MessageId, RowId};
    use raftlane_statemachine::row::Stage;
    use serde_json::json;

    fn row() -> ClaimedRow {
        ClaimedRow {
            row_id: RowId(7),
            message_id: MessageId(3),
            stage: Stage::Outbound,
            channel_id: "lab".into(),
            destination_name: Some("emr".into()),
            handler_name: None,
            payload: "MSH|".into(),
            attempts: 1,
            fence: Fence(42),
            lease_expires_at: 1_000,
            created_at: None,
        }
    }

    /// The exact JSON each kind of answer has on the wire, which clients read as it is.
    #[test]
    fn each_answer_has_its_wire_shape() {
        let claimed = serde_json::to_value(FifoClaim::from(Ok(row()))).unwrap();
        assert_eq!(claimed["item"]["fence"], json!(42));
        assert_eq!(claimed["item"]["stage"], json!("outbound"));
        assert_eq!(claimed.as_object().map(|o| o.len()), Some(1), "{claimed}");

        let empty = serde_json::to_value(FifoClaim::from(Err(FifoEmpty::Empty))).unwrap();
        assert_eq!(empty, json!({ "item": null, "reason": "empty" }));

        let not_due =
            serde_json::to_value(FifoClaim::from(Err(FifoEmpty::NotDue { due_at: 5 }))).unwrap();
        assert_eq!(
            not_due,
            json!({ "item": null, "reason": "not_due", "due_at": 5 })
        );

        let busy = serde_json::to_value(FifoClaim::from(Err(FifoEmpty::LaneBusy {
            holder: "w1".into(),
            expires_at: 9,
        })))
        .unwrap();
        assert_eq!(
            busy,
            json!({ "item": null, "reason": "lane_busy", "holder": "w1", "expires_at": 9 })
        );
    }

    #[test]
    fn answers_round_trip() {
        for claim in [
            FifoClaim::from(Ok(row())),
            FifoClaim::from(Err(FifoEmpty::NotDue { due_at: 5 })),
        ] {
            let text = serde_json::to_string(&claim).unwrap();
            assert_eq!(serde_json::from_str::<FifoClaim>(&text).unwrap(), claim);
        }
        let e = Enqueued {
            message_id: MessageId(4),
            duplicate: false,
            index: 12,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            json!({ "message_id": 4, "duplicate": false, "index": 12 })
        );
        assert_eq!(serde_json::from_value::<Enqueued>(v).unwrap(), e);
    }
}
