//! What a membership change must not do, judged by the leader against the configuration it
//! holds before the change is appended (docs/SPEC.md §9.5, "Membership").
//!
//! openraft accepts any change it can represent: a voter set with two voters fewer, a learner
//! with id 0 or at the leader's own address (which then replicates to itself, or to nobody, for
//! ever), the same id again at another address (silently kept at the old one). Each of those
//! either loses the cluster's quorum in one step or leaves a member that can never catch up.
//! These rules refuse them before anything is appended; the one place they are asked is
//! [`crate::RaftNode`]'s membership operations, under the membership lock, on the leader, so
//! every path (the API, a follower's forwarded change, the operations of tests) meets them.

use crate::types::NodeId;
use std::collections::{BTreeMap, BTreeSet};

/// Why a membership change is refused: the request's field at fault and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct Refusal {
    /// The request member at fault (`id`, `addr`, `voters`).
    pub field: &'static str,
    pub reason: String,
    /// Bad input in itself (400), or input the cluster's present shape refuses (409).
    pub kind: RefusalKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// The request cannot be right whatever the cluster holds (400).
    Invalid,
    /// The request conflicts with the cluster as it is now (409).
    Conflict,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Refusal {
    Refusal {
        field,
        reason: reason.into(),
        kind: RefusalKind::Invalid,
    }
}

fn conflict(field: &'static str, reason: impl Into<String>) -> Refusal {
    Refusal {
        field,
        reason: reason.into(),
        kind: RefusalKind::Conflict,
    }
}

/// The cluster as the leader sees it when a change arrives.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The leader's own id.
    pub leader: NodeId,
    /// Every member (voters and learners) with its address.
    pub nodes: BTreeMap<NodeId, String>,
    pub voters: BTreeSet<NodeId>,
    /// The leader's last log index.
    pub last_index: u64,
    /// The last index each other member is known to hold (`None`: nothing matched yet).
    pub matched: BTreeMap<NodeId, Option<u64>>,
    /// The members that answered the leader recently (fresh heartbeat answers).
    pub answering: BTreeSet<NodeId>,
    /// How many entries behind the leader a member may be and still count as caught up.
    pub max_lag: u64,
}

impl View {
    /// Whether `id` answers the leader and holds the log to within [`View::max_lag`] entries:
    /// a member the new configuration can count on for its majority. The leader always is.
    pub fn current(&self, id: NodeId) -> bool {
        if id == self.leader {
            return true;
        }
        let matched = self.matched.get(&id).copied().flatten();
        self.answering.contains(&id)
            && matched.is_some_and(|m| m.saturating_add(self.max_lag) >= self.last_index)
    }
}

/// The form an address is compared in: without a scheme or a trailing `/`, host lower-cased.
/// Two members at one address would be one process answering for two ids.
pub fn address_key(addr: &str) -> String {
    let rest = addr
        .strip_prefix("http://")
        .or_else(|| addr.strip_prefix("https://"))
        .unwrap_or(addr);
    rest.trim_end_matches('/').to_ascii_lowercase()
}

/// What adding learner `id` at `addr` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LearnerAdd {
    /// A new member.
    New,
    /// `id` is already a member at this very address: nothing to change (a retried call).
    AlreadyThere,
}

/// Judge adding learner `id` at `addr`: id 0 is no node; an id already in the cluster keeps its
/// address (a different one is refused: remove the node first); an address already another
/// member's (the leader's included) is refused.
pub fn check_add_learner(view: &View, id: NodeId, addr: &str) -> Result<LearnerAdd, Refusal> {
    if id == 0 {
        return Err(invalid("id", "node ids start at 1"));
    }
    let key = address_key(addr);
    if let Some(existing) = view.nodes.get(&id) {
        if address_key(existing) == key {
            return Ok(LearnerAdd::AlreadyThere);
        }
        return Err(conflict(
            "id",
            format!(
                "node {id} is already a member at {existing}; remove it before adding it at \
                 another address"
            ),
        ));
    }
    if let Some((other, _)) = view.nodes.iter().find(|(_, a)| address_key(a) == key) {
        let whose = if *other == view.leader {
            format!("the leader's (node {other})")
        } else {
            format!("node {other}'s")
        };
        return Err(conflict(
            "addr",
            format!("{addr} is already {whose} address: one process cannot be two members"),
        ));
    }
    Ok(LearnerAdd::New)
}

/// Judge making the voter set exactly `voters`: at least one voter, ids from 1, each named
/// once and already a member; at most one voter removed per change; every new voter caught up
/// and answering; and a majority of the new voter set caught up and answering, so that the
/// change can commit and the cluster keep making progress after it.
pub fn check_set_voters(view: &View, voters: &[NodeId]) -> Result<BTreeSet<NodeId>, Refusal> {
    if voters.is_empty() {
        return Err(invalid("voters", "must name at least one node"));
    }
    if voters.contains(&0) {
        return Err(invalid("voters", "node ids start at 1"));
    }
    let set: BTreeSet<NodeId> = voters.iter().copied().collect();
    if set.len() != voters.len() {
        return Err(invalid("voters", "names a node twice"));
    }
    if let Some(unknown) = set.iter().find(|id| !view.nodes.contains_key(id)) {
        return Err(conflict(
            "voters",
            format!("node {unknown} is not a member: add it as a learner first"),
        ));
    }
    let removed: Vec<NodeId> = view.voters.difference(&set).copied().collect();
    if removed.len() > 1 {
        return Err(conflict(
            "voters",
            format!(
                "removes {} voters at once ({}); remove one voter per change, so that every \
                 step keeps a majority of the voters before it",
                removed.len(),
                join(&removed)
            ),
        ));
    }
    let behind = |id: &NodeId| {
        let matched = view.matched.get(id).copied().flatten();
        let answering = view.answering.contains(id);
        format!(
            "node {id} ({}, holds the log to index {}, the leader to {})",
            if answering {
                "answering"
            } else {
                "not answering"
            },
            matched.map_or_else(|| "none".to_string(), |m| m.to_string()),
            view.last_index
        )
    };
    if let Some(lagging) = set
        .iter()
        .find(|id| !view.voters.contains(id) && !view.current(**id))
    {
        return Err(conflict(
            "voters",
            format!(
                "{} has not caught up (within {} entries): a voter that cannot follow weakens \
                 the majority; promote it once it has",
                behind(lagging),
                view.max_lag
            ),
        ));
    }
    let current: Vec<NodeId> = set.iter().copied().filter(|id| view.current(*id)).collect();
    if current.len() * 2 <= set.len() {
        let missing: Vec<String> = set
            .iter()
            .filter(|id| !view.current(**id))
            .map(behind)
            .collect();
        return Err(conflict(
            "voters",
            format!(
                "the new voter set {{{}}} would have only {} of {} voters caught up and \
                 answering, not a majority, so it could not commit anything: {}",
                join(&set.iter().copied().collect::<Vec<_>>()),
                current.len(),
                set.len(),
                missing.join("; ")
            ),
        ));
    }
    Ok(set)
}

fn join(ids: &[NodeId]) -> String {
    ids.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three voters at n1..n3 (1 leads), all caught up and answering, plus learner 4 at n4.
    fn view() -> View {
        View {
            leader: 1,
            nodes: (1..=4).map(|i| (i, format!("n{i}:7001"))).collect(),
            voters: BTreeSet::from([1, 2, 3]),
            last_index: 100,
            matched: (2..=4).map(|i| (i, Some(100))).collect(),
            answering: BTreeSet::from([2, 3, 4]),
            max_lag: 10,
        }
    }

    fn refused(r: Result<impl std::fmt::Debug, Refusal>) -> (&'static str, RefusalKind, String) {
        let e = r.expect_err("refused");
        (e.field, e.kind, e.reason)
    }

    #[test]
    fn learners_need_an_id_and_an_address_of_their_own() {
        let v = view();
        assert_eq!(check_add_learner(&v, 5, "n5:7001"), Ok(LearnerAdd::New));
        assert_eq!(
            check_add_learner(&v, 4, "http://N4:7001/"),
            Ok(LearnerAdd::AlreadyThere)
        );
        assert_eq!(refused(check_add_learner(&v, 0, "n5:7001")).0, "id");
        let (field, kind, reason) = refused(check_add_learner(&v, 5, "http://n1:7001"));
        assert_eq!((field, kind), ("addr", RefusalKind::Conflict));
        assert!(reason.contains("leader"), "{reason}");
        assert_eq!(refused(check_add_learner(&v, 5, "n3:7001")).0, "addr");
        let (field, _, reason) = refused(check_add_learner(&v, 2, "n9:7001"));
        assert_eq!(field, "id");
        assert!(reason.contains("n2:7001"), "{reason}");
    }

    #[test]
    fn one_voter_leaves_per_change_and_a_majority_stays_current() {
        let v = view();
        assert!(check_set_voters(&v, &[1, 2, 3]).is_ok());
        assert!(check_set_voters(&v, &[1, 2]).is_ok());
        assert!(check_set_voters(&v, &[1, 2, 3, 4]).is_ok());
        assert!(
            check_set_voters(&v, &[2, 3]).is_ok(),
            "the leader may leave"
        );
        for bad in [&[][..], &[0, 1, 2][..], &[1, 1, 2][..]] {
            let (field, kind, _) = refused(check_set_voters(&v, bad));
            assert_eq!((field, kind), ("voters", RefusalKind::Invalid), "{bad:?}");
        }
        for bad in [&[1][..], &[4][..], &[1, 2, 3, 9][..]] {
            let (field, kind, _) = refused(check_set_voters(&v, bad));
            assert_eq!((field, kind), ("voters", RefusalKind::Conflict), "{bad:?}");
        }
    }

    #[test]
    fn voters_that_cannot_follow_are_refused() {
        // A learner far behind cannot be promoted.
        let mut v = view();
        v.matched.insert(4, Some(50));
        let (_, _, reason) = refused(check_set_voters(&v, &[1, 2, 3, 4]));
        assert!(reason.contains("node 4"), "{reason}");
        // Node 3 is down: removing node 2 would leave {1, 3}, one of two current.
        let mut v = view();
        v.answering.remove(&3);
        let (_, _, reason) = refused(check_set_voters(&v, &[1, 3]));
        assert!(reason.contains("not a majority"), "{reason}");
        assert!(
            check_set_voters(&v, &[1, 2]).is_ok(),
            "removing the dead one is fine"
        );
    }
}
