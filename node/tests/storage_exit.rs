//! `raftlane node` exits when its Raft core stops on a storage error: a one-node cluster whose
//! data directory is a small tmpfs that fills up must end with status 75 and an ERROR line
//! naming the fault, so that its supervisor restarts it (docs/SPEC.md §11.7). What the node
//! answers meanwhile (`/readyz`, writes) is `tests/storage_faults.rs`.
//!
//! Mounting a tmpfs needs root: where it cannot, the test says so on stderr and does nothing.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ADMIN: &str = "storage-exit-admin-token";

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

/// One HTTP/1.1 exchange as the admin; the status code, or `None` when the node does not
/// answer.
fn http(addr: &str, method: &str, path: &str, body: Option<&str>) -> Option<u16> {
    common::http(addr, ADMIN, method, path, body).map(|(status, _)| status)
}

#[test]
fn a_node_whose_disk_fills_up_exits_75_with_an_error_line() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let Some(tmpfs) = Tmpfs::mount(&data, "64m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root)");
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let log_path = root.path().join("node.log");
    let start = || {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        Command::new(env!("CARGO_BIN_EXE_raftlane"))
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
            .arg(&data)
            .args(["--cluster-secret", "storage-exit-secret"])
            .args(["--admin-token", ADMIN])
            .env("RAFTLANE_LOG", "info,openraft=error")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let mut child = start();

    let deadline = Instant::now() + Duration::from_secs(60);
    while http(&addr, "GET", "/readyz", None) != Some(200) {
        assert!(Instant::now() < deadline, "the node never became ready");
        assert!(child.try_wait().unwrap().is_none(), "the node exited early");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Fill the tmpfs, leaving 2 MiB, then write until the node gives up.
    {
        let mut f = std::fs::File::create(tmpfs.0.join("filler")).unwrap();
        let chunk = vec![0x5au8; 256 * 1024];
        let mut written = 0u64;
        while f.write_all(&chunk).is_ok() {
            written += chunk.len() as u64;
        }
        f.set_len(written.saturating_sub(2 * 1024 * 1024)).unwrap();
    }
    let filler = "x".repeat(30 * 1024);
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut n = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "the node did not exit after its disk filled up:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        }
        let body = format!("{{\"raw\": \"{n}{filler}\"}}");
        let _ = http(&addr, "POST", "/v1/channels/fill/messages", Some(&body));
        n += 1;
    };
    let output = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(status.code(), Some(75), "exit status; log:\n{output}");
    let line = output
        .lines()
        .find(|l| l.contains("NODE FAILED"))
        .unwrap_or_else(|| panic!("no NODE FAILED line in:\n{output}"));
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains("No space left on device"), "{line}");

    // Restarted on the still-full disk (as its supervisor does): "retry later" again, 75, not
    // the 1 of any other failure, and not the 65 of a damaged log.
    let mut again = start();
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = again.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = again.kill();
            panic!("the node restarted on a full disk neither failed nor exited");
        }
        let body = format!("{{\"raw\": \"again{n}{filler}\"}}");
        let _ = http(&addr, "POST", "/v1/channels/fill/messages", Some(&body));
        n += 1;
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(
        status.code(),
        Some(75),
        "exit status after a restart on the full disk; log:\n{output}"
    );
    drop(tmpfs);
}
