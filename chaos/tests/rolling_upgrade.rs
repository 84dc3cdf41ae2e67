//! A rolling upgrade from the previous build to this one, with writes all along (docs/SPEC.md
//! §2.8, docs/OPERATIONS.md "Rolling upgrade").
//!
//! Three real `raftlane node` processes start on the previous build (`$RAFTLANE_PREVIOUS_BIN`,
//! built from the commit named in `tests/upgrade/previous-commit` by
//! `scripts/previous-build.sh`; `scripts/test.sh` builds it and sets the variable). Each node
//! in turn, the leader included, is stopped and started again on this build over its own data
//! directory while a writer keeps enqueuing and a worker keeps claiming and completing, through
//! whichever nodes answer. While the builds are mixed the cluster writes log format 1, which
//! both read, and raising the format is refused, naming a node of the previous build. The new
//! build runs with the leader's format watch held (`[tuning] log_format_watch_ms = 0`, the
//! operator's way to keep the way back open), so once all three run it the format is raised by
//! hand to 2, and stays there. A second rolling restart lets go of the hold: the leader's watch
//! raises the format to the newest by itself. The writes go on, a node restarts and replays its
//! log (entries of every format), and at the end every node holds the same state and every
//! acknowledged message is there.
//!
//! Without `$RAFTLANE_PREVIOUS_BIN` the test runs `scripts/previous-build.sh` itself (minutes
//! the first time on a machine, then its cached binary).

mod common;

use raftlane_chaos::conn::Conn;
use raftlane_client::contract::Stage;
use raftlane_client::{Client, ClientError};
use raftlane_statemachine::wire::log_format::LogFormat;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TOKEN: &str = "rolling-upgrade-admin-token-0123456789";

/// What the background traffic saw acknowledged.
#[derive(Default)]
struct Acked {
    messages: Mutex<BTreeSet<u64>>,
    completions: AtomicU64,
}

/// Enqueue one message after another (each with its own idempotency key, retried until
/// answered), and claim and complete ingress rows, until `stop`; nothing while `hold`.
async fn traffic(client: Client, acked: Arc<Acked>, stop: Arc<AtomicBool>, hold: Arc<AtomicBool>) {
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if hold.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        n += 1;
        let key = format!("upgrade-{n}");
        let raw = format!("MSH|upgrade message {n}");
        loop {
            match client.enqueue("upgrade", &raw, Some(&key)).await {
                Ok(e) => {
                    acked
                        .messages
                        .lock()
                        .map(|mut m| m.insert(e.message_id.0))
                        .ok();
                    break;
                }
                Err(_) if stop.load(Ordering::Relaxed) => return,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        if n.is_multiple_of(3) {
            if let Ok(rows) = client
                .claim_ready(Stage::Ingress, 5, "upgrade-worker", 30_000, Some("upgrade"))
                .await
            {
                for row in rows {
                    if client.done(&row).await.is_ok() {
                        acked.completions.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
}

/// `GET /v1/cluster/log-format` of node index `i`.
async fn log_format(conn: &Conn, i: usize) -> Option<Value> {
    let client = conn.node(i)?.clone().with_deadline(Duration::from_secs(5));
    client
        .request(hyper::Method::GET, "/v1/cluster/log-format", None)
        .await
        .ok()
}

/// Wait until all three nodes answer, are ready and agree on the state.
async fn settled(conn: &Conn, addrs: &[String], what: &str) {
    raftlane_chaos::collect::wait_ready(conn, addrs, TOKEN, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{what}: the cluster did not become ready: {e}"));
}

/// `$RAFTLANE_PREVIOUS_BIN`, else what `scripts/previous-build.sh` builds (the first time on a
/// machine: minutes; then its cached binary).
fn previous_build() -> PathBuf {
    if let Some(path) = std::env::var_os("RAFTLANE_PREVIOUS_BIN") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "RAFTLANE_PREVIOUS_BIN={} is not a file",
            path.display()
        );
        return path;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    println!("building the previous version (scripts/previous-build.sh)");
    let out = std::process::Command::new("bash")
        .arg(root.join("scripts/previous-build.sh"))
        .current_dir(&root)
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("scripts/previous-build.sh runs");
    assert!(
        out.status.success(),
        "scripts/previous-build.sh failed ({})",
        out.status
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_upgrade_from_the_previous_build_loses_nothing() {
    let previous = previous_build();
    let dir = std::env::temp_dir().join(format!("raftlane-upgrade-{}", std::process::id()));
    let old = common::private_copy_of(&previous, &dir.join("previous"))
        .expect("a copy of the previous build");
    let new = common::private_copy(&dir.join("current")).expect("this build's binary");
    let mut cluster = raftlane_chaos::local::LocalCluster::create(
        &old,
        &dir.join("data"),
        3,
        "rolling-upgrade-secret-0123456789",
        TOKEN,
    )
    .await
    .expect("a local cluster");
    for id in 1..=3 {
        cluster.start(id, None).expect("a node starts");
    }
    let addrs = cluster.api_addrs();
    let conn = Conn::new(&addrs, TOKEN, Duration::from_secs(10));
    settled(&conn, &addrs, "on the previous build").await;

    let acked = Arc::new(Acked::default());
    let stop = Arc::new(AtomicBool::new(false));
    let hold = Arc::new(AtomicBool::new(false));
    let client = Client::new(addrs.clone(), TOKEN).with_deadline(Duration::from_secs(60));
    let writer = tokio::spawn(traffic(
        client.clone(),
        acked.clone(),
        stop.clone(),
        hold.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The leader last, so that two leader changes happen on the way (followers first is the
    // documented order; the leader's turn moves leadership to an upgraded node).
    let leader = client.cluster().await.expect("cluster status").leader_id;
    let mut order: Vec<u64> = (1..=3).filter(|id| Some(*id) != leader).collect();
    order.extend(leader);
    cluster.spec.binary = new.clone();
    let hold_file = dir.join("hold-format.toml");
    std::fs::write(&hold_file, "[tuning]\nlog_format_watch_ms = 0\n").expect("a config file");
    let hold_file = hold_file.display().to_string();
    let hold_format = ["--config", hold_file.as_str()];
    for (step, id) in order.iter().enumerate() {
        let status = cluster.stop(*id).await.expect("a node stops");
        println!("node {id} stopped ({status:?}); starting it on this build");
        cluster
            .start_with(*id, &hold_format)
            .expect("the node starts on this build");
        settled(&conn, &addrs, &format!("after upgrading node {id}")).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        if step < 2 {
            // Mixed builds: the cluster keeps writing format 1, the upgraded node says so, and
            // raising the format is refused, naming a node that still runs the previous build.
            // First, with the traffic held: a node of each build applied the same format 1
            // entries to the same state.
            hold.store(true, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(500)).await;
            let (applied, digest) = common::digests_agree(&conn, Duration::from_secs(30))
                .await
                .unwrap_or_else(|last| {
                    panic!("nodes of the two builds disagree after upgrading node {id}: {last}")
                });
            println!("mixed builds agree: digest {digest} at {applied}");
            hold.store(false, Ordering::Relaxed);
            let i = (*id - 1) as usize;
            let v = log_format(&conn, i)
                .await
                .expect("the upgraded node answers");
            assert_eq!(v["log_format"], json!(1), "node {id}: {v}");
            assert_eq!(
                v["reads"],
                json!(LogFormat::read_numbers()),
                "node {id}: {v}"
            );
            let refused = client
                .request(
                    hyper::Method::POST,
                    "/v1/cluster/log-format",
                    Some(json!({ "format": 2 })),
                )
                .await;
            match refused {
                Err(ClientError::Api {
                    status, message, ..
                }) => {
                    assert!(
                        status == 409 || status == 400 || status == 404,
                        "a mixed cluster refuses the raise: {status} {message}"
                    );
                }
                other => panic!("a mixed cluster raised its log format: {other:?}"),
            }
        }
    }

    // Every node runs this build, the watch held: the format moves only by hand, and only up.
    let raised = client
        .request(
            hyper::Method::POST,
            "/v1/cluster/log-format",
            Some(json!({ "format": 2 })),
        )
        .await
        .expect("the format is raised once every node reads it");
    assert_eq!(raised["log_format"], json!(2), "{raised}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    for i in 0..3 {
        let v = log_format(&conn, i).await.expect("a node answers");
        assert_eq!(v["log_format"], json!(2), "held at 2: node {}: {v}", i + 1);
    }
    match client
        .request(
            hyper::Method::POST,
            "/v1/cluster/log-format",
            Some(json!({ "format": 1 })),
        )
        .await
    {
        Err(ClientError::Api { status, field, .. }) => {
            assert_eq!(status, 400, "a format never goes back");
            assert_eq!(field.as_deref(), Some("format"));
        }
        other => panic!("the log format went back: {other:?}"),
    }

    // Let go of the hold, node by node: once the leader runs without it, its watch raises the
    // format to the newest every member reads.
    for id in &order {
        cluster.stop(*id).await.expect("a node stops");
        cluster
            .start(*id, None)
            .expect("the node starts without the hold");
        settled(
            &conn,
            &addrs,
            &format!("after letting go of node {id}'s hold"),
        )
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mut formats = Vec::new();
        for i in 0..3 {
            formats.push(log_format(&conn, i).await.map(|v| v["log_format"].clone()));
        }
        if formats
            .iter()
            .all(|f| f.as_ref() == Some(&json!(LogFormat::NEWEST.number())))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the leader's watch did not raise the format to {}: {formats:?}",
            LogFormat::NEWEST
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The newest format's rule: a claim answers its row's creation time (the ingest time). On a
    // channel of its own: the traffic's worker claims only the traffic's channel.
    client
        .enqueue("upgrade-dated", "MSH|dated", None)
        .await
        .expect("an enqueue in the newest format");
    let dated = client
        .claim_ready(
            Stage::Ingress,
            1,
            "dated-worker",
            30_000,
            Some("upgrade-dated"),
        )
        .await
        .expect("a claim in the newest format");
    assert_eq!(dated.len(), 1, "{dated:?}");
    assert!(dated[0].created_at.is_some(), "{dated:?}");
    // A restart replays a log holding formats 1, 2 and the newest.
    let replayed = order[0];
    cluster.stop(replayed).await.expect("a node stops");
    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster
        .start(replayed, None)
        .expect("the node starts again");
    settled(&conn, &addrs, "after the restart in the newest format").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    writer.await.expect("the traffic task");

    let (applied, digest) = common::digests_agree(&conn, Duration::from_secs(60))
        .await
        .unwrap_or_else(|last| panic!("the nodes' states differ after the upgrade: {last}"));
    let messages: Vec<u64> = acked
        .messages
        .lock()
        .map(|m| m.iter().copied().collect())
        .unwrap_or_default();
    println!(
        "upgraded node by node: {} messages and {} completions acknowledged; digest {digest} at \
         {applied}",
        messages.len(),
        acked.completions.load(Ordering::Relaxed)
    );
    assert!(messages.len() > 50, "the traffic ran: {}", messages.len());
    for (i, id) in messages.iter().enumerate() {
        let node = i % 3;
        let found = conn
            .once(node, |c| async move {
                c.message(raftlane_statemachine::MessageId(*id)).await
            })
            .await;
        assert!(
            matches!(found, raftlane_chaos::conn::Attempt::Ok(_)),
            "acknowledged message {id} is not on node {}: {found:?}",
            node + 1
        );
    }
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
