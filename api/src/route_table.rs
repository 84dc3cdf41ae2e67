//! The route table: every public route of the API with the contract types it reads and
//! answers ([`api_routes`]), and the OpenAPI document built from it ([`openapi_document`]).

use crate::route_spec::{r, ApiRoute};
use crate::routes;
use axum::routing::{delete, get, post, put};

/// Every public route of the API, with the contract types it reads and answers.
pub fn api_routes() -> Vec<ApiRoute> {
    use raftlane_contract as c;
    use routes::{
        admin, approvals, audit, cluster, config, coordination, destinations, keys, messages,
        recovery, sessions, users, work,
    };
    vec![
        r("post", "/v1/channels/{channel}/messages", "Enqueue a message (JSON body or raw body with X- headers; Idempotency-Key)", post(messages::enqueue)).takes_json_or_text::<c::EnqueueRequest>().answers::<c::Enqueued>(),
        r("get", "/v1/messages", "List messages, newest first (channel, status, message_type, control_id, allowed_channels, limit, offset)", get(messages::list)).answers::<c::MessageList>(),
        r("get", "/v1/messages/count", "Count messages (the list's filters, without limit and offset)", get(messages::count)).answers::<c::Count>(),
        r("get", "/v1/messages/{id}", "A message with its events, rows and captured responses (by id, or by a re-ingested child's key)", get(messages::get_one)).answers::<c::MessageDetail>(),
        r("post", "/v1/messages/{id}/viewed", "Record that someone viewed a message (event viewed)", post(messages::viewed)).takes_optional::<c::ViewedRequest>().answers::<c::Viewed>(),
        r("post", "/v1/messages/{id}/replay", "Replay a message (recover stuck rows, else re-send done rows)", post(messages::replay)).answers::<c::Requeued>(),
        r("get", "/v1/dead-letters", "Dead rows with their messages' fields (stage=outbound|ingress|routed|response|all, default outbound; channel, destination, allowed_channels, limit, offset, order=row_id|newest_failed)", get(messages::dead_letters)).answers::<c::DeadLetters>(),
        r("get", "/v1/dead-letters/count", "Count dead rows (stage, default outbound; channel, destination, allowed_channels)", get(messages::dead_count)).answers::<c::Count>(),
        r("post", "/v1/dead-letters/sweep", "Dead-letter live rows whose destination (outbound) or handler (routed) is not in keep", post(recovery::sweep)).takes::<c::SweepRequest>().answers::<c::Swept>(),
        r("post", "/v1/dead-letters/replay", "Requeue dead outbound rows", post(messages::replay_dead)).takes_optional::<c::ReplayDeadRequest>().answers::<c::Requeued>(),
        r("get", "/v1/stats", "Row counts by stage and status", get(messages::stats)).answers::<c::Stats>(),
        r("get", "/v1/stats/storage", "Messages, events and the state's logical size (scans the state)", get(messages::storage)).answers::<c::StorageStats>(),
        r("get", "/v1/metrics/connections", "Inbound traffic per channel and outbound per destination (since, rate_window_ms; scans the state)", get(messages::connections)).answers::<c::ConnectionMetrics>(),
        r("get", "/v1/lanes", "Every lane with its depth, oldest row and holder, a page at a time (stage, limit, cursor)", get(work::lanes)).answers::<c::LaneList>(),
        r("get", "/v1/lanes/{stage}/{name}", "Lane depth, oldest row and holder", get(work::lane)).answers::<c::LaneStatus>(),
        r("post", "/v1/lanes/{stage}/{name}/claim", "Claim a lane's head (strict FIFO, lane lease)", post(work::claim_fifo)).takes::<c::FifoClaimRequest>().answers::<c::FifoClaim>(),
        r("post", "/v1/lanes/{stage}/{name}/release", "Give a lane lease back", post(work::release)).takes::<c::ReleaseRequest>().answers::<c::Released>(),
        r("post", "/v1/destinations/{destination}/pause", "Pause a destination: its rows stay, none is handed out (reason)", post(destinations::pause)).takes_optional::<c::PauseRequest>().answers::<c::PauseState>(),
        r("post", "/v1/destinations/{destination}/resume", "Resume a paused destination", post(destinations::resume)).answers::<c::PauseState>(),
        r("get", "/v1/destinations/paused", "Every paused destination, who paused it, when and why", get(destinations::paused)).answers::<c::PausedDestinations>(),
        r("post", "/v1/lanes/outbound/{dest}/cancel", "Cancel pending outbound rows of a destination", post(work::cancel)).takes_optional::<c::CancelRequest>().answers::<c::Cancelled>(),
        r("post", "/v1/claims", "Claim due rows of a stage (unordered)", post(work::claim_ready)).takes::<c::ClaimRequest>().answers::<c::Claimed>(),
        r("post", "/v1/leases/renew", "Renew an owner's row and lane leases", post(work::renew)).takes::<c::RenewRequest>().answers::<c::Renewed>(),
        r("post", "/v1/leases/reclaim", "In-flight rows whose lease expired back to pending (stage)", post(recovery::reclaim)).takes_optional::<c::StageScope>().answers::<c::Reclaimed>(),
        r("post", "/v1/leases/reset", "Every in-flight row back to pending, whatever its lease (stage; single-process start-up)", post(recovery::reset)).takes_optional::<c::StageScope>().answers::<c::ResetRows>(),
        r("post", "/v1/leases/recover", "A new leader takes back other owners' in-flight rows and lane leases", post(recovery::recover)).takes::<c::RecoverRequest>().answers::<c::Recovered>(),
        r("get", "/v1/rows/{id}", "A work row as it is now", get(work::get_row)).answers::<c::RowDetail>(),
        r("post", "/v1/rows/actions", "Many fenced row actions in one request ({actions: [{row, action, body}]}), answered one by one in order", post(work::row_actions)).takes::<c::RowActionsRequest>().answers::<c::RowActionResults>(),
        r("post", "/v1/rows/{id}/{action}", "Fenced row action: route, handoff, transform, done (with claim_next: also claim the lane's next row), response, fail, dead, reingress", post(work::row_action)).takes::<c::RowActionBody>().answers::<c::RowAnswer>(),
        r("get", "/v1/config", "The current configuration and its version", get(config::get_current)).answers::<c::ConfigAnswer>(),
        r("put", "/v1/config", "Replace the configuration (If-Match: version; 412 on mismatch)", put(config::put_config)).takes::<c::config::ConfigRequest>().answers::<c::ConfigWritten>(),
        r("get", "/v1/config/versions/{v}", "A configuration version", get(config::get_version)).answers::<c::ConfigAnswer>(),
        r("post", "/v1/audit", "Append an audit row", post(audit::append)).takes::<c::AuditAppendRequest>().answers::<c::AuditAppended>(),
        r("get", "/v1/audit", "List an org's audit rows (org required)", get(audit::list)).answers::<c::AuditRows>(),
        r("get", "/v1/audit/anchor", "An org's chain anchor (count, head)", get(audit::anchor)).answers::<c::AuditAnchor>(),
        r("get", "/v1/audit/verify", "Verify an org's chain, optionally against an anchor (count, head)", get(audit::verify)).answers::<c::AuditVerification>(),
        r("get", "/v1/audit/search", "An actor's audit rows, newest first (org, actor, action_prefix, limit)", get(audit::search)).answers::<c::AuditRows>(),
        r("post", "/v1/audit/seal", "Seal an org's audit era", post(audit::seal)).takes::<c::AuditSealRequest>().answers::<c::AuditAppended>(),
        r("get", "/v1/state", "Every transform-state namespace with its version", get(admin::namespaces)).answers::<c::NamespaceList>(),
        r("get", "/v1/state/{namespace}", "A transform-state namespace's version (entries=true: with its entries)", get(admin::namespace)).answers::<c::NamespaceVersion>(),
        r("get", "/v1/state/{namespace}/{key}", "A transform-state entry", get(admin::state_entry)).answers::<c::StateValue>(),
        r("get", "/v1/reference", "Every reference set's version, label, time and size", get(admin::references)).answers::<c::ReferenceList>(),
        r("put", "/v1/reference/{name}", "Replace a reference snapshot (version: a number, or a text label)", put(admin::put_reference)).takes::<c::ReferenceRequest>().answers::<c::ReferenceWritten>(),
        r("get", "/v1/reference/{name}", "A reference snapshot", get(admin::get_reference)).answers::<c::Reference>(),
        r("post", "/v1/retention/purge", "Purge bodies, dead letters or state older than an age (older_than_ms) or a cutoff (older_than)", post(admin::purge)).takes::<c::PurgeRequest>().answers::<c::Purged>(),
        r("post", "/v1/approvals", "Request an approval", post(approvals::create_approval)).takes::<c::ApprovalRequest>().answers::<c::ApprovalCreated>(),
        r("get", "/v1/approvals/{id}", "An approval", get(approvals::get_approval)).answers::<c::ApprovalView>(),
        r("post", "/v1/approvals/{id}/decide", "Approve or reject (once, by another principal)", post(approvals::decide_approval)).takes::<c::DecideRequest>().answers::<c::ApprovalDecided>(),
        r("get", "/v1/approvals", "Approvals pending and unexpired at the request's time, newest first (status=pending, limit)", get(approvals::list)).answers::<c::ApprovalList>(),
        r("post", "/v1/approvals/keyed", "Record an approval under the caller's key, requester and times", post(approvals::create_keyed)).takes::<c::KeyedApprovalRequest>().answers::<c::ApprovalCreated>(),
        r("get", "/v1/approvals/keyed/{key}", "An approval by the caller's key (status as stored)", get(approvals::get_keyed)).answers::<c::ApprovalView>(),
        r("post", "/v1/approvals/keyed/{key}/decide", "Decide an approval by key: approved, rejected or expired (409 already_decided)", post(approvals::decide_keyed)).takes::<c::KeyedDecideRequest>().answers::<c::KeyedDecided>(),
        r("get", "/v1/tokens", "List API principals", get(admin::list_tokens)).answers::<c::TokenList>(),
        r("post", "/v1/tokens", "Create or rotate a principal's token (shown once)", post(admin::create_token)).takes::<c::TokenRequest>().answers::<c::TokenCreated>(),
        r("delete", "/v1/tokens/{name}", "Revoke a principal", delete(admin::revoke_token)).answers::<c::Revoked>(),
        r("get", "/v1/owners/{owner}", "The principal a lease owner name or engine node id is bound to (null: nobody's yet)", get(admin::get_owner)).answers::<c::OwnerBinding>(),
        r("put", "/v1/owners/{owner}", "Bind an owner name or engine node id to a principal ahead of its first use (admin; 409 when bound to another)", put(admin::reserve_owner)).takes::<c::OwnerReservation>().answers::<c::OwnerBinding>(),
        r("delete", "/v1/owners/{owner}", "Release an owner name's or engine node id's binding (admin)", delete(admin::release_owner)).answers::<c::OwnerBinding>(),
        r("post", "/v1/users", "Create an engine user (admin; 409 already_exists when the id or username is taken)", post(users::create_user)).takes::<c::CreateUserRequest>().answers::<c::UserCreated>(),
        r("get", "/v1/users", "Engine users by username (username, limit; count = matches before the limit)", get(users::list_users)).answers::<c::UserList>(),
        r("get", "/v1/users/{id}", "An engine user (without its second-factor secrets)", get(users::get_user)).answers::<c::UserView>(),
        r("delete", "/v1/users/{id}", "Delete an engine user with its role assignments and sessions", delete(users::delete_user)).answers::<c::UserDeleted>(),
        r("get", "/v1/users/{id}/secrets", "An engine user's TOTP secret and recovery-code hashes", get(users::user_secrets)).answers::<c::UserSecrets>(),
        r("get", "/v1/users/{id}/roles", "An engine user's roles", get(users::user_roles)).answers::<c::UserRoles>(),
        r("put", "/v1/users/{id}/roles", "Replace an engine user's roles (404 for an unknown user or role)", put(users::set_user_roles)).takes::<c::UserRolesRequest>().answers::<c::RolesAssigned>(),
        r("get", "/v1/users/{id}/sessions", "An engine user's live sessions at the request's time", get(sessions::of_user)).answers::<c::SessionList>(),
        r("post", "/v1/users/{id}/sessions/revoke", "Revoke an engine user's sessions, all or all but one (except_token_hash)", post(sessions::revoke_of_user)).takes_optional::<c::RevokeSessionsRequest>().answers::<c::SessionsRevoked>(),
        r("post", "/v1/users/{id}/sessions/cap", "Revoke all but an engine user's newest keep sessions", post(sessions::cap)).takes::<c::SessionCapRequest>().answers::<c::SessionsRevoked>(),
        r("post", "/v1/users/{id}/{change}", "Change an engine user: password, disabled, profile, totp-secret, totp-enable, totp-disable, login-success, login-failure, channel-scope, consume", post(users::change_user)).takes::<c::UserChangeBody>().answers::<c::UserChanged>(),
        r("get", "/v1/roles", "The engine's roles", get(users::list_roles)).answers::<c::RoleList>(),
        r("put", "/v1/roles/{id}", "Create or replace an engine role", put(users::put_role)).takes::<c::RoleRequest>().answers::<c::RoleWritten>(),
        r("get", "/v1/directory-groups/{map}", "A directory-group map (roles or channels); groups=a,b also resolves groups", get(users::group_map)).answers::<c::GroupMap>(),
        r("put", "/v1/directory-groups/{map}", "Replace a directory-group map (roles or channels)", put(users::put_group_map)).takes::<c::GroupMapRequest>().answers::<c::GroupMapWritten>(),
        r("post", "/v1/sessions", "Create an engine session (by token hash; 404 unknown user, 409 hash in use)", post(sessions::create)).takes::<c::CreateSessionRequest>().answers::<c::SessionCreated>(),
        r("post", "/v1/sessions/purge-expired", "Delete the sessions expired before the request's time", post(sessions::purge_expired)).takes_optional::<c::NoChangeBody>().answers::<c::SessionsPurged>(),
        r("get", "/v1/sessions/{token_hash}", "An engine session", get(sessions::get_one)).answers::<c::SessionView>(),
        r("post", "/v1/sessions/{token_hash}/{change}", "Change a session: touch, reauth, mfa-verified, revoke", post(sessions::change)).takes::<c::SessionChangeBody>().answers::<c::SessionChanged>(),
        r("get", "/v1/engine/nodes", "The engine processes' registry, with the time of the read", get(coordination::nodes)).answers::<c::EngineNodes>(),
        r("put", "/v1/engine/nodes/{node_id}", "An engine process's heartbeat (registers it)", put(coordination::heartbeat)).takes_optional::<c::HeartbeatRequest>().answers::<c::HeartbeatAck>(),
        r("delete", "/v1/engine/nodes/{node_id}", "An engine process stops cleanly (left; gives up its leadership)", delete(coordination::leave)).answers::<c::NodeLeft>(),
        r("get", "/v1/engine/leadership/{group}", "A group's leadership lease", get(coordination::leadership)).answers::<c::Leadership>(),
        r("post", "/v1/engine/leadership/{group}", "Take or renew a group's leadership lease; answers the lease, whoever holds it", post(coordination::campaign)).takes::<c::CampaignRequest>().answers::<c::Leadership>(),
        r("post", "/v1/engine/leadership/{group}/resign", "Give a group's leadership up", post(coordination::resign)).takes::<c::ResignRequest>().answers::<c::Resigned>(),
        r("get", "/v1/engine/counters/{name}", "A shared counter", get(coordination::counter)).answers::<c::CounterValue>(),
        r("post", "/v1/engine/counters/{name}", "Add one to a shared counter", post(coordination::bump)).answers::<c::CounterValue>(),
        r("get", "/v1/engine/lanes/{owner}", "The lanes whose lease owner holds now", get(coordination::held_lanes)).answers::<c::HeldLanes>(),
        r("post", "/v1/keys/rotate", "Re-encrypt every covered value under the active key (admin; 409 names an undecryptable value)", post(keys::rotate)).takes_optional::<c::RotateRequest>().answers::<c::Rotated>(),
        r("get", "/v1/cluster", "Cluster status: leader, term, indexes, membership", get(cluster::status)).answers::<c::ClusterStatus>(),
        r("get", "/v1/cluster/digest", "This node's state digest and applied index", get(cluster::digest)).answers::<c::StateDigest>(),
        r("get", "/v1/cluster/snapshot", "A backup: this node catches up with the leader's commit, takes a snapshot and streams its file (admin; the index in x-raftlane-snapshot-index)", get(cluster::download_snapshot)),
        r("post", "/v1/cluster/snapshot", "This node builds a snapshot covering everything it has applied, and answers its index", post(cluster::snapshot)).answers::<c::SnapshotTaken>(),
        r("post", "/v1/cluster/leader", "Hand leadership to a voter (to; none: the best placed one), through the leader", post(cluster::transfer_leader)).takes_optional::<c::LeaderTransferRequest>().answers::<c::LeaderTransferred>(),
        r("get", "/v1/cluster/log-format", "The log format the cluster writes and the formats this node's build reads", get(cluster::log_format)).answers::<c::LogFormatStatus>(),
        r("post", "/v1/cluster/log-format", "Raise the cluster's log format once every member reads it: the end of a rolling upgrade (admin)", post(cluster::raise_log_format)).takes::<c::LogFormatRequest>().answers::<c::LogFormatStatus>(),
        r("post", "/v1/cluster/learners", "Add a learner node", post(cluster::add_learner)).takes::<c::LearnerRequest>().answers::<c::Ack>(),
        r("post", "/v1/cluster/membership", "Change the voter set", post(cluster::change_membership)).takes::<c::MembershipRequest>().answers::<c::Ack>(),
        r("get", "/healthz", "Liveness", get(cluster::healthz)).answers::<c::Health>(),
        r("get", "/readyz", "Readiness (leader known, self-checks passed)", get(cluster::readyz)).answers::<c::Readiness>(),
        r("get", "/metrics", "Prometheus metrics", get(cluster::metrics)),
        r("get", "/openapi.json", "This document", get(cluster::openapi)).answers::<c::OpenApiDocument>(),
        r("get", "/ui", "The operator's page: HTML whose script reads this API with the token typed into it", get(crate::ui::page)),
    ]
}

/// The OpenAPI document of [`api_routes`].
pub fn openapi_document() -> serde_json::Value {
    crate::openapi::document(&api_routes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route_spec::RouteBody;
    use serde_json::{json, Value};

    fn document() -> Value {
        openapi_document()
    }

    #[test]
    fn statuses_follow_the_route() {
        let doc = document();
        let statuses = |method: &str, path: &str| -> Vec<String> {
            doc["paths"][path][method]["responses"]
                .as_object()
                .unwrap_or_else(|| panic!("{method} {path} documented"))
                .keys()
                .cloned()
                .collect()
        };
        let enqueue = statuses("post", "/v1/channels/{channel}/messages");
        assert!(enqueue.contains(&"201".into()) && enqueue.contains(&"413".into()));
        assert!(statuses("post", "/v1/tokens").contains(&"201".into()));
        let put_config = statuses("put", "/v1/config");
        assert!(put_config.contains(&"412".into()), "{put_config:?}");
        assert!(!statuses("get", "/v1/config").contains(&"412".into()));
        assert!(!statuses("get", "/v1/messages").contains(&"413".into()));
        let healthz = statuses("get", "/healthz");
        assert!(!healthz.contains(&"401".into()), "{healthz:?}");
        assert!(statuses("get", "/v1/stats").contains(&"401".into()));
    }

    #[test]
    fn every_write_documents_the_request_id_header_and_no_read_does() {
        let doc = document();
        let mut writes = 0;
        for route in api_routes().into_iter().filter(|r| r.auth) {
            let params = doc["paths"][route.path][route.method]["parameters"].clone();
            let has = params
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == "Request-Id"));
            assert_eq!(
                has,
                route.method != "get",
                "{} {}",
                route.method,
                route.path
            );
            writes += usize::from(has);
        }
        assert!(writes > 10, "only {writes} writes documented");
    }
    /// The `$ref` a schema points at, if it resolves in the document's components.
    fn resolves(doc: &Value, schema: &Value) -> Result<String, String> {
        let r = schema["$ref"]
            .as_str()
            .ok_or_else(|| format!("not a $ref: {schema}"))?;
        let name = r
            .strip_prefix("#/components/schemas/")
            .ok_or_else(|| format!("not a component: {r}"))?;
        if doc["components"]["schemas"][name].is_object() {
            Ok(name.to_string())
        } else {
            Err(format!("{r} does not resolve"))
        }
    }

    #[test]
    fn every_json_body_and_every_2xx_answer_has_a_resolving_schema() {
        let doc = document();
        let mut bodies = 0;
        for route in api_routes() {
            let op = &doc["paths"][route.path][route.method];
            let at = format!("{} {}", route.method, route.path);
            match route.body {
                RouteBody::None => assert!(op.get("requestBody").is_none(), "{at}"),
                _ => {
                    let schema = &op["requestBody"]["content"]["application/json"]["schema"];
                    let name = resolves(&doc, schema).unwrap_or_else(|e| panic!("{at}: {e}"));
                    assert!(!name.is_empty());
                    bodies += 1;
                }
            }
            let responses = op["responses"].as_object().expect("responses");
            let mut ok = 0;
            for (status, response) in responses.iter().filter(|(s, _)| s.starts_with('2')) {
                ok += 1;
                if route.answer.is_none() {
                    let media = if route.path == "/ui" {
                        "text/html"
                    } else {
                        "text/plain"
                    };
                    assert!(response["content"][media].is_object(), "{at}");
                    continue;
                }
                let schema = &response["content"]["application/json"]["schema"];
                resolves(&doc, schema).unwrap_or_else(|e| panic!("{at} {status}: {e}"));
            }
            assert!(ok > 0, "{at} documents no 2xx");
            for (status, response) in responses.iter().filter(|(s, _)| !s.starts_with('2')) {
                let schema = &response["content"]["application/json"]["schema"];
                resolves(&doc, schema).unwrap_or_else(|e| panic!("{at} {status}: {e}"));
            }
        }
        assert!(bodies >= 20, "only {bodies} request bodies documented");
    }

    #[test]
    fn every_ref_in_the_document_resolves() {
        fn walk(v: &Value, doc: &Value, at: &str) {
            match v {
                Value::Object(map) => {
                    if map.contains_key("$ref") {
                        resolves(doc, v).unwrap_or_else(|e| panic!("{at}: {e}"));
                    }
                    for (k, child) in map {
                        walk(child, doc, &format!("{at}/{k}"));
                    }
                }
                Value::Array(items) => {
                    for (i, child) in items.iter().enumerate() {
                        walk(child, doc, &format!("{at}/{i}"));
                    }
                }
                _ => {}
            }
        }
        let doc = document();
        walk(&doc, &doc, "");
        // The request schemas were all moved into the components.
        assert!(doc["components"].get("requestSchemas").is_none());
        assert!(doc["components"]["schemas"]["Error"].is_object());
    }

    /// A body the server refuses is refused by the schema too: unknown members, missing
    /// required ones.
    #[test]
    fn request_schemas_refuse_what_the_server_refuses() {
        use raftlane_contract::schema::conforms;
        let doc = document();
        let components = &doc["components"]["schemas"];
        let body = |method: &str, path: &str| {
            doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
                .clone()
        };
        let claim = body("post", "/v1/lanes/{stage}/{name}/claim");
        assert!(conforms(&json!({ "owner": "w", "ttl_ms": 5 }), &claim, components).is_ok());
        assert!(conforms(&json!({ "owner": "w" }), &claim, components).is_err());
        assert!(conforms(
            &json!({ "owner": "w", "ttl_ms": 5, "x": 1 }),
            &claim,
            components
        )
        .is_err());
        // No member of the configuration is required in a request, though every one is sent.
        let config = body("put", "/v1/config");
        assert!(conforms(&json!({}), &config, components).is_ok());
        let answer = &doc["paths"]["/v1/config"]["get"]["responses"]["200"]["content"]
            ["application/json"]["schema"];
        let sent = json!({ "config": {}, "set_at": 1, "set_by": "a", "version": 1 });
        assert!(
            conforms(&sent, answer, components).is_err(),
            "config members are sent"
        );
    }
}
