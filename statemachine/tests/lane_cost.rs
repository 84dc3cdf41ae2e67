//! ClaimNextFifo's cost must not grow with the depth of the lane it claims from.
//!
//! Every replica applies the log serially, so a FIFO claim that walked the lane (to find the
//! head, or to count it) would make each claim O(depth) on every node, and a deep backlog would
//! slow the whole pipeline exactly when it most needs to drain. `lane.rs` keeps the pending rows
//! of a lane in the `LanePending` index in FIFO order so that the head is one seek. This test
//! holds it to that: it counts what the claim reads from the store (point reads, scans opened,
//! entries stepped over) at two very different depths and requires the same small numbers.

use raftlane_statemachine::model::row::Stage;
use raftlane_statemachine::storage::store::{Direction, KvIter, WriteBatch};
use raftlane_statemachine::wire::command::{
    ClaimNextFifo, Delivery, EnqueueMessage, MessageFields,
};
use raftlane_statemachine::{
    Command, Envelope, MemStore, Outcome, RowId, StateMachine, Store, StoreError, Table,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// A [`MemStore`] that counts the reads made through it.
#[derive(Default)]
struct CountingStore {
    inner: MemStore,
    gets: AtomicU64,
    scans: AtomicU64,
    /// Entries yielded by scans: a lazy scan that is stopped after its first entry costs 1.
    steps: AtomicU64,
}

/// Reads made during one measured operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counts {
    gets: u64,
    scans: u64,
    steps: u64,
}

impl CountingStore {
    fn take(&self) -> Counts {
        Counts {
            gets: self.gets.swap(0, Ordering::Relaxed),
            scans: self.scans.swap(0, Ordering::Relaxed),
            steps: self.steps.swap(0, Ordering::Relaxed),
        }
    }
}

impl Store for CountingStore {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.gets.fetch_add(1, Ordering::Relaxed);
        self.inner.get(table, key)
    }

    fn scan<'a>(
        &'a self,
        table: Table,
        start: &[u8],
        end: Option<&[u8]>,
        dir: Direction,
    ) -> Result<KvIter<'a>, StoreError> {
        self.scans.fetch_add(1, Ordering::Relaxed);
        let steps = &self.steps;
        let inner = self.inner.scan(table, start, end, dir)?;
        Ok(Box::new(inner.inspect(move |_| {
            steps.fetch_add(1, Ordering::Relaxed);
        })))
    }

    fn write(&mut self, batch: WriteBatch) -> Result<(), StoreError> {
        self.inner.write(batch)
    }

    fn clear(&mut self) -> Result<(), StoreError> {
        self.inner.clear()
    }
}

const T0: u64 = 1_000_000;
const LANE: &str = "erp";
/// Rows per EnqueueMessage: the same fan-out at every depth.
const PER_MESSAGE: usize = 100;

struct Lane {
    sm: StateMachine<CountingStore>,
    index: u64,
}

impl Lane {
    /// One outbound lane holding `depth` pending rows (a multiple of [`PER_MESSAGE`]), plus a
    /// second lane of the same depth, so the claimed lane is not alone in its tables.
    fn with_depth(depth: usize) -> Self {
        let mut lane = Lane {
            sm: StateMachine::open(CountingStore::default()).expect("open"),
            index: 0,
        };
        for destination in [LANE, "other"] {
            for _ in 0..depth / PER_MESSAGE {
                let deliveries = (0..PER_MESSAGE)
                    .map(|i| Delivery {
                        destination: destination.to_string(),
                        payload: format!("p{i}"),
                    })
                    .collect();
                let out = lane.run(Command::EnqueueMessage(EnqueueMessage {
                    channel: "orders".into(),
                    raw: "raw".into(),
                    fields: MessageFields::default(),
                    deliveries,
                    idempotency_key: None,
                }));
                assert!(matches!(out, Outcome::Enqueued { .. }), "{out:?}");
            }
        }
        lane
    }

    fn run(&mut self, command: Command) -> Outcome {
        self.index += 1;
        let envelope = Envelope::new(T0 + self.index, "tester", command);
        match self.sm.apply(self.index, &envelope).expect("store error") {
            Ok(outcome) => outcome,
            Err(rejection) => panic!("rejected: {rejection:?}"),
        }
    }

    fn head(&self) -> RowId {
        let order = self
            .sm
            .read()
            .lane_order(Stage::Outbound, LANE, 1)
            .expect("lane order");
        *order.first().expect("a pending head")
    }

    /// Claim the lane's head and return what that read from the store.
    fn claim_head(&mut self) -> Counts {
        let head = self.head();
        self.sm.store().take();
        let out = self.run(Command::ClaimNextFifo(ClaimNextFifo {
            stage: Stage::Outbound,
            lane: LANE.into(),
            owner: "worker".into(),
            ttl_ms: 30_000,
        }));
        let counts = self.sm.store().take();
        match out {
            Outcome::FifoClaimed(Ok(row)) => assert_eq!(row.row_id, head, "not the head"),
            other => panic!("expected the head, got {other:?}"),
        }
        counts
    }
}

/// Upper bound on each count for one FIFO claim. Today a claim makes 2 point reads, opens 2
/// scans (the lane's inflight rows, its pending head) and steps over 1 entry; the slack allows
/// a few more fixed reads, while any walk over the lane would blow far past it at depth 50,000.
const BOUND: u64 = 8;

#[test]
fn claim_next_fifo_reads_the_same_keys_at_any_depth() {
    let mut shallow = Lane::with_depth(100);
    let mut deep = Lane::with_depth(50_000);
    let a = shallow.claim_head();
    let b = deep.claim_head();
    assert_eq!(a, b, "claim cost differs between depth 100 and 50,000");
    for (what, n) in [("gets", b.gets), ("scans", b.scans), ("steps", b.steps)] {
        assert!(n <= BOUND, "{what} = {n} for one claim ({b:?})");
    }
    assert!(b.gets > 0 && b.scans > 0, "nothing counted: {b:?}");
}

/// The counter does see a walk over the lane: the depth query is O(depth) by design, so the
/// bound above would catch a claim that did the same.
#[test]
fn the_counting_store_sees_a_walk_over_the_lane() {
    let deep = Lane::with_depth(50_000);
    deep.sm.store().take();
    let view = deep
        .sm
        .read()
        .lane(Stage::Outbound, LANE)
        .expect("lane view");
    let counts = deep.sm.store().take();
    assert_eq!(view.depth, 50_000);
    assert!(counts.steps >= 50_000, "{counts:?}");
}
