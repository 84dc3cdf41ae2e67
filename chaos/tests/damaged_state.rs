//! A node whose state table is damaged on disk refuses to start, loudly and with its own exit
//! status, and `--rejoin` brings it back from the others; against real node processes.
//!
//! The reproduction: 64 flipped bytes in a state SST; the node started, reported
//! ready, served reads, answered the digest with a `500`, and exited 75 ("free disk space
//! first") once an apply read the block; every restart then exited 1. Now the start reads the
//! whole state with checksums verified: it exits 65 with `STATE DAMAGED` naming the file and
//! the remedy; `--rejoin` refuses (75, nothing removed) while the others cannot form a majority
//! without it, and otherwise wipes the node and lets it catch up to the others' digest.

mod common;

use raftlane_chaos::cluster::leader_of;
use raftlane_chaos::collect::wait_ready;
use raftlane_chaos::conn::{Attempt, Conn};
use raftlane_chaos::local::LocalCluster;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TOKEN: &str = "damage-admin-token";

async fn enqueue_some(conn: &Conn, via: usize, prefix: &str, n: usize) {
    for i in 0..n {
        let key = format!("{prefix}-{i}");
        let body = format!("{prefix} message {i} {}", "x".repeat(200));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (k, b) = (key.clone(), body.clone());
            match conn
                .once(via, move |c| async move {
                    c.enqueue("damage", &b, Some(&k)).await
                })
                .await
            {
                Attempt::Ok(_) => break,
                other => {
                    assert!(Instant::now() < deadline, "{key}: {other:?}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
}

fn ssts(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "sst"))
                .collect()
        })
        .unwrap_or_default();
    out.sort_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
    out
}

/// Wait for node `id` to exit by itself; its status code.
async fn exit_code(cluster: &mut LocalCluster, id: u64, within: Duration) -> Option<i32> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = cluster.nodes.get_mut(&id).and_then(|n| n.exited()) {
            return status.code();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_damaged_state_refuses_to_start_and_rejoin_restores_it() {
    let Some((dir, mut cluster, addrs, conn)) =
        common::ready_cluster("damage", TOKEN, Duration::from_secs(10)).await
    else {
        return;
    };
    let leader = leader_of(&addrs, TOKEN).await.expect("a leader");
    let victim = (1..=3u64).find(|id| *id != leader).expect("a follower");
    let other = (1..=3u64)
        .find(|id| *id != leader && *id != victim)
        .expect("another follower");
    enqueue_some(&conn, (leader - 1) as usize, "before", 300).await;
    common::digests_agree(&conn, Duration::from_secs(30))
        .await
        .unwrap();

    // A clean stop flushes the state into SST files; damage the largest one.
    let status = cluster.stop(victim).await.unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "clean stop");
    let sm = cluster.nodes[&victim].spec.data_dir.join("sm");
    let files = ssts(&sm);
    let target = files
        .last()
        .cloned()
        .expect("the stopped node's state has SST files");
    let mut bytes = std::fs::read(&target).unwrap();
    let at = bytes.len() / 4;
    for b in bytes.iter_mut().skip(at).take(64) {
        *b ^= 0xA5;
    }
    std::fs::write(&target, &bytes).unwrap();
    let name = target.file_name().unwrap().to_string_lossy().into_owned();

    // Refused at start: 65, STATE DAMAGED naming the file and the remedy.
    cluster.start(victim, None).unwrap();
    let code = exit_code(&mut cluster, victim, Duration::from_secs(60)).await;
    let log = std::fs::read_to_string(&cluster.nodes[&victim].spec.log_file).unwrap_or_default();
    assert_eq!(
        code,
        Some(65),
        "exit status of a damaged start; log:\n{log}"
    );
    let line = log
        .lines()
        .find(|l| l.starts_with("STATE DAMAGED"))
        .unwrap_or_else(|| panic!("no line beginning STATE DAMAGED in:\n{log}"));
    assert!(line.contains(&name), "names {name}: {line}");
    assert!(line.contains("--rejoin"), "names the remedy: {line}");

    // The two others go on without it.
    enqueue_some(&conn, (leader - 1) as usize, "while-down", 50).await;

    // --rejoin with only one other member up: refused, nothing removed.
    cluster.stop(other).await.unwrap();
    cluster.start_with(victim, &["--rejoin"]).unwrap();
    let code = exit_code(&mut cluster, victim, Duration::from_secs(30)).await;
    let log = std::fs::read_to_string(&cluster.nodes[&victim].spec.log_file).unwrap_or_default();
    assert_eq!(
        code,
        Some(75),
        "a rejoin that may wipe the last copy; log:\n{log}"
    );
    assert!(log.contains("REJOIN REFUSED"), "{log}");
    assert!(
        target.exists(),
        "a refused rejoin removed {}",
        target.display()
    );

    // With both others up, --rejoin wipes it and it catches up to the others' digest.
    cluster.start(other, None).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while leader_of(&addrs, TOKEN).await.is_none() {
        assert!(
            Instant::now() < deadline,
            "no leader after restarting node {other}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Both others must answer ready before a rejoin is allowed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    cluster.start_with(victim, &["--rejoin"]).unwrap();
    wait_ready(&conn, &addrs, TOKEN, Duration::from_secs(90))
        .await
        .unwrap_or_else(|e| {
            let log =
                std::fs::read_to_string(&cluster.nodes[&victim].spec.log_file).unwrap_or_default();
            panic!("{e}; the rejoined node's log:\n{log}")
        });
    enqueue_some(&conn, (victim - 1) as usize, "after", 20).await;
    let agreed = common::digests_agree(&conn, Duration::from_secs(60)).await;
    assert!(agreed.is_ok(), "the rejoined node's digest: {agreed:?}");
    assert!(!target.exists(), "the damaged file is gone");
    cluster.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
