//! The server side of node-to-node Raft RPCs, as a plain hyper service.
//!
//! [`RaftHttpService::handle`] takes any `http::Request<B>` whose body is an `http_body::Body`
//! and returns an `http::Response<Full<Bytes>>`, so the API crate's axum router can delegate
//! `/raft/*` to it directly (axum's `Body` qualifies and the response implements
//! `IntoResponse`) without this crate depending on axum:
//!
//! ```ignore
//! let svc = node.http_service();
//! router.route("/raft/{*rpc}", axum::routing::post(move |req: axum::extract::Request| {
//!     let svc = svc.clone();
//!     async move { svc.handle(req).await }
//! }))
//! ```
//!
//! [`serve_raft`] runs the same service on its own listener for nodes (and tests) that keep Raft
//! traffic on a separate port.
//!
//! Authentication comes first: the signature header (freshness and head MAC) is checked before
//! the body is read, and the body MAC before anything is decoded; a request that fails gets
//! `401` and never reaches Raft. The `401` says only that authentication failed (its code is
//! `clock_skew` or `unauthorized`); why goes to the log.

use crate::auth::{AuthError, ClusterAuth, AUTH_HEADER};
use crate::clock::{ClusterClock, CLOCK_HEADER};
use crate::rejoin::Abstain;
use crate::storage_health::{ElectRequest, ElectResponse, StorageHealth};
use crate::types::{NodeId, Raft, TypeConfig};
use crate::wire;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Body;
use hyper::{header, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use openraft::error::RaftError;
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use serde::{de::DeserializeOwned, Serialize};
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A client that does not finish sending its request headers in this time is dropped (also
/// bounds how long an idle keep-alive connection waits for its next request's headers).
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Counters of the Raft endpoint.
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Requests refused for authentication (401).
    pub unauthorized: AtomicU64,
    /// Requests handed to Raft.
    pub handled: AtomicU64,
}

/// The Raft RPC endpoint of one node. Cheap to clone.
#[derive(Clone)]
pub struct RaftHttpService {
    raft: Raft,
    auth: Arc<ClusterAuth>,
    stats: Arc<ServerStats>,
    /// Checks signatures against this node's clock, which every answer carries
    /// ([`crate::clock::CLOCK_HEADER`]).
    clock: Arc<ClusterClock>,
    /// A node rejoining after `--rejoin` answers no vote until it has caught up.
    abstain: Option<Arc<Abstain>>,
    /// This node's storage, as judged for a leader's request to campaign
    /// ([`crate::slow_storage`]).
    storage: Arc<StorageHealth>,
}

fn plain(status: StatusCode, msg: &str) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(msg.to_string())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    resp
}

fn encoded<T: Serialize>(value: &T) -> Response<Full<Bytes>> {
    match wire::encode(value) {
        Ok(bytes) => {
            let mut resp = Response::new(Full::new(Bytes::from(bytes)));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(wire::CONTENT_TYPE),
            );
            resp
        }
        Err(e) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot encode response: {e}"),
        ),
    }
}

/// Encode a Raft result; a local fatal error (this node is stopping) becomes 503 so the caller
/// backs off instead of treating it as an answer.
fn raft_result<T: Serialize, E: Serialize + std::error::Error>(
    res: Result<T, RaftError<NodeId, E>>,
) -> Response<Full<Bytes>> {
    match res {
        Err(RaftError::Fatal(f)) => plain(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("raft stopped: {f}"),
        ),
        other => encoded(&other),
    }
}

fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, Response<Full<Bytes>>> {
    wire::decode(body)
        .map_err(|e| plain(StatusCode::BAD_REQUEST, &format!("bad request body: {e}")))
}

impl RaftHttpService {
    pub fn new(raft: Raft, auth: ClusterAuth) -> Self {
        let id = raft.metrics().borrow().id;
        let clock = Arc::new(ClusterClock::new(id, 0, auth.max_skew_ms()));
        Self {
            raft,
            auth: Arc::new(auth),
            stats: Arc::new(ServerStats::default()),
            clock,
            abstain: None,
            storage: Arc::new(StorageHealth::new(0)),
        }
    }

    /// Judge a leader's request to campaign by `storage` (the node's).
    pub fn with_storage_health(mut self, storage: Arc<StorageHealth>) -> Self {
        self.storage = storage;
        self
    }

    /// A leader on slow storage asks this node to campaign: start an election unless this node
    /// should not lead ([`crate::storage_health::may_campaign`]).
    async fn campaign(&self, rpc: ElectRequest) -> ElectResponse {
        let verdict = {
            let m = self.raft.metrics().borrow().clone();
            crate::storage_health::may_campaign(&self.storage, &m, self.may_vote(), &rpc)
        };
        if let Err(why) = &verdict {
            tracing::warn!(
                leader = rpc.leader,
                term = rpc.term,
                "declined to campaign: {why}"
            );
            return verdict;
        }
        tracing::warn!(
            leader = rpc.leader,
            term = rpc.term,
            "campaigning at the leader's request: {}",
            rpc.reason
        );
        self.raft
            .trigger()
            .elect()
            .await
            .map_err(|e| format!("the raft core stopped: {e}"))
    }

    /// Abstain from votes as `abstain` says ([`crate::rejoin::Abstain`]).
    pub fn with_abstain(mut self, abstain: Arc<Abstain>) -> Self {
        self.abstain = Some(abstain);
        self
    }

    /// Use `clock` (the node's) instead of a private one.
    pub fn with_clock(mut self, clock: Arc<ClusterClock>) -> Self {
        self.clock = clock;
        self
    }

    /// Whether this node answers vote requests (not while it rejoins and is behind).
    fn may_vote(&self) -> bool {
        match &self.abstain {
            None => true,
            Some(a) => a.may_vote(self.raft.metrics().borrow().last_applied.map(|l| l.index)),
        }
    }

    /// Whether `path` belongs to this service (everything under `/raft/`).
    pub fn handles(path: &str) -> bool {
        path.starts_with(wire::PREFIX)
    }

    pub fn stats(&self) -> Arc<ServerStats> {
        self.stats.clone()
    }

    /// `401` for a call that failed authentication. The answer carries a stable code and
    /// nothing else ([`AuthError::public_body`]): no node ids, clock offsets or expected values
    /// for a caller without the secret to learn from. The reason goes to this node's log.
    fn unauthorized(&self, e: AuthError, path: &str) -> Response<Full<Bytes>> {
        self.stats.unauthorized.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(path, error = %e, "refused raft request");
        let mut resp = Response::new(Full::new(Bytes::from(e.public_body())));
        *resp.status_mut() = StatusCode::UNAUTHORIZED;
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("RaftlaneHmac"),
        );
        resp
    }

    /// Handle one request to a Raft endpoint. Every answer carries this node's clock.
    pub async fn handle<B>(&self, req: Request<B>) -> Response<Full<Bytes>>
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut resp = self.handle_inner(req).await;
        if let Ok(v) = header::HeaderValue::from_str(&self.clock.wall_ms().to_string()) {
            resp.headers_mut().insert(CLOCK_HEADER, v);
        }
        resp
    }

    async fn handle_inner<B>(&self, req: Request<B>) -> Response<Full<Bytes>>
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let path = req.uri().path().to_string();
        if req.method() != Method::POST {
            return plain(StatusCode::METHOD_NOT_ALLOWED, "raft endpoints take POST");
        }
        let header = req.headers().get(AUTH_HEADER).and_then(|v| v.to_str().ok());
        // Calls are signed for their target node: one signed for another is refused.
        let this_node = self.raft.metrics().borrow().id;
        let head = match self
            .auth
            .check_head(header, &path, this_node, self.clock.wall_ms())
        {
            Ok(h) => h,
            Err(e) => return self.unauthorized(e, &path),
        };
        let body = match Limited::new(req.into_body(), wire::MAX_BODY_BYTES)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("cannot read body: {e}"),
                )
            }
        };
        if let Err(e) = self.auth.check_body(&path, &head, &body) {
            return self.unauthorized(e, &path);
        }
        self.stats.handled.fetch_add(1, Ordering::Relaxed);
        let result = match path.as_str() {
            wire::PATH_APPEND => match decode::<AppendEntriesRequest<TypeConfig>>(&body) {
                Ok(rpc) => {
                    // A follower learns the leader's clock from its heartbeats.
                    if let Some(leader) = rpc.vote.leader_id().voted_for() {
                        self.clock.record_call(leader, head.signed_at_ms());
                    }
                    if let Some(abstain) = &self.abstain {
                        abstain.note_append(rpc.leader_commit.map(|l| l.index));
                    }
                    Ok(raft_result(self.raft.append_entries(rpc).await))
                }
                Err(r) => Err(r),
            },
            wire::PATH_VOTE => match decode::<VoteRequest<NodeId>>(&body) {
                Ok(_) if !self.may_vote() => Err(plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "rejoining: this node does not vote until it has caught up",
                )),
                Ok(rpc) => Ok(raft_result(self.raft.vote(rpc).await)),
                Err(r) => Err(r),
            },
            wire::PATH_ELECT => match decode::<ElectRequest>(&body) {
                Ok(rpc) => Ok(encoded::<ElectResponse>(&self.campaign(rpc).await)),
                Err(r) => Err(r),
            },
            wire::PATH_FORMATS => match decode::<wire::FormatsRequest>(&body) {
                Ok(_) => Ok(encoded(&wire::FormatsResponse::of_this_build())),
                Err(r) => Err(r),
            },
            wire::PATH_SNAPSHOT => match decode::<InstallSnapshotRequest<TypeConfig>>(&body) {
                Ok(rpc) => Ok(raft_result(self.raft.install_snapshot(rpc).await)),
                Err(r) => Err(r),
            },
            _ => Err(plain(StatusCode::NOT_FOUND, "no such raft endpoint")),
        };
        result.unwrap_or_else(|r| r)
    }
}

/// Serve `service` on `listener` (HTTP/1.1 with keep-alive) until `shutdown` resolves; then stop
/// accepting and drop every open connection.
pub async fn serve_raft<F>(listener: tokio::net::TcpListener, service: RaftHttpService, shutdown: F)
where
    F: Future<Output = ()> + Send,
{
    let mut conns = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let _ = stream.set_nodelay(true);
                    let svc = service.clone();
                    conns.spawn(async move {
                        let handler = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let svc = svc.clone();
                            async move { Ok::<_, Infallible>(svc.handle(req).await) }
                        });
                        if let Err(e) = hyper::server::conn::http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(HEADER_READ_TIMEOUT)
                            .serve_connection(TokioIo::new(stream), handler)
                            .await
                        {
                            tracing::debug!(error = %e, "raft connection ended with an error");
                        }
                    });
                }
                Err(e) => {
                    // E.g. out of file descriptors: wait a little instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.abort_all();
}
