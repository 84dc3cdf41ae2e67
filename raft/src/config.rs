//! Configuration of a Raft node: identity, addresses, storage, cluster secret and tuning.
//!
//! Defaults are chosen for small, slow machines (2 cores, fsync in the milliseconds): the
//! election timeout is 1–2 s, at least ten times a slow append's fsync, and the heartbeat
//! (250 ms) stays well below half of its minimum, so leaders are not deposed by a slow disk.
//! Snapshots are built every 100,000 applied entries (each a full export of the state, see
//! [`Tuning::snapshot_logs_since_last`]). Snapshot chunks get 30 s each (openraft's 200 ms default makes real snapshots retry their
//! first chunk forever), and logs already in a snapshot are kept generously (5000) so a purge
//! never races a queued apply or a follower that is only slightly behind.

use crate::network::NetworkConfig;
use crate::types::NodeId;
use openraft::SnapshotPolicy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Default of [`Tuning::snapshot_logs_since_last`].
pub const DEFAULT_SNAPSHOT_LOGS_SINCE_LAST: u64 = 100_000;

/// Default of [`Tuning::retention_interval_ms`]: once a minute.
pub const DEFAULT_RETENTION_INTERVAL_MS: u64 = 60_000;

/// Default of [`Tuning::learner_catchup_timeout_ms`]: a minute, ample for a learner on a LAN
/// to take a snapshot and the log after it; a node that needs longer can be given longer.
pub const DEFAULT_LEARNER_CATCHUP_TIMEOUT_MS: u64 = 60_000;

/// Default of [`Tuning::max_clock_skew_ms`]: NTP keeps clocks within milliseconds; a node 30 s
/// off has a broken clock, and is cut off (loudly) rather than trusted.
pub const DEFAULT_CLOCK_SKEW_MS: u64 = 30_000;

// The state machine accepts a caller's time on a session write within this same bound
// (`SessionAt`, docs/SPEC.md §13.2); as a constant there, since `apply` must not depend on a
// node's tuning.
const _: () =
    assert!(DEFAULT_CLOCK_SKEW_MS == raftlane_statemachine::model::session::MAX_SESSION_AT_SKEW_MS);

/// Upper limit of [`Tuning::max_clock_skew_ms`]: half the state machine's request-id memory, so
/// that a replayed forwarded proposal is either refused as stale or answered as a repeat.
pub const MAX_CLOCK_SKEW_MS: u64 = raftlane_statemachine::apply::request::REQUEST_TTL_MS / 2;

/// Timing and size knobs. Every field has a default (`#[serde(default)]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Tuning {
    pub cluster_name: String,
    pub heartbeat_ms: u64,
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
    /// Deadline for sending one snapshot chunk (and installing after the last one).
    pub install_snapshot_timeout_ms: u64,
    pub snapshot_chunk_bytes: u64,
    /// Build a snapshot every this many applied entries; 0 = never automatically.
    ///
    /// A snapshot exports the whole state, so its cost grows with the queue, while an entry
    /// carries a whole group-committed batch (~20 commands under load). The default (100,000
    /// entries: a few minutes of saturated writes, ~2 M enqueues) keeps that O(state) export rare;
    /// the price is a longer log to keep on disk and to replay after a restart.
    pub snapshot_logs_since_last: u64,
    /// Entries already covered by a snapshot that are kept in the log anyway.
    pub max_in_snapshot_log_to_keep: u64,
    pub purge_batch_size: u64,
    /// Entries per AppendEntries request (and so per follower fsync).
    pub max_payload_entries: u64,
    pub connect_timeout_ms: u64,
    pub backoff_min_ms: u64,
    pub backoff_max_ms: u64,
    /// The one clock-skew bound ([`crate::clock`]): signed node-to-node calls (Raft RPCs and
    /// the API's forwarded writes) whose timestamp is further off this node's clock are refused
    /// as clock skew, and peers or proposals further off the cluster's clock are logged as skew.
    /// At most [`MAX_CLOCK_SKEW_MS`]; 0 disables the freshness check.
    pub max_clock_skew_ms: u64,
    /// Leader-only `ReclaimExpired` proposals every this many ms; 0 disables.
    pub reclaim_interval_ms: u64,
    /// Leader-only `ExpireRecords` proposals every this many ms; 0 disables. Often, so that
    /// each one deletes a few seconds' worth of request records: once a minute, one command
    /// deleted ~175,000 of them under a steady pipeline load and stalled every node for a moment.
    pub expire_interval_ms: u64,
    /// Leader-only retention purges (`PurgeMessageBodies`, `PurgeDeadLetters`, `PurgeState`)
    /// every this many ms, from the `retention` section of the replicated config; 0 disables.
    /// Message passes are paged (at most 1,000 ended messages per entry) and read only what
    /// they act on; PurgeState still scans its table, and retention periods are hours or days,
    /// so a minute of extra lateness does not matter.
    pub retention_interval_ms: u64,
    /// How often the leader looks whether every member reads a newer log format than the
    /// cluster's, and raises it when they do ([`crate::log_format`]); 0 disables (the format
    /// then changes only by `POST /v1/cluster/log-format`).
    pub log_format_watch_ms: u64,
    /// Delete messages that ended without error this many ms after they ended (docs/SPEC.md
    /// §8.6); 0 (the default) keeps them forever. A node setting, not part of the replicated
    /// config (whose encoding is pinned): give every node the same value, since whichever
    /// node leads applies its own.
    pub message_retention_ms: u64,
    /// Delete messages that ended in error (dead letters) this many ms after they ended; 0 (the
    /// default) keeps them forever. Like `message_retention_ms`, the same on every node.
    pub dead_letter_retention_ms: u64,
    /// Upper bound on waiting for a linearizable read to be confirmed and applied, and for a
    /// write to be committed on the leader (after which its outcome is unknown: `503`, and a
    /// retry with the same request id tells).
    pub read_timeout_ms: u64,
    /// A learner (or a voter) counts as caught up at most this many entries behind the
    /// leader: `add_learner` waits for it, a learner is promoted only then, and a voter set
    /// needs a majority of such members ([`crate::membership_rules`]).
    pub learner_lag_threshold: u64,
    /// How long a learner has to catch up (to within `learner_lag_threshold`, answering): the
    /// add call waits this long, and a learner behind for longer, then or later, is removed
    /// ([`crate::learners`]).
    pub learner_catchup_timeout_ms: u64,
    /// Upper bound on one membership operation (adding a learner waits for it to catch up).
    pub membership_timeout_ms: u64,
    /// The log's synced writes count as slow when they take this long on average (or one has
    /// been waiting this long); a leader whose storage stays slow hands leadership to a
    /// healthy voter ([`crate::slow_storage`]). 0 turns judging and handing off off.
    pub slow_storage_handoff_ms: u64,
    /// A leader sends each batch to the other voters while it writes the batch itself, so the
    /// followers' fsyncs overlap its own ([`crate::eager_replication`]). On by default; off
    /// only to measure what it saves.
    pub eager_replication: bool,
}

impl Tuning {
    /// Check-quorum's bound ([`crate::quorum`]): a leader that no majority of the voters has
    /// answered for longer than two election timeouts reports no leader, refuses writes and
    /// fails the ones waiting on it. Two, not one: by then the others have had a whole timeout
    /// to elect a new leader, and a leader merely slowed down (a long fsync on both followers)
    /// is not turned away by one slow round.
    pub fn check_quorum_ms(&self) -> u64 {
        self.election_timeout_max_ms.saturating_mul(2).max(1)
    }
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            cluster_name: "raftlane".into(),
            heartbeat_ms: 250,
            election_timeout_min_ms: 1000,
            election_timeout_max_ms: 2000,
            install_snapshot_timeout_ms: 30_000,
            snapshot_chunk_bytes: 1024 * 1024,
            snapshot_logs_since_last: DEFAULT_SNAPSHOT_LOGS_SINCE_LAST,
            max_in_snapshot_log_to_keep: 5_000,
            purge_batch_size: 256,
            max_payload_entries: 300,
            connect_timeout_ms: 1000,
            backoff_min_ms: 100,
            backoff_max_ms: 2000,
            max_clock_skew_ms: DEFAULT_CLOCK_SKEW_MS,
            reclaim_interval_ms: 1000,
            expire_interval_ms: 5_000,
            retention_interval_ms: DEFAULT_RETENTION_INTERVAL_MS,
            log_format_watch_ms: 5_000,
            message_retention_ms: 0,
            dead_letter_retention_ms: 0,
            read_timeout_ms: 30_000,
            learner_lag_threshold: 1000,
            learner_catchup_timeout_ms: DEFAULT_LEARNER_CATCHUP_TIMEOUT_MS,
            membership_timeout_ms: 300_000,
            slow_storage_handoff_ms: crate::storage_health::DEFAULT_BOUND_MS,
            eager_replication: true,
        }
    }
}

/// Everything needed to start a node.
#[derive(Clone, Serialize, Deserialize)]
pub struct RaftNodeConfig {
    pub id: NodeId,
    /// Where to serve the Raft endpoints. `None`: serve nothing; mount
    /// `RaftNode::http_service()` in another router instead.
    pub listen_addr: Option<SocketAddr>,
    /// `host:port` that peers dial to reach this node's Raft endpoints.
    pub advertise_addr: String,
    /// Holds `log/` (Raft log), `sm/` (state), `snapshots/`.
    pub data_dir: PathBuf,
    /// The initial voters (id → advertise address), this node included; used by `bootstrap`.
    pub peers: BTreeMap<NodeId, String>,
    /// Initialize the cluster with `peers` at start if this node has never been initialized.
    /// Set it on exactly one node of a new cluster.
    pub bootstrap: bool,
    /// Shared cluster secret authenticating node-to-node RPCs.
    pub secret: String,
    #[serde(default)]
    pub tuning: Tuning,
    /// Dial peers over TLS with this CA and client identity (docs/SPEC.md §9.6); `None`:
    /// plain HTTP. Not part of the serialized config: it is read from files at start.
    #[serde(skip)]
    pub peer_tls: Option<raftlane_transport::tls::ClientTls>,
    /// Added to this node's wall clock (on top of `RAFTLANE_CLOCK_OFFSET_MS`): lets an
    /// in-process test run one node with a skewed clock. 0 in production.
    #[serde(default)]
    pub clock_offset_ms: i64,
}

impl std::fmt::Debug for RaftNodeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaftNodeConfig")
            .field("id", &self.id)
            .field("listen_addr", &self.listen_addr)
            .field("advertise_addr", &self.advertise_addr)
            .field("data_dir", &self.data_dir)
            .field("peers", &self.peers)
            .field("bootstrap", &self.bootstrap)
            .field("secret", &"<redacted>")
            .field("tuning", &self.tuning)
            .field("peer_tls", &self.peer_tls)
            .field("clock_offset_ms", &self.clock_offset_ms)
            .finish()
    }
}

/// The configuration cannot work.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("the cluster secret is empty")]
    EmptySecret,
    #[error("bootstrap peers must include this node ({0})")]
    SelfNotInPeers(NodeId),
    #[error("invalid raft timing: {0}")]
    Openraft(#[from] openraft::ConfigError),
    #[error("max_clock_skew_ms = {0} is above the limit of {MAX_CLOCK_SKEW_MS} ms (half the request-id memory)")]
    ClockSkewBound(u64),
}

impl RaftNodeConfig {
    /// A config with default tuning.
    pub fn new(
        id: NodeId,
        advertise_addr: impl Into<String>,
        data_dir: impl Into<PathBuf>,
        secret: impl Into<String>,
    ) -> Self {
        Self {
            id,
            listen_addr: None,
            advertise_addr: advertise_addr.into(),
            data_dir: data_dir.into(),
            peers: BTreeMap::new(),
            bootstrap: false,
            secret: secret.into(),
            tuning: Tuning::default(),
            peer_tls: None,
            clock_offset_ms: 0,
        }
    }

    /// Check the config and derive openraft's.
    pub fn openraft_config(&self) -> Result<openraft::Config, ConfigError> {
        if self.secret.is_empty() {
            return Err(ConfigError::EmptySecret);
        }
        if self.secret.len() < 16 {
            tracing::warn!("the cluster secret is shorter than 16 bytes");
        }
        if self.bootstrap && !self.peers.contains_key(&self.id) {
            return Err(ConfigError::SelfNotInPeers(self.id));
        }
        let t = &self.tuning;
        if t.max_clock_skew_ms > MAX_CLOCK_SKEW_MS {
            return Err(ConfigError::ClockSkewBound(t.max_clock_skew_ms));
        }
        let config = openraft::Config {
            cluster_name: t.cluster_name.clone(),
            heartbeat_interval: t.heartbeat_ms,
            election_timeout_min: t.election_timeout_min_ms,
            election_timeout_max: t.election_timeout_max_ms,
            install_snapshot_timeout: t.install_snapshot_timeout_ms,
            snapshot_max_chunk_size: t.snapshot_chunk_bytes.max(1),
            snapshot_policy: match t.snapshot_logs_since_last {
                0 => SnapshotPolicy::Never,
                n => SnapshotPolicy::LogsSinceLast(n),
            },
            max_in_snapshot_log_to_keep: t.max_in_snapshot_log_to_keep,
            purge_batch_size: t.purge_batch_size.max(1),
            max_payload_entries: t.max_payload_entries,
            // Only used by a blocking `add_learner`: the learner counts as caught up once it is
            // at most this many entries behind.
            replication_lag_threshold: t.learner_lag_threshold,
            ..Default::default()
        };
        Ok(config.validate()?)
    }

    pub(crate) fn network_config(&self) -> NetworkConfig {
        let t = &self.tuning;
        NetworkConfig {
            connect_timeout: Duration::from_millis(t.connect_timeout_ms.max(1)),
            backoff_min: Duration::from_millis(t.backoff_min_ms.max(1)),
            backoff_max: Duration::from_millis(t.backoff_max_ms.max(t.backoff_min_ms).max(1)),
            tls: self.peer_tls.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        let c = RaftNodeConfig::new(1, "127.0.0.1:1", "/tmp/x", "0123456789abcdef");
        let oc = c.openraft_config().unwrap();
        assert_eq!(oc.heartbeat_interval, 250);
        assert!(oc.election_timeout_min >= 4 * oc.heartbeat_interval);
        assert_eq!(oc.snapshot_policy, SnapshotPolicy::LogsSinceLast(100_000));
        assert!(oc.install_snapshot_timeout >= 10_000);
        assert_eq!(c.tuning.check_quorum_ms(), 4_000);
    }

    #[test]
    fn rejects_bad_configs() {
        let mut c = RaftNodeConfig::new(1, "a", "/tmp/x", "");
        assert!(matches!(c.openraft_config(), Err(ConfigError::EmptySecret)));
        c.secret = "s".into();
        c.bootstrap = true;
        assert!(matches!(
            c.openraft_config(),
            Err(ConfigError::SelfNotInPeers(1))
        ));
        c.bootstrap = false;
        c.tuning.heartbeat_ms = 5000;
        assert!(matches!(c.openraft_config(), Err(ConfigError::Openraft(_))));
    }

    #[test]
    fn tuning_from_partial_toml_like_json() {
        let t: Tuning = serde_json::from_str(r#"{"heartbeat_ms": 100}"#).unwrap();
        assert_eq!(t.heartbeat_ms, 100);
        assert_eq!(t.election_timeout_min_ms, 1000);
    }
}
