//! `raftlane node --rejoin`: start this node from nothing and let it catch up from the leader
//! (a snapshot, then the log), after a damaged state (`STATE DAMAGED`) or a damaged raft log.
//!
//! Wiping a replica is safe only while the others hold every acknowledged write without it:
//! an acknowledged write is on a majority of the voters, so if this node was one of them and
//! the others cannot form a majority by themselves, this node may hold its last copy. So before
//! anything is removed, the other members named in `--peers` are asked (`GET /readyz`, and
//! `GET /v1/cluster` with the admin token for whom they follow): at least a majority of the
//! voters must answer ready with a leader other than this node. Otherwise the start is refused
//! (exit 75, retry later) and nothing is touched.
//!
//! `--rejoin` is an operator's one-off: a supervisor that always passes it would wipe the node
//! at every restart (safely, by the rule above, but at the cost of a full copy each time).

use crate::server::NodeOptions;
use hyper::{Method, StatusCode};
use raftlane_api::peer::{base_url, PeerClient};
use raftlane_client::tls::ClientTls;
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

/// How one other member answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Peer {
    /// Ready, following a leader that is not this node (or not saying whom).
    Ready,
    NotReady(String),
}

/// Check that the others can go on without this node, then wipe its copy (keeping its vote).
/// Also turns `--bootstrap` off: a node that rejoins must not initialize a cluster of its own.
pub async fn prepare(opts: &mut NodeOptions, tls: Option<&ClientTls>) -> Result<(), RejoinError> {
    let client = PeerClient::with_tls(Duration::from_secs(3), tls);
    let others: Vec<(u64, String)> = opts
        .peers
        .iter()
        .filter(|(id, _)| **id != opts.id)
        .map(|(id, addr)| (*id, addr.clone()))
        .collect();
    let voters = opts.peers.len().max(1);
    let majority = voters / 2 + 1;
    let mut ready = 0;
    let mut detail = Vec::new();
    for (id, addr) in &others {
        match ask(&client, opts, addr).await {
            Peer::Ready => ready += 1,
            Peer::NotReady(why) => detail.push(format!("node {id}: {why}")),
        }
    }
    if ready < majority {
        return Err(RejoinError::LastCopy {
            ready,
            others: others.len(),
            voters,
            majority,
            detail: if detail.is_empty() {
                "no other members".into()
            } else {
                detail.join("; ")
            },
        });
    }
    let wiped = raftlane_raft::rejoin::wipe_keeping_vote(&opts.data_dir).await?;
    tracing::warn!(
        removed = ?wiped.removed,
        vote = ?wiped.vote,
        ready,
        "REJOIN: wiped this node's state, raft log and snapshots (vote kept); it catches up \
         from the leader"
    );
    opts.bootstrap = false;
    Ok(())
}

/// Whether the member at `addr` is ready and follows a leader other than this node.
async fn ask(client: &PeerClient, opts: &NodeOptions, addr: &str) -> Peer {
    let base = base_url(addr);
    match client
        .call(Method::GET, &format!("{base}/readyz"), &[], Vec::new())
        .await
    {
        Ok((StatusCode::OK, _, _)) => {}
        Ok((status, _, body)) => {
            let body: String = String::from_utf8_lossy(&body).chars().take(120).collect();
            return Peer::NotReady(format!("/readyz answered {status}: {body}"));
        }
        Err(e) => return Peer::NotReady(format!("no answer ({e})")),
    }
    // Ready means it knows a leader; right after this node went down that may still be this
    // node (until an election timeout passes). Ask whom, where the admin token is accepted.
    let auth = [("authorization", format!("Bearer {}", opts.admin_token))];
    if let Ok((StatusCode::OK, _, body)) = client
        .call(
            Method::GET,
            &format!("{base}/v1/cluster"),
            &auth,
            Vec::new(),
        )
        .await
    {
        let leader = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("leader_id").and_then(serde_json::Value::as_u64));
        if leader == Some(opts.id) {
            return Peer::NotReady("still follows this node as its leader".into());
        }
    }
    Peer::Ready
}
