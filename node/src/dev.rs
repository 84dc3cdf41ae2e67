//! `raftlane dev`: a local three-node cluster in one process, for trying raftlane out. Stays in
//! the foreground until SIGINT/SIGTERM, then shuts down gracefully. The demo workload is the
//! `raftlane-demo` binary (`node/demo/`), which starts the same cluster through [`start`] and
//! takes the same flags ([`DevArgs`]); the benchmarks' in-process cluster is [`start_cluster`].

use crate::config::generate_token;
use crate::server::{self, NodeOptions, RunningNode};
use anyhow::Context;
use clap::Args;
use raftlane_raft::Tuning;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Args, Debug, Clone)]
pub struct DevArgs {
    /// Nodes listen on 127.0.0.1:P, P+1 and P+2.
    #[arg(long, default_value_t = 7001)]
    pub base_port: u16,
    /// Data directory; each node uses DIR/node<N>. Kept between runs (restart recovers it).
    #[arg(long, default_value = ".raftlane/dev")]
    pub data_dir: PathBuf,
    /// Delete the data directory first (a brand-new cluster).
    #[arg(long)]
    pub fresh: bool,
    /// Admin token (default: RAFTLANE_ADMIN_TOKEN, else generated once and kept in the data dir).
    #[arg(long, env = "RAFTLANE_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
}

/// Read a secret kept in the data directory, or create it.
fn stored_secret(dir: &Path, file: &str) -> anyhow::Result<String> {
    let path = dir.join(file);
    if let Ok(s) = std::fs::read_to_string(&path) {
        if !s.trim().is_empty() {
            return Ok(s.trim().to_string());
        }
    }
    let s = generate_token();
    std::fs::write(&path, &s).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(s)
}

/// A running local cluster.
pub struct DevCluster {
    pub nodes: Vec<RunningNode>,
    pub addrs: Vec<String>,
    pub admin_token: String,
}

impl DevCluster {
    pub async fn shutdown(self) {
        let stops: Vec<_> = self
            .nodes
            .into_iter()
            .map(|n| tokio::spawn(n.shutdown()))
            .collect();
        for s in stops {
            let _ = s.await;
        }
    }
}

/// Start three nodes on `base_port..base_port+2` and wait for a leader.
pub async fn start_cluster(
    base_port: u16,
    data_dir: &Path,
    admin_token: Option<String>,
) -> anyhow::Result<DevCluster> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create {}", data_dir.display()))?;
    let secret = stored_secret(data_dir, "cluster.secret")?;
    let admin_token = match admin_token.filter(|t| !t.is_empty()) {
        Some(t) => t,
        None => stored_secret(data_dir, "admin.token")?,
    };
    let peers: BTreeMap<u64, String> = (1..=3u64)
        .map(|id| (id, format!("127.0.0.1:{}", base_port + (id as u16 - 1))))
        .collect();
    let mut nodes = Vec::new();
    for (id, addr) in &peers {
        let opts = NodeOptions {
            id: *id,
            listen: addr
                .parse()
                .with_context(|| format!("bad address {addr}"))?,
            advertise: addr.clone(),
            peers: peers.clone(),
            data_dir: data_dir.join(format!("node{id}")),
            bootstrap: *id == 1,
            cluster_secret: secret.clone(),
            admin_token: admin_token.clone(),
            max_body_bytes: 1024 * 1024,
            tuning: Tuning::default(),
        };
        nodes.push(
            server::start(opts)
                .await
                .with_context(|| format!("node {id}"))?,
        );
    }
    let started = Instant::now();
    loop {
        if nodes.iter().any(|n| n.raft.is_leader()) {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            anyhow::bail!("no leader elected within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(DevCluster {
        addrs: peers.into_values().collect(),
        nodes,
        admin_token,
    })
}

/// Wait for SIGINT or SIGTERM.
pub async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Start the cluster `args` describe (after deleting its data directory under `--fresh`) and
/// say so: where it listens, which node leads, the admin token.
pub async fn start(args: &DevArgs) -> anyhow::Result<DevCluster> {
    if args.fresh && args.data_dir.exists() {
        std::fs::remove_dir_all(&args.data_dir)
            .with_context(|| format!("cannot remove {}", args.data_dir.display()))?;
    }
    println!(
        "Starting a three-node raftlane cluster on 127.0.0.1:{}-{} (data in {})",
        args.base_port,
        args.base_port + 2,
        args.data_dir.display()
    );
    let cluster = start_cluster(args.base_port, &args.data_dir, args.admin_token.clone()).await?;
    let leader = cluster
        .nodes
        .iter()
        .find(|n| n.raft.is_leader())
        .map(|n| n.raft.id())
        .unwrap_or(0);
    println!(
        "Cluster up: node {leader} leads. Nodes: {}",
        cluster.addrs.join(", ")
    );
    println!("Admin token: {}", cluster.admin_token);
    Ok(cluster)
}

/// Shut the cluster down gracefully, saying so.
pub async fn stop(cluster: DevCluster) {
    println!("Shutting down...");
    cluster.shutdown().await;
    println!("Stopped.");
}

/// `raftlane dev`: start the cluster, print a curl session to try, run until SIGINT/SIGTERM.
pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    let cluster = start(&args).await?;
    print_curl_help(&cluster.addrs[0], &cluster.admin_token);
    println!("\nThe cluster keeps running. Press Ctrl-C to stop it.");
    wait_for_signal().await;
    stop(cluster).await;
    Ok(())
}

/// A curl session against the node at `addr` (the same as docs/DOCKER.md, section 3).
pub fn print_curl_help(addr: &str, token: &str) {
    println!(
        r#"
Try it (another terminal; ROW and FENCE come from the answer before):
  export RL=http://{addr} TOKEN={token}
  AUTH="Authorization: Bearer $TOKEN"; JSON="Content-Type: application/json"
  curl -s -H "$AUTH" -H "$JSON" $RL/v1/channels/orders/messages -d '{{"raw":"order 1001"}}'
  curl -s -H "$AUTH" -H "$JSON" $RL/v1/claims -d '{{"stage":"ingress","limit":1,"owner":"me","ttl_ms":30000,"channel":"orders"}}'
  curl -s -H "$AUTH" -H "$JSON" $RL/v1/rows/ROW/handoff -d '{{"fence":FENCE,"deliveries":[{{"destination":"warehouse","payload":"1 box"}}]}}'
  curl -s -H "$AUTH" -H "$JSON" $RL/v1/lanes/outbound/warehouse/claim -d '{{"owner":"me","ttl_ms":30000}}'
  curl -s -H "$AUTH" -H "$JSON" $RL/v1/rows/ROW/done -d '{{"fence":FENCE}}'
  curl -s -H "$AUTH" $RL/v1/messages/MESSAGE_ID      # the message, its events and rows
  curl -s -H "$AUTH" "$RL/v1/audit/verify?org=default"
The same session with its answers: docs/DOCKER.md, section 3 (it works here as written)."#
    );
}
