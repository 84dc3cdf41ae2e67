//! Writes a follower forwards to the leader travel in batches: one signed call to the leader's
//! `/internal/propose-batch` carries every write forwarded meanwhile, instead of one call each.
//!
//! A follower's clients still get their own answers: the leader proposes the envelopes of a call
//! through its own batcher (so they share its log entries, as its local writes do) and answers
//! each, in order. 64 clients enqueueing through a follower reach 80–85 % of the leader's rate
//! with batched calls, 70 % with one call per forwarded write (pipeline through a follower:
//! +13 %; docs/BENCHMARKS.md, "forwarded writes in batches").
//!
//! A leader that does not know the batch route (an older version during a rolling upgrade)
//! answers 404; the call's writes are then sent one by one to `/internal/propose`.

use super::forward::{call_leader, leader_answer, post_signed};
use super::signing::{PATH_PROPOSE, PATH_PROPOSE_BATCH};
use crate::backend::ProposeError;
use crate::peer::PeerClient;
use hyper::StatusCode;
use raftlane_raft::auth::ClusterAuth;
use raftlane_statemachine::{codec, Envelope, Response};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Semaphore};

/// Most envelopes in one call.
pub const MAX_ENVELOPES: usize = 256;
/// Encoded bytes gathered into one call; an envelope past it waits for the next call (a call
/// always carries at least one envelope, however large).
pub const MAX_CALL_BYTES: usize = 4 * 1024 * 1024;
/// Calls to the leader in flight at once: while they travel, the next call's writes gather.
const MAX_IN_FLIGHT: usize = 4;
/// Forwarded writes waiting for a call before callers are slowed down.
const QUEUE: usize = 16 * 1024;

/// What the leader answers for one proposal, as its own batcher would have.
pub type Answer = Result<(u64, Response), ProposeError>;

struct Forward {
    /// The leader's node id (what the call is signed for) and address.
    leader: u64,
    addr: String,
    envelope: Envelope,
    size: usize,
    reply: oneshot::Sender<Answer>,
}

/// Handle to the relay task. Cheap to clone.
#[derive(Clone)]
pub struct Relay {
    tx: mpsc::Sender<Forward>,
    counts: Arc<Counts>,
}

/// What `/metrics` shows of the relay: writes per call is how well forwarding batches.
#[derive(Default)]
struct Counts {
    calls: AtomicU64,
    writes: AtomicU64,
}

impl Relay {
    /// Start the relay task (inside a tokio runtime). Calls are signed with `auth`; without it
    /// every forward fails as `Fatal`, as this node cannot prove itself to the leader.
    pub fn start(peer: PeerClient, auth: Option<ClusterAuth>) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        let counts = Arc::new(Counts::default());
        let leader = Leader {
            peer,
            auth,
            counts: counts.clone(),
        };
        tokio::spawn(run(Arc::new(leader), rx));
        Self { tx, counts }
    }

    /// Calls made to a leader and the writes they carried, since this node started.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.counts.calls.load(Ordering::Relaxed),
            self.counts.writes.load(Ordering::Relaxed),
        )
    }

    /// Propose `envelope` at the leader (node `leader`, at `addr`) and return its answer.
    pub async fn propose(&self, leader: u64, addr: &str, envelope: Envelope) -> Answer {
        let (reply, answer) = oneshot::channel();
        let size = codec::encoded_len(&envelope);
        self.tx
            .send(Forward {
                leader,
                addr: addr.to_string(),
                envelope,
                size,
                reply,
            })
            .await
            .map_err(|_| ProposeError::Fatal("the forwarding queue is closed".into()))?;
        answer
            .await
            .map_err(|_| ProposeError::Unknown("the forwarded write was dropped".into()))?
    }
}

/// The gathering loop: each call takes every forward waiting when a slot frees up.
async fn run(leader: Arc<Leader>, mut rx: mpsc::Receiver<Forward>) {
    let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    // A forward that did not fit the previous call (another leader, or too many bytes) opens
    // the next one.
    let mut held: Option<Forward> = None;
    loop {
        let first = match held.take() {
            Some(f) => f,
            None => match rx.recv().await {
                Some(f) => f,
                None => return,
            },
        };
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let target = first.leader;
        let addr = first.addr.clone();
        let mut bytes = first.size;
        let mut call = vec![first];
        while call.len() < MAX_ENVELOPES {
            let Ok(next) = rx.try_recv() else { break };
            if next.leader != target || next.addr != addr || bytes + next.size > MAX_CALL_BYTES {
                held = Some(next);
                break;
            }
            bytes += next.size;
            call.push(next);
        }
        let leader = leader.clone();
        tokio::spawn(async move {
            leader.send(target, &addr, call).await;
            drop(permit);
        });
    }
}

/// How this node reaches the leader.
struct Leader {
    peer: PeerClient,
    auth: Option<ClusterAuth>,
    counts: Arc<Counts>,
}

impl Leader {
    /// Send one call to the leader at `addr` and hand every caller its answer.
    async fn send(&self, target: u64, addr: &str, call: Vec<Forward>) {
        let (replies, envelopes): (Vec<_>, Vec<_>) =
            call.into_iter().map(|f| (f.reply, f.envelope)).unzip();
        let n = envelopes.len();
        self.counts.calls.fetch_add(1, Ordering::Relaxed);
        self.counts.writes.fetch_add(n as u64, Ordering::Relaxed);
        let body = codec::encode(&envelopes);
        let sent = post_signed(
            &self.peer,
            self.auth.as_ref(),
            target,
            addr,
            PATH_PROPOSE_BATCH,
            body,
        )
        .await;
        let answers = match sent {
            Ok((StatusCode::NOT_FOUND, _)) => self.one_by_one(target, addr, envelopes).await,
            Ok((status, bytes)) => match leader_answer::<Vec<Answer>>(status, &bytes) {
                Ok(answers) if answers.len() == n => answers,
                Ok(answers) => {
                    let e = ProposeError::Unknown(format!(
                        "the leader answered {} of {n} forwarded writes",
                        answers.len()
                    ));
                    vec![Err(e); n]
                }
                Err(e) => vec![Err(e); n],
            },
            Err(e) => vec![Err(e); n],
        };
        for (reply, answer) in replies.into_iter().zip(answers) {
            let _ = reply.send(answer);
        }
    }

    /// For a leader without the batch route: each envelope in its own call, all at once.
    async fn one_by_one(&self, target: u64, addr: &str, envelopes: Vec<Envelope>) -> Vec<Answer> {
        let calls = envelopes.iter().map(|envelope| {
            call_leader::<(u64, Response)>(
                &self.peer,
                self.auth.as_ref(),
                target,
                addr,
                PATH_PROPOSE,
                codec::encode(envelope),
            )
        });
        futures::future::join_all(calls).await
    }
}
