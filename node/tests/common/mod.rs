//! Shared by the node crate's process-level tests: they talk to a `raftlane` process over
//! plain HTTP/1.1, without a client library, as `curl` would.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One HTTP/1.1 exchange on a fresh connection with `token` as the bearer: the status and the
/// body, or `None` when the node does not answer.
pub fn http(
    addr: &str,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok()?;
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.split_whitespace().nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// A `raftlane dev` process (three nodes on loopback), killed when dropped; its output goes to
/// `dev.log` in the directory it was started for.
#[allow(dead_code)] // not every test crate that includes this module starts one
pub struct Dev {
    pub child: Child,
    /// `http://` URLs of the three nodes, comma-separated (ctl's `--endpoints`).
    pub endpoints: String,
    /// The first node's `host:port`.
    pub first: String,
}

impl Dev {
    /// The first node's port: node N listens on this plus N - 1.
    #[allow(dead_code)]
    pub fn first_port(&self) -> u16 {
        self.first
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("host:port")
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Three consecutive free ports on loopback (the dev cluster listens on P, P+1, P+2).
#[allow(dead_code)]
pub fn free_ports() -> u16 {
    for _ in 0..50 {
        let p = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if p < 60_000 && (1..=2).all(|i| TcpListener::bind(("127.0.0.1", p + i)).is_ok()) {
            return p;
        }
    }
    panic!("no three consecutive free ports");
}

/// Start `raftlane dev` with `token` as its admin token, its data and `dev.log` under `root`,
/// and wait until every node is ready.
#[allow(dead_code)]
pub fn start_dev(root: &Path, token: &str) -> Dev {
    let port = free_ports();
    let log = std::fs::File::create(root.join("dev.log")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_raftlane"))
        .args([
            "dev",
            "--base-port",
            &port.to_string(),
            "--admin-token",
            token,
        ])
        .arg("--data-dir")
        .arg(root.join("data"))
        .env("RAFTLANE_LOG", "warn,openraft=error")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let addrs: Vec<String> = (0..3).map(|i| format!("127.0.0.1:{}", port + i)).collect();
    let dev = Dev {
        child,
        endpoints: addrs
            .iter()
            .map(|a| format!("http://{a}"))
            .collect::<Vec<_>>()
            .join(","),
        first: addrs[0].clone(),
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while !addrs
        .iter()
        .all(|a| http(a, token, "GET", "/readyz", None).map(|r| r.0) == Some(200))
    {
        assert!(
            Instant::now() < deadline,
            "the dev cluster never became ready: {}",
            std::fs::read_to_string(root.join("dev.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    dev
}
