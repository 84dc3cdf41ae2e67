//! A leader killed with entries its followers already hold but it never wrote, and started again
//! at once (SPEC §11.1, "A restarted leader is elected again"), against real node processes.
//!
//! The leader's fsyncs are held (`RAFTLANE_TEST_FSYNC_DELAY_FILE`, a test-only hook that delays
//! the log's write itself), a write goes to it, and eager replication puts the write's entry on
//! the followers while the leader still holds it in memory; then the leader is killed with
//! SIGKILL, so its own log never gets the entry, and started again at once. Had it taken up its
//! old term, it would write other entries under the log id the followers hold, and they would
//! apply theirs: the check that can fail is that the three nodes end with one digest at one
//! applied index.

mod common;

use raftlane_chaos::cluster::leader_of;
use raftlane_chaos::conn::Attempt;
use std::time::{Duration, Instant};

const TOKEN: &str = "leader-restart-admin-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_restarted_at_once_leaves_one_state() {
    let Some((dir, mut cluster, addrs, conn)) =
        common::ready_cluster("leader-restart", TOKEN, Duration::from_secs(20)).await
    else {
        return;
    };
    for round in 0..3 {
        let leader = leader_of(&addrs, TOKEN).await.expect("a leader");
        let followers: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
        let warm = conn
            .once((leader - 1) as usize, |c| async move {
                c.enqueue("restart", "before", None).await
            })
            .await;
        assert!(matches!(warm, Attempt::Ok(_)), "{warm:?}");
        let before = common::last_log_index(&conn, leader).await.unwrap_or(0);

        cluster
            .slow_fsync(leader, 3000)
            .expect("hold the leader's disk");
        // The node re-reads the hook's file at most every 100 ms.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let c = conn.clone();
        let write = tokio::spawn(async move {
            c.once((leader - 1) as usize, |c| async move {
                c.enqueue("restart", "held on the leader", None).await
            })
            .await
        });
        // Until a follower holds the entry the leader has not written.
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut held = false;
        while Instant::now() < deadline && !held {
            for f in &followers {
                held |= common::last_log_index(&conn, *f).await.unwrap_or(0) > before;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cluster.kill(leader).await.expect("kill the leader");
        cluster.slow_fsync(leader, 0).expect("release the disk");
        cluster
            .start(leader, None)
            .expect("the leader starts again");
        let _ = write.await;
        println!("round {round}: leader {leader} killed, a follower held its entry: {held}");

        // Writes go on, through any node.
        for n in 0..5 {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let r = conn
                    .once(n % 3, |c| async move {
                        c.enqueue("restart", "after", None).await
                    })
                    .await;
                if matches!(r, Attempt::Ok(_)) {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "no write accepted after the restart: {r:?}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        // One digest at one applied index on all three (the leader's timers move the index
        // every second: asked again until three answers meet).
        if let Err(seen) = common::digests_agree(&conn, Duration::from_secs(60)).await {
            panic!("round {round}: the nodes never agreed on one state: {seen}");
        }
    }
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
