//! A running node's wall clock steps (as NTP or an operator steps it), against real node
//! processes (`RAFTLANE_TEST_CLOCK_STEP_FILE`, a test-only hook).
//!
//! The reproduction: the leader's clock stepped +25 s under load; the cluster's time
//! jumped +25 s (once +12.5 s, from a sample whose round trip spanned the step), a second worker
//! took the first one's row 5.0 s into a 10 s lease, and the time then stood still for ~25 s.
//! Now the cluster's time runs on the leader's monotonic clock: for steps of ±5 s, ±25 s and
//! ±10 min on the leader and on a follower, every write is stamped within its round trip by the
//! test's own clock, and no row held under a 10 s lease is handed to another worker.

mod common;

use raftlane_chaos::cluster::leader_of;
use raftlane_chaos::conn::{Attempt, Conn};
use raftlane_client::contract::Stage;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TOKEN: &str = "step-admin-token";
const LEASE_MS: u64 = 10_000;
/// How far an honest stamp may lie outside a write's round trip.
const TOLERANCE_MS: i64 = 1_000;

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Enqueue through node `via` (0-based), retrying for up to 20 s while the cluster elects;
/// how far the stored `received_at` lies outside the successful attempt's round trip.
async fn stamp_through(conn: &Conn, via: usize, key: &str) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let key = key.to_string();
        let sent = wall_ms();
        let enq = conn
            .once(via, move |c| async move {
                c.enqueue("step", "a message", Some(&key)).await
            })
            .await;
        let answered = wall_ms();
        match enq {
            Attempt::Ok(e) => {
                let id = e.message_id;
                let read = conn
                    .once(via, move |c| async move { c.message(id).await })
                    .await;
                let Attempt::Ok(m) = read else {
                    panic!("read through node {}: {read:?}", via + 1)
                };
                let stamped = m.message.meta.received_at as i64;
                return if stamped < sent {
                    stamped - sent
                } else {
                    (stamped - answered).max(0)
                };
            }
            other => {
                assert!(
                    Instant::now() < deadline,
                    "no enqueue through node {} for 20 s: {other:?}",
                    via + 1
                );
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
    }
}

/// Claim ingress rows as `owner` through node `via`: the message ids, or none while the node
/// cannot serve (a node cut off for its clock answers 503).
async fn claim(conn: &Conn, via: usize, owner: &str) -> Option<Vec<u64>> {
    let owner = owner.to_string();
    match conn
        .once(via, move |c| async move {
            c.claim_ready(Stage::Ingress, 50, &owner, LEASE_MS, None)
                .await
        })
        .await
    {
        Attempt::Ok(rows) => Some(rows.iter().map(|r| r.message_id.0).collect()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stepped_clock_moves_no_stamp_and_cuts_no_lease() {
    let Some((dir, mut cluster, addrs, conn)) =
        common::ready_cluster("step", TOKEN, Duration::from_secs(10)).await
    else {
        return;
    };

    let mut n = 0;
    for on_leader in [true, false] {
        for step in [25_000i64, -25_000, 5_000, -5_000, 600_000, -600_000] {
            let leader = leader_of(&addrs, TOKEN).await.expect("a leader");
            let stepped = if on_leader {
                leader
            } else {
                (1..=3u64).find(|id| *id != leader).expect("a follower")
            };
            // A node that is neither stepped nor (if it can be helped) the leader.
            let other = (1..=3u64)
                .find(|id| *id != stepped && *id != leader)
                .unwrap_or(leader);
            let via = (other - 1) as usize;
            let what = format!(
                "node {stepped} ({}) stepping {step:+} ms",
                if on_leader {
                    "the leader"
                } else {
                    "a follower"
                }
            );

            // Worker a holds the rows enqueued now for 10 s.
            for _ in 0..3 {
                n += 1;
                let off = stamp_through(&conn, via, &format!("m{n}")).await;
                assert!(
                    off.abs() <= TOLERANCE_MS,
                    "{what}: before, stamped {off:+} ms off"
                );
            }
            let held = claim(&conn, via, "worker-a")
                .await
                .expect("worker a claims");
            let held_at = Instant::now();
            assert!(!held.is_empty(), "{what}: worker a claimed nothing");

            cluster.step_clock(stepped, step).unwrap();
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            // Writes keep the real time (through a node that is not cut off).
            for i in 0..3 {
                let off = stamp_through(&conn, via, &format!("{what} {i}")).await;
                assert!(
                    off.abs() <= TOLERANCE_MS,
                    "{what}: a write was stamped {off:+} ms outside its round trip"
                );
            }
            // Worker b gets none of worker a's rows while their lease runs in real time.
            for node in (1..=3u64).filter(|id| *id != stepped) {
                let Some(got) = claim(&conn, (node - 1) as usize, "worker-b").await else {
                    continue;
                };
                let lease_left = Duration::from_millis(LEASE_MS)
                    .saturating_sub(held_at.elapsed() + Duration::from_millis(1_000));
                let stolen: Vec<&u64> = got.iter().filter(|m| held.contains(m)).collect();
                assert!(
                    stolen.is_empty() || lease_left.is_zero(),
                    "{what}: worker b was handed {stolen:?} with {lease_left:?} of worker a's \
                     10 s lease left"
                );
            }

            cluster.step_clock(stepped, 0).unwrap();
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            let off = stamp_through(&conn, via, &format!("{what} back")).await;
            assert!(
                off.abs() <= TOLERANCE_MS,
                "{what}: after stepping back, stamped {off:+} ms outside its round trip \
                 (the time stood still?)"
            );
            println!("{what}: the cluster's time held");
        }
    }
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
