//! The authorization matrix (docs/SPEC.md §9.3, §9.4, §9.7): every route of the OpenAPI
//! document × every role × an unscoped token, one scoped to the route's channel and one scoped
//! to another channel. One table ([`table`]) says, per route, the permission it needs and how
//! far its reach goes; the expected answer of every cell is derived from that row, and a route
//! the document lists but the table does not fails the test (so a new route cannot ship
//! without a decided rule).
//!
//! A cell that should be refused must answer exactly `403` (or `404` where a refusal hides the
//! resource); a cell that should pass must not answer `401` or `403` (it may still fail later
//! for its own reasons: a stale fence, a missing user, an empty list of voters). Bodies are
//! valid for their route's type, so a refusal cannot hide behind a `400` from parsing; where a
//! body's *values* are refused after authorization (`voters: []`), that is deliberate: the call
//! is judged without changing the cluster's shape.

use crate::harness::*;
use std::collections::BTreeSet;

/// The channel every channel-bound route targets; the "own" token is scoped to it.
const OWN: &str = "own";
/// The channel the "other" token is scoped to.
const OTHER: &str = "elsewhere";

/// What a route needs of its caller's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// No token at all.
    Public,
    Read,
    /// Read bodies (every role but `metadata`).
    Bodies,
    Produce,
    Work,
    /// Replay, dead-letter replay, cancel, the dead-letter sweeps (operators and the engine).
    Requeue,
    /// Retention purges (operators and the engine).
    Purge,
    /// Reference writes (operators and the engine).
    Reference,
    /// Audit appends (operators and the engine).
    AppendAudit,
    /// Keyed approvals (operators and the engine).
    KeyedApprovals,
    /// The engine's users, roles, sessions, directory groups (admins and the engine).
    EngineUsers,
    Operate,
    Admin,
}

/// How far a route reaches, so which scopes may call it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// Spans every channel: unscoped tokens only.
    Global,
    /// Targets channel [`OWN`]: the "other" scope is refused with 403.
    Channel,
    /// Targets a row or a message of channel [`OWN`] by its id (or a resource hidden by
    /// scope): the other scope is answered exactly as an id that does not exist, 404
    /// (docs/SPEC.md §9.4), reads and writes alike.
    Hidden,
    /// Not about a channel: any scope.
    Any,
    /// An audit org: channel-scoped tokens carry no org scope, so only unscoped tokens.
    Org,
    /// Reaches something bound to no channel of any scoped token (a namespace of another
    /// channel, an unbound namespace): hidden (404) from every scoped token.
    HiddenFromScoped,
    /// Targets a row of channel [`OWN`] and reaches a namespace of no scoped token: the "own"
    /// scope is answered 404 for the namespace, the "other" scope as [`Reach::Hidden`] for the
    /// row.
    NamespaceOnRow,
    /// Acts on a row of channel [`OWN`] whose claim another principal (the bootstrap admin)
    /// holds: only operators and admins may (docs/SPEC.md §9.8); the "other" scope is answered
    /// as [`Reach::Hidden`] for the row.
    ForeignClaim,
    /// Uses a name (owner name, engine node id) bound to another principal to take something
    /// new (a heartbeat, a campaign, a renewal): refused to every caller (docs/SPEC.md §9.8).
    TakenName,
    /// Acts on what a name bound to another principal holds (a resignation, a leave), a route
    /// spanning every channel: only operators and admins may, as the envelope's `as_operator`.
    ForeignName,
    /// [`Reach::ForeignName`] on a lane of channel [`OWN`] (a lane release): the "other" scope
    /// is answered as [`Reach::Channel`].
    ForeignNameOnLane,
}

/// One row of the table: a route, a concrete call of it, and its rule.
struct Route {
    method: Method,
    template: &'static str,
    path: String,
    /// `{me}` is replaced with the caller's label (owner names belong to principals).
    body: Option<Value>,
    level: Level,
    reach: Reach,
}

fn route(
    method: Method,
    template: &'static str,
    path: impl Into<String>,
    body: Option<Value>,
    level: Level,
    reach: Reach,
) -> Route {
    Route {
        method,
        template,
        path: path.into(),
        body,
        level,
        reach,
    }
}

/// Ids the table's calls point at: a message and its ingress row in [`OWN`], and an outbound
/// row of [`OWN`] the bootstrap admin holds claimed, with its fence.
struct Fixture {
    message: u64,
    row: u64,
    claimed: (u64, u64),
}

/// The table: every route, once.
fn table(f: &Fixture) -> Vec<Route> {
    use Level::*;
    use Method as M;
    use Reach::*;
    let (msg, row) = (f.message, f.row);
    let hex64 = "a".repeat(64);
    let doc = json!({ "channels": {}, "destinations": {}, "handlers": {}, "retention": {},
                      "approvals_required": [] });
    vec![
        // --- producing and reading messages ---
        route(
            M::POST,
            "/v1/channels/{channel}/messages",
            format!("/v1/channels/{OWN}/messages"),
            Some(json!({ "raw": "MSH|m" })),
            Produce,
            Channel,
        ),
        route(
            M::GET,
            "/v1/messages",
            format!("/v1/messages?channel={OWN}"),
            None,
            Read,
            Channel,
        ),
        route(
            M::GET,
            "/v1/messages/count",
            format!("/v1/messages/count?channel={OWN}"),
            None,
            Read,
            Channel,
        ),
        route(
            M::GET,
            "/v1/messages/{id}",
            format!("/v1/messages/{msg}?body=true"),
            None,
            Bodies,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/messages/{id}/viewed",
            format!("/v1/messages/{msg}/viewed"),
            Some(json!({})),
            Read,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/messages/{id}/replay",
            format!("/v1/messages/{msg}/replay"),
            None,
            Requeue,
            Hidden,
        ),
        route(
            M::GET,
            "/v1/dead-letters",
            format!("/v1/dead-letters?channel={OWN}"),
            None,
            Read,
            Channel,
        ),
        route(
            M::GET,
            "/v1/dead-letters/count",
            format!("/v1/dead-letters/count?channel={OWN}"),
            None,
            Read,
            Channel,
        ),
        route(
            M::POST,
            "/v1/dead-letters/sweep",
            "/v1/dead-letters/sweep",
            // A stage (the body is parsed before authorization) with no registry to sweep by:
            // refused after authorization, so nothing is swept.
            Some(json!({ "stage": "response", "keep": [] })),
            Requeue,
            Global,
        ),
        route(
            M::POST,
            "/v1/dead-letters/replay",
            "/v1/dead-letters/replay",
            Some(json!({ "channel": OWN })),
            Requeue,
            Channel,
        ),
        route(M::GET, "/v1/stats", "/v1/stats", None, Read, Global),
        route(
            M::GET,
            "/v1/stats/storage",
            "/v1/stats/storage",
            None,
            Read,
            Global,
        ),
        route(
            M::GET,
            "/v1/metrics/connections",
            "/v1/metrics/connections",
            None,
            Read,
            Global,
        ),
        // --- lanes, claims, leases, rows ---
        route(M::GET, "/v1/lanes", "/v1/lanes?limit=5", None, Read, Global),
        // A destination spans channels: pausing it is an unscoped requeue (docs/SPEC.md §4.9).
        route(
            M::POST,
            "/v1/destinations/{destination}/pause",
            "/v1/destinations/matrix-dest/pause",
            Some(json!({ "reason": "matrix" })),
            Requeue,
            Global,
        ),
        route(
            M::POST,
            "/v1/destinations/{destination}/resume",
            "/v1/destinations/matrix-dest/resume",
            None,
            Requeue,
            Global,
        ),
        route(
            M::GET,
            "/v1/destinations/paused",
            "/v1/destinations/paused",
            None,
            Read,
            Global,
        ),
        route(
            M::GET,
            "/v1/lanes/{stage}/{name}",
            format!("/v1/lanes/ingress/{OWN}"),
            None,
            Read,
            Channel,
        ),
        route(
            M::POST,
            "/v1/lanes/{stage}/{name}/claim",
            format!("/v1/lanes/routed/{OWN}/claim"),
            Some(json!({ "owner": "{me}", "ttl_ms": 1000 })),
            Work,
            Channel,
        ),
        route(
            M::POST,
            "/v1/lanes/{stage}/{name}/release",
            format!("/v1/lanes/routed/{OWN}/release"),
            Some(json!({ "owner": "{me}" })),
            Work,
            Channel,
        ),
        route(
            M::POST,
            "/v1/lanes/outbound/{dest}/cancel",
            "/v1/lanes/outbound/nowhere/cancel",
            Some(json!({ "channel": OWN })),
            Requeue,
            Channel,
        ),
        route(
            M::POST,
            "/v1/claims",
            "/v1/claims",
            Some(
                json!({ "stage": "routed", "limit": 1, "owner": "{me}", "ttl_ms": 1000, "channel": OWN }),
            ),
            Work,
            Channel,
        ),
        route(
            M::POST,
            "/v1/leases/renew",
            "/v1/leases/renew",
            Some(json!({ "owner": "{me}", "ids": [row], "ttl_ms": 1000 })),
            Work,
            Any,
        ),
        route(
            M::POST,
            "/v1/leases/reclaim",
            "/v1/leases/reclaim",
            Some(json!({})),
            Work,
            Global,
        ),
        route(
            M::POST,
            "/v1/leases/reset",
            "/v1/leases/reset",
            // Not a stage: the body is parsed only after authorization, and refused, so no row
            // is reset.
            Some(json!({ "stage": "handler" })),
            Work,
            Global,
        ),
        route(
            M::POST,
            "/v1/leases/recover",
            "/v1/leases/recover",
            Some(json!({ "owner": "nobody" })),
            Work,
            Global,
        ),
        route(
            M::GET,
            "/v1/rows/{id}",
            format!("/v1/rows/{row}"),
            None,
            Work,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/rows/actions",
            "/v1/rows/actions",
            Some(json!({ "actions": [] })),
            Work,
            Any,
        ),
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/done"),
            Some(json!({ "fence": 1 })),
            Work,
            Hidden,
        ),
        // --- configuration ---
        route(M::GET, "/v1/config", "/v1/config", None, Read, Any),
        route(
            M::PUT,
            "/v1/config",
            "/v1/config",
            Some(doc),
            Operate,
            Global,
        ),
        route(
            M::GET,
            "/v1/config/versions/{v}",
            "/v1/config/versions/0",
            None,
            Read,
            Any,
        ),
        // --- audit ---
        route(
            M::POST,
            "/v1/audit",
            "/v1/audit",
            Some(json!({ "action": "matrix.note", "detail": "x" })),
            AppendAudit,
            Org,
        ),
        route(
            M::GET,
            "/v1/audit",
            "/v1/audit?org=default",
            None,
            Read,
            Org,
        ),
        route(
            M::GET,
            "/v1/audit/anchor",
            "/v1/audit/anchor?org=default",
            None,
            Read,
            Org,
        ),
        route(
            M::GET,
            "/v1/audit/verify",
            "/v1/audit/verify?org=default",
            None,
            Read,
            Org,
        ),
        route(
            M::GET,
            "/v1/audit/search",
            "/v1/audit/search?org=default&actor=admin",
            None,
            Read,
            Org,
        ),
        route(
            M::POST,
            "/v1/audit/seal",
            "/v1/audit/seal",
            Some(json!({ "org": "matrix" })),
            Operate,
            Global,
        ),
        // --- state, reference data, retention ---
        // A namespace is its channel's by name (`own/…`): a scoped token lists its own.
        route(M::GET, "/v1/state", "/v1/state", None, Read, Any),
        route(
            M::GET,
            "/v1/state/{namespace}",
            format!("/v1/state/{OWN}%2Fns"),
            None,
            Read,
            Hidden,
        ),
        route(
            M::GET,
            "/v1/state/{namespace}/{key}",
            format!("/v1/state/{OWN}%2Fns/k"),
            None,
            Read,
            Hidden,
        ),
        route(M::GET, "/v1/reference", "/v1/reference", None, Read, Global),
        route(
            M::PUT,
            "/v1/reference/{name}",
            "/v1/reference/codes",
            Some(json!({ "version": 0, "rows": {} })),
            Reference,
            Global,
        ),
        route(
            M::GET,
            "/v1/reference/{name}",
            "/v1/reference/codes",
            None,
            Read,
            Global,
        ),
        route(
            M::POST,
            "/v1/retention/purge",
            "/v1/retention/purge",
            Some(json!({ "kind": "state", "older_than": 0 })),
            Purge,
            Global,
        ),
        // --- approvals ---
        route(
            M::POST,
            "/v1/approvals",
            "/v1/approvals",
            Some(json!({ "operation": "purge", "params": {} })),
            Operate,
            Global,
        ),
        route(
            M::GET,
            "/v1/approvals/{id}",
            "/v1/approvals/1",
            None,
            Read,
            Global,
        ),
        route(
            M::POST,
            "/v1/approvals/{id}/decide",
            "/v1/approvals/1/decide",
            Some(json!({ "approve": false })),
            Operate,
            Global,
        ),
        route(
            M::GET,
            "/v1/approvals",
            "/v1/approvals?status=pending",
            None,
            Read,
            Global,
        ),
        route(
            M::POST,
            "/v1/approvals/keyed",
            "/v1/approvals/keyed",
            Some(
                json!({ "key": "k-{me}", "operation": "purge", "params": "{}", "requester": "r", "requested_at": 1 }),
            ),
            KeyedApprovals,
            Global,
        ),
        route(
            M::GET,
            "/v1/approvals/keyed/{key}",
            "/v1/approvals/keyed/none",
            None,
            Read,
            Global,
        ),
        route(
            M::POST,
            "/v1/approvals/keyed/{key}/decide",
            "/v1/approvals/keyed/none/decide",
            Some(json!({ "status": "rejected", "decided_at": 1 })),
            KeyedApprovals,
            Global,
        ),
        // --- tokens ---
        route(M::GET, "/v1/tokens", "/v1/tokens", None, Admin, Global),
        route(
            M::POST,
            "/v1/tokens",
            "/v1/tokens",
            Some(json!({ "name": "made-{me}", "role": "viewer" })),
            Admin,
            Global,
        ),
        route(
            M::DELETE,
            "/v1/tokens/{name}",
            "/v1/tokens/nobody",
            None,
            Admin,
            Global,
        ),
        // --- owner names and engine node ids (docs/SPEC.md §9.8) ---
        route(
            M::GET,
            "/v1/owners/{owner}",
            "/v1/owners/matrix-reserved",
            None,
            Read,
            Global,
        ),
        route(
            M::PUT,
            "/v1/owners/{owner}",
            "/v1/owners/o-{me}",
            Some(json!({ "principal": "{me}" })),
            Admin,
            Global,
        ),
        route(
            M::DELETE,
            "/v1/owners/{owner}",
            "/v1/owners/o-{me}",
            None,
            Admin,
            Global,
        ),
        // --- the engine's users, roles, sessions ---
        route(
            M::POST,
            "/v1/users",
            "/v1/users",
            Some(json!({ "id": "u-{me}", "username": "user-{me}", "auth_provider": "local" })),
            EngineUsers,
            Global,
        ),
        route(M::GET, "/v1/users", "/v1/users", None, EngineUsers, Global),
        route(
            M::GET,
            "/v1/users/{id}",
            "/v1/users/nobody",
            None,
            EngineUsers,
            Global,
        ),
        route(
            M::DELETE,
            "/v1/users/{id}",
            "/v1/users/nobody",
            None,
            EngineUsers,
            Global,
        ),
        route(
            M::GET,
            "/v1/users/{id}/secrets",
            "/v1/users/nobody/secrets",
            None,
            EngineUsers,
            Global,
        ),
        route(
            M::GET,
            "/v1/users/{id}/roles",
            "/v1/users/nobody/roles",
            None,
            EngineUsers,
            Global,
        ),
        route(
            M::PUT,
            "/v1/users/{id}/roles",
            "/v1/users/nobody/roles",
            Some(json!({ "role_ids": [] })),
            EngineUsers,
            Global,
        ),
        route(
            M::GET,
            "/v1/users/{id}/sessions",
            "/v1/users/nobody/sessions",
            None,
            EngineUsers,
            Global,
        ),
        route(
            M::POST,
            "/v1/users/{id}/sessions/revoke",
            "/v1/users/nobody/sessions/revoke",
            Some(json!({})),
            EngineUsers,
            Global,
        ),
        route(
            M::POST,
            "/v1/users/{id}/sessions/cap",
            "/v1/users/nobody/sessions/cap",
            Some(json!({ "keep": 1 })),
            EngineUsers,
            Global,
        ),
        route(
            M::POST,
            "/v1/users/{id}/{change}",
            "/v1/users/nobody/disabled",
            Some(json!({ "disabled": true })),
            EngineUsers,
            Global,
        ),
        route(M::GET, "/v1/roles", "/v1/roles", None, EngineUsers, Global),
        route(
            M::PUT,
            "/v1/roles/{id}",
            "/v1/roles/matrix",
            Some(json!({ "display_name": "Matrix" })),
            EngineUsers,
            Global,
        ),
        route(
            M::GET,
            "/v1/directory-groups/{map}",
            "/v1/directory-groups/roles",
            None,
            EngineUsers,
            Global,
        ),
        route(
            M::PUT,
            "/v1/directory-groups/{map}",
            "/v1/directory-groups/roles",
            Some(json!({ "entries": [] })),
            EngineUsers,
            Global,
        ),
        route(
            M::POST,
            "/v1/sessions",
            "/v1/sessions",
            Some(json!({ "token_hash": hex64.clone(), "user_id": "nobody", "expires_at": 1 })),
            EngineUsers,
            Global,
        ),
        route(
            M::POST,
            "/v1/sessions/purge-expired",
            "/v1/sessions/purge-expired",
            None,
            EngineUsers,
            Global,
        ),
        route(
            M::GET,
            "/v1/sessions/{token_hash}",
            format!("/v1/sessions/{hex64}"),
            None,
            EngineUsers,
            Global,
        ),
        route(
            M::POST,
            "/v1/sessions/{token_hash}/{change}",
            format!("/v1/sessions/{hex64}/touch"),
            Some(json!({})),
            EngineUsers,
            Global,
        ),
        // --- engine coordination ---
        route(
            M::GET,
            "/v1/engine/nodes",
            "/v1/engine/nodes",
            None,
            Read,
            Global,
        ),
        route(
            M::PUT,
            "/v1/engine/nodes/{node_id}",
            "/v1/engine/nodes/n-{me}",
            Some(json!({})),
            Work,
            Global,
        ),
        route(
            M::DELETE,
            "/v1/engine/nodes/{node_id}",
            "/v1/engine/nodes/n-{me}",
            None,
            Work,
            Global,
        ),
        route(
            M::GET,
            "/v1/engine/leadership/{group}",
            "/v1/engine/leadership/g",
            None,
            Read,
            Global,
        ),
        route(
            M::POST,
            "/v1/engine/leadership/{group}",
            "/v1/engine/leadership/g-{me}",
            Some(json!({ "node_id": "n-{me}", "ttl_ms": 1000 })),
            Work,
            Global,
        ),
        route(
            M::POST,
            "/v1/engine/leadership/{group}/resign",
            "/v1/engine/leadership/g-{me}/resign",
            Some(json!({ "node_id": "n-{me}" })),
            Work,
            Global,
        ),
        route(
            M::GET,
            "/v1/engine/counters/{name}",
            "/v1/engine/counters/c",
            None,
            Read,
            Global,
        ),
        route(
            M::POST,
            "/v1/engine/counters/{name}",
            "/v1/engine/counters/c",
            None,
            Work,
            Global,
        ),
        route(
            M::GET,
            "/v1/engine/lanes/{owner}",
            "/v1/engine/lanes/o",
            None,
            Read,
            Global,
        ),
        // --- keys and the cluster ---
        route(
            M::POST,
            "/v1/keys/rotate",
            "/v1/keys/rotate",
            Some(json!({})),
            Admin,
            Global,
        ),
        route(M::GET, "/v1/cluster", "/v1/cluster", None, Read, Any),
        route(
            M::GET,
            "/v1/cluster/digest",
            "/v1/cluster/digest",
            None,
            Read,
            Any,
        ),
        route(
            M::POST,
            "/v1/cluster/snapshot",
            "/v1/cluster/snapshot",
            None,
            Admin,
            Global,
        ),
        route(
            M::GET,
            "/v1/cluster/snapshot",
            "/v1/cluster/snapshot",
            None,
            Admin,
            Global,
        ),
        route(
            M::POST,
            "/v1/cluster/leader",
            "/v1/cluster/leader",
            None,
            Admin,
            Global,
        ),
        route(
            M::GET,
            "/v1/cluster/log-format",
            "/v1/cluster/log-format",
            None,
            Read,
            Any,
        ),
        route(
            M::POST,
            "/v1/cluster/log-format",
            "/v1/cluster/log-format",
            Some(json!({ "format": 2 })),
            Admin,
            Global,
        ),
        route(
            M::POST,
            "/v1/cluster/learners",
            "/v1/cluster/learners",
            Some(json!({ "id": 9, "addr": "" })),
            Admin,
            Global,
        ),
        route(
            M::POST,
            "/v1/cluster/membership",
            "/v1/cluster/membership",
            Some(json!({ "voters": [] })),
            Admin,
            Global,
        ),
        // --- probes ---
        route(M::GET, "/healthz", "/healthz", None, Public, Any),
        route(M::GET, "/readyz", "/readyz", None, Public, Any),
        route(M::GET, "/metrics", "/metrics", None, Public, Any),
        route(M::GET, "/ui", "/ui", None, Public, Any),
        route(M::GET, "/openapi.json", "/openapi.json", None, Public, Any),
    ]
}

/// More calls of routes the table already has, each for one rule (docs/SPEC.md §9.4): the
/// same derivation of every cell, from the rule, not from what the server answers today.
fn rule_rows(f: &Fixture) -> Vec<Route> {
    use Level::*;
    use Method as M;
    use Reach::*;
    let row = f.row;
    let (claimed, fence) = f.claimed;
    vec![
        // §9.8 a row's claim is its principal's: another principal's act on it, with the very
        // fence, is an operator's (a transform of an outbound row then fails for its stage).
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{claimed}/transform"),
            Some(json!({ "fence": fence, "deliveries": [] })),
            Work,
            ForeignClaim,
        ),
        route(
            M::POST,
            "/v1/rows/actions",
            "/v1/rows/actions",
            Some(json!({ "actions": [{ "row": claimed, "action": "transform",
                                       "body": { "fence": fence, "deliveries": [] } }] })),
            Work,
            ForeignClaim,
        ),
        // §9.4 ids: every row action, and the batch, on a row of [`OWN`]: another channel's
        // row answers as a missing one (404), whatever the action.
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/route"),
            Some(json!({ "fence": 1, "handlers": [] })),
            Work,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/handoff"),
            Some(json!({ "fence": 1, "deliveries": [] })),
            Work,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/transform"),
            Some(json!({ "fence": 1, "deliveries": [] })),
            Work,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/response"),
            Some(json!({ "fence": 1, "body": "r" })),
            Work,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/fail"),
            Some(json!({ "fence": 1, "error": "e" })),
            Work,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/dead"),
            Some(json!({ "fence": 1, "error": "e" })),
            Work,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/reingress"),
            Some(json!({ "fence": 1, "loopback_channel": OWN })),
            Work,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/rows/actions",
            "/v1/rows/actions",
            Some(json!({ "actions": [{ "row": row, "action": "done", "body": { "fence": 1 } }] })),
            Work,
            Hidden,
        ),
        // §9.4 namespaces: a namespace bound to another channel, and an unbound one, are no
        // scoped token's to read or to write through a transform's state_ops.
        route(
            M::GET,
            "/v1/state/{namespace}",
            "/v1/state/third%2Fns",
            None,
            Read,
            HiddenFromScoped,
        ),
        route(
            M::GET,
            "/v1/state/{namespace}/{key}",
            "/v1/state/ns/k",
            None,
            Read,
            HiddenFromScoped,
        ),
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/transform"),
            Some(json!({ "fence": 1, "deliveries": [],
                         "state_ops": [{ "namespace": format!("{OTHER}/ns"), "key": "k", "value": 1 }] })),
            Work,
            NamespaceOnRow,
        ),
        route(
            M::POST,
            "/v1/rows/{id}/{action}",
            format!("/v1/rows/{row}/transform"),
            Some(json!({ "fence": 1, "deliveries": [],
                         "state_ops": [{ "namespace": format!("{OWN}/ns"), "key": "k", "value": 1 }] })),
            Work,
            Hidden,
        ),
        route(
            M::POST,
            "/v1/rows/actions",
            "/v1/rows/actions",
            Some(
                json!({ "actions": [{ "row": row, "action": "transform", "body":
                { "fence": 1, "deliveries": [],
                  "state_ops": [{ "namespace": "ns", "key": "k", "value": 1 }] } }] }),
            ),
            Work,
            NamespaceOnRow,
        ),
        // §9.8 names bound to principals: the bootstrap admin's engine node id (bound by its
        // heartbeat), and an owner name an admin reserved for another principal. Nobody else
        // heartbeats, campaigns or renews under them; only operators resign, leave or release
        // under them (the envelope's `as_operator`, audited).
        route(
            M::PUT,
            "/v1/engine/nodes/{node_id}",
            format!("/v1/engine/nodes/{ENGINE_NODE}"),
            Some(json!({})),
            Work,
            TakenName,
        ),
        route(
            M::POST,
            "/v1/engine/leadership/{group}",
            "/v1/engine/leadership/g-{me}",
            Some(json!({ "node_id": ENGINE_NODE, "ttl_ms": 1000 })),
            Work,
            TakenName,
        ),
        route(
            M::POST,
            "/v1/leases/renew",
            "/v1/leases/renew",
            Some(json!({ "owner": RESERVED_OWNER, "ids": [row], "ttl_ms": 1000 })),
            Work,
            TakenName,
        ),
        route(
            M::POST,
            "/v1/engine/leadership/{group}/resign",
            format!("/v1/engine/leadership/{ENGINE_GROUP}/resign"),
            Some(json!({ "node_id": ENGINE_NODE })),
            Work,
            ForeignName,
        ),
        route(
            M::DELETE,
            "/v1/engine/nodes/{node_id}",
            format!("/v1/engine/nodes/{ENGINE_NODE}"),
            None,
            Work,
            ForeignName,
        ),
        route(
            M::POST,
            "/v1/lanes/{stage}/{name}/release",
            format!("/v1/lanes/routed/{OWN}/release"),
            Some(json!({ "owner": RESERVED_OWNER })),
            Work,
            ForeignNameOnLane,
        ),
    ]
}

/// The bootstrap admin's engine node id and leadership group (bound to it by its heartbeat).
const ENGINE_NODE: &str = "matrix-engine";
const ENGINE_GROUP: &str = "matrix-group";
/// An owner name the bootstrap admin reserved for [`HOLDER`] ahead of use.
const RESERVED_OWNER: &str = "matrix-reserved";
const HOLDER: &str = "matrix-holder";

/// The names of [`rule_rows`]: the admin's node heartbeats and leads its group, and an owner
/// name is reserved for another principal.
async fn bind_names(api: &Api) {
    let r = api
        .put(&format!("/v1/engine/nodes/{ENGINE_NODE}"), json!({}))
        .await;
    ok(&r, 200);
    let r = api
        .post(
            &format!("/v1/engine/leadership/{ENGINE_GROUP}"),
            json!({ "node_id": ENGINE_NODE, "ttl_ms": LONG_TTL }),
        )
        .await;
    ok(&r, 200);
    assert_eq!(r.body["owner"], ENGINE_NODE);
    api.token(HOLDER, "engine", None).await;
    let r = api
        .put(
            &format!("/v1/owners/{RESERVED_OWNER}"),
            json!({ "principal": HOLDER }),
        )
        .await;
    ok(&r, 200);
}

/// The roles and what each may do (docs/SPEC.md §9.3, §9.7), stated here independently of the
/// server's own table.
const ROLES: [&str; 6] = [
    "admin", "operator", "worker", "viewer", "metadata", "engine",
];

fn role_may(role: &str, level: Level) -> bool {
    match level {
        Level::Public => true,
        Level::Read => true,
        Level::Bodies => role != "metadata",
        Level::Produce | Level::Work => {
            matches!(role, "admin" | "operator" | "worker" | "engine")
        }
        Level::Requeue
        | Level::Purge
        | Level::Reference
        | Level::AppendAudit
        | Level::KeyedApprovals => matches!(role, "admin" | "operator" | "engine"),
        Level::EngineUsers => matches!(role, "admin" | "engine"),
        Level::Operate => matches!(role, "admin" | "operator"),
        Level::Admin => role == "admin",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Unscoped,
    Own,
    Other,
}

/// What a cell must answer.
#[derive(Debug, PartialEq, Eq)]
enum Expect {
    /// Exactly this status (a refusal).
    Refused(u16),
    /// Anything but 401 and 403.
    Passes,
}

fn expect(r: &Route, role: &str, scope: Scope) -> Expect {
    if !role_may(role, r.level) {
        return Expect::Refused(403);
    }
    match (r.reach, scope) {
        (Reach::Global | Reach::Org, Scope::Own | Scope::Other) => Expect::Refused(403),
        (Reach::Channel, Scope::Other) => Expect::Refused(403),
        (Reach::Hidden, Scope::Other) => Expect::Refused(404),
        (Reach::HiddenFromScoped, Scope::Own | Scope::Other) => Expect::Refused(404),
        (Reach::NamespaceOnRow, Scope::Own) => Expect::Refused(404),
        (Reach::NamespaceOnRow, Scope::Other) => Expect::Refused(404),
        (Reach::ForeignClaim, Scope::Other) => Expect::Refused(404),
        (Reach::ForeignClaim, _) if !role_may(role, Level::Operate) => Expect::Refused(403),
        (Reach::TakenName, _) => Expect::Refused(403),
        (Reach::ForeignName, Scope::Own | Scope::Other) => Expect::Refused(403),
        (Reach::ForeignNameOnLane, Scope::Other) => Expect::Refused(403),
        (Reach::ForeignName | Reach::ForeignNameOnLane, _) if !role_may(role, Level::Operate) => {
            Expect::Refused(403)
        }
        _ => Expect::Passes,
    }
}

/// A batch of row actions answers each item as its own route would (a refused item is
/// `{"error", "status"}` inside a 200): the status of a one-item batch's refused item.
fn batch_item_status(resp: &Resp) -> Option<u16> {
    let results = resp.body.get("results")?.as_array()?;
    match results.as_slice() {
        [only] => only
            .get("status")?
            .as_u64()
            .and_then(|s| u16::try_from(s).ok()),
        _ => None,
    }
}

/// The routes the served OpenAPI document lists, as `METHOD template`.
async fn documented(api: &Api) -> BTreeSet<String> {
    let doc = api.get("/openapi.json").await;
    ok(&doc, 200);
    let mut out = BTreeSet::new();
    for (path, item) in doc.body["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            out.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    out
}

#[tokio::test]
async fn every_route_by_every_role_and_scope() {
    let api = start().await;
    let message = api.enqueue(OWN, "MSH|matrix").await;
    let row = {
        let r = api.get(&format!("/v1/messages/{message}")).await;
        ok(&r, 200);
        r.body["rows"][0]["id"].as_u64().expect("ingress row")
    };
    let mut fixture = Fixture {
        message,
        row,
        claimed: (0, 0),
    };
    let rows = table(&fixture);

    // The table and the document name the same routes.
    let in_table: BTreeSet<String> = rows
        .iter()
        .map(|r| format!("{} {}", r.method, r.template))
        .collect();
    assert_eq!(in_table.len(), rows.len(), "a route is in the table twice");
    let served = documented(&api).await;
    let missing: Vec<&String> = served.difference(&in_table).collect();
    assert!(
        missing.is_empty(),
        "routes without a rule in the matrix table: {missing:?}"
    );
    let unknown: Vec<&String> = in_table.difference(&served).collect();
    assert!(
        unknown.is_empty(),
        "table rows for routes the API does not serve: {unknown:?}"
    );

    // One token per role and scope.
    let mut callers: Callers = Vec::new();
    for role in ROLES {
        for (scope, channels) in [
            (Scope::Unscoped, None),
            (Scope::Own, Some([OWN])),
            (Scope::Other, Some([OTHER])),
        ] {
            let label = format!("m-{role}-{scope:?}").to_lowercase();
            let token = api
                .token(&label, role, channels.as_ref().map(|c| &c[..]))
                .await;
            callers.push((role, scope, label, token));
        }
    }

    let mut failures = Vec::new();
    let mut cells = 0;
    for r in &rows {
        judge(&api, &callers, r, &mut failures, &mut cells).await;
    }
    // The rule rows after the table, whose recovery cells take every claim back: the row the
    // admin holds is claimed now.
    fixture.claimed = claim_held_row(&api).await;
    bind_names(&api).await;
    for r in &rule_rows(&fixture) {
        judge(&api, &callers, r, &mut failures, &mut cells).await;
    }
    assert!(
        failures.is_empty(),
        "{} of {cells} cells wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(cells > 1000, "the matrix ran {cells} cells");
}

/// The callers of the matrix: role, scope, label, token.
type Callers = Vec<(&'static str, Scope, String, String)>;

/// Run one row's cells (no token, then every caller) and note each wrong answer.
async fn judge(
    api: &Api,
    callers: &Callers,
    r: &Route,
    failures: &mut Vec<String>,
    cells: &mut usize,
) {
    if r.level == Level::Public {
        let resp = api
            .call(r.method.clone(), &r.path, None, r.body.clone())
            .await;
        *cells += 1;
        if matches!(resp.status.as_u16(), 401 | 403) {
            failures.push(format!(
                "{} {} without a token: {}",
                r.method, r.path, resp.status
            ));
        }
        return;
    }
    // No token: 401 on every other route.
    let resp = api
        .call(r.method.clone(), &r.path, None, r.body.clone())
        .await;
    if resp.status.as_u16() != 401 {
        failures.push(format!(
            "{} {} without a token: {} (expected 401)",
            r.method, r.path, resp.status
        ));
    }
    for (role, scope, label, token) in callers {
        let body = r
            .body
            .as_ref()
            .map(|b| serde_json::from_str(&b.to_string().replace("{me}", label)).expect("json"));
        let path = r.path.replace("{me}", label);
        let resp = api.call(r.method.clone(), &path, Some(token), body).await;
        *cells += 1;
        let got = batch_item_status(&resp).unwrap_or(resp.status.as_u16());
        let want = expect(r, role, *scope);
        let fine = match want {
            Expect::Refused(s) => got == s,
            Expect::Passes => got != 401 && got != 403,
        };
        if !fine {
            failures.push(format!(
                "{} {path} as {role} ({scope:?}): {got}, expected {want:?}: {}",
                r.method,
                resp.text().chars().take(160).collect::<String>()
            ));
        }
    }
}

/// An outbound row of [`OWN`] claimed by the bootstrap admin: `(row id, fence)`.
async fn claim_held_row(api: &Api) -> (u64, u64) {
    let r = api
        .post(
            &format!("/v1/channels/{OWN}/messages"),
            json!({ "raw": "MSH|held", "deliveries": [{ "destination": "held", "payload": "p" }] }),
        )
        .await;
    ok(&r, 201);
    let r = api
        .post(
            "/v1/claims",
            json!({ "stage": "outbound", "limit": 1, "owner": "matrix-admin",
                    "ttl_ms": LONG_TTL, "channel": OWN, "destination": "held" }),
        )
        .await;
    ok(&r, 200);
    let item = &r.body["items"][0];
    (
        item["row_id"].as_u64().expect("row_id"),
        item["fence"].as_u64().expect("fence"),
    )
}

// --- what a call does, by role (docs/SPEC.md §9.8): the answers above say who may call a
// route; these cells say what the call then reaches, each expected value written from a rule ---

/// Whether a caller of `role` takes back claims of other principals (a reset, a recovery, a
/// dead-letter sweep): an operator's and an admin's proposals go as the envelope's `as_operator`; everyone
/// else's reach its own principal's claims (and unclaimed rows) only.
fn takes_every_claim(role: &str) -> bool {
    matches!(role, "admin" | "operator")
}

/// Each role (unscoped), on a cluster of its own, against another principal's claims:
/// - `POST /v1/leases/reset` and `/recover` and `POST /v1/dead-letters/sweep` take back the other
///   principal's in-flight row exactly when [`takes_every_claim`], and the caller's own always;
/// - `POST /v1/audit` with an `actor` records that actor with the caller's principal beside it;
/// - `POST /v1/messages/{id}/viewed` with an `actor` records `actor (via principal)`.
///
/// Membership's rules need a real cluster of three: `tests/membership_api.rs`.
#[tokio::test]
async fn every_role_reaches_what_the_rules_give_it() {
    let mut failures = Vec::new();
    let mut cells = 0;
    let mut check = |role: &str, what: &str, got: String, want: String| {
        cells += 1;
        if got != want {
            failures.push(format!("{role}: {what}: {got}, expected {want}"));
        }
    };
    for role in ROLES {
        let api = start().await;
        let me = api.token("me", role, None).await;
        let holder = api.token("holder", "worker", None).await;
        ok(
            &api.post("/v1/cluster/log-format", json!({ "format": 2 }))
                .await,
            200,
        );
        let claims = role_may(role, Level::Work);
        let status = |allowed: bool| if allowed { "200" } else { "403" }.to_string();

        for (route, body) in [
            ("/v1/leases/reset", json!({})),
            ("/v1/leases/recover", json!({ "owner": "me-recovered" })),
        ] {
            let (_, foreign, _) = claimed_ingress(&api, &holder, OWN, "holder-1").await;
            let own = if claims {
                Some(claimed_ingress(&api, &me, OWN, "me-1").await.1)
            } else {
                None
            };
            let r = api.post_as(&me, route, body).await;
            check(role, route, r.status.as_u16().to_string(), status(claims));
            let taken = claims && takes_every_claim(role);
            check(
                role,
                &format!("{route}: another principal's row"),
                claim_owner(&api, foreign).await.0,
                if taken { "pending" } else { "inflight" }.into(),
            );
            if let Some(own) = own {
                check(
                    role,
                    &format!("{route}: its own row"),
                    claim_owner(&api, own).await.0,
                    "pending".into(),
                );
            }
            // Leave nothing in flight for the next route.
            ok(&api.post("/v1/leases/reset", json!({})).await, 200);
        }

        api.message_at("effects-sweep", "gone").await;
        let r = api
            .post_as(
                &holder,
                "/v1/lanes/outbound/gone/claim",
                json!({ "owner": "holder-2", "ttl_ms": LONG_TTL }),
            )
            .await;
        let held = r.body["item"]["row_id"].as_u64().unwrap_or(0);
        let r = api
            .post_as(
                &me,
                "/v1/dead-letters/sweep",
                json!({ "stage": "outbound", "keep": [] }),
            )
            .await;
        let sweeps = role_may(role, Level::Requeue);
        check(role, "sweep", r.status.as_u16().to_string(), status(sweeps));
        check(
            role,
            "sweep: another principal's in-flight row",
            claim_owner(&api, held).await.0,
            if sweeps && takes_every_claim(role) {
                "dead"
            } else {
                "inflight"
            }
            .into(),
        );

        let appends = role_may(role, Level::AppendAudit);
        let r = api
            .post_as(
                &me,
                "/v1/audit",
                json!({ "action": "effects.note", "actor": "dr-house" }),
            )
            .await;
        check(
            role,
            "audit append",
            r.status.as_u16().to_string(),
            status(appends),
        );
        if appends {
            let rows = api.get("/v1/audit?org=default").await.body["rows"].clone();
            let row = rows
                .as_array()
                .into_iter()
                .flatten()
                .find(|row| row["action"] == "effects.note")
                .cloned()
                .unwrap_or(Value::Null);
            check(
                role,
                "audit row's actor and principal",
                format!("{} / {}", row["actor"], row["principal"]),
                "\"dr-house\" / \"me\"".into(),
            );
        }

        let mid = api.enqueue(OWN, "MSH|viewed").await;
        let r = api
            .post_as(
                &me,
                &format!("/v1/messages/{mid}/viewed"),
                json!({ "actor": "dr-house" }),
            )
            .await;
        check(role, "viewed", r.status.as_u16().to_string(), "200".into());
        let events = api.get(&format!("/v1/messages/{mid}")).await.body["events"].clone();
        let detail = events
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["event"] == "viewed")
            .map(|e| e["detail"].clone())
            .unwrap_or(Value::Null);
        check(
            role,
            "viewed event's detail",
            detail.to_string(),
            "\"dr-house (via me)\"".into(),
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {cells} effect cells wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(cells >= 6 * 8, "the effect matrix ran {cells} cells");
}
