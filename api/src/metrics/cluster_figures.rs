//! The figures of the cluster's status as this node sees it (the same status `/v1/cluster`
//! answers): the term, whether this node leads, its log and applied index.

use super::set::MetricSet;
use raftlane_contract::ClusterStatus;

pub fn write(status: &ClusterStatus, set: &mut MetricSet) {
    set.gauge(
        "raftlane_term",
        "The Raft term this node is in",
        Vec::new(),
        status.term as f64,
    );
    let leads = status.leader_id == Some(status.node_id);
    set.gauge(
        "raftlane_is_leader",
        "1 while this node leads with a quorum behind it, else 0",
        Vec::new(),
        if leads { 1.0 } else { 0.0 },
    );
    set.gauge(
        "raftlane_last_log_index",
        "The index of the last entry in this node's log",
        Vec::new(),
        status.last_log_index as f64,
    );
    set.gauge(
        "raftlane_last_applied",
        "The index of the last entry this node applied to its state",
        Vec::new(),
        status.last_applied as f64,
    );
}
