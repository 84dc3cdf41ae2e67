//! Check-quorum: a leader cut off from both followers stops acting as one within the bound.
//!
//! Why: openraft 0.9 keeps a leader a leader until it hears a higher term, so without
//! check-quorum an isolated leader accepts writes and answers none for the whole partition,
//! `/readyz` stays 200 and `/v1/cluster` keeps saying it leads (found by chaos). Within
//! `Tuning::check_quorum_ms` (two election timeouts) of the last quorum acknowledgement, it
//! names no leader, refuses writes and linearizable reads, and the writes already waiting on it
//! end; the other two elect a leader and go on; healed, it rejoins as a follower.
//!
//! The nodes' Raft endpoints are served here, through a switchboard that drops the requests of
//! cut links (it tells a request's sender from the vote the request carries).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use raftlane_raft::types::{NodeId, TypeConfig};
use raftlane_raft::{wire, RaftHttpService, RaftNode, RaftNodeConfig, ReadError, WriteError};
use raftlane_testkit::raft::{assert_writes_present, audit, tuning, SECRET};
use raftlane_testkit::wait::{free_listener, init_tracing, wait_until};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Directed links `(from, to)` whose requests are dropped.
type Cuts = Arc<Mutex<BTreeSet<(NodeId, NodeId)>>>;

/// The node a Raft request comes from: the leader of an append or a snapshot, the candidate
/// of a vote.
fn sender(path: &str, body: &[u8]) -> Option<NodeId> {
    let vote = match path {
        wire::PATH_APPEND => {
            wire::decode::<AppendEntriesRequest<TypeConfig>>(body)
                .ok()?
                .vote
        }
        wire::PATH_VOTE => wire::decode::<VoteRequest<NodeId>>(body).ok()?.vote,
        wire::PATH_SNAPSHOT => {
            wire::decode::<InstallSnapshotRequest<TypeConfig>>(body)
                .ok()?
                .vote
        }
        _ => return None,
    };
    vote.leader_id().voted_for()
}

/// Serve node `me`'s Raft endpoints on `listener`, dropping (closing the connection of) every
/// request over a cut link.
fn serve(me: NodeId, listener: tokio::net::TcpListener, svc: RaftHttpService, cuts: Cuts) {
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (svc, cuts) = (svc.clone(), cuts.clone());
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |req: Request<_>| {
                    let (svc, cuts) = (svc.clone(), cuts.clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let body: Bytes = BodyExt::collect(body)
                            .await
                            .map_err(std::io::Error::other)?
                            .to_bytes();
                        let from = sender(parts.uri.path(), &body);
                        let cut = from
                            .is_some_and(|from| cuts.lock().expect("cuts").contains(&(from, me)));
                        if cut {
                            return Err(std::io::Error::other("link cut"));
                        }
                        let answer: Response<Full<Bytes>> = svc
                            .handle(Request::from_parts(parts, Full::new(body)))
                            .await;
                        Ok::<_, std::io::Error>(answer)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
}

struct Switchboard {
    nodes: BTreeMap<NodeId, RaftNode>,
    cuts: Cuts,
    _root: tempfile::TempDir,
}

impl Switchboard {
    async fn start() -> Switchboard {
        let mut listeners = BTreeMap::new();
        let mut addrs = BTreeMap::new();
        for id in 1..=3 {
            let l = free_listener().await;
            addrs.insert(id, l.local_addr().expect("address").to_string());
            listeners.insert(id, l);
        }
        let root = tempfile::tempdir().expect("a temporary directory");
        let cuts: Cuts = Arc::default();
        let mut nodes = BTreeMap::new();
        for (id, listener) in listeners {
            let mut cfg = RaftNodeConfig::new(
                id,
                addrs[&id].clone(),
                root.path().join(format!("node-{id}")),
                SECRET,
            );
            cfg.peers = addrs.clone();
            cfg.bootstrap = id == 1;
            cfg.tuning = tuning();
            let node = RaftNode::start(cfg)
                .await
                .unwrap_or_else(|e| panic!("start node {id}: {e}"));
            serve(id, listener, node.http_service(), cuts.clone());
            nodes.insert(id, node);
        }
        Switchboard {
            nodes,
            cuts,
            _root: root,
        }
    }

    /// The leader every node among `among` agrees on.
    async fn leader_among(&self, among: &[NodeId]) -> NodeId {
        let mut found = None;
        wait_until("a leader agreed on", || {
            let named: Vec<Option<NodeId>> = among
                .iter()
                .map(|id| self.nodes[id].metrics().current_leader)
                .collect();
            found = named[0]
                .filter(|l| named.iter().all(|n| *n == Some(*l)) && self.nodes[l].is_leader());
            std::future::ready(found.is_some())
        })
        .await;
        found.expect("a leader")
    }

    /// Cut every link between `node` and the others, both ways.
    fn isolate(&self, node: NodeId) {
        let mut cuts = self.cuts.lock().expect("cuts");
        for other in self.nodes.keys().filter(|o| **o != node) {
            cuts.insert((node, *other));
            cuts.insert((*other, node));
        }
    }

    fn heal(&self) {
        self.cuts.lock().expect("cuts").clear();
    }

    async fn shutdown(self) {
        for node in self.nodes.values() {
            node.shutdown().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_isolated_leader_stops_leading_within_the_bound() {
    init_tracing();
    let net = Switchboard::start().await;
    let all: Vec<NodeId> = net.nodes.keys().copied().collect();
    let old = net.leader_among(&all).await;
    let leader = net.nodes[&old].clone();
    let mut acked = Vec::new();
    for i in 0..5 {
        let tag = format!("before-{i}");
        let (index, resp) = leader.client_write(audit(&tag)).await.expect("written");
        acked.push((tag, index, resp));
    }
    let bound = Duration::from_millis(tuning().check_quorum_ms());

    net.isolate(old);
    let cut_at = Instant::now();
    // A write proposed just after the cut: it can never commit; it must not wait forever.
    let pending = tokio::spawn({
        let leader = leader.clone();
        async move {
            let r = leader.client_write(audit("during-cut")).await;
            (r, cut_at.elapsed())
        }
    });

    // Within the bound (plus a metrics tick and the poll), it no longer claims to lead.
    wait_until("the isolated leader gives up leading", || {
        std::future::ready(!leader.is_leader())
    })
    .await;
    let gave_up = cut_at.elapsed();
    assert!(
        gave_up <= bound + Duration::from_millis(1_500),
        "the isolated leader claimed to lead for {gave_up:?} (bound {bound:?})"
    );
    assert!(
        gave_up >= bound.saturating_sub(Duration::from_millis(500)),
        "gave up after {gave_up:?}, before the bound of {bound:?}"
    );
    assert_eq!(leader.metrics().current_leader, None, "it names no leader");
    assert_eq!(leader.leader(), None);
    let reason = leader.leadership_lost().expect("a reason for /readyz");
    assert!(reason.contains("no quorum"), "{reason}");

    // The write that was waiting on it has ended, within the bound.
    let (written, waited) = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("the pending write ended")
        .expect("joined");
    assert!(
        matches!(&written, Err(WriteError::Refused(m)) if m.contains("no quorum")),
        "{written:?}"
    );
    assert!(
        waited <= bound + Duration::from_millis(1_500),
        "waited {waited:?}"
    );

    // New writes and linearizable reads are refused at once.
    let started = Instant::now();
    let refused = leader.client_write(audit("after-cut")).await;
    assert!(
        matches!(&refused, Err(WriteError::Refused(m)) if m.contains("no quorum")),
        "{refused:?}"
    );
    assert!(matches!(
        leader.ensure_linearizable().await,
        Err(ReadError::NoQuorum(_))
    ));
    assert!(started.elapsed() < Duration::from_millis(500));

    // The majority elects another leader and takes writes.
    let others: Vec<NodeId> = all.iter().copied().filter(|n| *n != old).collect();
    let new = net.leader_among(&others).await;
    assert_ne!(new, old);
    for i in 0..5 {
        let tag = format!("majority-{i}");
        let (index, resp) = net.nodes[&new]
            .client_write(audit(&tag))
            .await
            .expect("the majority writes");
        acked.push((tag, index, resp));
    }
    assert!(!leader.is_leader(), "still no leader on the cut-off node");

    // Healed: the old leader hears the new term, follows, and catches up.
    net.heal();
    let agreed = net.leader_among(&all).await;
    assert_eq!(agreed, new);
    wait_until("every node applied the majority's writes", || {
        let last = net.nodes[&new].metrics().last_log_index;
        std::future::ready(
            net.nodes
                .values()
                .all(|n| n.metrics().last_applied.map(|l| l.index) == last),
        )
    })
    .await;
    for node in net.nodes.values() {
        assert_writes_present(node, &acked);
    }
    net.shutdown().await;
}
