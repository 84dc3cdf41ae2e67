//! "A node that was down for 100k entries catches up through a snapshot", under the default
//! snapshot policy (a snapshot once 100,000 entries are committed since the last one, 5,000
//! snapshotted entries kept in the log).
//!
//! The data directories live on tmpfs (`/dev/shm`) when the machine has one: the leader fsyncs
//! once per entry (docs/DEVELOPING.md, "Design notes"), and the subject here is the catch-up path,
//! not the disk. Measured on a 2-core box (release): ~9 s in all on tmpfs (100k writes in ~4 s,
//! catch-up ~3 s); ~72 s with `RAFTLANE_TEST_DIR` on the real disk (writes ~67 s).
//! `RAFTLANE_TEST_DIR=<dir>` puts the data directories there instead. Progress is logged at
//! info: `RUST_LOG=warn,catchup=info cargo test --release -p raftlane-raft --test catchup --
//! --nocapture`.

use raftlane_testkit::raft::*;
use raftlane_testkit::wait::*;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Log entries the follower misses, each a separate `client_write` (no `Command::Batch`), so
/// this many log indexes pass while it is down.
const MISSED_ENTRIES: usize = 100_000;
/// Writes in flight at once.
const CONCURRENCY: usize = 256;

fn test_root() -> tempfile::TempDir {
    match std::env::var_os("RAFTLANE_TEST_DIR") {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None if Path::new("/dev/shm").is_dir() => tempfile::tempdir_in("/dev/shm").unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn follower_down_for_100k_entries_catches_up_by_snapshot() {
    init_tracing();
    let started = Instant::now();
    // The default snapshot and purge policy (tuning() only turns the housekeeping timers off).
    let t = tuning();
    assert_eq!(t.snapshot_logs_since_last, 100_000);
    let mut c = RaftCluster::start_in(3, t, test_root()).await;
    let mut writes = c.write_many("before", 10, 5).await;
    c.converged_digest().await;
    let leader = c.leader().await;
    let lagger = *c.nodes.keys().find(|&&id| id != leader).unwrap();
    let lag_applied = c
        .node(lagger)
        .applied_log_id()
        .unwrap()
        .map_or(0, |l| l.index);
    c.stop_node(lagger).await;

    let t0 = Instant::now();
    writes.extend(c.write_stream("bulk", MISSED_ENTRIES, CONCURRENCY).await);
    let write_secs = t0.elapsed().as_secs_f64();
    let last = c.last_log_index().await;
    assert!(
        last - lag_applied >= MISSED_ENTRIES as u64,
        "only {} log indexes passed while node {lagger} was down",
        last - lag_applied
    );
    tracing::info!(
        entries = MISSED_ENTRIES,
        secs = write_secs,
        per_sec = MISSED_ENTRIES as f64 / write_secs,
        last,
        "bulk writes committed"
    );

    // The leader built its snapshot and purged the entries the lagger would need to replay.
    let leader = c.leader().await;
    let m = wait_metrics(
        c.node(leader),
        "leader snapshotted and purged past the lagger",
        |m| m.snapshot.is_some() && m.purged.map_or(0, |p| p.index) > lag_applied + 1,
    )
    .await;
    let leader_snapshot = m.snapshot.map_or(0, |s| s.index);
    tracing::info!(
        snapshot = leader_snapshot,
        purged = ?m.purged,
        "leader snapshot ready; restarting the lagger"
    );

    let t1 = Instant::now();
    let node = c.start_node(lagger).await;
    let digest = c.converged_digest().await;
    let catchup_secs = t1.elapsed().as_secs_f64();
    let installed = node.sm_stats().snapshots_installed.load(Ordering::Relaxed);
    let replayed = node.sm_stats().applied_entries.load(Ordering::Relaxed);
    assert!(installed >= 1, "node {lagger} caught up without a snapshot");
    let own = node.metrics().snapshot.map_or(0, |s| s.index);
    assert!(
        own >= leader_snapshot,
        "node {lagger} holds snapshot {own}, the leader's is {leader_snapshot}"
    );
    // Only the tail after the snapshot was applied entry by entry, not the 100k entries.
    assert!(
        replayed < 10_000,
        "node {lagger} applied {replayed} entries one by one"
    );
    assert_eq!(node.digest().await.unwrap().1, digest);
    assert_writes_present(&node, &writes);
    tracing::info!(
        snapshot = own,
        replayed,
        catchup_secs,
        total_secs = started.elapsed().as_secs_f64(),
        "lagger caught up by snapshot"
    );
    eprintln!(
        "{MISSED_ENTRIES} entries in {write_secs:.1} s; catch-up by snapshot at {own} in \
         {catchup_secs:.1} s ({replayed} entries applied after it); total {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // And it keeps up afterwards.
    writes.extend(c.write_many("after", 10, 5).await);
    c.converged_digest().await;
    assert_writes_present(c.node(lagger), &writes);
    c.shutdown().await;
}
