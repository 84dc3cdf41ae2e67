//! The versioned configuration document ([`crate::model::config`]): compare-and-set changes,
//! full history, retry policies checked when written, and dead-lettering of orphans at the
//! version boundary.

use crate::apply::complete::dead_letter;
use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::model::config::{ConfigDoc, ConfigVersion};
use crate::model::row::Stage;
use crate::rules::{claim_owner, registry, retry};
use crate::tables::{config, lanes, rows};
use crate::wire::command::{DeadLetterMissingDestinations, DeadLetterMissingHandlers, PutConfig};
use crate::wire::log_format::LogFormat;
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
    retry::check_config(doc)?;
    let version = current.version + 1;
    let orphans = dead_letter_orphans(cx, &current.doc, doc)?;
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

/// docs/SPEC.md §6.2 step 4: dead-letter every live row the new config orphans
/// ([`registry::orphaned`]): an `outbound` row by its destination, a `routed` row by its
/// handler, whatever version stopped listing the name (or never listed it), in row-id order.
/// `response` rows also carry a destination, the one that answered, but their work is
/// re-ingestion, not a delivery to it, so they are never swept.
fn dead_letter_orphans(
    cx: &mut Ctx<'_, '_>,
    before: &ConfigDoc,
    after: &ConfigDoc,
) -> ApplyResult<u64> {
    let (old_d, new_d): (BTreeSet<String>, BTreeSet<String>) = (
        before.destinations.keys().cloned().collect(),
        after.destinations.keys().cloned().collect(),
    );
    let (old_h, new_h): (BTreeSet<String>, BTreeSet<String>) = (
        before.handlers.keys().cloned().collect(),
        after.handlers.keys().cloned().collect(),
    );
    let mut ids = Vec::new();
    // A stage is looked at only when its new section registers something or removed something.
    if !(old_d.is_empty() && new_d.is_empty()) {
        ids.extend(lanes::live_of_stage(cx.txn, Stage::Outbound)?);
    }
    if !(old_h.is_empty() && new_h.is_empty()) {
        ids.extend(lanes::live_of_stage(cx.txn, Stage::Routed)?);
    }
    ids.sort();
    let mut count = 0;
    for id in ids {
        let Some(row) = rows::get(cx.txn, id)? else {
            continue;
        };
        let (what, name, old, new) = match row.stage {
            Stage::Outbound => ("destination", &row.destination_name, &old_d, &new_d),
            Stage::Routed => ("handler", &row.handler_name, &old_h, &new_h),
            Stage::Ingress | Stage::Response => continue,
        };
        let name = name.as_deref().unwrap_or_default();
        if !row.status.is_live() || !registry::orphaned(old, new, name) {
            continue;
        }
        let reason = if old.contains(name) {
            format!("{what} {name} removed from config")
        } else {
            format!("{what} {name} not in config")
        };
        dead_letter(cx, &row, &reason)?;
        count += 1;
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
    // messagefoundry's texts (the row's `last_error` and its `dead` event's detail).
    let (what, action, sweep_error) = match stage {
        Stage::Outbound => (
            "destination",
            "queue.dead_letter_missing_destinations",
            "destination removed from outbound registry",
        ),
        _ => (
            "handler",
            "queue.dead_letter_missing_handlers",
            "handler removed from registry",
        ),
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
        // A sweep takes back only the claims the caller may take back (its own principal's,
        // or anyone's for an operator), like a recovery (docs/SPEC.md §9.8): an engine's
        // start-up sweep leaves another engine's in-flight rows to that engine. A rule of log
        // format 2: format 1 entries swept every claim.
        if cx.format >= LogFormat::V2
            && !claim_owner::may_take_back(cx, &cx.acting("dead_letter_missing"), &row)?
        {
            continue;
        }
        dead_letter(cx, &row, sweep_error)?;
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
