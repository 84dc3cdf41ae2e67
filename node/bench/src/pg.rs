//! The PostgreSQL baseline: the same workloads against a single PostgreSQL server, with the
//! schema and the transactions of the reference message store, the PostgreSQL store of
//! messagefoundry 0.1.0 on PyPI (`messagefoundry/store/postgres.py`):
//!
//! - tables `messages`, `queue` (stage/status/lane columns, `seq BIGSERIAL` FIFO tiebreak, row
//!   lease columns), `message_events`, `lane_leases`, with the reference's indexes;
//! - enqueue = `enqueue_ingress`: one transaction inserting the message, the clamped
//!   `created_at` (`SELECT MAX(created_at)` of the lane), the ingress row and an event;
//! - `claim_ready`: one `WITH due AS (… FOR UPDATE SKIP LOCKED) UPDATE … RETURNING` statement;
//! - `route_handoff` / `transform_handoff`: guarded `DELETE … RETURNING` of the claimed row, the
//!   next stage's row, the event; the transform runs the finalizer;
//! - FIFO claim = `_claim_next_fifo_owned`: the `lane_leases` upsert (`ON CONFLICT … WHERE owner
//!   = me OR expired`), the stranded-head reclaim, then the head claim with `FOR UPDATE SKIP
//!   LOCKED`, all in one transaction;
//! - done = `mark_done` + `_maybe_finalize_message`: `pg_advisory_xact_lock(3, hashtext(key))`
//!   per message, then the per-stage/status counts, then the message's final status.
//!
//! Each client or worker owns one connection (the reference uses a pool; here a pool the size of
//! the worker count), statements are prepared once per connection (as asyncpg caches them), and
//! every statement is its own round trip, as in the reference. Durability is PostgreSQL's
//! default (`synchronous_commit = on`, `fsync = on`): a commit returns after its WAL is flushed.
//! Not ported: payload encryption, PHI scrubbing, the state table (the benchmark sends no state
//! operations), and `message_events` detail encryption.

use super::raftlane::finish;
use super::report::{progress, Meter, Report, Sample};
use super::{body_sent_us, make_body, Backoff, BenchArgs, Pacer, Workload};
use anyhow::Context;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;
use tokio_postgres::{Client, NoTls, Statement};

const SCHEMA: &str = "raftlane_bench";
const LEASE_TTL_S: f64 = 60.0;
const LOCK_CLASS_FINALIZE: i32 = 3;

const DDL: &[&str] = &[
    "CREATE TABLE messages (
        id           TEXT PRIMARY KEY,
        channel_id   TEXT NOT NULL,
        received_at  DOUBLE PRECISION NOT NULL,
        source_type  TEXT,
        control_id   TEXT,
        message_type TEXT,
        raw          TEXT NOT NULL,
        status       TEXT NOT NULL,
        error        TEXT,
        summary      TEXT,
        metadata     TEXT
    )",
    "CREATE INDEX ix_messages_channel ON messages(channel_id, received_at)",
    "CREATE INDEX ix_messages_control ON messages(channel_id, control_id)",
    "CREATE TABLE queue (
        id               TEXT PRIMARY KEY,
        message_id       TEXT NOT NULL REFERENCES messages(id),
        stage            TEXT NOT NULL,
        channel_id       TEXT NOT NULL,
        destination_name TEXT,
        handler_name     TEXT,
        payload          TEXT NOT NULL,
        status           TEXT NOT NULL,
        attempts         INTEGER NOT NULL DEFAULT 0,
        next_attempt_at  DOUBLE PRECISION NOT NULL,
        last_error       TEXT,
        created_at       DOUBLE PRECISION NOT NULL,
        updated_at       DOUBLE PRECISION NOT NULL,
        seq              BIGSERIAL,
        owner            TEXT,
        lease_expires_at DOUBLE PRECISION
    )",
    "CREATE INDEX ix_queue_ready ON queue(stage, status, next_attempt_at)",
    "CREATE INDEX ix_queue_fifo_out ON queue(stage, destination_name, status, created_at, seq)",
    "CREATE INDEX ix_queue_fifo_in ON queue(stage, channel_id, status, created_at, seq)",
    "CREATE INDEX ix_queue_message ON queue(message_id)",
    "CREATE INDEX ix_queue_lease ON queue(lease_expires_at) WHERE status='inflight'",
    "CREATE TABLE message_events (
        id          BIGSERIAL PRIMARY KEY,
        message_id  TEXT NOT NULL REFERENCES messages(id),
        ts          DOUBLE PRECISION NOT NULL,
        event       TEXT NOT NULL,
        destination TEXT,
        detail      TEXT
    )",
    "CREATE TABLE lane_leases (
        lane             TEXT PRIMARY KEY,
        owner            TEXT NOT NULL,
        lease_expires_at DOUBLE PRECISION NOT NULL
    )",
];

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn new_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

fn pg_error_kind(op: &str, e: &tokio_postgres::Error) -> String {
    match e.code() {
        Some(c) => format!("{op}: sqlstate {}", c.code()),
        None => format!(
            "{op}: {}",
            e.to_string().chars().take(80).collect::<String>()
        ),
    }
}

/// A claimed queue row.
struct Item {
    id: String,
    message_id: String,
    channel_id: String,
    payload: String,
}

/// One connection with its prepared statements.
struct Conn {
    client: Client,
    st: Stmts,
}

/// The statements of [`Conn`], prepared once per connection.
struct Stmts {
    insert_message: Statement,
    max_created_channel: Statement,
    max_created_destination: Statement,
    insert_ingress: Statement,
    insert_routed: Statement,
    insert_outbound: Statement,
    insert_event: Statement,
    claim_ready: Statement,
    delete_claimed: Statement,
    set_message_status: Statement,
    lane_lease: Statement,
    reclaim_in: Statement,
    reclaim_out: Statement,
    head_in: Statement,
    head_out: Statement,
    select_row: Statement,
    mark_done: Statement,
    advisory_lock: Statement,
    finalize_counts: Statement,
    message_status: Statement,
    lane_has_pending: Statement,
}

const CLAIM_READY: &str = "WITH due AS ( SELECT id FROM queue WHERE stage=$1 AND status=$2 AND next_attempt_at<=$3 \
     AND ($4::text IS NULL OR channel_id=$4) AND ($5::text IS NULL OR destination_name=$5) \
     ORDER BY next_attempt_at LIMIT $6 FOR UPDATE SKIP LOCKED) \
     UPDATE queue q SET status=$7, attempts=attempts+1, updated_at=$3, owner=$8, lease_expires_at=$9 \
     FROM due WHERE q.id=due.id RETURNING q.id, q.message_id, q.channel_id, q.payload";

fn head_sql(lane_col: &str) -> String {
    format!(
        "WITH head AS ( SELECT id, next_attempt_at FROM queue WHERE stage=$1 AND {lane_col}=$2 AND status=$3 \
         ORDER BY created_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
         UPDATE queue q SET status=$4, attempts=attempts+1, updated_at=$5, owner=$6, lease_expires_at=$7 \
         FROM head WHERE q.id=head.id AND head.next_attempt_at<=$5 RETURNING q.id, q.message_id, q.channel_id, q.payload"
    )
}

fn reclaim_sql(lane_col: &str) -> String {
    format!(
        "UPDATE queue SET status=$3, owner=NULL, lease_expires_at=NULL, next_attempt_at=$4, updated_at=$4 \
         WHERE stage=$1 AND {lane_col}=$2 AND status=$5 AND lease_expires_at IS NOT NULL AND lease_expires_at < $4"
    )
}

impl Conn {
    async fn open(url: &str) -> anyhow::Result<Self> {
        let (client, connection) =
            tokio::time::timeout(Duration::from_secs(10), tokio_postgres::connect(url, NoTls))
                .await
                .context("connecting to PostgreSQL timed out")?
                .context("cannot connect to PostgreSQL")?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
            .batch_execute(&format!("SET search_path TO {SCHEMA}"))
            .await?;
        let p = |sql: String| {
            let client = &client;
            async move {
                client
                    .prepare(&sql)
                    .await
                    .with_context(|| format!("prepare {sql}"))
            }
        };
        let st = Stmts {
            insert_message: p("INSERT INTO messages (id, channel_id, received_at, source_type, control_id, message_type, raw, status, error, summary, metadata) \
                 VALUES ($1,$2,$3,NULL,NULL,NULL,$4,$5,NULL,NULL,NULL)"
                .into())
            .await?,
            max_created_channel: p("SELECT MAX(created_at) AS m FROM queue WHERE stage=$1 AND channel_id=$2".into()).await?,
            max_created_destination: p("SELECT MAX(created_at) AS m FROM queue WHERE stage=$1 AND destination_name=$2".into()).await?,
            insert_ingress: p("INSERT INTO queue (id, message_id, stage, channel_id, destination_name, payload, status, attempts, next_attempt_at, created_at, updated_at) \
                 VALUES ($1,$2,'ingress',$3,NULL,$4,'pending',0,$5,$6,$5)"
                .into())
            .await?,
            insert_routed: p("INSERT INTO queue (id, message_id, stage, channel_id, destination_name, handler_name, payload, status, attempts, next_attempt_at, created_at, updated_at) \
                 VALUES ($1,$2,'routed',$3,NULL,$4,$5,'pending',0,$6,$7,$6)"
                .into())
            .await?,
            insert_outbound: p("INSERT INTO queue (id, message_id, stage, channel_id, destination_name, payload, status, attempts, next_attempt_at, created_at, updated_at) \
                 VALUES ($1,$2,'outbound',$3,$4,$5,'pending',0,$6,$7,$6)"
                .into())
            .await?,
            insert_event: p("INSERT INTO message_events (message_id, ts, event, destination, detail) VALUES ($1,$2,$3,$4,$5)".into()).await?,
            claim_ready: p(CLAIM_READY.into()).await?,
            delete_claimed: p("DELETE FROM queue WHERE id=$1 AND stage=$2 AND status='inflight' RETURNING id".into()).await?,
            set_message_status: p("UPDATE messages SET status=$1 WHERE id=$2".into()).await?,
            lane_lease: p("INSERT INTO lane_leases (lane, owner, lease_expires_at) VALUES ($1,$2,$3) \
                 ON CONFLICT (lane) DO UPDATE SET owner=$2, lease_expires_at=$3 \
                 WHERE lane_leases.owner=$2 OR lane_leases.lease_expires_at < $4 RETURNING owner"
                .into())
            .await?,
            reclaim_in: p(reclaim_sql("channel_id")).await?,
            reclaim_out: p(reclaim_sql("destination_name")).await?,
            head_in: p(head_sql("channel_id")).await?,
            head_out: p(head_sql("destination_name")).await?,
            select_row: p("SELECT * FROM queue WHERE id=$1".into()).await?,
            mark_done: p("UPDATE queue SET status='done', last_error=NULL, updated_at=$1, owner=NULL, lease_expires_at=NULL WHERE id=$2".into()).await?,
            advisory_lock: p("SELECT pg_advisory_xact_lock($1, hashtext($2))".into()).await?,
            finalize_counts: p("SELECT stage, status, COUNT(*) AS n FROM queue WHERE message_id=$1 GROUP BY stage, status".into()).await?,
            message_status: p("SELECT status FROM messages WHERE id=$1".into()).await?,
            lane_has_pending: p(
                "SELECT EXISTS (SELECT 1 FROM queue WHERE stage='ingress' AND channel_id=$1 AND status='pending')".into(),
            )
            .await?,
        };
        Ok(Self { client, st })
    }

    /// `_fifo_created_at`: now, clamped up to the lane's largest `created_at`.
    async fn fifo_created_at(
        tx: &tokio_postgres::Transaction<'_>,
        st: &Statement,
        stage: &str,
        lane: &str,
        now: f64,
    ) -> Result<f64, tokio_postgres::Error> {
        let row = tx.query_one(st, &[&stage, &lane]).await?;
        let last: Option<f64> = row.get(0);
        Ok(match last {
            Some(l) if now < l => l,
            _ => now,
        })
    }

    /// `enqueue_ingress`.
    async fn enqueue_ingress(
        &mut self,
        channel: &str,
        raw: &str,
    ) -> Result<String, tokio_postgres::Error> {
        let now = now_s();
        let mid = new_id();
        let tx = self.client.transaction().await?;
        tx.execute(
            &self.st.insert_message,
            &[&mid, &channel, &now, &raw, &"received"],
        )
        .await?;
        let created =
            Self::fifo_created_at(&tx, &self.st.max_created_channel, "ingress", channel, now)
                .await?;
        tx.execute(
            &self.st.insert_ingress,
            &[&new_id(), &mid, &channel, &raw, &now, &created],
        )
        .await?;
        tx.execute(
            &self.st.insert_event,
            &[&mid, &now, &"received", &None::<&str>, &Some("ingress")],
        )
        .await?;
        tx.commit().await?;
        Ok(mid)
    }

    /// `claim_ready` (unordered, `FOR UPDATE SKIP LOCKED`).
    async fn claim_ready(
        &mut self,
        stage: &str,
        limit: i64,
        owner: &str,
    ) -> Result<Vec<Item>, tokio_postgres::Error> {
        let now = now_s();
        let rows = self
            .client
            .query(
                &self.st.claim_ready,
                &[
                    &stage,
                    &"pending",
                    &now,
                    &None::<&str>,
                    &None::<&str>,
                    &limit,
                    &"inflight",
                    &owner,
                    &(now + LEASE_TTL_S),
                ],
            )
            .await?;
        Ok(rows.iter().map(item).collect())
    }

    /// `route_handoff` with one handler: ingress row → one routed row.
    async fn route_handoff(&mut self, it: &Item) -> Result<bool, tokio_postgres::Error> {
        let now = now_s();
        let tx = self.client.transaction().await?;
        if tx
            .query_opt(&self.st.delete_claimed, &[&it.id, &"ingress"])
            .await?
            .is_none()
        {
            return Ok(false);
        }
        let created = Self::fifo_created_at(
            &tx,
            &self.st.max_created_channel,
            "routed",
            &it.channel_id,
            now,
        )
        .await?;
        tx.execute(
            &self.st.insert_routed,
            &[
                &new_id(),
                &it.message_id,
                &it.channel_id,
                &"bench",
                &it.payload,
                &now,
                &created,
            ],
        )
        .await?;
        tx.execute(&self.st.set_message_status, &[&"routed", &it.message_id])
            .await?;
        tx.execute(
            &self.st.insert_event,
            &[
                &it.message_id,
                &now,
                &"routed",
                &None::<&str>,
                &Some("1 handler(s)"),
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// `transform_handoff` with one delivery to the lane named like the channel, then finalize.
    async fn transform_handoff(&mut self, it: &Item) -> Result<bool, tokio_postgres::Error> {
        let now = now_s();
        let tx = self.client.transaction().await?;
        if tx
            .query_opt(&self.st.delete_claimed, &[&it.id, &"routed"])
            .await?
            .is_none()
        {
            return Ok(false);
        }
        let dest = it.channel_id.as_str();
        let created =
            Self::fifo_created_at(&tx, &self.st.max_created_destination, "outbound", dest, now)
                .await?;
        tx.execute(
            &self.st.insert_outbound,
            &[
                &new_id(),
                &it.message_id,
                &it.channel_id,
                &dest,
                &it.payload,
                &now,
                &created,
            ],
        )
        .await?;
        tx.execute(
            &self.st.insert_event,
            &[
                &it.message_id,
                &now,
                &"transformed",
                &None::<&str>,
                &Some("1 destination(s)"),
            ],
        )
        .await?;
        finalize(&self.st, &tx, &it.message_id).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// `_claim_next_fifo_owned`: lane lease upsert, stranded-head reclaim, head claim.
    async fn claim_fifo(
        &mut self,
        stage: &str,
        lane: &str,
        owner: &str,
    ) -> Result<Option<Item>, tokio_postgres::Error> {
        let now = now_s();
        let lane_key = format!("{stage}:{lane}");
        let until = now + LEASE_TTL_S;
        let outbound = stage == "outbound";
        let tx = self.client.transaction().await?;
        let held: Option<String> = tx
            .query_opt(&self.st.lane_lease, &[&lane_key, &owner, &until, &now])
            .await?
            .map(|r| r.get(0));
        if held.as_deref() != Some(owner) {
            tx.commit().await?;
            return Ok(None);
        }
        let reclaim = if outbound {
            &self.st.reclaim_out
        } else {
            &self.st.reclaim_in
        };
        tx.execute(reclaim, &[&stage, &lane, &"pending", &now, &"inflight"])
            .await?;
        let head = if outbound {
            &self.st.head_out
        } else {
            &self.st.head_in
        };
        let row = tx
            .query_opt(
                head,
                &[&stage, &lane, &"pending", &"inflight", &now, &owner, &until],
            )
            .await?;
        tx.commit().await?;
        Ok(row.as_ref().map(item))
    }

    /// `mark_done` + the finalizer.
    async fn mark_done(&mut self, id: &str) -> Result<(), tokio_postgres::Error> {
        let now = now_s();
        let tx = self.client.transaction().await?;
        let Some(row) = tx.query_opt(&self.st.select_row, &[&id]).await? else {
            return Ok(());
        };
        let message_id: String = row.get("message_id");
        let destination: Option<String> = row.get("destination_name");
        let attempts: i32 = row.get("attempts");
        tx.execute(&self.st.mark_done, &[&now, &id]).await?;
        let detail = format!("attempt {attempts}");
        tx.execute(
            &self.st.insert_event,
            &[
                &message_id,
                &now,
                &"delivered",
                &destination,
                &Some(detail.as_str()),
            ],
        )
        .await?;
        finalize(&self.st, &tx, &message_id).await?;
        tx.commit().await?;
        Ok(())
    }
}

/// `_maybe_finalize_message`: per-message advisory lock, then count the message's rows.
async fn finalize(
    st: &Stmts,
    tx: &tokio_postgres::Transaction<'_>,
    message_id: &str,
) -> Result<(), tokio_postgres::Error> {
    let key = format!("{SCHEMA}:mefor_finalize:{message_id}");
    tx.execute(&st.advisory_lock, &[&LOCK_CLASS_FINALIZE, &key])
        .await?;
    let rows = tx.query(&st.finalize_counts, &[&message_id]).await?;
    let counts: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
        .collect();
    if counts
        .iter()
        .any(|(_, s)| s == "pending" || s == "inflight")
    {
        return Ok(());
    }
    let status = if counts.iter().any(|(_, s)| s == "dead") {
        "error"
    } else if counts.iter().any(|(stage, _)| stage == "outbound") {
        "processed"
    } else if counts.is_empty() {
        let current: Option<String> = tx
            .query_opt(&st.message_status, &[&message_id])
            .await?
            .map(|r| r.get(0));
        if current.as_deref() != Some("routed") {
            return Ok(());
        }
        "filtered"
    } else {
        return Ok(());
    };
    tx.execute(&st.set_message_status, &[&status, &message_id])
        .await?;
    Ok(())
}

fn item(r: &tokio_postgres::Row) -> Item {
    Item {
        id: r.get(0),
        message_id: r.get(1),
        channel_id: r.get(2),
        payload: r.get(3),
    }
}

/// Drop and recreate the benchmark schema; return server facts for the report.
async fn setup(url: &str) -> anyhow::Result<BTreeMap<String, Value>> {
    let (client, connection) =
        tokio::time::timeout(Duration::from_secs(10), tokio_postgres::connect(url, NoTls))
            .await
            .context("connecting to PostgreSQL timed out")?
            .context("cannot connect to PostgreSQL (--pg-url)")?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA}; SET search_path TO {SCHEMA}"))
        .await
        .context("cannot (re)create the benchmark schema")?;
    for ddl in DDL {
        client
            .batch_execute(ddl)
            .await
            .with_context(|| format!("DDL failed: {ddl}"))?;
    }
    let mut facts = BTreeMap::new();
    for setting in [
        "server_version",
        "synchronous_commit",
        "fsync",
        "wal_sync_method",
        "shared_buffers",
        "max_connections",
        "commit_delay",
    ] {
        if let Ok(row) = client.query_one(&format!("SHOW {setting}"), &[]).await {
            let v: String = row.get(0);
            facts.insert(setting.to_string(), json!(v));
        }
    }
    Ok(facts)
}

/// WAL and commit counters (pg_stat_wal needs PostgreSQL 14+; absent counters are skipped).
async fn wal_counters(url: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Ok(Ok((client, connection))) =
        tokio::time::timeout(Duration::from_secs(5), tokio_postgres::connect(url, NoTls)).await
    else {
        return out;
    };
    tokio::spawn(async move {
        let _ = connection.await;
    });
    if let Ok(row) = client.query_one("SELECT wal_records::float8, wal_bytes::float8, wal_write::float8, wal_sync::float8 FROM pg_stat_wal", &[]).await {
        for (i, k) in ["wal_records", "wal_bytes", "wal_write", "wal_sync"].iter().enumerate() {
            if let Ok(v) = row.try_get::<_, f64>(i) {
                out.insert(k.to_string(), v);
            }
        }
    }
    if let Ok(row) = client
        .query_one(
            "SELECT xact_commit::float8 FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .await
    {
        if let Ok(v) = row.try_get::<_, f64>(0) {
            out.insert("xact_commit".into(), v);
        }
    }
    out
}

async fn open_conns(url: &str, n: usize) -> anyhow::Result<Vec<Conn>> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(Conn::open(url).await?);
    }
    Ok(conns)
}

pub async fn run(args: &BenchArgs) -> anyhow::Result<Report> {
    let url = args
        .pg_url
        .clone()
        .context("--pg-url is required for the PostgreSQL baseline")?;
    let mut details = setup(&url).await?;
    println!(
        "PostgreSQL baseline: schema {SCHEMA} recreated ({})",
        details
            .get("server_version")
            .map(|v| v.to_string())
            .unwrap_or_default()
    );
    let lanes: Vec<String> = (0..args.lanes()).map(|k| format!("bench-{k}")).collect();
    let prefilled = match args.prefill_count() {
        0 => 0,
        n => prefill(&url, args, &lanes, n).await?,
    };
    let meter = Arc::new(Meter::new(args.warmup, args.duration));
    let scraper = {
        let url = url.clone();
        let from = meter.start() + args.warmup;
        let until = from + args.duration;
        tokio::spawn(async move {
            tokio::time::sleep_until(from.into()).await;
            let before = wal_counters(&url).await;
            tokio::time::sleep_until(until.into()).await;
            let after = wal_counters(&url).await;
            (before, after)
        })
    };
    let queued = Arc::new(AtomicU64::new(prefilled));
    let (op, samples) = match args.workload {
        Workload::Enqueue => ("acknowledged enqueue (committed transaction)", enqueue(&url, args, &lanes, &meter, &queued).await?),
        Workload::Pipeline => ("message enqueued → routed → transformed → FIFO claimed → done (enqueue-to-done latency)", pipeline(&url, args, &lanes, &meter).await?),
        Workload::Claim => ("FIFO claim + done of a queued row", claim(&url, args, &lanes, &meter, &queued).await?),
    };
    let (before, after) = scraper.await.unwrap_or_default();
    let d = |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);
    let commits = d("xact_commit");
    let syncs = d("wal_sync");
    details.insert(
        "wal".into(),
        json!({
            "commits": commits,
            "wal_records": d("wal_records"),
            "wal_bytes": d("wal_bytes"),
            "wal_fsyncs": syncs,
            "commits_per_fsync": if syncs > 0.0 { ((commits / syncs) * 100.0).round() / 100.0 } else { 0.0 },
        }),
    );
    details.insert("connections".into(), json!(connections(args)));
    Ok(finish(
        "postgres",
        args,
        op,
        prefilled,
        &meter,
        samples,
        details,
        Vec::new(),
    ))
}

fn connections(args: &BenchArgs) -> usize {
    match args.workload {
        Workload::Enqueue => args.clients(),
        Workload::Pipeline => args.clients() + 2 * args.stage_workers.max(1) + args.lane_workers(),
        Workload::Claim => args.lane_workers(),
    }
}

async fn prefill(url: &str, args: &BenchArgs, lanes: &[String], n: u64) -> anyhow::Result<u64> {
    println!(
        "prefilling {n} messages over {} lanes with {} connections...",
        lanes.len(),
        args.clients()
    );
    let conns = open_conns(url, args.clients()).await?;
    let next = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + args.prefill_timeout;
    let mut tasks = Vec::new();
    for mut conn in conns {
        let (next, acked) = (next.clone(), acked.clone());
        let lanes = lanes.to_vec();
        let bytes = args.body_bytes;
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let lane = &lanes[(i % lanes.len() as u64) as usize];
                if conn
                    .enqueue_ingress(lane, &make_body(i, 0, bytes))
                    .await
                    .is_ok()
                {
                    acked.fetch_add(1, Ordering::Relaxed);
                } else if conn.client.is_closed() {
                    break;
                }
            }
        }));
    }
    let watcher = {
        let acked = acked.clone();
        tokio::spawn(async move {
            let mut last = 0;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let a = acked.load(Ordering::Relaxed);
                println!(
                    "  [prefill {:>6.1}s] queued {a}/{n}  {} msg/s",
                    started.elapsed().as_secs_f64(),
                    a - last
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
    println!(
        "prefilled {a} messages in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(a)
}

fn deadline(args: &BenchArgs, meter: &Meter) -> Instant {
    meter.start() + args.warmup + args.duration + Duration::from_secs(30)
}

async fn enqueue(
    url: &str,
    args: &BenchArgs,
    lanes: &[String],
    meter: &Arc<Meter>,
    queued: &Arc<AtomicU64>,
) -> anyhow::Result<Vec<Sample>> {
    let conns = open_conns(url, args.clients()).await?;
    let seq = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (c, mut conn) in conns.into_iter().enumerate() {
        let (meter, queued, seq) = (meter.clone(), queued.clone(), seq.clone());
        let lane = lanes[c % lanes.len()].clone();
        let bytes = args.body_bytes;
        let mut pacer = Pacer::new(args, c);
        tasks.push(tokio::spawn(async move {
            while !meter.done() {
                pacer.wait().await;
                let body = make_body(seq.fetch_add(1, Ordering::Relaxed), meter.now_us(), bytes);
                let t0 = Instant::now();
                match conn.enqueue_ingress(&lane, &body).await {
                    Ok(_) => {
                        meter.record(t0.elapsed());
                        queued.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        meter.error(pg_error_kind("enqueue", &e));
                        if conn.client.is_closed() {
                            break;
                        }
                    }
                }
            }
        }));
    }
    let queued = queued.clone();
    let samples = progress(meter, "pg enqueue", deadline(args, meter), move || {
        (Some(queued.load(Ordering::Relaxed)), None, None)
    })
    .await;
    meter.stop();
    for t in tasks {
        let _ = t.await;
    }
    Ok(samples)
}

async fn pipeline(
    url: &str,
    args: &BenchArgs,
    lanes: &[String],
    meter: &Arc<Meter>,
) -> anyhow::Result<Vec<Sample>> {
    let window = Arc::new(Semaphore::new(args.window.max(1)));
    let seq = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (c, mut conn) in open_conns(url, args.clients())
        .await?
        .into_iter()
        .enumerate()
    {
        let (meter, window, seq) = (meter.clone(), window.clone(), seq.clone());
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
                match conn
                    .enqueue_ingress(lane, &make_body(i, meter.now_us(), bytes))
                    .await
                {
                    Ok(_) => meter.count("enqueue"),
                    Err(e) => {
                        window.add_permits(1);
                        meter.error(pg_error_kind("enqueue", &e));
                        if conn.client.is_closed() {
                            break;
                        }
                    }
                }
            }
        }));
    }
    for stage in ["ingress", "routed"] {
        for (w, mut conn) in open_conns(url, args.stage_workers.max(1))
            .await?
            .into_iter()
            .enumerate()
        {
            let meter = meter.clone();
            let batch = i64::from(args.claim_batch.max(1));
            let mut backoff = Backoff::new(args);
            tasks.push(tokio::spawn(async move {
                let owner = format!("bench-{stage}-{w}");
                while !meter.done() {
                    let items = match conn.claim_ready(stage, batch, &owner).await {
                        Ok(items) => items,
                        Err(e) => {
                            meter.error(pg_error_kind("claim_ready", &e));
                            if conn.client.is_closed() {
                                break;
                            }
                            continue;
                        }
                    };
                    meter.count(if stage == "ingress" {
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
                    for it in items {
                        let (name, result) = if stage == "ingress" {
                            ("route", conn.route_handoff(&it).await)
                        } else {
                            ("transform", conn.transform_handoff(&it).await)
                        };
                        match result {
                            Ok(_) => meter.count(name),
                            Err(e) => meter.error(pg_error_kind(name, &e)),
                        }
                    }
                }
            }));
        }
    }
    for (w, mut conn) in open_conns(url, args.lane_workers())
        .await?
        .into_iter()
        .enumerate()
    {
        let (meter, window) = (meter.clone(), window.clone());
        let lane = lanes[w % lanes.len()].clone();
        let mut backoff = Backoff::new(args);
        tasks.push(tokio::spawn(async move {
            let owner = format!("bench-lane-worker-{w}");
            while !meter.done() {
                let claimed = conn.claim_fifo("outbound", &lane, &owner).await;
                meter.count("claim_fifo");
                let it = match claimed {
                    Ok(Some(it)) => {
                        backoff.reset();
                        it
                    }
                    Ok(None) => {
                        meter.count("claim_fifo_empty");
                        backoff.idle().await;
                        continue;
                    }
                    Err(e) => {
                        meter.error(pg_error_kind("claim_fifo", &e));
                        if conn.client.is_closed() {
                            break;
                        }
                        continue;
                    }
                };
                match conn.mark_done(&it.id).await {
                    Ok(()) => {
                        window.add_permits(1);
                        meter.count("done");
                        match body_sent_us(&it.payload) {
                            Some(sent) => meter
                                .record(Duration::from_micros(meter.now_us().saturating_sub(sent))),
                            None => meter.error("done: payload without a send time"),
                        }
                    }
                    Err(e) => meter.error(pg_error_kind("done", &e)),
                }
            }
        }));
    }
    let max = args.window.max(1);
    let w = window.clone();
    let samples = progress(
        meter,
        "pg pipeline done",
        deadline(args, meter),
        move || {
            (
                None,
                None,
                Some(max.saturating_sub(w.available_permits()) as u64),
            )
        },
    )
    .await;
    meter.stop();
    window.close();
    for t in tasks {
        let _ = t.await;
    }
    Ok(samples)
}

async fn claim(
    url: &str,
    args: &BenchArgs,
    lanes: &[String],
    meter: &Arc<Meter>,
    queued: &Arc<AtomicU64>,
) -> anyhow::Result<Vec<Sample>> {
    let mut tasks = Vec::new();
    let live = Arc::new(AtomicU64::new(args.lane_workers() as u64));
    for (w, mut conn) in open_conns(url, args.lane_workers())
        .await?
        .into_iter()
        .enumerate()
    {
        let (meter, queued, live) = (meter.clone(), queued.clone(), live.clone());
        let lane = lanes[w % lanes.len()].clone();
        tasks.push(tokio::spawn(async move {
            let owner = format!("bench-claimer-{w}");
            while !meter.done() {
                let t0 = Instant::now();
                let it = match conn.claim_fifo("ingress", &lane, &owner).await {
                    Ok(Some(it)) => it,
                    Ok(None) => {
                        let pending = conn
                            .client
                            .query_one(&conn.st.lane_has_pending, &[&lane])
                            .await
                            .map(|r| r.get::<_, bool>(0))
                            .unwrap_or(true);
                        if !pending {
                            meter.count("lane_drained");
                            break;
                        }
                        meter.count("claim_busy");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                    Err(e) => {
                        meter.error(pg_error_kind("claim_fifo", &e));
                        if conn.client.is_closed() {
                            break;
                        }
                        continue;
                    }
                };
                match conn.mark_done(&it.id).await {
                    Ok(()) => {
                        meter.record(t0.elapsed());
                        queued.fetch_sub(1, Ordering::Relaxed);
                    }
                    Err(e) => meter.error(pg_error_kind("done", &e)),
                }
            }
            // The last worker to find its lane dry ends the measurement.
            if live.fetch_sub(1, Ordering::Relaxed) == 1 {
                meter.stop();
            }
        }));
    }
    let queued = queued.clone();
    let samples = progress(meter, "pg claim+done", deadline(args, meter), move || {
        (Some(queued.load(Ordering::Relaxed)), None, None)
    })
    .await;
    meter.stop();
    for t in tasks {
        let _ = t.await;
    }
    Ok(samples)
}
