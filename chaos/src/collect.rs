//! After healing: wait for the cluster to serve again, wait for the pipeline to drain, and read
//! the final state every checker needs.

use crate::cluster::leader_of;
use crate::conn::{Attempt, Conn};
use crate::final_state::{parse_message, AuditRow, AuditView, DigestSample, FinalState};
use crate::workload::config_cas::register_value;
use crate::workload::AUDIT_ORG;
use hyper::Method;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Wait until a leader is known and every node answers a linearizable read.
pub async fn wait_ready(
    conn: &Conn,
    addrs: &[String],
    token: &str,
    within: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    let mut last = String::from("no answer yet");
    while Instant::now() < deadline {
        if leader_of(addrs, token).await.is_some() {
            let mut all = true;
            for i in 0..conn.len() {
                match conn.once(i, |c| async move { c.config().await }).await {
                    Attempt::Ok(_) => {}
                    other => {
                        all = false;
                        last = format!("node {}: {other:?}", i + 1);
                        break;
                    }
                }
            }
            if all {
                return Ok(());
            }
        } else {
            last = "no leader".into();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    anyhow::bail!("cluster not ready within {within:?}: {last}")
}

/// Any node, first that answers.
async fn read_any(conn: &Conn, path: &str) -> Result<Value, String> {
    let mut last = String::new();
    for round in 0..3 {
        for i in 0..conn.len() {
            let p = path.to_string();
            match conn
                .once(
                    i,
                    move |c| async move { c.request(Method::GET, &p, None).await },
                )
                .await
            {
                Attempt::Ok(v) => return Ok(v),
                other => last = format!("node {}: {other:?}", i + 1),
            }
        }
        tokio::time::sleep(Duration::from_millis(200 * (round + 1))).await;
    }
    Err(format!("GET {path}: {last}"))
}

/// Pending + inflight rows across all stages.
pub async fn live_rows(conn: &Conn) -> Result<u64, String> {
    let stats = read_any(conn, "/v1/stats").await?;
    let mut live = 0;
    if let Some(stages) = stats["rows"].as_object() {
        for by_status in stages.values() {
            live += by_status["pending"].as_u64().unwrap_or(0)
                + by_status["inflight"].as_u64().unwrap_or(0);
        }
    }
    Ok(live)
}

/// Wait until no row is pending or inflight (twice in a row), up to `within`. Returns the last
/// count seen.
pub async fn quiesce(conn: &Conn, within: Duration) -> u64 {
    let deadline = Instant::now() + within;
    let mut zero_streak = 0;
    let mut last = u64::MAX;
    let mut said = Instant::now();
    while Instant::now() < deadline {
        if let Ok(n) = live_rows(conn).await {
            if said.elapsed() >= Duration::from_secs(5) {
                tracing::info!("draining: {n} rows pending or inflight");
                said = Instant::now();
            }
            last = n;
            zero_streak = if n == 0 { zero_streak + 1 } else { 0 };
            if zero_streak >= 2 {
                return 0;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    last
}

async fn digest_once(conn: &Conn, i: usize) -> Option<DigestSample> {
    match conn
        .once(i, |cl| async move {
            cl.request(Method::GET, "/v1/cluster/digest", None).await
        })
        .await
    {
        Attempt::Ok(v) => Some(DigestSample {
            node: v["node_id"].as_u64().unwrap_or(i as u64 + 1),
            last_applied: v["last_applied"].as_u64()?,
            digest: v["digest"].as_str()?.to_string(),
        }),
        _ => None,
    }
}

/// One node's digest, asked twice in a row until both answers agree. The endpoint walks the
/// store and reads the applied index separately, so an entry applied in between pairs a digest
/// with an index it was not computed at; two equal answers in a row cannot straddle an apply.
/// Disagreeing answers at one index are returned as evidence (`inconsistent`).
async fn stable_digest(conn: &Conn, i: usize) -> (Option<DigestSample>, Option<String>) {
    let mut evidence = None;
    for _ in 0..5 {
        let (Some(a), Some(b)) = (digest_once(conn, i).await, digest_once(conn, i).await) else {
            continue;
        };
        if a == b {
            return (Some(a), evidence);
        }
        if a.last_applied == b.last_applied {
            evidence = Some(format!(
                "node {} answered two digests for applied index {} ({} and {})",
                a.node, a.last_applied, a.digest, b.digest
            ));
        }
    }
    (None, evidence)
}

async fn digest_round(conn: &Conn) -> (Vec<Option<DigestSample>>, Vec<String>) {
    let mut handles = Vec::new();
    for i in 0..conn.len() {
        let c = conn.clone();
        handles.push(tokio::spawn(async move { stable_digest(&c, i).await }));
    }
    let mut out = Vec::new();
    let mut evidence = Vec::new();
    for h in handles {
        let (sample, e) = h.await.unwrap_or((None, None));
        out.push(sample);
        evidence.extend(e);
    }
    (out, evidence)
}

/// Sample digests until three rounds saw every node at one applied index (or 60 rounds).
pub async fn digests(conn: &Conn, st: &mut FinalState) -> Vec<Vec<Option<DigestSample>>> {
    let mut rounds = Vec::new();
    let mut comparable = 0;
    for _ in 0..60 {
        let (round, evidence) = digest_round(conn).await;
        st.digest_inconsistencies.extend(evidence);
        let answers: Vec<&DigestSample> = round.iter().flatten().collect();
        if answers.len() == round.len()
            && answers
                .windows(2)
                .all(|w| w[0].last_applied == w[1].last_applied)
        {
            comparable += 1;
        }
        rounds.push(round);
        if comparable >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    rounds
}

async fn messages(conn: &Conn, st: &mut FinalState) {
    let mut ids = Vec::new();
    let mut offset = 0usize;
    loop {
        match read_any(conn, &format!("/v1/messages?limit=1000&offset={offset}")).await {
            Ok(v) => {
                let page: Vec<u64> = v["messages"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|m| m["id"].as_u64()).collect())
                    .unwrap_or_default();
                let n = page.len();
                ids.extend(page);
                if n < 1000 || offset > 10_000_000 {
                    break;
                }
                offset += n;
            }
            Err(e) => {
                st.fetch_errors.push(e);
                break;
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    let mut set = tokio::task::JoinSet::new();
    let mut pending = ids.into_iter();
    let mut fetched = Vec::new();
    loop {
        while set.len() < 8 {
            let Some(id) = pending.next() else { break };
            let c = conn.clone();
            set.spawn(async move { (id, read_any(&c, &format!("/v1/messages/{id}")).await) });
        }
        let Some(joined) = set.join_next().await else {
            break;
        };
        match joined {
            Ok((_, Ok(v))) => match parse_message(&v) {
                Some(m) => fetched.push(m),
                None => st
                    .fetch_errors
                    .push(format!("cannot parse message view {v}")),
            },
            Ok((id, Err(e))) => st.fetch_errors.push(format!("message {id}: {e}")),
            Err(e) => st.fetch_errors.push(format!("fetch task failed: {e}")),
        }
    }
    fetched.sort_by_key(|m| m.id);
    st.messages = fetched;
}

async fn audits(conn: &Conn, st: &mut FinalState) {
    for org in [AUDIT_ORG, "default"] {
        for i in 0..conn.len() {
            let path = format!("/v1/audit/verify?org={org}");
            match conn
                .once(i, move |c| async move {
                    c.request(Method::GET, &path, None).await
                })
                .await
            {
                Attempt::Ok(v) => st.audit.push(AuditView {
                    node: i as u64 + 1,
                    org: org.to_string(),
                    ok: v["ok"].as_bool().unwrap_or(false),
                    count: v["count"].as_u64().unwrap_or(0),
                    head: v["head_hash"].as_str().unwrap_or("").to_string(),
                    reason: v["reason"].as_str().map(str::to_string),
                }),
                other => st
                    .fetch_errors
                    .push(format!("audit verify {org} on node {}: {other:?}", i + 1)),
            }
        }
    }
    let mut rows = Vec::new();
    let mut from = 0u64;
    for _ in 0..100_000 {
        match read_any(
            conn,
            &format!("/v1/audit?org={AUDIT_ORG}&from={from}&limit=1000"),
        )
        .await
        {
            Ok(v) => {
                let page: Vec<AuditRow> = v["rows"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|r| {
                                Some(AuditRow {
                                    seq: r["seq"].as_u64()?,
                                    hash: r["hash"].as_str()?.to_string(),
                                    detail: r["detail"].as_str().map(str::to_string),
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let Some(last) = page.last().map(|r| r.seq) else {
                    break;
                };
                let n = page.len();
                rows.extend(page);
                if n < 1000 {
                    break;
                }
                from = last + 1;
            }
            Err(e) => {
                st.fetch_errors.push(e);
                break;
            }
        }
    }
    st.audit_rows.insert(AUDIT_ORG.to_string(), rows);
}

async fn config_versions(conn: &Conn, st: &mut FinalState) {
    let current = match read_any(conn, "/v1/config").await {
        Ok(v) => v["version"].as_u64().unwrap_or(0),
        Err(e) => {
            st.fetch_errors.push(e);
            return;
        }
    };
    let mut versions = BTreeMap::new();
    for v in 1..=current {
        match read_any(conn, &format!("/v1/config/versions/{v}")).await {
            Ok(doc) => {
                versions.insert(v, register_value(&doc["config"]));
            }
            Err(e) => st.fetch_errors.push(e),
        }
    }
    st.config_versions = versions;
}

/// Everything the checkers read.
pub async fn final_state(conn: &Conn) -> FinalState {
    let mut st = FinalState::default();
    st.digest_rounds = digests(conn, &mut st).await;
    match live_rows(conn).await {
        Ok(n) => st.live_rows = n,
        Err(e) => st.fetch_errors.push(e),
    }
    messages(conn, &mut st).await;
    audits(conn, &mut st).await;
    config_versions(conn, &mut st).await;
    st
}
