//! The fenced row actions a worker sends: `POST /v1/rows/{id}/{action}` with the action's body,
//! or many at once in `POST /v1/rows/actions`.
//!
//! Each body has exactly the members the server accepts (an unknown member is refused, `400`).
//! Optional members that are absent are not sent; the server's default then applies (said on
//! each member).

use crate::{ErrorDetail, FifoClaim};
use raftlane_statemachine::model::ids::Fence;
use raftlane_statemachine::model::ids::{MessageId, Millis};
use raftlane_statemachine::rules::retry::UNLIMITED_ATTEMPTS;
use raftlane_statemachine::wire::command::{HandoffDisposition, RouteDisposition};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `route`: an ingress row's handlers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteBody {
    pub fence: Fence,
    pub handlers: Vec<RouteHandler>,
    /// Absent: `routed` when there are handlers, else `unrouted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disposition: Option<RouteDisposition>,
    /// Also claim the row's lane's next row for `owner` in the same command (only in
    /// `POST /v1/rows/{id}/route`, not in a batch); the answer's `next` is that claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_next: Option<ClaimNext>,
}

/// One handler of a `route`, with the payload its routed row gets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteHandler {
    pub handler: String,
    /// Absent: empty.
    #[serde(default)]
    pub payload: String,
}

/// One outbound row of a `handoff` or a `transform`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliveryBody {
    pub destination: String,
    /// Absent: empty.
    #[serde(default)]
    pub payload: String,
}

/// `handoff`: a row's outbound deliveries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffBody {
    pub fence: Fence,
    pub deliveries: Vec<DeliveryBody>,
    /// Absent: `routed` when there are deliveries, else `unrouted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disposition: Option<HandoffDisposition>,
    /// As a `route`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_next: Option<ClaimNext>,
}

/// One transform-state write of a `transform`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateOpBody {
    pub namespace: String,
    pub key: String,
    /// Any JSON; stored as its text.
    pub value: Value,
}

/// `transform`: a routed row's deliveries and the transform-state writes that go with them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransformBody {
    pub fence: Fence,
    pub deliveries: Vec<DeliveryBody>,
    /// Absent: none.
    #[serde(default)]
    pub state_ops: Vec<StateOpBody>,
    /// As a `route`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_next: Option<ClaimNext>,
}

/// `claim_next` of a `done`, `route`, `handoff` or `transform`: the FIFO claim of the row's
/// lane, for `owner`, made in the same command once the row is finished or handed on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimNext {
    pub owner: String,
    pub ttl_ms: u64,
}

/// `done`: the row is finished. With `claim_next` (only in `POST /v1/rows/{id}/done`, not in a
/// batch) the answer's `next` is a [`FifoClaim`](crate::FifoClaim) of the row's lane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DoneBody {
    pub fence: Fence,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_next: Option<ClaimNext>,
}

impl DoneBody {
    /// A plain `done`, without `claim_next`.
    pub fn new(fence: Fence) -> Self {
        DoneBody {
            fence,
            claim_next: None,
        }
    }
}

/// `response`: a handler row's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseBody {
    pub fence: Fence,
    pub body: String,
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The channel the response re-enters as a new message, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reingress_to: Option<String>,
}

/// `max_attempts` on the wire for "no limit" ([`UNLIMITED_ATTEMPTS`] in the log).
pub const NO_LIMIT_ON_WIRE: i64 = -1;

/// The retry policy of a `fail`. On the wire it is spelled like a destination's `retry` in
/// the config (docs/SPEC.md §5.2, one spelling): `multiplier_milli`, the
/// multiplier in thousandths (1500 = ×1.5). The older `multiplier` (a number from 1.0 to 100.0)
/// is still accepted on input; this type keeps the multiplier as that number so code that
/// builds it does not change ([`RetryBodyJson`] is the wire form).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RetryBodyJson", into = "RetryBodyJson")]
pub struct RetryBody {
    /// Absent: the server's default limit (10). At least 1;
    /// [`raftlane_statemachine::rules::retry::UNLIMITED_ATTEMPTS`] (`-1` on the wire): no limit.
    pub max_attempts: Option<u32>,
    pub backoff_ms: u64,
    /// ×1.0 to ×100 (kept to thousandths).
    pub multiplier: f64,
    pub max_backoff_ms: u64,
}

/// [`RetryBody`] as JSON: exactly one of `multiplier_milli` (the spelling of the config and of
/// every answer) and `multiplier` (the older spelling, input only).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryBodyJson {
    /// Absent: the server's default limit (10). At least 1; `-1`: no limit (retry forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<i64>,
    /// At most 86,400,000 (a day).
    pub backoff_ms: u64,
    /// The multiplier in thousandths, 1000 (×1.0) to 100000 (×100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplier_milli: Option<u32>,
    /// Deprecated spelling: the multiplier as a number, 1.0 to 100.0.
    /// Accepted when `multiplier_milli` is absent; never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplier: Option<f64>,
    /// At most 86,400,000 (a day).
    pub max_backoff_ms: u64,
}

impl TryFrom<RetryBodyJson> for RetryBody {
    type Error = String;

    fn try_from(j: RetryBodyJson) -> Result<Self, String> {
        let multiplier = match (j.multiplier_milli, j.multiplier) {
            (Some(milli), None) => f64::from(milli) / 1000.0,
            (None, Some(m)) => m,
            (Some(_), Some(_)) => {
                return Err("give multiplier_milli or (deprecated) multiplier, not both".into())
            }
            (None, None) => return Err("missing field `multiplier_milli`".into()),
        };
        let max_attempts = match j.max_attempts {
            None => None,
            Some(NO_LIMIT_ON_WIRE) => Some(UNLIMITED_ATTEMPTS),
            Some(n) => match u32::try_from(n) {
                Ok(n) if n >= 1 && n != UNLIMITED_ATTEMPTS => Some(n),
                _ => {
                    return Err(format!(
                        "max_attempts must be at least 1 and below {UNLIMITED_ATTEMPTS}, \
                         or -1 for no limit (got {n})"
                    ))
                }
            },
        };
        Ok(RetryBody {
            max_attempts,
            backoff_ms: j.backoff_ms,
            multiplier,
            max_backoff_ms: j.max_backoff_ms,
        })
    }
}

impl From<RetryBody> for RetryBodyJson {
    fn from(r: RetryBody) -> Self {
        RetryBodyJson {
            max_attempts: r.max_attempts.map(|n| {
                if n == UNLIMITED_ATTEMPTS {
                    NO_LIMIT_ON_WIRE
                } else {
                    i64::from(n)
                }
            }),
            backoff_ms: r.backoff_ms,
            // Saturating: an out-of-range number stays out of range, for the server to refuse.
            multiplier_milli: Some((r.multiplier * 1000.0).round() as u32),
            multiplier: None,
            max_backoff_ms: r.max_backoff_ms,
        }
    }
}

impl JsonSchema for RetryBody {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        RetryBodyJson::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        RetryBodyJson::json_schema(generator)
    }
}

/// `fail`: the attempt failed; the row is retried or, out of attempts, dead-lettered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailBody {
    pub fence: Fence,
    pub error: String,
    /// Absent: the destination's policy, else the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryBody>,
}

/// `dead`: dead-letter the row now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadBody {
    /// Absent: the row need not be claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<Fence>,
    pub error: String,
}

/// `reingress`: the row's message re-enters through a loopback channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReingressBody {
    pub fence: Fence,
    pub loopback_channel: String,
    /// Absent: 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth_cap: Option<u32>,
    /// The id the caller knows the child by (a name); `GET /v1/messages/{child_key}` finds the
    /// child by it. With it the child gets only the fields below (docs/SPEC.md §14.7); without
    /// it the child copies its origin's message type (§3.7) and the fields below are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The caller could not parse the reply: the child is born in status `error` with no
    /// ingress row. Absent: `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peek_failed: Option<bool>,
}

/// `GET /v1/rows/{id}`: one work row as it is now (payload decrypted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RowDetail {
    pub row: raftlane_statemachine::row::WorkRow,
}

/// A fenced row action and its body. As JSON it is `{"action": <name>, "body": {...}}`, the
/// shape of an item of `POST /v1/rows/actions`; `POST /v1/rows/{id}/{name}` takes the body alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "action", content = "body", rename_all = "snake_case")]
pub enum RowAction {
    Route(RouteBody),
    Handoff(HandoffBody),
    Transform(TransformBody),
    Done(DoneBody),
    Response(ResponseBody),
    Fail(FailBody),
    Dead(DeadBody),
    Reingress(ReingressBody),
}

impl RowAction {
    /// Every action's name, as [`RowAction::name`] gives it.
    pub const NAMES: [&'static str; 8] = [
        "route",
        "handoff",
        "transform",
        "done",
        "response",
        "fail",
        "dead",
        "reingress",
    ];

    /// The action's name: the last segment of `POST /v1/rows/{id}/{action}`.
    pub fn name(&self) -> &'static str {
        match self {
            RowAction::Route(_) => "route",
            RowAction::Handoff(_) => "handoff",
            RowAction::Transform(_) => "transform",
            RowAction::Done(_) => "done",
            RowAction::Response(_) => "response",
            RowAction::Fail(_) => "fail",
            RowAction::Dead(_) => "dead",
            RowAction::Reingress(_) => "reingress",
        }
    }

    /// The fence the action carries (`dead` may carry none).
    pub fn fence(&self) -> Option<Fence> {
        match self {
            RowAction::Route(b) => Some(b.fence),
            RowAction::Handoff(b) => Some(b.fence),
            RowAction::Transform(b) => Some(b.fence),
            RowAction::Done(b) => Some(b.fence),
            RowAction::Response(b) => Some(b.fence),
            RowAction::Fail(b) => Some(b.fence),
            RowAction::Dead(b) => b.fence,
            RowAction::Reingress(b) => Some(b.fence),
        }
    }

    /// The body alone, as `POST /v1/rows/{id}/{action}` takes it.
    pub fn body(&self) -> serde_json::Result<Value> {
        match self {
            RowAction::Route(b) => serde_json::to_value(b),
            RowAction::Handoff(b) => serde_json::to_value(b),
            RowAction::Transform(b) => serde_json::to_value(b),
            RowAction::Done(b) => serde_json::to_value(b),
            RowAction::Response(b) => serde_json::to_value(b),
            RowAction::Fail(b) => serde_json::to_value(b),
            RowAction::Dead(b) => serde_json::to_value(b),
            RowAction::Reingress(b) => serde_json::to_value(b),
        }
    }
}

/// One item of `POST /v1/rows/actions`: `{"row": <id>, "action": <name>, "body": {...}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RowActionItem {
    pub row: u64,
    #[serde(flatten)]
    pub action: RowAction,
}

/// `POST /v1/rows/actions`: 1 to 256 actions, each on a different row. `done` may not take
/// `claim_next` here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RowActionsRequest {
    pub actions: Vec<RowActionItem>,
}

/// The answer of a row action that took effect. Untagged: the kinds are told apart by their
/// members, each answer's members in alphabetical order, the order clients read on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RowAnswer {
    /// `route`, `handoff`, `transform`, `response`: `applied` is `false` when the row was
    /// already consumed under this fence (a retry).
    HandedOff {
        applied: bool,
        index: u64,
        /// With `claim_next`: the lane's FIFO claim.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<FifoClaim>,
    },
    /// `done` (and `dead`); with `claim_next`, `next` is the lane's FIFO claim.
    Done {
        index: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<FifoClaim>,
        ok: bool,
    },
    /// `fail`: dead-lettered, or due again at `next_attempt_at`.
    Failed {
        dead: bool,
        index: u64,
        next_attempt_at: Millis,
    },
    /// `reingress`: the child message, or `null` when the depth cap dead-lettered the row.
    Reingressed {
        child_message_id: Option<MessageId>,
        index: u64,
    },
}

impl RowAnswer {
    /// The log index the action was applied at.
    pub fn index(&self) -> u64 {
        match self {
            RowAnswer::HandedOff { index, .. }
            | RowAnswer::Done { index, .. }
            | RowAnswer::Failed { index, .. }
            | RowAnswer::Reingressed { index, .. } => *index,
        }
    }
}

/// One refused action of `POST /v1/rows/actions`: the status and error body its own route
/// would have answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ItemError {
    pub error: ErrorDetail,
    pub status: u16,
}

/// One answer of `POST /v1/rows/actions`, in request order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum RowActionResult {
    Refused(ItemError),
    Applied(RowAnswer),
}

/// `POST /v1/rows/actions`: one result per action, in request order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RowActionResults {
    pub results: Vec<RowActionResult>,
}

/// The body of `POST /v1/rows/{id}/{action}`: the body of the action the path names. Only for
/// the schema (the server parses the body as the named action's type).
#[derive(JsonSchema)]
#[serde(untagged)]
pub enum RowActionBody {
    Route(RouteBody),
    Handoff(HandoffBody),
    Transform(TransformBody),
    Done(DoneBody),
    Response(ResponseBody),
    Fail(FailBody),
    Dead(DeadBody),
    Reingress(ReingressBody),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One of each action, with its exact JSON as an item of `POST /v1/rows/actions` (the body
    /// members are what the server accepted before these types existed).
    fn each_action() -> Vec<(RowAction, Value)> {
        vec![
            (
                RowAction::Route(RouteBody {
                    fence: Fence(3),
                    handlers: vec![RouteHandler {
                        handler: "h1".into(),
                        payload: "p".into(),
                    }],
                    disposition: None,
                    claim_next: None,
                }),
                json!({ "action": "route", "body": {
                    "fence": 3, "handlers": [{ "handler": "h1", "payload": "p" }] } }),
            ),
            (
                RowAction::Route(RouteBody {
                    fence: Fence(3),
                    handlers: vec![],
                    disposition: Some(RouteDisposition::Unrouted),
                    claim_next: None,
                }),
                json!({ "action": "route", "body": {
                    "fence": 3, "handlers": [], "disposition": "unrouted" } }),
            ),
            (
                RowAction::Handoff(HandoffBody {
                    fence: Fence(4),
                    deliveries: vec![DeliveryBody {
                        destination: "emr".into(),
                        payload: "x".into(),
                    }],
                    disposition: Some(HandoffDisposition::Filtered),
                    claim_next: None,
                }),
                json!({ "action": "handoff", "body": {
                    "fence": 4, "deliveries": [{ "destination": "emr", "payload": "x" }],
                    "disposition": "filtered" } }),
            ),
            (
                RowAction::Transform(TransformBody {
                    fence: Fence(5),
                    deliveries: vec![],
                    state_ops: vec![StateOpBody {
                        namespace: "ns".into(),
                        key: "k".into(),
                        value: json!({ "n": 1 }),
                    }],
                    claim_next: None,
                }),
                json!({ "action": "transform", "body": {
                    "fence": 5, "deliveries": [],
                    "state_ops": [{ "namespace": "ns", "key": "k", "value": { "n": 1 } }] } }),
            ),
            (
                RowAction::Done(DoneBody::new(Fence(6))),
                json!({ "action": "done", "body": { "fence": 6 } }),
            ),
            (
                RowAction::Done(DoneBody {
                    fence: Fence(6),
                    claim_next: Some(ClaimNext {
                        owner: "w".into(),
                        ttl_ms: 500,
                    }),
                }),
                json!({ "action": "done", "body": {
                    "fence": 6, "claim_next": { "owner": "w", "ttl_ms": 500 } } }),
            ),
            (
                RowAction::Response(ResponseBody {
                    fence: Fence(7),
                    body: "ok".into(),
                    outcome: "success".into(),
                    detail: Some("d".into()),
                    reingress_to: Some("loop".into()),
                }),
                json!({ "action": "response", "body": {
                    "fence": 7, "body": "ok", "outcome": "success", "detail": "d",
                    "reingress_to": "loop" } }),
            ),
            (
                RowAction::Fail(FailBody {
                    fence: Fence(8),
                    error: "boom".into(),
                    retry: None,
                }),
                json!({ "action": "fail", "body": { "fence": 8, "error": "boom" } }),
            ),
            (
                RowAction::Fail(FailBody {
                    fence: Fence(8),
                    error: "boom".into(),
                    retry: Some(RetryBody {
                        max_attempts: Some(6),
                        backoff_ms: 100,
                        multiplier: 2.5,
                        max_backoff_ms: 800,
                    }),
                }),
                json!({ "action": "fail", "body": { "fence": 8, "error": "boom", "retry": {
                    "max_attempts": 6, "backoff_ms": 100, "multiplier_milli": 2500,
                    "max_backoff_ms": 800 } } }),
            ),
            (
                RowAction::Dead(DeadBody {
                    fence: None,
                    error: "poison".into(),
                }),
                json!({ "action": "dead", "body": { "error": "poison" } }),
            ),
            (
                RowAction::Dead(DeadBody {
                    fence: Some(Fence(9)),
                    error: "poison".into(),
                }),
                json!({ "action": "dead", "body": { "fence": 9, "error": "poison" } }),
            ),
            (
                RowAction::Reingress(ReingressBody {
                    fence: Fence(10),
                    loopback_channel: "loop".into(),
                    depth_cap: Some(2),
                    child_key: None,
                    control_id: None,
                    message_type: None,
                    summary: None,
                    peek_failed: None,
                }),
                json!({ "action": "reingress", "body": {
                    "fence": 10, "loopback_channel": "loop", "depth_cap": 2 } }),
            ),
        ]
    }

    /// `-1` is "no limit" (messagefoundry's default policy retries forever): read as the
    /// log's [`UNLIMITED_ATTEMPTS`] and written back as `-1`; 0, other negatives and the
    /// sentinel's own number are refused.
    #[test]
    fn max_attempts_minus_one_means_no_limit() {
        let parse = |v: Value| serde_json::from_value::<RetryBody>(v);
        let body = |n: Value| {
            json!({"max_attempts": n, "backoff_ms": 10, "multiplier_milli": 1000,
                   "max_backoff_ms": 10})
        };
        let unlimited = parse(body(json!(-1))).expect("-1 is accepted");
        assert_eq!(unlimited.max_attempts, Some(UNLIMITED_ATTEMPTS));
        assert_eq!(
            serde_json::to_value(&unlimited).unwrap()["max_attempts"],
            json!(-1)
        );
        assert_eq!(parse(body(json!(3))).unwrap().max_attempts, Some(3));
        for bad in [json!(0), json!(-2), json!(i64::from(u32::MAX))] {
            let err = parse(body(bad.clone())).expect_err("refused").to_string();
            assert!(err.contains("max_attempts"), "{bad}: {err}");
        }
    }

    /// One spelling: `multiplier_milli`, as in the config; the older
    /// `multiplier` is read (not written); both at once, or neither, is refused.
    #[test]
    fn the_retry_multiplier_is_spelled_like_the_config() {
        let body = RetryBody {
            max_attempts: None,
            backoff_ms: 10,
            multiplier: 1.5,
            max_backoff_ms: 100,
        };
        let wire = json!({ "backoff_ms": 10, "multiplier_milli": 1500, "max_backoff_ms": 100 });
        assert_eq!(serde_json::to_value(&body).unwrap(), wire);
        assert_eq!(serde_json::from_value::<RetryBody>(wire).unwrap(), body);
        let old = json!({ "backoff_ms": 10, "multiplier": 1.5, "max_backoff_ms": 100 });
        assert_eq!(serde_json::from_value::<RetryBody>(old).unwrap(), body);
        for bad in [
            json!({ "backoff_ms": 10, "multiplier": 1.5, "multiplier_milli": 1500, "max_backoff_ms": 100 }),
            json!({ "backoff_ms": 10, "max_backoff_ms": 100 }),
        ] {
            assert!(
                serde_json::from_value::<RetryBody>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn each_action_has_its_wire_shape() {
        let mut names = Vec::new();
        for (action, wire) in each_action() {
            assert_eq!(serde_json::to_value(&action).unwrap(), wire);
            assert_eq!(action.name(), wire["action"]);
            assert_eq!(action.body().unwrap(), wire["body"]);
            assert_eq!(
                serde_json::from_value::<RowAction>(wire.clone()).unwrap(),
                action,
                "{wire}"
            );
            if !names.contains(&action.name()) {
                names.push(action.name());
            }
        }
        assert_eq!(names, RowAction::NAMES);
    }

    #[test]
    fn a_batch_item_carries_its_row() {
        let request = RowActionsRequest {
            actions: vec![
                RowActionItem {
                    row: 11,
                    action: RowAction::Done(DoneBody::new(Fence(6))),
                },
                RowActionItem {
                    row: 12,
                    action: RowAction::Dead(DeadBody {
                        fence: None,
                        error: "e".into(),
                    }),
                },
            ],
        };
        let wire = json!({ "actions": [
            { "row": 11, "action": "done", "body": { "fence": 6 } },
            { "row": 12, "action": "dead", "body": { "error": "e" } },
        ] });
        assert_eq!(serde_json::to_value(&request).unwrap(), wire);
        assert_eq!(
            serde_json::from_value::<RowActionsRequest>(wire).unwrap(),
            request
        );
    }

    #[test]
    fn optional_members_default_as_the_server_reads_them() {
        let route: RouteBody =
            serde_json::from_value(json!({ "fence": 1, "handlers": [{ "handler": "h" }] }))
                .unwrap();
        assert_eq!(route.handlers[0].payload, "");
        assert_eq!(route.disposition, None);
        let t: TransformBody =
            serde_json::from_value(json!({ "fence": 1, "deliveries": [{ "destination": "d" }] }))
                .unwrap();
        assert_eq!(t.deliveries[0].payload, "");
        assert!(t.state_ops.is_empty());
        // An explicit null is an absent optional member.
        let done: DoneBody =
            serde_json::from_value(json!({ "fence": 1, "claim_next": null })).unwrap();
        assert_eq!(done, DoneBody::new(Fence(1)));
    }

    #[test]
    fn unknown_members_and_names_are_refused() {
        assert!(serde_json::from_value::<DoneBody>(json!({ "fence": 1, "extra": true })).is_err());
        assert!(serde_json::from_value::<DoneBody>(json!({})).is_err());
        assert!(
            serde_json::from_value::<RowAction>(json!({ "action": "explode", "body": {} }))
                .is_err()
        );
    }
}
