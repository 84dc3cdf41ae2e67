//! The demo workload: pushes messages through the whole pipeline of a running cluster with
//! demo workers, then checks and prints what happened. The `raftlane-demo` binary
//! (`src/main.rs`, run by `scripts/demo.sh`) starts a local three-node cluster and runs it.
//!
//! Three channels feed four destinations. Ingress rows are routed, routed rows transformed into
//! deliveries, and each destination's lane is drained in strict FIFO order by two competing
//! workers. The `flaky` destination fails every attempt, retries with backoff and dead-letters;
//! then it is "fixed" and one dead message is replayed to `processed`. At the end the demo checks
//! per-lane delivery order, that every message is terminal, that the audit chain verifies on all
//! three nodes with the same head, and that all nodes report the same state digest.

use anyhow::{bail, Context};
use raftlane_client::contract::{
    DeliveryBody, FailBody, RouteBody, RouteHandler, Stage, StateOpBody, TransformBody,
};
use raftlane_client::{Client, FifoClaim, RowAction};
use raftlane_statemachine::ClaimedRow;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CHANNELS: [&str; 3] = ["adt", "lab", "orders"];
const TTL_MS: u64 = 15_000;

/// Destinations a message of `channel` number `n` is delivered to.
fn destinations(channel: &str, n: u32) -> Vec<&'static str> {
    match channel {
        "adt" => vec!["ehr", "billing"],
        "lab" => vec!["lab-archive", "ehr"],
        _ if n.is_multiple_of(10) => vec!["flaky"],
        _ => vec!["billing"],
    }
}

#[derive(Debug, Default)]
pub struct Summary {
    pub enqueued: u64,
    pub processed: u64,
    pub dead_letters: u64,
    pub lanes_in_order: bool,
    pub audit_verified: bool,
    pub digests_equal: bool,
    pub replayed_ok: bool,
}

impl Summary {
    pub fn ok(&self) -> bool {
        self.lanes_in_order && self.audit_verified && self.digests_equal && self.replayed_ok
    }
}

struct Shared {
    client: Client,
    stop: AtomicBool,
    flaky_fixed: AtomicBool,
    /// destination → payload sequence numbers in delivery order.
    delivered: Mutex<BTreeMap<String, Vec<u64>>>,
    done_rows: AtomicU64,
}

pub async fn run(client: &Client, nodes: &[String], messages: u32) -> anyhow::Result<Summary> {
    let started = Instant::now();
    println!("\n== Demo: {messages} messages through ingress → routed → outbound ==");
    let config = json!({
        "channels": { "adt": {}, "lab": {}, "orders": {} },
        "destinations": {
            "ehr": {}, "billing": {}, "lab-archive": {},
            "flaky": { "retry": { "max_attempts": 3, "backoff_ms": 200, "multiplier_milli": 2000, "max_backoff_ms": 1000 } }
        },
        "handlers": { "route-adt": {}, "route-lab": {}, "route-orders": {} },
        "retention": {},
        "approvals_required": []
    });
    let current = client.config().await?.version;
    client
        .put_config(current, config)
        .await
        .context("configure destinations")?;
    client
        .audit_append("demo.start", None, Some(&format!("{messages} messages")))
        .await?;

    let shared = Arc::new(Shared {
        client: client.clone(),
        stop: AtomicBool::new(false),
        flaky_fixed: AtomicBool::new(false),
        delivered: Mutex::new(BTreeMap::new()),
        done_rows: AtomicU64::new(0),
    });
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(router(shared.clone())));
    tasks.push(tokio::spawn(transformer(shared.clone())));
    for dest in ["ehr", "billing", "lab-archive", "flaky"] {
        for k in 0..2 {
            tasks.push(tokio::spawn(lane_worker(
                shared.clone(),
                dest,
                format!("{dest}-worker-{k}"),
            )));
        }
    }

    // Producers: enqueue with idempotency keys; each message's payload carries a global seq.
    let mut expected: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for n in 0..messages {
        let channel = CHANNELS[(n % 3) as usize];
        let raw = format!("MSH|^~\\&|DEMO|{channel}|||{n}|ADT^A01|{n}|P|2.5");
        client
            .enqueue(channel, &raw, Some(&format!("demo-{n}")))
            .await
            .with_context(|| format!("enqueue {n}"))?;
        for d in destinations(channel, n) {
            expected.entry(d).or_default().push(u64::from(n));
        }
    }
    let total_deliveries: u64 = expected.values().map(|v| v.len() as u64).sum();
    println!("enqueued {messages} messages ({total_deliveries} deliveries expected)");

    // Progress until every message is terminal.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let stats = client
            .request(hyper::Method::GET, "/v1/stats", None)
            .await?;
        let live = live_rows(&stats);
        let dead = stats["rows"]["outbound"]["dead"].as_u64().unwrap_or(0);
        println!(
            "  [{:>5.1}s] delivered {:>4}/{total_deliveries}  in flight {:>4}  dead letters {dead}",
            started.elapsed().as_secs_f64(),
            shared.done_rows.load(Ordering::Relaxed),
            live
        );
        if live == 0 {
            break;
        }
        if Instant::now() > deadline {
            bail!("the pipeline did not drain within 5 minutes ({live} rows still live)");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    // Dead letters: fix the flaky destination, replay one message, see it processed.
    let dead = client
        .request(
            hyper::Method::GET,
            "/v1/dead-letters?destination=flaky",
            None,
        )
        .await?;
    let dead_rows = dead["dead_letters"].as_array().cloned().unwrap_or_default();
    println!(
        "flaky destination dead-lettered {} deliveries after 3 attempts each",
        dead_rows.len()
    );
    let mut replayed_ok = dead_rows.is_empty();
    if let Some(first) = dead_rows.first() {
        let mid = first["message_id"].as_u64().unwrap_or(0);
        shared.flaky_fixed.store(true, Ordering::SeqCst);
        client
            .request(
                hyper::Method::POST,
                &format!("/v1/messages/{mid}/replay"),
                None,
            )
            .await?;
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            let m = client
                .message(raftlane_client::contract::MessageId(mid))
                .await?;
            if m.message.meta.status.as_str() == "processed" {
                replayed_ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        println!(
            "replayed message {mid} after fixing flaky: {}",
            if replayed_ok {
                "processed"
            } else {
                "NOT processed"
            }
        );
    }
    shared.stop.store(true, Ordering::SeqCst);
    for t in tasks {
        let _ = t.await;
    }

    // Lane order: each destination saw its deliveries in enqueue order.
    let delivered = shared
        .delivered
        .lock()
        .map(|d| d.clone())
        .unwrap_or_default();
    let mut lanes_in_order = true;
    for (dest, want) in &expected {
        let got: Vec<u64> = delivered.get(*dest).cloned().unwrap_or_default();
        let want: Vec<u64> = if *dest == "flaky" {
            Vec::new()
        } else {
            want.clone()
        };
        let got_main: Vec<u64> = if *dest == "flaky" { Vec::new() } else { got };
        if got_main != want {
            lanes_in_order = false;
            println!("lane outbound:{dest}: delivery order differs from enqueue order");
        }
    }
    client.audit_append("demo.end", None, None).await?;

    // Audit chain and digest on every node.
    let mut heads = Vec::new();
    let mut audit_verified = true;
    for (i, addr) in nodes.iter().enumerate() {
        let v = client
            .pinned(i)
            .audit_verify("default")
            .await
            .with_context(|| format!("verify on {addr}"))?;
        audit_verified &= v.ok;
        heads.push(v.head_hash);
    }
    audit_verified &= heads.windows(2).all(|w| w[0] == w[1]);
    let digests_equal = wait_for_equal_digests(client, nodes.len()).await;

    let stats = client
        .request(hyper::Method::GET, "/v1/stats", None)
        .await?;
    let processed = count_processed(client).await?;
    let summary = Summary {
        enqueued: u64::from(messages),
        processed,
        dead_letters: stats["rows"]["outbound"]["dead"].as_u64().unwrap_or(0),
        lanes_in_order,
        audit_verified,
        digests_equal,
        replayed_ok,
    };
    let mark = |b: bool| if b { "yes" } else { "NO" };
    println!(
        "\n== Demo summary ({:.1}s) ==",
        started.elapsed().as_secs_f64()
    );
    println!("  messages enqueued          {}", summary.enqueued);
    println!("  messages processed         {}", summary.processed);
    println!("  dead letters (flaky)       {}", summary.dead_letters);
    println!(
        "  lane order verified        {}",
        mark(summary.lanes_in_order)
    );
    println!("  replay after fix           {}", mark(summary.replayed_ok));
    println!(
        "  audit chain verified on all three nodes, same head: {}",
        mark(summary.audit_verified)
    );
    println!(
        "  state digests equal on all three nodes:             {}",
        mark(summary.digests_equal)
    );
    Ok(summary)
}

/// Messages with status `processed`, counted page by page: the list route answers at most
/// 1,000 per call, and `--demo-messages` may be larger.
async fn count_processed(client: &Client) -> anyhow::Result<u64> {
    const PAGE: u64 = 1000;
    let mut total = 0;
    let mut cursor = String::new();
    loop {
        let page = client
            .request(
                hyper::Method::GET,
                &format!("/v1/messages?status=processed&limit={PAGE}{cursor}"),
                None,
            )
            .await?;
        total += page["messages"].as_array().map_or(0, |a| a.len() as u64);
        // The list is paged by cursor (a page also stops after examining 10,000 messages).
        match page["next_cursor"].as_u64() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return Ok(total),
        }
    }
}

fn live_rows(stats: &Value) -> u64 {
    ["ingress", "routed", "outbound", "response"]
        .iter()
        .map(|s| {
            stats["rows"][s]["pending"].as_u64().unwrap_or(0)
                + stats["rows"][s]["inflight"].as_u64().unwrap_or(0)
        })
        .sum()
}

async fn wait_for_equal_digests(client: &Client, nodes: usize) -> bool {
    for _ in 0..50 {
        let mut seen = Vec::new();
        for i in 0..nodes {
            if let Ok(d) = client.pinned(i).digest().await {
                seen.push(d);
            }
        }
        if seen.len() == nodes && seen.windows(2).all(|w| w[0] == w[1]) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

async fn pause() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Claim due rows of `stage` in batches and hand each one on with `step`, until stopped.
async fn stage_worker(
    s: Arc<Shared>,
    stage: Stage,
    owner: &'static str,
    step: fn(&ClaimedRow) -> RowAction,
) {
    while !s.stop.load(Ordering::Relaxed) {
        let items = match s.client.claim_ready(stage, 50, owner, TTL_MS, None).await {
            Ok(items) => items,
            Err(_) => {
                pause().await;
                continue;
            }
        };
        if items.is_empty() {
            pause().await;
        }
        for item in items {
            let _ = s.client.row(item.row_id.0, step(&item)).await;
        }
    }
}

/// Ingress → routed: one handler per channel.
async fn router(s: Arc<Shared>) {
    stage_worker(s, Stage::Ingress, "demo-router", |item| {
        RowAction::Route(RouteBody {
            fence: item.fence,
            handlers: vec![RouteHandler {
                handler: format!("route-{}", item.channel_id),
                payload: item.payload.clone(),
            }],
            disposition: None,
            claim_next: None,
        })
    })
    .await;
}

/// Routed → outbound deliveries, with a transform-state op per channel.
async fn transformer(s: Arc<Shared>) {
    stage_worker(s, Stage::Routed, "demo-transformer", |item| {
        let n: u32 = item
            .payload
            .split('|')
            .nth(6)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        RowAction::Transform(TransformBody {
            fence: item.fence,
            deliveries: destinations(&item.channel_id, n)
                .into_iter()
                .map(|d| DeliveryBody {
                    destination: d.to_string(),
                    payload: n.to_string(),
                })
                .collect(),
            state_ops: vec![StateOpBody {
                namespace: "demo".into(),
                key: format!("last-{}", item.channel_id),
                value: json!(n),
            }],
            claim_next: None,
        })
    })
    .await;
}

/// Drain one destination's lane in FIFO order; `flaky` fails until it is fixed. Each `done`
/// also claims the lane's next row (`claim_next`): one write per delivered row.
async fn lane_worker(s: Arc<Shared>, dest: &'static str, owner: String) {
    let mut next: Option<ClaimedRow> = None;
    while !s.stop.load(Ordering::Relaxed) {
        let item = match next.take() {
            Some(item) => item,
            None => match s.client.claim_fifo("outbound", dest, &owner, TTL_MS).await {
                Ok(FifoClaim {
                    item: Some(item), ..
                }) => item,
                _ => {
                    pause().await;
                    continue;
                }
            },
        };
        if dest == "flaky" && !s.flaky_fixed.load(Ordering::SeqCst) {
            let fail = RowAction::Fail(FailBody {
                fence: item.fence,
                error: "connection refused by flaky.example".into(),
                retry: None,
            });
            let _ = s.client.row(item.row_id.0, fail).await;
            continue;
        }
        if let Ok(claim) = s.client.done_then_claim_next(&item, &owner, TTL_MS).await {
            s.done_rows.fetch_add(1, Ordering::Relaxed);
            if dest != "flaky" {
                if let (Ok(mut d), Ok(n)) = (s.delivered.lock(), item.payload.parse::<u64>()) {
                    d.entry(dest.to_string()).or_default().push(n);
                }
            }
            next = claim.item;
        }
    }
}
