//! The versioned configuration document: compare-and-set changes, full history, and
//! dead-lettering of orphans at the version boundary.

use crate::audit;
use crate::command::{Outcome, Rejection, RetryPolicy};
use crate::complete::dead_letter;
use crate::ids::{Millis, RowId};
use crate::keys::trailing_u64;
use crate::machine::{ApplyResult, Ctx};
use crate::rows;
use crate::store::{Direction, Store, StoreError, Table};
use crate::txn::Txn;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Default dedupe window for idempotency keys: a day.
pub const DEFAULT_DEDUPE_WINDOW_MS: u64 = 24 * 60 * 60 * 1000;
/// Longest dedupe window accepted: thirty days.
pub const MAX_DEDUPE_WINDOW_MS: u64 = 30 * 24 * 60 * 60 * 1000;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChannelConfig {
    pub description: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DestinationConfig {
    pub url: Option<String>,
    pub retry: Option<RetryPolicy>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HandlerConfig {
    pub channel: Option<String>,
}

/// Retention periods in ms (`None` = keep forever); the leader proposes purges from these.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    pub message_bodies_ms: Option<u64>,
    pub dead_letters_ms: Option<u64>,
    pub state_ms: Option<u64>,
    pub dedupe_window_ms: Option<u64>,
}

/// The configuration document. Every section may be omitted (empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConfigDoc {
    pub channels: BTreeMap<String, ChannelConfig>,
    pub destinations: BTreeMap<String, DestinationConfig>,
    pub handlers: BTreeMap<String, HandlerConfig>,
    pub retention: RetentionConfig,
    /// Operations that need a second principal's approval.
    pub approvals_required: BTreeSet<String>,
}

impl ConfigDoc {
    /// The idempotency window, bounded by [`MAX_DEDUPE_WINDOW_MS`].
    pub fn dedupe_window_ms(&self) -> u64 {
        self.retention
            .dedupe_window_ms
            .unwrap_or(DEFAULT_DEDUPE_WINDOW_MS)
            .min(MAX_DEDUPE_WINDOW_MS)
    }
}

/// One stored version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigVersion {
    pub version: u64,
    pub doc: ConfigDoc,
    pub set_at: Millis,
    pub set_by: String,
}

/// The current version (version 0, the empty document, until the first change).
pub fn current_version<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<ConfigVersion, StoreError> {
    match txn
        .scan(Table::Config, &[], None, Direction::Reverse)?
        .next()
    {
        Some(item) => Txn::<S>::decode(Table::Config, &item?.1),
        None => Ok(ConfigVersion {
            version: 0,
            doc: ConfigDoc::default(),
            set_at: 0,
            set_by: String::new(),
        }),
    }
}

pub(crate) fn current<S: Store + ?Sized>(txn: &Txn<'_, S>) -> Result<ConfigDoc, StoreError> {
    Ok(current_version(txn)?.doc)
}

pub fn version<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    v: u64,
) -> Result<Option<ConfigVersion>, StoreError> {
    if v == 0 {
        return Ok(Some(ConfigVersion {
            version: 0,
            doc: ConfigDoc::default(),
            set_at: 0,
            set_by: String::new(),
        }));
    }
    txn.get(Table::Config, &v.to_be_bytes())
}

pub(crate) fn put_config(
    cx: &mut Ctx<'_, '_>,
    expected: u64,
    doc: &ConfigDoc,
) -> ApplyResult<Outcome> {
    let current = current_version(cx.txn)?;
    if current.version != expected {
        return Err(Rejection::VersionMismatch {
            expected,
            current: current.version,
        }
        .into());
    }
    for name in doc
        .channels
        .keys()
        .chain(doc.destinations.keys())
        .chain(doc.handlers.keys())
    {
        crate::validate::name("config name", name)?;
    }
    let version = current.version + 1;
    let removed_destinations: BTreeSet<&String> = current
        .doc
        .destinations
        .keys()
        .filter(|d| !doc.destinations.contains_key(*d))
        .collect();
    let removed_handlers: BTreeSet<&String> = current
        .doc
        .handlers
        .keys()
        .filter(|h| !doc.handlers.contains_key(*h))
        .collect();
    let orphans = if removed_destinations.is_empty() && removed_handlers.is_empty() {
        0
    } else {
        dead_letter_orphans(cx, &removed_destinations, &removed_handlers)?
    };
    let record = ConfigVersion {
        version,
        doc: doc.clone(),
        set_at: cx.t,
        set_by: cx.actor.to_string(),
    };
    cx.txn
        .put(Table::Config, version.to_be_bytes().to_vec(), &record);
    audit::record_default(
        cx,
        "config.change",
        None,
        format!("version {version}; {orphans} orphan row(s) dead-lettered"),
    )?;
    Ok(Outcome::ConfigVersion(version))
}

/// Dead-letter every live row naming a removed destination or handler.
fn dead_letter_orphans(
    cx: &mut Ctx<'_, '_>,
    destinations: &BTreeSet<&String>,
    handlers: &BTreeSet<&String>,
) -> ApplyResult<u64> {
    let mut live = Vec::new();
    for table in [Table::Due, Table::Leases] {
        for item in cx.txn.scan(table, &[], None, Direction::Forward)? {
            let (key, _) = item?;
            if let Some(id) = trailing_u64(&key) {
                live.push(RowId(id));
            }
        }
    }
    live.sort();
    live.dedup();
    let mut count = 0;
    for id in live {
        let Some(row) = rows::get(cx.txn, id)? else {
            continue;
        };
        let orphan_destination = row
            .destination_name
            .as_ref()
            .filter(|d| destinations.contains(d));
        let orphan_handler = row.handler_name.as_ref().filter(|h| handlers.contains(h));
        let reason = match (orphan_destination, orphan_handler) {
            (Some(d), _) => format!("destination {d} removed from config"),
            (None, Some(h)) => format!("handler {h} removed from config"),
            (None, None) => continue,
        };
        if row.status.is_live() {
            dead_letter(cx, &row, &reason)?;
            count += 1;
        }
    }
    Ok(count)
}
