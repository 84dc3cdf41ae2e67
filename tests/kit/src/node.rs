//! Full nodes in this process: each node is what `raftlane node` runs (the Raft replica and the
//! HTTP server carrying both the API and the Raft transport on one port, started through
//! [`raftlane_node::server::start_on`]), on 127.0.0.1. What the black-box tests, the bench and
//! the demo start.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use raftlane_testkit::node::{ClusterOptions, NodeCluster};
//! // Three nodes on free ports, data in a temporary directory, tokens ADMIN and SECRET.
//! let mut cluster = NodeCluster::start().await?;
//! let follower = cluster.follower_client().await?; // every write it sends is forwarded
//! follower.enqueue("lab", "MSH|1", None).await?;
//! cluster.stop(1).await; // graceful
//! cluster.restart(1).await?; // from its data directory, on its old port
//! cluster.wait_for_equal_digests(std::time::Duration::from_secs(20)).await?;
//! cluster.shutdown().await;
//!
//! // One node, another token, a larger body limit.
//! let single = NodeCluster::start_with(ClusterOptions {
//!     nodes: 1,
//!     admin_token: "other-admin".into(),
//!     max_body_bytes: 1024 * 1024,
//!     ..ClusterOptions::default()
//! })
//! .await?;
//! single.shutdown().await;
//! # Ok(()) }
//! ```

use crate::http::Http;
use anyhow::Context;
use hyper::Method;
use raftlane_client::tls::ClientTls;
use raftlane_client::Client;
use raftlane_node::certs::CertsArgs;
use raftlane_node::server::{self, NodeOptions, RunningNode};
use raftlane_node::tls::TlsFiles;
use raftlane_raft::Tuning;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The admin token of a cluster started with the default options.
pub const ADMIN: &str = "test-admin-token";
/// The cluster secret of a cluster started with the default options.
pub const SECRET: &str = "test-cluster-secret";

/// What to start. [`Default`] is what tests want: three nodes, free ports, a temporary data
/// directory, [`ADMIN`] and [`SECRET`], a 64 KiB body limit, the default tuning.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// Voters `1..=nodes`; node 1 bootstraps the cluster.
    pub nodes: u64,
    /// `None`: free ports the kernel picks (tests run in parallel). `Some(p)`: node `i` listens
    /// on `127.0.0.1:p+i-1`, so a person can find it (the demo, the bench).
    pub base_port: Option<u16>,
    /// `None`: a temporary directory removed when the cluster is dropped. `Some(dir)`: kept, so
    /// a cluster started again on it recovers (each node uses `dir/node<id>`).
    pub data_dir: Option<PathBuf>,
    pub admin_token: String,
    pub cluster_secret: String,
    pub max_body_bytes: usize,
    pub tuning: Tuning,
    /// How long [`NodeCluster::start_with`] waits for a leader before failing.
    pub leader_within: Duration,
    /// Plain HTTP, TLS, or mutual TLS (certificates made by `raftlane certs`' code in the
    /// cluster's directory, [`NodeCluster::certs_dir`]).
    pub tls: TlsMode,
}

/// How the nodes of a kit cluster talk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsMode {
    #[default]
    Off,
    /// HTTPS on every node; nodes verify each other against the cluster's CA.
    Server,
    /// HTTPS, and every client must present a certificate from the cluster's CA.
    Mutual,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            nodes: 3,
            base_port: None,
            data_dir: None,
            admin_token: ADMIN.into(),
            cluster_secret: SECRET.into(),
            max_body_bytes: 64 * 1024,
            tuning: Tuning::default(),
            leader_within: Duration::from_secs(30),
            tls: TlsMode::Off,
        }
    }
}

impl ClusterOptions {
    /// The cluster `raftlane dev` starts: three nodes on `base_port..base_port+2`, data kept in
    /// `data_dir`, the cluster secret (and the admin token, unless one is given) generated once
    /// and kept there too ([`raftlane_node::dev::kept_secrets`]), so the demo and the bench can
    /// restart on a data directory `raftlane dev` made and the other way round.
    pub fn dev(
        base_port: u16,
        data_dir: &Path,
        admin_token: Option<String>,
    ) -> anyhow::Result<Self> {
        let (cluster_secret, admin_token) =
            raftlane_node::dev::kept_secrets(data_dir, admin_token)?;
        Ok(Self {
            nodes: 3,
            base_port: Some(base_port),
            data_dir: Some(data_dir.to_path_buf()),
            admin_token,
            cluster_secret,
            max_body_bytes: raftlane_node::dev::MAX_BODY_BYTES,
            tuning: Tuning::default(),
            leader_within: Duration::from_secs(60),
            tls: TlsMode::Off,
        })
    }
}

/// The folder, under the cluster's directory, of its certificates.
const CERTS: &str = "certs";
/// The name of the client certificate written beside the nodes'.
const CLIENT_CERT: &str = "client";

/// The name in node `id`'s certificate.
fn node_name(id: u64) -> String {
    format!("n{id}")
}

/// Where the nodes' data lives: a temporary directory lives as long as the cluster.
enum Root {
    Temp(tempfile::TempDir),
    Kept(PathBuf),
}

impl Root {
    fn path(&self) -> &Path {
        match self {
            Root::Temp(t) => t.path(),
            Root::Kept(p) => p,
        }
    }
}

/// Full nodes serving on loopback. Index `i` of `nodes` and `addrs` is node `i + 1`.
pub struct NodeCluster {
    /// The nodes; `None` while stopped.
    pub nodes: Vec<Option<RunningNode>>,
    /// API (and Raft) address of each node, `host:port`.
    pub addrs: Vec<String>,
    /// id → address: the initial voters.
    pub peers: BTreeMap<u64, String>,
    pub admin_token: String,
    options: ClusterOptions,
    root: Root,
}

impl NodeCluster {
    /// Start three nodes with the default options (free ports, temporary data) and wait for a
    /// leader.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(ClusterOptions::default()).await
    }

    /// Start the cluster `options` describe and wait for a leader.
    pub async fn start_with(options: ClusterOptions) -> anyhow::Result<Self> {
        let root = match &options.data_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                Root::Kept(dir.clone())
            }
            None => Root::Temp(tempfile::tempdir().context("no temporary directory")?),
        };
        if options.tls != TlsMode::Off {
            raftlane_node::certs::generate(&CertsArgs {
                out: root.path().join(CERTS),
                nodes: (1..=options.nodes).map(node_name).collect(),
                extra_names: vec!["localhost".into(), "127.0.0.1".into()],
                client: Some(CLIENT_CERT.into()),
                days: 30,
            })?;
        }
        // Bind every port before starting any node: each node must know all its peers.
        let mut listeners = Vec::new();
        let mut peers = BTreeMap::new();
        for id in 1..=options.nodes {
            let listener = match options.base_port {
                None => tokio::net::TcpListener::bind("127.0.0.1:0").await?,
                Some(base) => {
                    let port = u16::try_from(id - 1)
                        .ok()
                        .and_then(|k| base.checked_add(k))
                        .with_context(|| format!("no port for node {id} above {base}"))?;
                    tokio::net::TcpListener::bind(("127.0.0.1", port))
                        .await
                        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?
                }
            };
            peers.insert(id, listener.local_addr()?.to_string());
            listeners.push((id, listener));
        }
        let mut cluster = Self {
            nodes: Vec::new(),
            addrs: peers.values().cloned().collect(),
            peers,
            admin_token: options.admin_token.clone(),
            options,
            root,
        };
        for (id, listener) in listeners {
            let opts = cluster.node_options(id)?;
            let node = server::start_on(opts, listener)
                .await
                .with_context(|| format!("node {id}"))?;
            cluster.nodes.push(Some(node));
        }
        let within = cluster.options.leader_within;
        if let Err(e) = cluster.wait_for_leader(within).await {
            cluster.shutdown().await;
            return Err(e);
        }
        Ok(cluster)
    }

    /// Node `id`'s options: the cluster's voters as peers, node 1 bootstrapping.
    fn node_options(&self, id: u64) -> anyhow::Result<NodeOptions> {
        let addr = self
            .peers
            .get(&id)
            .cloned()
            .with_context(|| format!("no node {id}"))?;
        Ok(NodeOptions {
            id,
            listen: addr.parse()?,
            advertise: addr,
            peers: self.peers.clone(),
            data_dir: self.root.path().join(format!("node{id}")),
            bootstrap: id == 1,
            cluster_secret: self.options.cluster_secret.clone(),
            admin_token: self.options.admin_token.clone(),
            max_body_bytes: self.options.max_body_bytes,
            tuning: self.options.tuning.clone(),
            test_client_clock: false,
            metrics_token_required: false,
            rate_limit: Default::default(),
            tls: self.tls_files(id),
            conn_limits: Default::default(),
        })
    }

    /// Node `id`'s TLS files, when the cluster runs TLS.
    fn tls_files(&self, id: u64) -> Option<TlsFiles> {
        let dir = self.certs_dir()?;
        let name = node_name(id);
        Some(TlsFiles {
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}.key")),
            client_ca: (self.options.tls == TlsMode::Mutual).then(|| dir.join("ca.pem")),
            ca: Some(dir.join("ca.pem")),
        })
    }

    /// Where the cluster's CA and certificates are (`ca.pem`, `n<id>.pem`/`.key`, and a client
    /// certificate `client.pem`/`.key`), when it runs TLS.
    pub fn certs_dir(&self) -> Option<PathBuf> {
        (self.options.tls != TlsMode::Off).then(|| self.root.path().join(CERTS))
    }

    /// How a client dials this cluster: `None` for plain HTTP; else the cluster's CA, and the
    /// client certificate when the nodes demand one.
    pub fn client_tls(&self) -> anyhow::Result<Option<ClientTls>> {
        let Some(dir) = self.certs_dir() else {
            return Ok(None);
        };
        let cert = dir.join(format!("{CLIENT_CERT}.pem"));
        let key = dir.join(format!("{CLIENT_CERT}.key"));
        let identity =
            (self.options.tls == TlsMode::Mutual).then_some((cert.as_path(), key.as_path()));
        Ok(Some(ClientTls::from_files(&dir.join("ca.pem"), identity)?))
    }

    /// The directory the nodes' data directories are in.
    pub fn data_dir(&self) -> &Path {
        self.root.path()
    }

    /// A client that knows every node (fails over), as admin.
    pub fn client(&self) -> Client {
        let client = Client::new(self.addrs.clone(), self.admin_token.clone());
        match self.client_tls() {
            Ok(Some(tls)) => client.with_tls(&tls),
            Ok(None) => client,
            // The files were written at start; failing to read them is a broken test machine.
            Err(e) => panic!("cannot read the cluster's client TLS files: {e:#}"),
        }
    }

    /// The id of a running node that says it leads, if one does right now.
    pub fn leader_id(&self) -> Option<u64> {
        self.nodes
            .iter()
            .flatten()
            .find(|n| n.raft.is_leader())
            .map(|n| n.raft.id())
    }

    /// The id of the current leader, once one is known to a running node.
    pub async fn wait_for_leader(&self, within: Duration) -> anyhow::Result<u64> {
        let started = Instant::now();
        loop {
            if let Some(id) = self.leader_id() {
                return Ok(id);
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
        let tls = self.client_tls().ok().flatten();
        Http::with_tls(
            &self.addrs[self.index_of(id)],
            Duration::from_secs(30),
            tls.as_ref(),
        )
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
        let opts = self.node_options(id)?;
        let listener = crate::wait::bind(&opts.advertise, crate::wait::WAIT).await?;
        let node = server::start_on(opts, listener).await?;
        let i = self.index_of(id);
        self.nodes[i] = Some(node);
        Ok(())
    }

    /// Start node `id` outside every configuration (it does not bootstrap and knows no peer but
    /// itself), on a free port, with its data under this cluster's directory: a node waiting to
    /// be added as a learner. The caller owns it (and shuts it down); the cluster does not count
    /// it among its nodes until a test makes it a member.
    pub async fn start_unconfigured(&self, id: u64) -> anyhow::Result<RunningNode> {
        let listener = crate::wait::free_listener().await;
        let addr = listener.local_addr()?.to_string();
        let opts = NodeOptions {
            id,
            listen: addr.parse()?,
            advertise: addr.clone(),
            peers: [(id, addr)].into_iter().collect(),
            data_dir: self.root.path().join(format!("node{id}")),
            bootstrap: false,
            cluster_secret: self.options.cluster_secret.clone(),
            admin_token: self.options.admin_token.clone(),
            max_body_bytes: self.options.max_body_bytes,
            tuning: self.options.tuning.clone(),
            test_client_clock: false,
            metrics_token_required: false,
            rate_limit: Default::default(),
            tls: self.tls_files(id),
            conn_limits: Default::default(),
        };
        server::start_on(opts, listener)
            .await
            .with_context(|| format!("node {id}"))
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

    /// Shut every running node down, all at once (their databases are closed on return).
    pub async fn shutdown(mut self) {
        let stops = self
            .nodes
            .iter_mut()
            .filter_map(Option::take)
            .map(RunningNode::shutdown);
        futures::future::join_all(stops).await;
    }
}
