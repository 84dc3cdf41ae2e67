//! Starting one node: the Raft replica and the HTTP server that carries both the API and the
//! Raft transport (`/raft/...`) on one port ([`crate::listener`]: TLS when configured, and
//! timeouts for slow and idle connections).

use crate::backend::RaftBackend;
use crate::exit_status::ExitStatus;
use crate::listener::ConnLimits;
use crate::tls::TlsFiles;
use anyhow::Context;
use axum::extract::Request;
use axum::routing::post;
use axum::Router;
use raftlane_api::{ApiConfig, AppState};
use raftlane_raft::{CoreFailure, RaftNode, RaftNodeConfig, Tuning};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Everything a node needs, resolved from flags, environment and the config file.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    pub id: u64,
    pub listen: SocketAddr,
    /// `host:port` peers and clients use to reach this node (defaults to `listen`).
    pub advertise: String,
    /// Initial voters, this node included.
    pub peers: BTreeMap<u64, String>,
    pub data_dir: PathBuf,
    /// Initialize the cluster from `peers` if it never was (idempotent).
    pub bootstrap: bool,
    pub cluster_secret: String,
    pub admin_token: String,
    pub max_body_bytes: usize,
    pub tuning: Tuning,
    /// Test mode (`--test-client-clock`): requests may carry `Raftlane-Client-Time-Ms`, and
    /// the leader's housekeeping timers are off ([`NodeOptions::effective_tuning`]).
    pub test_client_clock: bool,
    /// `GET /metrics` needs an unscoped token (`--metrics-token-required`).
    pub metrics_token_required: bool,
    /// Requests per second (and burst) per token (`--rate-limit-per-token`; off by default).
    pub rate_limit: raftlane_api::rate_limit::RateLimit,
    /// Serve HTTPS and dial peers over TLS (`--tls-cert`, ...); `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
    /// Timeouts of slow and idle connections (`--http-header-timeout`, `--idle-timeout`).
    pub conn_limits: ConnLimits,
}

impl NodeOptions {
    /// The tuning the replica runs with: in test mode every leader timer that proposes with
    /// the wall clock (lease reclaim, record expiry, retention purges, the log format's raise) is off, since one such
    /// proposal would move the state's clock past the times a test sets and expire its leases.
    pub fn effective_tuning(&self) -> Tuning {
        let mut tuning = self.tuning.clone();
        if self.test_client_clock {
            tuning.reclaim_interval_ms = 0;
            tuning.expire_interval_ms = 0;
            tuning.retention_interval_ms = 0;
            tuning.log_format_watch_ms = 0;
        }
        tuning
    }
}

/// The exit status of `raftlane node` after its Raft core stopped by itself on a storage error
/// such as a full disk: EX_TEMPFAIL, "try again later", which is what a restart does (damaged
/// data exits [`ExitStatus::Damaged`] instead: [`ExitStatus::of_core_failure`]).
pub const EXIT_CORE_FAILED: i32 = 75;

/// How long a node whose Raft core failed may take to close before it exits anyway.
const FAILED_SHUTDOWN_WAIT: Duration = Duration::from_secs(30);

/// A node that is serving.
pub struct RunningNode {
    pub raft: RaftNode,
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    http: JoinHandle<()>,
}

impl RunningNode {
    /// Stop serving HTTP, then shut the replica down (its databases are closed on return).
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(Duration::from_secs(10), self.http)
            .await
            .is_err()
        {
            tracing::warn!("HTTP server did not stop within 10 s");
        }
        self.raft.shutdown().await;
    }

    /// Serve until `signal` (then shut down, `Ok`) or until the Raft core stops by itself
    /// (`Err`, after an ERROR line and a bounded shutdown; the caller exits with
    /// [`ExitStatus::of_core_failure`]: [`EXIT_CORE_FAILED`], or damaged).
    ///
    /// Why exit rather than recover in place: openraft's core does not restart after a storage
    /// error, so the process would live on as a zombie (answering HTTP, never writing) and a
    /// supervisor (`restart: unless-stopped`, systemd's `Restart=on-failure`) would never act.
    /// Restarting reopens the databases, which is how a node recovers once space is freed;
    /// while `/readyz` fails and writes answer 503 `storage_unavailable` until it exits.
    pub async fn run_until_stopped(
        self,
        signal: impl std::future::Future<Output = ()>,
    ) -> Result<(), CoreFailure> {
        let failure = tokio::select! {
            () = signal => None,
            failure = self.raft.core_failed() => Some(failure),
        };
        let Some(failure) = failure else {
            tracing::info!("signal received; shutting down");
            self.shutdown().await;
            return Ok(());
        };
        let status = ExitStatus::of_core_failure(&failure);
        if status == ExitStatus::Damaged {
            tracing::error!(
                id = self.raft.id(),
                error = %failure,
                exit_status = status.code(),
                "NODE FAILED: STATE DAMAGED: a read of its data failed its checksum; restarting \
                 cannot help: start it once with --rejoin (it wipes its state and log and copies \
                 them back from the leader)"
            );
        } else {
            tracing::error!(
                id = self.raft.id(),
                error = %failure,
                exit_status = status.code(),
                "NODE FAILED: its raft core stopped and does not restart in place; exiting so \
                 that the supervisor restarts it (free disk space first if the disk is full)"
            );
        }
        if tokio::time::timeout(FAILED_SHUTDOWN_WAIT, self.shutdown())
            .await
            .is_err()
        {
            tracing::error!(
                "the failed node did not close within {FAILED_SHUTDOWN_WAIT:?}; exiting anyway"
            );
        }
        Err(failure)
    }
}

/// Bind `opts.listen` and start.
pub async fn start(opts: NodeOptions) -> anyhow::Result<RunningNode> {
    let listener = TcpListener::bind(opts.listen)
        .await
        .with_context(|| format!("cannot listen on {}", opts.listen))?;
    start_on(opts, listener).await
}

/// Start on an already bound listener (tests bind port 0 first).
pub async fn start_on(opts: NodeOptions, listener: TcpListener) -> anyhow::Result<RunningNode> {
    let addr = listener.local_addr()?;
    // TLS files are read before anything starts: a bad file stops the node with its name.
    let (acceptor, peer_tls) = match &opts.tls {
        Some(files) => (
            Some(tokio_rustls::TlsAcceptor::from(files.server_config()?)),
            Some(files.peer_client()?),
        ),
        None => (None, None),
    };
    if let Some(warning) = crate::known_defaults::warning(&opts.cluster_secret, &opts.admin_token) {
        tracing::warn!("{warning}");
    }
    // The data directory holds message bodies: the owner's only, whatever the umask was
    // (node/src/data_dir.rs). The umask is process-wide, so a program that starts nodes through
    // this library (tests, the demo, the bench) gets private files from RocksDB's threads too.
    crate::data_dir::restrict_umask();
    crate::data_dir::secure(&opts.data_dir)?;
    let raft_config = RaftNodeConfig {
        id: opts.id,
        listen_addr: None,
        advertise_addr: opts.advertise.clone(),
        data_dir: opts.data_dir.clone(),
        peers: opts.peers.clone(),
        bootstrap: opts.bootstrap,
        secret: opts.cluster_secret.clone(),
        tuning: opts.effective_tuning(),
        peer_tls: peer_tls.clone(),
        clock_offset_ms: 0,
    };
    if opts.test_client_clock {
        tracing::warn!(
            "test mode (--test-client-clock): clients set the clock, leader timers are off"
        );
    }
    let raft = RaftNode::start(raft_config)
        .await
        .context("cannot start the raft replica")?;
    let api_config = ApiConfig {
        admin_token: opts.admin_token.clone(),
        cluster_secret: opts.cluster_secret.clone(),
        max_body_bytes: opts.max_body_bytes,
        peer_timeout: Duration::from_secs(10),
        membership_timeout: Duration::from_millis(opts.tuning.membership_timeout_ms),
        keyring: raftlane_api::crypto::Keyring::from_env().context("invalid RAFTLANE_KEYRING")?,
        test_client_clock: opts.test_client_clock,
        metrics_token_required: opts.metrics_token_required,
        rate_limit: opts.rate_limit,
        peer_tls,
        max_clock_skew_ms: raft.config().tuning.max_clock_skew_ms,
    };
    let state = AppState::new(Arc::new(RaftBackend::new(raft.clone())), &api_config);
    let service = raft.http_service();
    let raft_routes = Router::new().route(
        "/raft/{*path}",
        post(move |req: Request| {
            let service = service.clone();
            async move { service.handle(req).await }
        }),
    );
    let app = raftlane_api::router(state, raft_routes);
    let (stop, stop_rx) = watch::channel(false);
    let tls = acceptor.is_some();
    let http = tokio::spawn(crate::listener::serve(
        listener,
        app,
        acceptor,
        opts.conn_limits,
        stop_rx,
    ));
    tracing::info!(id = opts.id, %addr, advertise = %opts.advertise, tls, "node serving");
    Ok(RunningNode {
        raft,
        addr,
        stop,
        http,
    })
}
