//! How many times this node has seen the cluster's leader change (`raftlane_leader_changes_total`).
//!
//! Why a watch of its own: Raft's metrics hold the leader now, and a scrape every 15 s would
//! miss an election that came and went between two scrapes; an alert on flapping leadership
//! needs every change counted.

use crate::types::Raft;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// Count each new (term, leader) this node learns of, until `stop` turns true.
pub(crate) async fn watch(raft: Raft, changes: Arc<AtomicU64>, mut stop: watch::Receiver<bool>) {
    let mut metrics = raft.metrics();
    let mut seen: Option<(u64, u64)> = None;
    loop {
        let now = {
            let m = metrics.borrow_and_update();
            m.current_leader.map(|leader| (m.current_term, leader))
        };
        if now.is_some() && now != seen {
            // The first leader a node learns of at start is not a change.
            if seen.is_some() {
                changes.fetch_add(1, Ordering::Relaxed);
            }
            seen = now;
        }
        tokio::select! {
            changed = metrics.changed() => if changed.is_err() { return },
            _ = stop.changed() => return,
        }
    }
}
