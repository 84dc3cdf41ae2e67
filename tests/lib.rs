//! Shared harness for the cross-crate tests: a real three-node cluster on loopback ports, each
//! node serving the API and the Raft transport over HTTP, data in a temporary directory.

use raftlane_api::client::Client;
use raftlane_node::server::{self, NodeOptions, RunningNode};
use raftlane_raft::Tuning;
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
