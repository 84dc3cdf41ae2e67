//! This node's own figures for `/metrics`: Raft (leader changes, the snapshot, and on the
//! leader the commit index and each follower's lag; term and indexes are the API's
//! `cluster_figures`, from the status every backend reports), the log's storage (appends, synced writes and their latency histograms, slow
//! storage), eager replication, the state machine's work and snapshots, clock offsets and
//! memory. The replicated state's figures (rows, lanes, engines) are the API's
//! (`raftlane_api::metrics::state_figures`): every node reports them alike.

use raftlane_api::metrics::set::{HistogramValue, LabelValue, Labels, MetricSet};
use raftlane_raft::storage_latency::LatencyHistogram;
use raftlane_raft::RaftNode;
use std::sync::atomic::{AtomicU64, Ordering};

fn load(n: &AtomicU64) -> u64 {
    n.load(Ordering::Relaxed)
}

fn none() -> Labels {
    Vec::new()
}

fn histogram(h: &LatencyHistogram) -> HistogramValue {
    HistogramValue {
        sum: h.sum_seconds(),
        count: h.count(),
        buckets: h.buckets(),
    }
}

/// Write every figure of `node` into `set`.
pub fn write(node: &RaftNode, set: &mut MetricSet) {
    raft_figures(node, set);
    log_figures(node, set);
    state_machine_figures(node, set);
    clock_figures(node, set);
    memory_figures(node, set);
}

fn raft_figures(node: &RaftNode, set: &mut MetricSet) {
    let m = node.metrics();
    let leads = m.current_leader == Some(node.id());
    set.counter(
        "raftlane_leader_changes_total",
        "Leaders this node saw take over (a new term or leader) since it started",
        none(),
        node.leader_changes(),
    );
    let last_log = m.last_log_index.unwrap_or(0);
    if let Some(s) = &m.snapshot {
        set.gauge(
            "raftlane_snapshot_index",
            "The last entry covered by this node's current snapshot",
            none(),
            s.index as f64,
        );
    }
    // The leader alone knows where each follower is: its lag, and the commit index (the
    // highest index a majority of voters holds).
    let Some(replication) = m.replication.as_ref().filter(|_| leads) else {
        return;
    };
    let membership = m.membership_config.membership();
    let mut voter_matched: Vec<u64> = Vec::new();
    for id in membership.voter_ids() {
        let matched = if id == node.id() {
            last_log
        } else {
            replication
                .get(&id)
                .and_then(|l| l.as_ref())
                .map_or(0, |l| l.index)
        };
        voter_matched.push(matched);
    }
    for (id, matched) in replication {
        if *id == node.id() {
            continue;
        }
        let matched = matched.as_ref().map_or(0, |l| l.index);
        set.gauge(
            "raftlane_replication_lag_entries",
            "Entries of the leader's log a member does not hold yet (leader only)",
            vec![("member", LabelValue(id.to_string()))],
            last_log.saturating_sub(matched) as f64,
        );
    }
    voter_matched.sort_unstable_by(|a, b| b.cmp(a));
    if let Some(committed) = voter_matched.get(voter_matched.len() / 2) {
        set.gauge(
            "raftlane_commit_index",
            "The highest index a majority of voters holds (leader only)",
            none(),
            *committed as f64,
        );
    }
}

fn log_figures(node: &RaftNode, set: &mut MetricSet) {
    let log = node.log_stats();
    set.counter(
        "raftlane_log_appends_total",
        "Batches appended to the log",
        none(),
        load(&log.appends),
    );
    set.counter(
        "raftlane_log_entries_appended_total",
        "Entries appended to the log",
        none(),
        load(&log.entries),
    );
    set.counter(
        "raftlane_log_syncs_total",
        "Synced writes of the log (appends, votes, truncations)",
        none(),
        load(&log.syncs),
    );
    set.counter_f64(
        "raftlane_log_sync_seconds_total",
        "Time spent in the log's synced writes, fsync included",
        none(),
        load(&log.sync_micros) as f64 / 1e6,
    );
    set.histogram(
        "raftlane_log_sync_latency_seconds",
        "Each synced write of the log, fsync included: a slow disk shows here write by write",
        none(),
        histogram(&log.sync_latency.histogram),
    );
    set.histogram(
        "raftlane_log_append_latency_seconds",
        "Each append from the call to its entries being durable: what a commit waits for here",
        none(),
        histogram(&log.append_latency),
    );
    let eager = node.eager_stats();
    for (name, help, n) in [
        (
            "raftlane_eager_replication_sent_total",
            "Batches the leader sent to a follower while writing them itself",
            &eager.sent,
        ),
        (
            "raftlane_eager_replication_accepted_total",
            "Eagerly sent batches a follower wrote",
            &eager.accepted,
        ),
        (
            "raftlane_eager_replication_refused_total",
            "Eagerly sent batches a follower refused (left to Raft's own replication)",
            &eager.refused,
        ),
        (
            "raftlane_eager_replication_skipped_busy_total",
            "Batches not sent eagerly because one was already in flight to that follower",
            &eager.skipped_busy,
        ),
    ] {
        set.counter(name, help, none(), load(n));
    }
    let health = node.storage_health();
    set.gauge(
        "raftlane_storage_slow",
        "1 while this node judges its log storage slow, else 0",
        none(),
        if health.is_slow() { 1.0 } else { 0.0 },
    );
    set.counter(
        "raftlane_slow_storage_handoffs_total",
        "Leaderships this node handed over because its storage was slow",
        none(),
        load(&health.handoffs),
    );
}

fn state_machine_figures(node: &RaftNode, set: &mut MetricSet) {
    let sm = node.sm_stats();
    set.counter_f64(
        "raftlane_sm_apply_seconds_total",
        "Time spent applying entries to the state, storage writes included",
        none(),
        load(&sm.apply_micros) as f64 / 1e6,
    );
    set.counter(
        "raftlane_sm_apply_batches_total",
        "Batches of entries applied",
        none(),
        load(&sm.apply_batches),
    );
    set.counter(
        "raftlane_sm_applied_entries_total",
        "Entries applied",
        none(),
        load(&sm.applied_entries),
    );
    set.counter(
        "raftlane_snapshots_installed_total",
        "Snapshots received from a leader and installed, restarts included",
        none(),
        load(&sm.snapshots_installed),
    );
    set.counter(
        "raftlane_snapshots_built_total",
        "Snapshots built by this node",
        none(),
        load(&sm.snapshots_built),
    );
    if let Ok(Some((_, file))) = node.open_current_snapshot() {
        if let Ok(meta) = file.metadata() {
            set.gauge(
                "raftlane_snapshot_bytes",
                "The size of this node's current snapshot file",
                none(),
                meta.len() as f64,
            );
        }
    }
}

fn clock_figures(node: &RaftNode, set: &mut MetricSet) {
    let clock = node.clock();
    for peer in clock.offsets() {
        set.gauge(
            "raftlane_clock_offset_seconds",
            "Each peer's clock minus this node's, from fresh samples only",
            vec![("peer", LabelValue(peer.node.to_string()))],
            peer.offset_ms as f64 / 1000.0,
        );
    }
    set.gauge(
        "raftlane_clock_skew_bound_seconds",
        "The largest clock offset the cluster tolerates",
        none(),
        clock.max_skew_ms() as f64 / 1000.0,
    );
    set.counter(
        "raftlane_clock_restamped_beyond_bound_total",
        "Proposals the leader re-stamped because their time was beyond the skew bound",
        none(),
        clock.restamped_far(),
    );
}

/// Where memory goes: the process's resident size, and per database (`state`, `log`) its
/// memtables, table readers, block caches and SST bytes, plus the state's in-memory index keys.
/// Together they show which part grows when the resident size does.
fn memory_figures(node: &RaftNode, set: &mut MetricSet) {
    if let Some(rss) = crate::process::rss_bytes("self") {
        set.gauge(
            "process_resident_memory_bytes",
            "Resident memory of this process",
            none(),
            rss as f64,
        );
    }
    let Some(m) = node.storage_memory() else {
        return;
    };
    for (db, mem) in [("state", m.state), ("log", m.log)] {
        for (part, bytes) in [
            ("memtables", mem.memtables),
            ("table_readers", mem.table_readers),
            ("block_cache", mem.block_cache),
        ] {
            set.gauge(
                "raftlane_rocksdb_memory_bytes",
                "Memory of each RocksDB database by part",
                vec![("db", db.into()), ("part", part.into())],
                bytes as f64,
            );
        }
        set.gauge(
            "raftlane_rocksdb_sst_bytes",
            "Bytes of each RocksDB database's table files",
            vec![("db", db.into())],
            mem.sst_bytes as f64,
        );
    }
    set.gauge(
        "raftlane_state_index_keys",
        "Keys in the state's in-memory indexes",
        none(),
        m.mirrored_keys as f64,
    );
}
