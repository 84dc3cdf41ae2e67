//! Which channels take messages (docs/SPEC.md §6.1): the configuration's `channels` section,
//! when it names any. Every path that puts a message or a row on a channel asks here (a new
//! message of any enqueue, a captured response re-ingested to a channel, an ingress handoff's
//! loopback channel), so a channel the operator did not configure is refused whichever way it
//! is named.
//!
//! An empty section takes any channel: a cluster nobody configured, and every cluster that
//! predates the check, keeps working. A section that names channels takes only those, unless
//! it also names [`ANY_CHANNEL`], which keeps the descriptions without the check.

use crate::model::config::ConfigDoc;
use crate::rules::ApplyResult;
use crate::storage::{Store, Txn};
use crate::tables::config;
use crate::wire::rejection::Rejection;

/// The `channels` entry that takes any channel.
pub const ANY_CHANNEL: &str = "*";

/// Whether `config` takes messages on `channel`.
pub fn admits(config: &ConfigDoc, channel: &str) -> bool {
    config.channels.is_empty()
        || config.channels.contains_key(ANY_CHANNEL)
        || config.channels.contains_key(channel)
}

/// Refuse `channel` (carried in the command's `field`) unless the current configuration takes
/// it.
pub(crate) fn admit<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    field: &str,
    channel: &str,
) -> ApplyResult<()> {
    if admits(&config::current(txn)?, channel) {
        return Ok(());
    }
    Err(Rejection::UnknownChannel {
        field: field.to_string(),
        channel: channel.to_string(),
    }
    .into())
}
