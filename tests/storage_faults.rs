//! Storage faults on a real three-node cluster: node 2's data directory is a small tmpfs that
//! fills up. Its Raft core stops (openraft does not restart it in place); the node must then say
//! so (`/readyz` 503 naming `storage_unavailable`), answer writes 503 `storage_unavailable`
//! (not 500 with RocksDB's text), and end (what `raftlane node` exits on, status 75, so that its
//! supervisor restarts it); once space is freed, the restarted node catches up.
//!
//! Mounting a tmpfs needs root (`mount -t tmpfs`): where it cannot, the test says so on stderr
//! and does nothing (the fault is then only covered by the mapping tests in `api/tests`).

use hyper::Method;
use raftlane_testkit::node::{ClusterOptions, NodeCluster, ADMIN};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmpfs mounted on a directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(dir).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fill the file system of `dir` with `filler`, then give back `leave` bytes of it: the node
/// runs out of space a few writes later.
fn fill_leaving(filler: &Path, leave: u64) -> u64 {
    let mut f = std::fs::File::create(filler).expect("filler file");
    let chunk = vec![0x5au8; 256 * 1024];
    let mut written = 0u64;
    while f.write_all(&chunk).is_ok() {
        written += chunk.len() as u64;
    }
    let _ = f.flush();
    let kept = written.saturating_sub(leave);
    f.set_len(kept).expect("shrink the filler");
    kept
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_disk_fails_readiness_answers_503_ends_the_node_and_a_restart_recovers() {
    let root = tempfile::tempdir().unwrap();
    let Some(tmpfs) = Tmpfs::mount(&root.path().join("node2"), "64m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root)");
        return;
    };
    let mut cluster = NodeCluster::start_with(ClusterOptions {
        data_dir: Some(root.path().to_path_buf()),
        ..ClusterOptions::default()
    })
    .await
    .unwrap();
    let filler = tmpfs.0.join("filler");
    fill_leaving(&filler, 2 * 1024 * 1024);

    // Write through a node other than 2 until node 2's core gives up.
    let body = "x".repeat(30 * 1024);
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut n = 0;
    while cluster.nodes[1]
        .as_ref()
        .unwrap()
        .raft
        .core_failure()
        .is_none()
    {
        assert!(Instant::now() < deadline, "node 2 never ran out of space");
        let leader = cluster
            .wait_for_leader(Duration::from_secs(20))
            .await
            .unwrap();
        let via = if leader == 2 { 1 } else { leader };
        let _ = cluster
            .http(via)
            .json(
                Method::POST,
                "/v1/channels/fill/messages",
                ADMIN,
                &json!({ "raw": format!("{n}{body}") }),
            )
            .await;
        n += 1;
    }

    // Not ready, and it says why.
    let ready = cluster.http(2).get("/readyz", None).await;
    assert_eq!(ready.status.as_u16(), 503, "{ready:?}");
    assert_eq!(ready.json["ready"], json!(false), "{ready:?}");
    let reason = ready.json["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("storage_unavailable") && reason.contains("no space left on device"),
        "{ready:?}"
    );
    // A write sent to it: 503 storage_unavailable with Retry-After, not 500 with RocksDB's text.
    let write = cluster
        .http(2)
        .json(
            Method::POST,
            "/v1/channels/fill/messages",
            ADMIN,
            &json!({ "raw": "after" }),
        )
        .await;
    write.assert_error(503, "storage_unavailable", None);
    assert!(write.headers.contains_key("retry-after"), "{write:?}");
    assert!(!write.message().contains("IO error"), "{write:?}");

    // The other two go on.
    let leader = cluster
        .wait_for_leader(Duration::from_secs(20))
        .await
        .unwrap();
    assert_ne!(leader, 2);
    let ok = cluster
        .http(leader)
        .json(
            Method::POST,
            "/v1/channels/fill/messages",
            ADMIN,
            &json!({ "raw": "still" }),
        )
        .await;
    assert_eq!(ok.status.as_u16(), 201, "{ok:?}");
    assert_eq!(
        cluster
            .http(leader)
            .get("/readyz", None)
            .await
            .status
            .as_u16(),
        200
    );

    // The node ends (in `raftlane node`, the process exits 75 here).
    let node2 = cluster.nodes[1].take().unwrap();
    let ended = tokio::time::timeout(
        Duration::from_secs(60),
        node2.run_until_stopped(std::future::pending()),
    )
    .await
    .expect("the failed node ends by itself");
    match ended {
        Err(raftlane_raft::CoreFailure::Storage(m)) => {
            assert!(m.contains("No space left on device"), "{m}")
        }
        other => panic!("expected a storage failure, got {other:?}"),
    }

    // Space freed, node restarted: it catches up with the others.
    std::fs::remove_file(&filler).unwrap();
    cluster.restart(2).await.unwrap();
    cluster
        .wait_for_equal_digests(Duration::from_secs(60))
        .await
        .unwrap();
    let ready = cluster.http(2).get("/readyz", None).await;
    assert_eq!(ready.status.as_u16(), 200, "{ready:?}");
    cluster.shutdown().await;
    drop(tmpfs);
}
