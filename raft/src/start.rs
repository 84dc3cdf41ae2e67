//! Starting a [`RaftNode`]: open the log and the state (retrying while a previous instance in
//! this process lets go of them), say how far the state is behind the log, build openraft with
//! its network, storage and eager replication, serve the Raft endpoint, and start the node's
//! tasks: the leader's timers, the replay report, the learner and slow-storage watches. Kept
//! apart from [`crate::node`] so that the watches, which work on a running node, sit above it.

use crate::auth::ClusterAuth;
use crate::clock::ClusterClock;
use crate::config::{ConfigError, RaftNodeConfig};
use crate::durable_mark::LogDamage;
use crate::eager_replication::EagerReplication;
use crate::log_store::{LogStore, OpenError};
use crate::network::HttpNetwork;
use crate::node::{NodeInner, RaftNode, REOPEN_WAIT};
use crate::quorum::QuorumCheck;
use crate::replay::{report_replay, Replay};
use crate::server::{serve_raft, RaftHttpService};
use crate::sm_adapter::{SmAdapter, SmError, StateHandle};
use crate::storage_health::{ProposalHold, StorageHealth};
use crate::timers::{run_timers, DeletePeriods, TimerStats, Timers};
use crate::types::{NodeId, Raft};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// Starting a node failed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot open the raft log: {0}")]
    Log(String),
    /// The log recovered shorter than its durable mark (a damaged WAL): the node must not
    /// rejoin as a voter; the message says what was lost and what to do.
    #[error("refusing to start: {0}")]
    LogDamaged(#[from] LogDamage),
    #[error("cannot open the state machine: {0}")]
    State(String),
    /// The state's RocksDB failed a checksum at start ([`crate::sm_adapter`]'s scan): the
    /// message begins `STATE DAMAGED`, names the file and the remedy (`--rejoin`).
    #[error(transparent)]
    StateDamaged(#[from] StateDamage),
    #[error("cannot start raft: {0}")]
    Raft(String),
    #[error("cannot bootstrap the cluster: {0}")]
    Bootstrap(String),
}

/// The state's RocksDB failed a checksum at start. The state is a copy of what the cluster
/// holds (its log and the others' states), so the remedy is to copy it back, not to repair it.
#[derive(Debug, thiserror::Error)]
#[error(
    "STATE DAMAGED: {} (the state store in {}) failed its checksum ({}{}); this node must not start on \
     it. Remedy: restart this node once with --rejoin, which wipes its state, raft log and \
     snapshots (keeping its vote) and copies the state back from the leader; --rejoin refuses \
     while the other members cannot form a majority without this node, as it may then hold the \
     last copy of acknowledged writes (bring them up first). Do not delete files by hand",
    .damage.file.as_deref().unwrap_or("a file"),
    .dir.display(),
    .damage.table.map(|t| format!("table {t}: ")).unwrap_or_default(),
    .damage.detail,
)]
pub struct StateDamage {
    /// `<data>/sm`.
    pub dir: PathBuf,
    pub damage: raftlane_statemachine::storage::verify::Damage,
}

/// Say at start-up how far the state is behind the log, so an operator waiting for a node to
/// serve again knows what it is doing: after a crash the state comes back at its last memtable
/// flush (it keeps no WAL of its own), and openraft replays the committed entries after it.
/// Returns that span, for [`report_replay`] to follow.
async fn log_recovery(id: NodeId, log: &LogStore, state: &StateHandle) -> Option<Replay> {
    use openraft::storage::RaftLogStorage;
    let applied = state
        .applied_state()
        .ok()
        .and_then(|(l, _)| l)
        .map_or(0, |l| l.index);
    let last = match log.clone().get_log_state().await {
        Ok(s) => s.last_log_id.map_or(0, |l| l.index),
        Err(e) => {
            tracing::warn!(id, error = %e, "could not read the log's state at start-up");
            return None;
        }
    };
    if last > applied {
        tracing::info!(
            id,
            applied,
            last_log_index = last,
            behind = last - applied,
            "state is behind the log: committed entries after `applied` are replayed as the node rejoins"
        );
        Some(Replay {
            from: applied,
            target: last,
        })
    } else {
        tracing::info!(
            id,
            applied,
            last_log_index = last,
            "state is up to date with the log"
        );
        None
    }
}

/// Retry `open` (blocking) while the directory is still locked by a previous instance in this
/// process whose background tasks have not let go of it yet (`is_locked` tells that error).
fn open_retrying<T, E: std::fmt::Display>(
    mut open: impl FnMut() -> Result<T, E>,
    is_locked: impl Fn(&E) -> bool,
) -> Result<T, E> {
    let deadline = std::time::Instant::now() + REOPEN_WAIT;
    loop {
        match open() {
            Ok(v) => return Ok(v),
            Err(e) => {
                if !is_locked(&e) || std::time::Instant::now() >= deadline {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// RocksDB's answer when another instance holds the directory's LOCK file.
fn mentions_lock(e: &impl std::fmt::Display) -> bool {
    let msg = e.to_string();
    msg.contains("lock") || msg.contains("LOCK")
}

impl RaftNode {
    /// Start a node; binds `config.listen_addr` if set.
    pub async fn start(config: RaftNodeConfig) -> Result<RaftNode, StartError> {
        let listener = match config.listen_addr {
            Some(addr) => Some(tokio::net::TcpListener::bind(addr).await?),
            None => None,
        };
        Self::start_inner(config, listener).await
    }

    /// Start a node serving its Raft endpoints on an already bound listener (tests bind
    /// `127.0.0.1:0` first to learn the port they advertise).
    pub async fn start_with_listener(
        config: RaftNodeConfig,
        listener: tokio::net::TcpListener,
    ) -> Result<RaftNode, StartError> {
        Self::start_inner(config, Some(listener)).await
    }

    async fn start_inner(
        config: RaftNodeConfig,
        listener: Option<tokio::net::TcpListener>,
    ) -> Result<RaftNode, StartError> {
        let raft_config = config.openraft_config()?;
        let data_dir = config.data_dir.clone();
        tokio::fs::create_dir_all(&data_dir).await?;

        // Blocking work: RocksDB recovery, and possibly re-installing a snapshot.
        let (log, sm) = {
            let dir = data_dir.clone();
            tokio::task::spawn_blocking(move || {
                let log = open_retrying(
                    || LogStore::open(&dir.join("log")),
                    |e| matches!(e, OpenError::Rocks(_)) && mentions_lock(e),
                )
                .map_err(|e| match e {
                    OpenError::Damaged(damage) => StartError::LogDamaged(damage),
                    other => StartError::Log(other.to_string()),
                })?;
                let sm = open_retrying(
                    || SmAdapter::open(&dir),
                    // "block checksum mismatch" mentions "lock" too: damage is never retried.
                    |e| !matches!(e, SmError::Damaged(_)) && mentions_lock(e),
                )
                .map_err(|e| match e {
                    SmError::Damaged(damage) => StartError::StateDamaged(StateDamage {
                        dir: dir.join("sm"),
                        damage,
                    }),
                    other => StartError::State(other.to_string()),
                })?;
                Ok::<_, StartError>((log, sm))
            })
            .await
            .map_err(|e| StartError::State(e.to_string()))??
        };
        let state = sm.handle();
        let replay = log_recovery(config.id, &log, &state).await;
        let probes = vec![log.release_probe(), state.release_probe()];
        let log_stats = log.stats();
        let sm_stats = state.stats();
        let log_handle = log.clone();

        let auth = ClusterAuth::new(config.secret.as_bytes(), config.tuning.max_clock_skew_ms);
        let clock = Arc::new(ClusterClock::new(
            config.id,
            config.clock_offset_ms,
            config.tuning.max_clock_skew_ms,
        ));
        let network = HttpNetwork::new(config.id, auth.clone(), config.network_config())
            .with_clock(clock.clone());
        let eager = EagerReplication::new(config.id, network.clone());
        if config.tuning.eager_replication {
            log.set_eager(eager.clone());
        }
        let raft = Raft::new(config.id, Arc::new(raft_config), network.clone(), log, sm)
            .await
            .map_err(|e| StartError::Raft(e.to_string()))?;
        eager.attach(raft.metrics());
        let storage_health = Arc::new(StorageHealth::new(config.tuning.slow_storage_handoff_ms));
        let proposal_hold = Arc::new(ProposalHold::default());
        let http = RaftHttpService::new(raft.clone(), auth)
            .with_clock(clock.clone())
            .with_abstain(Arc::new(crate::rejoin::Abstain::load(&data_dir)))
            .with_storage_health(storage_health.clone());

        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = Vec::new();
        let local_addr = match listener {
            Some(listener) => {
                let local = listener.local_addr()?;
                let mut stop = stop_rx.clone();
                let shutdown = async move {
                    while !*stop.borrow() {
                        if stop.changed().await.is_err() {
                            break;
                        }
                    }
                };
                tasks.push(tokio::spawn(serve_raft(listener, http.clone(), shutdown)));
                Some(local)
            }
            None => None,
        };
        if let Some(replay) = replay {
            tasks.push(tokio::spawn(report_replay(
                raft.clone(),
                config.id,
                replay,
                stop_rx.clone(),
            )));
        }
        let leader_changes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        tasks.push(tokio::spawn(crate::leader_changes::watch(
            raft.clone(),
            leader_changes.clone(),
            stop_rx.clone(),
        )));
        let timer_stats = Arc::new(TimerStats::default());
        let learners_stop = stop_rx.clone();
        let quorum = Arc::new(QuorumCheck::new(Duration::from_millis(
            config.tuning.check_quorum_ms(),
        )));
        tasks.push(tokio::spawn(run_timers(
            Timers {
                raft: raft.clone(),
                id: config.id,
                state: state.clone(),
                reclaim_ms: config.tuning.reclaim_interval_ms,
                expire_ms: config.tuning.expire_interval_ms,
                retention_ms: config.tuning.retention_interval_ms,
                deletes: DeletePeriods {
                    messages_ms: config.tuning.message_retention_ms,
                    dead_letters_ms: config.tuning.dead_letter_retention_ms,
                },
                index_walk_done: AtomicBool::new(false),
                stats: timer_stats.clone(),
                clock: clock.clone(),
                quorum: quorum.clone(),
                hold: proposal_hold.clone(),
                write_timeout: Duration::from_millis(config.tuning.read_timeout_ms.max(1)),
            },
            stop_rx,
        )));

        let node = RaftNode {
            inner: Arc::new(NodeInner {
                id: config.id,
                addr: config.advertise_addr.clone(),
                raft,
                config: config.clone(),
                state: Mutex::new(Some(state)),
                log: Mutex::new(Some(log_handle)),
                sm_stats,
                log_stats,
                eager_stats: eager.stats(),
                http,
                local_addr,
                tasks: Mutex::new(tasks),
                stop_tx,
                stopped: AtomicBool::new(false),
                probes,
                timer_stats,
                clock,
                quorum,
                membership_lock: tokio::sync::Mutex::new(()),
                learners: Default::default(),
                storage_health,
                proposal_hold,
                network,
                leader_changes,
            }),
        };
        let learner_watch = tokio::spawn(crate::learner_removal::watch(
            Arc::downgrade(&node.inner),
            learners_stop.clone(),
        ));
        let storage_watch = tokio::spawn(crate::slow_storage::watch(
            Arc::downgrade(&node.inner),
            learners_stop.clone(),
        ));
        let format_watch = tokio::spawn(crate::log_format::watch(
            Arc::downgrade(&node.inner),
            Duration::from_millis(config.tuning.log_format_watch_ms),
            learners_stop,
        ));
        node.inner
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend([learner_watch, storage_watch, format_watch]);
        tracing::info!(id = config.id, addr = %config.advertise_addr, ?local_addr, "raft node started");

        if config.bootstrap {
            if let Err(e) = node.bootstrap(&config.peers).await {
                node.shutdown().await;
                return Err(StartError::Bootstrap(e.to_string()));
            }
        }
        Ok(node)
    }
}
