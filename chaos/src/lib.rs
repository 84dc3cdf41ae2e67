//! # raftlane-chaos
//!
//! `raftlane-chaos`: run workloads against a three-node cluster while injecting faults (kill -9,
//! SIGSTOP past the lease, partitions and one-way link cuts, latency, restart of every node,
//! one node restarted with its clock a few seconds, ±60 s or +1 h off, one running node's clock
//! stepped ±5 s, ±25 s or ±10 min), heal, wait for quiescence and check the
//! histories and the final state: no acknowledged enqueue lost, per-lane FIFO, fencing, leases
//! by the wall clock (no row handed to a second owner while the first owner's lease could still
//! run in real time), the cluster's time (every write stamped within its round trip by the
//! runner's clock), exactly one terminal status, replica digests, audit chains, and
//! linearizability of the config compare-and-set register.
//!
//! A seed makes the fault schedule (and every workload decision) reproducible.
//!
//! Modules: [`proxy`] (the fault proxy on node-to-node traffic) with [`peer_ident`],
//! [`process`] and [`local`] (the local backend), [`docker`], [`cluster`] (one interface over
//! both), [`fault_kind`] and [`faults`], [`schedule`], [`isolation`] (what an isolated leader must do), [`workload`], [`conn`], [`history`], [`collect`] and
//! [`final_state`], [`checkers`], [`report`], [`runner`].

pub mod checkers;
pub mod cluster;
pub mod collect;
pub mod conn;
pub mod docker;
pub mod fault_kind;
pub mod faults;
pub mod final_state;
pub mod history;
pub mod isolation;
pub mod local;
pub mod peer_ident;
pub mod prng;
pub mod process;
pub mod proxy;
pub mod report;
pub mod runner;
pub mod schedule;
pub mod workload;

pub use faults::FaultKind;
pub use report::Report;
pub use runner::{run_suite, BackendChoice, ChaosOptions};

use anyhow::Context;
use std::path::PathBuf;
use std::time::Duration;

/// `raftlane-chaos` flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ChaosArgs {
    /// Length of the fault phase (e.g. 60s, 2m, 90); healing and checking come after.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Seed of the fault schedule and the workloads (default: from the clock, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// `local` (child processes + fault proxy) or `docker` (the compose cluster).
    #[arg(long, default_value = "local")]
    pub backend: String,
    /// Faults to inject: a comma-separated list of kill, pause, partition, latency,
    /// restart-all, clock-skew, clock-step, slow-fsync (or `all`).
    #[arg(long, default_value = "all")]
    pub faults: String,
    /// The `raftlane` server binary the local backend runs nodes with (`raftlane node ...`;
    /// default: `raftlane` next to this executable, else on PATH).
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// Directory for node data and logs (default: a new temp dir, removed when the run passes).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Keep the data directory even when the run passes.
    #[arg(long)]
    pub keep_data: bool,
    /// How long workers get to drain the pipeline after healing.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub quiesce_timeout: Duration,
    /// Number of producers.
    #[arg(long, default_value_t = 4)]
    pub producers: usize,
    /// Write the report (and verdicts) as JSON to this file too.
    #[arg(long)]
    pub report_json: Option<PathBuf>,
    /// docker backend: the compose file (default: docker compose's lookup).
    #[arg(long)]
    pub compose_file: Option<PathBuf>,
    /// docker backend: the compose project name.
    #[arg(long)]
    pub compose_project: Option<String>,
    /// docker backend: the admin token of the compose cluster.
    #[arg(
        long,
        env = "RAFTLANE_ADMIN_TOKEN",
        default_value = "dev-admin-token",
        hide_env_values = true
    )]
    pub admin_token: String,
}

/// The file name of the server binary the local backend runs nodes with.
const NODE_BINARY: &str = "raftlane";

/// The `raftlane` binary for the local backend when `--binary` is not given: the one next to
/// this executable (`cargo build --release -p raftlane-node -p raftlane-chaos` puts both in the
/// same target directory), else the first on `PATH`.
pub fn default_node_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().ok();
    let beside = exe.as_deref().and_then(std::path::Path::parent);
    let path = std::env::var_os("PATH");
    find_node_binary(beside, path.as_deref()).with_context(|| {
        format!(
            "cannot find the {NODE_BINARY} binary next to {} or on PATH; build it (cargo build \
             --release -p raftlane-node) or pass --binary",
            exe.as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "this executable".into())
        )
    })
}

/// `raftlane` in `beside`, else in the first directory of `path` (a `PATH` value) holding it.
fn find_node_binary(
    beside: Option<&std::path::Path>,
    path: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    let name = format!("{NODE_BINARY}{}", std::env::consts::EXE_SUFFIX);
    beside
        .map(|dir| dir.join(&name))
        .into_iter()
        .chain(
            path.into_iter()
                .flat_map(std::env::split_paths)
                .map(|dir| dir.join(&name)),
        )
        .find(|p| p.is_file())
}

/// `60s`, `2m`, `500ms`, `90` (seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. 60s, 2m, 500ms)"))?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "s" | "sec" | "secs" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => return Err(format!("unknown unit '{other}' in '{s}'")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("'{s}' is not a duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl ChaosArgs {
    pub fn into_options(self) -> anyhow::Result<ChaosOptions> {
        let seed = self.seed.unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1);
            prng::SplitMix64::new(nanos).next_u64() % 1_000_000
        });
        let backend = match self.backend.as_str() {
            "local" => {
                let binary = match self.binary {
                    Some(b) => b,
                    None => default_node_binary()?,
                };
                BackendChoice::Local { binary }
            }
            "docker" => BackendChoice::Docker {
                compose_file: self.compose_file,
                project: self.compose_project,
                admin_token: self.admin_token,
            },
            other => anyhow::bail!("unknown backend '{other}' (local or docker)"),
        };
        let mut opts = ChaosOptions {
            seed,
            duration: self.duration,
            faults: FaultKind::parse_list(&self.faults)?,
            backend,
            data_dir: self.data_dir,
            keep_data: self.keep_data,
            quiesce_timeout: self.quiesce_timeout,
            workload: workload::WorkloadConfig::default(),
            verbose: true,
        };
        opts.workload.producers = self.producers.max(1);
        Ok(opts)
    }
}

/// `raftlane-chaos`: run, print the report, fail (non-zero exit) on any violation.
pub async fn run(args: ChaosArgs) -> anyhow::Result<()> {
    let json_path = args.report_json.clone();
    let opts = args.into_options()?;
    let seed = opts.seed;
    let report = run_suite(opts).await?;
    println!("{}", report.render());
    if let Some(path) = json_path {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if !report.passed() {
        anyhow::bail!(
            "chaos run with seed {seed} found {} violations",
            report.violations()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("5y").is_err());
    }

    #[test]
    fn the_node_binary_is_found_beside_the_executable_first_then_on_path() {
        let root = std::env::temp_dir().join(format!("raftlane-chaos-find-{}", std::process::id()));
        let (beside, on_path, empty) = (root.join("beside"), root.join("path"), root.join("empty"));
        for dir in [&beside, &on_path, &empty] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let name = format!("{NODE_BINARY}{}", std::env::consts::EXE_SUFFIX);
        std::fs::write(beside.join(&name), b"").unwrap();
        std::fs::write(on_path.join(&name), b"").unwrap();
        let path = std::env::join_paths([&empty, &on_path]).unwrap();
        assert_eq!(
            find_node_binary(Some(&beside), Some(&path)),
            Some(beside.join(&name))
        );
        assert_eq!(
            find_node_binary(Some(&empty), Some(&path)),
            Some(on_path.join(&name))
        );
        assert_eq!(
            find_node_binary(None, Some(&path)),
            Some(on_path.join(&name))
        );
        assert_eq!(find_node_binary(Some(&empty), None), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}
