//! `raftlane dev`: a local three-node cluster in one process, for trying raftlane out. Stays in
//! the foreground until SIGINT/SIGTERM, then shuts down gracefully. The demo workload is the
//! `raftlane-demo` binary (`node/demo/`), which takes the same flags ([`DevArgs`]); it and the
//! benchmarks start the same cluster through the test kit (`raftlane-testkit`,
//! `ClusterOptions::dev`), which cannot be used here (it depends on this crate) and so takes what
//! must agree from this module: [`prepare`], [`kept_secrets`], [`MAX_BODY_BYTES`], [`announce`].

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

/// The request body limit of a dev cluster: larger than a production default, so the demo's and
/// the bench's payloads fit.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Read a secret kept in the data directory, or create it.
fn stored_secret(dir: &Path, file: &str) -> anyhow::Result<String> {
    let path = dir.join(file);
    if let Some(s) = crate::secret_file::read(&path)? {
        return Ok(s);
    }
    let s = generate_token();
    crate::secret_file::write(&path, &s)?;
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

/// `(cluster secret, admin token)` of the dev cluster in `data_dir`: the secret generated once
/// and kept there, the token `admin_token` if given (non-empty), else generated once and kept
/// there too. Kept, so that a cluster restarted on the same directory keeps talking to itself
/// and its clients' token keeps working.
pub fn kept_secrets(
    data_dir: &Path,
    admin_token: Option<String>,
) -> anyhow::Result<(String, String)> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create {}", data_dir.display()))?;
    let secret = stored_secret(data_dir, "cluster.secret")?;
    let admin_token = match admin_token.filter(|t| !t.is_empty()) {
        Some(t) => t,
        None => stored_secret(data_dir, "admin.token")?,
    };
    Ok((secret, admin_token))
}

/// Start three nodes on `base_port..base_port+2` and wait for a leader. `raftlane dev`'s own:
/// other crates start this cluster through the test kit (see the module documentation).
async fn start_cluster(
    base_port: u16,
    data_dir: &Path,
    admin_token: Option<String>,
) -> anyhow::Result<DevCluster> {
    let (secret, admin_token) = kept_secrets(data_dir, admin_token)?;
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
            max_body_bytes: MAX_BODY_BYTES,
            tuning: Tuning::default(),
            test_client_clock: false,
            metrics_token_required: false,
            rate_limit: Default::default(),
            tls: None,
            conn_limits: Default::default(),
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

/// Get ready to start the cluster `args` describe: delete its data directory under `--fresh`,
/// and say where it will listen.
pub fn prepare(args: &DevArgs) -> anyhow::Result<()> {
    if args.fresh && args.data_dir.exists() {
        std::fs::remove_dir_all(&args.data_dir)
            .with_context(|| format!("cannot remove {}", args.data_dir.display()))?;
    }
    println!(
        "Starting a three-node raftlane cluster on 127.0.0.1:{}-{} (data in {})",
        args.base_port,
        args.base_port.saturating_add(2),
        args.data_dir.display()
    );
    Ok(())
}

/// Say that the cluster is up: which node leads (0: none right now), where the nodes are, the
/// admin token.
pub fn announce(leader: u64, addrs: &[String], admin_token: &str) {
    println!(
        "Cluster up: node {leader} leads. Nodes: {}",
        addrs.join(", ")
    );
    println!("Admin token: {admin_token}");
}

/// Start the cluster `args` describe (after deleting its data directory under `--fresh`) and
/// say so: where it listens, which node leads, the admin token.
pub async fn start(args: &DevArgs) -> anyhow::Result<DevCluster> {
    prepare(args)?;
    let cluster = start_cluster(args.base_port, &args.data_dir, args.admin_token.clone()).await?;
    let leader = cluster
        .nodes
        .iter()
        .find(|n| n.raft.is_leader())
        .map(|n| n.raft.id())
        .unwrap_or(0);
    announce(leader, &cluster.addrs, &cluster.admin_token);
    Ok(cluster)
}

/// Shut the cluster down gracefully, saying so.
pub async fn stop(cluster: DevCluster) {
    stop_with(cluster.shutdown()).await;
}

/// Run `shutdown` (a cluster's graceful shutdown), saying so: the lines a user of `raftlane dev`
/// or the demo sees, whichever started the cluster.
pub async fn stop_with(shutdown: impl std::future::Future<Output = ()>) {
    println!("Shutting down...");
    shutdown.await;
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

/// A curl session against the node at `addr`, which runs as printed (node/tests/dev_banner.rs);
/// docs/DOCKER.md, section 3 walks the same one against the compose cluster.
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
These lines run here as printed. The same session with its answers, against the compose
cluster over TLS: docs/DOCKER.md, section 3."#
    );
}
