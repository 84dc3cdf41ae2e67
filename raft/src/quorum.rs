//! Check-quorum: a leader that has not heard from a majority of the voters for a while stops
//! acting as one.
//!
//! Why: openraft 0.9 keeps a leader a leader until it hears of a higher term, which a leader cut
//! off from both followers never does. For a whole 60 s partition the isolated leader kept
//! taking writes (each waiting forever for a commit that could not come), `/readyz` answered 200
//! and `/v1/cluster` said it led, while the other two had long elected another leader. openraft
//! offers no way to make a leader step down (`trigger().elect()` ignores a leader), but it does
//! report, in its metrics, how long ago a quorum last acknowledged the leader
//! (`millis_since_quorum_ack`). So this node judges its own leadership by that: beyond
//! [`crate::Tuning::check_quorum_ms`] (two election timeouts) of silence it reports no leader,
//! refuses writes and linearizable reads, and fails the writes waiting on it, until a quorum
//! answers again (or a new leader's higher term demotes it for good).

use crate::types::{NodeId, RaftMetrics};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What this node's metrics say about its leadership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lead {
    /// It leads, and a quorum acknowledged it within the bound.
    Leads { voters: BTreeSet<NodeId>, term: u64 },
    /// openraft says it leads, but no quorum has acknowledged it for `silent_ms`.
    Lost { silent_ms: u64, bound_ms: u64 },
    /// It does not lead.
    Follows,
}

impl Lead {
    /// Why a leader that lost its quorum takes no writes (for errors and `/readyz`).
    pub(crate) fn reason(&self) -> Option<String> {
        match self {
            Lead::Lost {
                silent_ms,
                bound_ms,
            } => Some(format!(
                "no quorum: this node was elected leader but no majority of the voters has \
                 answered it for {silent_ms} ms (bound {bound_ms} ms); it may be cut off while \
                 the others elect another leader, so it takes no writes"
            )),
            _ => None,
        }
    }
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct QuorumCheck {
    bound: Duration,
    /// When this node was first seen leading in a term without any quorum acknowledgement yet
    /// (`millis_since_quorum_ack` is `None` until the first one).
    unacked_since: Mutex<Option<(u64, Instant)>>,
}

impl QuorumCheck {
    pub(crate) fn new(bound: Duration) -> Self {
        Self {
            bound,
            unacked_since: Mutex::new(None),
        }
    }

    /// Judge `m` (this node's metrics, `self_id` its id).
    pub(crate) fn judge(&self, m: &RaftMetrics, self_id: NodeId) -> Lead {
        if m.state != openraft::ServerState::Leader || m.current_leader != Some(self_id) {
            return Lead::Follows;
        }
        let silent_ms = match m.millis_since_quorum_ack {
            Some(ms) => ms,
            None => {
                let mut since = self.unacked_since.lock().unwrap_or_else(|p| p.into_inner());
                let started = match *since {
                    Some((term, at)) if term == m.current_term => at,
                    _ => {
                        let now = Instant::now();
                        *since = Some((m.current_term, now));
                        now
                    }
                };
                u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
            }
        };
        let bound_ms = u64::try_from(self.bound.as_millis()).unwrap_or(u64::MAX);
        if silent_ms > bound_ms {
            return Lead::Lost {
                silent_ms,
                bound_ms,
            };
        }
        Lead::Leads {
            voters: m.membership_config.membership().voter_ids().collect(),
            term: m.current_term,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leader_metrics(acked: Option<u64>) -> RaftMetrics {
        let mut m = RaftMetrics::new_initial(1);
        m.state = openraft::ServerState::Leader;
        m.current_leader = Some(1);
        m.current_term = 3;
        m.millis_since_quorum_ack = acked;
        m
    }

    #[test]
    fn a_leader_unheard_beyond_the_bound_has_lost_its_quorum() {
        let check = QuorumCheck::new(Duration::from_millis(4_000));
        assert!(matches!(
            check.judge(&leader_metrics(Some(300)), 1),
            Lead::Leads { term: 3, .. }
        ));
        let lost = check.judge(&leader_metrics(Some(4_001)), 1);
        assert_eq!(
            lost,
            Lead::Lost {
                silent_ms: 4_001,
                bound_ms: 4_000
            }
        );
        assert!(lost.reason().is_some_and(|r| r.contains("no quorum")));
        // Another node's leadership, or none, is not this node's to judge.
        assert_eq!(check.judge(&leader_metrics(Some(9_000)), 2), Lead::Follows);
        let mut follower = leader_metrics(Some(9_000));
        follower.state = openraft::ServerState::Follower;
        assert_eq!(check.judge(&follower, 1), Lead::Follows);
    }

    #[test]
    fn a_new_leader_not_yet_acknowledged_gets_the_bound_from_its_election() {
        let check = QuorumCheck::new(Duration::from_millis(50));
        assert!(matches!(
            check.judge(&leader_metrics(None), 1),
            Lead::Leads { .. }
        ));
        std::thread::sleep(Duration::from_millis(80));
        assert!(matches!(
            check.judge(&leader_metrics(None), 1),
            Lead::Lost { .. }
        ));
        // A new term starts the wait again.
        let mut next = leader_metrics(None);
        next.current_term = 4;
        assert!(matches!(check.judge(&next, 1), Lead::Leads { .. }));
    }
}
