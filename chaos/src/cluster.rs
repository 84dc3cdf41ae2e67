//! The cluster under test, whichever backend runs it: one set of operations for the fault
//! injector.

use crate::conn::{Attempt, Conn};
use crate::docker::DockerCluster;
use crate::fault_kind::FaultKind;
use crate::local::LocalCluster;
use crate::proxy::CutMode;
use anyhow::bail;
use std::collections::BTreeMap;
use std::time::Duration;

pub enum Cluster {
    Local(LocalCluster),
    Docker(DockerCluster),
}

impl Cluster {
    pub fn ids(&self) -> Vec<u64> {
        match self {
            Cluster::Local(c) => c.nodes.keys().copied().collect(),
            Cluster::Docker(c) => (1..=c.api_addrs.len() as u64).collect(),
        }
    }

    /// API addresses; index `i` is node `i + 1`.
    pub fn api_addrs(&self) -> Vec<String> {
        match self {
            Cluster::Local(c) => c.api_addrs(),
            Cluster::Docker(c) => c.api_addrs.clone(),
        }
    }

    /// Whether this backend can inject `kind` (the docker backend cannot skew a clock).
    pub fn supports(&self, kind: FaultKind) -> bool {
        match self {
            Cluster::Local(_) => true,
            Cluster::Docker(_) => !matches!(
                kind,
                FaultKind::ClockSkew
                    | FaultKind::ClockStep
                    | FaultKind::Latency
                    | FaultKind::SlowFsync
            ),
        }
    }

    /// The node most nodes agree leads (and which says so itself), if any.
    pub async fn leader(&self) -> Option<u64> {
        leader_of(&self.api_addrs(), &self.token()).await
    }

    fn token(&self) -> String {
        match self {
            Cluster::Local(c) => c.spec.admin_token.clone(),
            Cluster::Docker(_) => {
                std::env::var("RAFTLANE_ADMIN_TOKEN").unwrap_or_else(|_| "dev-admin-token".into())
            }
        }
    }

    pub async fn kill(&mut self, id: u64) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => c.kill(id).await,
            Cluster::Docker(c) => c.kill(id).await,
        }
    }

    pub async fn start(&mut self, id: u64) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => c.start(id, None),
            Cluster::Docker(c) => c.start(id).await,
        }
    }

    pub async fn pause(&mut self, id: u64) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => c.pause(id).await,
            Cluster::Docker(c) => c.pause(id).await,
        }
    }

    pub async fn resume(&mut self, id: u64) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => c.resume(id).await,
            Cluster::Docker(c) => c.resume(id).await,
        }
    }

    /// Cut `links` (directed). The docker backend can only disconnect whole nodes: it isolates
    /// the node most of the links touch (a follower on a tie), and says so in the returned note.
    pub async fn partition(
        &mut self,
        links: &[(u64, u64)],
        mode: CutMode,
        leader: u64,
    ) -> anyhow::Result<Option<String>> {
        match self {
            Cluster::Local(c) => {
                for (a, b) in links {
                    c.proxy.cut(*a, *b, mode);
                }
                Ok(None)
            }
            Cluster::Docker(c) => {
                let Some(node) = docker_isolation_target(links, leader) else {
                    return Ok(None);
                };
                c.isolate(node).await?;
                Ok(Some(format!(
                    "docker: isolated node {node} from the network instead"
                )))
            }
        }
    }

    /// Add `ms` of latency to every link touching `nodes`.
    pub async fn delay(&mut self, nodes: &[u64], ms: u64) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => {
                let ids: Vec<u64> = c.nodes.keys().copied().collect();
                for n in nodes {
                    for o in ids.iter().filter(|o| *o != n) {
                        c.proxy.delay(*n, *o, ms);
                        c.proxy.delay(*o, *n, ms);
                    }
                }
                Ok(())
            }
            Cluster::Docker(_) => bail!("the docker backend cannot add latency"),
        }
    }

    pub async fn heal_network(&mut self) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => {
                c.proxy.heal();
                Ok(())
            }
            Cluster::Docker(c) => c.heal_network().await,
        }
    }

    /// Restart node `id` with a proposer clock offset (or none).
    pub async fn restart_with_skew(
        &mut self,
        id: u64,
        offset_ms: Option<i64>,
    ) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => {
                c.kill(id).await?;
                c.start(id, offset_ms)
            }
            Cluster::Docker(_) => bail!("the docker backend cannot skew a node's clock"),
        }
    }

    /// Step node `id`'s wall clock by `step_ms` while it runs (0: back to the real time).
    pub async fn step_clock(&mut self, id: u64, step_ms: i64) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => c.step_clock(id, step_ms),
            Cluster::Docker(_) => bail!("the docker backend cannot step a node's clock"),
        }
    }

    /// Delay each synced write of node `id`'s raft log by `ms` (0: no delay).
    pub async fn slow_fsync(&mut self, id: u64, ms: u64) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => c.slow_fsync(id, ms),
            Cluster::Docker(_) => bail!("the docker backend cannot slow a node's disk"),
        }
    }

    /// Undo everything: resume paused nodes, start stopped ones (without clock skew), restart
    /// skewed ones, step stepped clocks back, give slowed disks their speed back, heal the
    /// network.
    pub async fn heal_all(&mut self) -> anyhow::Result<()> {
        self.heal_network().await?;
        match self {
            Cluster::Local(c) => {
                let ids: Vec<u64> = c.nodes.keys().copied().collect();
                for id in ids {
                    let (paused, running, skewed) = match c.nodes.get(&id) {
                        Some(n) => (n.paused, n.is_running(), n.clock_offset_ms.is_some()),
                        None => continue,
                    };
                    if paused {
                        c.resume(id).await?;
                    }
                    if skewed {
                        c.kill(id).await?;
                    }
                    if !running || skewed {
                        c.start(id, None)?;
                    }
                    c.step_clock(id, 0)?;
                    c.slow_fsync(id, 0)?;
                }
                c.proxy.heal();
            }
            Cluster::Docker(c) => {
                for id in 1..=c.api_addrs.len() as u64 {
                    if c.paused(id).await {
                        c.resume(id).await?;
                    }
                    if !c.running(id).await {
                        c.start(id).await?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Nodes that died on their own since the last call: `(id, exit status)`.
    pub async fn crashed(&mut self) -> Vec<(u64, String)> {
        match self {
            Cluster::Local(c) => c.crashed(),
            Cluster::Docker(_) => Vec::new(),
        }
    }

    /// Proxy counters (local backend).
    pub fn proxy_stats(&self) -> Option<(u64, u64, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        match self {
            Cluster::Local(c) => {
                let s = c.proxy.stats();
                Some((
                    s.connections.load(Relaxed),
                    s.unidentified.load(Relaxed),
                    s.dropped.load(Relaxed),
                ))
            }
            Cluster::Docker(_) => None,
        }
    }

    pub async fn shutdown(&mut self) {
        if let Cluster::Local(c) = self {
            c.shutdown().await;
        }
    }

    /// The last lines of a node's log (local backend).
    pub fn log_tail(&self, id: u64, lines: usize) -> Option<String> {
        match self {
            Cluster::Local(c) => c
                .nodes
                .get(&id)
                .map(|n| crate::process::log_tail(&n.spec.log_file, lines)),
            Cluster::Docker(_) => None,
        }
    }
}

/// The node the docker backend isolates for a set of cut links: the one most links touch,
/// preferring a follower on a tie.
pub fn docker_isolation_target(links: &[(u64, u64)], leader: u64) -> Option<u64> {
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for (a, b) in links {
        *counts.entry(*a).or_default() += 1;
        *counts.entry(*b).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|(n, k)| (*k, *n != leader))
        .map(|(n, _)| n)
}

/// Ask every node who leads; trust a node that says it leads itself, preferring the one most
/// nodes name.
pub async fn leader_of(addrs: &[String], token: &str) -> Option<u64> {
    let conn = Conn::new(addrs, token, Duration::from_millis(1500));
    let mut named: BTreeMap<u64, usize> = BTreeMap::new();
    let mut self_claimed = Vec::new();
    let answers = futures_join(&conn).await;
    for v in answers.into_iter().flatten() {
        let (me, leader) = (v.node_id, v.leader_id);
        if let Some(l) = leader {
            *named.entry(l).or_default() += 1;
            if l == me {
                self_claimed.push(me);
            }
        }
    }
    self_claimed
        .into_iter()
        .max_by_key(|n| named.get(n).copied().unwrap_or(0))
}

async fn futures_join(conn: &Conn) -> Vec<Option<raftlane_client::contract::ClusterStatus>> {
    let mut handles = Vec::new();
    for i in 0..conn.len() {
        let c = conn.clone();
        handles.push(tokio::spawn(async move {
            match c.once(i, |cl| async move { cl.cluster().await }).await {
                Attempt::Ok(v) => Some(v),
                _ => None,
            }
        }));
    }
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.ok().flatten());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_isolates_the_most_cut_node_preferring_a_follower() {
        assert_eq!(
            docker_isolation_target(&[(2, 1), (1, 2), (2, 3), (3, 2)], 2),
            Some(2)
        );
        assert_eq!(docker_isolation_target(&[(2, 3)], 2), Some(3));
        assert_eq!(docker_isolation_target(&[(3, 2)], 2), Some(3));
        assert_eq!(docker_isolation_target(&[(2, 1), (1, 2)], 2), Some(1));
        assert_eq!(docker_isolation_target(&[], 2), None);
    }
}
