//! The versioned configuration document ([`crate::model::config`]): compare-and-set changes,
//! full history, and dead-lettering of orphans at the version boundary.

use crate::apply::complete::dead_letter;
use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::model::config::{ConfigDoc, ConfigVersion};
use crate::model::row::Stage;
use crate::tables::{config, lanes, rows};
use crate::wire::command::{DeadLetterMissingDestinations, DeadLetterMissingHandlers, PutConfig};
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

impl Apply for DeadLetterMissingDestinations {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let DeadLetterMissingDestinations { destinations } = self;
        dead_letter_missing(cx, Stage::Outbound, destinations)
    }
}

impl Apply for DeadLetterMissingHandlers {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let DeadLetterMissingHandlers { handlers } = self;
        dead_letter_missing(cx, Stage::Routed, handlers)
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

/// docs/SPEC.md §14.3: dead-letter every live row of `stage` (outbound: by destination; routed:
/// by handler) whose name is not in `known`, in row-id order, each with event `dead` and its
/// message finalized; one audit row when any died.
fn dead_letter_missing(
    cx: &mut Ctx<'_, '_>,
    stage: Stage,
    known: &[String],
) -> ApplyResult<Outcome> {
    let known: BTreeSet<&str> = known.iter().map(String::as_str).collect();
    let (what, action) = match stage {
        Stage::Outbound => ("destination", "queue.dead_letter_missing_destinations"),
        _ => ("handler", "queue.dead_letter_missing_handlers"),
    };
    let mut count = 0u64;
    let mut missing = BTreeSet::new();
    for id in lanes::live_of_stage(cx.txn, stage)? {
        let Some(row) = rows::get(cx.txn, id)? else {
            continue;
        };
        let name = match stage {
            Stage::Outbound => row.destination_name.clone(),
            _ => row.handler_name.clone(),
        }
        .unwrap_or_default();
        if !row.status.is_live() || known.contains(name.as_str()) {
            continue;
        }
        dead_letter(
            cx,
            &row,
            &format!("{what} {name} missing from the registry"),
        )?;
        missing.insert(name);
        count += 1;
    }
    if count > 0 {
        let names: Vec<String> = missing.into_iter().collect();
        audit::record_default(
            cx,
            action,
            None,
            format!("{count} row(s); {what}(s) {}", names.join(", ")),
        )?;
    }
    Ok(Outcome::Count(count))
}
