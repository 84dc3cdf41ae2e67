//! The workloads, run concurrently while faults are injected:
//! - producers enqueue with idempotency keys, retrying until acknowledged;
//! - a router claims ingress rows (unordered) and hands each message off to outbound lanes;
//! - lane workers claim each outbound lane's head (strict FIFO) and complete it; now and then
//!   one stalls past its lease and then tries to complete with its old fence;
//! - config compare-and-set loops read and CAS a register kept in the config document;
//! - an audit writer appends to org `chaos`.
//!
//! Every loop is bounded by the run's hard deadline.

pub mod audit_writer;
pub mod completion;
pub mod config_cas;
pub mod lanes;
pub mod producer;
pub mod router;

use crate::conn::Conn;
use crate::history::History;
use crate::prng::SplitMix64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// The outbound destinations (FIFO lanes `outbound:d0`...).
pub const DESTINATIONS: [&str; 4] = ["d0", "d1", "d2", "d3"];
/// Producer channels.
pub const CHANNELS: [&str; 2] = ["c0", "c1"];
/// The config channel whose description is the CAS register's value.
pub const REGISTER_CHANNEL: &str = "chaos-reg";
/// The org the audit writer appends to.
pub const AUDIT_ORG: &str = "chaos";

/// Knobs of a run's workloads.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    pub producers: usize,
    pub lane_workers_per_lane: usize,
    pub cas_clients: usize,
    /// Lease TTL of every claim.
    pub lease_ttl: Duration,
    /// Pause between a producer's enqueues.
    pub produce_every: Duration,
    /// Percent of claimed rows a worker stalls on (past the lease) before completing.
    pub stall_percent: u64,
    /// Percent of lane rows a worker fails (retried with backoff) instead of completing.
    pub fail_percent: u64,
    /// Per-request timeout.
    pub request_timeout: Duration,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            producers: 4,
            lane_workers_per_lane: 2,
            cas_clients: 2,
            lease_ttl: Duration::from_millis(2500),
            produce_every: Duration::from_millis(150),
            stall_percent: 3,
            fail_percent: 4,
            request_timeout: Duration::from_secs(6),
        }
    }
}

/// What every workload task shares.
pub struct Ctx {
    /// Unique to this run: prefixes idempotency keys, register values and audit details, so a
    /// cluster that outlives runs (docker) never confuses one run's operations with another's.
    pub run: String,
    pub conn: Conn,
    pub history: Arc<History>,
    pub cfg: WorkloadConfig,
    /// Producers, CAS loops and the audit writer start no new operation once set.
    pub stop_new: AtomicBool,
    /// Workers (router, lanes) stop once set.
    pub stop_all: AtomicBool,
    /// Nothing runs past this.
    pub hard_deadline: Instant,
}

impl Ctx {
    pub fn producing(&self) -> bool {
        !self.stop_new.load(Ordering::Relaxed) && Instant::now() < self.hard_deadline
    }

    pub fn working(&self) -> bool {
        !self.stop_all.load(Ordering::Relaxed) && Instant::now() < self.hard_deadline
    }

    /// Sleep, but never past the hard deadline.
    pub async fn sleep(&self, d: Duration) {
        let left = self.hard_deadline.saturating_duration_since(Instant::now());
        tokio::time::sleep(d.min(left)).await;
    }
}

/// The spawned tasks, split by whether they produce or drain.
pub struct Running {
    pub producers: Vec<JoinHandle<()>>,
    pub workers: Vec<JoinHandle<()>>,
}

/// Start every workload.
pub fn spawn(ctx: Arc<Ctx>, seed: u64) -> Running {
    let rng = SplitMix64::new(seed ^ 0x5EED_F00D);
    let mut producers = Vec::new();
    let mut workers = Vec::new();
    for i in 0..ctx.cfg.producers {
        producers.push(tokio::spawn(producer::run(
            ctx.clone(),
            i,
            rng.fork(100 + i as u64),
        )));
    }
    for i in 0..ctx.cfg.cas_clients {
        producers.push(tokio::spawn(config_cas::run(
            ctx.clone(),
            i,
            rng.fork(200 + i as u64),
        )));
    }
    producers.push(tokio::spawn(audit_writer::run(ctx.clone(), rng.fork(300))));
    workers.push(tokio::spawn(router::run(ctx.clone(), 0, rng.fork(400))));
    workers.push(tokio::spawn(router::run(ctx.clone(), 1, rng.fork(401))));
    for (l, lane) in DESTINATIONS.iter().enumerate() {
        for k in 0..ctx.cfg.lane_workers_per_lane {
            workers.push(tokio::spawn(lanes::run(
                ctx.clone(),
                lane,
                k,
                rng.fork(500 + (l * 10 + k) as u64),
            )));
        }
    }
    Running { producers, workers }
}

/// Milliseconds since the Unix epoch (for `due_at` answers).
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
