//! Model-based property test of the pipeline commands.
//!
//! Random command sequences over a small universe (two channels, three destinations, two
//! owners, the ingress/routed/outbound stages) are applied both to the real
//! `StateMachine<MemStore>` and to [`Model`], a deliberately naive reference written straight
//! from docs/SPEC.md §2–§5, §6.2 and §7: plain `BTreeMap`s and `Vec`s, linear scans, no indexes,
//! no code shared with the crate. Config changes declare and drop destinations and handlers, so
//! the orphan dead-lettering of a config change (docs/SPEC.md §6.2 step 4, finalizer per §5.1)
//! is compared too. After every step the test asserts
//!
//! * the same response (full `Outcome`/`Rejection` equality; `Invalid` rejections by code only,
//!   audit hashes by recomputation);
//! * the same rows, messages, lanes (depth, FIFO order, live holder), row counters, transform
//!   state and clock, read back through `sm.read()`;
//! * model-independent invariants on the real state: FIFO (a `ClaimNextFifo` never hands out a
//!   row while an older `(created_at, seq)` pending row of its lane exists, and leaves no
//!   expired inflight row in the lane), finalizer fixpoint (a finalized message with no live
//!   rows already has the finalizer's verdict), and the audit chains verify (the crate's own
//!   verifier and an independent recomputation of the documented canonical encoding), and
//!   lane exclusivity: while a lane has a live holder, no row of that lane claimed through
//!   `ClaimNextFifo` by another owner is still inflight under a lease the new holder could not
//!   reclaim (so two owners never work one lane);
//! * the API's idle-poll check (`Reader::fifo_idle_answer`) agrees with every `ClaimNextFifo`
//!   for which it claims to know the answer.
//!
//! The `regression_*` tests at the end pin the three bugs this test found (lane lease boundary,
//! lane lease shortened on re-acquire, reused idempotency key dropped by `ExpireRecords`).
//! `RAFTLANE_MODEL_STATS=1 … -- --nocapture` prints what the generator reached.
//!
//! Cases default to 256 (`PROPTEST_CASES` overrides), sequences up to 60 commands.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use raftlane_statemachine::model::audit::{AuditRow, DEFAULT_ORG};
use raftlane_statemachine::model::config::{
    ConfigDoc, DestinationConfig, HandlerConfig, RetryPolicy,
};
use raftlane_statemachine::model::message::{EventKind, MessageStatus};
use raftlane_statemachine::model::row::{Claim, RowStatus, Stage, WorkRow};
use raftlane_statemachine::wire::command::AuditAuthor;
use raftlane_statemachine::wire::command::{
    CancelQueued, ClaimNextFifo, ClaimReady, DeadLetterNow, Delivery, DoneThenClaimNext,
    EnqueueIngress, HandlerWork, Handoff, HandoffDisposition, MarkDone, MarkFailed, MessageFields,
    PutConfig, ReclaimExpired, RecordAudit, ReleaseLane, RenewLeases, Replay, RouteDisposition,
    RouteHandoff, StateOp, TransformHandoff,
};
use raftlane_statemachine::{
    ClaimedRow, Command, Envelope, Fence, FifoEmpty, MemStore, MessageId, Millis, Outcome,
    Rejection, Response, RowId, StateMachine, MAX_TTL_MS,
};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

// ---------------------------------------------------------------------------------------------
// The universe
// ---------------------------------------------------------------------------------------------

const CHANNELS: [&str; 2] = ["c1", "c2"];
const DESTINATIONS: [&str; 3] = ["d1", "d2", "d3"];
const HANDLERS: [&str; 2] = ["h1", "h2"];
/// The last owner is invalid (empty).
const OWNERS: [&str; 3] = ["w1", "w2", ""];
const IDEM_KEYS: [&str; 3] = ["k1", "k2", "k3"];
/// The last two are invalid.
const TTLS: [u64; 5] = [500, 1000, 2000, 0, MAX_TTL_MS + 1];
const BACKOFFS: [u64; 3] = [0, 250, 1000];
/// Attempts a row gets when its policy names none (docs/SPEC.md §5.2), written out here rather
/// than imported so a change of the default shows.
const DEFAULT_MAX_ATTEMPTS: u32 = 10;
/// The last one is invalid (below 1.0).
const MULTIPLIERS: [u32; 4] = [1000, 2000, 3000, 999];
const ORGS: [Option<&str>; 3] = [None, Some("default"), Some("acme")];
/// The last one is invalid.
const ACTIONS: [&str; 3] = ["note", "export", ""];
const NAMESPACES: [&str; 2] = ["ns1", "ns2"];
const STATE_KEYS: [&str; 2] = ["x", "y"];
const FIFO_STAGES: [Stage; 3] = [Stage::Ingress, Stage::Routed, Stage::Outbound];
/// The default dedupe window (the config changes proposed here never set retention).
const DEDUPE_WINDOW_MS: u64 = 24 * 60 * 60 * 1000;
const START_MS: Millis = 1_000_000;

fn lane_names(stage: Stage) -> Vec<&'static str> {
    let mut names: Vec<&str> = match stage {
        Stage::Outbound => DESTINATIONS.to_vec(),
        _ => CHANNELS.to_vec(),
    };
    names.push("nolane");
    names
}

// ---------------------------------------------------------------------------------------------
// Abstract operations (resolved against the model's knowledge when the case runs, so shrinking
// keeps working)
// ---------------------------------------------------------------------------------------------

/// How a fenced command names its row.
#[derive(Clone, Debug)]
enum Pick {
    /// The n-th row that is inflight now, with its current fence, preferring rows of the stage
    /// the command works on.
    Live(usize),
    /// The n-th newest claim handed out so far, with its fence (live, completed or stale).
    Claim(usize),
    /// A claim handed out earlier, presented with a wrong fence.
    WrongFence(usize, i8),
    /// Some row id below the counter (live, terminal or consumed) with an arbitrary fence.
    AnyRow(usize, u64),
    /// A row id nobody handed out.
    Garbage(u8),
    /// Exactly this row and fence (built by `Op::Work`, never generated).
    Exact(u64, u64),
}

#[derive(Clone, Debug)]
enum Op {
    Enqueue {
        channel: usize,
        /// Index into `IDEM_KEYS`; `Some(3)` is the invalid empty key.
        key: Option<usize>,
    },
    ClaimReady {
        /// Pick the stage of the n-th pending row instead of `stage`.
        smart: Option<usize>,
        stage: Stage,
        limit: u32,
        channel: Option<usize>,
        destination: Option<usize>,
        owner: usize,
        ttl: usize,
    },
    ClaimFifo {
        /// Pick the n-th lane that has live rows instead of `stage`/`lane`.
        smart: Option<usize>,
        stage: Stage,
        /// Index into `lane_names(stage)`, wrapped; `usize::MAX` is the invalid empty name.
        lane: usize,
        owner: usize,
        ttl: usize,
    },
    ReleaseLane {
        stage: Stage,
        lane: usize,
        owner: usize,
    },
    RouteHandoff {
        pick: Pick,
        handlers: Vec<usize>,
        unrouted: bool,
    },
    Handoff {
        pick: Pick,
        /// Index into `DESTINATIONS`; 3 is the invalid empty name.
        destinations: Vec<usize>,
        disposition: usize,
    },
    TransformHandoff {
        pick: Pick,
        destinations: Vec<usize>,
        state_ops: Vec<(usize, usize)>,
    },
    MarkDone {
        pick: Pick,
    },
    /// MarkDone of the pick, then ClaimNextFifo of its lane, in one command.
    DoneThenClaim {
        pick: Pick,
        owner: usize,
        ttl: usize,
    },
    MarkFailed {
        pick: Pick,
        max_attempts: Option<u32>,
        backoff: usize,
        multiplier: usize,
    },
    DeadLetterNow {
        pick: Pick,
        fenced: bool,
    },
    ReclaimExpired {
        stage: Option<Stage>,
    },
    RenewLeases {
        picks: Vec<Pick>,
        owner: usize,
        ttl: usize,
    },
    Replay {
        message: u64,
    },
    CancelQueued {
        destination: usize,
        channel: Option<usize>,
        top_only: bool,
    },
    RecordAudit {
        org: usize,
        channel: Option<usize>,
        action: usize,
        detail: bool,
    },
    ExpireRecords,
    /// A config change declaring the destinations and handlers whose bits are set (bit i =
    /// `DESTINATIONS[i]` / `HANDLERS[i]`): a name the current version has and this one lacks is
    /// removed, and its live rows are dead-lettered (docs/SPEC.md §6.2 "Orphans", §5.1).
    /// `drop_live` also leaves out the destination and handler of the n-th live row that names
    /// one, so removals hit live rows often enough to matter. `stale` presents the wrong expected
    /// version.
    PutConfig {
        destinations: u8,
        handlers: u8,
        drop_live: Option<usize>,
        stale: bool,
    },
    /// A worker's step: claim the head of a busy lane (no live claim, or an odd `variant` while
    /// rows are pending), else finish the n-th live claim the natural way for its stage: an
    /// ingress row is routed (`variant` even) or handed off, a routed row transformed, an
    /// outbound row done (`variant` 0 or 2), done with its lane's next row claimed (1) or
    /// failed (3). Keeps sequences reaching the deep end of the pipeline.
    Work {
        live: usize,
        variant: u8,
        handlers: Vec<usize>,
        destinations: Vec<usize>,
    },
}

/// How the proposer's clock moves before a command.
#[derive(Clone, Copy, Debug)]
enum Step {
    Same,
    Small(u64),
    /// Round up to a multiple of 250 ms, plus `k − 1` more: makes lease expiries coincide with
    /// command times, so the `==` boundaries get exercised.
    Aligned(u64),
    /// A proposer whose clock is behind (a new leader): the state machine must clamp.
    Back(u64),
    /// More than a dedupe window: idempotency keys of ended messages expire.
    Jump,
}

impl Step {
    fn apply(self, now: Millis) -> Millis {
        match self {
            Step::Same => now,
            Step::Small(d) => now + d,
            Step::Aligned(k) => (now / 250 + k) * 250,
            Step::Back(d) => now.saturating_sub(d),
            Step::Jump => now + DEDUPE_WINDOW_MS + 3_600_000,
        }
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => Just(Step::Same),
        6 => (1u64..60).prop_map(Step::Small),
        8 => (1u64..9).prop_map(Step::Aligned),
        2 => (1u64..3000).prop_map(Step::Back),
        1 => Just(Step::Jump),
    ]
}

fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        10 => (0usize..4).prop_map(Pick::Live),
        4 => (0usize..4).prop_map(Pick::Claim),
        2 => any::<usize>().prop_map(Pick::Claim),
        2 => (any::<usize>(), prop_oneof![Just(-1i8), Just(1i8), Just(7i8)]).prop_map(|(i, d)| Pick::WrongFence(i, d)),
        2 => (any::<usize>(), 0u64..80).prop_map(|(i, f)| Pick::AnyRow(i, f)),
        1 => (0u8..3).prop_map(Pick::Garbage),
    ]
}

fn owner() -> impl Strategy<Value = usize> {
    prop_oneof![40 => 0usize..2, 1 => Just(2usize)]
}

fn ttl() -> impl Strategy<Value = usize> {
    prop_oneof![40 => 0usize..3, 1 => 3usize..5]
}

fn smart() -> impl Strategy<Value = Option<usize>> {
    proptest::option::weighted(0.6, 0usize..8)
}

fn stage() -> impl Strategy<Value = Stage> {
    prop_oneof![
        Just(Stage::Ingress),
        Just(Stage::Routed),
        Just(Stage::Outbound)
    ]
}

fn destination() -> impl Strategy<Value = usize> {
    prop_oneof![30 => 0usize..3, 1 => Just(3usize)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..2, prop_oneof![6 => Just(None), 8 => (0usize..3).prop_map(Some), 1 => Just(Some(3))])
            .prop_map(|(channel, key)| Op::Enqueue { channel, key }),
        5 => (
            (smart(), stage()),
            prop_oneof![1 => Just(0u32), 10 => 1u32..4, 1 => Just(5000u32)],
            proptest::option::weighted(0.3, 0usize..2),
            proptest::option::weighted(0.2, 0usize..3),
            owner(),
            ttl()
        )
            .prop_map(|((smart, stage), limit, channel, destination, owner, ttl)| Op::ClaimReady {
                smart,
                stage,
                limit,
                channel,
                destination,
                owner,
                ttl
            }),
        10 => (smart(), stage(), prop_oneof![60 => 0usize..4, 1 => Just(usize::MAX)], owner(), ttl())
            .prop_map(|(smart, stage, lane, owner, ttl)| Op::ClaimFifo { smart, stage, lane, owner, ttl }),
        2 => (stage(), 0usize..4, owner()).prop_map(|(stage, lane, owner)| Op::ReleaseLane { stage, lane, owner }),
        4 => (pick(), proptest::collection::vec(0usize..2, 0..3), proptest::bool::weighted(0.2))
            .prop_map(|(pick, handlers, unrouted)| Op::RouteHandoff { pick, handlers, unrouted }),
        3 => (pick(), proptest::collection::vec(destination(), 0..4), 0usize..3)
            .prop_map(|(pick, destinations, disposition)| Op::Handoff { pick, destinations, disposition }),
        5 => (
            pick(),
            proptest::collection::vec(destination(), 0..3),
            proptest::collection::vec((0usize..3, 0usize..2), 0..3)
        )
            .prop_map(|(pick, destinations, state_ops)| Op::TransformHandoff { pick, destinations, state_ops }),
        6 => pick().prop_map(|pick| Op::MarkDone { pick }),
        4 => (pick(), owner(), ttl()).prop_map(|(pick, owner, ttl)| Op::DoneThenClaim { pick, owner, ttl }),
        4 => (
            pick(),
            prop_oneof![6 => Just(None), 12 => (1u32..4).prop_map(Some), 1 => Just(Some(0u32))],
            0usize..3,
            prop_oneof![30 => 0usize..3, 1 => Just(3usize)]
        )
            .prop_map(|(pick, max_attempts, backoff, multiplier)| Op::MarkFailed {
                pick,
                max_attempts,
                backoff,
                multiplier
            }),
        2 => (pick(), any::<bool>()).prop_map(|(pick, fenced)| Op::DeadLetterNow { pick, fenced }),
        2 => proptest::option::of(stage()).prop_map(|stage| Op::ReclaimExpired { stage }),
        2 => (proptest::collection::vec(pick(), 0..4), owner(), ttl())
            .prop_map(|(picks, owner, ttl)| Op::RenewLeases { picks, owner, ttl }),
        2 => prop_oneof![10 => 0u64..40, 1 => Just(u64::MAX)].prop_map(|message| Op::Replay { message }),
        2 => (destination(), proptest::option::weighted(0.3, 0usize..2), any::<bool>())
            .prop_map(|(destination, channel, top_only)| Op::CancelQueued { destination, channel, top_only }),
        2 => (prop_oneof![4 => 0usize..2, 1 => Just(2usize)], proptest::option::of(0usize..2), prop_oneof![20 => 0usize..2, 1 => Just(2usize)], any::<bool>())
            .prop_map(|(org, channel, action, detail)| Op::RecordAudit { org, channel, action, detail }),
        1 => Just(Op::ExpireRecords),
        3 => (
            prop_oneof![2 => Just(0b111u8), 1 => 0u8..8],
            prop_oneof![2 => Just(0b11u8), 1 => 0u8..4],
            proptest::option::weighted(0.5, 0usize..8),
            proptest::bool::weighted(0.1)
        )
            .prop_map(|(destinations, handlers, drop_live, stale)| Op::PutConfig { destinations, handlers, drop_live, stale }),
        8 => (0usize..4, 0u8..4, proptest::collection::vec(0usize..2, 0..3), proptest::collection::vec(0usize..3, 0..3))
            .prop_map(|(live, variant, handlers, destinations)| Op::Work { live, variant, handlers, destinations }),
    ]
}

// ---------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct MRow {
    id: u64,
    message: u64,
    stage: Stage,
    channel: String,
    destination: Option<String>,
    handler: Option<String>,
    payload: String,
    status: RowStatus,
    attempts: u32,
    next_attempt_at: Millis,
    last_error: Option<String>,
    created_at: Millis,
    updated_at: Millis,
    /// `(owner, lease_expires_at, fence)` while inflight.
    claim: Option<(String, Millis, u64)>,
    last_fence: Option<u64>,
    /// The policy of its last `fail` while it is live: a lease expiry is judged by it.
    retry: Option<RetryPolicy>,
}

impl MRow {
    fn lane(&self) -> (Stage, String) {
        let name = match self.stage {
            Stage::Outbound => self.destination.clone().unwrap_or_default(),
            _ => self.channel.clone(),
        };
        (self.stage, name)
    }

    fn live(&self) -> bool {
        matches!(self.status, RowStatus::Pending | RowStatus::Inflight)
    }

    fn to_work_row(&self) -> WorkRow {
        WorkRow {
            id: RowId(self.id),
            message_id: MessageId(self.message),
            stage: self.stage,
            channel_id: self.channel.clone(),
            destination_name: self.destination.clone(),
            handler_name: self.handler.clone(),
            payload: self.payload.clone(),
            status: self.status,
            attempts: self.attempts,
            next_attempt_at: self.next_attempt_at,
            last_error: self.last_error.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            claim: self.claim.as_ref().map(|(owner, lease, fence)| Claim {
                owner: owner.clone(),
                lease_expires_at: *lease,
                fence: Fence(*fence),
            }),
            last_fence: self.last_fence.map(Fence),
        }
    }
}

#[derive(Clone, Debug)]
struct MMessage {
    channel: String,
    status: MessageStatus,
    key: Option<String>,
    /// The finalizer ran after the last status written by a handoff or a replay.
    finalized: bool,
    /// Every event, in order.
    events: Vec<MEvent>,
}

/// `(ts, kind, destination, detail)` of an event; the details are messagefoundry's texts
/// (docs/SPEC.md §3.2).
type MEvent = (Millis, EventKind, Option<String>, Option<String>);

#[derive(Clone, Debug, Default)]
struct MLane {
    max_created_at: Millis,
    /// `(owner, expires_at)`.
    lease: Option<(String, Millis)>,
}

/// One claim as handed out: `(row, fence)`.
#[derive(Clone, Copy, Debug)]
struct Handed {
    row: u64,
    fence: u64,
}

#[derive(Clone, Debug, Default)]
struct Model {
    clock: Millis,
    next_message: u64,
    next_row: u64,
    rows: BTreeMap<u64, MRow>,
    messages: Vec<MMessage>,
    lanes: BTreeMap<(Stage, String), MLane>,
    /// `(channel, key) → (message, expires_at)`; `None` while the message is in flight.
    idempotency: BTreeMap<(String, String), (u64, Option<Millis>)>,
    audit_counts: BTreeMap<String, u64>,
    namespaces: BTreeMap<String, u64>,
    state: BTreeMap<(String, String), (String, Millis, u64)>,
    claims: Vec<Handed>,
    /// Fences handed out by ClaimNextFifo.
    fifo_fences: BTreeSet<u64>,
    /// The current config version and the destinations and handlers it declares.
    config_version: u64,
    config_destinations: BTreeSet<String>,
    config_handlers: BTreeSet<String>,
}

type MResult<T> = Result<T, Rejection>;

/// What a claim answers for a model row under its current claim.
fn claimed_row(row: &MRow) -> ClaimedRow {
    let (_, lease_expires_at, fence) = row.claim.clone().expect("a claimed row");
    ClaimedRow {
        row_id: RowId(row.id),
        message_id: MessageId(row.message),
        stage: row.stage,
        channel_id: row.channel.clone(),
        destination_name: row.destination.clone(),
        handler_name: row.handler.clone(),
        payload: row.payload.clone(),
        attempts: row.attempts,
        fence: Fence(fence),
        lease_expires_at,
        created_at: None,
    }
}

fn check_name(field: &str, value: &str) -> MResult<()> {
    if value.is_empty() || value.len() > 200 || value.chars().any(char::is_control) {
        return Err(Rejection::invalid(field, "bad name"));
    }
    Ok(())
}

fn check_ttl(ttl: u64) -> MResult<()> {
    if ttl == 0 || ttl > MAX_TTL_MS {
        return Err(Rejection::invalid("ttl_ms", "out of range"));
    }
    Ok(())
}

fn terminal(status: MessageStatus) -> bool {
    !matches!(status, MessageStatus::Received | MessageStatus::Routed)
}

/// docs/SPEC.md §5.1, written out again (not the crate's `finalize::verdict`).
fn model_verdict(status: MessageStatus, rows: &[(Stage, RowStatus)]) -> Option<MessageStatus> {
    if rows
        .iter()
        .any(|(_, s)| matches!(s, RowStatus::Pending | RowStatus::Inflight))
    {
        None
    } else if rows.iter().any(|(_, s)| *s == RowStatus::Dead) {
        Some(MessageStatus::Error)
    } else if rows.iter().any(|(stage, _)| *stage == Stage::Outbound) {
        Some(MessageStatus::Processed)
    } else if rows.is_empty() && status == MessageStatus::Routed {
        Some(MessageStatus::Filtered)
    } else {
        None
    }
}

/// `min(max, backoff × multiplier^(attempts − 1))` for whole multipliers, the only kind in
/// `MULTIPLIERS`: integer powers need no rounding, so this stays obviously right. Fractional
/// multipliers (floored once, docs/SPEC.md §5.2) are pinned by the unit tests in `complete.rs`.
fn model_backoff(retry: &RetryPolicy, attempts: u32) -> u64 {
    let factor = u128::from(retry.multiplier_milli / 1000);
    let mut delay = u128::from(retry.backoff_ms);
    for _ in 1..attempts {
        delay *= factor;
        if delay > u128::from(retry.max_backoff_ms) {
            break;
        }
    }
    delay.min(u128::from(retry.max_backoff_ms)) as u64
}

enum Fenced {
    Held(u64),
    Consumed,
}

impl Model {
    fn new() -> Self {
        Self::default()
    }

    // --- resolving abstract ops ---------------------------------------------------------

    /// Inflight rows with their current fence; of `stage` when there are any.
    fn live_claims(&self, stage: Option<Stage>) -> Vec<Handed> {
        let live = |stage: Option<Stage>| -> Vec<Handed> {
            self.rows
                .values()
                .filter(|r| stage.is_none_or(|s| s == r.stage))
                .filter_map(|r| {
                    r.claim.as_ref().map(|c| Handed {
                        row: r.id,
                        fence: c.2,
                    })
                })
                .collect()
        };
        let of_stage = live(stage);
        if of_stage.is_empty() {
            live(None)
        } else {
            of_stage
        }
    }

    fn resolve(&self, pick: &Pick, stage: Option<Stage>) -> (RowId, Fence) {
        let claim = |i: usize| {
            self.claims.get(
                self.claims
                    .len()
                    .checked_sub(1 + i % self.claims.len().max(1))?,
            )
        };
        match pick {
            Pick::Live(i) => {
                let live = self.live_claims(stage);
                match live.get(i % live.len().max(1)).or_else(|| claim(*i)) {
                    Some(h) => (RowId(h.row), Fence(h.fence)),
                    None => (RowId(self.next_row), Fence(1)),
                }
            }
            Pick::Claim(i) => match claim(*i) {
                Some(h) => (RowId(h.row), Fence(h.fence)),
                None => (RowId(self.next_row), Fence(1)),
            },
            Pick::WrongFence(i, d) => match claim(*i) {
                Some(h) => (
                    RowId(h.row),
                    Fence(h.fence.saturating_add_signed(i64::from(*d))),
                ),
                None => (RowId(self.next_row + 1), Fence(2)),
            },
            Pick::AnyRow(i, f) => (RowId((*i as u64) % self.next_row.max(1)), Fence(*f)),
            Pick::Exact(row, fence) => (RowId(*row), Fence(*fence)),
            Pick::Garbage(0) => (RowId(self.next_row), Fence(1)),
            Pick::Garbage(1) => (RowId(self.next_row + 5), Fence(3)),
            Pick::Garbage(_) => (RowId(u64::MAX), Fence(u64::MAX)),
        }
    }

    fn command(&self, index: u64, op: &Op) -> Command {
        let ttl_of = |i: usize| TTLS[i];
        let dest = |i: usize| DESTINATIONS.get(i).copied().unwrap_or("").to_string();
        let deliveries = |ds: &[usize]| -> Vec<Delivery> {
            ds.iter()
                .enumerate()
                .map(|(n, d)| Delivery {
                    destination: dest(*d),
                    payload: format!("p{index}.{n}"),
                })
                .collect()
        };
        match op {
            Op::Enqueue { channel, key } => Command::EnqueueIngress(EnqueueIngress {
                channel: CHANNELS[*channel].to_string(),
                raw: format!("raw{index}"),
                fields: MessageFields::default(),
                idempotency_key: key.map(|k| IDEM_KEYS.get(k).copied().unwrap_or("").to_string()),
            }),
            Op::ClaimReady {
                smart,
                stage,
                limit,
                channel,
                destination,
                owner,
                ttl,
            } => Command::ClaimReady(ClaimReady {
                stage: smart
                    .and_then(|i| {
                        let pending: Vec<Stage> = self
                            .rows
                            .values()
                            .filter(|r| r.status == RowStatus::Pending)
                            .map(|r| r.stage)
                            .collect();
                        pending.get(i % pending.len().max(1)).copied()
                    })
                    .unwrap_or(*stage),
                limit: *limit,
                channel: channel.map(|c| CHANNELS[c].to_string()),
                destination: destination.map(|d| DESTINATIONS[d].to_string()),
                owner: OWNERS[*owner].to_string(),
                ttl_ms: ttl_of(*ttl),
            }),
            Op::ClaimFifo {
                smart,
                stage,
                lane,
                owner,
                ttl,
            } => {
                let names = lane_names(*stage);
                let mut chosen = (
                    *stage,
                    if *lane == usize::MAX {
                        ""
                    } else {
                        names[lane % names.len()]
                    }
                    .to_string(),
                );
                if let Some(i) = smart {
                    // Lanes with a pending row or a stranded (expired) inflight one.
                    let busy: BTreeSet<(Stage, String)> = self
                        .rows
                        .values()
                        .filter(|r| {
                            r.status == RowStatus::Pending
                                || r.claim.as_ref().is_some_and(|c| c.1 <= self.clock)
                        })
                        .map(MRow::lane)
                        .collect();
                    if let Some(l) = busy.iter().nth(i % busy.len().max(1)) {
                        chosen = l.clone();
                    }
                }
                Command::ClaimNextFifo(ClaimNextFifo {
                    stage: chosen.0,
                    lane: chosen.1,
                    owner: OWNERS[*owner].to_string(),
                    ttl_ms: ttl_of(*ttl),
                })
            }
            Op::ReleaseLane { stage, lane, owner } => {
                let names = lane_names(*stage);
                Command::ReleaseLane(ReleaseLane {
                    stage: *stage,
                    lane: names[*lane % names.len()].to_string(),
                    owner: OWNERS[*owner].to_string(),
                })
            }
            Op::RouteHandoff {
                pick,
                handlers,
                unrouted,
            } => {
                let (row_id, fence) = self.resolve(pick, Some(Stage::Ingress));
                Command::RouteHandoff(RouteHandoff {
                    row_id,
                    fence,
                    handlers: handlers
                        .iter()
                        .enumerate()
                        .map(|(n, h)| HandlerWork {
                            handler: HANDLERS[*h].to_string(),
                            payload: format!("h{index}.{n}"),
                        })
                        .collect(),
                    disposition: if *unrouted {
                        RouteDisposition::Unrouted
                    } else {
                        RouteDisposition::Routed
                    },
                })
            }
            Op::Handoff {
                pick,
                destinations,
                disposition,
            } => {
                let (row_id, fence) = self.resolve(pick, Some(Stage::Ingress));
                Command::Handoff(Handoff {
                    row_id,
                    fence,
                    deliveries: deliveries(destinations),
                    disposition: [
                        HandoffDisposition::Routed,
                        HandoffDisposition::Filtered,
                        HandoffDisposition::Unrouted,
                    ][*disposition],
                })
            }
            Op::TransformHandoff {
                pick,
                destinations,
                state_ops,
            } => {
                let (row_id, fence) = self.resolve(pick, Some(Stage::Routed));
                Command::TransformHandoff(TransformHandoff {
                    row_id,
                    fence,
                    deliveries: deliveries(destinations),
                    state_ops: state_ops
                        .iter()
                        .map(|(ns, k)| StateOp {
                            namespace: NAMESPACES.get(*ns).copied().unwrap_or("").to_string(),
                            key: STATE_KEYS[*k].to_string(),
                            value: format!("{index}"),
                        })
                        .collect(),
                })
            }
            Op::MarkDone { pick } => {
                let (row_id, fence) = self.resolve(pick, None);
                Command::MarkDone(MarkDone { row_id, fence })
            }
            Op::DoneThenClaim { pick, owner, ttl } => {
                let (row_id, fence) = self.resolve(pick, None);
                Command::DoneThenClaimNext(DoneThenClaimNext {
                    row_id,
                    fence,
                    owner: OWNERS[*owner].to_string(),
                    ttl_ms: ttl_of(*ttl),
                })
            }
            Op::MarkFailed {
                pick,
                max_attempts,
                backoff,
                multiplier,
            } => {
                let (row_id, fence) = self.resolve(pick, None);
                Command::MarkFailed(MarkFailed {
                    row_id,
                    fence,
                    error: format!("e{index}"),
                    retry: RetryPolicy {
                        max_attempts: *max_attempts,
                        backoff_ms: BACKOFFS[*backoff],
                        multiplier_milli: MULTIPLIERS[*multiplier],
                        max_backoff_ms: 4000,
                    },
                })
            }
            Op::DeadLetterNow { pick, fenced } => {
                let (row_id, fence) = self.resolve(pick, None);
                Command::DeadLetterNow(DeadLetterNow {
                    row_id,
                    fence: fenced.then_some(fence),
                    error: format!("poison{index}"),
                })
            }
            Op::ReclaimExpired { stage } => {
                Command::ReclaimExpired(ReclaimExpired { stage: *stage })
            }
            Op::RenewLeases { picks, owner, ttl } => Command::RenewLeases(RenewLeases {
                ids: picks.iter().map(|p| self.resolve(p, None).0).collect(),
                owner: OWNERS[*owner].to_string(),
                ttl_ms: ttl_of(*ttl),
            }),
            Op::Replay { message } => Command::Replay(Replay {
                message_id: MessageId(if *message == u64::MAX {
                    u64::MAX
                } else {
                    message % (self.next_message + 1)
                }),
            }),
            Op::CancelQueued {
                destination,
                channel,
                top_only,
            } => Command::CancelQueued(CancelQueued {
                destination: dest(*destination),
                channel: channel.map(|c| CHANNELS[c].to_string()),
                top_only: *top_only,
            }),
            Op::RecordAudit {
                org,
                channel,
                action,
                detail,
            } => Command::RecordAudit(RecordAudit {
                action: ACTIONS[*action].to_string(),
                channel: channel.map(|c| CHANNELS[c].to_string()),
                org: ORGS[*org].map(str::to_string),
                detail: detail.then(|| format!("detail {index}")),
                author: AuditAuthor::Principal,
            }),
            Op::Work {
                live,
                variant,
                handlers,
                destinations,
            } => {
                let claims = self.live_claims(None);
                // Odd variants first take more work when there is some.
                let busy = self.rows.values().any(|r| r.status == RowStatus::Pending);
                let (Some(h), false) = (
                    claims.get(live % claims.len().max(1)),
                    busy && variant % 2 == 1,
                ) else {
                    let claim = Op::ClaimFifo {
                        smart: Some(*live),
                        stage: Stage::Ingress,
                        lane: 0,
                        owner: usize::from(*variant) % 2,
                        ttl: 1,
                    };
                    return self.command(index, &claim);
                };
                let pick = Pick::Exact(h.row, h.fence);
                let op = match (self.rows[&h.row].stage, *variant) {
                    (Stage::Ingress, v) if v.is_multiple_of(2) => Op::RouteHandoff {
                        pick,
                        handlers: handlers.clone(),
                        unrouted: false,
                    },
                    (Stage::Ingress, v) => Op::Handoff {
                        pick,
                        destinations: destinations.clone(),
                        disposition: usize::from(v == 3),
                    },
                    (Stage::Routed, _) => Op::TransformHandoff {
                        pick,
                        destinations: destinations.clone(),
                        state_ops: handlers
                            .iter()
                            .map(|h| (*h, usize::from(*variant) % 2))
                            .collect(),
                    },
                    (_, 3) => Op::MarkFailed {
                        pick,
                        max_attempts: Some(2),
                        backoff: 1,
                        multiplier: 1,
                    },
                    // A lane worker that asks for its lane's next row with the done.
                    (_, 1) => Op::DoneThenClaim {
                        pick,
                        owner: self.rows[&h.row]
                            .claim
                            .as_ref()
                            .and_then(|c| OWNERS.iter().position(|o| *o == c.0))
                            .unwrap_or(0),
                        ttl: 1,
                    },
                    _ => Op::MarkDone { pick },
                };
                self.command(index, &op)
            }
            Op::ExpireRecords => Command::ExpireRecords,
            Op::PutConfig {
                destinations,
                handlers,
                drop_live,
                stale,
            } => {
                let (mut destinations, mut handlers) = (*destinations, *handlers);
                if let Some(i) = drop_live {
                    let named: Vec<&MRow> = self
                        .rows
                        .values()
                        .filter(|r| r.live() && (r.destination.is_some() || r.handler.is_some()))
                        .collect();
                    if let Some(row) = named.get(i % named.len().max(1)) {
                        let bit = |names: &[&str], name: &Option<String>| {
                            name.as_ref()
                                .and_then(|n| names.iter().position(|x| x == n))
                                .map_or(0, |i| 1u8 << i)
                        };
                        destinations &= !bit(&DESTINATIONS, &row.destination);
                        handlers &= !bit(&HANDLERS, &row.handler);
                    }
                }
                let mut config = ConfigDoc::default();
                for (i, d) in DESTINATIONS.iter().enumerate() {
                    if destinations & (1 << i) != 0 {
                        config
                            .destinations
                            .insert(d.to_string(), DestinationConfig::default());
                    }
                }
                for (i, h) in HANDLERS.iter().enumerate() {
                    if handlers & (1 << i) != 0 {
                        config
                            .handlers
                            .insert(h.to_string(), HandlerConfig::default());
                    }
                }
                Command::PutConfig(PutConfig {
                    expected_version: self.config_version + u64::from(*stale),
                    config,
                })
            }
        }
    }

    // --- applying --------------------------------------------------------------------------

    /// Apply one command at `t = max(now_ms, clock)`. A rejection is a no-op: it changes
    /// nothing, not even the clock (docs/SPEC.md §2.1 "A rejected command changes nothing").
    fn apply(&mut self, index: u64, envelope: &Envelope) -> Response {
        let saved = self.clone();
        self.clock = self.clock.max(envelope.now_ms);
        let t = self.clock;
        let result = self.exec(index, t, &envelope.command);
        if result.is_err() {
            *self = saved;
        }
        result
    }

    fn lane_mut(&mut self, stage: Stage, name: &str) -> &mut MLane {
        self.lanes.entry((stage, name.to_string())).or_default()
    }

    #[allow(clippy::too_many_arguments)]
    fn insert_row(
        &mut self,
        t: Millis,
        message: u64,
        stage: Stage,
        channel: &str,
        destination: Option<&str>,
        handler: Option<&str>,
        payload: &str,
    ) {
        let id = self.next_row;
        self.next_row += 1;
        let mut row = MRow {
            id,
            message,
            stage,
            channel: channel.to_string(),
            destination: destination.map(str::to_string),
            handler: handler.map(str::to_string),
            payload: payload.to_string(),
            status: RowStatus::Pending,
            attempts: 0,
            next_attempt_at: t,
            last_error: None,
            created_at: 0,
            updated_at: t,
            claim: None,
            last_fence: None,
            retry: None,
        };
        let (s, name) = row.lane();
        let lane = self.lane_mut(s, &name);
        lane.max_created_at = lane.max_created_at.max(t);
        row.created_at = lane.max_created_at;
        self.rows.insert(id, row);
    }

    fn rows_of(&self, message: u64) -> impl Iterator<Item = &MRow> + '_ {
        self.rows.values().filter(move |r| r.message == message)
    }

    fn set_status(&mut self, t: Millis, message: u64, status: MessageStatus) {
        let m = &mut self.messages[message as usize];
        m.status = status;
        if let Some(key) = &m.key {
            if let Some(record) = self.idempotency.get_mut(&(m.channel.clone(), key.clone())) {
                if record.0 == message {
                    record.1 = terminal(status).then(|| t + DEDUPE_WINDOW_MS);
                }
            }
        }
    }

    fn finalize(&mut self, t: Millis, message: u64) {
        let rows: Vec<(Stage, RowStatus)> =
            self.rows_of(message).map(|r| (r.stage, r.status)).collect();
        let current = self.messages[message as usize].status;
        if let Some(status) = model_verdict(current, &rows) {
            if status != current {
                self.set_status(t, message, status);
            }
        }
        self.messages[message as usize].finalized = true;
    }

    fn claim(
        &mut self,
        t: Millis,
        index: u64,
        id: u64,
        owner: &str,
        ttl: u64,
        fifo: bool,
    ) -> ClaimedRow {
        let row = self.rows.get_mut(&id).expect("claimed row exists");
        row.status = RowStatus::Inflight;
        row.attempts += 1;
        row.claim = Some((owner.to_string(), t.saturating_add(ttl), index));
        row.last_fence = Some(index);
        row.updated_at = t;
        self.claims.push(Handed {
            row: id,
            fence: index,
        });
        if fifo {
            self.fifo_fences.insert(index);
        }
        claimed_row(row)
    }

    fn back_to_pending(&mut self, t: Millis, id: u64, due: Millis) {
        let row = self.rows.get_mut(&id).expect("row exists");
        row.status = RowStatus::Pending;
        row.claim = None;
        row.next_attempt_at = due;
        row.updated_at = t;
    }

    /// docs/SPEC.md §4.5, §5.2: a row whose lease ran out goes back to pending, due at `t`,
    /// unless its claim was the last attempt its policy allows: the policy of its last `fail`
    /// while it is live, else the config's (the model's configs name no policies, so that is
    /// the default limit). Then it dies and its message is finalized.
    fn expire(&mut self, t: Millis, id: u64) {
        let row = &self.rows[&id];
        let attempts = row.attempts;
        let limit = row
            .retry
            .as_ref()
            .and_then(|r| r.max_attempts)
            .unwrap_or(DEFAULT_MAX_ATTEMPTS);
        if limit == u32::MAX || attempts < limit {
            self.back_to_pending(t, id, t);
            return;
        }
        note("expire", "dead");
        let reason = format!("lease expired on attempt {attempts} of {limit}");
        let message = self.finish(t, id, RowStatus::Dead, Some(&reason));
        self.finalize(t, message);
    }

    /// docs/SPEC.md §6.2: a name a non-empty config section does not list is refused.
    fn registered(section: &BTreeSet<String>, name: &str) -> bool {
        section.is_empty() || section.contains(name)
    }

    fn event(
        &mut self,
        t: Millis,
        message: u64,
        kind: EventKind,
        destination: Option<String>,
        detail: String,
    ) {
        self.messages[message as usize]
            .events
            .push((t, kind, destination, Some(detail)));
    }

    /// End a row (done, dead or cancelled) with its event: `delivered` "attempt N", `dead`
    /// with the error, `cancelled` "manual purge".
    fn finish(&mut self, t: Millis, id: u64, status: RowStatus, error: Option<&str>) -> u64 {
        let detail = match status {
            RowStatus::Done => format!("attempt {}", self.rows[&id].attempts),
            RowStatus::Dead => error.unwrap_or_default().to_string(),
            _ => "manual purge".to_string(),
        };
        self.finish_as(t, id, status, error, detail)
    }

    /// [`Model::finish`] with the event's own detail.
    fn finish_as(
        &mut self,
        t: Millis,
        id: u64,
        status: RowStatus,
        error: Option<&str>,
        detail: String,
    ) -> u64 {
        let row = self.rows.get_mut(&id).expect("row exists");
        row.status = status;
        row.claim = None;
        row.retry = None;
        row.updated_at = t;
        if let Some(e) = error {
            row.last_error = Some(e.to_string());
        }
        let (message, destination) = (row.message, row.destination.clone());
        let kind = match status {
            RowStatus::Done => EventKind::Delivered,
            RowStatus::Dead => EventKind::Dead,
            _ => EventKind::Cancelled,
        };
        self.event(t, message, kind, destination, detail);
        message
    }

    /// docs/SPEC.md §4.6 "Fences": the row must be inflight under the presented fence.
    fn fenced(&self, row_id: RowId, fence: Fence, stages: &[Stage]) -> MResult<Fenced> {
        let Some(row) = self.rows.get(&row_id.0) else {
            return if row_id.0 < self.next_row {
                Ok(Fenced::Consumed)
            } else {
                Err(Rejection::UnknownRow(row_id))
            };
        };
        if !stages.contains(&row.stage) {
            return Err(Rejection::WrongStage {
                row: row_id,
                stage: row.stage.as_str().to_string(),
            });
        }
        let stale = |current: Option<u64>| Rejection::StaleFence {
            row: row_id,
            presented: fence,
            current: current.map(Fence),
        };
        match (&row.status, &row.claim) {
            (RowStatus::Inflight, Some((_, _, f))) if *f == fence.0 => Ok(Fenced::Held(row.id)),
            (RowStatus::Inflight, Some((_, _, f))) => Err(stale(Some(*f))),
            (RowStatus::Pending, _) => Err(stale(None)),
            _ if row.last_fence != Some(fence.0) => Err(stale(None)),
            _ => Err(Rejection::WrongStatus {
                row: row_id,
                status: row.status.as_str().to_string(),
                expected: "inflight".to_string(),
            }),
        }
    }

    /// For completions of rows that are never consumed: a missing row is unknown.
    fn held(&self, row_id: RowId, fence: Fence) -> MResult<u64> {
        match self.fenced(row_id, fence, &Stage::ALL)? {
            Fenced::Held(id) => Ok(id),
            Fenced::Consumed => Err(Rejection::UnknownRow(row_id)),
        }
    }

    fn insert_deliveries(
        &mut self,
        t: Millis,
        message: u64,
        channel: &str,
        deliveries: &[Delivery],
    ) -> MResult<()> {
        for d in deliveries {
            check_name("deliveries.destination", &d.destination)?;
        }
        if let Some(d) = deliveries
            .iter()
            .find(|d| !Self::registered(&self.config_destinations, &d.destination))
        {
            note("handoff", "unregistered destination");
            return Err(Rejection::invalid("deliveries.destination", &d.destination));
        }
        for d in deliveries {
            self.insert_row(
                t,
                message,
                Stage::Outbound,
                channel,
                Some(&d.destination),
                None,
                &d.payload,
            );
        }
        Ok(())
    }

    fn audit(&mut self, org: &str) -> u64 {
        let count = self.audit_counts.entry(org.to_string()).or_insert(0);
        *count += 1;
        *count - 1
    }

    fn exec(&mut self, index: u64, t: Millis, command: &Command) -> Response {
        match command {
            Command::EnqueueIngress(EnqueueIngress {
                channel,
                raw,
                idempotency_key,
                ..
            }) => {
                if let Some(key) = idempotency_key {
                    if let Some((id, expires)) =
                        self.idempotency.get(&(channel.clone(), key.clone()))
                    {
                        if expires.is_none_or(|e| e > t) {
                            return Ok(Outcome::Enqueued {
                                message_id: MessageId(*id),
                                duplicate: true,
                            });
                        }
                    }
                }
                check_name("channel", channel)?;
                if let Some(key) = idempotency_key {
                    if key.is_empty() || key.len() > 200 {
                        return Err(Rejection::invalid("idempotency_key", "bad key"));
                    }
                }
                let id = self.next_message;
                self.next_message += 1;
                self.messages.push(MMessage {
                    channel: channel.clone(),
                    status: MessageStatus::Received,
                    key: idempotency_key.clone(),
                    finalized: false,
                    events: vec![(t, EventKind::Received, None, Some("ingress".to_string()))],
                });
                if let Some(key) = idempotency_key {
                    self.idempotency
                        .insert((channel.clone(), key.clone()), (id, None));
                }
                self.insert_row(t, id, Stage::Ingress, channel, None, None, raw);
                Ok(Outcome::Enqueued {
                    message_id: MessageId(id),
                    duplicate: false,
                })
            }
            Command::ClaimReady(ClaimReady {
                stage,
                limit,
                channel,
                destination,
                owner,
                ttl_ms,
            }) => {
                check_name("owner", owner)?;
                check_ttl(*ttl_ms)?;
                if let Some(c) = channel {
                    check_name("channel", c)?;
                }
                if let Some(d) = destination {
                    check_name("destination", d)?;
                }
                let mut due: Vec<&MRow> = self
                    .rows
                    .values()
                    .filter(|r| {
                        r.stage == *stage
                            && r.status == RowStatus::Pending
                            && r.next_attempt_at <= t
                    })
                    .collect();
                due.sort_by_key(|r| (r.next_attempt_at, r.id));
                let picked: Vec<u64> = due
                    .into_iter()
                    .filter(|r| channel.as_ref().is_none_or(|c| *c == r.channel))
                    .filter(|r| {
                        destination
                            .as_ref()
                            .is_none_or(|d| Some(d) == r.destination.as_ref())
                    })
                    .take((*limit).min(1000) as usize)
                    .map(|r| r.id)
                    .collect();
                let claimed = picked
                    .into_iter()
                    .map(|id| self.claim(t, index, id, owner, *ttl_ms, false))
                    .collect();
                Ok(Outcome::Claimed(claimed))
            }
            Command::ClaimNextFifo(ClaimNextFifo {
                stage,
                lane,
                owner,
                ttl_ms,
            }) => {
                check_name("lane", lane)?;
                check_name("owner", owner)?;
                check_ttl(*ttl_ms)?;
                // 0. another owner's live row in the lane still holds it (after an early release).
                let key = (*stage, lane.clone());
                let other_live = self
                    .rows
                    .values()
                    .filter(|r| r.lane() == key && r.status == RowStatus::Inflight)
                    .filter_map(|r| r.claim.as_ref())
                    .find(|c| c.0 != *owner && c.1 >= t)
                    .map(|c| (c.0.clone(), c.1));
                if let Some((holder, expires_at)) = other_live {
                    return Ok(Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
                        holder,
                        expires_at,
                    })));
                }
                // 1. the lane lease.
                let state = self.lane_mut(*stage, lane);
                if let Some((holder, expires_at)) = &state.lease {
                    // A lane lease is live through its expiry instant, like a row lease.
                    if holder != owner && *expires_at >= t {
                        return Ok(Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
                            holder: holder.clone(),
                            expires_at: *expires_at,
                        })));
                    }
                }
                // Re-acquiring never shortens the owner's own lease.
                let held_until = state
                    .lease
                    .as_ref()
                    .filter(|l| l.0 == *owner)
                    .map_or(0, |l| l.1);
                state.lease = Some((owner.clone(), t.saturating_add(*ttl_ms).max(held_until)));
                // 2. stranded rows of a crashed holder go back to pending, due now.
                let stranded: Vec<u64> = self
                    .rows
                    .values()
                    .filter(|r| r.lane() == key && r.status == RowStatus::Inflight)
                    .filter(|r| r.claim.as_ref().is_some_and(|c| c.1 < t))
                    .map(|r| r.id)
                    .collect();
                for id in stranded {
                    self.expire(t, id);
                }
                // 3. the owner's own live claim in the lane comes back, same fence, lease
                //    extended (never shortened); after step 2 every inflight row here is live.
                let own = self
                    .rows
                    .values()
                    .filter(|r| r.lane() == key && r.status == RowStatus::Inflight)
                    .filter(|r| r.claim.as_ref().is_some_and(|c| c.0 == *owner))
                    .min_by_key(|r| r.id)
                    .map(|r| r.id);
                if let Some(id) = own {
                    let row = self.rows.get_mut(&id).expect("own row exists");
                    if let Some(c) = row.claim.as_mut() {
                        c.1 = c.1.max(t.saturating_add(*ttl_ms));
                    }
                    return Ok(Outcome::FifoClaimed(Ok(claimed_row(row))));
                }
                // 4. the head, if due.
                let head = self
                    .rows
                    .values()
                    .filter(|r| r.lane() == key && r.status == RowStatus::Pending)
                    .min_by_key(|r| (r.created_at, r.id));
                match head {
                    None => Ok(Outcome::FifoClaimed(Err(FifoEmpty::Empty))),
                    Some(h) if h.next_attempt_at > t => {
                        Ok(Outcome::FifoClaimed(Err(FifoEmpty::NotDue {
                            due_at: h.next_attempt_at,
                        })))
                    }
                    Some(h) => {
                        let id = h.id;
                        Ok(Outcome::FifoClaimed(Ok(
                            self.claim(t, index, id, owner, *ttl_ms, true)
                        )))
                    }
                }
            }
            Command::RenewLeases(RenewLeases { ids, owner, ttl_ms }) => {
                check_name("owner", owner)?;
                check_ttl(*ttl_ms)?;
                let until = t.saturating_add(*ttl_ms);
                let mut count = 0;
                let mut lanes = BTreeSet::new();
                for id in ids {
                    let Some(row) = self.rows.get_mut(&id.0) else {
                        continue;
                    };
                    if row.status != RowStatus::Inflight {
                        continue;
                    }
                    let Some(claim) = row.claim.as_mut().filter(|c| c.0 == *owner) else {
                        continue;
                    };
                    claim.1 = claim.1.max(until);
                    lanes.insert(row.lane());
                    count += 1;
                }
                for (stage, name) in lanes {
                    if let Some(lease) = self
                        .lane_mut(stage, &name)
                        .lease
                        .as_mut()
                        .filter(|l| l.0 == *owner)
                    {
                        lease.1 = lease.1.max(until);
                    }
                }
                Ok(Outcome::Count(count))
            }
            Command::ReclaimExpired(ReclaimExpired { stage }) => {
                let expired: Vec<u64> = self
                    .rows
                    .values()
                    .filter(|r| {
                        r.status == RowStatus::Inflight && stage.is_none_or(|s| s == r.stage)
                    })
                    .filter(|r| r.claim.as_ref().is_some_and(|c| c.1 < t))
                    .map(|r| r.id)
                    .collect();
                for id in &expired {
                    self.expire(t, *id);
                }
                Ok(Outcome::Count(expired.len() as u64))
            }
            Command::RouteHandoff(RouteHandoff {
                row_id,
                fence,
                handlers,
                disposition,
            }) => {
                let id = match self.fenced(*row_id, *fence, &[Stage::Ingress])? {
                    Fenced::Consumed => return Ok(Outcome::HandedOff(false)),
                    Fenced::Held(id) => id,
                };
                for h in handlers {
                    check_name("handlers.handler", &h.handler)?;
                }
                if let Some(h) = handlers
                    .iter()
                    .find(|h| !Self::registered(&self.config_handlers, &h.handler))
                {
                    note("handoff", "unregistered handler");
                    return Err(Rejection::invalid("handlers.handler", &h.handler));
                }
                let row = self.rows.remove(&id).expect("held row");
                for h in handlers {
                    self.insert_row(
                        t,
                        row.message,
                        Stage::Routed,
                        &row.channel,
                        None,
                        Some(&h.handler),
                        &h.payload,
                    );
                }
                let (status, kind) = match disposition {
                    RouteDisposition::Routed => (MessageStatus::Routed, EventKind::Routed),
                    RouteDisposition::Unrouted => (MessageStatus::Unrouted, EventKind::Unrouted),
                };
                self.set_status(t, row.message, status);
                let detail = format!("{} handler(s)", handlers.len());
                self.event(t, row.message, kind, None, detail);
                self.messages[row.message as usize].finalized = false;
                Ok(Outcome::HandedOff(true))
            }
            Command::Handoff(Handoff {
                row_id,
                fence,
                deliveries,
                disposition,
            }) => {
                let id = match self.fenced(*row_id, *fence, &[Stage::Ingress])? {
                    Fenced::Consumed => return Ok(Outcome::HandedOff(false)),
                    Fenced::Held(id) => id,
                };
                let row = self.rows.remove(&id).expect("held row");
                self.insert_deliveries(t, row.message, &row.channel, deliveries)?;
                let (status, kind) = match disposition {
                    HandoffDisposition::Routed => (MessageStatus::Routed, EventKind::Routed),
                    HandoffDisposition::Filtered => (MessageStatus::Filtered, EventKind::Filtered),
                    HandoffDisposition::Unrouted => (MessageStatus::Unrouted, EventKind::Unrouted),
                };
                self.set_status(t, row.message, status);
                let detail = format!("{} destination(s)", deliveries.len());
                self.event(t, row.message, kind, None, detail);
                self.messages[row.message as usize].finalized = false;
                Ok(Outcome::HandedOff(true))
            }
            Command::TransformHandoff(TransformHandoff {
                row_id,
                fence,
                deliveries,
                state_ops,
            }) => {
                let id = match self.fenced(*row_id, *fence, &[Stage::Routed])? {
                    Fenced::Consumed => return Ok(Outcome::HandedOff(false)),
                    Fenced::Held(id) => id,
                };
                let row = self.rows.remove(&id).expect("held row");
                self.insert_deliveries(t, row.message, &row.channel, deliveries)?;
                for op in state_ops {
                    check_name("state_ops.namespace", &op.namespace)?;
                    check_name("state_ops.key", &op.key)?;
                }
                let mut touched = BTreeSet::new();
                for op in state_ops {
                    self.state.insert(
                        (op.namespace.clone(), op.key.clone()),
                        (op.value.clone(), t, row.message),
                    );
                    touched.insert(op.namespace.clone());
                }
                for ns in touched {
                    *self.namespaces.entry(ns).or_insert(0) += 1;
                }
                let detail = format!("{} destination(s)", deliveries.len());
                self.event(t, row.message, EventKind::Transformed, None, detail);
                self.finalize(t, row.message);
                Ok(Outcome::HandedOff(true))
            }
            Command::MarkDone(MarkDone { row_id, fence }) => {
                let id = self.held(*row_id, *fence)?;
                let message = self.finish(t, id, RowStatus::Done, None);
                self.finalize(t, message);
                Ok(Outcome::Done)
            }
            Command::DoneThenClaimNext(DoneThenClaimNext {
                row_id,
                fence,
                owner,
                ttl_ms,
            }) => {
                check_name("owner", owner)?;
                check_ttl(*ttl_ms)?;
                let lane = self.rows.get(&row_id.0).map(MRow::lane);
                self.exec(
                    index,
                    t,
                    &Command::MarkDone(MarkDone {
                        row_id: *row_id,
                        fence: *fence,
                    }),
                )?;
                let (stage, lane) = lane.ok_or(Rejection::UnknownRow(*row_id))?;
                self.exec(
                    index,
                    t,
                    &Command::ClaimNextFifo(ClaimNextFifo {
                        stage,
                        lane,
                        owner: owner.clone(),
                        ttl_ms: *ttl_ms,
                    }),
                )
            }
            Command::MarkFailed(MarkFailed {
                row_id,
                fence,
                error,
                retry,
            }) => {
                if retry.multiplier_milli < 1000 {
                    return Err(Rejection::invalid("retry.multiplier_milli", "below 1.0"));
                }
                if retry.max_attempts == Some(0) {
                    return Err(Rejection::invalid("retry.max_attempts", "zero"));
                }
                let id = self.held(*row_id, *fence)?;
                let attempts = self.rows[&id].attempts;
                let detail = format!("attempt {attempts}: {error}");
                if attempts >= retry.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS) {
                    // The dead event says which attempt, as `failed` does; last_error is the error.
                    let message = self.finish_as(t, id, RowStatus::Dead, Some(error), detail);
                    self.finalize(t, message);
                    return Ok(Outcome::Failed {
                        dead: true,
                        next_attempt_at: t,
                    });
                }
                let due = t.saturating_add(model_backoff(retry, attempts));
                self.back_to_pending(t, id, due);
                let row = self.rows.get_mut(&id).expect("row");
                row.last_error = Some(error.clone());
                row.retry = Some(retry.clone());
                let (message, destination) = (row.message, row.destination.clone());
                self.event(t, message, EventKind::Failed, destination, detail);
                Ok(Outcome::Failed {
                    dead: false,
                    next_attempt_at: due,
                })
            }
            Command::DeadLetterNow(DeadLetterNow {
                row_id,
                fence,
                error,
            }) => {
                let id = match fence {
                    Some(f) => self.held(*row_id, *f)?,
                    None => {
                        let row = self
                            .rows
                            .get(&row_id.0)
                            .ok_or(Rejection::UnknownRow(*row_id))?;
                        if !row.live() {
                            return Err(Rejection::WrongStatus {
                                row: *row_id,
                                status: row.status.as_str().to_string(),
                                expected: "pending or inflight".to_string(),
                            });
                        }
                        row.id
                    }
                };
                let message = self.finish(t, id, RowStatus::Dead, Some(error));
                self.finalize(t, message);
                Ok(Outcome::Done)
            }
            Command::Replay(Replay { message_id }) => {
                let id = message_id.0;
                if id >= self.next_message {
                    return Err(Rejection::UnknownMessage(*message_id));
                }
                let rows: Vec<MRow> = self.rows_of(id).cloned().collect();
                let stuck: Vec<&MRow> = rows
                    .iter()
                    .filter(|r| matches!(r.status, RowStatus::Dead | RowStatus::Pending))
                    .collect();
                let chosen: Vec<&MRow> = if stuck.is_empty() {
                    rows.iter()
                        .filter(|r| r.status == RowStatus::Done)
                        .collect()
                } else {
                    stuck
                };
                for r in &chosen {
                    let row = self.rows.get_mut(&r.id).expect("row");
                    row.status = RowStatus::Pending;
                    row.claim = None;
                    row.attempts = 0;
                    row.next_attempt_at = t;
                    row.last_error = None;
                    row.updated_at = t;
                }
                if !chosen.is_empty() {
                    // "received" if an ingress/routed row is pending now, else "routed".
                    let early = self.rows_of(id).any(|r| {
                        r.status == RowStatus::Pending
                            && matches!(r.stage, Stage::Ingress | Stage::Routed)
                    });
                    let status = if early {
                        MessageStatus::Received
                    } else {
                        MessageStatus::Routed
                    };
                    self.set_status(t, id, status);
                    self.messages[id as usize].finalized = false;
                    let detail = format!("{} row(s)", chosen.len());
                    self.event(t, id, EventKind::Replayed, None, detail);
                    self.audit(DEFAULT_ORG);
                }
                Ok(Outcome::Count(chosen.len() as u64))
            }
            Command::CancelQueued(CancelQueued {
                destination,
                channel,
                top_only,
            }) => {
                check_name("destination", destination)?;
                let mut queued: Vec<&MRow> = self
                    .rows
                    .values()
                    .filter(|r| {
                        r.lane() == (Stage::Outbound, destination.clone())
                            && r.status == RowStatus::Pending
                    })
                    .filter(|r| channel.as_ref().is_none_or(|c| *c == r.channel))
                    .collect();
                // Lane order for "all"; messagefoundry's next due row for "top".
                queued.sort_by_key(|r| (r.created_at, r.id));
                if *top_only {
                    queued.sort_by_key(|r| (r.next_attempt_at, r.created_at, r.id));
                }
                let mut chosen: Vec<u64> = queued.into_iter().map(|r| r.id).collect();
                if *top_only {
                    chosen.truncate(1);
                }
                let mut touched = BTreeSet::new();
                for id in &chosen {
                    touched.insert(self.finish(t, *id, RowStatus::Cancelled, None));
                }
                for message in touched {
                    self.finalize(t, message);
                }
                if !chosen.is_empty() {
                    self.audit(DEFAULT_ORG);
                }
                Ok(Outcome::Count(chosen.len() as u64))
            }
            Command::RecordAudit(RecordAudit {
                action,
                channel,
                org,
                ..
            }) => {
                check_name("action", action)?;
                if let Some(c) = channel {
                    check_name("channel", c)?;
                }
                if let Some(o) = org {
                    check_name("org", o)?;
                }
                let seq = self.audit(org.as_deref().unwrap_or(DEFAULT_ORG));
                // The hash is checked by recomputation against the stored chain.
                Ok(Outcome::Audit {
                    seq,
                    hash: String::new(),
                })
            }
            Command::ReleaseLane(ReleaseLane { stage, lane, owner }) => {
                check_name("lane", lane)?;
                let state = self.lane_mut(*stage, lane);
                match &state.lease {
                    Some((holder, _)) if holder == owner => {
                        state.lease = None;
                        Ok(Outcome::Count(1))
                    }
                    _ => Ok(Outcome::Count(0)),
                }
            }
            Command::PutConfig(PutConfig {
                expected_version,
                config,
            }) => {
                if *expected_version != self.config_version {
                    return Err(Rejection::VersionMismatch {
                        expected: *expected_version,
                        current: self.config_version,
                    });
                }
                let destinations: BTreeSet<String> = config.destinations.keys().cloned().collect();
                let handlers: BTreeSet<String> = config.handlers.keys().cloned().collect();
                // Every live outbound row whose destination, and routed row whose handler, the
                // new version does not list (when it lists any, or when the previous version
                // listed it) goes dead, in row id order, each with its message finalized.
                // Response rows are never swept.
                let orphaned = |before: &BTreeSet<String>, after: &BTreeSet<String>, name: &str| {
                    !after.contains(name) && (!after.is_empty() || before.contains(name))
                };
                let reason = |what: &str, before: &BTreeSet<String>, name: &str| {
                    if before.contains(name) {
                        format!("{what} {name} removed from config")
                    } else {
                        format!("{what} {name} not in config")
                    }
                };
                let orphans: Vec<(u64, String)> = self
                    .rows
                    .values()
                    .filter(|r| r.live())
                    .filter_map(|r| match r.stage {
                        Stage::Outbound => {
                            let d = r.destination.as_deref().unwrap_or_default();
                            orphaned(&self.config_destinations, &destinations, d).then(|| {
                                (r.id, reason("destination", &self.config_destinations, d))
                            })
                        }
                        Stage::Routed => {
                            let h = r.handler.as_deref().unwrap_or_default();
                            orphaned(&self.config_handlers, &handlers, h)
                                .then(|| (r.id, reason("handler", &self.config_handlers, h)))
                        }
                        Stage::Ingress | Stage::Response => None,
                    })
                    .collect();
                note("put_config", &format!("orphans={}", orphans.len().min(2)));
                for (id, reason) in orphans {
                    let message = self.finish(t, id, RowStatus::Dead, Some(&reason));
                    self.finalize(t, message);
                }
                self.config_version += 1;
                self.config_destinations = destinations;
                self.config_handlers = handlers;
                self.audit(DEFAULT_ORG);
                Ok(Outcome::ConfigVersion(self.config_version))
            }
            Command::ExpireRecords => {
                let before = self.idempotency.len();
                self.idempotency
                    .retain(|_, (_, expires)| expires.is_none_or(|e| e > t));
                Ok(Outcome::Count((before - self.idempotency.len()) as u64))
            }
            other => panic!("the model does not generate {}", other.name()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Comparing and checking
// ---------------------------------------------------------------------------------------------

fn same_response(expected: &Response, actual: &Response) -> bool {
    match (expected, actual) {
        (Err(Rejection::Invalid { .. }), Err(Rejection::Invalid { .. })) => true,
        (Ok(Outcome::Audit { seq: a, .. }), Ok(Outcome::Audit { seq: b, .. })) => a == b,
        _ => expected == actual,
    }
}

/// The documented canonical encoding (audit.rs module docs), written out independently.
fn audit_hash(prev: &[u8; 32], row: &AuditRow) -> [u8; 32] {
    fn field(buf: &mut Vec<u8>, s: Option<&str>) {
        match s {
            None => buf.push(0),
            Some(s) => {
                buf.push(1);
                buf.extend_from_slice(&u32::try_from(s.len()).expect("short").to_be_bytes());
                buf.extend_from_slice(s.as_bytes());
            }
        }
    }
    let mut buf = Vec::new();
    buf.extend_from_slice(&row.seq.to_be_bytes());
    buf.extend_from_slice(&row.ts.to_be_bytes());
    field(&mut buf, row.actor.as_deref());
    field(&mut buf, Some(&row.action));
    field(&mut buf, row.channel_id.as_deref());
    field(&mut buf, Some(&row.org));
    field(&mut buf, row.detail.as_deref());
    let mut h = Sha256::new();
    h.update(prev);
    h.update(&buf);
    h.finalize().into()
}

fn check_audit(sm: &StateMachine<MemStore>, model: &Model) -> Result<(), TestCaseError> {
    let reader = sm.read();
    for org in ["default", "acme"] {
        let expected = model.audit_counts.get(org).copied().unwrap_or(0);
        let v = reader.audit_verify(org, None).expect("verify");
        prop_assert!(v.ok, "audit chain of {org} does not verify: {v:?}");
        prop_assert_eq!(v.count, expected, "audit count of {}", org);
        let rows = reader.audit_list(org, 0, usize::MAX).expect("audit list");
        prop_assert_eq!(rows.len() as u64, expected);
        let mut prev = [0u8; 32];
        for (i, row) in rows.iter().enumerate() {
            prop_assert_eq!(row.seq, i as u64);
            prop_assert_eq!(&row.org, org);
            prop_assert_eq!(row.prev_hash, prev, "prev_hash of {} row {}", org, i);
            prop_assert_eq!(
                row.hash,
                audit_hash(&prev, row),
                "hash of {} row {}",
                org,
                i
            );
            prev = row.hash;
        }
        let head = reader.audit_anchor(org).expect("anchor");
        prop_assert_eq!(head.count, expected);
        prop_assert_eq!(head.head_hash, prev);
    }
    Ok(())
}

/// Everything the model knows, compared with the real state; then the model-independent
/// invariants on the real state alone.
fn check_state(
    sm: &StateMachine<MemStore>,
    model: &Model,
    index: u64,
    actual: &Response,
) -> Result<(), TestCaseError> {
    let reader = sm.read();
    let meta = sm.meta();
    let t = model.clock;
    prop_assert_eq!(meta.clock, t, "clock");
    prop_assert_eq!(meta.last_applied, index);
    prop_assert_eq!(meta.next_row_id, model.next_row, "row counter");
    prop_assert_eq!(meta.next_message_id, model.next_message, "message counter");
    prop_assert_eq!(
        reader.config().expect("config").version,
        model.config_version,
        "config version"
    );

    // Rows, one by one (consumed rows are gone in both).
    let mut real_rows = Vec::new();
    for id in 0..model.next_row {
        let real = reader.row(RowId(id)).expect("row read");
        let expected = model.rows.get(&id).map(MRow::to_work_row);
        prop_assert_eq!(&real, &expected, "row {}", id);
        real_rows.extend(real);
    }
    prop_assert!(reader
        .row(RowId(model.next_row))
        .expect("row read")
        .is_none());

    // Row counters by stage and status.
    for stage in Stage::ALL {
        for status in RowStatus::ALL {
            let n = real_rows
                .iter()
                .filter(|r| r.stage == stage && r.status == status)
                .count() as u64;
            prop_assert_eq!(
                meta.row_counts[stage as usize][status as usize],
                n,
                "count {:?}/{:?}",
                stage,
                status
            );
        }
    }

    // Messages and the finalizer fixpoint.
    for (id, m) in model.messages.iter().enumerate() {
        let view = reader
            .message(MessageId(id as u64))
            .expect("message read")
            .expect("message exists");
        prop_assert_eq!(view.message.status, m.status, "status of message {}", id);
        prop_assert_eq!(&view.message.channel_id, &m.channel);
        prop_assert_eq!(&view.message.idempotency_key, &m.key);
        let events: Vec<MEvent> = view
            .events
            .iter()
            .map(|e| (e.ts, e.event, e.destination.clone(), e.detail.clone()))
            .collect();
        prop_assert_eq!(&events, &m.events, "events of message {}", id);
        let rows: Vec<(Stage, RowStatus)> = view.rows.iter().map(|r| (r.stage, r.status)).collect();
        if m.finalized
            && !rows
                .iter()
                .any(|(_, s)| matches!(s, RowStatus::Pending | RowStatus::Inflight))
        {
            let verdict = model_verdict(view.message.status, &rows);
            prop_assert!(
                verdict.is_none_or(|v| v == view.message.status),
                "message {} finalized as {:?} but its rows {:?} say {:?}",
                id,
                view.message.status,
                rows,
                verdict
            );
        }
    }
    prop_assert!(reader
        .message(MessageId(model.next_message))
        .expect("read")
        .is_none());

    // Lanes: depth, FIFO order, inflight count, live holder.
    for stage in FIFO_STAGES {
        for name in lane_names(stage) {
            let key = (stage, name.to_string());
            let view = reader.lane(stage, name).expect("lane read");
            let mut pending: Vec<&MRow> = model
                .rows
                .values()
                .filter(|r| r.lane() == key && r.status == RowStatus::Pending)
                .collect();
            pending.sort_by_key(|r| (r.created_at, r.id));
            let inflight = model
                .rows
                .values()
                .filter(|r| r.lane() == key && r.status == RowStatus::Inflight)
                .count();
            prop_assert_eq!(view.depth, pending.len() as u64, "depth of {}", view.lane);
            prop_assert_eq!(
                view.oldest_created_at,
                pending.first().map(|r| r.created_at)
            );
            prop_assert_eq!(view.inflight, inflight as u64);
            let holder = model
                .lanes
                .get(&key)
                .and_then(|l| l.lease.clone())
                .filter(|(_, expires)| *expires >= t);
            prop_assert_eq!(
                view.holder.map(|h| (h.owner, h.expires_at)),
                holder,
                "holder of {}",
                view.lane
            );
            let order = reader.lane_order(stage, name, 10_000).expect("lane order");
            let expected: Vec<RowId> = pending.iter().map(|r| RowId(r.id)).collect();
            prop_assert_eq!(order, expected, "FIFO order of {}", view.lane);
        }
    }

    // Transform state.
    for ns in NAMESPACES {
        prop_assert_eq!(
            reader.namespace_version(ns).expect("read"),
            model.namespaces.get(ns).copied().unwrap_or(0)
        );
        for key in STATE_KEYS {
            let real = reader
                .state_entry(ns, key)
                .expect("read")
                .map(|e| (e.value, e.set_at, e.message_id.0));
            prop_assert_eq!(
                real,
                model.state.get(&(ns.to_string(), key.to_string())).cloned()
            );
        }
    }

    // FIFO, on the real state only: a newly claimed row (fenced by this entry; an owner's own
    // claim handed back keeps its older fence) was the lane's head.
    let newly_claimed = match actual {
        Ok(Outcome::FifoClaimed(Ok(c))) if c.fence.0 == index => Some(c),
        _ => None,
    };
    if let Some(claimed) = newly_claimed {
        let row = reader
            .row(claimed.row_id)
            .expect("read")
            .expect("claimed row exists");
        let lane = row.lane();
        for other in real_rows.iter().filter(|r| r.lane() == lane) {
            prop_assert!(
                !(other.status == RowStatus::Pending
                    && (other.created_at, other.id) < (row.created_at, row.id)),
                "FIFO: claimed row {} of {} while older row {} (created {}) is pending",
                row.id,
                lane,
                other.id,
                other.created_at
            );
            prop_assert!(
                !(other.status == RowStatus::Inflight
                    && other.claim.as_ref().is_some_and(|c| c.lease_expires_at < t)),
                "FIFO: row {} of {} left inflight under an expired lease",
                other.id,
                lane
            );
        }
    }

    // Lane exclusivity.
    {
        for stage in FIFO_STAGES {
            for name in lane_names(stage) {
                let Some(holder) = reader.lane(stage, name).expect("lane read").holder else {
                    continue;
                };
                for r in real_rows
                    .iter()
                    .filter(|r| r.stage == stage && r.lane_name() == name)
                {
                    let Some(claim) = &r.claim else { continue };
                    if model.fifo_fences.contains(&claim.fence.0) && claim.lease_expires_at >= t {
                        prop_assert_eq!(
                            &claim.owner,
                            &holder.owner,
                            "lane {}:{} held by {} while row {} is still claimed by {} until {} (t = {})",
                            stage.as_str(),
                            name,
                            holder.owner,
                            r.id,
                            claim.owner,
                            claim.lease_expires_at,
                            t
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

/// Extra checks of a RecordAudit response against the stored row.
fn check_audit_response(
    sm: &StateMachine<MemStore>,
    envelope: &Envelope,
    t: Millis,
    actual: &Response,
) -> Result<(), TestCaseError> {
    let (
        Command::RecordAudit(RecordAudit {
            action,
            channel,
            org,
            detail,
            author: AuditAuthor::Principal,
        }),
        Ok(Outcome::Audit { seq, hash }),
    ) = (&envelope.command, actual)
    else {
        return Ok(());
    };
    let org = org.as_deref().unwrap_or(DEFAULT_ORG);
    let rows = sm.read().audit_list(org, *seq, 1).expect("audit list");
    prop_assert_eq!(rows.len(), 1);
    let row = &rows[0];
    prop_assert_eq!(&hex::encode(row.hash), hash);
    prop_assert_eq!(&row.action, action);
    prop_assert_eq!(&row.channel_id, channel);
    prop_assert_eq!(&row.detail, detail);
    prop_assert_eq!(row.ts, t);
    let actor = (!envelope.actor.is_empty()).then(|| envelope.actor.clone());
    prop_assert_eq!(&row.actor, &actor);
    Ok(())
}

fn run(ops: &[(Step, Op)]) -> Result<(), TestCaseError> {
    let mut sm = StateMachine::open(MemStore::new()).expect("open");
    let mut model = Model::new();
    let mut now = START_MS;
    for (i, (step, op)) in ops.iter().enumerate() {
        let index = i as u64 + 1;
        now = step.apply(now);
        let command = model.command(index, op);
        // Every lease is taken, and every claimed row acted on or taken back, by one principal
        // ("operator"): owner names belong to the principal that claims under them
        // (rules::lease_owner) and a row's claim to its principal (rules::claim_owner), which
        // the model does not track.
        let leases = matches!(
            command,
            Command::ClaimReady(_)
                | Command::ClaimNextFifo(_)
                | Command::DoneThenClaimNext(_)
                | Command::RenewLeases(_)
                | Command::ReleaseLane(_)
                | Command::RouteHandoff(_)
                | Command::Handoff(_)
                | Command::TransformHandoff(_)
                | Command::MarkDone(_)
                | Command::CompleteWithResponse(_)
                | Command::IngressHandoff(_)
                | Command::MarkFailed(_)
                | Command::DeadLetterNow(_)
                | Command::ResetStaleInflight(_)
                | Command::RecoverInflightOnPromotion(_)
        );
        let actor = if index.is_multiple_of(7) && !leases {
            ""
        } else {
            "operator"
        };
        let envelope = Envelope::new(now, actor, command);
        // The API's idle-poll shortcut: whenever the read-only check says a FIFO claim hands
        // out nothing, the claim must answer exactly that.
        let idle = match &envelope.command {
            Command::ClaimNextFifo(ClaimNextFifo {
                stage, lane, owner, ..
            }) if !lane.is_empty() && !owner.is_empty() => sm
                .read()
                .fifo_idle_answer(*stage, lane, owner, now.max(sm.meta().clock))
                .expect("idle answer"),
            _ => None,
        };
        let expected = model.apply(index, &envelope);
        let actual = sm.apply(index, &envelope).expect("store");
        tally(&envelope.command, &actual);
        if let Some(empty) = idle {
            if !matches!(&actual, Err(Rejection::Invalid { .. })) {
                prop_assert_eq!(
                    &actual,
                    &Ok(Outcome::FifoClaimed(Err(empty))),
                    "step {}: the idle check disagrees with the claim",
                    index
                );
            }
        }
        prop_assert!(
            same_response(&expected, &actual),
            "step {} {:?}\n  expected {:?}\n  actual   {:?}",
            index,
            envelope,
            expected,
            actual
        );
        check_audit_response(&sm, &envelope, model.clock, &actual)?;
        check_state(&sm, &model, index, &actual)?;
        check_audit(&sm, &model)?;
    }
    // Anchors: the current head verifies; a rewritten or longer anchor does not.
    let reader = sm.read();
    for org in ["default", "acme"] {
        let head = reader.audit_anchor(org).expect("anchor");
        prop_assert!(
            reader
                .audit_verify(org, Some((head.count, head.head_hash)))
                .expect("verify")
                .ok
        );
        prop_assert!(
            !reader
                .audit_verify(org, Some((head.count + 1, head.head_hash)))
                .expect("verify")
                .ok
        );
        if head.count > 0 {
            let mut bad = head.head_hash;
            bad[0] ^= 1;
            prop_assert!(
                !reader
                    .audit_verify(org, Some((head.count, bad)))
                    .expect("verify")
                    .ok
            );
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Per command: how often it was accepted and how often rejected (by code), over all cases.
/// Printed with `RAFTLANE_MODEL_STATS=1` (and `--nocapture`) to see what the generator reaches.
static STATS: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

fn tally(command: &Command, response: &Response) {
    let what = match response {
        Ok(Outcome::FifoClaimed(Ok(_))) => "ok:claimed".to_string(),
        Ok(Outcome::FifoClaimed(Err(e))) => format!(
            "ok:{}",
            format!("{e:?}").split([' ', '{']).next().unwrap_or("")
        ),
        Ok(Outcome::Claimed(rows)) => format!("ok:{}", rows.len().min(2)),
        Ok(Outcome::Count(n)) => format!("ok:{}", (*n).min(2)),
        Ok(Outcome::HandedOff(b)) => format!("ok:{b}"),
        Ok(Outcome::Failed { dead, .. }) => format!("ok:dead={dead}"),
        Ok(Outcome::Enqueued { duplicate, .. }) => format!("ok:dup={duplicate}"),
        Ok(_) => "ok".to_string(),
        Err(r) => format!("err:{}", r.code()),
    };
    *STATS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(format!("{:<16} {what}", command.name()))
        .or_insert(0) += 1;
}

/// A model-side observation for the stats (e.g. how many orphans a config change ended).
fn note(command: &str, what: &str) {
    *STATS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(format!("{command:<16} model:{what}"))
        .or_insert(0) += 1;
}

#[test]
fn real_machine_matches_the_model() {
    let config = Config {
        cases: cases(),
        max_shrink_iters: 4096,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    // Mostly long sequences (deep pipelines), some short ones.
    let strategy = prop_oneof![
        1 => proptest::collection::vec((step(), op()), 1..20),
        4 => proptest::collection::vec((step(), op()), 20..=60),
    ];
    let result = runner.run(&strategy, |ops| run(&ops));
    if std::env::var("RAFTLANE_MODEL_STATS").is_ok_and(|v| v == "1") {
        for (what, n) in STATS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            println!("{n:>8}  {what}");
        }
    }
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-written scenarios (sanity of the harness itself) and demonstrations of bugs
// ---------------------------------------------------------------------------------------------

/// Drive both the model and the machine through explicit commands, asserting agreement.
struct Harness {
    sm: StateMachine<MemStore>,
    model: Model,
    index: u64,
}

impl Harness {
    fn new() -> Self {
        Self {
            sm: StateMachine::open(MemStore::new()).expect("open"),
            model: Model::new(),
            index: 0,
        }
    }

    fn apply(&mut self, now: Millis, command: Command) -> Response {
        self.index += 1;
        let envelope = Envelope::new(now, "operator", command);
        let expected = self.model.apply(self.index, &envelope);
        let actual = self.sm.apply(self.index, &envelope).expect("store");
        assert!(
            same_response(&expected, &actual),
            "expected {expected:?}\nactual   {actual:?}"
        );
        check_state(&self.sm, &self.model, self.index, &actual).expect("state");
        actual
    }

    fn apply_ok(&mut self, now: Millis, command: Command) -> Outcome {
        self.apply(now, command).expect("accepted")
    }
}

fn enqueue(channel: &str, key: Option<&str>) -> Command {
    Command::EnqueueIngress(EnqueueIngress {
        channel: channel.to_string(),
        raw: "r".to_string(),
        fields: MessageFields::default(),
        idempotency_key: key.map(str::to_string),
    })
}

fn fifo(stage: Stage, lane: &str, owner: &str, ttl_ms: u64) -> Command {
    Command::ClaimNextFifo(ClaimNextFifo {
        stage,
        lane: lane.to_string(),
        owner: owner.to_string(),
        ttl_ms,
    })
}

fn fifo_claimed(r: Response) -> ClaimedRow {
    match r {
        Ok(Outcome::FifoClaimed(Ok(c))) => c,
        other => panic!("expected a FIFO claim, got {other:?}"),
    }
}

#[test]
fn harness_walks_a_message_through_the_pipeline() {
    let mut h = Harness::new();
    h.apply_ok(1000, enqueue("c1", Some("k1")));
    let dup = h.apply(1001, enqueue("c1", Some("k1")));
    assert_eq!(
        dup,
        Ok(Outcome::Enqueued {
            message_id: MessageId(0),
            duplicate: true
        })
    );
    let c = fifo_claimed(h.apply(1002, fifo(Stage::Ingress, "c1", "w1", 1000)));
    h.apply_ok(
        1003,
        Command::Handoff(Handoff {
            row_id: c.row_id,
            fence: c.fence,
            deliveries: vec![
                Delivery {
                    destination: "d1".into(),
                    payload: "a".into(),
                },
                Delivery {
                    destination: "d2".into(),
                    payload: "b".into(),
                },
            ],
            disposition: HandoffDisposition::Routed,
        }),
    );
    let a = fifo_claimed(h.apply(1004, fifo(Stage::Outbound, "d1", "w1", 1000)));
    let b = fifo_claimed(h.apply(1005, fifo(Stage::Outbound, "d2", "w2", 1000)));
    h.apply_ok(
        1006,
        Command::MarkDone(MarkDone {
            row_id: a.row_id,
            fence: a.fence,
        }),
    );
    let failed = h.apply(
        1007,
        Command::MarkFailed(MarkFailed {
            row_id: b.row_id,
            fence: b.fence,
            error: "boom".into(),
            retry: RetryPolicy {
                max_attempts: Some(1),
                backoff_ms: 10,
                multiplier_milli: 2000,
                max_backoff_ms: 100,
            },
        }),
    );
    assert_eq!(
        failed,
        Ok(Outcome::Failed {
            dead: true,
            next_attempt_at: 1007
        })
    );
    assert_eq!(h.model.messages[0].status, MessageStatus::Error);
    // Replay recovers only the dead row; the done sibling is not re-sent.
    assert_eq!(
        h.apply(
            1008,
            Command::Replay(Replay {
                message_id: MessageId(0)
            })
        ),
        Ok(Outcome::Count(1))
    );
    assert_eq!(h.model.messages[0].status, MessageStatus::Routed);
    check_audit(&h.sm, &h.model).expect("audit");
}

#[test]
fn harness_clamps_a_backwards_clock() {
    let mut h = Harness::new();
    h.apply_ok(10_000, enqueue("c1", None));
    let c = fifo_claimed(h.apply(10_000, fifo(Stage::Ingress, "c1", "w1", 500)));
    // A new leader whose clock is far behind cannot make the lease live again or expire it early.
    assert_eq!(
        h.apply(
            2_000,
            Command::ReclaimExpired(ReclaimExpired { stage: None })
        ),
        Ok(Outcome::Count(0))
    );
    assert_eq!(h.model.clock, 10_000);
    h.apply_ok(
        10_501,
        Command::ReclaimExpired(ReclaimExpired { stage: None }),
    );
    assert_eq!(
        h.apply(
            3_000,
            Command::MarkDone(MarkDone {
                row_id: c.row_id,
                fence: c.fence
            })
        ),
        Err(Rejection::StaleFence {
            row: c.row_id,
            presented: c.fence,
            current: None
        })
    );
}

// Regressions: the bugs this property test found, each as its shortest scenario. Model and
// machine are driven together, so these also pin the model's reading of the rules.

/// Guards lane.rs `LaneLease::is_live`: a lane lease is live up to and including its
/// `expires_at`, as a row lease is reclaimed only once `lease_expires_at < t`. A claim stamps
/// both with the same `t + ttl`; were the lane lease expired at exactly that instant, a second
/// owner would take the lane while step 2 left the first owner's row inflight, and be handed the
/// *next* row while the older head is still out: two owners in one lane, FIFO overtaken.
#[test]
fn regression_lane_takeover_at_the_exact_expiry_instant() {
    let mut h = Harness::new();
    h.apply_ok(1000, enqueue("c1", None)); // row 0: the head
    h.apply_ok(1000, enqueue("c1", None)); // row 1
    let head = fifo_claimed(h.apply(1000, fifo(Stage::Ingress, "c1", "w1", 500)));
    assert_eq!(head.row_id, RowId(0));
    // t = 1500 = both leases' expiry: the lane is still w1's.
    assert_eq!(
        h.apply(1500, fifo(Stage::Ingress, "c1", "w2", 500)),
        Ok(Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
            holder: "w1".into(),
            expires_at: 1500
        })))
    );
    // One millisecond later both leases have lapsed: w2 gets the stranded head back, not row 1.
    let c = fifo_claimed(h.apply(1501, fifo(Stage::Ingress, "c1", "w2", 500)));
    assert_eq!((c.row_id, c.attempts), (RowId(0), 2));
}

/// Guards lane.rs `acquire`: re-acquiring a lane one already holds never shortens its lease.
/// Were `expires_at = t + ttl` set unconditionally, a second `ClaimNextFifo` by the same owner
/// with a shorter ttl would shorten the lane lease below the lease of a row it still holds; once
/// the lane lease lapsed another owner would enter and be handed a younger row while the older
/// one is still inflight under the first owner.
#[test]
fn regression_reacquiring_a_lane_never_shortens_its_lease() {
    let mut h = Harness::new();
    for _ in 0..3 {
        h.apply_ok(1000, enqueue("c1", None)); // rows 0, 1, 2
    }
    let a = fifo_claimed(h.apply(1000, fifo(Stage::Ingress, "c1", "w1", 2000))); // lease 3000
    assert_eq!(a.row_id, RowId(0));
    // w1 claims again with a short ttl (its own row comes back); the leases stay at 3000.
    let b = fifo_claimed(h.apply(1100, fifo(Stage::Ingress, "c1", "w1", 500)));
    assert_eq!(
        (b.row_id, b.fence, b.lease_expires_at),
        (RowId(0), a.fence, 3000)
    );
    assert_eq!(
        h.apply(1700, fifo(Stage::Ingress, "c1", "w2", 500)),
        Ok(Outcome::FifoClaimed(Err(FifoEmpty::LaneBusy {
            holder: "w1".into(),
            expires_at: 3000
        })))
    );
}

/// Guards enqueue.rs `new_message`: reusing an idempotency key whose window has passed removes
/// the old record's `IdempotencyExpiry` entry. Left behind, the next `ExpireRecords` would follow
/// it and delete the *new* record although its message is still in flight, and a producer retry
/// would be accepted as a second message (docs/SPEC.md §3.6: "The record has no expiry while its
/// message is non-terminal").
#[test]
fn regression_expire_records_keeps_a_reused_key_of_an_inflight_message() {
    let mut h = Harness::new();
    let t0 = 1000;
    h.apply_ok(t0, enqueue("c1", Some("k1"))); // message 0
    let c = fifo_claimed(h.apply(t0, fifo(Stage::Ingress, "c1", "w1", 500)));
    // Unrouted: message 0 is terminal, its key's window starts now.
    h.apply_ok(
        t0,
        Command::Handoff(Handoff {
            row_id: c.row_id,
            fence: c.fence,
            deliveries: vec![],
            disposition: HandoffDisposition::Unrouted,
        }),
    );
    let later = t0 + DEDUPE_WINDOW_MS + 1;
    // The key has expired: the same key now names a new message, in flight.
    assert_eq!(
        h.apply(later, enqueue("c1", Some("k1"))),
        Ok(Outcome::Enqueued {
            message_id: MessageId(1),
            duplicate: false
        })
    );
    // Retention runs: nothing may go, message 1 is in flight.
    assert_eq!(
        h.apply(later, Command::ExpireRecords),
        Ok(Outcome::Count(0))
    );
    // A producer retry of message 1 is recognised as a duplicate.
    assert_eq!(
        h.apply(later + 1, enqueue("c1", Some("k1"))),
        Ok(Outcome::Enqueued {
            message_id: MessageId(1),
            duplicate: true
        })
    );
}

/// Regression: `ReleaseLane` while the releasing owner still holds an inflight row used to let
/// the next owner take the younger row behind it. A live row of another owner now keeps the
/// lane busy (claim.rs, step 0).
#[test]
fn regression_release_lane_with_a_row_in_flight_keeps_the_lane_busy() {
    let mut h = Harness::new();
    h.apply_ok(1000, enqueue("c1", None)); // row 0
    h.apply_ok(1000, enqueue("c1", None)); // row 1
    let a = fifo_claimed(h.apply(1000, fifo(Stage::Ingress, "c1", "w1", 5000)));
    assert_eq!(a.row_id, RowId(0));
    // w1 shuts down gracefully but row 0 is still out under its claim.
    h.index += 1;
    let released =
        h.sm.apply(
            h.index,
            &Envelope::new(
                1100,
                "operator",
                Command::ReleaseLane(ReleaseLane {
                    stage: Stage::Ingress,
                    lane: "c1".into(),
                    owner: "w1".into(),
                }),
            ),
        )
        .expect("store");
    assert_eq!(released, Ok(Outcome::Count(1)));
    h.index += 1;
    let next =
        h.sm.apply(
            h.index,
            &Envelope::new(1200, "operator", fifo(Stage::Ingress, "c1", "w2", 5000)),
        )
        .expect("store");
    match next {
        Ok(Outcome::FifoClaimed(Ok(c))) => assert_eq!(
            c.row_id,
            RowId(0),
            "w2 was handed row 1 while row 0 is still out under w1"
        ),
        Ok(Outcome::FifoClaimed(Err(_))) => {}
        other => panic!("unexpected {other:?}"),
    }
}
