//! `Tallies` (name → u64): running totals the state machine keeps about itself, such as how
//! many rows died of lease expiries (`crate::rules::retry::LEASE_EXPIRED_TALLY`). Kept in the
//! replicated state, not in a node's memory, so every node's `/metrics` reports the same count
//! and it survives restarts and snapshots.
//!
//! Per-lane tallies ([`LaneEvent`]) share the table under names `lane.{event}:{stage}:{name}`;
//! [`all`] leaves them out and [`lanes`] reads them back typed.

use crate::model::lane::{LaneEvent, LaneKey, LaneTally};
use crate::model::stage::Stage;
use crate::storage::keys::{read_str, Key};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::Db;
use std::collections::BTreeMap;

fn key(name: &str) -> Vec<u8> {
    Key::new().str(name).build()
}

/// The tally `name` (0 until first counted).
pub(crate) fn get<S: Store + ?Sized>(txn: &Txn<'_, S>, name: &str) -> Result<u64, StoreError> {
    Ok(txn.get::<u64>(Table::Tallies, &key(name))?.unwrap_or(0))
}

/// Add `n` to the tally `name` (saturating).
pub(crate) fn add(cx: &mut Db<'_, '_>, name: &str, n: u64) -> Result<(), StoreError> {
    let value = get(cx.txn, name)?.saturating_add(n);
    cx.txn.put(Table::Tallies, key(name), &value);
    Ok(())
}

/// The prefix of every per-lane tally's name.
const LANE_PREFIX: &str = "lane.";

fn lane_name(event: LaneEvent, lane: &LaneKey) -> String {
    format!("{LANE_PREFIX}{}:{lane}", event.as_str())
}

/// A per-lane tally's name read back (`None`: not one, or of an event this build does not
/// know). Stage and event names hold no `:`; the lane's name is the rest, colons and all.
fn parse_lane_name(name: &str) -> Option<(LaneEvent, LaneKey)> {
    let rest = name.strip_prefix(LANE_PREFIX)?;
    let (event, rest) = rest.split_once(':')?;
    let (stage, lane) = rest.split_once(':')?;
    let event = LaneEvent::ALL.into_iter().find(|e| e.as_str() == event)?;
    Some((event, LaneKey::new(Stage::parse(stage)?, lane)))
}

/// Count one `event` of `lane`.
pub(crate) fn add_lane(
    cx: &mut Db<'_, '_>,
    event: LaneEvent,
    lane: &LaneKey,
) -> Result<(), StoreError> {
    add(cx, &lane_name(event, lane), 1)
}

/// Every per-lane tally, in name order.
pub(crate) fn lanes<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<Vec<LaneTally>, StoreError> {
    let mut out = Vec::new();
    for (name, count) in everything(txn)? {
        if let Some((event, lane)) = parse_lane_name(&name) {
            out.push(LaneTally { event, lane, count });
        }
    }
    Ok(out)
}

/// Every tally but the per-lane ones, by name.
pub(crate) fn all<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
) -> Result<BTreeMap<String, u64>, StoreError> {
    let mut all = everything(txn)?;
    all.retain(|name, _| !name.starts_with(LANE_PREFIX));
    Ok(all)
}

/// Every tally, by name.
fn everything<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<BTreeMap<String, u64>, StoreError> {
    let mut out = BTreeMap::new();
    for item in txn.scan(Table::Tallies, &[], None, Direction::Forward)? {
        let (k, v) = item?;
        let Some(name) = read_str(&k, &mut 0) else {
            continue;
        };
        out.insert(name, Txn::<S>::decode(Table::Tallies, &v)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_names_read_back_with_colons_in_the_lane() {
        let lane = LaneKey::new(Stage::Outbound, "lab:results");
        let name = lane_name(LaneEvent::Redelivered, &lane);
        assert_eq!(name, "lane.redelivered:outbound:lab:results");
        assert_eq!(parse_lane_name(&name), Some((LaneEvent::Redelivered, lane)));
        assert_eq!(parse_lane_name("dead.lease_expired"), None);
        assert_eq!(parse_lane_name("lane.unknown:outbound:x"), None);
    }
}
