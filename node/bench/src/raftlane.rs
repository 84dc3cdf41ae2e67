//! The workloads against a raftlane cluster, through the typed HTTP client.

use super::report::{progress, rss_bytes, Meter, Report, Sample};
use super::{body_sent_us, make_body, Backoff, BenchArgs, Handoffs, Pacer, Workload};
use anyhow::Context;
use hyper::Method;
use raftlane_api::peer::{base_url, PeerClient};
use raftlane_client::contract::{
    DeliveryBody, FifoEmptyReason, RouteBody, RouteHandler, Stage, TransformBody,
};
use raftlane_client::{Client, ClientError, FifoClaim, RowAction, RowActionItem, RowActionResult};
use raftlane_statemachine::ClaimedRow;
use raftlane_testkit::node::{ClusterOptions, NodeCluster};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Leases of benchmark claims: far longer than any claim-to-done gap of a healthy run.
const TTL_MS: u64 = 60_000;

/// Where the resident size comes from.
#[derive(Clone)]
enum Rss {
    /// The cluster runs in this process (three nodes + the load generator).
    InProcess,
    /// Node processes given with --pid.
    Pids(Vec<u32>),
    None,
}

impl Rss {
    fn sample(&self) -> Option<u64> {
        match self {
            Rss::InProcess => rss_bytes("self"),
            Rss::Pids(p) => p.iter().map(|pid| rss_bytes(&pid.to_string())).sum(),
            Rss::None => None,
        }
    }

    fn nodes(&self) -> u64 {
        match self {
            Rss::Pids(p) => p.len().max(1) as u64,
            _ => 3,
        }
    }

    fn note(&self) -> &'static str {
        match self {
            Rss::InProcess => "VmRSS of the one process running all three nodes and the load generator; per node = process / 3",
            Rss::Pids(_) => "sum of VmRSS of the --pid node processes; per node = sum / number of pids",
            Rss::None => "not sampled (external cluster without --pid)",
        }
    }
}

fn error_kind(e: &ClientError) -> String {
    match e {
        ClientError::Api { status, code, .. } => format!("{status} {code}"),
        ClientError::Unavailable(m) => {
            format!("unavailable: {}", m.chars().take(80).collect::<String>())
        }
        ClientError::Decode(m) => format!("decode: {}", m.chars().take(80).collect::<String>()),
    }
}

fn temp_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!("raftlane-bench-{}-{nanos:x}", std::process::id()))
}

/// Counters of the Raft log and state machine of one node, from its /metrics.
async fn scrape(peer: &PeerClient, addr: &str) -> BTreeMap<String, f64> {
    let url = format!("{}/metrics", base_url(addr));
    let mut out = BTreeMap::new();
    let Ok((_, _, body)) = peer.call(Method::GET, &url, &[], Vec::new()).await else {
        return out;
    };
    for line in String::from_utf8_lossy(&body).lines() {
        if line.starts_with('#') {
            continue;
        }
        let mut parts = line.rsplitn(2, ' ');
        let (Some(value), Some(name)) = (parts.next(), parts.next()) else {
            continue;
        };
        let wanted = [
            "raftlane_log_appends_total",
            "raftlane_log_entries_appended_total",
            "raftlane_log_syncs_total",
            "raftlane_log_sync_seconds_total",
            "raftlane_sm_apply_batches_total",
            "raftlane_sm_apply_seconds_total",
            "raftlane_sm_applied_entries_total",
            "raftlane_snapshots_built_total",
            "raftlane_is_leader",
            "raftlane_messages_total",
            "raftlane_last_applied",
        ];
        if wanted.contains(&name) || name.starts_with("raftlane_commands_total") {
            if let Ok(v) = value.parse::<f64>() {
                out.insert(name.to_string(), v);
            }
        }
    }
    out
}

async fn scrape_all(addrs: &[String]) -> Vec<BTreeMap<String, f64>> {
    let peer = PeerClient::new(Duration::from_secs(5));
    let mut all = Vec::new();
    for a in addrs {
        all.push(scrape(&peer, a).await);
    }
    all
}

/// Per-node Raft log figures between two scrapes.
fn log_deltas(
    addrs: &[String],
    before: &[BTreeMap<String, f64>],
    after: &[BTreeMap<String, f64>],
) -> Value {
    let mut nodes = Vec::new();
    for (i, addr) in addrs.iter().enumerate() {
        let (Some(b), Some(a)) = (before.get(i), after.get(i)) else {
            continue;
        };
        let df = |k: &str| {
            (a.get(k).copied().unwrap_or(0.0) - b.get(k).copied().unwrap_or(0.0)).max(0.0)
        };
        let d = |k: &str| df(k) as u64;
        let entries = d("raftlane_log_entries_appended_total");
        let syncs = d("raftlane_log_syncs_total");
        let commands: f64 = a
            .iter()
            .filter(|(k, _)| k.starts_with("raftlane_commands_total"))
            .map(|(k, v)| v - b.get(k).copied().unwrap_or(0.0))
            .sum();
        let commands = commands.max(0.0) as u64;
        // x / y to two decimals (0 when y is 0).
        let ratio_f = |x: f64, y: u64| {
            if y > 0 {
                (x / y as f64 * 100.0).round() / 100.0
            } else {
                0.0
            }
        };
        let ratio = |x: u64, y: u64| ratio_f(x as f64, y);
        let leader = a.get("raftlane_is_leader").copied().unwrap_or(0.0) > 0.0;
        nodes.push(json!({
            "node": addr,
            "leader": leader,
            "log_appends": d("raftlane_log_appends_total"),
            "log_entries": entries,
            "log_fsyncs": syncs,
            "entries_per_fsync": ratio(entries, syncs),
            "sm_apply_batches": d("raftlane_sm_apply_batches_total"),
            "sm_applied_entries": d("raftlane_sm_applied_entries_total"),
            "log_sync_mean_ms": ratio_f(df("raftlane_log_sync_seconds_total") * 1e3, syncs),
            "sm_apply_us_per_entry": ratio_f(
                df("raftlane_sm_apply_seconds_total") * 1e6,
                d("raftlane_sm_applied_entries_total"),
            ),
            "snapshots_built": d("raftlane_snapshots_built_total"),
            "commands_proposed_here": commands,
            "commands_per_entry": if leader { ratio(commands, entries) } else { 0.0 },
        }));
    }
    Value::Array(nodes)
}

/// Put the leader's address first so writes are not forwarded (unless --any-node).
async fn leader_first(client: &Client, addrs: Vec<String>) -> Vec<String> {
    let Ok(status) = client.cluster().await else {
        return addrs;
    };
    let Some(leader) = status.leader_id else {
        return addrs;
    };
    let leader_addr = status
        .membership
        .iter()
        .find(|n| n.id == leader)
        .map(|n| base_url(&n.addr));
    let Some(leader_addr) = leader_addr else {
        return addrs;
    };
    let mut ordered = addrs.clone();
    if let Some(i) = addrs.iter().position(|a| base_url(a) == leader_addr) {
        ordered.rotate_left(i);
    }
    ordered
}

struct Target {
    addrs: Vec<String>,
    token: String,
    local: Option<(NodeCluster, PathBuf, bool)>,
    rss: Rss,
    description: String,
}

async fn open_target(args: &BenchArgs) -> anyhow::Result<Target> {
    if !args.target.is_empty() {
        let token = args
            .token
            .clone()
            .filter(|t| !t.is_empty())
            .context("--target needs --token (or RAFTLANE_ADMIN_TOKEN)")?;
        let rss = if args.pid.is_empty() {
            Rss::None
        } else {
            Rss::Pids(args.pid.clone())
        };
        return Ok(Target {
            description: format!("external cluster {}", args.target.join(",")),
            addrs: args.target.clone(),
            token,
            local: None,
            rss,
        });
    }
    let (dir, remove) = match &args.data_dir {
        Some(d) => (d.clone(), false),
        None => (temp_dir(), !args.keep_data),
    };
    println!(
        "starting a local three-node cluster in this process on 127.0.0.1:{}-{} (data in {})",
        args.base_port,
        args.base_port.saturating_add(2),
        dir.display()
    );
    let mut options = ClusterOptions::dev(args.base_port, &dir, args.token.clone())?;
    options.tuning.eager_replication = args.eager_replication;
    let cluster = NodeCluster::start_with(options).await?;
    let mut addrs = cluster.addrs.clone();
    if let Some(id) = cluster.leader_id() {
        addrs.rotate_left(cluster.index_of(id));
    }
    Ok(Target {
        addrs,
        token: cluster.admin_token.clone(),
        local: Some((cluster, dir, remove)),
        rss: Rss::InProcess,
        description: "in-process dev cluster (3 nodes in this process, with the load generator)"
            .into(),
    })
}

async fn close_target(t: Target) {
    if let Some((cluster, dir, remove)) = t.local {
        cluster.shutdown().await;
        if remove {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

pub async fn run(args: &BenchArgs) -> anyhow::Result<Report> {
    let target = open_target(args).await?;
    let result = run_on(args, &target).await;
    close_target(target).await;
    result
}

async fn run_on(args: &BenchArgs, target: &Target) -> anyhow::Result<Report> {
    let probe = Client::new(target.addrs.clone(), target.token.clone());
    let addrs = if args.any_node || target.local.is_some() {
        target.addrs.clone()
    } else {
        leader_first(&probe, target.addrs.clone()).await
    };
    let client = Client::new(addrs.clone(), target.token.clone());
    // Fail fast on a bad token or an unreachable cluster.
    client
        .cluster()
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach the cluster at {}: {e}", addrs.join(",")))?;
    // Names unique to this run, so leftovers of another run on the same cluster stay apart.
    let run_id = format!("{:06x}", rand::random::<u32>() & 0xff_ffff);
    let lanes: Vec<String> = (0..args.lanes())
        .map(|k| format!("bench-{run_id}-{k}"))
        .collect();
    let rss_start = target.rss.sample();

    let (prefilled, prefill_trace) = match args.prefill_count() {
        0 => (0, Vec::new()),
        n => prefill(&client, args, &lanes, n, &target.rss).await,
    };
    if prefilled > 0 && !args.settle.is_zero() {
        println!(
            "settling for {:.0} s before measuring (the prefill's request records expire, compactions catch up)",
            args.settle.as_secs_f64()
        );
        tokio::time::sleep(args.settle).await;
    }
    let rss_after_prefill = target.rss.sample();

    let meter = Arc::new(Meter::new(args.warmup, args.duration));
    // Raft log counters at the start and the end of the measurement window.
    let scraper = {
        let addrs = addrs.clone();
        let from = meter.start() + args.warmup;
        let until = from + args.duration;
        tokio::spawn(async move {
            tokio::time::sleep_until(from.into()).await;
            let before = scrape_all(&addrs).await;
            tokio::time::sleep_until(until.into()).await;
            let after = scrape_all(&addrs).await;
            (before, after)
        })
    };
    let queued = Arc::new(AtomicU64::new(prefilled));
    let (op, samples, in_flight_peak) = match args.workload {
        Workload::Enqueue => {
            let s = enqueue(&client, args, &lanes, &meter, &queued, &target.rss).await;
            ("acknowledged enqueue", s, None)
        }
        Workload::Pipeline => {
            let (s, peak) = pipeline(&client, args, &lanes, &meter, &target.rss).await;
            ("message enqueued → routed → transformed → FIFO claimed → done (enqueue-to-done latency)", s, Some(peak))
        }
        Workload::Claim => {
            let s = claim(&client, args, &lanes, &meter, &queued, &target.rss).await;
            ("FIFO claim + done of a queued row", s, None)
        }
    };
    let (before, after) = scraper.await.unwrap_or_default();
    let rss_end = target.rss.sample();

    let mut details = BTreeMap::new();
    details.insert("cluster".into(), json!(target.description));
    details.insert("leader".into(), json!(addrs.first()));
    details.insert("raft_log".into(), log_deltas(&addrs, &before, &after));
    let mib = |b: Option<u64>| b.map(|b| (b as f64 / 1048576.0 * 10.0).round() / 10.0);
    let nodes = target.rss.nodes();
    details.insert(
        "rss_mib".into(),
        json!({
            "note": target.rss.note(),
            "start": mib(rss_start),
            "after_prefill": mib(rss_after_prefill),
            "end": mib(rss_end),
            "end_per_node": mib(rss_end.map(|b| b / nodes)),
            "queued_at_end": queued.load(Ordering::Relaxed),
        }),
    );
    if let Rss::Pids(pids) = &target.rss {
        let per: Vec<Value> = pids
            .iter()
            .map(|p| json!({ "pid": p, "rss_mib": mib(rss_bytes(&p.to_string())) }))
            .collect();
        details.insert("rss_per_process".into(), Value::Array(per));
    }
    if !prefill_trace.is_empty() {
        details.insert("prefill_trace".into(), Value::Array(prefill_trace));
    }
    if let Some(peak) = in_flight_peak {
        details.insert(
            "window".into(),
            json!({ "max_in_flight": args.window, "peak_in_flight": peak }),
        );
    }
    let mut notes = Vec::new();
    if prefilled < args.prefill_count() {
        notes.push(format!(
            "prefill stopped at {prefilled} of {} messages (--prefill-timeout)",
            args.prefill_count()
        ));
    }
    if args.workload == Workload::Claim && meter.counter("lane_drained") > 0 {
        notes.push(format!(
            "{} lane(s) ran dry before the end: raise --prefill",
            meter.counter("lane_drained")
        ));
    }
    Ok(finish(
        "raftlane", args, op, prefilled, &meter, samples, details, notes,
    ))
}

#[allow(clippy::too_many_arguments)]
pub(super) fn finish(
    backend: &str,
    args: &BenchArgs,
    op: &str,
    prefilled: u64,
    meter: &Meter,
    samples: Vec<Sample>,
    details: BTreeMap<String, Value>,
    notes: Vec<String>,
) -> Report {
    let ops = meter.measured_ops();
    let measured = meter.measured_secs();
    let secs = measured.max(1e-9);
    let mut notes = notes;
    if measured + 0.5 < args.duration.as_secs_f64() {
        notes.push(format!(
            "the run ended after {measured:.1} s of the {:.0} s window (throughput is over {measured:.1} s)",
            args.duration.as_secs_f64()
        ));
    }
    Report {
        backend: backend.into(),
        workload: args.workload.name().into(),
        op: op.into(),
        clients: if args.workload == Workload::Claim {
            0
        } else {
            args.clients()
        },
        lanes: args.lanes(),
        workers: match args.workload {
            Workload::Enqueue => 0,
            _ => args.lane_workers(),
        },
        body_bytes: args.body_bytes,
        warmup_s: args.warmup.as_secs_f64(),
        duration_s: (measured * 10.0).round() / 10.0,
        prefilled,
        ops,
        throughput_ops_s: ops as f64 / secs,
        latency: meter.latency(),
        errors: meter.errors(),
        error_kinds: meter.error_kinds(),
        counters: meter.counters(),
        details,
        notes,
        samples,
    }
}

/// Enqueue `n` messages over the lanes with `--clients` producers, bounded by
/// `--prefill-timeout`; prints progress. Returns how many were acknowledged.
async fn prefill(
    client: &Client,
    args: &BenchArgs,
    lanes: &[String],
    n: u64,
    rss: &Rss,
) -> (u64, Vec<Value>) {
    println!(
        "prefilling {n} messages over {} lanes with {} clients...",
        lanes.len(),
        args.clients()
    );
    let next = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + args.prefill_timeout;
    let mut tasks = Vec::new();
    for _ in 0..args.clients() {
        let (client, next, acked, errors) =
            (client.clone(), next.clone(), acked.clone(), errors.clone());
        let lanes = lanes.to_vec();
        let bytes = args.body_bytes;
        tasks.push(tokio::spawn(async move {
            loop {
                if Instant::now() >= deadline {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let lane = &lanes[(i % lanes.len() as u64) as usize];
                match client.enqueue(lane, &make_body(i, 0, bytes), None).await {
                    Ok(_) => {
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
        }));
    }
    let trace = Arc::new(std::sync::Mutex::new(Vec::new()));
    let watcher = {
        let (acked, errors, rss, trace) =
            (acked.clone(), errors.clone(), rss.clone(), trace.clone());
        tokio::spawn(async move {
            let mut last = 0;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let a = acked.load(Ordering::Relaxed);
                let bytes = rss.sample();
                if let Ok(mut t) = trace.lock() {
                    t.push(json!({ "t_s": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0, "queued": a, "msgs_s": a - last, "rss_bytes": bytes }));
                }
                let r = bytes
                    .map(|b| format!("  rss {:.0} MiB", b as f64 / 1048576.0))
                    .unwrap_or_default();
                println!(
                    "  [prefill {:>6.1}s] queued {a}/{n}  {} msg/s  errors {}{r}",
                    started.elapsed().as_secs_f64(),
                    a - last,
                    errors.load(Ordering::Relaxed)
                );
                last = a;
            }
        })
    };
    for t in tasks {
        let _ = t.await;
    }
    watcher.abort();
    let a = acked.load(Ordering::Relaxed);
    let secs = started.elapsed().as_secs_f64();
    println!(
        "prefilled {a} messages in {secs:.1} s ({:.0} msg/s)",
        a as f64 / secs.max(1e-9)
    );
    let trace = trace.lock().map(|t| t.clone()).unwrap_or_default();
    (a, trace)
}

fn progress_deadline(args: &BenchArgs, meter: &Meter) -> Instant {
    meter.start() + args.warmup + args.duration + Duration::from_secs(30)
}

async fn enqueue(
    client: &Client,
    args: &BenchArgs,
    lanes: &[String],
    meter: &Arc<Meter>,
    queued: &Arc<AtomicU64>,
    rss: &Rss,
) -> Vec<Sample> {
    let seq = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for c in 0..args.clients() {
        let (client, meter, queued, seq) =
            (client.clone(), meter.clone(), queued.clone(), seq.clone());
        let lane = lanes[c % lanes.len()].clone();
        let bytes = args.body_bytes;
        let mut pacer = Pacer::new(args, c);
        tasks.push(tokio::spawn(async move {
            while !meter.done() {
                pacer.wait().await;
                let body = make_body(seq.fetch_add(1, Ordering::Relaxed), meter.now_us(), bytes);
                let t0 = Instant::now();
                match client.enqueue(&lane, &body, None).await {
                    Ok(_) => {
                        meter.record(t0.elapsed());
                        queued.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        meter.error(error_kind(&e));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        }));
    }
    let samples = {
        let (queued, rss) = (queued.clone(), rss.clone());
        progress(
            meter,
            "enqueue",
            progress_deadline(args, meter),
            move || (Some(queued.load(Ordering::Relaxed)), rss.sample(), None),
        )
        .await
    };
    meter.stop();
    for t in tasks {
        let _ = t.await;
    }
    samples
}

/// Hand on one claim's rows (one action each) and count the answers.
async fn hand_on(client: &Client, meter: &Meter, how: Handoffs, actions: Vec<RowActionItem>) {
    let answers: Vec<(&'static str, Result<(), String>)> = match how {
        Handoffs::Batch => match client.row_actions(&actions).await {
            Ok(results) => actions
                .iter()
                .zip(results)
                .map(|(item, r)| {
                    let answer = match r {
                        RowActionResult::Applied(_) => Ok(()),
                        RowActionResult::Refused(e) => {
                            Err(format!("{} {}", e.status, e.error.code))
                        }
                    };
                    (item.action.name(), answer)
                })
                .collect(),
            Err(e) => actions
                .iter()
                .map(|item| (item.action.name(), Err(error_kind(&e))))
                .collect(),
        },
        Handoffs::Sequential | Handoffs::Concurrent => {
            let calls = actions.into_iter().map(|item| async move {
                (
                    item.action.name(),
                    client
                        .row(item.row, item.action)
                        .await
                        .map(|_| ())
                        .map_err(|e| error_kind(&e)),
                )
            });
            if how == Handoffs::Concurrent {
                futures::future::join_all(calls).await
            } else {
                let mut answers = Vec::new();
                for call in calls {
                    answers.push(call.await);
                }
                answers
            }
        }
    };
    for (action, answer) in answers {
        match answer {
            Ok(()) => meter.count(action),
            Err(kind) => meter.error(format!("{action}: {kind}")),
        }
    }
}

/// The pipeline: producers → routers → transformers → FIFO lane workers.
async fn pipeline(
    client: &Client,
    args: &BenchArgs,
    lanes: &[String],
    meter: &Arc<Meter>,
    rss: &Rss,
) -> (Vec<Sample>, u64) {
    let window = Arc::new(Semaphore::new(args.window.max(1)));
    let seq = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    // Producers: message i goes to channel i % L (its outbound lane has the same name).
    for c in 0..args.clients() {
        let (client, meter, window, seq) =
            (client.clone(), meter.clone(), window.clone(), seq.clone());
        let lanes = lanes.to_vec();
        let bytes = args.body_bytes;
        let mut pacer = Pacer::new(args, c);
        tasks.push(tokio::spawn(async move {
            while !meter.done() {
                pacer.wait().await;
                match tokio::time::timeout(Duration::from_millis(100), window.acquire()).await {
                    Ok(Ok(permit)) => permit.forget(),
                    Ok(Err(_)) => break,
                    Err(_) => continue,
                }
                let i = seq.fetch_add(1, Ordering::Relaxed);
                let lane = &lanes[(i % lanes.len() as u64) as usize];
                let body = make_body(i, meter.now_us(), bytes);
                match client.enqueue(lane, &body, None).await {
                    Ok(_) => meter.count("enqueue"),
                    Err(e) => {
                        window.add_permits(1);
                        meter.error(format!("enqueue: {}", error_kind(&e)));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        }));
    }
    // Routers (ingress → routed) and transformers (routed → one outbound delivery).
    for stage in [Stage::Ingress, Stage::Routed] {
        for w in 0..args.stage_workers.max(1) {
            let (client, meter) = (client.clone(), meter.clone());
            let batch = args.claim_batch.max(1);
            let handoffs = args.handoffs;
            let mut backoff = Backoff::new(args);
            tasks.push(tokio::spawn(async move {
                let owner = format!("bench-{}-{w}", stage.as_str());
                while !meter.done() {
                    let items = match client.claim_ready(stage, batch, &owner, TTL_MS, None).await {
                        Ok(items) => items,
                        Err(e) => {
                            meter.error(format!("claim {}: {}", stage.as_str(), error_kind(&e)));
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    };
                    meter.count(if stage == Stage::Ingress {
                        "claim_ingress"
                    } else {
                        "claim_routed"
                    });
                    if items.is_empty() {
                        meter.count("claim_empty");
                        backoff.idle().await;
                        continue;
                    }
                    backoff.reset();
                    let actions: Vec<RowActionItem> = items
                        .into_iter()
                        .map(|item| RowActionItem {
                            row: item.row_id.0,
                            action: if stage == Stage::Ingress {
                                RowAction::Route(RouteBody {
                                    fence: item.fence,
                                    handlers: vec![RouteHandler {
                                        handler: "bench".into(),
                                        payload: item.payload,
                                    }],
                                    disposition: None,
                                    claim_next: None,
                                })
                            } else {
                                RowAction::Transform(TransformBody {
                                    fence: item.fence,
                                    deliveries: vec![DeliveryBody {
                                        destination: item.channel_id,
                                        payload: item.payload,
                                    }],
                                    state_ops: Vec::new(),
                                    claim_next: None,
                                })
                            },
                        })
                        .collect();
                    hand_on(&client, &meter, handoffs, actions).await;
                }
            }));
        }
    }
    // FIFO lane workers: claim the head, mark it done, one at a time.
    for w in 0..args.lane_workers() {
        let (client, meter, window) = (client.clone(), meter.clone(), window.clone());
        let lane = lanes[w % lanes.len()].clone();
        let mut backoff = Backoff::new(args);
        let mut worker = LaneWorker::new("outbound", &lane, w, args.separate_done);
        tasks.push(tokio::spawn(async move {
            while !meter.done() {
                let step = worker.step(&client).await;
                if let Some(done) = step.done {
                    match done {
                        Ok(item) => {
                            window.add_permits(1);
                            meter.count("done");
                            match body_sent_us(&item.payload) {
                                Some(sent) => meter.record(Duration::from_micros(
                                    meter.now_us().saturating_sub(sent),
                                )),
                                None => meter.error("done: payload without a send time"),
                            }
                        }
                        Err(e) => meter.error(format!("done: {}", error_kind(&e))),
                    }
                }
                match step.claim {
                    None => {}
                    Some(Err(e)) => {
                        meter.error(format!("claim outbound: {}", error_kind(&e)));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Some(Ok(claim)) => {
                        meter.count("claim_fifo");
                        if claim.item.is_some() {
                            backoff.reset();
                        } else {
                            meter.count("claim_fifo_empty");
                            backoff.idle().await;
                        }
                    }
                }
            }
        }));
    }
    let peak = Arc::new(AtomicU64::new(0));
    let samples = {
        let (window, rss, peak) = (window.clone(), rss.clone(), peak.clone());
        let max = args.window.max(1);
        progress(
            meter,
            "pipeline done",
            progress_deadline(args, meter),
            move || {
                let in_flight = max.saturating_sub(window.available_permits()) as u64;
                peak.fetch_max(in_flight, Ordering::Relaxed);
                (None, rss.sample(), Some(in_flight))
            },
        )
        .await
    };
    meter.stop();
    window.close();
    for t in tasks {
        let _ = t.await;
    }
    (samples, peak.load(Ordering::Relaxed))
}

/// Claim + done on prefilled ingress lanes (FIFO, one worker per lane by default).
async fn claim(
    client: &Client,
    args: &BenchArgs,
    lanes: &[String],
    meter: &Arc<Meter>,
    queued: &Arc<AtomicU64>,
    rss: &Rss,
) -> Vec<Sample> {
    let mut tasks = Vec::new();
    let live = Arc::new(AtomicU64::new(args.lane_workers() as u64));
    for w in 0..args.lane_workers() {
        let (client, meter, queued, live) =
            (client.clone(), meter.clone(), queued.clone(), live.clone());
        let lane = lanes[w % lanes.len()].clone();
        let mut worker = LaneWorker::new("ingress", &lane, w, args.separate_done);
        tasks.push(tokio::spawn(async move {
            let mut t0 = Instant::now();
            while !meter.done() {
                let step = worker.step(&client).await;
                match step.done {
                    Some(Ok(_)) => {
                        meter.record(t0.elapsed());
                        queued.fetch_sub(1, Ordering::Relaxed);
                    }
                    Some(Err(e)) => meter.error(format!("done: {}", error_kind(&e))),
                    None => {}
                }
                match step.claim {
                    None => {}
                    Some(Err(e)) => {
                        meter.error(format!("claim: {}", error_kind(&e)));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    // One operation = claim + done of one row: timed from the claim that got it.
                    Some(Ok(claim)) if claim.item.is_some() => t0 = step.started,
                    Some(Ok(claim)) if claim.reason == Some(FifoEmptyReason::Empty) => {
                        meter.count("lane_drained");
                        break;
                    }
                    Some(Ok(_)) => {
                        meter.count("claim_busy");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
            // The last worker to find its lane dry ends the measurement.
            if live.fetch_sub(1, Ordering::Relaxed) == 1 {
                meter.stop();
            }
        }));
    }
    let samples = {
        let (queued, rss) = (queued.clone(), rss.clone());
        progress(
            meter,
            "claim+done",
            progress_deadline(args, meter),
            move || (Some(queued.load(Ordering::Relaxed)), rss.sample(), None),
        )
        .await
    };
    meter.stop();
    for t in tasks {
        let _ = t.await;
    }
    samples
}

/// A FIFO lane worker of the benchmark: holds at most one row of its lane, and either marks
/// it done and claims the next in one write (`done` with `claim_next`) or, with
/// `--separate-done`, in two.
struct LaneWorker {
    stage: &'static str,
    lane: String,
    owner: String,
    separate_done: bool,
    held: Option<ClaimedRow>,
}

/// What one [`LaneWorker::step`] did: the row it finished (if it finished one) and the claim's
/// answer (if it claimed).
struct LaneStep {
    started: Instant,
    done: Option<Result<ClaimedRow, ClientError>>,
    claim: Option<Result<FifoClaim, ClientError>>,
}

impl LaneWorker {
    fn new(stage: &'static str, lane: &str, n: usize, separate_done: bool) -> Self {
        Self {
            stage,
            lane: lane.to_string(),
            owner: format!("bench-{stage}-worker-{n}"),
            separate_done,
            held: None,
        }
    }

    /// Finish the held row, if any, and claim the next one (unless the done failed or the
    /// done and the claim are separate writes and this step did the done).
    async fn step(&mut self, client: &Client) -> LaneStep {
        let started = Instant::now();
        let mut step = LaneStep {
            started,
            done: None,
            claim: None,
        };
        let claim = match self.held.take() {
            None => {
                client
                    .claim_fifo(self.stage, &self.lane, &self.owner, TTL_MS)
                    .await
            }
            Some(item) if self.separate_done => {
                step.done = Some(client.done(&item).await.map(|_| item));
                return step;
            }
            Some(item) => match client
                .done_then_claim_next(&item, &self.owner, TTL_MS)
                .await
            {
                Ok(claim) => {
                    step.done = Some(Ok(item));
                    Ok(claim)
                }
                Err(e) => {
                    step.done = Some(Err(e));
                    return step;
                }
            },
        };
        if let Ok(c) = &claim {
            self.held = c.item.clone();
        }
        step.claim = Some(claim);
        step
    }
}
