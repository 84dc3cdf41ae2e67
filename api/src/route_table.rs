//! The route table: every public route of the API with the contract types it reads and
//! answers ([`api_routes`]), and the OpenAPI document built from it ([`openapi_document`]).
//! A route's query and body are read off its handler's signature (`crate::route_spec::Reads`);
//! only the raw bodies a handler parses itself are named here (`takes…`).

use crate::route_spec::{r, ApiRoute, Verb::*};
use crate::routes;

/// Every public route of the API, with the contract types it reads and answers.
pub fn api_routes() -> Vec<ApiRoute> {
    use raftlane_contract as c;
    use routes::{
        admin, approvals, audit, cluster, config, coordination, destinations, keys, messages,
        recovery, sessions, users, work,
    };
    vec![
        r(Post, "/v1/channels/{channel}/messages", "Enqueue a message (JSON body or raw body with X- headers; Idempotency-Key)", messages::enqueue).takes_json_or_text::<c::EnqueueRequest>().answers::<c::Enqueued>(),
        r(Get, "/v1/messages", "List messages, newest first (channel, status, message_type, control_id, allowed_channels, limit, offset)", messages::list).answers::<c::MessageList>(),
        r(Get, "/v1/messages/count", "Count messages (the list's filters, without limit and offset)", messages::count).answers::<c::Count>(),
        r(Get, "/v1/messages/{id}", "A message with its events, rows and captured responses (by id, or by a re-ingested child's key)", messages::get_one).answers::<c::MessageDetail>(),
        r(Post, "/v1/messages/{id}/viewed", "Record that someone viewed a message (event viewed)", messages::viewed).answers::<c::Viewed>(),
        r(Post, "/v1/messages/{id}/replay", "Replay a message (recover stuck rows, else re-send done rows)", messages::replay).answers::<c::Requeued>(),
        r(Get, "/v1/dead-letters", "Dead rows with their messages' fields (stage=outbound|ingress|routed|response|all, default outbound; channel, destination, allowed_channels, limit, offset, order=row_id|newest_failed)", messages::dead_letters).answers::<c::DeadLetters>(),
        r(Get, "/v1/dead-letters/count", "Count dead rows (stage, default outbound; channel, destination, allowed_channels)", messages::dead_count).answers::<c::Count>(),
        r(Post, "/v1/dead-letters/sweep", "Dead-letter live rows whose destination (outbound) or handler (routed) is not in keep", recovery::sweep).answers::<c::Swept>(),
        r(Post, "/v1/dead-letters/replay", "Requeue dead outbound rows", messages::replay_dead).answers::<c::Requeued>(),
        r(Get, "/v1/stats", "Row counts by stage and status", messages::stats).answers::<c::Stats>(),
        r(Get, "/v1/stats/storage", "Messages, events and the state's logical size (scans the state)", messages::storage).answers::<c::StorageStats>(),
        r(Get, "/v1/metrics/connections", "Inbound traffic per channel and outbound per destination (since, rate_window_ms; scans the state)", messages::connections).answers::<c::ConnectionMetrics>(),
        r(Get, "/v1/lanes", "Every lane with its depth, oldest row and holder, a page at a time (stage, limit, cursor)", work::lanes).answers::<c::LaneList>(),
        r(Get, "/v1/lanes/{stage}/{name}", "Lane depth, oldest row and holder", work::lane).answers::<c::LaneStatus>(),
        r(Post, "/v1/lanes/{stage}/{name}/claim", "Claim a lane's head (strict FIFO, lane lease)", work::claim_fifo).answers::<c::FifoClaim>(),
        r(Post, "/v1/lanes/{stage}/{name}/release", "Give a lane lease back", work::release).answers::<c::Released>(),
        r(Post, "/v1/destinations/{destination}/pause", "Pause a destination: its rows stay, none is handed out (reason)", destinations::pause).answers::<c::PauseState>(),
        r(Post, "/v1/destinations/{destination}/resume", "Resume a paused destination", destinations::resume).answers::<c::PauseState>(),
        r(Get, "/v1/destinations/paused", "Every paused destination, who paused it, when and why", destinations::paused).answers::<c::PausedDestinations>(),
        r(Post, "/v1/lanes/outbound/{dest}/cancel", "Cancel pending outbound rows of a destination", work::cancel).answers::<c::Cancelled>(),
        r(Post, "/v1/claims", "Claim due rows of a stage (unordered)", work::claim_ready).answers::<c::Claimed>(),
        r(Post, "/v1/leases/renew", "Renew an owner's row and lane leases", work::renew).answers::<c::Renewed>(),
        r(Post, "/v1/leases/reclaim", "In-flight rows whose lease expired back to pending (stage)", recovery::reclaim).answers::<c::Reclaimed>(),
        r(Post, "/v1/leases/reset", "Every in-flight row back to pending, whatever its lease (stage; single-process start-up)", recovery::reset).answers::<c::ResetRows>(),
        r(Post, "/v1/leases/recover", "A new leader takes back other owners' in-flight rows and lane leases", recovery::recover).answers::<c::Recovered>(),
        r(Get, "/v1/rows/{id}", "A work row as it is now", work::get_row).answers::<c::RowDetail>(),
        r(Post, "/v1/rows/actions", "Many fenced row actions in one request ({actions: [{row, action, body}]}), answered one by one in order", work::row_actions).takes::<c::RowActionsRequest>().answers::<c::RowActionResults>(),
        r(Post, "/v1/rows/{id}/{action}", "Fenced row action: route, handoff, transform, done (with claim_next: also claim the lane's next row), response, fail, dead, reingress", work::row_action).takes::<c::RowActionBody>().answers::<c::RowAnswer>(),
        r(Get, "/v1/config", "The current configuration and its version", config::get_current).answers::<c::ConfigAnswer>(),
        r(Put, "/v1/config", "Replace the configuration (If-Match: version; 412 on mismatch)", config::put_config).answers::<c::ConfigWritten>(),
        r(Get, "/v1/config/versions/{v}", "A configuration version", config::get_version).answers::<c::ConfigAnswer>(),
        r(Post, "/v1/audit", "Append an audit row", audit::append).answers::<c::AuditAppended>(),
        r(Get, "/v1/audit", "List an org's audit rows (org required)", audit::list).answers::<c::AuditRows>(),
        r(Get, "/v1/audit/anchor", "An org's chain anchor (count, head)", audit::anchor).answers::<c::AuditAnchor>(),
        r(Get, "/v1/audit/verify", "Verify an org's chain, optionally against an anchor (count, head)", audit::verify).answers::<c::AuditVerification>(),
        r(Get, "/v1/audit/search", "An actor's audit rows, newest first (org, actor, action_prefix, limit)", audit::search).answers::<c::AuditRows>(),
        r(Post, "/v1/audit/seal", "Seal an org's audit era", audit::seal).answers::<c::AuditAppended>(),
        r(Get, "/v1/state", "Every transform-state namespace with its version", admin::namespaces).answers::<c::NamespaceList>(),
        r(Get, "/v1/state/{namespace}", "A transform-state namespace's version (entries=true: with its entries)", admin::namespace).answers::<c::NamespaceVersion>(),
        r(Get, "/v1/state/{namespace}/{key}", "A transform-state entry", admin::state_entry).answers::<c::StateValue>(),
        r(Get, "/v1/reference", "Every reference set's version, label, time and size", admin::references).answers::<c::ReferenceList>(),
        r(Put, "/v1/reference/{name}", "Replace a reference snapshot (version: a number, or a text label)", admin::put_reference).answers::<c::ReferenceWritten>(),
        r(Get, "/v1/reference/{name}", "A reference snapshot", admin::get_reference).answers::<c::Reference>(),
        r(Post, "/v1/retention/purge", "Purge bodies, dead letters or state older than an age (older_than_ms) or a cutoff (older_than)", admin::purge).answers::<c::Purged>(),
        r(Post, "/v1/approvals", "Request an approval", approvals::create_approval).answers::<c::ApprovalCreated>(),
        r(Get, "/v1/approvals/{id}", "An approval", approvals::get_approval).answers::<c::ApprovalView>(),
        r(Post, "/v1/approvals/{id}/decide", "Approve or reject (once, by another principal)", approvals::decide_approval).answers::<c::ApprovalDecided>(),
        r(Get, "/v1/approvals", "Approvals pending and unexpired at the request's time, newest first (status=pending, limit)", approvals::list).answers::<c::ApprovalList>(),
        r(Post, "/v1/approvals/keyed", "Record an approval under the caller's key, requester and times", approvals::create_keyed).answers::<c::ApprovalCreated>(),
        r(Get, "/v1/approvals/keyed/{key}", "An approval by the caller's key (status as stored)", approvals::get_keyed).answers::<c::ApprovalView>(),
        r(Post, "/v1/approvals/keyed/{key}/decide", "Decide an approval by key: approved, rejected or expired (409 already_decided)", approvals::decide_keyed).answers::<c::KeyedDecided>(),
        r(Get, "/v1/tokens", "List API principals", admin::list_tokens).answers::<c::TokenList>(),
        r(Post, "/v1/tokens", "Create or rotate a principal's token (shown once)", admin::create_token).answers::<c::TokenCreated>(),
        r(Delete, "/v1/tokens/{name}", "Revoke a principal", admin::revoke_token).answers::<c::Revoked>(),
        r(Get, "/v1/owners/{owner}", "The principal a lease owner name or engine node id is bound to (null: nobody's yet)", admin::get_owner).answers::<c::OwnerBinding>(),
        r(Put, "/v1/owners/{owner}", "Bind an owner name or engine node id to a principal ahead of its first use (admin; 409 when bound to another)", admin::reserve_owner).answers::<c::OwnerBinding>(),
        r(Delete, "/v1/owners/{owner}", "Release an owner name's or engine node id's binding (admin)", admin::release_owner).answers::<c::OwnerBinding>(),
        r(Post, "/v1/users", "Create an engine user (admin; 409 already_exists when the id or username is taken)", users::create_user).answers::<c::UserCreated>(),
        r(Get, "/v1/users", "Engine users by username (username, limit; count = matches before the limit)", users::list_users).answers::<c::UserList>(),
        r(Get, "/v1/users/{id}", "An engine user (without its second-factor secrets)", users::get_user).answers::<c::UserView>(),
        r(Delete, "/v1/users/{id}", "Delete an engine user with its role assignments and sessions", users::delete_user).answers::<c::UserDeleted>(),
        r(Get, "/v1/users/{id}/secrets", "An engine user's TOTP secret and recovery-code hashes", users::user_secrets).answers::<c::UserSecrets>(),
        r(Get, "/v1/users/{id}/roles", "An engine user's roles", users::user_roles).answers::<c::UserRoles>(),
        r(Put, "/v1/users/{id}/roles", "Replace an engine user's roles (404 for an unknown user or role)", users::set_user_roles).answers::<c::RolesAssigned>(),
        r(Get, "/v1/users/{id}/sessions", "An engine user's live sessions at the request's time", sessions::of_user).answers::<c::SessionList>(),
        r(Post, "/v1/users/{id}/sessions/revoke", "Revoke an engine user's sessions, all or all but one (except_token_hash)", sessions::revoke_of_user).answers::<c::SessionsRevoked>(),
        r(Post, "/v1/users/{id}/sessions/cap", "Revoke all but an engine user's newest keep sessions", sessions::cap).answers::<c::SessionsRevoked>(),
        r(Post, "/v1/users/{id}/{change}", "Change an engine user: password, disabled, profile, totp-secret, totp-enable, totp-disable, login-success, login-failure, channel-scope, consume", users::change_user).takes::<c::UserChangeBody>().answers::<c::UserChanged>(),
        r(Get, "/v1/roles", "The engine's roles", users::list_roles).answers::<c::RoleList>(),
        r(Put, "/v1/roles/{id}", "Create or replace an engine role", users::put_role).answers::<c::RoleWritten>(),
        r(Get, "/v1/directory-groups/{map}", "A directory-group map (roles or channels); groups=a,b also resolves groups", users::group_map).answers::<c::GroupMap>(),
        r(Put, "/v1/directory-groups/{map}", "Replace a directory-group map (roles or channels)", users::put_group_map).answers::<c::GroupMapWritten>(),
        r(Post, "/v1/sessions", "Create an engine session (by token hash; 404 unknown user, 409 hash in use)", sessions::create).answers::<c::SessionCreated>(),
        r(Post, "/v1/sessions/purge-expired", "Delete the sessions expired before the request's time", sessions::purge_expired).answers::<c::SessionsPurged>(),
        r(Get, "/v1/sessions/{token_hash}", "An engine session", sessions::get_one).answers::<c::SessionView>(),
        r(Post, "/v1/sessions/{token_hash}/{change}", "Change a session: touch, reauth, mfa-verified, revoke", sessions::change).takes::<c::SessionChangeBody>().answers::<c::SessionChanged>(),
        r(Get, "/v1/engine/nodes", "The engine processes' registry, with the time of the read", coordination::nodes).answers::<c::EngineNodes>(),
        r(Put, "/v1/engine/nodes/{node_id}", "An engine process's heartbeat (registers it)", coordination::heartbeat).answers::<c::HeartbeatAck>(),
        r(Delete, "/v1/engine/nodes/{node_id}", "An engine process stops cleanly (left; gives up its leadership)", coordination::leave).answers::<c::NodeLeft>(),
        r(Get, "/v1/engine/leadership/{group}", "A group's leadership lease", coordination::leadership).answers::<c::Leadership>(),
        r(Post, "/v1/engine/leadership/{group}", "Take or renew a group's leadership lease; answers the lease, whoever holds it", coordination::campaign).answers::<c::Leadership>(),
        r(Post, "/v1/engine/leadership/{group}/resign", "Give a group's leadership up", coordination::resign).answers::<c::Resigned>(),
        r(Get, "/v1/engine/counters/{name}", "A shared counter", coordination::counter).answers::<c::CounterValue>(),
        r(Post, "/v1/engine/counters/{name}", "Add one to a shared counter", coordination::bump).answers::<c::CounterValue>(),
        r(Get, "/v1/engine/lanes/{owner}", "The lanes whose lease owner holds now", coordination::held_lanes).answers::<c::HeldLanes>(),
        r(Post, "/v1/keys/rotate", "Re-encrypt every covered value under the active key (admin; 409 names an undecryptable value)", keys::rotate).answers::<c::Rotated>(),
        r(Get, "/v1/cluster", "Cluster status: leader, term, indexes, membership", cluster::status).answers::<c::ClusterStatus>(),
        r(Get, "/v1/cluster/digest", "This node's state digest and applied index", cluster::digest).answers::<c::StateDigest>(),
        r(Get, "/v1/cluster/snapshot", "A backup: this node catches up with the leader's commit, takes a snapshot and streams its file (admin; the index in x-raftlane-snapshot-index)", cluster::download_snapshot),
        r(Post, "/v1/cluster/snapshot", "This node builds a snapshot covering everything it has applied, and answers its index", cluster::snapshot).answers::<c::SnapshotTaken>(),
        r(Post, "/v1/cluster/leader", "Hand leadership to a voter (to; none: the best placed one), through the leader", cluster::transfer_leader).answers::<c::LeaderTransferred>(),
        r(Get, "/v1/cluster/log-format", "The log format the cluster writes and the formats this node's build reads", cluster::log_format).answers::<c::LogFormatStatus>(),
        r(Post, "/v1/cluster/log-format", "Raise the cluster's log format once every member reads it: the end of a rolling upgrade (admin)", cluster::raise_log_format).answers::<c::LogFormatStatus>(),
        r(Post, "/v1/cluster/learners", "Add a learner node", cluster::add_learner).answers::<c::Ack>(),
        r(Post, "/v1/cluster/membership", "Change the voter set", cluster::change_membership).answers::<c::Ack>(),
        r(Get, "/healthz", "Liveness", cluster::healthz).answers::<c::Health>(),
        r(Get, "/readyz", "Readiness (leader known, self-checks passed)", cluster::readyz).answers::<c::Readiness>(),
        r(Get, "/metrics", "Prometheus metrics", cluster::metrics),
        r(Get, "/openapi.json", "This document", cluster::openapi).answers::<c::OpenApiDocument>(),
        r(Get, "/ui", "The operator's page: HTML whose script reads this API with the token typed into it", crate::ui::page),
    ]
}

/// The OpenAPI document of [`api_routes`].
///
/// # Panics
/// When the table cannot be documented (a handler reading a raw body whose entry names no
/// type, a query type that is not a struct): a fault of this file, which every test that starts
/// the API meets before any node could.
pub fn openapi_document() -> serde_json::Value {
    crate::openapi::document(&api_routes()).unwrap_or_else(|e| panic!("the route table: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route_spec::RouteBody;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

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
                RouteBody::Raw => panic!("{at}: a raw body the table does not name"),
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

    /// The query parameters of `method path`, by name.
    fn query_parameters(doc: &Value, method: &str, path: &str) -> BTreeMap<String, Value> {
        doc["paths"][path][method]["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == "query")
            .map(|p| (p["name"].as_str().unwrap_or("").to_string(), p.clone()))
            .collect()
    }

    /// A route documents query parameters exactly when its handler parses a query, one per
    /// member of the type it parses, none of them `null`able (an absent parameter is "none").
    #[test]
    fn every_query_a_handler_parses_is_documented_and_no_other() {
        let doc = document();
        let mut with_query = 0;
        for route in api_routes() {
            let at = format!("{} {}", route.method, route.path);
            let params = query_parameters(&doc, route.method, route.path);
            assert_eq!(
                route.query.is_some(),
                !params.is_empty(),
                "{at}: {params:?}"
            );
            with_query += usize::from(route.query.is_some());
            for (name, p) in &params {
                assert!(p["schema"].is_object(), "{at} {name}");
                assert!(p["schema"].get("nullable").is_none(), "{at} {name}");
                assert!(p["required"].is_boolean(), "{at} {name}");
            }
        }
        // Every read of the state takes `consistency` at least.
        assert!(with_query >= 40, "only {with_query} routes read a query");

        let list = query_parameters(&doc, "get", "/v1/messages");
        for name in [
            "channel",
            "status",
            "message_type",
            "control_id",
            "allowed_channels",
            "limit",
            "offset",
            "cursor",
            "consistency",
        ] {
            assert!(list.contains_key(name), "GET /v1/messages lacks {name}");
        }
        assert_eq!(list["limit"]["schema"]["default"], 50);
        assert_eq!(list["limit"]["required"], false);
        assert_eq!(list["cursor"]["schema"]["type"], "integer");
        let lanes = query_parameters(&doc, "get", "/v1/lanes");
        assert_eq!(lanes["limit"]["schema"]["default"], 100);
        assert!(lanes["cursor"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("next_cursor")));
        let detail = query_parameters(&doc, "get", "/v1/messages/{id}");
        assert_eq!(detail["body"]["schema"]["type"], "boolean");
        let state = query_parameters(&doc, "get", "/v1/state/{namespace}");
        assert_eq!(state["entries"]["schema"]["type"], "boolean");
        assert!(query_parameters(&doc, "post", "/v1/claims").is_empty());
    }

    /// A body whose type the handler's signature names is documented as that type, an
    /// `OptionalJson` one as optional; the raw bodies the table names are the only others.
    #[test]
    fn bodies_are_the_types_the_handlers_parse() {
        let doc = document();
        let body = |method: &str, path: &str| doc["paths"][path][method]["requestBody"].clone();
        let component = |b: &Value| {
            b["content"]["application/json"]["schema"]["$ref"]
                .as_str()
                .unwrap_or("")
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_string()
        };
        let config = body("put", "/v1/config");
        assert_eq!(config["required"], true);
        assert_eq!(component(&config), "ConfigDocInput");
        let reclaim = body("post", "/v1/leases/reclaim");
        assert_eq!(reclaim["required"], false);
        assert_eq!(component(&reclaim), "StageScope");
        let rotate = body("post", "/v1/keys/rotate");
        assert_eq!(rotate["required"], false);
        assert_eq!(component(&rotate), "RotateRequest");
        assert_eq!(
            component(&body("post", "/v1/lanes/{stage}/{name}/claim")),
            "FifoClaimRequest"
        );
        let raw: Vec<String> = api_routes()
            .iter()
            .filter(|r| matches!(r.body, RouteBody::JsonOrText(_)))
            .map(|r| r.path.to_string())
            .collect();
        assert_eq!(raw, ["/v1/channels/{channel}/messages"]);
    }

    async fn reads_json(_: crate::extract::JsonBody<raftlane_contract::Ack>) -> &'static str {
        ""
    }

    async fn reads_raw(_: crate::extract::RawBody) -> &'static str {
        ""
    }

    async fn reads_a_query(
        _: crate::extract::Query<raftlane_contract::ReadOpts>,
        _: crate::extract::RawBody,
    ) -> &'static str {
        ""
    }

    /// A raw body the table does not name cannot be documented, and a body the handler's
    /// signature names cannot be named again.
    #[test]
    fn a_raw_body_must_be_named_and_a_typed_one_must_not() {
        use crate::route_spec::{r, Verb};
        let unnamed = r(Verb::Post, "/v1/x", "x", reads_raw);
        assert!(matches!(unnamed.body, RouteBody::Raw));
        let e = crate::openapi::document(&[unnamed]).expect_err("a raw body without a type");
        assert!(e.to_string().contains(".takes"), "{e}");
        let named = r(Verb::Post, "/v1/x", "x", reads_raw).takes::<raftlane_contract::Ack>();
        assert!(crate::openapi::document(&[named]).is_ok());
        let both = r(Verb::Post, "/v1/x", "x", reads_a_query).takes::<raftlane_contract::Ack>();
        assert!(both.query.is_some());
        let typed = std::panic::catch_unwind(|| {
            r(Verb::Post, "/v1/x", "x", reads_json).takes::<raftlane_contract::Ack>()
        });
        assert!(typed.is_err(), "a typed body named again");
    }

    /// The extractors that hand a handler the whole request or its head (`Request`, `Parts`:
    /// the enqueue route, `/metrics`) document no query, which holds only while no handler
    /// reads the URI itself: every query goes through `extract::Query`, whose type is
    /// documented. (Any other way to the URI, `Uri`, `RawQuery`, `OriginalUri`, has no `Reads`
    /// and does not compile into the table.)
    #[test]
    fn no_handler_reads_the_query_but_through_the_query_extractor() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(src.join("routes"))
            .expect("src/routes")
            .map(|e| e.expect("an entry").path())
            .collect();
        files.push(src.join("ui.rs"));
        assert!(files.len() > 10, "{files:?}");
        for file in files {
            let code = std::fs::read_to_string(&file).expect("readable");
            for reads_the_uri in [".uri", "into_parts("] {
                assert!(
                    !code.contains(reads_the_uri),
                    "{} calls {reads_the_uri}: parse the query with extract::Query instead, so \
                     the document names it",
                    file.display()
                );
            }
        }
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
