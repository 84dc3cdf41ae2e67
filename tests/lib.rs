//! Shared harness for the cross-crate tests: a real three-node cluster on loopback ports, each
//! node serving the API and the Raft transport over HTTP, data in a temporary directory.

use hyper::{HeaderMap, Method, StatusCode};
use raftlane_api::peer::{base_url, PeerClient};
use raftlane_client::Client;
use raftlane_node::server::{self, NodeOptions, RunningNode};
use raftlane_raft::Tuning;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub const ADMIN: &str = "test-admin-token";
pub const SECRET: &str = "test-cluster-secret";

pub struct TestCluster {
    pub nodes: Vec<Option<RunningNode>>,
    pub addrs: Vec<String>,
    pub peers: BTreeMap<u64, String>,
    pub dir: tempfile::TempDir,
}

fn options(
    id: u64,
    peers: &BTreeMap<u64, String>,
    dir: &std::path::Path,
) -> anyhow::Result<NodeOptions> {
    let addr = peers
        .get(&id)
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no peer {id}"))?;
    Ok(NodeOptions {
        id,
        listen: addr.parse()?,
        advertise: addr,
        peers: peers.clone(),
        data_dir: dir.join(format!("node{id}")),
        bootstrap: id == 1,
        cluster_secret: SECRET.into(),
        admin_token: ADMIN.into(),
        max_body_bytes: 64 * 1024,
        tuning: Tuning::default(),
    })
}

impl TestCluster {
    /// Start three nodes on free loopback ports and wait for a leader.
    pub async fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut listeners = Vec::new();
        let mut peers = BTreeMap::new();
        for id in 1..=3u64 {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            peers.insert(id, l.local_addr()?.to_string());
            listeners.push((id, l));
        }
        let mut nodes = Vec::new();
        for (id, listener) in listeners {
            nodes.push(Some(
                server::start_on(options(id, &peers, dir.path())?, listener).await?,
            ));
        }
        let cluster = Self {
            addrs: peers.values().cloned().collect(),
            nodes,
            peers,
            dir,
        };
        cluster.wait_for_leader(Duration::from_secs(30)).await?;
        Ok(cluster)
    }

    /// A client that knows every node (fails over).
    pub fn client(&self) -> Client {
        Client::new(self.addrs.clone(), ADMIN)
    }

    /// The id of the current leader, once one is known to a running node.
    pub async fn wait_for_leader(&self, within: Duration) -> anyhow::Result<u64> {
        let started = Instant::now();
        loop {
            if let Some(n) = self.nodes.iter().flatten().find(|n| n.raft.is_leader()) {
                return Ok(n.raft.id());
            }
            if started.elapsed() > within {
                anyhow::bail!("no leader within {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The id of a running node that is not the leader (writes sent to it are forwarded).
    pub async fn follower(&self) -> anyhow::Result<u64> {
        let leader = self.wait_for_leader(Duration::from_secs(30)).await?;
        self.nodes
            .iter()
            .flatten()
            .map(|n| n.raft.id())
            .find(|id| *id != leader)
            .ok_or_else(|| anyhow::anyhow!("no running follower"))
    }

    /// A client pinned to a running follower, so every write it sends has to be forwarded.
    pub async fn follower_client(&self) -> anyhow::Result<Client> {
        let id = self.follower().await?;
        Ok(self.client().pinned(self.index_of(id)))
    }

    /// Raw HTTP to the node with `id`: every status, header and body as the server sent it.
    pub fn http(&self, id: u64) -> Http {
        Http::new(&self.addrs[self.index_of(id)], Duration::from_secs(30))
    }

    /// Create a principal through the admin API and return its token.
    pub async fn token(
        &self,
        name: &str,
        role: &str,
        channels: Option<&[&str]>,
    ) -> anyhow::Result<String> {
        let v = self
            .client()
            .request(
                Method::POST,
                "/v1/tokens",
                Some(serde_json::json!({ "name": name, "role": role, "channels": channels })),
            )
            .await?;
        v["token"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| anyhow::anyhow!("no token in {v}"))
    }

    /// Index (0-based) of the node with `id`.
    pub fn index_of(&self, id: u64) -> usize {
        (id as usize).saturating_sub(1)
    }

    /// Stop one node (graceful shutdown of its HTTP server and replica).
    pub async fn stop(&mut self, id: u64) {
        let i = self.index_of(id);
        if let Some(node) = self.nodes.get_mut(i).and_then(Option::take) {
            node.shutdown().await;
        }
    }

    /// Restart a stopped node from its data directory on its old port.
    pub async fn restart(&mut self, id: u64) -> anyhow::Result<()> {
        let opts = options(id, &self.peers, self.dir.path())?;
        let listener = loop_bind(&opts.advertise).await?;
        let node = server::start_on(opts, listener).await?;
        let i = self.index_of(id);
        self.nodes[i] = Some(node);
        Ok(())
    }

    /// Wait until every running node reports the same digest at the same applied index.
    pub async fn wait_for_equal_digests(&self, within: Duration) -> anyhow::Result<String> {
        let client = self.client();
        let started = Instant::now();
        loop {
            let mut seen = Vec::new();
            for (i, node) in self.nodes.iter().enumerate() {
                if node.is_some() {
                    if let Ok(d) = client.pinned(i).digest().await {
                        seen.push(d);
                    }
                }
            }
            let running = self.nodes.iter().flatten().count();
            if seen.len() == running && seen.windows(2).all(|w| w[0] == w[1]) {
                if let Some((_, d)) = seen.first() {
                    return Ok(d.clone());
                }
            }
            if started.elapsed() > within {
                anyhow::bail!("digests did not converge: {seen:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn shutdown(mut self) {
        for node in self.nodes.iter_mut() {
            if let Some(n) = node.take() {
                n.shutdown().await;
            }
        }
    }
}

/// Rebind a port just released by a stopped node (the OS may take a moment).
async fn loop_bind(addr: &str) -> anyhow::Result<tokio::net::TcpListener> {
    let started = Instant::now();
    loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => return Ok(l),
            Err(e) if started.elapsed() < Duration::from_secs(10) => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// One HTTP answer, unprocessed (the typed client hides statuses, retries 503 and drops headers).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The body parsed as JSON, or `Null` when it is not JSON.
    pub json: Value,
    pub text: String,
}

impl Reply {
    /// Assert the API's error shape: exactly `{"error": {code, message, field?}}` with a
    /// non-empty message, this status and code, and `field` present exactly when given.
    /// `extra` names further keys the error object may carry (e.g. `current_version`).
    #[track_caller]
    pub fn assert_error_with(&self, status: u16, code: &str, field: Option<&str>, extra: &[&str]) {
        assert_eq!(self.status.as_u16(), status, "status of {self:?}");
        let top = self
            .json
            .as_object()
            .unwrap_or_else(|| panic!("error body is not a JSON object: {self:?}"));
        assert_eq!(top.len(), 1, "only `error` at the top level: {self:?}");
        let err = top["error"]
            .as_object()
            .unwrap_or_else(|| panic!("`error` is not an object: {self:?}"));
        assert_eq!(
            err.get("code").and_then(Value::as_str),
            Some(code),
            "code of {self:?}"
        );
        assert!(
            err.get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| !m.trim().is_empty()),
            "non-empty message in {self:?}"
        );
        assert_eq!(
            err.get("field").and_then(Value::as_str),
            field,
            "field of {self:?}"
        );
        for key in err.keys() {
            assert!(
                ["code", "message", "field"].contains(&key.as_str())
                    || extra.contains(&key.as_str()),
                "unexpected key {key} in {self:?}"
            );
        }
    }

    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str, field: Option<&str>) {
        self.assert_error_with(status, code, field, &[]);
    }

    /// Assert a 2xx answer and return its JSON.
    #[track_caller]
    pub fn ok(&self) -> &Value {
        assert!(self.status.is_success(), "expected success: {self:?}");
        &self.json
    }

    /// The error's message (empty when there is none).
    pub fn message(&self) -> &str {
        self.json["error"]["message"].as_str().unwrap_or("")
    }
}

/// A raw HTTP client for one node: no failover, no retries, no hidden headers.
#[derive(Clone)]
pub struct Http {
    base: String,
    client: PeerClient,
}

impl Http {
    pub fn new(addr: &str, timeout: Duration) -> Self {
        Self {
            base: base_url(addr),
            client: PeerClient::new(timeout),
        }
    }

    /// Send `body` with `content_type` (if any) and `Authorization: Bearer token` (if any).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
        headers: &[(&str, String)],
    ) -> Reply {
        let mut hs: Vec<(&str, String)> = Vec::new();
        if let Some(t) = token {
            hs.push(("authorization", format!("Bearer {t}")));
        }
        if let Some(ct) = content_type {
            hs.push(("content-type", ct.to_string()));
        }
        hs.extend(headers.iter().cloned());
        let url = format!("{}{}", self.base, path);
        let (status, headers, bytes) = self
            .client
            .call(method.clone(), &url, &hs, body)
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        Reply {
            status,
            headers,
            json: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    /// A JSON request (`body` serialized) with a token.
    pub async fn json(&self, method: Method, path: &str, token: &str, body: &Value) -> Reply {
        self.send(
            method,
            path,
            Some(token),
            Some("application/json"),
            body.to_string().into_bytes(),
            &[],
        )
        .await
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.send(Method::GET, path, token, None, Vec::new(), &[])
            .await
    }
}
