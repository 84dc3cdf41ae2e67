//! `raftlane node --rejoin`: start this node from nothing and let it catch up from the leader
//! (a snapshot, then the log), after a damaged state (`STATE DAMAGED`) or a damaged raft log.
//!
//! Wiping a replica is safe only while the others hold every acknowledged write without it:
//! an acknowledged write is on a majority of the voters, so if this node was one of them and
//! the others cannot form a majority by themselves, this node may hold its last copy. So before
//! anything is removed, the other members named in `--peers` are asked (`GET /readyz`, and
//! `GET /v1/cluster` with the admin token for whom they follow and which voters the cluster
//! has; voters added since `--peers` was written are asked too): at least a majority of the
//! cluster's voters must answer ready with a leader other than this node. Otherwise the start is refused
//! (exit 75, retry later) and nothing is touched.
//!
//! `--rejoin` is an operator's one-off: a supervisor that always passes it would wipe the node
//! at every restart (safely, by the rule above, but at the cost of a full copy each time).

use crate::exit_status::ExitStatus;
use crate::server::NodeOptions;
use hyper::{Method, StatusCode};
use raftlane_api::peer::{base_url, PeerClient};
use raftlane_client::contract::ClusterStatus;
use raftlane_client::tls::ClientTls;
use std::collections::BTreeMap;
use std::time::Duration;

/// `--rejoin` did not wipe the node.
#[derive(Debug, thiserror::Error)]
pub enum RejoinError {
    /// Too few other members are up and following a leader: this node may hold the last copy.
    #[error(
        "REJOIN REFUSED: only {ready} of the {others} other members answer ready with a leader \
         other than this node ({detail}); a majority of the {voters} voters ({majority}) must, \
         or this node may hold the last copy of acknowledged writes. Nothing was removed: bring \
         the others up, then start this node with --rejoin again"
    )]
    LastCopy {
        ready: usize,
        others: usize,
        voters: usize,
        majority: usize,
        detail: String,
    },
    #[error("REJOIN FAILED: {0}")]
    Wipe(#[from] raftlane_raft::rejoin::WipeError),
}

impl RejoinError {
    /// Too few members up is a condition that passes (retry later); a failed wipe is not.
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            RejoinError::LastCopy { .. } => ExitStatus::RetryLater,
            RejoinError::Wipe(_) => ExitStatus::Failed,
        }
    }
}

/// How one other member answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Peer {
    /// Ready, following a leader that is not this node (or not saying whom).
    Ready,
    NotReady(String),
}

/// The voters of the cluster, as the members asked see it: `(id, HTTP address)`.
type Voters = Vec<(u64, String)>;

/// Check that the others can go on without this node, then wipe its copy (keeping its vote).
/// Also turns `--bootstrap` off: a node that rejoins must not initialize a cluster of its own.
///
/// The voters are the cluster's, not `--peers`'s: the members named in `--peers` are asked
/// first, and the membership they report (the largest term's) names the voters to count,
/// including any added since the node's flags were written; those are asked too. Only
/// without any answer does `--peers` stand for the membership.
pub async fn prepare(opts: &mut NodeOptions, tls: Option<&ClientTls>) -> Result<(), RejoinError> {
    let client = PeerClient::with_tls(Duration::from_secs(3), tls);
    let mut asked: BTreeMap<u64, Peer> = BTreeMap::new();
    let mut membership: Option<(u64, Voters)> = None;
    for (id, addr) in opts.peers.iter().filter(|(id, _)| **id != opts.id) {
        let (peer, seen) = ask(&client, opts, addr).await;
        asked.insert(*id, peer);
        if let Some((term, voters)) = seen {
            if membership.as_ref().is_none_or(|(t, _)| term > *t) {
                membership = Some((term, voters));
            }
        }
    }
    let voters: Voters = match membership {
        Some((_, voters)) => voters,
        None => opts
            .peers
            .iter()
            .map(|(id, addr)| (*id, addr.clone()))
            .collect(),
    };
    for (id, addr) in voters.iter().filter(|(id, _)| *id != opts.id) {
        if !asked.contains_key(id) {
            let (peer, _) = ask(&client, opts, addr).await;
            asked.insert(*id, peer);
        }
    }
    let ready = judge(opts.id, &voters, &asked)?;
    let wiped = raftlane_raft::rejoin::wipe_keeping_vote(&opts.data_dir).await?;
    tracing::warn!(
        removed = ?wiped.removed,
        vote = ?wiped.vote,
        ready,
        voters = voters.len(),
        "REJOIN: wiped this node's state, raft log and snapshots (vote kept); it catches up \
         from the leader"
    );
    opts.bootstrap = false;
    Ok(())
}

/// How many of the other voters answered ready: enough when a majority of all the voters
/// (this node counted among them) did.
fn judge(me: u64, voters: &Voters, asked: &BTreeMap<u64, Peer>) -> Result<usize, RejoinError> {
    let counted = voters.len().max(1);
    let majority = counted / 2 + 1;
    let mut ready = 0;
    let mut detail = Vec::new();
    for (id, _) in voters.iter().filter(|(id, _)| *id != me) {
        match asked.get(id) {
            Some(Peer::Ready) => ready += 1,
            Some(Peer::NotReady(why)) => detail.push(format!("node {id}: {why}")),
            None => detail.push(format!("node {id}: not asked")),
        }
    }
    if ready < majority {
        return Err(RejoinError::LastCopy {
            ready,
            others: voters.iter().filter(|(id, _)| *id != me).count(),
            voters: counted,
            majority,
            detail: if detail.is_empty() {
                "no other members".into()
            } else {
                detail.join("; ")
            },
        });
    }
    Ok(ready)
}

/// Whether the member at `addr` is ready and follows a leader other than this node, and the
/// voters it names with its term (when its `/v1/cluster` answered).
async fn ask(client: &PeerClient, opts: &NodeOptions, addr: &str) -> (Peer, Option<(u64, Voters)>) {
    let base = base_url(addr);
    let ready = match client
        .call(Method::GET, &format!("{base}/readyz"), &[], Vec::new())
        .await
    {
        Ok((StatusCode::OK, _, _)) => None,
        Ok((status, _, body)) => {
            let body: String = String::from_utf8_lossy(&body).chars().take(120).collect();
            Some(Peer::NotReady(format!("/readyz answered {status}: {body}")))
        }
        Err(e) => return (Peer::NotReady(format!("no answer ({e})")), None),
    };
    // Ready means it knows a leader; right after this node went down that may still be this
    // node (until an election timeout passes). Ask whom, where the admin token is accepted.
    let auth = [("authorization", format!("Bearer {}", opts.admin_token))];
    let status = match client
        .call(
            Method::GET,
            &format!("{base}/v1/cluster"),
            &auth,
            Vec::new(),
        )
        .await
    {
        Ok((StatusCode::OK, _, body)) => serde_json::from_slice::<ClusterStatus>(&body).ok(),
        _ => None,
    };
    let seen = status.as_ref().map(|s| {
        let voters = s
            .membership
            .iter()
            .filter(|m| m.voter)
            .map(|m| (m.id, m.addr.clone()))
            .collect();
        (s.term, voters)
    });
    let peer = match (ready, &status) {
        (Some(not_ready), _) => not_ready,
        (None, Some(s)) if s.leader_id == Some(opts.id) => {
            Peer::NotReady("still follows this node as its leader".into())
        }
        (None, _) => Peer::Ready,
    };
    (peer, seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voters(ids: &[u64]) -> Voters {
        ids.iter().map(|id| (*id, format!("n{id}:7001"))).collect()
    }

    fn answers(ready: &[u64], down: &[u64]) -> BTreeMap<u64, Peer> {
        ready
            .iter()
            .map(|id| (*id, Peer::Ready))
            .chain(
                down.iter()
                    .map(|id| (*id, Peer::NotReady("no answer".into()))),
            )
            .collect()
    }

    #[test]
    fn a_majority_of_the_clusters_voters_must_be_up_not_of_the_flags() {
        // Three voters, both others up: node 1 may rejoin.
        assert_eq!(
            judge(1, &voters(&[1, 2, 3]), &answers(&[2, 3], &[])).ok(),
            Some(2)
        );
        // Grown to five since the flags named three: two others up are not a majority of five,
        // and the voters --peers never named are counted (and reported) too.
        let refused = judge(1, &voters(&[1, 2, 3, 4, 5]), &answers(&[2, 3], &[4]));
        match refused {
            Err(RejoinError::LastCopy {
                ready,
                voters,
                majority,
                detail,
                ..
            }) => {
                assert_eq!((ready, voters, majority), (2, 5, 3));
                assert!(detail.contains("node 4: no answer"), "{detail}");
                assert!(detail.contains("node 5: not asked"), "{detail}");
            }
            other => panic!("refused, not {other:?}"),
        }
        // Three of the four others up: a majority of five.
        assert!(judge(1, &voters(&[1, 2, 3, 4, 5]), &answers(&[2, 3, 4], &[5])).is_ok());
    }

    #[test]
    fn a_lone_node_never_rejoins() {
        assert!(judge(1, &voters(&[1]), &BTreeMap::new()).is_err());
    }
}
