//! What the workloads observed: every operation with its invocation and completion times
//! (microseconds since the run started, monotonic) and its outcome. The checkers are pure
//! functions over these records plus the final state.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

/// Microseconds since the start of the run.
pub type Micros = u64;

/// How one attempt at a write ended, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Seen<T> {
    /// The cluster answered with success.
    Ok(T),
    /// The cluster answered with a definite refusal (an error code), nothing changed.
    Refused(String),
    /// No definite answer (timeout, connection lost, 503, 5xx): it may or may not have happened.
    Unknown(String),
}

impl<T> Seen<T> {
    pub fn is_ok(&self) -> bool {
        matches!(self, Seen::Ok(_))
    }
}

/// One producer operation: an enqueue carrying an idempotency key, retried until acknowledged
/// or until its deadline.
#[derive(Clone, Debug, Serialize)]
pub struct EnqueueOp {
    pub key: String,
    pub channel: String,
    pub invoke: Micros,
    pub complete: Micros,
    /// Attempts made (each retry uses the same key).
    pub attempts: u32,
    /// `Ok(message_id)` when acknowledged.
    pub result: Seen<u64>,
}

/// An acknowledged claim: the row was handed to `owner` under `fence` (the claim's log index).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClaimRec {
    pub row: u64,
    pub message: u64,
    /// `"{stage}:{name}"`.
    pub lane: String,
    pub owner: String,
    pub fence: u64,
    /// When the claim was sent (for a claim answered by a `done` with `claim_next`, when that
    /// `done` was sent): the lease cannot have started earlier.
    pub invoke: Micros,
    /// When the claim was acknowledged.
    pub at: Micros,
    /// The lease asked for.
    pub ttl_ms: u64,
    /// The node (id) that answered.
    pub node: u64,
}

/// A fenced completion attempt (done, handoff, fail).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CompletionRec {
    pub row: u64,
    pub fence: u64,
    pub action: String,
    pub lane: String,
    /// Made after the worker deliberately stalled past its lease.
    pub after_stall: bool,
    pub invoke: Micros,
    pub complete: Micros,
    pub result: Completion,
    /// The node (id) of the last attempt.
    pub node: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Completion {
    /// Applied; `index` is the log index of the completing command when the answer carried it
    /// (`None` when an earlier, unanswered attempt with the same fence was the one applied).
    Accepted {
        index: Option<u64>,
    },
    /// The row had already been consumed (handoff answered `applied: false`): no effect.
    NoOp,
    /// Refused with this code (`stale_fence`, `wrong_status`, ...): no effect.
    Refused(String),
    Unknown(String),
}

/// The register the config compare-and-set loop works on: `(version, value)` where the value is
/// a marker string written into the config document.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct RegState {
    pub version: u64,
    pub value: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum RegCall {
    Read,
    Cas { expected: u64, value: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum RegReturn {
    /// A read's answer.
    Read(RegState),
    /// CAS accepted: the new version.
    CasOk(u64),
    /// CAS refused with 412 (version mismatch).
    CasFailed,
    /// No definite answer (never returns, as far as the checker knows).
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RegOp {
    pub client: usize,
    /// The node (id) the call was sent to.
    pub node: u64,
    pub invoke: Micros,
    /// Completion time; ignored when `ret` is `Unknown`.
    pub complete: Micros,
    pub call: RegCall,
    pub ret: RegReturn,
}

/// An audit append.
#[derive(Clone, Debug, Serialize)]
pub struct AuditOp {
    pub org: String,
    pub detail: String,
    pub invoke: Micros,
    pub complete: Micros,
    /// `Ok((seq, hash))`.
    pub result: Seen<(u64, String)>,
}

/// Per-kind operation counts for the report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpCount {
    pub attempted: u64,
    pub acknowledged: u64,
    pub failed: u64,
    pub indeterminate: u64,
}

/// Everything recorded during a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Recorded {
    /// The runner's wall clock (ms since the Unix epoch) at the run's time 0, to compare the
    /// times the cluster stamped with the runner's own.
    pub start_wall_ms: u64,
    /// The register before the first operation (a cluster may already hold config versions).
    pub register_init: Option<RegState>,
    pub enqueues: Vec<EnqueueOp>,
    pub claims: Vec<ClaimRec>,
    pub completions: Vec<CompletionRec>,
    pub register: Vec<RegOp>,
    pub audits: Vec<AuditOp>,
    pub counts: BTreeMap<String, OpCount>,
    /// Faults under which the cluster's write throughput is judged (a slow disk).
    pub judged_windows: Vec<FaultWindow>,
}

/// A fault's time in place, in the history's clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FaultWindow {
    pub description: String,
    pub start: Micros,
    pub end: Micros,
}

/// The shared recorder the workload tasks write into.
pub struct History {
    start: Instant,
    inner: Mutex<Recorded>,
}

impl History {
    pub fn new(start: Instant) -> Self {
        let wall_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let since_start = u64::try_from(start.elapsed().as_millis()).unwrap_or(0);
        Self {
            start,
            inner: Mutex::new(Recorded {
                start_wall_ms: wall_now.saturating_sub(since_start),
                ..Recorded::default()
            }),
        }
    }

    pub fn now(&self) -> Micros {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn with<R>(&self, f: impl FnOnce(&mut Recorded) -> R) -> R {
        // A poisoned lock only means a workload task panicked while recording; the data is
        // still the best record there is.
        let mut guard = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut guard)
    }

    /// Count one operation of `kind` with its outcome class.
    pub fn count<T>(&self, kind: &str, seen: &Seen<T>) {
        self.with(|r| {
            let c = r.counts.entry(kind.to_string()).or_default();
            c.attempted += 1;
            match seen {
                Seen::Ok(_) => c.acknowledged += 1,
                Seen::Refused(_) => c.failed += 1,
                Seen::Unknown(_) => c.indeterminate += 1,
            }
        })
    }

    pub fn enqueue(&self, op: EnqueueOp) {
        self.count("enqueue", &op.result);
        self.with(|r| r.enqueues.push(op));
    }

    pub fn claim(&self, rec: ClaimRec) {
        self.with(|r| r.claims.push(rec));
    }

    pub fn completion(&self, rec: CompletionRec) {
        let seen: Seen<()> = match &rec.result {
            Completion::Accepted { .. } | Completion::NoOp => Seen::Ok(()),
            Completion::Refused(c) => Seen::Refused(c.clone()),
            Completion::Unknown(e) => Seen::Unknown(e.clone()),
        };
        let kind = if rec.after_stall {
            format!("{}-after-stall", rec.action)
        } else {
            rec.action.clone()
        };
        self.count(&kind, &seen);
        self.with(|r| r.completions.push(rec));
    }

    pub fn register(&self, op: RegOp) {
        let (kind, seen): (&str, Seen<()>) = match (&op.call, &op.ret) {
            (RegCall::Read, RegReturn::Read(_)) => ("config-read", Seen::Ok(())),
            (RegCall::Read, _) => ("config-read", Seen::Unknown(String::new())),
            (RegCall::Cas { .. }, RegReturn::CasOk(_)) => ("config-cas", Seen::Ok(())),
            (RegCall::Cas { .. }, RegReturn::CasFailed) => {
                ("config-cas", Seen::Refused("version_mismatch".into()))
            }
            (RegCall::Cas { .. }, _) => ("config-cas", Seen::Unknown(String::new())),
        };
        self.count(kind, &seen);
        self.with(|r| r.register.push(op));
    }

    pub fn register_init(&self, state: RegState) {
        self.with(|r| r.register_init = Some(state));
    }

    pub fn audit(&self, op: AuditOp) {
        self.count("audit-append", &op.result);
        self.with(|r| r.audits.push(op));
    }

    /// A fault under which throughput is judged was in place from `start` to `end`.
    pub fn judged_window(&self, description: String, start: Instant, end: Instant) {
        let at = |t: Instant| {
            u64::try_from(t.saturating_duration_since(self.start).as_micros()).unwrap_or(u64::MAX)
        };
        let window = FaultWindow {
            description,
            start: at(start),
            end: at(end),
        };
        self.with(|r| r.judged_windows.push(window));
    }

    /// A copy of everything recorded so far.
    pub fn snapshot(&self) -> Recorded {
        self.with(|r| r.clone())
    }
}

/// When an operation id (a fence) was applied, `(log index, position)`: the state machine's
/// own decoding, so the checkers order fences exactly as `apply` numbered them.
pub use raftlane_statemachine::wire::command::op_order;
