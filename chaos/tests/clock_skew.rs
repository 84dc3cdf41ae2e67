//! Reproductions of the clock-skew faults found by the chaos suite, against real node processes whose
//! clocks are skewed with `RAFTLANE_CLOCK_OFFSET_MS`:
//! - one write through a follower running 60 s fast moved the cluster's clock, and a second
//!   worker took a row one second into a 30 s lease;
//! - a fast leader stamped its own clock into every entry (leases broken at 7.4 s of 30);
//! - a leader more than 60 s fast (under the Raft transport's 300 s) stayed leader while every
//!   write through a follower failed with "leader answered 401" (as if the secret were wrong).
//!
//! Now the leader stamps the time a majority of the voters' clocks agree on, and one skew bound
//! (30 s) serves every node-to-node path: a node further off is refused as clock skew.

mod common;

use raftlane_chaos::cluster::leader_of;
use raftlane_chaos::collect::wait_ready;
use raftlane_chaos::conn::{Attempt, Conn};
use raftlane_chaos::local::LocalCluster;
use raftlane_client::contract::Stage;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TOKEN: &str = "skew-admin-token";
const LEASE_MS: u64 = 30_000;

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Enqueue through node `via` (0-based) and return how far the stored `received_at` is from the
/// wall clock at the time of sending, or the failed attempt's description.
async fn stamp_through(conn: &Conn, via: usize, key: &str) -> Result<i64, String> {
    let key = key.to_string();
    let sent = wall_ms();
    let enq = conn
        .once(via, move |c| async move {
            c.enqueue("skew", "a message", Some(&key)).await
        })
        .await;
    let id = match enq {
        Attempt::Ok(e) => e.message_id,
        other => return Err(format!("{other:?}")),
    };
    match conn
        .once(via, move |c| async move { c.message(id).await })
        .await
    {
        Attempt::Ok(m) => Ok(m.message.meta.received_at as i64 - sent),
        other => Err(format!("read failed: {other:?}")),
    }
}

/// Claim ingress rows as `owner` through node `via`; the message ids it got.
async fn claim(conn: &Conn, via: usize, owner: &str) -> Vec<u64> {
    let owner = owner.to_string();
    match conn
        .once(via, move |c| async move {
            c.claim_ready(Stage::Ingress, 50, &owner, LEASE_MS, None)
                .await
        })
        .await
    {
        Attempt::Ok(rows) => rows.iter().map(|r| r.message_id.0).collect(),
        other => panic!("claim through node {} failed: {other:?}", via + 1),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn skewed_clocks_cannot_cut_a_lease_short() {
    let dir = std::env::temp_dir().join(format!("raftlane-skew-{}", std::process::id()));
    let Some(binary) = common::private_copy(&dir.join("bin")) else {
        println!("note: the raftlane binary is not built; skipping");
        return;
    };
    let mut cluster = LocalCluster::create(
        &binary,
        &dir.join("data"),
        3,
        "skew-secret-0123456789",
        TOKEN,
    )
    .await
    .unwrap();
    // Node 1 bootstraps the cluster and so usually leads first: 20 s fast, inside the bound.
    cluster.start(1, Some(20_000)).unwrap();
    cluster.start(2, None).unwrap();
    cluster.start(3, None).unwrap();
    let addrs = cluster.api_addrs();
    let conn = Conn::new(&addrs, TOKEN, Duration::from_secs(30));
    wait_ready(&conn, &addrs, TOKEN, Duration::from_secs(60))
        .await
        .unwrap();
    let leader = leader_of(&addrs, TOKEN).await.expect("a leader");
    println!("leader: node {leader} (node 1 runs 20 s fast)");

    // Whichever node a write goes through, the fast one included, it is stamped with the
    // cluster's time, not the fast node's.
    for via in 0..3 {
        let off = stamp_through(&conn, via, &format!("fast-{via}"))
            .await
            .unwrap_or_else(|e| panic!("enqueue through node {}: {e}", via + 1));
        assert!(
            off.abs() < 2_000,
            "a write through node {} was stamped {off:+} ms from the wall clock",
            via + 1
        );
    }

    // Worker a holds every row for 30 s.
    let held = claim(&conn, 1, "worker-a").await;
    assert_eq!(held.len(), 3, "worker a claims the three messages");

    // A follower restarted 60 s fast: beyond the bound, so its forwarded write is refused as
    // clock skew (not as a bad secret), and it cannot move the cluster's clock.
    let follower = (1..=3u64).find(|n| *n != leader && *n != 1).unwrap_or(3);
    cluster.kill(follower).await.unwrap();
    cluster.start(follower, Some(60_000)).unwrap();
    // Once it has heard the others' answers (it stops hearing the leader, campaigns, and its
    // vote requests come back refused with the peers' clocks), it says why it cannot write.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut last: String;
    // Once it serves HTTP it is never ready: it names the leader of its last vote but refuses
    // that leader's calls (before check-quorum it answered /readyz 200 meanwhile).
    let via = (follower - 1) as usize;
    let mut served = false;
    for _ in 0..40 {
        match conn
            .once(via, |c| async move {
                c.request(hyper::Method::GET, "/readyz", None).await
            })
            .await
        {
            Attempt::Ok(v) => panic!("the 60 s fast node answered /readyz 200: {v}"),
            Attempt::NotSent(_) => {}
            Attempt::Unknown(_) | Attempt::Refused { .. } => served = true,
        }
        if served {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(served, "the 60 s fast node never served /readyz");
    loop {
        let started = std::time::Instant::now();
        let attempt = stamp_through(&conn, (follower - 1) as usize, "beyond-bound").await;
        // Each answer comes before the 8 s retry window runs out (before check-quorum every one
        // took it, ending 503 unavailable): the node learns its skew at its first campaign and
        // then ends the write at once, as it does when the leader refuses it for clock skew.
        assert!(
            started.elapsed() < Duration::from_millis(6_500),
            "a write through the 60 s fast node took {:?} to answer: {attempt:?}",
            started.elapsed()
        );
        match attempt {
            Ok(off) => panic!(
                "a write through the 60 s fast node was accepted, stamped {off:+} ms from the wall clock"
            ),
            Err(e) if e.contains("clock_skew") && e.contains("ahead of the cluster") => break,
            Err(e) => last = e,
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "a write through the 60 s fast node never failed naming clock skew; last: {last}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The two healthy nodes still take writes.
    for via in (1..=3u64).filter(|n| *n != follower) {
        let off = stamp_through(&conn, (via - 1) as usize, &format!("healthy-{via}"))
            .await
            .unwrap_or_else(|e| panic!("enqueue through healthy node {via}: {e}"));
        assert!(off.abs() < 2_000, "stamped {off:+} ms from the wall clock");
    }

    // Worker b, through every reachable node, never gets worker a's rows: their leases have
    // 30 s to run by the wall clock.
    for via in (1..=3u64).filter(|n| *n != follower) {
        let got = claim(&conn, (via - 1) as usize, "worker-b").await;
        let stolen: Vec<&u64> = got.iter().filter(|m| held.contains(m)).collect();
        assert!(
            stolen.is_empty(),
            "worker b was handed messages {stolen:?} inside worker a's 30 s lease"
        );
    }
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
