//! Helpers for `tests/commands/`: a harness that applies commands at increasing log indexes
//! under a test-controlled clock, plus short constructors for the commands the tests repeat.
//!
//! Named `cmd_support` so it cannot collide with helper modules of other test targets.

use raftlane_statemachine::model::audit::AuditRow;
use raftlane_statemachine::model::config::RetryPolicy;
use raftlane_statemachine::model::message::{EventKind, MessageStatus};
use raftlane_statemachine::model::row::{Stage, WorkRow};
use raftlane_statemachine::query::MessageView;
use raftlane_statemachine::wire::command::{
    ClaimNextFifo, ClaimReady, Delivery, EnqueueIngress, EnqueueMessage, HandlerWork, MarkDone,
    MessageFields, ReleaseLane,
};
use raftlane_statemachine::wire::layout_v1::{self, CommandV1};
use raftlane_statemachine::{
    ClaimedRow, Command, Envelope, FifoEmpty, MemStore, MessageId, Millis, Outcome, Rejection,
    Response, RowId, StateMachine,
};

/// A command with the envelope's header fields a test sets (test mode's client time, the
/// request's fingerprint, the operator's word). A plain [`Command`] is one with none.
#[derive(Clone, Debug)]
pub struct Proposal {
    pub command: Command,
    pub client_time: Option<Millis>,
    pub fingerprint: Option<[u8; 32]>,
    pub as_operator: bool,
}

impl From<Command> for Proposal {
    fn from(command: Command) -> Self {
        Self {
            command,
            client_time: None,
            fingerprint: None,
            as_operator: false,
        }
    }
}

impl Proposal {
    fn envelope(self, now_ms: Millis, actor: &str) -> Envelope {
        Envelope::new(now_ms, actor, self.command)
            .at_client_time(self.client_time)
            .fingerprinted(self.fingerprint)
            .as_operator(self.as_operator)
    }
}

/// `command` vouched for as an operator's.
pub fn as_operator(command: impl Into<Proposal>) -> Proposal {
    Proposal {
        as_operator: true,
        ..command.into()
    }
}

/// `command` applied at exactly `now_ms` (test mode).
pub fn at_client_time(now_ms: Millis, command: impl Into<Proposal>) -> Proposal {
    Proposal {
        client_time: Some(now_ms),
        ..command.into()
    }
}

/// `command` bound to a request whose fingerprint is 32 bytes of `fingerprint`.
pub fn bound(fingerprint: u8, command: impl Into<Proposal>) -> Proposal {
    Proposal {
        fingerprint: Some([fingerprint; 32]),
        ..command.into()
    }
}

/// What a format 1/2 `command` stands for: its wrappers as header fields
/// ([`layout_v1::split`]), what a node replaying such a log applies.
pub fn legacy(command: CommandV1) -> Proposal {
    let (wrappers, command) = layout_v1::split(command);
    Proposal {
        command,
        client_time: wrappers.client_time,
        fingerprint: wrappers.fingerprint,
        as_operator: wrappers.as_operator,
    }
}

/// The clock reading the harness starts at.
pub const T0: Millis = 1_000_000;

/// The actor commands are applied as unless a test says otherwise.
pub const ACTOR: &str = "tester";

pub struct Harness {
    pub sm: StateMachine<MemStore>,
    /// Index of the last applied entry; the next command gets `index + 1`.
    pub index: u64,
    /// The `now_ms` the next command is stamped with.
    pub now: Millis,
}

impl Harness {
    pub fn new() -> Self {
        Self {
            sm: StateMachine::open(MemStore::new()).expect("open"),
            index: 0,
            now: T0,
        }
    }

    /// Move the proposer's clock forward by `ms`.
    pub fn advance(&mut self, ms: u64) {
        self.now += ms;
    }

    /// The log index the next command will be applied at (= the fence a claim there gets).
    pub fn next_index(&self) -> u64 {
        self.index + 1
    }

    /// The state machine's clock `t`.
    pub fn clock(&self) -> Millis {
        self.sm.meta().clock
    }

    pub fn run(&mut self, command: impl Into<Proposal>) -> Response {
        self.run_as(ACTOR, command)
    }

    pub fn run_as(&mut self, actor: &str, command: impl Into<Proposal>) -> Response {
        let now = self.now;
        self.run_at(now, actor, command)
    }

    /// Apply with an explicit `now_ms` (which may be behind the clock).
    pub fn run_at(
        &mut self,
        now_ms: Millis,
        actor: &str,
        command: impl Into<Proposal>,
    ) -> Response {
        self.index += 1;
        self.sm
            .apply(self.index, &command.into().envelope(now_ms, actor))
            .expect("store error")
    }

    /// Apply as `actor` under a request id (a retried write carries the same one).
    pub fn run_request(
        &mut self,
        actor: &str,
        request_id: &str,
        command: impl Into<Proposal>,
    ) -> Response {
        self.index += 1;
        let envelope = command
            .into()
            .envelope(self.now, actor)
            .with_request_id(request_id);
        self.sm.apply(self.index, &envelope).expect("store error")
    }

    /// Apply a command that must succeed.
    #[track_caller]
    pub fn ok(&mut self, command: impl Into<Proposal>) -> Outcome {
        self.ok_as(ACTOR, command)
    }

    #[track_caller]
    pub fn ok_as(&mut self, actor: &str, command: impl Into<Proposal>) -> Outcome {
        let command = command.into();
        let name = command.command.name();
        match self.run_as(actor, command) {
            Ok(outcome) => outcome,
            Err(rejection) => panic!("{name} rejected: {rejection:?}"),
        }
    }

    /// Bring the state machine's clock up to `now` with a command that changes nothing else
    /// (releasing a lane nobody holds).
    pub fn tick(&mut self) {
        let out = self.ok(Command::ReleaseLane(ReleaseLane {
            stage: Stage::Ingress,
            lane: "tick".into(),
            owner: "tick".into(),
        }));
        assert_eq!(out, Outcome::Count(0));
        assert_eq!(self.clock(), self.now);
    }

    pub fn digest(&self) -> [u8; 32] {
        self.sm.digest().expect("digest")
    }

    /// Apply a command that must be rejected with exactly `expected`, and check that the
    /// logical state (digest, counters, clock) is byte-identical before and after.
    #[track_caller]
    pub fn reject(&mut self, command: impl Into<Proposal>, expected: Rejection) {
        self.reject_as(ACTOR, command, expected);
    }

    #[track_caller]
    pub fn reject_as(&mut self, actor: &str, command: impl Into<Proposal>, expected: Rejection) {
        // Observe the current time first, so the only thing the rejected command could
        // change is state, not the clock.
        self.tick();
        let before = self.digest();
        let meta_before = self.sm.meta().clone();
        let response = self.run_as(actor, command);
        assert_eq!(response, Err(expected));
        assert_eq!(
            self.digest(),
            before,
            "a rejected command changed the state"
        );
        let mut meta_after = self.sm.meta().clone();
        meta_after.last_applied = meta_before.last_applied;
        assert_eq!(
            meta_after, meta_before,
            "a rejected command changed the counters"
        );
    }

    /// Apply a command that must succeed with `expected` without changing the state.
    #[track_caller]
    pub fn no_change(&mut self, command: Command, expected: Outcome) {
        self.no_change_as(ACTOR, command, expected);
    }

    /// [`Harness::no_change`] as `actor`.
    #[track_caller]
    pub fn no_change_as(&mut self, actor: &str, command: Command, expected: Outcome) {
        self.tick();
        let before = self.digest();
        assert_eq!(self.run_as(actor, command), Ok(expected));
        assert_eq!(self.digest(), before, "the command changed the state");
    }

    // --- producing ---

    pub fn enqueue(&mut self, channel: &str, raw: &str) -> MessageId {
        enqueued(self.ok(enqueue_cmd(channel, raw, None))).0
    }

    /// Enqueue with an idempotency key: `(id, duplicate)`.
    pub fn enqueue_key(&mut self, channel: &str, raw: &str, key: &str) -> (MessageId, bool) {
        enqueued(self.ok(enqueue_cmd(channel, raw, Some(key))))
    }

    /// A routed message with one outbound row per `(destination, payload)` (single-step path).
    pub fn enqueue_message(&mut self, channel: &str, deliveries: &[(&str, &str)]) -> MessageId {
        let out = self.ok(Command::EnqueueMessage(EnqueueMessage {
            channel: channel.into(),
            raw: "raw".into(),
            fields: MessageFields::default(),
            deliveries: deliveries.iter().map(|(d, p)| delivery(d, p)).collect(),
            idempotency_key: None,
        }));
        enqueued(out).0
    }

    // --- claiming ---

    pub fn claim_ready(
        &mut self,
        stage: Stage,
        limit: u32,
        owner: &str,
        ttl_ms: u64,
    ) -> Vec<ClaimedRow> {
        match self.ok(claim_ready_cmd(stage, limit, owner, ttl_ms)) {
            Outcome::Claimed(rows) => rows,
            other => panic!("expected Claimed, got {other:?}"),
        }
    }

    /// Claim exactly one row of `stage` as "worker" with a 30 s lease.
    #[track_caller]
    pub fn claim_one(&mut self, stage: Stage) -> ClaimedRow {
        let mut rows = self.claim_ready(stage, 1, "worker", 30_000);
        assert_eq!(rows.len(), 1, "expected one claimable {stage:?} row");
        rows.remove(0)
    }

    pub fn fifo(
        &mut self,
        stage: Stage,
        lane: &str,
        owner: &str,
        ttl_ms: u64,
    ) -> Result<ClaimedRow, FifoEmpty> {
        match self.ok(fifo_cmd(stage, lane, owner, ttl_ms)) {
            Outcome::FifoClaimed(r) => r,
            other => panic!("expected FifoClaimed, got {other:?}"),
        }
    }

    pub fn mark_done(&mut self, row: &ClaimedRow) -> Response {
        self.run(Command::MarkDone(MarkDone {
            row_id: row.row_id,
            fence: row.fence,
        }))
    }

    /// Claim the outbound row of a fresh single-delivery message to `destination`.
    /// (The caller makes sure no older row to `destination` is pending.)
    #[track_caller]
    pub fn outbound_claimed(&mut self, channel: &str, destination: &str) -> ClaimedRow {
        let id = self.enqueue_message(channel, &[(destination, "payload")]);
        let out = self.ok(Command::ClaimReady(ClaimReady {
            stage: Stage::Outbound,
            limit: 1,
            channel: None,
            destination: Some(destination.into()),
            owner: "worker".into(),
            ttl_ms: 30_000,
        }));
        let Outcome::Claimed(mut rows) = out else {
            panic!("expected Claimed, got {out:?}")
        };
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].message_id, id);
        rows.remove(0)
    }

    // --- reading ---

    #[track_caller]
    pub fn view(&self, id: MessageId) -> MessageView {
        self.sm
            .read()
            .message(id)
            .expect("read")
            .expect("message exists")
    }

    pub fn status(&self, id: MessageId) -> MessageStatus {
        self.view(id).message.status
    }

    pub fn event_kinds(&self, id: MessageId) -> Vec<EventKind> {
        self.view(id).events.iter().map(|e| e.event).collect()
    }

    #[track_caller]
    pub fn row(&self, id: RowId) -> WorkRow {
        self.sm.read().row(id).expect("read").expect("row exists")
    }

    pub fn audit(&self, org: &str) -> Vec<AuditRow> {
        self.sm.read().audit_list(org, 0, 10_000).expect("audit")
    }

    pub fn audit_actions(&self, org: &str) -> Vec<String> {
        self.audit(org).into_iter().map(|r| r.action).collect()
    }
}

pub fn enqueued(outcome: Outcome) -> (MessageId, bool) {
    match outcome {
        Outcome::Enqueued {
            message_id,
            duplicate,
        } => (message_id, duplicate),
        other => panic!("expected Enqueued, got {other:?}"),
    }
}

pub fn enqueue_cmd(channel: &str, raw: &str, key: Option<&str>) -> Command {
    Command::EnqueueIngress(EnqueueIngress {
        channel: channel.into(),
        raw: raw.into(),
        fields: MessageFields::default(),
        idempotency_key: key.map(Into::into),
    })
}

pub fn claim_ready_cmd(stage: Stage, limit: u32, owner: &str, ttl_ms: u64) -> Command {
    Command::ClaimReady(ClaimReady {
        stage,
        limit,
        channel: None,
        destination: None,
        owner: owner.into(),
        ttl_ms,
    })
}

pub fn fifo_cmd(stage: Stage, lane: &str, owner: &str, ttl_ms: u64) -> Command {
    Command::ClaimNextFifo(ClaimNextFifo {
        stage,
        lane: lane.into(),
        owner: owner.into(),
        ttl_ms,
    })
}

pub fn delivery(destination: &str, payload: &str) -> Delivery {
    Delivery {
        destination: destination.into(),
        payload: payload.into(),
    }
}

pub fn handler(name: &str, payload: &str) -> HandlerWork {
    HandlerWork {
        handler: name.into(),
        payload: payload.into(),
    }
}

pub fn retry(
    max_attempts: Option<u32>,
    backoff_ms: u64,
    multiplier_milli: u32,
    max_backoff_ms: u64,
) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        backoff_ms,
        multiplier_milli,
        max_backoff_ms,
    }
}

/// A hex SHA-256-shaped token hash made of one repeated digit.
pub fn token_hash(digit: char) -> String {
    digit.to_string().repeat(64)
}
