//! A node on a slow disk says so: with every synced write of its raft log delayed 150 ms
//! (`RAFTLANE_TEST_FSYNC_DELAY_FILE`, a test-only hook), `/metrics` counts those writes above the
//! 100 ms bucket of `raftlane_log_sync_latency_seconds_bucket` and the log has a `slow storage`
//! WARN line, where a mean alone would hide a slow disk.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ADMIN: &str = "slow-storage-admin-token";

/// One HTTP/1.1 exchange as the admin.
fn http(addr: &str, method: &str, path: &str, body: Option<&str>) -> Option<(u16, String)> {
    common::http(addr, ADMIN, method, path, body)
}

#[test]
fn slow_log_writes_show_in_metrics_and_the_log() {
    let root = tempfile::tempdir().unwrap();
    let delay = root.path().join("fsync-delay");
    std::fs::write(&delay, "150").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let log_path = root.path().join("node.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_raftlane"))
        .args([
            "node",
            "--id",
            "1",
            "--listen",
            &addr,
            "--bootstrap",
            "true",
        ])
        .arg("--peers")
        .arg(format!("1={addr}"))
        .arg("--data-dir")
        .arg(root.path().join("data"))
        .args(["--cluster-secret", "slow-storage-secret-0123"])
        .args(["--admin-token", ADMIN])
        .env("RAFTLANE_LOG", "info,openraft=error")
        .env("RAFTLANE_TEST_FSYNC_DELAY_FILE", &delay)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while http(&addr, "GET", "/readyz", None).map(|r| r.0) != Some(200) {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the node never became ready");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for i in 0..5 {
        let body = format!("{{\"raw\": \"m{i}\"}}");
        let r = http(&addr, "POST", "/v1/channels/slow/messages", Some(&body));
        assert_eq!(r.as_ref().map(|r| r.0), Some(201), "{r:?}");
    }
    // The node judges its own storage slow (sampled every 500 ms over the last 3 s), which is
    // what makes a leader hand off when it has a healthy voter to hand to (raft/src/slow_storage.rs).
    let judged = Instant::now() + Duration::from_secs(5);
    let metrics = loop {
        let (_, metrics) = http(&addr, "GET", "/metrics", None).expect("metrics");
        if metrics.lines().any(|l| l == "raftlane_storage_slow 1") || Instant::now() > judged {
            break metrics;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = child.kill();
    let _ = child.wait();
    let bucket = |le: &str| -> f64 {
        let name = format!("raftlane_log_sync_latency_seconds_bucket{{le=\"{le}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{metrics}"))
    };
    assert!(
        metrics.lines().any(|l| l == "raftlane_storage_slow 1"),
        "storage not judged slow:\n{metrics}"
    );
    // A single node has no voter to hand its leadership to.
    assert!(
        metrics
            .lines()
            .any(|l| l == "raftlane_slow_storage_handoffs_total 0"),
        "{metrics}"
    );
    let slow = bucket("+Inf") - bucket("0.1");
    assert!(slow >= 5.0, "{slow} synced writes above 100 ms:\n{metrics}");
    let output = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        output
            .lines()
            .any(|l| l.contains("WARN") && l.contains("slow storage")),
        "no slow storage WARN in:\n{output}"
    );
}
