//! Group commit on the proposer: concurrent proposals share one Raft entry, so they share one
//! append and one fsync on every node.
//!
//! openraft 0.9 appends (and fsyncs) each `client_write` on its own, which caps a leader at a few
//! thousand writes a second on an ordinary disk. The batcher queues proposals; while a batch is
//! being committed, new ones accumulate, and the next batch takes all of them (up to a size
//! limit) as one [`Command::Batch`]. A lone proposal is sent as it is. Each proposal still gets
//! its own response, and the state machine applies each envelope as if it had its own entry.

use crate::backend::{Backend, ProposeError};
use raftlane_statemachine::command::MAX_BATCH;
use raftlane_statemachine::{codec, Command, Envelope, Outcome, Response};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Semaphore};

/// Batches being committed at once: one in the log's fsync, one forming behind it.
const MAX_IN_FLIGHT: usize = 2;
/// Encoded bytes in one batch (well below the codec's and the transport's limits).
const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Proposals waiting for a batch before callers are slowed down.
const QUEUE: usize = 16 * 1024;

type Reply = oneshot::Sender<Result<(u64, Response), ProposeError>>;

struct Pending {
    envelope: Envelope,
    size: usize,
    reply: Reply,
}

/// Handle to the batching task. Cheap to clone.
#[derive(Clone)]
pub struct Batcher {
    tx: mpsc::Sender<Pending>,
}

impl Batcher {
    /// Start the batching task over `backend` (must run inside a tokio runtime).
    pub fn start(backend: Arc<dyn Backend>) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(backend, rx));
        Self { tx }
    }

    /// Propose one envelope; answers with its log index and its own response.
    pub async fn propose(&self, envelope: Envelope) -> Result<(u64, Response), ProposeError> {
        let (reply, answer) = oneshot::channel();
        let size = codec::encode(&envelope).len();
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
    let batch = Envelope::new(crate::app::now_ms(), "", Command::Batch { commands });
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
