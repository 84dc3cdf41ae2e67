//! The local backend: three `raftlane node` child processes on loopback ports, their Raft
//! traffic routed through the fault proxy.

use crate::process::{ClusterSpec, NodeProcess, NodeSpec};
use crate::proxy::Proxy;
use anyhow::Context;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub struct LocalCluster {
    pub spec: ClusterSpec,
    pub nodes: BTreeMap<u64, NodeProcess>,
    pub proxy: Proxy,
    pub dir: PathBuf,
}

/// A free loopback port (bound, read, released: a small race with other processes remains).
fn free_port() -> anyhow::Result<SocketAddr> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("cannot bind a loopback port")?;
    Ok(l.local_addr()?)
}

impl LocalCluster {
    /// Prepare (but do not start) a cluster of `n` nodes under `dir`.
    pub async fn create(
        binary: &Path,
        dir: &Path,
        n: u64,
        secret: &str,
        admin_token: &str,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut real = BTreeMap::new();
        for id in 1..=n {
            real.insert(id, free_port()?);
        }
        let proxy = Proxy::start(&real).await?;
        let spec = ClusterSpec {
            binary: binary.to_path_buf(),
            secret: secret.to_string(),
            admin_token: admin_token.to_string(),
            peers: proxy.addrs.clone(),
        };
        let mut nodes = BTreeMap::new();
        for (id, listen) in &real {
            let advertise = *proxy.addrs.get(id).context("proxy address missing")?;
            nodes.insert(
                *id,
                NodeProcess::new(NodeSpec {
                    id: *id,
                    listen: *listen,
                    advertise,
                    data_dir: dir.join(format!("node{id}")),
                    log_file: dir.join(format!("node{id}.log")),
                    clock_step_file: dir.join(format!("node{id}.clock-step")),
                    fsync_delay_file: dir.join(format!("node{id}.fsync-delay")),
                }),
            );
        }
        Ok(Self {
            spec,
            nodes,
            proxy,
            dir: dir.to_path_buf(),
        })
    }

    /// API addresses in node-id order (clients talk to the real ports directly).
    pub fn api_addrs(&self) -> Vec<String> {
        self.nodes
            .values()
            .map(|n| n.spec.listen.to_string())
            .collect()
    }

    pub fn start(&mut self, id: u64, clock_offset_ms: Option<i64>) -> anyhow::Result<()> {
        let node = self
            .nodes
            .get_mut(&id)
            .with_context(|| format!("no node {id}"))?;
        node.start(&self.spec, clock_offset_ms)?;
        self.proxy.set_pid(id, node.pid());
        Ok(())
    }

    /// Start node `id` with more arguments (e.g. `--rejoin`).
    pub fn start_with(&mut self, id: u64, extra: &[&str]) -> anyhow::Result<()> {
        let node = self
            .nodes
            .get_mut(&id)
            .with_context(|| format!("no node {id}"))?;
        node.start_with(&self.spec, None, extra)?;
        self.proxy.set_pid(id, node.pid());
        Ok(())
    }

    /// Stop node `id` cleanly (SIGTERM); its exit status.
    pub async fn stop(&mut self, id: u64) -> anyhow::Result<Option<std::process::ExitStatus>> {
        let node = self
            .nodes
            .get_mut(&id)
            .with_context(|| format!("no node {id}"))?;
        let status = node.stop().await;
        self.proxy.set_pid(id, None);
        status
    }

    /// Step node `id`'s wall clock to `step_ms` off the real time, live (0: back).
    pub fn step_clock(&mut self, id: u64, step_ms: i64) -> anyhow::Result<()> {
        self.nodes
            .get(&id)
            .with_context(|| format!("no node {id}"))?
            .set_clock_step(step_ms)
    }

    /// Delay each synced write of node `id`'s raft log by `ms`, live (0: no delay).
    pub fn slow_fsync(&mut self, id: u64, ms: u64) -> anyhow::Result<()> {
        self.nodes
            .get(&id)
            .with_context(|| format!("no node {id}"))?
            .set_fsync_delay(ms)
    }

    pub async fn kill(&mut self, id: u64) -> anyhow::Result<()> {
        let node = self
            .nodes
            .get_mut(&id)
            .with_context(|| format!("no node {id}"))?;
        node.kill().await;
        self.proxy.set_pid(id, None);
        Ok(())
    }

    pub async fn pause(&mut self, id: u64) -> anyhow::Result<()> {
        self.nodes
            .get_mut(&id)
            .with_context(|| format!("no node {id}"))?
            .pause()
            .await
    }

    pub async fn resume(&mut self, id: u64) -> anyhow::Result<()> {
        self.nodes
            .get_mut(&id)
            .with_context(|| format!("no node {id}"))?
            .resume()
            .await
    }

    /// Nodes whose process exited without being killed by us: `(id, status)`. They are
    /// restarted by the next heal.
    pub fn crashed(&mut self) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        for (id, node) in self.nodes.iter_mut() {
            if let Some(status) = node.exited() {
                out.push((*id, status.to_string()));
            }
        }
        for (id, _) in &out {
            self.proxy.set_pid(*id, None);
        }
        out
    }

    pub async fn shutdown(&mut self) {
        for node in self.nodes.values_mut() {
            if node.paused {
                let _ = node.resume().await;
            }
            node.kill().await;
        }
        self.proxy.shutdown();
    }
}
