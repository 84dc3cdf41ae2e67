//! Application state and the router: every route of the HTTP API is mounted here.

use crate::backend::Backend;
use crate::error::{ApiError, ApiResult};
use crate::metrics::Metrics;
use crate::write::{self, signing, Proposer};
use crate::{auth, internal, routes};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::routing::{delete, get, post, put, MethodRouter};
use axum::Router;
use raftlane_statemachine::Envelope;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::time::Duration;

/// Settings of the HTTP layer.
#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// The bootstrap admin token (plaintext; only its hash is kept in memory).
    pub admin_token: String,
    /// Shared secret for node-to-node calls.
    pub cluster_secret: String,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Timeout of one node-to-node call.
    pub peer_timeout: Duration,
    /// How long Raft may take to add a learner (the node's `Tuning::membership_timeout_ms`):
    /// a forwarded membership change waits that long, plus a margin, for its answer.
    pub membership_timeout: Duration,
    /// Encryption at rest (docs/SPEC.md §2.6); `None` = off, values are stored as sent.
    pub keyring: Option<crate::crypto::Keyring>,
    /// Test mode (`raftlane node --test-client-clock`): a request may set the time of its
    /// proposals and time-dependent reads with `Raftlane-Client-Time-Ms`; without it that
    /// header is refused.
    pub test_client_clock: bool,
    /// `GET /metrics` needs a token of a principal that may read every channel (its totals span
    /// every channel, like `/v1/stats`); off by default so a Prometheus scraper needs none.
    pub metrics_token_required: bool,
    /// Requests per second (and burst) each token may send to this node; off by default
    /// (`crate::rate_limit`, docs/SPEC.md §10.5).
    pub rate_limit: crate::rate_limit::RateLimit,
    /// Dial other nodes over TLS with this CA and client identity (docs/SPEC.md §9.6).
    pub peer_tls: Option<raftlane_client::tls::ClientTls>,
    /// The clock-skew bound of signed node-to-node calls: the node's
    /// `Tuning::max_clock_skew_ms`, the same bound Raft's RPCs use.
    pub max_clock_skew_ms: u64,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            admin_token: String::new(),
            cluster_secret: String::new(),
            max_body_bytes: 1024 * 1024,
            peer_timeout: Duration::from_secs(5),
            membership_timeout: Duration::from_millis(
                raftlane_raft::Tuning::default().membership_timeout_ms,
            ),
            keyring: None,
            test_client_clock: false,
            metrics_token_required: false,
            rate_limit: crate::rate_limit::RateLimit::default(),
            peer_tls: None,
            max_clock_skew_ms: raftlane_raft::config::DEFAULT_CLOCK_SKEW_MS,
        }
    }
}

pub struct AppState {
    pub backend: Arc<dyn Backend>,
    pub admin_token_hash: String,
    /// Key deriving a created token from its request (see `routes::admin::create_token`),
    /// itself derived from the cluster secret so that every node derives the same token and the
    /// secret is not kept here twice. `None` without a cluster secret.
    pub token_key: Option<[u8; 32]>,
    pub max_body_bytes: usize,
    pub metrics: Arc<Metrics>,
    /// The write path: writes, linearizable reads and membership changes through the leader.
    /// Also holds the cluster signer that verifies other nodes' `/internal/...` calls.
    pub writes: Proposer,
    /// Whether requests may carry `Raftlane-Client-Time-Ms` (see [`ApiConfig::test_client_clock`]).
    pub test_client_clock: bool,
    /// See [`ApiConfig::metrics_token_required`].
    pub metrics_token_required: bool,
    /// The per-token buckets; `None` when [`ApiConfig::rate_limit`] is off.
    pub rate_limiter: Option<crate::rate_limit::RateLimiter>,
    /// Claims waiting for work on this node (`wait_ms`), bounded ([`crate::wait`]).
    pub claim_waiters: crate::wait::Waiters,
}

impl AppState {
    pub fn new(backend: Arc<dyn Backend>, config: &ApiConfig) -> Arc<Self> {
        let metrics = Arc::new(Metrics::default());
        let settings = write::Settings {
            cluster_auth: signing::cluster_auth_with(
                &config.cluster_secret,
                config.max_clock_skew_ms,
            ),
            peer_timeout: config.peer_timeout,
            membership_timeout: config.membership_timeout,
            keyring: config.keyring.clone(),
            peer_tls: config.peer_tls.clone(),
        };
        Arc::new(Self {
            writes: Proposer::start(backend.clone(), settings, metrics.clone()),
            backend,
            admin_token_hash: auth::sha256_hex(&config.admin_token),
            token_key: crate::routes::admin::token_key(&config.cluster_secret),
            max_body_bytes: config.max_body_bytes,
            metrics,
            test_client_clock: config.test_client_clock,
            metrics_token_required: config.metrics_token_required,
            rate_limiter: crate::rate_limit::RateLimiter::new(config.rate_limit),
            claim_waiters: crate::wait::Waiters::default(),
        })
    }

    /// The keyring, when encryption at rest is on. The write path holds it: it encrypts what
    /// this node proposes and decrypts what it serves ([`crate::write::at_rest`]).
    pub fn keyring(&self) -> Option<&crate::crypto::Keyring> {
        self.writes.keyring()
    }

    /// Wrap a command with the proposer's clock, the caller's name and the request id of this
    /// proposal, bound to the request's fingerprint when the client chose the id
    /// ([`crate::request_id`]). In test mode a request that names its time
    /// (`Raftlane-Client-Time-Ms`, see [`crate::auth::Caller::client_time`]) has its command
    /// applied at exactly that time (`AtClientTime`, docs/SPEC.md §2.1), around the binding.
    pub fn envelope(
        &self,
        caller: &crate::auth::Caller,
        command: raftlane_statemachine::Command,
    ) -> Envelope {
        let command = caller.requests.bind(command);
        let command = match caller.client_time {
            Some(now_ms) => raftlane_statemachine::Command::AtClientTime(
                raftlane_statemachine::wire::command::AtClientTime {
                    now_ms,
                    command: Box::new(command),
                },
            ),
            None => command,
        };
        Envelope::new(caller.now_ms(), caller.name.as_str(), command)
            .with_request_id(caller.requests.next())
    }
}

/// The proposer's wall clock (the state machine clamps it monotonic); see
/// [`raftlane_raft::now_ms`] for the chaos suite's clock offset.
pub fn now_ms() -> u64 {
    raftlane_raft::now_ms()
}

/// One documented route: the router and the OpenAPI document are both built from this list,
/// so they cannot disagree.
pub struct ApiRoute {
    pub method: &'static str,
    pub path: &'static str,
    pub summary: &'static str,
    /// Needs `Authorization: Bearer`.
    pub auth: bool,
    pub handler: MethodRouter<Arc<AppState>>,
    /// The request body the handler parses, for the document.
    pub body: RouteBody,
    /// The schema of the 2xx answer (`None`: not JSON, e.g. `/metrics`).
    pub answer: Option<SchemaFn>,
}

/// A schema of the contract, as the document's generator produces it (usually a `$ref`).
pub type SchemaFn = fn(&mut raftlane_contract::schema::Schemas) -> serde_json::Value;

/// What a route reads from its body.
#[derive(Clone, Copy)]
pub enum RouteBody {
    None,
    /// A JSON body of this schema.
    Json(SchemaFn),
    /// A JSON body of this schema, or none at all (every member's default).
    OptionalJson(SchemaFn),
    /// A JSON body of this schema, or (any other content type) the raw text it wraps.
    JsonOrText(SchemaFn),
}

impl ApiRoute {
    /// The route parses a JSON body of type `T`.
    fn takes<T: raftlane_contract::schema::JsonSchema>(mut self) -> Self {
        self.body = RouteBody::Json(|s| s.request::<T>());
        self
    }

    /// The route parses a JSON body of type `T`; an empty body means `T`'s defaults.
    fn takes_optional<T: raftlane_contract::schema::JsonSchema>(mut self) -> Self {
        self.body = RouteBody::OptionalJson(|s| s.request::<T>());
        self
    }

    /// The route takes `T` as JSON, or its raw text under any other content type.
    fn takes_json_or_text<T: raftlane_contract::schema::JsonSchema>(mut self) -> Self {
        self.body = RouteBody::JsonOrText(|s| s.request::<T>());
        self
    }

    /// The route answers `T` (with each of its 2xx statuses).
    fn answers<T: raftlane_contract::schema::JsonSchema>(mut self) -> Self {
        self.answer = Some(|s| s.answer::<T>());
        self
    }
}

fn r(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    handler: MethodRouter<Arc<AppState>>,
) -> ApiRoute {
    ApiRoute {
        method,
        path,
        summary,
        auth: path.starts_with("/v1/"),
        handler,
        body: RouteBody::None,
        answer: None,
    }
}

/// Every public route of the API, with the contract types it reads and answers.
pub fn api_routes() -> Vec<ApiRoute> {
    use raftlane_contract as c;
    use routes::{
        admin, approvals, audit, cluster, config, coordination, keys, messages, recovery, sessions,
        users, work,
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
        r("post", "/v1/cluster/snapshot", "This node builds a snapshot covering everything it has applied, and answers its index", post(cluster::snapshot)).answers::<c::SnapshotTaken>(),
        r("post", "/v1/cluster/learners", "Add a learner node", post(cluster::add_learner)).takes::<c::LearnerRequest>().answers::<c::Ack>(),
        r("post", "/v1/cluster/membership", "Change the voter set", post(cluster::change_membership)).takes::<c::MembershipRequest>().answers::<c::Ack>(),
        r("get", "/healthz", "Liveness", get(cluster::healthz)).answers::<c::Health>(),
        r("get", "/readyz", "Readiness (leader known, self-checks passed)", get(cluster::readyz)).answers::<c::Readiness>(),
        r("get", "/metrics", "Prometheus metrics", get(cluster::metrics)),
        r("get", "/openapi.json", "This document", get(crate::openapi::serve)).answers::<c::OpenApiDocument>(),
        r("get", "/ui", "The operator's page: HTML whose script reads this API with the token typed into it", get(crate::ui::page)),
    ]
}

/// The whole API. `extra` is merged in (the node mounts the Raft transport there).
pub fn router(state: Arc<AppState>, extra: Router) -> Router {
    let limit = state.max_body_bytes;
    let mut app: Router<Arc<AppState>> = Router::new();
    for route in api_routes() {
        app = app.route(route.path, route.handler);
    }
    // Around the public routes only (the internal ones are added below): the rate limit first,
    // so a limited request is refused before its body is read, then the Request-Id binding.
    app = app
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::request_id::bind,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::rate_limit::limit,
        ));
    // A forwarded write is the client's request re-encoded with its envelope and header-borne
    // fields, so it may be somewhat larger than the largest body a client may send.
    let forward_limit = limit.saturating_mul(2).saturating_add(1 << 20);
    app.route(
        signing::PATH_PROPOSE,
        post(internal::propose).layer(DefaultBodyLimit::max(forward_limit)),
    )
    .route(
        signing::PATH_PROPOSE_BATCH,
        post(internal::propose_batch).layer(DefaultBodyLimit::max(
            forward_limit.saturating_add(write::relay::MAX_CALL_BYTES),
        )),
    )
    .route(signing::PATH_READ_INDEX, get(internal::read_index))
    .route(signing::PATH_MEMBERSHIP, post(internal::membership))
    .method_not_allowed_fallback(method_not_allowed)
    .fallback(not_found)
    .layer(DefaultBodyLimit::max(limit))
    .with_state(state)
    .merge(extra)
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}

/// The path exists but not for this method (axum's default answers with an empty body).
async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not accept that method",
    )
}

/// A JSON body parsed with errors that name the field: `400 {field, reason}`, `413` when too
/// large. Replaces axum's `Json` extractor, whose rejections are plain text.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(body_error)?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// The raw request body, with `413` (and other body failures) as JSON errors. Replaces axum's
/// `Bytes` extractor in handlers, whose rejections are plain text.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        Bytes::from_request(req, state)
            .await
            .map(RawBody)
            .map_err(body_error)
    }
}

pub fn body_error(e: axum::extract::rejection::BytesRejection) -> ApiError {
    if let Some(late) = crate::body_deadline::timed_out(&e) {
        body_timeout(late)
    } else if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "request body exceeds the configured limit",
        )
    } else {
        ApiError::invalid("body", e.body_text())
    }
}

/// `408 body_timeout`: the body did not arrive before its deadline ([`crate::body_deadline`]).
pub fn body_timeout(late: &crate::body_deadline::BodyTimedOut) -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "body_timeout",
        late.to_string(),
    )
}

/// Like [`parse_json`], with an empty body meaning every field's default.
pub fn parse_json_or_default<T: DeserializeOwned + Default>(bytes: &[u8]) -> ApiResult<T> {
    if bytes.is_empty() {
        Ok(T::default())
    } else {
        parse_json(bytes)
    }
}

pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> ApiResult<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(v) => Ok(v),
        Err(e) => {
            // A path of only unknown segments ("?", e.g. inside a truncated object) names nothing.
            let named = e
                .path()
                .iter()
                .any(|s| !matches!(s, serde_path_to_error::Segment::Unknown));
            let path = e.path().to_string();
            let inner = e.into_inner();
            // Malformed JSON is a fault of the body, wherever the parser stopped.
            let field = if !named || inner.is_syntax() || inner.is_eof() {
                missing_field(&inner.to_string()).unwrap_or_else(|| "body".to_string())
            } else {
                path
            };
            Err(ApiError::invalid(field, strip_position(&inner.to_string())))
        }
    }
}

/// A query string parsed with errors as JSON naming the parameter: `400 {field, reason}`.
/// Replaces axum's `Query`, whose rejections are plain text.
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::try_from_uri(&parts.uri)
            .map(|q| Query(q.0))
            .map_err(query_error)
    }
}

/// Path parameters with errors as JSON naming the parameter (e.g. invalid UTF-8 after percent
/// decoding). Replaces axum's `Path`, whose rejections are plain text.
pub struct Path<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        use axum::extract::path::ErrorKind;
        use axum::extract::rejection::PathRejection;
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(p) => Ok(Path(p.0)),
            Err(PathRejection::FailedToDeserializePathParams(e)) => {
                let field = match e.kind() {
                    ErrorKind::InvalidUtf8InPathParam { key }
                    | ErrorKind::ParseErrorAtKey { key, .. }
                    | ErrorKind::DeserializeError { key, .. } => key.clone(),
                    _ => "path".to_string(),
                };
                Err(ApiError::invalid(field, e.body_text()))
            }
            Err(e) => Err(ApiError::internal(e.body_text())),
        }
    }
}

fn query_error(e: axum::extract::rejection::QueryRejection) -> ApiError {
    let text = e.body_text();
    let detail = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(&text);
    // axum reports the parameter's path first: "count: invalid digit found in string".
    if let Some((name, reason)) = detail.split_once(": ") {
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return ApiError::invalid(name, reason);
        }
    }
    ApiError::invalid(
        missing_field(detail).unwrap_or_else(|| "query".to_string()),
        detail,
    )
}

/// serde's "missing field `x`" names the field only in the message.
fn missing_field(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_string())
}

fn strip_position(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}
