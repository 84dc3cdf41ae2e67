//! Shared by the chaos crate's integration tests: locate the built `raftlane` binary.

use std::path::PathBuf;

/// `$RAFTLANE_BIN`, else `raftlane` next to this test's `deps/` directory (the same target
/// profile directory), else `$CARGO_TARGET_DIR/release/raftlane`, else `target/release/raftlane`
/// at the workspace root.
pub fn find_binary() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(p) = std::env::var("RAFTLANE_BIN") {
        candidates.push(PathBuf::from(p));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(profile_dir) = exe.parent().and_then(|deps| deps.parent()) {
            candidates.push(profile_dir.join("raftlane"));
        }
    }
    if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
        candidates.push(PathBuf::from(dir).join("release").join("raftlane"));
    }
    candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/raftlane"));
    candidates.into_iter().find(|p| p.is_file())
}

/// A private copy of the binary in `dir` (a concurrent build may replace the original while
/// nodes are being restarted from it).
pub fn private_copy(dir: &std::path::Path) -> Option<PathBuf> {
    private_copy_of(&find_binary()?, dir)
}

/// A private copy of `binary` in `dir`.
pub fn private_copy_of(binary: &std::path::Path, dir: &std::path::Path) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).ok()?;
    let copy = dir.join("raftlane");
    std::fs::copy(binary, &copy).ok()?;
    Some(copy)
}

/// Run the chaos suite with `opts`, print its report, remove `dir` (the binary's private copy)
/// and fail the test on any violation; the report, for the test's own checks.
#[allow(dead_code)] // not every test crate that includes this module runs the whole suite
pub async fn run_passing(
    opts: raftlane_chaos::ChaosOptions,
    dir: &std::path::Path,
) -> raftlane_chaos::report::Report {
    let seed = opts.seed;
    let report = raftlane_chaos::run_suite(opts)
        .await
        .expect("the chaos run could not start");
    println!("{}", report.render());
    let _ = std::fs::remove_dir_all(dir);
    assert!(
        report.passed(),
        "chaos run (seed {seed}) found {} violations; see the report above",
        report.violations()
    );
    report
}

/// A three-node local cluster of real `raftlane node` processes under a new temporary
/// directory named for `name`, every node started and ready, with a connection to it
/// (`conn_timeout` per request). `None` (after a note) when the binary is not built.
#[allow(dead_code)] // not every test crate that includes this module starts its own cluster
pub async fn ready_cluster(
    name: &str,
    token: &str,
    conn_timeout: std::time::Duration,
) -> Option<(
    PathBuf,
    raftlane_chaos::local::LocalCluster,
    Vec<String>,
    raftlane_chaos::conn::Conn,
)> {
    let dir = std::env::temp_dir().join(format!("raftlane-{name}-{}", std::process::id()));
    let Some(binary) = private_copy(&dir.join("bin")) else {
        println!("note: the raftlane binary is not built; skipping");
        return None;
    };
    let secret = format!("{name}-secret-0123456789");
    let mut cluster =
        raftlane_chaos::local::LocalCluster::create(&binary, &dir.join("data"), 3, &secret, token)
            .await
            .expect("a local cluster");
    for id in 1..=3 {
        cluster.start(id, None).expect("a node starts");
    }
    let addrs = cluster.api_addrs();
    let conn = raftlane_chaos::conn::Conn::new(&addrs, token, conn_timeout);
    raftlane_chaos::collect::wait_ready(&conn, &addrs, token, std::time::Duration::from_secs(60))
        .await
        .expect("the cluster is ready");
    Some((dir, cluster, addrs, conn))
}

/// Every node's `(last_applied, digest)`, once all three agree (within `within`).
#[allow(dead_code)] // not every test crate that includes this module compares digests
pub async fn digests_agree(
    conn: &raftlane_chaos::conn::Conn,
    within: std::time::Duration,
) -> Result<(u64, String), String> {
    let deadline = std::time::Instant::now() + within;
    let mut last = String::new();
    while std::time::Instant::now() < deadline {
        let mut seen = Vec::new();
        for i in 0..3 {
            match conn.once(i, |c| async move { c.digest().await }).await {
                raftlane_chaos::conn::Attempt::Ok(d) => seen.push(d),
                other => last = format!("node {}: {other:?}", i + 1),
            }
        }
        if seen.len() == 3 && seen.iter().all(|d| *d == seen[0]) {
            return Ok(seen[0].clone());
        }
        if seen.len() == 3 {
            last = format!("{seen:?}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    Err(last)
}

/// Node `id`'s last log index, `None` when it does not answer.
#[allow(dead_code)] // not every test crate that includes this module reads log indexes
pub async fn last_log_index(conn: &raftlane_chaos::conn::Conn, id: u64) -> Option<u64> {
    match conn
        .once((id - 1) as usize, |c| async move { c.cluster().await })
        .await
    {
        raftlane_chaos::conn::Attempt::Ok(s) => Some(s.last_log_index),
        _ => None,
    }
}
