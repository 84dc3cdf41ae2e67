//! Group commit on the proposer: concurrent proposals share one Raft entry, so they share one
//! append and one fsync on every node.
//!
//! openraft 0.9 appends (and fsyncs) each `client_write` on its own, which caps a leader at a few
//! thousand writes a second on an ordinary disk. The batcher queues proposals; while a batch is
//! being committed, new ones accumulate, and the next batch takes all of them (up to a size
//! limit) as one [`Command::Batch`]. A lone proposal is sent as it is. Each proposal still gets
//! its own response, and the state machine applies each envelope as if it had its own entry.
//!
//! Read indexes are coalesced the same way ([`Batcher::read_index`]): openraft confirms each
//! read index with its own round of heartbeats to every follower, so concurrent linearizable
//! reads (idle workers polling, say) share one round instead.

use crate::backend::{Backend, ProposeError};
use raftlane_statemachine::wire::command::{Batch, MAX_BATCH};
use raftlane_statemachine::{codec, Command, Envelope, Outcome, Response};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Semaphore};

/// Batches being committed at once: one in the log's fsync, one forming behind it.
///
/// openraft 0.9 fsyncs every appended entry on its own, so more batches in flight only make
/// them smaller (fewer commands per fsync) and queue them behind each other: 2 was the fastest
/// of 1, 2, 4 and 8, and of 2 and 3 with the log's WAL recycled (docs/BENCHMARKS.md, "Batcher:
/// batches in flight" and "the log's WAL recycled").
const MAX_IN_FLIGHT: usize = 2;
/// Encoded bytes in one batch (well below the codec's and the transport's limits).
const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Proposals waiting for a batch before callers are slowed down.
const QUEUE: usize = 16 * 1024;
/// Proposals waiting that make the batcher [`Batcher::saturated`]: about one batch of a
/// saturated pipeline (~20 commands per entry).
const SATURATED_QUEUE: usize = 16;

type Reply = oneshot::Sender<Result<(u64, Response), ProposeError>>;

struct Pending {
    envelope: Envelope,
    size: usize,
    reply: Reply,
}

type ReadReply = oneshot::Sender<Result<u64, ProposeError>>;

/// Handle to the batching task. Cheap to clone.
#[derive(Clone)]
pub struct Batcher {
    tx: mpsc::Sender<Pending>,
    reads: mpsc::Sender<ReadReply>,
}

impl Batcher {
    /// Start the batching tasks over `backend` (must run inside a tokio runtime).
    pub fn start(backend: Arc<dyn Backend>) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(backend.clone(), rx));
        let (reads, read_rx) = mpsc::channel(QUEUE);
        tokio::spawn(run_reads(backend, read_rx));
        Self { tx, reads }
    }

    /// Whether a full batch is already queued behind the ones committing.
    ///
    /// Then one more command only joins a large batch that is appended and fsynced anyway:
    /// cheaper than a leadership confirmation of its own. Callers that could answer from a
    /// linearizable read instead of proposing (idle claims) propose while this holds.
    ///
    /// A few waiting proposals do not count: at a steady moderate load some are always waiting,
    /// and proposing every idle poll then doubled the log (10 commands per pipeline message
    /// instead of ~5 at 300 msgs/s; docs/BENCHMARKS.md, "Idle polls under a moderate load") and
    /// the snapshots and memory with it.
    pub fn saturated(&self) -> bool {
        self.tx.max_capacity() - self.tx.capacity() >= SATURATED_QUEUE
    }

    /// The backend's read index (see [`Backend::read_index`]), shared with concurrent callers.
    ///
    /// Every caller gets the answer of a confirmation that *started after it asked*: callers
    /// that arrive while one is in flight wait for the next. So the index is as good as one
    /// fetched by the caller alone: a linearizable read that waits for it observes every write
    /// acknowledged before the call.
    pub async fn read_index(&self) -> Result<u64, ProposeError> {
        let (reply, answer) = oneshot::channel();
        self.reads
            .send(reply)
            .await
            .map_err(|_| ProposeError::Fatal("the read queue is closed".into()))?;
        answer
            .await
            .map_err(|_| ProposeError::Unavailable("the read was dropped".into()))?
    }

    /// Propose one envelope; answers with its log index and its own response.
    pub async fn propose(&self, envelope: Envelope) -> Result<(u64, Response), ProposeError> {
        let (reply, answer) = oneshot::channel();
        let size = codec::encoded_len(&envelope);
        self.tx
            .send(Pending {
                envelope,
                size,
                reply,
            })
            .await
            .map_err(|_| ProposeError::Fatal("the proposal queue is closed".into()))?;
        answer
            .await
            .map_err(|_| ProposeError::Unavailable("the proposal was dropped".into()))?
    }
}

async fn run(backend: Arc<dyn Backend>, mut rx: mpsc::Receiver<Pending>) {
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    while let Some(first) = rx.recv().await {
        // Wait for a free slot first: proposals arriving meanwhile join this batch.
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let mut bytes = first.size;
        let mut group = vec![first];
        while group.len() < MAX_BATCH && bytes < MAX_BATCH_BYTES {
            match rx.try_recv() {
                Ok(p) => {
                    bytes += p.size;
                    group.push(p);
                }
                Err(_) => break,
            }
        }
        let backend = backend.clone();
        tokio::spawn(async move {
            commit(backend.as_ref(), group).await;
            drop(permit);
        });
    }
}

/// One read index at a time, for everyone who asked before it started.
async fn run_reads(backend: Arc<dyn Backend>, mut rx: mpsc::Receiver<ReadReply>) {
    while let Some(first) = rx.recv().await {
        let mut waiters = vec![first];
        while let Ok(w) = rx.try_recv() {
            waiters.push(w);
        }
        let answer = backend.read_index().await;
        for w in waiters {
            let _ = w.send(answer.clone());
        }
    }
}

async fn commit(backend: &dyn Backend, mut group: Vec<Pending>) {
    if group.len() == 1 {
        if let Some(p) = group.pop() {
            let _ = p.reply.send(backend.propose(p.envelope).await);
        }
        return;
    }
    let (replies, commands): (Vec<Reply>, Vec<Envelope>) =
        group.into_iter().map(|p| (p.reply, p.envelope)).unzip();
    let n = commands.len();
    let batch = Envelope::new(
        raftlane_raft::now_ms(),
        "",
        Command::Batch(Batch { commands }),
    );
    match backend.propose(batch).await {
        Ok((index, Ok(Outcome::Batch(responses)))) if responses.len() == n => {
            for (reply, response) in replies.into_iter().zip(responses) {
                let _ = reply.send(Ok((index, response)));
            }
        }
        Ok((_, other)) => {
            let e = ProposeError::Fatal(format!("unexpected batch outcome: {other:?}"));
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
        Err(e) => {
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}
