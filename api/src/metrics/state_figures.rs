//! The replicated state's figures for `/metrics`: rows by stage and status, the state
//! machine's totals, each lane's depth, age, rows in flight, holder, redeliveries and
//! dead letters, and the engines coordinating through the cluster. Every node reports the
//! same values at the same applied index (aggregate them with `max`, not `sum`).

use super::set::{LabelValue, Labels, MetricSet};
use crate::backend::{self, Backend};
use raftlane_statemachine::model::coordination::NodeStatus;
use raftlane_statemachine::model::lane::LaneEvent;

/// At most this many lanes get series of their own per scrape (the first in key order: stage,
/// then name). Lanes are named by users; a deployment with more should watch the stage totals
/// or page `GET /v1/lanes`. `raftlane_lane_series_truncated` says when lanes were left out.
pub const MAX_LANES: usize = 1000;

fn none() -> Labels {
    Vec::new()
}

fn lane_labels(stage: &str, name: &str) -> Labels {
    vec![
        ("stage", LabelValue::from(stage)),
        ("lane", LabelValue::from(name)),
    ]
}

/// Write the state's figures into `set`, ages measured against `now_ms` (the cluster's time).
pub fn write(backend: &dyn Backend, set: &mut MetricSet, now_ms: u64) {
    let age = |at: u64| now_ms.saturating_sub(at) as f64 / 1000.0;
    let read = backend::read(backend, |r| {
        let stats = r.stats();
        set.counter(
            "raftlane_messages_total",
            "Messages ever stored (the next message id)",
            none(),
            stats.messages,
        );
        for (stage, by_status) in &stats.rows {
            for (status, n) in by_status {
                set.gauge(
                    "raftlane_rows",
                    "Work rows by stage and status",
                    vec![
                        ("stage", stage.as_str().into()),
                        ("status", status.as_str().into()),
                    ],
                    *n as f64,
                );
            }
        }
        for (name, n) in r.tallies()? {
            // `dead.lease_expired` and the like: `what.cause`.
            if let Some(cause) = name.strip_prefix("dead.") {
                set.counter(
                    "raftlane_rows_dead_total",
                    "Rows dead-lettered, by cause where the state machine counts one",
                    vec![("cause", cause.into())],
                    n,
                );
            }
        }
        let page = r.lanes(None, None, MAX_LANES)?;
        set.gauge(
            "raftlane_lane_series_truncated",
            "1 when more lanes exist than get series of their own here",
            none(),
            if page.next.is_some() { 1.0 } else { 0.0 },
        );
        for lane in &page.lanes {
            let labels = lane_labels(lane.stage.as_str(), &lane.name);
            set.gauge(
                "raftlane_lane_depth",
                "Rows pending in the lane",
                labels.clone(),
                lane.depth as f64,
            );
            set.gauge(
                "raftlane_lane_inflight",
                "Rows of the lane claimed and not yet finished",
                labels.clone(),
                lane.inflight as f64,
            );
            set.gauge(
                "raftlane_lane_oldest_pending_age_seconds",
                "Age of the lane's oldest pending row (0 when none is pending)",
                labels.clone(),
                lane.oldest_created_at.map_or(0.0, age),
            );
            set.gauge(
                "raftlane_lane_held",
                "1 while a worker holds the lane's FIFO lease",
                labels,
                if lane.holder.is_some() { 1.0 } else { 0.0 },
            );
        }
        for tally in r.lane_tallies()? {
            let labels = lane_labels(tally.lane.stage.as_str(), &tally.lane.name);
            match tally.event {
                LaneEvent::DeadLettered => set.counter(
                    "raftlane_lane_dead_lettered_total",
                    "Rows of the lane dead-lettered",
                    labels,
                    tally.count,
                ),
                LaneEvent::Redelivered => set.counter(
                    "raftlane_lane_redeliveries_total",
                    "Rows of the lane claimed again after an earlier claim",
                    labels,
                    tally.count,
                ),
            }
        }
        engine_figures(r, set, now_ms)
    });
    // A scrape still answers with the node's own figures; the missing ones are said here.
    if let Err(e) = read {
        tracing::warn!(error = %e, "metrics: the replicated state's figures could not be read");
    }
}

/// The engines coordinating through the cluster (docs/SPEC.md §15): who is registered, how
/// long since each active one's heartbeat, and who leads each group.
fn engine_figures(
    r: &raftlane_statemachine::query::Reader<'_>,
    set: &mut MetricSet,
    now_ms: u64,
) -> Result<(), raftlane_statemachine::StoreError> {
    let nodes = r.engine_nodes()?;
    for status in [NodeStatus::Active, NodeStatus::Left] {
        let n = nodes.iter().filter(|e| e.status == status).count();
        set.gauge(
            "raftlane_engine_nodes",
            "Engine processes registered, by status",
            vec![("status", status.as_str().into())],
            n as f64,
        );
    }
    for engine in nodes.iter().filter(|e| e.status == NodeStatus::Active) {
        set.gauge(
            "raftlane_engine_heartbeat_age_seconds",
            "Time since each active engine's last heartbeat",
            vec![("engine", engine.node_id.as_str().into())],
            now_ms.saturating_sub(engine.last_seen) as f64 / 1000.0,
        );
    }
    for (group, lease) in r.leaderships()? {
        let live = lease.is_live(now_ms);
        set.gauge(
            "raftlane_engine_leader",
            "1 for the engine whose leadership lease of the group is live, 0 once it lapsed",
            vec![("group", group.into()), ("engine", lease.owner.into())],
            if live { 1.0 } else { 0.0 },
        );
    }
    Ok(())
}
