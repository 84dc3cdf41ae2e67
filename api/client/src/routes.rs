//! Every route the client calls, once: each method of [`crate::Client`] sends its request
//! through one of these constants, and [`ROUTES`] lists them all, so a test can hold the list
//! against the server's route table and the Python client's (`tests/client_routes.rs`).
//!
//! The number after each name is how many path segments its template takes
//! ([`Endpoint`]); the build stops when it disagrees with the template.

use crate::route::{Endpoint, Route, Verb};

/// Declares each route as a constant and collects them all in [`ROUTES`], so that no route can
/// be declared without being listed.
macro_rules! routes {
    ($( $(#[$doc:meta])* $name:ident: $n:literal = $verb:ident $path:literal; )*) => {
        $(
            $(#[$doc])*
            pub const $name: Endpoint<$n> = Endpoint::new(Verb::$verb, $path);
        )*
        /// Every route the client calls, in the order declared.
        pub const ROUTES: &[Route] = &[$($name.route,)*];
    };
}

routes! {
    // --- messages (client/messages.rs) ---
    ENQUEUE: 1 = Post "/v1/channels/{channel}/messages";
    MESSAGES: 0 = Get "/v1/messages";
    MESSAGES_COUNT: 0 = Get "/v1/messages/count";
    MESSAGE: 1 = Get "/v1/messages/{id}";
    MESSAGE_VIEWED: 1 = Post "/v1/messages/{id}/viewed";
    MESSAGE_REPLAY: 1 = Post "/v1/messages/{id}/replay";
    DEAD_LETTERS: 0 = Get "/v1/dead-letters";
    DEAD_LETTERS_COUNT: 0 = Get "/v1/dead-letters/count";
    DEAD_LETTERS_REPLAY: 0 = Post "/v1/dead-letters/replay";
    STATS: 0 = Get "/v1/stats";

    // --- the dashboard's figures (client/dashboard.rs) ---
    STORAGE_STATS: 0 = Get "/v1/stats/storage";
    CONNECTION_METRICS: 0 = Get "/v1/metrics/connections";

    // --- claims, lanes and leases (client/work.rs) ---
    LANES: 0 = Get "/v1/lanes";
    LANE: 2 = Get "/v1/lanes/{stage}/{name}";
    LANE_CLAIM: 2 = Post "/v1/lanes/{stage}/{name}/claim";
    LANE_RELEASE: 2 = Post "/v1/lanes/{stage}/{name}/release";
    OUTBOUND_CANCEL: 1 = Post "/v1/lanes/outbound/{dest}/cancel";
    CLAIMS: 0 = Post "/v1/claims";
    LEASES_RENEW: 0 = Post "/v1/leases/renew";

    // --- row reads and fenced row actions (client/rows.rs) ---
    ROW: 1 = Get "/v1/rows/{id}";
    ROW_ACTIONS: 0 = Post "/v1/rows/actions";
    ROW_ACTION: 2 = Post "/v1/rows/{id}/{action}";

    // --- taking work back (client/recovery.rs) ---
    LEASES_RECLAIM: 0 = Post "/v1/leases/reclaim";
    LEASES_RESET: 0 = Post "/v1/leases/reset";
    LEASES_RECOVER: 0 = Post "/v1/leases/recover";
    DEAD_LETTERS_SWEEP: 0 = Post "/v1/dead-letters/sweep";

    // --- pausing destinations (client/destinations.rs) ---
    DESTINATION_PAUSE: 1 = Post "/v1/destinations/{destination}/pause";
    DESTINATION_RESUME: 1 = Post "/v1/destinations/{destination}/resume";
    DESTINATIONS_PAUSED: 0 = Get "/v1/destinations/paused";

    // --- configuration (client/config.rs) ---
    CONFIG: 0 = Get "/v1/config";
    CONFIG_PUT: 0 = Put "/v1/config";
    CONFIG_VERSION: 1 = Get "/v1/config/versions/{v}";

    // --- the audit chain (client/audit.rs) ---
    AUDIT_APPEND: 0 = Post "/v1/audit";
    AUDIT_ROWS: 0 = Get "/v1/audit";
    AUDIT_ANCHOR: 0 = Get "/v1/audit/anchor";
    AUDIT_VERIFY: 0 = Get "/v1/audit/verify";
    AUDIT_SEARCH: 0 = Get "/v1/audit/search";
    AUDIT_SEAL: 0 = Post "/v1/audit/seal";

    // --- transform state, reference sets, retention (client/admin.rs) ---
    STATE_NAMESPACES: 0 = Get "/v1/state";
    STATE_NAMESPACE: 1 = Get "/v1/state/{namespace}";
    STATE_ENTRY: 2 = Get "/v1/state/{namespace}/{key}";
    REFERENCES: 0 = Get "/v1/reference";
    REFERENCE_PUT: 1 = Put "/v1/reference/{name}";
    REFERENCE: 1 = Get "/v1/reference/{name}";
    RETENTION_PURGE: 0 = Post "/v1/retention/purge";

    // --- approvals (client/approvals.rs) ---
    APPROVAL_CREATE: 0 = Post "/v1/approvals";
    APPROVAL: 1 = Get "/v1/approvals/{id}";
    APPROVAL_DECIDE: 1 = Post "/v1/approvals/{id}/decide";
    APPROVALS: 0 = Get "/v1/approvals";
    KEYED_APPROVAL_CREATE: 0 = Post "/v1/approvals/keyed";
    KEYED_APPROVAL: 1 = Get "/v1/approvals/keyed/{key}";
    KEYED_APPROVAL_DECIDE: 1 = Post "/v1/approvals/keyed/{key}/decide";

    // --- principals and owner names (client/tokens.rs) ---
    TOKENS: 0 = Get "/v1/tokens";
    TOKEN_CREATE: 0 = Post "/v1/tokens";
    TOKEN_REVOKE: 1 = Delete "/v1/tokens/{name}";
    OWNER: 1 = Get "/v1/owners/{owner}";
    OWNER_RESERVE: 1 = Put "/v1/owners/{owner}";
    OWNER_RELEASE: 1 = Delete "/v1/owners/{owner}";

    // --- the engine's users, roles and directory groups (client/users.rs) ---
    USER_CREATE: 0 = Post "/v1/users";
    USERS: 0 = Get "/v1/users";
    USER: 1 = Get "/v1/users/{id}";
    USER_DELETE: 1 = Delete "/v1/users/{id}";
    USER_SECRETS: 1 = Get "/v1/users/{id}/secrets";
    USER_ROLES: 1 = Get "/v1/users/{id}/roles";
    USER_ROLES_PUT: 1 = Put "/v1/users/{id}/roles";
    USER_CHANGE: 2 = Post "/v1/users/{id}/{change}";
    ROLES: 0 = Get "/v1/roles";
    ROLE_PUT: 1 = Put "/v1/roles/{id}";
    GROUP_MAP: 1 = Get "/v1/directory-groups/{map}";
    GROUP_MAP_PUT: 1 = Put "/v1/directory-groups/{map}";

    // --- the engine's sessions (client/sessions.rs) ---
    USER_SESSIONS: 1 = Get "/v1/users/{id}/sessions";
    USER_SESSIONS_REVOKE: 1 = Post "/v1/users/{id}/sessions/revoke";
    USER_SESSIONS_CAP: 1 = Post "/v1/users/{id}/sessions/cap";
    SESSION_CREATE: 0 = Post "/v1/sessions";
    SESSIONS_PURGE_EXPIRED: 0 = Post "/v1/sessions/purge-expired";
    SESSION: 1 = Get "/v1/sessions/{token_hash}";
    SESSION_CHANGE: 2 = Post "/v1/sessions/{token_hash}/{change}";

    // --- engine coordination (client/coordination.rs) ---
    ENGINE_NODES: 0 = Get "/v1/engine/nodes";
    ENGINE_HEARTBEAT: 1 = Put "/v1/engine/nodes/{node_id}";
    ENGINE_LEAVE: 1 = Delete "/v1/engine/nodes/{node_id}";
    LEADERSHIP: 1 = Get "/v1/engine/leadership/{group}";
    LEADERSHIP_CAMPAIGN: 1 = Post "/v1/engine/leadership/{group}";
    LEADERSHIP_RESIGN: 1 = Post "/v1/engine/leadership/{group}/resign";
    COUNTER: 1 = Get "/v1/engine/counters/{name}";
    COUNTER_BUMP: 1 = Post "/v1/engine/counters/{name}";
    HELD_LANES: 1 = Get "/v1/engine/lanes/{owner}";

    // --- encryption at rest (client/keys.rs) ---
    KEYS_ROTATE: 0 = Post "/v1/keys/rotate";

    // --- the cluster (client/cluster.rs; the backup download in client/backup.rs) ---
    CLUSTER: 0 = Get "/v1/cluster";
    CLUSTER_DIGEST: 0 = Get "/v1/cluster/digest";
    SNAPSHOT_DOWNLOAD: 0 = Get "/v1/cluster/snapshot";
    SNAPSHOT_TAKE: 0 = Post "/v1/cluster/snapshot";
    LEADER_TRANSFER: 0 = Post "/v1/cluster/leader";
    LOG_FORMAT: 0 = Get "/v1/cluster/log-format";
    LOG_FORMAT_RAISE: 0 = Post "/v1/cluster/log-format";
    LEARNER_ADD: 0 = Post "/v1/cluster/learners";
    MEMBERSHIP: 0 = Post "/v1/cluster/membership";

    // --- unauthenticated probes and documents (client/probes.rs) ---
    HEALTHZ: 0 = Get "/healthz";
    READYZ: 0 = Get "/readyz";
    METRICS: 0 = Get "/metrics";
    OPENAPI: 0 = Get "/openapi.json";
    OPERATOR_PAGE: 0 = Get "/ui";
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn each_route_is_listed_once() {
        let distinct: BTreeSet<&Route> = ROUTES.iter().collect();
        assert_eq!(distinct.len(), ROUTES.len(), "a route is declared twice");
    }
}
