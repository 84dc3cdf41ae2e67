//! One chaos run, start to finish: start the cluster, run the workloads while the schedule
//! injects faults, heal, wait for quiescence, read the final state, check, report.

use crate::checkers::{self, Verdict};
use crate::cluster::Cluster;
use crate::collect;
use crate::conn::{Attempt, Conn};
use crate::docker::DockerCluster;
use crate::faults::{self, Fault, FaultKind, Undo};
use crate::history::{History, RegState};
use crate::local::LocalCluster;
use crate::report::{FaultRecord, Report};
use crate::schedule;
use crate::workload::config_cas::register_value;
use crate::workload::{self, producer::ENQUEUE_DEADLINE, wall_ms, Ctx, WorkloadConfig};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

pub const LOCAL_ADMIN_TOKEN: &str = "chaos-admin-token";

#[derive(Clone, Debug)]
pub enum BackendChoice {
    /// Child processes of `binary` (`raftlane node ...`).
    Local { binary: PathBuf },
    /// The compose cluster (services n1..n3, API on 127.0.0.1:7001-7003).
    Docker {
        compose_file: Option<PathBuf>,
        project: Option<String>,
        admin_token: String,
    },
}

#[derive(Clone, Debug)]
pub struct ChaosOptions {
    pub seed: u64,
    /// Length of the fault phase.
    pub duration: Duration,
    pub faults: Vec<FaultKind>,
    pub backend: BackendChoice,
    /// Where the local backend keeps node data and logs (default: a new temp dir).
    pub data_dir: Option<PathBuf>,
    /// Keep the data directory even when the run passes.
    pub keep_data: bool,
    /// How long the workers get to drain the pipeline after healing.
    pub quiesce_timeout: Duration,
    pub workload: WorkloadConfig,
    /// Print progress lines.
    pub verbose: bool,
}

impl ChaosOptions {
    pub fn local(binary: PathBuf, seed: u64, duration: Duration) -> Self {
        Self {
            seed,
            duration,
            faults: FaultKind::ALL.to_vec(),
            backend: BackendChoice::Local { binary },
            data_dir: None,
            keep_data: false,
            quiesce_timeout: Duration::from_secs(60),
            workload: WorkloadConfig::default(),
            verbose: true,
        }
    }
}

fn say(opts: &ChaosOptions, line: impl AsRef<str>) {
    if opts.verbose {
        println!("{}", line.as_ref());
    }
}

async fn setup(opts: &ChaosOptions) -> anyhow::Result<(Cluster, String, Option<PathBuf>)> {
    match &opts.backend {
        BackendChoice::Local { binary } => {
            anyhow::ensure!(
                binary.is_file(),
                "raftlane binary not found at {}",
                binary.display()
            );
            let dir = match &opts.data_dir {
                Some(d) => d.clone(),
                None => std::env::temp_dir().join(format!(
                    "raftlane-chaos-{}-{}-{}",
                    std::process::id(),
                    opts.seed,
                    wall_ms()
                )),
            };
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            let secret = format!("chaos-cluster-secret-{}", opts.seed);
            let mut local =
                LocalCluster::create(binary, &dir, 3, &secret, LOCAL_ADMIN_TOKEN).await?;
            for id in 1..=3 {
                local.start(id, None)?;
            }
            Ok((
                Cluster::Local(local),
                LOCAL_ADMIN_TOKEN.to_string(),
                Some(dir),
            ))
        }
        BackendChoice::Docker {
            compose_file,
            project,
            admin_token,
        } => {
            let docker =
                DockerCluster::connect(compose_file.clone(), project.clone(), 3, 7001).await?;
            Ok((Cluster::Docker(docker), admin_token.clone(), None))
        }
    }
}

/// Sleep until `deadline`, restarting (and reporting) any node that died on its own.
async fn watch_until(
    deadline: Instant,
    cluster: &mut Cluster,
    health: &mut Verdict,
    opts: &ChaosOptions,
) {
    loop {
        for (id, status) in cluster.crashed().await {
            let tail = cluster.log_tail(id, 15).unwrap_or_default();
            health.fail(format!(
                "node {id} exited on its own ({status}); last log lines:\n{tail}"
            ));
            say(
                opts,
                format!("!! node {id} exited on its own ({status}); restarting it"),
            );
            if let Err(e) = cluster.start(id).await {
                health.fail(format!("cannot restart node {id}: {e}"));
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        tokio::time::sleep((deadline - now).min(Duration::from_millis(250))).await;
    }
}

/// Whether a node whose clock is off (restarted with an offset, or stepped while running) moves
/// the cluster's clock: enqueue a probe message through it and compare the stored `received_at`
/// with the wall clock. Now the leader stamps the cluster's time, so the offset
/// must not show; a node beyond the skew bound cannot forward at all (its calls are refused as
/// clock skew).
async fn probe_skew(conn: &Conn, node: u64, offset_ms: i64) -> String {
    let i = (node - 1) as usize;
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if matches!(
            conn.once(i, |c| async move { c.cluster().await }).await,
            Attempt::Ok(_)
        ) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let key = format!("skew-probe-{node}-{}", wall_ms());
    let sent = wall_ms();
    let enq = conn
        .once(i, move |c| async move {
            c.enqueue("probe", "clock skew probe", Some(&key)).await
        })
        .await;
    let answered = wall_ms();
    let Attempt::Ok(e) = enq else {
        return format!("clock-skew probe on node {node}: enqueue failed ({enq:?})");
    };
    let id = e.message_id;
    match conn
        .once(i, move |c| async move { c.message(id).await })
        .await
    {
        Attempt::Ok(v) => {
            // An honest stamp lies between sending and the answer (an enqueue may wait for an
            // election): how far outside that window it lies.
            let stamped = v.message.meta.received_at;
            let observed = if stamped < sent {
                -((sent - stamped) as i64)
            } else {
                stamped.saturating_sub(answered) as i64
            };
            let verdict = if observed.unsigned_abs() <= crate::checkers::leases::TOLERANCE_MS {
                "the cluster's clock held"
            } else if offset_ms > 0 && observed >= offset_ms / 2 {
                "MOVED: the node's clock moved the cluster's"
            } else if observed > 0 {
                "MOVED: the cluster's clock ran ahead of the wall clock"
            } else {
                "off by more than the tolerance"
            };
            format!(
                "clock-skew probe on node {node} (offset {offset_ms:+} ms): message stamped \
                 {observed:+} ms outside the {} ms the enqueue took by the wall clock: {verdict}",
                answered.saturating_sub(sent)
            )
        }
        other => format!("clock-skew probe on node {node}: read failed ({other:?})"),
    }
}

/// How long an isolated leader may go on naming itself leader ([`crate::isolation`]).
pub const ISOLATED_LEADER_GIVES_UP_WITHIN: Duration = crate::isolation::GIVES_UP_WITHIN;

async fn join_all(handles: Vec<JoinHandle<()>>, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    let mut aborted = 0;
    for h in handles {
        let left = deadline.saturating_duration_since(Instant::now());
        let abort = h.abort_handle();
        if tokio::time::timeout(left, h).await.is_err() {
            abort.abort();
            aborted += 1;
        }
    }
    aborted
}

/// Run the suite; `Ok(report)` whether or not it found violations (see [`Report::passed`]).
pub async fn run_suite(opts: ChaosOptions) -> anyhow::Result<Report> {
    let started = Instant::now();
    let (mut cluster, token, dir) = setup(&opts).await?;
    let addrs = cluster.api_addrs();
    let conn = Conn::new(&addrs, &token, opts.workload.request_timeout);
    if let Err(e) = collect::wait_ready(&conn, &addrs, &token, Duration::from_secs(90)).await {
        let tails: Vec<String> = cluster
            .ids()
            .iter()
            .map(|id| {
                format!(
                    "--- node {id} ---\n{}",
                    cluster.log_tail(*id, 20).unwrap_or_default()
                )
            })
            .collect();
        cluster.shutdown().await;
        anyhow::bail!("{e}\n{}", tails.join("\n"));
    }
    let enabled: Vec<FaultKind> = opts
        .faults
        .iter()
        .copied()
        .filter(|k| cluster.supports(*k))
        .collect();
    let sched = schedule::build(opts.seed, opts.duration, &enabled, opts.workload.lease_ttl);
    say(
        &opts,
        format!(
            "chaos: seed {} backend {:?}, cluster ready after {:.1} s",
            opts.seed,
            backend_name(&opts),
            started.elapsed().as_secs_f64()
        ),
    );
    for s in &sched {
        say(
            &opts,
            format!(
                "  scheduled t+{:>5.1}s for {:>4.1}s: {}",
                s.at.as_secs_f64(),
                s.hold.as_secs_f64(),
                s.fault
            ),
        );
    }

    let history = Arc::new(History::new(Instant::now()));
    // The register's state before any workload runs (a long-lived cluster has versions).
    match conn.once(0, |c| async move { c.config().await }).await {
        Attempt::Ok(v) => history.register_init(RegState {
            version: v.version,
            value: register_value(&serde_json::to_value(&v.config).unwrap_or_default()),
        }),
        other => {
            cluster.shutdown().await;
            anyhow::bail!("cannot read the initial config: {other:?}");
        }
    }
    let hard_deadline = Instant::now()
        + opts.duration
        + ENQUEUE_DEADLINE
        + opts.quiesce_timeout
        + Duration::from_secs(120);
    let ctx = Arc::new(Ctx {
        run: format!("r{:x}", (wall_ms() ^ opts.seed.rotate_left(20)) & 0xFF_FFFF),
        conn: conn.clone(),
        history: history.clone(),
        cfg: opts.workload.clone(),
        stop_new: false.into(),
        stop_all: false.into(),
        hard_deadline,
    });
    let running = workload::spawn(ctx.clone(), opts.seed);
    let mut health = Verdict::new("cluster-health");
    let mut report = Report {
        seed: opts.seed,
        backend: backend_name(&opts).to_string(),
        duration_s: opts.duration.as_secs_f64(),
        faults_enabled: opts.faults.iter().map(|k| k.to_string()).collect(),
        ..Default::default()
    };
    for k in opts.faults.iter().filter(|k| !cluster.supports(**k)) {
        report.faults.push(FaultRecord {
            at_ms: 0,
            kind: k.to_string(),
            description: format!("{k}: not supported by this backend"),
            hold_ms: 0,
            error: Some("unsupported".into()),
        });
    }

    // --- fault phase ---
    let phase = Instant::now();
    for step in &sched {
        watch_until(phase + step.at, &mut cluster, &mut health, &opts).await;
        let at_ms = phase.elapsed().as_millis() as u64;
        match faults::inject(&mut cluster, &step.fault).await {
            Ok(faults::Injected {
                description,
                undo,
                isolated_leader,
                throughput_judged,
            }) => {
                say(
                    &opts,
                    format!(
                        "[t+{:>5.1}s] {description} for {:.1}s",
                        at_ms as f64 / 1000.0,
                        step.hold.as_secs_f64()
                    ),
                );
                let injected_at = Instant::now();
                let until = injected_at + step.hold;
                let isolated = isolated_leader.map(|node| {
                    (
                        node,
                        tokio::spawn(crate::isolation::watch(
                            conn.clone(),
                            node,
                            injected_at,
                            until,
                        )),
                    )
                });
                let probe = match (&step.fault, &undo) {
                    (Fault::ClockSkew { offset_ms, .. }, Undo::RestartWithoutSkew(node))
                        if *offset_ms > 0 =>
                    {
                        Some(probe_skew(&conn, *node, *offset_ms).await)
                    }
                    (Fault::ClockStep { step_ms, .. }, Undo::StepClockBack(node)) => {
                        Some(probe_skew(&conn, *node, *step_ms).await)
                    }
                    _ => None,
                };
                if let Some(line) = probe {
                    say(&opts, format!("           {line}"));
                    if line.contains("MOVED") {
                        health.fail(line.clone());
                    }
                    report.notes.push(line);
                }
                watch_until(until, &mut cluster, &mut health, &opts).await;
                if throughput_judged {
                    history.judged_window(description.clone(), injected_at, Instant::now());
                }
                if let Some((node, watch)) = isolated {
                    let (line, bad) = match watch.await {
                        Ok(watched) => watched.judge(step.hold),
                        Err(e) => (
                            format!("isolated leader {node}: the watch failed: {e}"),
                            Vec::new(),
                        ),
                    };
                    say(&opts, format!("           {line}"));
                    for violation in bad {
                        health.fail(violation);
                    }
                    report.notes.push(line);
                }
                if let Err(e) = faults::undo(&mut cluster, &undo).await {
                    health.fail(format!("could not undo '{description}': {e}"));
                }
                report.faults.push(FaultRecord {
                    at_ms,
                    kind: step.fault.kind().to_string(),
                    description,
                    hold_ms: step.hold.as_millis() as u64,
                    error: None,
                });
            }
            Err(e) => {
                say(
                    &opts,
                    format!(
                        "[t+{:>5.1}s] {} skipped: {e}",
                        at_ms as f64 / 1000.0,
                        step.fault
                    ),
                );
                report.faults.push(FaultRecord {
                    at_ms,
                    kind: step.fault.kind().to_string(),
                    description: step.fault.to_string(),
                    hold_ms: 0,
                    error: Some(e.to_string()),
                });
            }
        }
    }
    watch_until(phase + opts.duration, &mut cluster, &mut health, &opts).await;

    // --- heal and drain ---
    say(
        &opts,
        format!(
            "[t+{:>5.1}s] healing everything",
            phase.elapsed().as_secs_f64()
        ),
    );
    if let Err(e) = cluster.heal_all().await {
        health.fail(format!("healing failed: {e}"));
    }
    let healed = Instant::now();
    match collect::wait_ready(&conn, &addrs, &token, Duration::from_secs(60)).await {
        Ok(()) => report.notes.push(format!(
            "cluster serving again {:.1} s after healing",
            healed.elapsed().as_secs_f64()
        )),
        Err(e) => health.fail(format!("not recovered 60 s after healing: {e}")),
    }
    ctx.stop_new.store(true, Ordering::Relaxed);
    let stuck = join_all(
        running.producers,
        ENQUEUE_DEADLINE + Duration::from_secs(15),
    )
    .await;
    if stuck > 0 {
        health.fail(format!("{stuck} producer tasks did not finish"));
    }
    let drain = Instant::now();
    let live = collect::quiesce(&conn, opts.quiesce_timeout).await;
    say(
        &opts,
        format!(
            "[t+{:>5.1}s] quiescence: {live} live rows after {:.1} s",
            phase.elapsed().as_secs_f64(),
            drain.elapsed().as_secs_f64()
        ),
    );
    report.notes.push(format!(
        "pipeline drained in {:.1} s after the producers stopped",
        drain.elapsed().as_secs_f64()
    ));
    ctx.stop_all.store(true, Ordering::Relaxed);
    let stuck = join_all(running.workers, Duration::from_secs(30)).await;
    if stuck > 0 {
        health.fail(format!("{stuck} worker tasks did not finish"));
    }
    watch_until(Instant::now(), &mut cluster, &mut health, &opts).await;

    // --- final state and checks ---
    let fin = collect::final_state(&conn).await;
    for e in &fin.fetch_errors {
        health.fail(format!("could not read the final state: {e}"));
    }
    let recorded = history.snapshot();
    report.verdicts = checkers::run_all(&recorded, &fin);
    health.checked = cluster.ids().len() as u64;
    report.verdicts.push(health);
    report.counts = recorded.counts.clone();
    if let Some((conns, unidentified, dropped)) = cluster.proxy_stats() {
        report.notes.push(format!("fault proxy: {conns} connections ({unidentified} of unidentified source), {dropped} dropped by rules"));
    }
    report.notes.push(format!(
        "{} messages, {} claims, {} fenced completions recorded",
        fin.messages.len(),
        recorded.claims.len(),
        recorded.completions.len()
    ));
    cluster.shutdown().await;
    report.elapsed_s = started.elapsed().as_secs_f64();
    if let Some(dir) = dir {
        if report.passed() && !opts.keep_data {
            let _ = std::fs::remove_dir_all(&dir);
        } else {
            // Everything the checkers saw, for investigating a failure offline.
            for (name, value) in [
                ("history.json", serde_json::to_vec(&recorded)),
                ("final_state.json", serde_json::to_vec(&fin)),
            ] {
                if let Ok(bytes) = value {
                    let _ = std::fs::write(dir.join(name), bytes);
                }
            }
            report.data_dir = Some(dir.display().to_string());
        }
    }
    Ok(report)
}

fn backend_name(opts: &ChaosOptions) -> &'static str {
    match opts.backend {
        BackendChoice::Local { .. } => "local",
        BackendChoice::Docker { .. } => "docker",
    }
}
