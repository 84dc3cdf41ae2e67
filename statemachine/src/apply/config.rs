//! The versioned configuration document ([`crate::model::config`]): compare-and-set changes,
//! full history, and dead-lettering of orphans at the version boundary.

use crate::apply::complete::dead_letter;
use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::model::config::{ConfigDoc, ConfigVersion};
use crate::tables::{config, rows};
use crate::wire::command::PutConfig;
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;
use std::collections::BTreeSet;

impl Apply for PutConfig {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let PutConfig {
            expected_version,
            config,
        } = self;
        put_config(cx, *expected_version, config)
    }
}

fn put_config(cx: &mut Ctx<'_, '_>, expected: u64, doc: &ConfigDoc) -> ApplyResult<Outcome> {
    let current = config::current_version(cx.txn)?;
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
        crate::rules::validate::name("config name", name)?;
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
    config::put(cx, &record);
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
    let live = rows::live(cx.txn)?;
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
