//! A leader cut off from both followers by a real partition (the fault proxy on every
//! node-to-node link), against real node processes.
//!
//! The reproduction: for a whole 60 s partition the old leader accepted writes and
//! answered none of them (one answered `201` 60.5 s later, after healing), `/readyz` stayed
//! `200` and `/v1/cluster` kept saying it led. Now, within the bounds of
//! `raftlane_chaos::isolation`, it stops naming itself leader, `/readyz` answers `503` with a
//! reason, and a write sent to it is answered `503` (not acknowledged) within the write path's
//! 8 s window; the other two elect a leader and keep acknowledging writes, and after healing
//! every acknowledged write is there and the old leader serves again.

mod common;

use raftlane_chaos::cluster::leader_of;
use raftlane_chaos::collect::wait_ready;
use raftlane_chaos::conn::Attempt;
use raftlane_chaos::isolation::{self, WriteProbe};
use raftlane_chaos::proxy::CutMode;
use std::time::{Duration, Instant};

const TOKEN: &str = "isolation-admin-token";
const HOLD: Duration = Duration::from_secs(14);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_isolated_leader_refuses_writes_fails_readiness_and_loses_nothing() {
    let Some((dir, mut cluster, addrs, conn)) =
        common::ready_cluster("isolation", TOKEN, Duration::from_secs(20)).await
    else {
        return;
    };
    let old = leader_of(&addrs, TOKEN).await.expect("a leader");
    let others: Vec<u64> = (1..=3).filter(|id| *id != old).collect();

    // Cut the leader off from both followers, both ways (a blackhole: bytes stop flowing).
    for o in &others {
        cluster.proxy.cut(old, *o, CutMode::Blackhole);
        cluster.proxy.cut(*o, old, CutMode::Blackhole);
    }
    let since = Instant::now();
    let watching = tokio::spawn(isolation::watch(conn.clone(), old, since, since + HOLD));

    // The majority side elects a leader and acknowledges writes meanwhile.
    let mut acked = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(12);
    let mut n = 0;
    while Instant::now() < deadline {
        n += 1;
        let key = format!("majority-{n}");
        let via = ((others[n % 2]) - 1) as usize;
        let k = key.clone();
        if let Attempt::Ok(e) = conn
            .once(via, move |c| async move {
                c.enqueue("iso", "written during the partition", Some(&k))
                    .await
            })
            .await
        {
            acked.push((key, e.message_id));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let watched = watching.await.unwrap();
    let (line, bad) = watched.judge(HOLD);
    println!("{line}");
    assert!(bad.is_empty(), "{bad:?}");
    assert!(
        matches!(watched.write, WriteProbe::Refused { .. }),
        "{watched:?}"
    );
    assert!(
        !acked.is_empty(),
        "the majority side acknowledged no write during the partition"
    );
    // Its readiness names the reason.
    let ready = conn
        .once((old - 1) as usize, |c| async move {
            c.request(hyper::Method::GET, "/readyz", None).await
        })
        .await;
    match &ready {
        Attempt::Unknown(m) => assert!(
            m.contains("503") && m.contains("no quorum"),
            "the isolated leader's /readyz should say it has no quorum: {m}"
        ),
        other => panic!("the isolated leader's /readyz answered {other:?}"),
    }

    cluster.proxy.heal();
    wait_ready(&conn, &addrs, TOKEN, Duration::from_secs(60))
        .await
        .unwrap();
    // Every write acknowledged during the partition is there, read through the old leader.
    for (key, id) in &acked {
        let id = *id;
        let read = conn
            .once(
                (old - 1) as usize,
                move |c| async move { c.message(id).await },
            )
            .await;
        assert!(
            matches!(read, Attempt::Ok(_)),
            "{key} (message {id:?}) acknowledged during the partition is missing: {read:?}"
        );
    }
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
