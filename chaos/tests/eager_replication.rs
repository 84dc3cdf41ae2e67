//! Eager replication (SPEC §11.1), against real node processes: with the leader's fsyncs held
//! for 1.5 s (`RAFTLANE_TEST_FSYNC_DELAY_FILE`, a test-only hook), a write's entry reaches the
//! followers while the leader is still writing it, and the write is still answered only after
//! the leader's own fsync. With `--eager-replication false` the followers see the entry only
//! after the leader's fsync, which is what makes the check able to fail.

mod common;

use raftlane_chaos::cluster::leader_of;
use raftlane_chaos::collect::wait_ready;
use raftlane_chaos::conn::{Attempt, Conn};
use raftlane_chaos::local::LocalCluster;
use std::time::{Duration, Instant};

const TOKEN: &str = "eager-admin-token";
const LEADER_FSYNC_MS: u64 = 1500;
/// When the followers are looked at, well inside the leader's held fsync.
const LOOK_AFTER: Duration = Duration::from_millis(700);

/// What one write with the leader's disk held showed.
#[derive(Debug)]
struct Seen {
    /// Followers whose log held the write's entry at [`LOOK_AFTER`].
    followers_holding: usize,
    /// Whether the write had been answered by then.
    answered_early: bool,
    /// How long the write took to be answered.
    took: Duration,
    /// The leader's `raftlane_eager_replication_accepted_total` afterwards.
    eager_accepted: f64,
}

async fn metric(conn: &Conn, id: u64, name: &str) -> f64 {
    let Attempt::Ok(text) = conn
        .once((id - 1) as usize, |c| async move {
            c.request_text("/metrics").await
        })
        .await
    else {
        panic!("no /metrics from node {id}");
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in node {id}'s metrics:\n{text}"))
}

/// Start a three-node cluster with `extra` flags, hold its leader's fsyncs, write once.
async fn one_write_with_the_leaders_disk_held(name: &str, extra: &[&str]) -> Option<Seen> {
    let dir = std::env::temp_dir().join(format!("raftlane-{name}-{}", std::process::id()));
    let Some(binary) = common::private_copy(&dir.join("bin")) else {
        println!("note: the raftlane binary is not built; skipping");
        return None;
    };
    let mut cluster = LocalCluster::create(
        &binary,
        &dir.join("data"),
        3,
        &format!("{name}-secret-0123456789"),
        TOKEN,
    )
    .await
    .expect("a local cluster");
    // A held disk must not make the leader hand off (SPEC §11.7) in the middle of the check.
    let mut flags = vec!["--slow-storage-handoff-ms", "0"];
    flags.extend_from_slice(extra);
    for id in 1..=3 {
        cluster.start_with(id, &flags).expect("a node starts");
    }
    let addrs = cluster.api_addrs();
    let conn = Conn::new(&addrs, TOKEN, Duration::from_secs(20));
    wait_ready(&conn, &addrs, TOKEN, Duration::from_secs(60))
        .await
        .expect("the cluster is ready");
    let leader = leader_of(&addrs, TOKEN).await.expect("a leader");
    let followers: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();

    // Settle: a first write, then every follower as far as the leader.
    let warm = conn
        .once((leader - 1) as usize, |c| async move {
            c.enqueue("eager", "warm-up", None).await
        })
        .await;
    assert!(matches!(warm, Attempt::Ok(_)), "{warm:?}");
    let settle = Instant::now() + Duration::from_secs(10);
    let before = loop {
        let l = common::last_log_index(&conn, leader)
            .await
            .expect("the leader's log");
        let mut behind = false;
        for f in &followers {
            behind |= common::last_log_index(&conn, *f).await.unwrap_or(0) < l;
        }
        if !behind {
            break l;
        }
        assert!(Instant::now() < settle, "the followers never caught up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    cluster
        .slow_fsync(leader, LEADER_FSYNC_MS)
        .expect("hold the leader's disk");
    // The node re-reads the hook's file at most every 100 ms.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let started = Instant::now();
    let c = conn.clone();
    let write = tokio::spawn(async move {
        let r = c
            .once((leader - 1) as usize, |c| async move {
                c.enqueue("eager", "written while the leader's disk is held", None)
                    .await
            })
            .await;
        (r, started.elapsed())
    });
    tokio::time::sleep(LOOK_AFTER).await;
    let mut followers_holding = 0;
    for f in &followers {
        if common::last_log_index(&conn, *f).await.unwrap_or(0) > before {
            followers_holding += 1;
        }
    }
    let answered_early = write.is_finished();
    let (answer, took) = write.await.expect("the write task");
    assert!(matches!(answer, Attempt::Ok(_)), "{answer:?}");
    cluster.slow_fsync(leader, 0).expect("release the disk");
    let eager_accepted = metric(&conn, leader, "raftlane_eager_replication_accepted_total").await;
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    Some(Seen {
        followers_holding,
        answered_early,
        took,
        eager_accepted,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn followers_write_a_batch_while_the_leader_does() {
    let Some(on) = one_write_with_the_leaders_disk_held("eager-on", &[]).await else {
        return;
    };
    println!("eager replication on: {on:?}");
    assert_eq!(on.followers_holding, 2, "{on:?}");
    // The answer still waits for the leader's own fsync.
    assert!(!on.answered_early, "{on:?}");
    assert!(
        on.took >= Duration::from_millis(LEADER_FSYNC_MS - 200),
        "{on:?}"
    );
    assert!(on.eager_accepted >= 2.0, "{on:?}");

    let off = one_write_with_the_leaders_disk_held("eager-off", &["--eager-replication", "false"])
        .await
        .expect("the binary was there a moment ago");
    println!("eager replication off: {off:?}");
    assert_eq!(off.followers_holding, 0, "{off:?}");
    assert!(!off.answered_early, "{off:?}");
    assert_eq!(off.eager_accepted, 0.0, "{off:?}");
}
