//! The operator dashboard's aggregate reads: per-connection traffic and the size of the state.
//!
//! Both scan (every message and outbound row, or every table): they serve a dashboard refreshed
//! by a person, not a worker's loop, so they keep no counters of their own in the replicated
//! state (docs/SPEC.md §14.11).

use crate::model::ids::Millis;
use crate::model::message::MessageStatus;
use crate::model::row::{RowStatus, Stage, WorkRow};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::messages;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Inbound traffic of one channel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboundMetrics {
    pub channel: String,
    /// Messages received at or after `since`.
    pub read: u64,
    /// Of those, the ones in status `error`.
    pub errored: u64,
    /// The channel's newest message ever (not only since `since`).
    pub last_at: Option<Millis>,
}

/// Outbound traffic of one (channel, destination).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DestinationMetrics {
    pub channel: String,
    pub destination: String,
    /// Rows pending or inflight now.
    pub queue_depth: u64,
    /// Rows done, last changed at or after `since`.
    pub written: u64,
    /// Rows dead, last changed at or after `since`.
    pub dead: u64,
    /// The oldest pending row's creation time.
    pub oldest_pending_at: Option<Millis>,
    /// Rows done, last changed at or after `rate_since`.
    pub recent_done: u64,
    /// The newest done row's last change.
    pub last_done_at: Option<Millis>,
}

/// [`connection_metrics`]'s answer, channels and destinations in name order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionMetrics {
    pub inbound: Vec<InboundMetrics>,
    pub destinations: Vec<DestinationMetrics>,
}

/// Per-channel inbound and per-destination outbound figures: every message and every outbound
/// row is looked at once.
pub(crate) fn connection_metrics<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    since: Millis,
    rate_since: Millis,
) -> Result<ConnectionMetrics, StoreError> {
    let mut inbound: BTreeMap<String, InboundMetrics> = BTreeMap::new();
    for m in messages::all(txn, Direction::Forward)? {
        let m = m?;
        let entry = inbound
            .entry(m.channel_id.clone())
            .or_insert_with(|| InboundMetrics {
                channel: m.channel_id.clone(),
                ..InboundMetrics::default()
            });
        if m.received_at >= since {
            entry.read += 1;
            if m.status == MessageStatus::Error {
                entry.errored += 1;
            }
        }
        entry.last_at = entry.last_at.max(Some(m.received_at));
    }
    let mut destinations: BTreeMap<(String, String), DestinationMetrics> = BTreeMap::new();
    for item in txn.scan(Table::Rows, &[], None, Direction::Forward)? {
        let (_, value) = item?;
        let row: WorkRow = Txn::<S>::decode(Table::Rows, &value)?;
        if row.stage != Stage::Outbound {
            continue;
        }
        let destination = row.destination_name.clone().unwrap_or_default();
        let d = destinations
            .entry((row.channel_id.clone(), destination.clone()))
            .or_insert_with(|| DestinationMetrics {
                channel: row.channel_id.clone(),
                destination,
                ..DestinationMetrics::default()
            });
        match row.status {
            RowStatus::Pending => {
                d.queue_depth += 1;
                d.oldest_pending_at = Some(
                    d.oldest_pending_at
                        .map_or(row.created_at, |t| t.min(row.created_at)),
                );
            }
            RowStatus::Inflight => d.queue_depth += 1,
            RowStatus::Done => {
                d.written += u64::from(row.updated_at >= since);
                d.recent_done += u64::from(row.updated_at >= rate_since);
                d.last_done_at = d.last_done_at.max(Some(row.updated_at));
            }
            RowStatus::Dead => d.dead += u64::from(row.updated_at >= since),
            _ => {}
        }
    }
    Ok(ConnectionMetrics {
        inbound: inbound.into_values().collect(),
        destinations: destinations.into_values().collect(),
    })
}

/// How much the state holds: its events, and the bytes of every key and value of every table
/// (the logical size; what a node's disk holds also depends on compaction).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageStats {
    pub events: u64,
    pub bytes: u64,
}

pub(crate) fn storage_stats<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<StorageStats, StoreError> {
    let mut stats = StorageStats::default();
    for table in Table::ALL {
        for item in txn.scan(table, &[], None, Direction::Forward)? {
            let (key, value) = item?;
            stats.bytes += (key.len() + value.len()) as u64;
            if table == Table::Events {
                stats.events += 1;
            }
        }
    }
    Ok(stats)
}
