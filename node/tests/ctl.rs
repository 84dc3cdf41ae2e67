//! `raftlane ctl` as an operator runs it: the built binary against a real cluster (a `raftlane
//! dev` process: three nodes on loopback), its output and its exit statuses.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

const ADMIN: &str = "ctl-test-admin-token";

/// One HTTP/1.1 exchange as the admin: the status and the body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    common::http(addr, ADMIN, method, path, Some(body))
}

/// `raftlane ctl ARGS` in `cwd`, with none of ctl's variables from the test's environment.
fn ctl(cwd: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_raftlane"));
    command.arg("ctl").args(args).current_dir(cwd);
    for var in [
        "RAFTLANE_ENDPOINTS",
        "RAFTLANE_TOKEN",
        "RAFTLANE_TOKEN_FILE",
        "RAFTLANE_CA_FILE",
        "RAFTLANE_CLIENT_CERT",
        "RAFTLANE_CLIENT_KEY",
        "RAFTLANE_CONTEXT",
    ] {
        command.env_remove(var);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn ctl_reads_and_reports_a_running_cluster() {
    let root = tempfile::tempdir().unwrap();
    let dev = common::start_dev(root.path(), ADMIN);
    let cwd = root.path();
    let e = dev.endpoints.as_str();

    // status --json: every member, and the leader named.
    let out = ctl(
        cwd,
        &["--endpoints", e, "--token", ADMIN, "status", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let leader = status["leader_id"].as_u64().expect("a leader");
    let members = status["members"].as_array().unwrap();
    assert_eq!(members.len(), 3, "{status}");
    assert!(
        members
            .iter()
            .any(|m| m["id"] == leader && m["role"] == "leader"),
        "{status}"
    );
    assert!(members.iter().all(|m| m["ready"] == true), "{status}");

    // The human table: a header and one line per node, the leader's marked.
    let token_file = root.path().join("admin.token");
    std::fs::write(&token_file, format!("{ADMIN}\n")).unwrap();
    let context = root.path().join("ctx.toml");
    std::fs::write(
        &context,
        format!(
            "endpoints = {:?}\ntoken_file = \"admin.token\"\n",
            e.split(',').collect::<Vec<_>>()
        ),
    )
    .unwrap();
    let ctx = context.to_str().unwrap();
    let out = ctl(cwd, &["--context", ctx, "status"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[1].starts_with("ID") && lines[1].contains("APPLIED"),
        "{table}"
    );
    for (i, addr) in e.split(',').enumerate() {
        let hostport = addr.trim_start_matches("http://");
        assert!(
            lines.iter().any(|l| l.contains(hostport)),
            "node {} missing:\n{table}",
            i + 1
        );
    }
    assert_eq!(
        lines.iter().filter(|l| l.contains(" leader ")).count(),
        1,
        "{table}"
    );

    // channels: a channel that took a message is listed with its count.
    let r = http(
        &dev.first,
        "POST",
        "/v1/channels/ctl-lab/messages",
        r#"{"raw":"MSH|1"}"#,
    );
    assert_eq!(r.as_ref().map(|r| r.0), Some(201), "{r:?}");
    let out = ctl(cwd, &["--context", ctx, "channels"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let channels = text(&out.stdout);
    let line = channels
        .lines()
        .find(|l| l.starts_with("ctl-lab "))
        .unwrap_or_else(|| panic!("no ctl-lab in:\n{channels}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cells[1..3], ["no", "1"], "{channels}");
    let out = ctl(cwd, &["--context", ctx, "--json", "channels"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["channels"][0]["channel"], "ctl-lab", "{json}");

    // lanes: the channel's ingress lane, one row deep.
    let out = ctl(cwd, &["--context", ctx, "lanes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lanes = text(&out.stdout);
    let line = lanes
        .lines()
        .find(|l| l.starts_with("ingress ") && l.contains(" ctl-lab "))
        .unwrap_or_else(|| panic!("no ingress lane ctl-lab in:\n{lanes}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cells[..4], ["ingress", "ctl-lab", "1", "0"], "{lanes}");
    let out = ctl(cwd, &["--context", ctx, "--json", "lanes"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["lanes"][0]["lane"], "ingress:ctl-lab", "{json}");
    assert_eq!(json["next_cursor"], serde_json::Value::Null, "{json}");

    // destinations pause / resume: replicated, listed with who paused it, said twice politely.
    let out = ctl(
        cwd,
        &[
            "--context",
            ctx,
            "destinations",
            "pause",
            "ctl-emr",
            "--reason",
            "EMR upgrade",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "ctl-emr paused");
    let out = ctl(cwd, &["--context", ctx, "destinations", "pause", "ctl-emr"]);
    assert_eq!(text(&out.stdout).trim(), "ctl-emr was already paused");
    let out = ctl(cwd, &["--context", ctx, "--json", "destinations"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let emr = json["destinations"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["destination"] == "ctl-emr"))
        .unwrap_or_else(|| panic!("no ctl-emr in {json}"));
    assert_eq!(emr["paused"]["reason"], "EMR upgrade", "{json}");
    let out = ctl(cwd, &["--context", ctx, "destinations"]);
    let listing = text(&out.stdout);
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with("ctl-emr ") && l.contains(" by ")),
        "{listing}"
    );
    let out = ctl(
        cwd,
        &["--context", ctx, "destinations", "resume", "ctl-emr"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "ctl-emr resumed");
    let r = http(&dev.first, "GET", "/v1/destinations/paused", "");
    assert!(
        r.as_ref()
            .is_some_and(|r| r.0 == 200 && !r.1.contains("ctl-emr")),
        "{r:?}"
    );

    // dead-letters count: none yet.
    let out = ctl(cwd, &["--context", ctx, "dead-letters", "count"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "0");

    // A wrong token: 4, with the API's code.
    for args in [&["status"][..], &["channels"][..]] {
        let mut all = vec!["--endpoints", e, "--token", "not-a-token"];
        all.extend_from_slice(args);
        let out = ctl(cwd, &all);
        assert_eq!(
            out.status.code(),
            Some(4),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stderr).contains("401"), "{}", text(&out.stderr));
    }

    // An API refusal: 1, with status, code and message.
    let out = ctl(cwd, &["--context", ctx, "messages", "show", "999999"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("404 not_found"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn ctl_without_a_reachable_node_exits_3() {
    let cwd = tempfile::tempdir().unwrap();
    // Nothing listens on a port just freed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = format!("http://127.0.0.1:{port}");
    for args in [&["status"][..], &["dead-letters", "count"][..]] {
        let mut all = vec!["--endpoints", e.as_str(), "--token", "t", "--timeout", "1"];
        all.extend_from_slice(args);
        let out = ctl(cwd.path(), &all);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("no node answered"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn ctl_usage_problems_exit_2() {
    let cwd = tempfile::tempdir().unwrap();
    // clap's own refusal.
    let out = ctl(cwd.path(), &["no-such-subcommand"]);
    assert_eq!(out.status.code(), Some(2));
    // A context file with a token in it (contexts name files, never secrets).
    let context = cwd.path().join("ctx.toml");
    std::fs::write(&context, "token = \"secret\"\n").unwrap();
    let out = ctl(
        cwd.path(),
        &["--context", context.to_str().unwrap(), "status"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("unknown field `token`"),
        "{}",
        text(&out.stderr)
    );
    // A token file that is not there.
    let out = ctl(cwd.path(), &["--token-file", "absent.token", "status"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn ctl_completion_prints_a_script_for_raftlane() {
    let cwd = tempfile::tempdir().unwrap();
    let out = ctl(cwd.path(), &["completion", "bash"]);
    assert_eq!(out.status.code(), Some(0));
    let script = text(&out.stdout);
    assert!(script.contains("raftlane"), "{script}");
    // The whole binary's tree, ctl's subcommands included.
    assert!(script.contains("dead-letters"), "{script}");
    let help = ctl(cwd.path(), &["--help"]);
    let help = text(&help.stdout);
    assert!(
        help.contains("Exit status:") && help.contains("4  unauthorized"),
        "{help}"
    );
}

#[test]
fn ctl_leader_transfer_moves_leadership_and_names_a_bad_target() {
    let root = tempfile::tempdir().unwrap();
    let dev = common::start_dev(root.path(), ADMIN);
    let cwd = root.path();
    let e = dev.endpoints.as_str();
    let status = |cwd: &Path| -> serde_json::Value {
        let out = ctl(
            cwd,
            &["--endpoints", e, "--token", ADMIN, "status", "--json"],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let before = status(cwd)["leader_id"].as_u64().expect("a leader");
    let target = (1..=3).find(|id| *id != before).unwrap();
    // Sent to every endpoint in turn (the first may be a follower: it forwards to the leader).
    let out = ctl(
        cwd,
        &[
            "--endpoints",
            e,
            "--token",
            ADMIN,
            "leader",
            "transfer",
            "--to",
            &target.to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), format!("node {target} leads"));
    assert_eq!(status(cwd)["leader_id"].as_u64(), Some(target));
    // The cluster takes writes under its new leader.
    let r = http(
        &dev.first,
        "POST",
        "/v1/channels/ctl-lab/messages",
        r#"{"raw":"MSH|after-transfer"}"#,
    );
    assert_eq!(r.as_ref().map(|r| r.0), Some(201), "{r:?}");
    // A node that is no voter: 400 naming `to`, exit 1.
    let out = ctl(
        cwd,
        &[
            "--endpoints",
            e,
            "--token",
            ADMIN,
            "leader",
            "transfer",
            "--to",
            "9",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("node 9 is not a voter"),
        "{}",
        text(&out.stderr)
    );
}
