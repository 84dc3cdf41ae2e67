//! A typed async Rust client for the raftlane API, used by the tests, the chaos suite, the
//! benchmark, the demo and `raftlane ctl`.
//!
//! It knows every node's address. A call goes to the node that last answered; on a connection
//! failure, a timeout or a 503 it moves on to the next node and tries again until its deadline.
//! Every call is safe to repeat: reads change nothing, and each write carries a `Request-Id`
//! that stays the same across its retries, so the cluster applies it at most once and answers a
//! repeat with the first answer.
//!
//! Names that go into a path (channels, stages, lanes, actions) are percent-encoded, so a
//! name with `/`, `?`, `#`, `%` or a space reaches the server as one segment, byte for byte.
//!
//! This module holds the client and its handles; [`call`] sends one call of a route, and each
//! other child module holds the methods of one area of the API, each calling the route
//! [`crate::routes`] declares for it.

pub mod admin;
pub mod approvals;
pub mod audit;
pub mod backup;
pub mod call;
pub mod cluster;
pub mod config;
pub mod coordination;
pub mod dashboard;
pub mod destinations;
pub mod keys;
pub mod messages;
pub mod probes;
pub mod recovery;
pub mod rows;
pub mod sessions;
pub mod tokens;
pub mod users;
pub mod work;

use raftlane_contract::{ApprovalId, Consistency};
use raftlane_transport::http::{base_url, PeerClient};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

/// The per-attempt timeout of a call (a claim that waits adds its wait to it).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct Client {
    nodes: Arc<Vec<String>>,
    current: Arc<AtomicUsize>,
    token: String,
    http: PeerClient,
    deadline: Duration,
    /// Set by [`Client::for_request`]: the id every write of this handle carries.
    request_id: Option<String>,
    /// Set by [`Client::with_client_time`]: the `Raftlane-Client-Time-Ms` of every call.
    client_time: Option<u64>,
    /// Set by [`Client::with_approval`]: the `Raftlane-Approval` of every write.
    approval: Option<ApprovalId>,
    /// Set by [`Client::with_consistency`]: the `consistency` of every read of the state.
    consistency: Option<Consistency>,
}

impl Client {
    /// `nodes`: API addresses (`host:port` or URLs) of the cluster's nodes.
    pub fn new(nodes: Vec<String>, token: impl Into<String>) -> Self {
        Self {
            nodes: Arc::new(nodes.iter().map(|n| base_url(n)).collect()),
            current: Arc::new(AtomicUsize::new(0)),
            token: token.into(),
            http: PeerClient::new(ATTEMPT_TIMEOUT),
            deadline: Duration::from_secs(20),
            request_id: None,
            client_time: None,
            approval: None,
            consistency: None,
        }
    }

    /// Dial every node over TLS with `tls` (its CA and, for mutual TLS, this client's
    /// certificate): bare `host:port` addresses and `http://` URLs alike go out as `https://`.
    pub fn with_tls(mut self, tls: &crate::tls::ClientTls) -> Self {
        self.http = PeerClient::with_tls(ATTEMPT_TIMEOUT, Some(tls));
        self
    }

    /// How long a call keeps trying other nodes.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// A client pinned to one node (no failover): for tests that target a specific node.
    pub fn pinned(&self, node: usize) -> Self {
        let addr = self.nodes.get(node).cloned().unwrap_or_default();
        Self {
            nodes: Arc::new(vec![addr]),
            current: Arc::new(AtomicUsize::new(0)),
            ..self.clone()
        }
    }

    /// A handle for one logical write that the caller may send several times (its own retry
    /// loop, other nodes): every send carries `Request-Id: id`, so the cluster applies it once
    /// and answers every repeat with the first answer. Use a new id for each different write.
    pub fn for_request(&self, id: impl Into<String>) -> Self {
        Self {
            request_id: Some(id.into()),
            ..self.clone()
        }
    }

    /// A handle whose calls carry `Raftlane-Client-Time-Ms: ms`: their proposals are stamped
    /// with `ms` instead of the node's wall clock. Only a node started with
    /// `--test-client-clock` accepts it (others answer 400); for tests.
    pub fn with_client_time(&self, ms: u64) -> Self {
        Self {
            client_time: Some(ms),
            ..self.clone()
        }
    }

    /// A handle whose writes carry `Raftlane-Approval: id`: the approved approval an action
    /// under dual control needs (docs/SPEC.md §9.5). An approval is used once, so use this
    /// handle for the one write it was asked for.
    pub fn with_approval(&self, id: ApprovalId) -> Self {
        Self {
            approval: Some(id),
            ..self.clone()
        }
    }

    /// A handle whose reads of the replicated state ask for `consistency` (the probes and the
    /// cluster's own status take none).
    pub fn with_consistency(&self, consistency: Consistency) -> Self {
        Self {
            consistency: Some(consistency),
            ..self.clone()
        }
    }

    pub fn with_token(&self, token: impl Into<String>) -> Self {
        Self {
            token: token.into(),
            ..self.clone()
        }
    }

    /// The addresses this client calls, as URLs.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }
}
