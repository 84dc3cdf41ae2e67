//! The local backend's node processes: each node is `raftlane node ...` run as a child process
//! of this one, with its own data directory, advertising its fault-proxy address to its peers.

use anyhow::Context;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::{Child, Command};

/// The env var through which a node skews its proposer clock (see the report's note).
pub const CLOCK_OFFSET_ENV: &str = "RAFTLANE_CLOCK_OFFSET_MS";

/// The env var naming the file whose content (signed ms) a node adds to its wall clock while it
/// runs, re-read every few ms: how a clock-step fault steps a running node's clock
/// (`raftlane_raft::clock::TEST_CLOCK_STEP_ENV`, a test-only hook; the chaos crate does not
/// depend on the raft crate, hence the copy).
pub const CLOCK_STEP_ENV: &str = "RAFTLANE_TEST_CLOCK_STEP_FILE";

/// The env var naming the file whose content (ms) a node sleeps before each synced write of its
/// raft log, re-read every few ms: how a slow-fsync fault slows a running node's disk
/// (`raftlane_raft::storage_latency::TEST_FSYNC_DELAY_ENV`, a test-only hook; copied for the
/// same reason as [`CLOCK_STEP_ENV`]).
pub const FSYNC_DELAY_ENV: &str = "RAFTLANE_TEST_FSYNC_DELAY_FILE";

/// How to start every node of the local cluster.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub id: u64,
    /// The real address the node listens on (clients use it directly).
    pub listen: SocketAddr,
    /// The proxy address peers use to reach it.
    pub advertise: SocketAddr,
    pub data_dir: PathBuf,
    pub log_file: PathBuf,
    /// The node's clock-step file ([`CLOCK_STEP_ENV`]); absent: no step.
    pub clock_step_file: PathBuf,
    /// The node's fsync-delay file ([`FSYNC_DELAY_ENV`]); absent: no delay.
    pub fsync_delay_file: PathBuf,
}

/// One node process (or none, while it is down).
pub struct NodeProcess {
    pub spec: NodeSpec,
    child: Option<Child>,
    /// SIGSTOPped.
    pub paused: bool,
    /// The proposer clock offset it was started with.
    pub clock_offset_ms: Option<i64>,
}

/// Arguments common to every node.
#[derive(Clone, Debug)]
pub struct ClusterSpec {
    pub binary: PathBuf,
    pub secret: String,
    pub admin_token: String,
    /// id → advertised (proxy) address.
    pub peers: BTreeMap<u64, SocketAddr>,
}

impl NodeProcess {
    pub fn new(spec: NodeSpec) -> Self {
        Self {
            spec,
            child: None,
            paused: false,
            clock_offset_ms: None,
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Start the process (no-op if it runs).
    pub fn start(
        &mut self,
        cluster: &ClusterSpec,
        clock_offset_ms: Option<i64>,
    ) -> anyhow::Result<()> {
        self.start_with(cluster, clock_offset_ms, &[])
    }

    /// [`Self::start`] with more arguments after the usual ones (e.g. `--rejoin`).
    pub fn start_with(
        &mut self,
        cluster: &ClusterSpec,
        clock_offset_ms: Option<i64>,
        extra: &[&str],
    ) -> anyhow::Result<()> {
        if self.child.is_some() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.spec.data_dir)
            .with_context(|| format!("cannot create {}", self.spec.data_dir.display()))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.spec.log_file)
            .with_context(|| format!("cannot open {}", self.spec.log_file.display()))?;
        let log_err = log.try_clone()?;
        let peers = cluster
            .peers
            .iter()
            .map(|(id, a)| format!("{id}={a}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut cmd = Command::new(&cluster.binary);
        cmd.arg("node")
            .arg("--id")
            .arg(self.spec.id.to_string())
            .arg("--listen")
            .arg(self.spec.listen.to_string())
            .arg("--advertise")
            .arg(self.spec.advertise.to_string())
            .arg("--peers")
            .arg(peers)
            .arg("--data-dir")
            .arg(&self.spec.data_dir)
            .arg("--bootstrap")
            .arg(if self.spec.id == 1 { "true" } else { "false" })
            .arg("--cluster-secret")
            .arg(&cluster.secret)
            .arg("--admin-token")
            .arg(&cluster.admin_token)
            .args(extra)
            .env_remove(CLOCK_OFFSET_ENV)
            .env(
                "RAFTLANE_LOG",
                std::env::var("RAFTLANE_CHAOS_NODE_LOG")
                    .unwrap_or_else(|_| "info,openraft=warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .kill_on_drop(true);
        // Other RAFTLANE_* settings in our environment must not leak into the node.
        for (k, _) in std::env::vars() {
            if k.starts_with("RAFTLANE_") && k != "RAFTLANE_LOG" {
                cmd.env_remove(k);
            }
        }
        if let Some(off) = clock_offset_ms {
            cmd.env(CLOCK_OFFSET_ENV, off.to_string());
        }
        cmd.env(CLOCK_STEP_ENV, &self.spec.clock_step_file)
            .env(FSYNC_DELAY_ENV, &self.spec.fsync_delay_file);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot run {}", cluster.binary.display()))?;
        self.child = Some(child);
        self.paused = false;
        self.clock_offset_ms = clock_offset_ms;
        Ok(())
    }

    /// Step the running node's wall clock to `step_ms` off the real time (0: back to it).
    pub fn set_clock_step(&self, step_ms: i64) -> anyhow::Result<()> {
        write_knob(&self.spec.clock_step_file, &step_ms.to_string())
    }

    /// Delay each synced write of the running node's raft log by `ms` (0: no delay).
    pub fn set_fsync_delay(&self, ms: u64) -> anyhow::Result<()> {
        write_knob(&self.spec.fsync_delay_file, &ms.to_string())
    }

    /// SIGTERM and wait (up to 30 s) for the node to close its databases and exit: a clean
    /// stop, which flushes the state to its files. Its exit status, if it exited.
    pub async fn stop(&mut self) -> anyhow::Result<Option<std::process::ExitStatus>> {
        let Some(mut child) = self.child.take() else {
            return Ok(None);
        };
        if let Some(pid) = child.id() {
            signal(pid, "-TERM").await?;
        }
        self.paused = false;
        match tokio::time::timeout(std::time::Duration::from_secs(30), child.wait()).await {
            Ok(status) => Ok(Some(status?)),
            Err(_) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                anyhow::bail!("the node did not stop within 30 s of SIGTERM; killed")
            }
        }
    }

    /// SIGKILL and reap.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait()).await;
        }
        self.paused = false;
    }

    /// SIGSTOP.
    pub async fn pause(&mut self) -> anyhow::Result<()> {
        if let Some(pid) = self.pid() {
            signal(pid, "-STOP").await?;
            self.paused = true;
        }
        Ok(())
    }

    /// SIGCONT.
    pub async fn resume(&mut self) -> anyhow::Result<()> {
        if let Some(pid) = self.pid() {
            signal(pid, "-CONT").await?;
        }
        self.paused = false;
        Ok(())
    }

    /// Whether the process exited by itself (a crash); reaps it.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        let status = self
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten());
        if status.is_some() {
            self.child = None;
        }
        status
    }
}

/// `kill -SIG pid` through the `kill` program (no libc needed).
async fn signal(pid: u32, sig: &str) -> anyhow::Result<()> {
    let status = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .status()
        .await
        .context("cannot run kill")?;
    anyhow::ensure!(status.success(), "kill {sig} {pid} failed: {status}");
    Ok(())
}

/// The last `n` lines of a node's log (for failure reports).
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Write a test knob's file: to a temporary file, then renamed, so the node never reads half a
/// number.
fn write_knob(file: &Path, value: &str) -> anyhow::Result<()> {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, value).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("cannot write {}", file.display()))
}
