//! Raft-only clusters: [`RaftNode`]s (replica, RocksDB log, state machine, node-to-node HTTP
//! transport) on loopback ports, without the HTTP API. What the raft crate's integration tests
//! start: they drive the replicas through [`RaftNode::client_write`] and read their metrics.
//!
//! ```no_run
//! # async fn demo() {
//! use raftlane_testkit::raft::{audit, tuning, RaftCluster};
//! let mut c = RaftCluster::start(3, tuning()).await; // voters 1..=3, a leader agreed on
//! let (index, response) = c.write(audit("hello")).await; // follows the leader
//! c.stop_node(2).await;
//! c.start_node(2).await; // from its data directory, on its old port
//! c.converged_digest().await; // every node applied everything, same digest
//! c.shutdown().await;
//! # }
//! ```

use crate::wait::{bind, free_listener, WAIT};
use futures::StreamExt;
use raftlane_raft::types::RaftMetrics;
use raftlane_raft::{now_ms, NotLeader, RaftNode, RaftNodeConfig, Tuning, WriteError};
use raftlane_statemachine::wire::command::AuditAuthor;
use raftlane_statemachine::wire::command::RecordAudit;
use raftlane_statemachine::{Command, Envelope, Outcome, Response};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tempfile::TempDir;

/// The cluster secret every node of a [`RaftCluster`] signs its Raft traffic with.
pub const SECRET: &str = "test-cluster-secret-0123456789";

/// Test tuning: no housekeeping timers (they would add entries the tests do not expect), the
/// default timing for a slow box.
pub fn tuning() -> Tuning {
    Tuning {
        reclaim_interval_ms: 0,
        expire_interval_ms: 0,
        retention_interval_ms: 0,
        log_format_watch_ms: 0,
        heartbeat_ms: 200,
        election_timeout_min_ms: 1000,
        election_timeout_max_ms: 2000,
        ..Tuning::default()
    }
}

/// An audit row tagged `tag`: the cheapest command whose effect can be found again (its row
/// carries the tag and a hash).
pub fn audit(tag: &str) -> Envelope {
    Envelope::new(
        now_ms(),
        "tester",
        Command::RecordAudit(RecordAudit {
            action: tag.to_string(),
            channel: None,
            org: None,
            detail: None,
            author: AuditAuthor::Principal,
        }),
    )
}

/// Check that every acknowledged audit write is in `node`'s state, with the hash it was
/// acknowledged with.
pub fn assert_writes_present(node: &RaftNode, writes: &[(String, u64, Response)]) {
    let rows = node
        .read_local(|sm| sm.read().audit_list("default", 0, usize::MAX))
        .expect("read the node's state")
        .expect("list the audit rows");
    let by_seq: BTreeMap<u64, _> = rows.into_iter().map(|r| (r.seq, r)).collect();
    for (tag, index, resp) in writes {
        let Ok(Outcome::Audit { seq, hash }) = resp else {
            panic!("write {tag} at {index} answered {resp:?}");
        };
        let row = by_seq.get(seq).unwrap_or_else(|| {
            panic!(
                "node {}: acknowledged write {tag} (seq {seq}) lost",
                node.id()
            )
        });
        assert_eq!(
            &row.action,
            tag,
            "node {}: seq {seq} holds another write",
            node.id()
        );
        assert_eq!(&hex::encode(row.hash), hash);
    }
}

/// Await a metrics condition on one node (on openraft's metrics channel, no polling).
pub async fn wait_metrics(
    node: &RaftNode,
    what: &str,
    cond: impl Fn(&RaftMetrics) -> bool + Send + Sync,
) -> RaftMetrics {
    node.raft()
        .wait(Some(WAIT))
        .metrics(|m| cond(m), what)
        .await
        .unwrap_or_else(|e| panic!("node {}: {what}: {e}", node.id()))
}

/// Raft-only nodes on loopback, data under one temporary directory (`node-<id>` each).
pub struct RaftCluster {
    pub root: TempDir,
    pub tuning: Tuning,
    /// Every node's address, started or not (a reserved one included).
    pub addrs: BTreeMap<u64, String>,
    /// The running nodes.
    pub nodes: BTreeMap<u64, RaftNode>,
    /// Nodes whose clock runs off by this many ms (`RaftNodeConfig::clock_offset_ms`).
    pub clock_offsets: BTreeMap<u64, i64>,
}

/// Bind `addr` for a node, waiting out a port its previous incarnation still holds.
async fn rebind_addr(addr: &str) -> tokio::net::TcpListener {
    bind(addr, WAIT)
        .await
        .unwrap_or_else(|e| panic!("cannot bind {addr}: {e}"))
}

impl RaftCluster {
    /// Start voters `1..=n`, node 1 bootstrapping, and wait for a leader.
    pub async fn start(n: u64, tuning: Tuning) -> RaftCluster {
        Self::start_in(
            n,
            tuning,
            tempfile::tempdir().expect("a temporary directory"),
        )
        .await
    }

    /// Like [`Self::start`], with the nodes' data directories under `root` (e.g. on tmpfs).
    pub async fn start_in(n: u64, tuning: Tuning, root: TempDir) -> RaftCluster {
        let c = Self::start_nodes(n, tuning, root, BTreeMap::new(), 1).await;
        c.leader().await;
        c
    }

    /// Start voters `1..=n`, node `bootstrap` bootstrapping, the nodes named in `clock_offsets`
    /// with their clocks that far off; no wait for a leader (a node beyond the skew bound never
    /// learns one: wait with [`Self::leader_among`] the others).
    pub async fn start_skewed(
        n: u64,
        tuning: Tuning,
        clock_offsets: BTreeMap<u64, i64>,
        bootstrap: u64,
    ) -> RaftCluster {
        let root = tempfile::tempdir().expect("a temporary directory");
        Self::start_nodes(n, tuning, root, clock_offsets, bootstrap).await
    }

    async fn start_nodes(
        n: u64,
        tuning: Tuning,
        root: TempDir,
        clock_offsets: BTreeMap<u64, i64>,
        bootstrap: u64,
    ) -> RaftCluster {
        let mut c = RaftCluster {
            root,
            tuning,
            addrs: BTreeMap::new(),
            nodes: BTreeMap::new(),
            clock_offsets,
        };
        let mut listeners = BTreeMap::new();
        for id in 1..=n {
            let l = free_listener().await;
            c.addrs
                .insert(id, l.local_addr().expect("local address").to_string());
            listeners.insert(id, l);
        }
        for (id, l) in listeners {
            let node = RaftNode::start_with_listener(c.config(id, id == bootstrap), l)
                .await
                .unwrap_or_else(|e| panic!("start node {id}: {e}"));
            c.nodes.insert(id, node);
        }
        c
    }

    pub fn data_dir(&self, id: u64) -> PathBuf {
        self.root.path().join(format!("node-{id}"))
    }

    /// Node `id`'s configuration: every known address as a peer, the cluster's tuning.
    pub fn config(&self, id: u64, bootstrap: bool) -> RaftNodeConfig {
        let mut cfg = RaftNodeConfig::new(id, self.addrs[&id].clone(), self.data_dir(id), SECRET);
        cfg.peers = self.addrs.clone();
        cfg.bootstrap = bootstrap;
        cfg.tuning = self.tuning.clone();
        cfg.clock_offset_ms = self.clock_offsets.get(&id).copied().unwrap_or(0);
        cfg
    }

    /// Reserve an address for a node that is not started yet.
    pub async fn reserve(&mut self, id: u64) -> tokio::net::TcpListener {
        let l = free_listener().await;
        self.addrs
            .insert(id, l.local_addr().expect("local address").to_string());
        l
    }

    /// (Re)start node `id` from its data directory on its address.
    pub async fn start_node(&mut self, id: u64) -> RaftNode {
        let l = rebind_addr(&self.addrs[&id]).await;
        self.start_node_on(id, l).await
    }

    pub async fn start_node_on(&mut self, id: u64, l: tokio::net::TcpListener) -> RaftNode {
        let cfg = self.config(id, false);
        self.start_node_with(cfg, l).await
    }

    /// (Re)start a node from an explicit config (e.g. `bootstrap = true`) on listener `l`.
    pub async fn start_node_with(
        &mut self,
        cfg: RaftNodeConfig,
        l: tokio::net::TcpListener,
    ) -> RaftNode {
        let id = cfg.id;
        let node = RaftNode::start_with_listener(cfg, l)
            .await
            .unwrap_or_else(|e| panic!("start node {id}: {e}"));
        self.nodes.insert(id, node.clone());
        node
    }

    /// Rebind node `id`'s address (after it was stopped), to restart it with
    /// [`Self::start_node_with`].
    pub async fn rebind(&self, id: u64) -> tokio::net::TcpListener {
        rebind_addr(&self.addrs[&id]).await
    }

    pub async fn stop_node(&mut self, id: u64) {
        if let Some(node) = self.nodes.remove(&id) {
            node.shutdown().await;
        }
    }

    pub fn node(&self, id: u64) -> &RaftNode {
        &self.nodes[&id]
    }

    /// Wait until the running nodes agree on one leader that is running, and return its id.
    pub async fn leader(&self) -> u64 {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        self.leader_among(&ids).await
    }

    /// Like [`Self::leader`], asking only the nodes `among`.
    pub async fn leader_among(&self, among: &[u64]) -> u64 {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let ids: Vec<Option<u64>> = among
                .iter()
                .map(|id| self.nodes[id].metrics().current_leader)
                .collect();
            if let Some(Some(l)) = ids.first().copied() {
                if self.nodes.get(&l).is_some_and(|n| n.is_leader())
                    && ids.iter().all(|i| *i == Some(l))
                {
                    return l;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no leader agreed on: {ids:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Write through the leader, following redirects and riding out elections.
    pub async fn write(&self, env: Envelope) -> (u64, Response) {
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut target = self
            .nodes
            .keys()
            .next()
            .copied()
            .expect("a running node to write to");
        loop {
            let node = match self.nodes.get(&target) {
                Some(n) => n,
                None => self
                    .nodes
                    .values()
                    .next()
                    .expect("a running node to write to"),
            };
            match node.client_write(env.clone()).await {
                Ok(r) => return r,
                Err(WriteError::ForwardToLeader(NotLeader {
                    leader_id: Some(l), ..
                })) if self.nodes.contains_key(&l) && l != target => {
                    target = l;
                }
                Err(e) => {
                    if tokio::time::Instant::now() >= deadline {
                        panic!("write failed: {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    target = self
                        .nodes
                        .values()
                        .find_map(|n| n.metrics().current_leader)
                        .filter(|l| self.nodes.contains_key(l))
                        .unwrap_or(target);
                }
            }
        }
    }

    /// Write `n` audit rows, `concurrency` at a time; returns (tag, index, response) per write.
    pub async fn write_many(
        &self,
        prefix: &str,
        n: usize,
        concurrency: usize,
    ) -> Vec<(String, u64, Response)> {
        let mut out = Vec::with_capacity(n);
        let tags: Vec<String> = (0..n).map(|i| format!("{prefix}-{i}")).collect();
        for chunk in tags.chunks(concurrency.max(1)) {
            let futs = chunk.iter().map(|tag| async move {
                let (index, resp) = self.write(audit(tag)).await;
                (tag.clone(), index, resp)
            });
            out.extend(futures::future::join_all(futs).await);
        }
        out
    }

    /// Write `n` audit rows as a stream with up to `concurrency` in flight (no waiting for a
    /// whole chunk), so the leader always has proposals queued. Each write is its own log entry.
    /// Logs progress at info every 10,000 writes.
    pub async fn write_stream(
        &self,
        prefix: &str,
        n: usize,
        concurrency: usize,
    ) -> Vec<(String, u64, Response)> {
        let started = std::time::Instant::now();
        let mut out = Vec::with_capacity(n);
        let mut writes = futures::stream::iter(0..n)
            .map(|i| async move {
                let tag = format!("{prefix}-{i}");
                let (index, resp) = self.write(audit(&tag)).await;
                (tag, index, resp)
            })
            .buffer_unordered(concurrency.max(1));
        while let Some(w) = writes.next().await {
            out.push(w);
            if out.len() % 10_000 == 0 {
                tracing::info!(
                    done = out.len(),
                    of = n,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "write_stream progress"
                );
            }
        }
        out
    }

    /// The leader's last log index (waits for an agreed leader).
    pub async fn last_log_index(&self) -> u64 {
        let leader = self.leader().await;
        self.nodes[&leader].metrics().last_log_index.unwrap_or(0)
    }

    /// Wait until every running node has applied everything the leader has, then check that all
    /// digests are equal; returns the digest.
    pub async fn converged_digest(&self) -> [u8; 32] {
        let leader = self.leader().await;
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let target = self.nodes[&leader].metrics().last_log_index;
            let applied: Vec<Option<u64>> = self
                .nodes
                .values()
                .map(|n| n.metrics().last_applied.map(|l| l.index))
                .collect();
            if target.is_some() && applied.iter().all(|a| *a == target) {
                let mut digests = Vec::new();
                for n in self.nodes.values() {
                    digests.push(n.digest().await.expect("the node's digest"));
                }
                if digests.windows(2).all(|w| w[0] == w[1]) {
                    return digests[0].1;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "nodes did not converge: leader {leader} last_log_index {target:?}, applied {applied:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn shutdown(mut self) {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            self.stop_node(id).await;
        }
    }
}
