//! Learners that cannot catch up leave the cluster again.
//!
//! A learner at an address where nothing answers (a typo, a node never started, the leader's
//! own address) is replicated to for ever: the leader retries it every heartbeat and, once it is
//! behind the purged log, snapshots it, ~14 KB/s of calls that can never land. So a learner
//! gets a bound: its matched index within `Tuning::learner_lag_threshold` entries of the
//! leader's, and answering, within `Tuning::learner_catchup_timeout_ms`. The add call waits for
//! that itself ([`crate::RaftNode::add_learner`]); afterwards the leader's watch
//! ([`crate::learner_removal`])
//! looks at every learner once a second and removes one that has been behind for longer than
//! the bound. Either way the node logs why, and `GET /v1/cluster` lists the learners this node
//! removed ([`LearnerWatch::recent`]).

use crate::membership_rules::View;
use crate::types::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many removed learners a node remembers for `GET /v1/cluster`.
const KEEP_REMOVED: usize = 16;

/// A learner removed because it did not catch up in time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("learner {id} at {addr} was removed: {reason}")]
pub struct Stalled {
    pub id: NodeId,
    pub addr: String,
    /// What it held and what it should have, in words.
    pub reason: String,
    /// When this node removed it (ms since the epoch, this node's clock).
    pub removed_at_ms: u64,
}

impl Stalled {
    /// Learner `id` at `addr`, as `view` saw it after `bound`.
    pub fn new(id: NodeId, addr: &str, view: &View, bound: Duration) -> Self {
        let matched = view.matched.get(&id).copied().flatten();
        let reason = format!(
            "it did not catch up within {} s: {}, holding the log to index {} while the leader \
             is at {} (it must be within {} entries); check that a raftlane node with id {id} \
             is listening at {addr} and that it can reach the others",
            bound.as_secs_f64(),
            if view.answering.contains(&id) {
                "answering"
            } else {
                "not answering"
            },
            matched.map_or_else(|| "none".to_string(), |m| m.to_string()),
            view.last_index,
            view.max_lag,
        );
        Self {
            id,
            addr: addr.to_string(),
            reason,
            removed_at_ms: crate::clock::now_ms(),
        }
    }
}

/// The learners a leader is waiting on, and the ones it removed.
#[derive(Debug, Default)]
pub(crate) struct LearnerWatch {
    /// When each learner was first seen behind (cleared once it is caught up).
    behind_since: Mutex<BTreeMap<NodeId, Instant>>,
    removed: Mutex<VecDeque<Stalled>>,
}

impl LearnerWatch {
    pub(crate) fn caught_up(&self, id: NodeId) {
        lock(&self.behind_since).remove(&id);
    }

    pub(crate) fn removed(&self, stalled: Stalled) {
        lock(&self.behind_since).remove(&stalled.id);
        let mut removed = lock(&self.removed);
        removed.push_back(stalled);
        while removed.len() > KEEP_REMOVED {
            removed.pop_front();
        }
    }

    /// The learners this node removed, oldest first (at most [`KEEP_REMOVED`]).
    pub(crate) fn recent(&self) -> Vec<Stalled> {
        lock(&self.removed).iter().cloned().collect()
    }

    /// The learners of `view` behind for longer than `bound` (each noted when first seen
    /// behind; a caught-up one forgotten; one no longer a learner forgotten).
    pub(crate) fn overdue(
        &self,
        view: &View,
        bound: Duration,
        now: Instant,
    ) -> Vec<(NodeId, String)> {
        let mut behind = lock(&self.behind_since);
        behind.retain(|id, _| view.nodes.contains_key(id) && !view.voters.contains(id));
        let mut out = Vec::new();
        for (id, addr) in &view.nodes {
            if view.voters.contains(id) {
                continue;
            }
            if view.current(*id) {
                behind.remove(id);
                continue;
            }
            let since = *behind.entry(*id).or_insert(now);
            if now.duration_since(since) >= bound {
                out.push((*id, addr.clone()));
            }
        }
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn a_learner_behind_for_longer_than_the_bound_is_overdue() {
        let mut view = View {
            leader: 1,
            nodes: (1..=4).map(|i| (i, format!("n{i}:1"))).collect(),
            voters: BTreeSet::from([1, 2, 3]),
            last_index: 100,
            matched: BTreeMap::from([(2, Some(100)), (3, Some(100)), (4, None)]),
            answering: BTreeSet::from([2, 3]),
            max_lag: 10,
        };
        let watch = LearnerWatch::default();
        let t0 = Instant::now();
        let bound = Duration::from_secs(5);
        assert!(watch.overdue(&view, bound, t0).is_empty());
        assert!(watch
            .overdue(&view, bound, t0 + Duration::from_secs(4))
            .is_empty());
        assert_eq!(
            watch.overdue(&view, bound, t0 + Duration::from_secs(5)),
            vec![(4, "n4:1".to_string())]
        );
        // Caught up in the meantime: forgotten, and a later lag starts a new bound.
        view.matched.insert(4, Some(95));
        view.answering.insert(4);
        assert!(watch
            .overdue(&view, bound, t0 + Duration::from_secs(6))
            .is_empty());
        view.answering.remove(&4);
        assert!(watch
            .overdue(&view, bound, t0 + Duration::from_secs(7))
            .is_empty());
        assert_eq!(
            watch
                .overdue(&view, bound, t0 + Duration::from_secs(12))
                .len(),
            1
        );
    }
}
