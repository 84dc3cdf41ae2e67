//! The client side of node-to-node Raft RPCs: HTTP/1.1 over hyper-util's pooled client.
//!
//! A peer is dialled over TLS when its address says `https://`, and every peer is when the
//! node has TLS on ([`NetworkConfig::tls`]): the dialling (the connector, the reading of an
//! address) is `raftlane-client`'s, the same as the API's forwarded writes use. Each RPC is
//! signed for its target node ([`crate::auth`]).
//!
//! One shared `Client` keeps idle keep-alive connections per peer, so replication does not pay
//! a TCP handshake per heartbeat. Each RPC is bounded by openraft's per-RPC deadline
//! (`RPCOption::hard_ttl`), and failures are mapped to the openraft error that makes the
//! replication loop do the right thing:
//!
//! | failure                                   | openraft error     | effect                       |
//! |-------------------------------------------|--------------------|------------------------------|
//! | cannot connect, 401/403, 503 (stopping)   | `Unreachable`      | back off (see [`Backoff`])    |
//! | connection dropped, other HTTP status, bad body | `NetworkError` | retry at once               |
//! | deadline passed                           | `Timeout`          | retry at once                |
//! | request body over the size limit          | `PayloadTooLarge`  | retry with fewer entries     |
//! | the peer's Raft answered with an error    | `RemoteError`      | handled by openraft          |

use crate::auth::{ClusterAuth, AUTH_HEADER};
use crate::clock::{ClusterClock, CLOCK_HEADER};
use crate::types::{Node, NodeId, TypeConfig};
use crate::wire;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{header, Request, StatusCode};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError, Timeout,
    Unreachable,
};
use openraft::network::{Backoff, RPCOption};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{AnyError, RPCTypes, RaftNetwork, RaftNetworkFactory};
use raftlane_transport::http::split_scheme;
use raftlane_transport::tls::ClientTls;
use serde::{de::DeserializeOwned, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// How long an idle pooled connection is kept (see the node's `--http-header-timeout`).
const POOL_IDLE: Duration = Duration::from_secs(5);

/// Client-side tuning.
#[derive(Debug, Clone)]
pub struct NetworkConfig {
    /// TCP connect timeout (also capped by each RPC's own deadline).
    pub connect_timeout: Duration,
    /// First back-off after a peer was found unreachable; doubles up to `backoff_max`.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// Dial every peer over TLS with this CA (and client certificate, for mutual TLS);
    /// `None`: plain HTTP unless a peer's address says `https://` (then it cannot be verified).
    pub tls: Option<ClientTls>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_millis(1000),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_millis(2000),
            tls: None,
        }
    }
}

/// Exponential back-off: `min, 2·min, 4·min, …` capped at `max`.
pub fn backoff_delays(
    min: Duration,
    max: Duration,
) -> impl Iterator<Item = Duration> + Send + 'static {
    (0u32..).map(move |i| min.saturating_mul(2u32.saturating_pow(i.min(20))).min(max))
}

/// The `RaftNetworkFactory`: hands out one [`PeerClient`] per target, all sharing the pool.
#[derive(Clone)]
pub struct HttpNetwork {
    self_id: NodeId,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    auth: Arc<ClusterAuth>,
    cfg: NetworkConfig,
    /// Signs with this node's clock and learns each peer's from its answers ([`crate::clock`]).
    clock: Arc<ClusterClock>,
}

impl HttpNetwork {
    pub fn new(self_id: NodeId, auth: ClusterAuth, cfg: NetworkConfig) -> Self {
        let connector = raftlane_transport::tls::connector(cfg.tls.as_ref(), cfg.connect_timeout);
        let client = Client::builder(TokioExecutor::new())
            // Below a node's header timeout (10 s by default), which also closes kept-alive
            // connections that wait that long for a request: the pool lets go first.
            .pool_idle_timeout(POOL_IDLE)
            .pool_max_idle_per_host(8)
            .build(connector);
        let clock = Arc::new(ClusterClock::new(self_id, 0, auth.max_skew_ms()));
        Self {
            self_id,
            client,
            auth: Arc::new(auth),
            cfg,
            clock,
        }
    }

    /// Use `clock` (the node's) instead of a private one.
    pub fn with_clock(mut self, clock: Arc<ClusterClock>) -> Self {
        self.clock = clock;
        self
    }

    /// A client for `addr` outside openraft (tests, tools).
    pub fn peer(&self, target: NodeId, addr: &str) -> PeerClient {
        PeerClient {
            target,
            node: Node {
                addr: addr.to_string(),
            },
            net: self.clone(),
        }
    }
}

impl RaftNetworkFactory<TypeConfig> for HttpNetwork {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &Node) -> PeerClient {
        self.peer(target, &node.addr)
    }
}

/// A transport failure, before it is mapped to openraft's error types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    Unreachable(String),
    Network(String),
    Timeout(Duration),
    TooLarge(usize),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Unreachable(m) => write!(f, "unreachable: {m}"),
            CallError::Network(m) => write!(f, "network error: {m}"),
            CallError::Timeout(d) => write!(f, "timed out after {d:?}"),
            CallError::TooLarge(n) => write!(f, "request of {n} bytes is too large"),
        }
    }
}

/// Connection to one peer.
pub struct PeerClient {
    target: NodeId,
    node: Node,
    net: HttpNetwork,
}

impl PeerClient {
    /// The URL of `path` at this peer: `https://` when its address says so or TLS is on.
    fn url(&self, path: &str) -> String {
        let (scheme, hostport) = split_scheme(&self.node.addr);
        let scheme = if self.net.cfg.tls.is_some() {
            "https://"
        } else {
            scheme
        };
        format!("{scheme}{hostport}{path}")
    }

    /// POST `req` to `path` and decode the answer, within `ttl`.
    pub async fn call<Req, Resp>(
        &self,
        path: &str,
        req: &Req,
        ttl: Duration,
    ) -> Result<Resp, CallError>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
    {
        // Encoding our own types fails only at the codec's size limit: report it as too large.
        let body = wire::encode(req).map_err(|e| {
            tracing::warn!(error = %e, "cannot encode a raft request");
            CallError::TooLarge(usize::MAX)
        })?;
        self.call_encoded(path, Bytes::from(body), ttl).await
    }

    /// POST an already encoded request (one body sent to several peers is encoded once) and
    /// decode the answer, within `ttl`.
    pub async fn call_encoded<Resp>(
        &self,
        path: &str,
        body: Bytes,
        ttl: Duration,
    ) -> Result<Resp, CallError>
    where
        Resp: DeserializeOwned,
    {
        if body.len() > wire::MAX_BODY_BYTES {
            return Err(CallError::TooLarge(body.len()));
        }
        let sent_ms = self.net.clock.wall_ms();
        let signature = self.net.auth.sign(self.target, path, sent_ms, &body);
        let request = Request::post(self.url(path))
            .header(header::CONTENT_TYPE, wire::CONTENT_TYPE)
            .header(AUTH_HEADER, signature)
            .body(Full::new(body))
            .map_err(|e| {
                CallError::Unreachable(format!("bad peer address {:?}: {e}", self.node.addr))
            })?;
        let exchange = async {
            let resp = self.net.client.request(request).await.map_err(|e| {
                if e.is_connect() {
                    CallError::Unreachable(format!(
                        "{}: {}",
                        self.node.addr,
                        raftlane_transport::http::error_chain(&e)
                    ))
                } else {
                    CallError::Network(format!(
                        "{}: {}",
                        self.node.addr,
                        raftlane_transport::http::error_chain(&e)
                    ))
                }
            })?;
            let status = resp.status();
            // Every answer, a refusal included, carries the peer's clock: learn it.
            let peer_ms = resp
                .headers()
                .get(CLOCK_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if let Some(peer_ms) = peer_ms {
                let received_ms = self.net.clock.wall_ms();
                self.net
                    .clock
                    .record_answer(self.target, sent_ms, peer_ms, received_ms);
            }
            match status {
                StatusCode::OK => {}
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                    let skew =
                        peer_ms.map(|p| i128::from(p) - i128::from(self.net.clock.wall_ms()));
                    let bound = i128::from(self.net.clock.max_skew_ms());
                    return Err(CallError::Unreachable(match skew {
                        Some(skew) if bound > 0 && skew.abs() > bound => format!(
                            "{} refused our call (HTTP {status}): clock skew, its clock is {} ms {} ours (bound {bound} ms)",
                            self.node.addr,
                            skew.abs(),
                            if skew > 0 { "ahead of" } else { "behind" }
                        ),
                        _ => format!(
                            "{} refused our credentials (HTTP {status}): is the cluster secret the same?",
                            self.node.addr
                        ),
                    }));
                }
                StatusCode::SERVICE_UNAVAILABLE => {
                    return Err(CallError::Unreachable(format!(
                        "{} is shutting down",
                        self.node.addr
                    )))
                }
                StatusCode::PAYLOAD_TOO_LARGE => return Err(CallError::TooLarge(0)),
                other => {
                    return Err(CallError::Network(format!(
                        "{} answered HTTP {other}",
                        self.node.addr
                    )))
                }
            }
            let bytes = Limited::new(resp.into_body(), wire::MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(|e| {
                    CallError::Network(format!("reading response from {}: {e}", self.node.addr))
                })?
                .to_bytes();
            wire::decode::<Resp>(&bytes).map_err(|e| CallError::Network(e.to_string()))
        };
        match tokio::time::timeout(ttl, exchange).await {
            Ok(r) => r,
            Err(_) => Err(CallError::Timeout(ttl)),
        }
    }

    fn rpc_error<E: std::error::Error>(
        &self,
        e: CallError,
        action: RPCTypes,
        entries: usize,
    ) -> RPCError<NodeId, Node, RaftError<NodeId, E>> {
        match e {
            CallError::Unreachable(m) => {
                RPCError::Unreachable(Unreachable::new(&AnyError::error(m)))
            }
            CallError::Network(m) => RPCError::Network(NetworkError::new(&AnyError::error(m))),
            CallError::Timeout(timeout) => RPCError::Timeout(Timeout {
                action,
                id: self.net.self_id,
                target: self.target,
                timeout,
            }),
            CallError::TooLarge(n) if action == RPCTypes::AppendEntries && entries > 1 => {
                tracing::warn!(
                    target = self.target,
                    bytes = n,
                    entries,
                    "append request too large; halving"
                );
                RPCError::PayloadTooLarge(PayloadTooLarge::new_entries_hint((entries / 2) as u64))
            }
            CallError::TooLarge(n) => RPCError::Network(NetworkError::new(&AnyError::error(
                format!("request of {n} bytes exceeds the limit and cannot be split"),
            ))),
        }
    }

    fn remote<E: std::error::Error>(
        &self,
        e: RaftError<NodeId, E>,
    ) -> RPCError<NodeId, Node, RaftError<NodeId, E>> {
        RPCError::RemoteError(RemoteError::new_with_node(
            self.target,
            self.node.clone(),
            e,
        ))
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Node, RaftError<NodeId>>> {
        let entries = rpc.entries.len();
        match self
            .call::<_, Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>>(
                wire::PATH_APPEND,
                &rpc,
                option.hard_ttl(),
            )
            .await
        {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(self.remote(e)),
            Err(e) => Err(self.rpc_error(e, RPCTypes::AppendEntries, entries)),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, Node, RaftError<NodeId, InstallSnapshotError>>,
    > {
        match self
            .call::<_, Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>>(
                wire::PATH_SNAPSHOT,
                &rpc,
                option.hard_ttl(),
            )
            .await
        {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(self.remote(e)),
            Err(e) => Err(self.rpc_error(e, RPCTypes::InstallSnapshot, 0)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, Node, RaftError<NodeId>>> {
        match self
            .call::<_, Result<VoteResponse<NodeId>, RaftError<NodeId>>>(
                wire::PATH_VOTE,
                &rpc,
                option.hard_ttl(),
            )
            .await
        {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(self.remote(e)),
            Err(e) => Err(self.rpc_error(e, RPCTypes::Vote, 0)),
        }
    }

    /// Back off exponentially from an unreachable peer, instead of openraft's fixed 500 ms.
    fn backoff(&self) -> Backoff {
        Backoff::new(backoff_delays(
            self.net.cfg.backoff_min,
            self.net.cfg.backoff_max,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let d: Vec<_> = backoff_delays(Duration::from_millis(100), Duration::from_millis(1000))
            .take(6)
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(d, vec![100, 200, 400, 800, 1000, 1000]);
    }

    #[tokio::test]
    async fn unreachable_peer_maps_to_unreachable() {
        // Bind then drop a listener: the port is (almost certainly) closed now.
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let net = HttpNetwork::new(1, ClusterAuth::new("x", 0), NetworkConfig::default());
        let mut peer = net.peer(2, &addr.to_string());
        let rpc = VoteRequest::new(openraft::Vote::new(1, 1), None);
        let err = peer
            .vote(rpc, RPCOption::new(Duration::from_secs(2)))
            .await
            .unwrap_err();
        assert!(matches!(err, RPCError::Unreachable(_)), "{err:?}");
    }

    #[test]
    fn https_addresses_and_tls_nodes_dial_https() {
        let net = HttpNetwork::new(1, ClusterAuth::new("x", 0), NetworkConfig::default());
        assert_eq!(
            net.peer(2, "n2:7001").url("/raft/vote"),
            "http://n2:7001/raft/vote"
        );
        // Not "http://https://n2:7001/raft/vote": the address's own scheme wins.
        assert_eq!(
            net.peer(2, "https://n2:7001").url("/raft/vote"),
            "https://n2:7001/raft/vote"
        );
        let roots = rustls::RootCertStore::empty();
        let tls = NetworkConfig {
            tls: Some(ClientTls::new(roots, None).unwrap()),
            ..NetworkConfig::default()
        };
        let net = HttpNetwork::new(1, ClusterAuth::new("x", 0), tls);
        assert_eq!(
            net.peer(2, "n2:7001").url("/raft/vote"),
            "https://n2:7001/raft/vote"
        );
        assert_eq!(
            net.peer(2, "http://n2:7001").url("/raft/vote"),
            "https://n2:7001/raft/vote"
        );
    }
}
