//! A deterministic reproduction of a bug the chaos suite found: a write sent to a follower is
//! forwarded to the leader; the leader applies it, but its answer is lost (the connection is
//! reset); the follower's write path (`Proposer::write`) then proposes the same envelope again.
//! Before request ids that applied the write twice (two audit rows; a CAS answered 412 although
//! it took effect). Now the retry carries the same request id and gets the first answer back.

mod common;

use hyper::Method;
use raftlane_chaos::cluster::leader_of;
use raftlane_chaos::collect::wait_ready;
use raftlane_chaos::conn::{Attempt, Conn};
use raftlane_chaos::local::LocalCluster;
use raftlane_chaos::proxy::CutMode;
use std::time::Duration;

const TOKEN: &str = "dup-admin-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_forwarded_write_is_applied_once_when_the_leaders_answer_is_lost() {
    let dir = std::env::temp_dir().join(format!("raftlane-dup-{}", std::process::id()));
    let Some(binary) = common::private_copy(&dir.join("bin")) else {
        println!("note: the raftlane binary is not built; skipping");
        return;
    };
    let mut cluster = LocalCluster::create(&binary, &dir.join("data"), 3, "dup-secret", TOKEN)
        .await
        .unwrap();
    for id in 1..=3 {
        cluster.start(id, None).unwrap();
    }
    let addrs = cluster.api_addrs();
    let conn = Conn::new(&addrs, TOKEN, Duration::from_secs(20));
    wait_ready(&conn, &addrs, TOKEN, Duration::from_secs(60))
        .await
        .unwrap();

    let mut applied = Vec::new();
    for round in 0..5 {
        let leader = leader_of(&addrs, TOKEN).await.expect("a leader");
        let follower = (1..=3u64).find(|n| *n != leader).unwrap();
        let via = (follower - 1) as usize;
        // Warm the follower's pooled connection to the leader.
        let warm = conn
            .once(via, |c| async move {
                c.audit_append("dup.warmup", Some("dup"), None).await
            })
            .await;
        assert!(matches!(warm, Attempt::Ok(_)), "{warm:?}");

        // Delay the leader's bytes to the follower, send a write through the follower, and
        // reset the connection while the leader's answer is still in the proxy.
        cluster.proxy.delay(leader, follower, 300);
        let detail = format!("once-{round}");
        let c2 = conn.clone();
        let d2 = detail.clone();
        let answer = tokio::spawn(async move {
            c2.once(via, move |c| async move {
                c.audit_append("dup.test", Some("dup"), Some(&d2)).await
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(150)).await;
        cluster.proxy.cut(leader, follower, CutMode::Drop);
        tokio::time::sleep(Duration::from_millis(400)).await;
        cluster.proxy.heal();
        let answer = answer.await.unwrap();

        let rows = conn
            .once((leader - 1) as usize, |c| async move {
                c.request(Method::GET, "/v1/audit?org=dup&limit=1000", None)
                    .await
            })
            .await;
        let Attempt::Ok(rows) = rows else {
            panic!("cannot list the audit rows: {rows:?}")
        };
        let n = rows["rows"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|r| r["detail"].as_str() == Some(detail.as_str()))
                    .count()
            })
            .unwrap_or(0);
        println!("round {round}: leader {leader}, via follower {follower}: applied {n} time(s); the client was told {answer:?}");
        applied.push(n);
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    // The same with a compare-and-set: the client is told 412 although its change is in.
    let leader = leader_of(&addrs, TOKEN).await.expect("a leader");
    let follower = (1..=3u64).find(|n| *n != leader).unwrap();
    let via = (follower - 1) as usize;
    let Attempt::Ok(current) = conn.once(via, |c| async move { c.config().await }).await else {
        panic!("cannot read the config")
    };
    let version = current.version;
    let config = serde_json::to_value(&current.config).unwrap();
    let doc = raftlane_chaos::workload::config_cas::with_value(&config, "cas-once");
    cluster.proxy.delay(leader, follower, 300);
    let c2 = conn.clone();
    let answer = tokio::spawn(async move {
        c2.once(
            via,
            move |c| async move { c.put_config(version, doc).await },
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    cluster.proxy.cut(leader, follower, CutMode::Drop);
    tokio::time::sleep(Duration::from_millis(400)).await;
    cluster.proxy.heal();
    let answer = answer.await.unwrap();
    let path = format!("/v1/config/versions/{}", version + 1);
    let after = conn
        .once(via, move |c| async move {
            c.request(Method::GET, &path, None).await
        })
        .await;
    let landed = matches!(&after, Attempt::Ok(v) if raftlane_chaos::workload::config_cas::register_value(&v["config"]).as_deref() == Some("cas-once"));
    println!("CAS from version {version} via follower {follower}: told {answer:?}; version {} holds it: {landed}", version + 1);
    let cas_ok = !(landed && matches!(answer, Attempt::Refused { status: 412, .. }));

    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        applied.iter().all(|n| *n <= 1),
        "a single append was applied more than once: {applied:?}"
    );
    assert!(cas_ok, "a CAS was answered 412 although it took effect");
}
