//! The node's HTTP state: the settings of the HTTP layer ([`ApiConfig`]) and what every handler
//! reaches through `State` ([`AppState`]): the backend, the write path, the token keys, the
//! rate limiter, the claim waiters and the OpenAPI document.

use crate::backend::Backend;
use crate::metrics::Metrics;
use crate::tokens;
use crate::write::{self, signing, Proposer};
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
    /// Key deriving a created token from its request (see `crate::write::token_issue`),
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
    /// The OpenAPI document `GET /openapi.json` serves, built once by [`crate::router::router`]
    /// from the same route table as the router.
    pub openapi: std::sync::OnceLock<raftlane_contract::OpenApiDocument>,
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
            admin_token_hash: tokens::sha256_hex(&config.admin_token),
            token_key: tokens::token_key(&config.cluster_secret),
            max_body_bytes: config.max_body_bytes,
            metrics,
            test_client_clock: config.test_client_clock,
            metrics_token_required: config.metrics_token_required,
            rate_limiter: crate::rate_limit::RateLimiter::new(config.rate_limit),
            claim_waiters: crate::wait::Waiters::default(),
            openapi: std::sync::OnceLock::new(),
        })
    }

    /// The keyring, when encryption at rest is on. The write path holds it: it encrypts what
    /// this node proposes and decrypts what it serves ([`crate::write::at_rest`]).
    pub fn keyring(&self) -> Option<&crate::crypto::Keyring> {
        self.writes.keyring()
    }
}
