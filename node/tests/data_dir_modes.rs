//! A node keeps its data directory to itself and tells a refused peer nothing.
//!
//! `raftlane node` started under umask 022 (the usual default, which would leave RocksDB's files
//! 0644, message bodies readable by every local user) writes messages, and nothing in its data
//! directory is then readable, writable or searchable by group or others. Stopped, given a
//! directory and a file opened up again (as an older build left them), it tightens them at its
//! next start and says so in its log.
//!
//! On the same node, bad node-to-node calls (`/raft/*` and `/internal/*`: signed for another
//! node, beyond the clock-skew bound) get a `401` whose body says only that authentication
//! failed: no node id and no clock offset; the node's log has the reason.
//!
//! One test in this file: it sets the process umask, which its child inherits.

use raftlane_raft::auth::{ClusterAuth, AUTH_HEADER};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ADMIN: &str = "data-dir-modes-admin-token";
const SECRET: &str = "data-dir-modes-cluster-secret";

/// One HTTP/1.1 exchange on a fresh connection: the status and the body, or `None` when the
/// node does not answer.
fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok()?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {ADMIN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body).ok()?;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split_whitespace().nth(1)?.parse().ok()?;
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Start node 1 of a one-node cluster on `addr` with `data`, logging to `log`.
fn start(addr: &str, data: &Path, log: &Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_raftlane"))
        .args(["node", "--id", "1", "--listen", addr, "--bootstrap", "true"])
        .arg("--peers")
        .arg(format!("1={addr}"))
        .arg("--data-dir")
        .arg(data)
        .args(["--cluster-secret", SECRET])
        .args(["--admin-token", ADMIN])
        .env("RAFTLANE_LOG", "info,openraft=error")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log file"))
        .stderr(log)
        .spawn()
        .expect("the raftlane binary starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut child = child;
    while http(addr, "GET", "/readyz", &[], b"").map(|a| a.0) != Some(200) {
        assert!(Instant::now() < deadline, "the node never became ready");
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the node exited early"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

/// Every file and directory under `root` (the root too) that group or others have any
/// permission on, with its mode.
fn open_to_others(root: &Path) -> Vec<(PathBuf, u32)> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            found.push((path.clone(), mode));
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).expect("list") {
                todo.push(entry.expect("entry").path());
            }
        }
    }
    found
}

/// Every regular file under `root`.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).expect("list") {
                todo.push(entry.expect("entry").path());
            }
        } else if meta.is_file() {
            found.push(path);
        }
    }
    found
}

/// A `401` that says only that authentication failed: the code, the fixed message, and no
/// digit anywhere (no node id, no offset, no bound).
fn assert_refused_blankly(answer: Option<(u16, String)>, code: &str, what: &str) {
    let (status, body) = answer.unwrap_or_else(|| panic!("{what}: no answer"));
    assert_eq!(status, 401, "{what}: {body}");
    assert_eq!(
        body,
        format!(
            "{{\"error\":{{\"code\":\"{code}\",\"message\":\"node-to-node authentication failed\"}}}}"
        ),
        "{what}"
    );
    assert!(
        !body.contains(|c: char| c.is_ascii_digit()),
        "{what}: the refusal names a number: {body}"
    );
}

#[test]
fn a_node_under_umask_022_keeps_its_files_private_and_refuses_peers_blankly() {
    let former = rustix::process::umask(rustix::fs::Mode::from_bits_truncate(0o022));
    let root = tempfile::tempdir().expect("tempdir");
    let data = root.path().join("data");
    let log = root.path().join("node.log");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = start(&addr, &data, &log);

    // Message bodies reach the Raft log's and the state's files.
    for n in 0..20 {
        let body = format!("{{\"raw\": \"MSH|patient-{n}|DOE^JANE\"}}");
        let answer = http(
            &addr,
            "POST",
            "/v1/channels/adt/messages",
            &[],
            body.as_bytes(),
        );
        assert_eq!(answer.map(|a| a.0), Some(201), "enqueue {n}");
    }

    // Bad node-to-node calls: signed (with the right secret) for node 2, and an hour stale.
    let auth = ClusterAuth::new(SECRET, 0);
    let vote = b"not decoded: refused before";
    for path in ["/raft/vote", "/internal/propose"] {
        let other = auth.sign(2, path, now_ms(), vote);
        let answer = http(&addr, "POST", path, &[(AUTH_HEADER, other)], vote);
        assert_refused_blankly(answer, "unauthorized", &format!("{path} signed for node 2"));
        let stale = auth.sign(1, path, now_ms() - 3_600_000, vote);
        let answer = http(&addr, "POST", path, &[(AUTH_HEADER, stale)], vote);
        assert_refused_blankly(answer, "clock_skew", &format!("{path} an hour stale"));
    }

    let open = open_to_others(&data);
    assert!(open.is_empty(), "open to group or others: {open:?}");
    assert!(files(&data).len() > 3, "the node wrote its files");

    // An older build's leftovers: the directory 0755 and files 0644.
    child.kill().expect("kill");
    child.wait().expect("wait");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let opened: Vec<PathBuf> = files(&data).into_iter().take(3).collect();
    for file in &opened {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let mut child = start(&addr, &data, &log);
    let open = open_to_others(&data);
    child.kill().expect("kill");
    child.wait().expect("wait");
    rustix::process::umask(former);

    assert!(open.is_empty(), "still open after a restart: {open:?}");
    for file in &opened {
        if file.exists() {
            let mode = std::fs::metadata(file).expect("stat").permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", file.display());
        }
    }
    let output = std::fs::read_to_string(&log).expect("the node's log");
    assert!(
        output.contains("were open to other users"),
        "no warning about the opened files in:\n{output}"
    );
    // The refusals' reasons are in the node's log, not in the answers.
    assert!(
        output.contains("signed for node 2") && output.contains("clock skew"),
        "the refusals' reasons are not logged:\n{output}"
    );
}
