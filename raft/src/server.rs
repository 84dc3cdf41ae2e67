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
//! `401` and never reaches Raft.

use crate::auth::{AuthError, ClusterAuth, AUTH_HEADER};
use crate::clock::{ClusterClock, CLOCK_HEADER};
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
        }
    }

    /// Use `clock` (the node's) instead of a private one.
    pub fn with_clock(mut self, clock: Arc<ClusterClock>) -> Self {
        self.clock = clock;
        self
    }

    /// Whether `path` belongs to this service (everything under `/raft/`).
    pub fn handles(path: &str) -> bool {
        path.starts_with(wire::PREFIX)
    }

    pub fn stats(&self) -> Arc<ServerStats> {
        self.stats.clone()
    }

    fn unauthorized(&self, e: AuthError) -> Response<Full<Bytes>> {
        self.stats.unauthorized.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(error = %e, "refused raft request");
        let mut resp = plain(StatusCode::UNAUTHORIZED, &e.to_string());
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
            Err(e) => return self.unauthorized(e),
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
            return self.unauthorized(e);
        }
        self.stats.handled.fetch_add(1, Ordering::Relaxed);
        let result = match path.as_str() {
            wire::PATH_APPEND => match decode::<AppendEntriesRequest<TypeConfig>>(&body) {
                Ok(rpc) => {
                    // A follower learns the leader's clock from its heartbeats.
                    if let Some(leader) = rpc.vote.leader_id().voted_for() {
                        self.clock.record_call(leader, head.signed_at_ms());
                    }
                    Ok(raft_result(self.raft.append_entries(rpc).await))
                }
                Err(r) => Err(r),
            },
            wire::PATH_VOTE => match decode::<VoteRequest<NodeId>>(&body) {
                Ok(rpc) => Ok(raft_result(self.raft.vote(rpc).await)),
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
