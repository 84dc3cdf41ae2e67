//! Backup and restore as an operator runs them: `raftlane ctl snapshot save` against a running
//! cluster under write load, `raftlane restore` of that file into three new data directories,
//! three `raftlane node` processes started on them (no `--bootstrap`), and damaged or misused
//! inputs refused with their exit statuses.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ADMIN: &str = "backup-test-admin-token";

fn http(addr: &str, method: &str, path: &str, body: Option<&str>) -> Option<(u16, String)> {
    common::http(addr, ADMIN, method, path, body)
}

fn raftlane(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_raftlane"));
    command.args(args);
    for var in ["RAFTLANE_ENDPOINTS", "RAFTLANE_TOKEN", "RAFTLANE_CONTEXT"] {
        command.env_remove(var);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Enqueue one message on `channel`; its `(message_id, index)` when acknowledged.
fn enqueue(addr: &str, channel: &str, n: usize) -> Option<(u64, u64)> {
    let body = format!(r#"{{"raw":"MSH|^~\\&|BACKUP|{n}"}}"#);
    let (status, answer) = http(
        addr,
        "POST",
        &format!("/v1/channels/{channel}/messages"),
        Some(&body),
    )?;
    if status != 201 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&answer).ok()?;
    Some((v["message_id"].as_u64()?, v["index"].as_u64()?))
}

fn message_exists(addr: &str, id: u64) -> bool {
    let (status, body) =
        http(addr, "GET", &format!("/v1/messages/{id}"), None).unwrap_or((0, String::new()));
    assert!(status == 200 || status == 404, "{status} {body}");
    status == 200
}

/// `raftlane restore` of `from` into `dir` as node `id` of `peers`: the state digest and index
/// it reports.
fn restore(from: &Path, dir: &Path, id: u64, peers: &str) -> (String, u64) {
    let out = raftlane(&[
        "restore",
        "--from",
        from.to_str().unwrap(),
        "--data-dir",
        dir.to_str().unwrap(),
        "--id",
        &id.to_string(),
        "--peers",
        peers,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let after = |marker: &str| -> String {
        said.split(marker)
            .nth(1)
            .and_then(|d| d.split_whitespace().next())
            .unwrap_or_else(|| panic!("no {marker:?} in {said}"))
            .to_string()
    };
    let index = after(": index ").parse().expect("an index");
    (after("state digest "), index)
}

/// Three `raftlane node` processes, killed when dropped.
struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start_restored(root: &Path, peers: &str, addrs: &[String]) -> Nodes {
    let mut children = Vec::new();
    for (i, addr) in addrs.iter().enumerate() {
        let id = (i + 1).to_string();
        let log = std::fs::File::create(root.join(format!("node{id}.log"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_raftlane"))
            .args(["node", "--id", &id, "--listen", addr, "--peers", peers])
            .arg("--data-dir")
            .arg(root.join(format!("restored{id}")))
            .args(["--cluster-secret", "restored-cluster-secret-0123"])
            .args(["--admin-token", ADMIN])
            .env("RAFTLANE_LOG", "info,openraft=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        children.push(child);
    }
    let nodes = Nodes(children);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !addrs
        .iter()
        .all(|a| http(a, "GET", "/readyz", None).map(|r| r.0) == Some(200))
    {
        assert!(
            Instant::now() < deadline,
            "the restored cluster never became ready: {}",
            std::fs::read_to_string(root.join("node1.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    nodes
}

#[test]
fn a_backup_taken_under_load_restores_into_a_new_cluster_that_serves_and_writes() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let dev = common::start_dev(root, ADMIN);

    // Writes acknowledged before the backup starts: every one must be in it.
    let before: Vec<(u64, u64)> = (0..40)
        .map(|n| enqueue(&dev.first, "bk-before", n).expect("enqueue before the backup"))
        .collect();

    // Writes going on while it is taken.
    let stop = Arc::new(AtomicBool::new(false));
    let during = Arc::new(Mutex::new(Vec::new()));
    let load = {
        let (stop, during, addr) = (stop.clone(), during.clone(), dev.first.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Some(acked) = enqueue(&addr, "bk-load", n) {
                    during.lock().unwrap().push(acked);
                }
                n += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let backup = root.join("cluster.backup");
    let backup_s = backup.to_str().unwrap();
    let out = raftlane(&[
        "ctl",
        "--endpoints",
        &dev.endpoints,
        "--token",
        ADMIN,
        "--json",
        "snapshot",
        "save",
        backup_s,
    ]);
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    load.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let saved: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let index = saved["index"].as_u64().expect("the backup's index");
    assert!(
        before.iter().all(|(_, i)| *i <= index),
        "the backup (index {index}) misses acknowledged writes: {saved}"
    );
    assert_eq!(saved["sha256"].as_str().map(str::len), Some(64), "{saved}");
    let during = during.lock().unwrap().clone();
    assert!(
        during.iter().any(|(_, i)| *i > index),
        "the load went on past the backup ({} writes, backup at {index})",
        during.len()
    );
    assert!(!root.join("cluster.backup.part").exists());

    // Once the writes stop, a backup holds exactly the state the cluster has at its index: a
    // restore of it reports the digest the leader reports at that index.
    let mut compared = false;
    for attempt in 0..5 {
        let quiet = root.join(format!("quiet{attempt}.backup"));
        let out = raftlane(&[
            "ctl",
            "--endpoints",
            &dev.endpoints,
            "--token",
            ADMIN,
            "--json",
            "snapshot",
            "save",
            quiet.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let saved: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let node = saved["node_id"].as_u64().expect("the node that served it");
        let addr = format!("127.0.0.1:{}", dev.first_port() + node as u16 - 1);
        let (_, body) = http(&addr, "GET", "/v1/cluster/digest", None).unwrap();
        let live: serde_json::Value = serde_json::from_str(&body).unwrap();
        if live["last_applied"] != saved["index"] {
            continue; // a timer's entry came in between: try again
        }
        let (restored, _) = restore(
            &quiet,
            &root.join(format!("scratch{attempt}")),
            1,
            "1=127.0.0.1:1",
        );
        assert_eq!(
            Some(restored.as_str()),
            live["digest"].as_str(),
            "{live} {saved}"
        );
        compared = true;
        break;
    }
    assert!(
        compared,
        "the cluster never stood still long enough to compare digests"
    );
    drop(dev);

    // A damaged copy is refused before anything is written.
    let damaged = root.join("damaged.backup");
    let mut bytes = std::fs::read(&backup).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(&damaged, &bytes).unwrap();
    let port = common::free_ports();
    let addrs: Vec<String> = (0..3).map(|i| format!("127.0.0.1:{}", port + i)).collect();
    let peers = format!("1={},2={},3={}", addrs[0], addrs[1], addrs[2]);
    let target = root.join("restored1");
    let out = raftlane(&[
        "restore",
        "--from",
        damaged.to_str().unwrap(),
        "--data-dir",
        target.to_str().unwrap(),
        "--id",
        "1",
        "--peers",
        &peers,
    ]);
    assert_eq!(out.status.code(), Some(65), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot be used"),
        "{}",
        text(&out.stderr)
    );
    assert!(!target.join("sm").exists() && !target.join("log").exists());

    // The file itself restores, once per node.
    let mut digests = Vec::new();
    for id in 1..=3 {
        let (digest, at) = restore(&backup, &root.join(format!("restored{id}")), id, &peers);
        assert_eq!(at, index);
        digests.push(digest);
    }
    assert!(digests.windows(2).all(|w| w[0] == w[1]), "{digests:?}");

    // A second restore into a data directory that holds a node is refused.
    let out = raftlane(&[
        "restore",
        "--from",
        backup_s,
        "--data-dir",
        root.join("restored1").to_str().unwrap(),
        "--id",
        "1",
        "--peers",
        &peers,
    ]);
    assert_eq!(out.status.code(), Some(73), "{}", text(&out.stderr));

    let _nodes = start_restored(root, &peers, &addrs);
    // The restored replicas agree: equal digests at equal indexes, from the backup's index on.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen: Vec<serde_json::Value> = addrs
            .iter()
            .map(|a| {
                let (status, body) = http(a, "GET", "/v1/cluster/digest", None).unwrap();
                assert_eq!(status, 200, "{body}");
                serde_json::from_str(&body).unwrap()
            })
            .collect();
        assert!(
            seen.iter()
                .all(|v| v["last_applied"].as_u64().unwrap() >= index),
            "{seen:?}"
        );
        let same_index = seen
            .windows(2)
            .all(|w| w[0]["last_applied"] == w[1]["last_applied"]);
        if same_index {
            assert!(
                seen.windows(2).all(|w| w[0]["digest"] == w[1]["digest"]),
                "{seen:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the replicas never met at one index: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for (id, _) in &before {
        assert!(message_exists(&addrs[0], *id), "message {id} lost");
    }
    for (id, i) in &during {
        assert_eq!(
            message_exists(&addrs[1], *id),
            *i <= index,
            "message {id} at index {i}, backup at {index}"
        );
    }
    // The restored cluster accepts writes and replicates them.
    let (id, _) = enqueue(&addrs[2], "bk-after", 0).expect("a write to the restored cluster");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !addrs.iter().all(|a| {
        http(
            a,
            "GET",
            &format!("/v1/messages/{id}?consistency=stale"),
            None,
        )
        .map(|r| r.0)
            == Some(200)
    }) {
        assert!(
            Instant::now() < deadline,
            "the new write did not reach every node"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
