//! Which destination and handler names the configuration registers (docs/SPEC.md §6.2): the
//! one rule both the handoffs (refusing a row for a name nobody will ever work on) and the
//! config's orphan sweep (dead-lettering such rows already queued) follow.
//!
//! A section that lists names is the registry for its kind: a name it does not list is
//! unknown. An empty section registers nothing and restricts nothing (so a cluster that never
//! wrote a config, as most tests and small deployments do, takes any name), which is also why
//! emptying a section sweeps the names the previous version listed: they were removed.

use crate::model::config::ConfigDoc;
use crate::wire::command::{Delivery, HandlerWork};
use crate::wire::rejection::Rejection;
use std::collections::{BTreeMap, BTreeSet};

/// Whether `name` is registered in `section` (a config's `destinations` or `handlers`).
pub fn known<V>(section: &BTreeMap<String, V>, name: &str) -> bool {
    section.is_empty() || section.contains_key(name)
}

/// Whether a live row naming `name` is an orphan once the config goes from `before` to
/// `after` (sections of one kind): `after` does not register it, or it was listed before and
/// no longer is.
pub fn orphaned(before: &BTreeSet<String>, after: &BTreeSet<String>, name: &str) -> bool {
    !after.contains(name) && (!after.is_empty() || before.contains(name))
}

/// Refuse deliveries to a destination `config` does not register (field
/// `deliveries.destination`).
pub fn check_deliveries(config: &ConfigDoc, deliveries: &[Delivery]) -> Result<(), Rejection> {
    match deliveries
        .iter()
        .find(|d| !known(&config.destinations, &d.destination))
    {
        Some(d) => Err(Rejection::invalid(
            "deliveries.destination",
            format!("destination {} is not in the config", d.destination),
        )),
        None => Ok(()),
    }
}

/// Refuse work for a handler `config` does not register (field `handlers.handler`).
pub fn check_handlers(config: &ConfigDoc, handlers: &[HandlerWork]) -> Result<(), Rejection> {
    match handlers
        .iter()
        .find(|h| !known(&config.handlers, &h.handler))
    {
        Some(h) => Err(Rejection::invalid(
            "handlers.handler",
            format!("handler {} is not in the config", h.handler),
        )),
        None => Ok(()),
    }
}
