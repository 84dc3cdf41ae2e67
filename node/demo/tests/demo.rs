//! The README's first command (`scripts/demo.sh`) runs `raftlane-demo --fresh`. This test runs
//! the same main job, as a user would (the real binary, three nodes on loopback), with
//! `--exit-after-demo`, and checks the summary it prints: so a change that breaks the demo
//! breaks the build.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A base port P with P, P+1 and P+2 free on 127.0.0.1 at the time of the check.
fn free_base_port() -> u16 {
    let start = 20_000 + (std::process::id() % 20_000) as u16;
    (0..200u16)
        .map(|i| start.wrapping_add(i.wrapping_mul(7)))
        .filter(|p| (1024..65_000).contains(p))
        .find(|&p| (0..3).all(|k| TcpListener::bind(("127.0.0.1", p + k)).is_ok()))
        .expect("no three consecutive free ports")
}

/// The value printed after `label` on its summary line, e.g. "messages processed   60" → "60".
fn summary_value<'a>(out: &'a str, label: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no summary line {label:?} in:\n{out}"))
}

#[test]
fn the_demo_runs_end_to_end_and_its_summary_verifies_everything() {
    let messages: u32 = 60;
    let data = std::env::temp_dir().join(format!("raftlane-demo-test-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_raftlane-demo"))
        .args(["--exit-after-demo", "--fresh"])
        .args(["--demo-messages", &messages.to_string()])
        .args(["--base-port", &free_base_port().to_string()])
        .arg("--data-dir")
        .arg(&data)
        .env("RAFTLANE_ADMIN_TOKEN", "demo-test-token")
        .env("RAFTLANE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start raftlane-demo");

    // The demo drains within seconds; 300 s is its own drain deadline.
    let deadline = Instant::now() + Duration::from_secs(360);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for raftlane-demo") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("raftlane-demo did not finish within 360 s");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut s) = child.stdout.take() {
        s.read_to_string(&mut out).expect("read stdout");
    }
    if let Some(mut s) = child.stderr.take() {
        s.read_to_string(&mut err).expect("read stderr");
    }
    let _ = std::fs::remove_dir_all(&data);

    assert!(
        status.success(),
        "exit {status}\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert_eq!(summary_value(&out, "messages enqueued"), "60");
    let processed: u64 = summary_value(&out, "messages processed").parse().unwrap();
    let dead: u64 = summary_value(&out, "dead letters (flaky)").parse().unwrap();
    assert!(dead > 0, "the flaky destination must dead-letter:\n{out}");
    assert!(processed > 0 && processed <= u64::from(messages), "{out}");
    assert_eq!(summary_value(&out, "lane order verified"), "yes");
    assert_eq!(summary_value(&out, "replay after fix"), "yes");
    assert_eq!(
        summary_value(&out, "audit chain verified on all three nodes, same head:"),
        "yes"
    );
    assert_eq!(
        summary_value(&out, "state digests equal on all three nodes:"),
        "yes"
    );
    assert!(
        out.contains("Shutting down...") && out.contains("Stopped."),
        "{out}"
    );
}
