//! The curl session `raftlane dev` prints runs as printed: its lines, pasted into a shell in the
//! order given (ROW, FENCE and MESSAGE_ID filled in from the answers before, as its text says),
//! enqueue, claim, route, claim the lane, finish the row, read the message back and verify the
//! audit chain without one error.

mod common;

use serde_json::Value;
use std::process::Command;

const ADMIN: &str = "dev-banner-admin-token";

/// Run `line` in bash after the banner's `prelude` lines; its standard output as JSON.
fn run(prelude: &[String], line: &str) -> Value {
    let script = format!("set -e\n{}\n{line}\n", prelude.join("\n"));
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{line}\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{line}\nanswered {stdout:?}, not JSON: {e}"))
}

fn id(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        other => panic!("not a number: {other}"),
    }
}

#[test]
fn the_printed_session_runs_as_printed() {
    if Command::new("curl").arg("--version").output().is_err() {
        println!("note: curl is not installed; skipping (apt-get install curl)");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let _dev = common::start_dev(root.path(), ADMIN);
    // The nodes answer before the command has printed its banner.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let log = loop {
        let log = std::fs::read_to_string(root.path().join("dev.log")).unwrap();
        if log.contains("These lines run here") || std::time::Instant::now() > deadline {
            break log;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let banner: Vec<String> = log
        .lines()
        .skip_while(|l| !l.starts_with("Try it"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_string())
        .collect();
    let (prelude, session): (Vec<String>, Vec<String>) =
        banner.into_iter().partition(|l| !l.starts_with("curl "));
    assert!(
        prelude.iter().any(|l| l.starts_with("export RL=")),
        "no export line in the banner:\n{log}"
    );
    assert_eq!(session.len(), 7, "the banner's curl lines:\n{log}");

    let enqueued = run(&prelude, &session[0]);
    assert!(enqueued.get("message_id").is_some(), "{enqueued}");
    let claimed = run(&prelude, &session[1]);
    let item = &claimed["items"][0];
    let handoff = session[2]
        .replace("/ROW/", &format!("/{}/", id(&item["row_id"])))
        .replace("FENCE", &id(&item["fence"]));
    let routed = run(&prelude, &handoff);
    assert_eq!(routed["applied"], Value::Bool(true), "{routed}");
    let lane = run(&prelude, &session[3]);
    let item = &lane["item"];
    let message_id = id(&item["message_id"]);
    let done = session[4]
        .replace("/ROW/", &format!("/{}/", id(&item["row_id"])))
        .replace("FENCE", &id(&item["fence"]));
    let finished = run(&prelude, &done);
    assert_eq!(finished["ok"], Value::Bool(true), "{finished}");
    let message = run(&prelude, &session[5].replace("MESSAGE_ID", &message_id));
    assert_eq!(
        message["message"]["status"],
        Value::String("processed".into()),
        "{message}"
    );
    let verified = run(&prelude, &session[6]);
    assert_eq!(verified["ok"], Value::Bool(true), "{verified}");
}
