//! What a configuration change takes away that dual control guards (docs/SPEC.md §9.5): a
//! change is an action under dual control not only when `put_config` is listed, but whenever it
//! would do, through the configuration, what a listed action does, or loosen the list itself.
//!
//! - It removes an action from `approvals_required` (or empties it): the list guards itself,
//!   whichever actions it names.
//! - `purge` is listed and it shortens a retention age (sets one that was unset or 0, or lowers
//!   one): the leader's retention timer would purge by the new age with no approval.
//! - `sweep_dead_letters` is listed and it unregisters a destination or handler (or registers
//!   the first ones of a section): the version boundary dead-letters the orphans (§6.2).

use raftlane_statemachine::model::config::ConfigDoc;
use std::collections::BTreeSet;

/// Why changing the configuration from `current` to `new` needs an approval, one reason per
/// trigger (empty: it does not).
pub fn reasons(current: &ConfigDoc, new: &ConfigDoc) -> Vec<String> {
    let listed = &current.approvals_required;
    let mut out = Vec::new();
    if listed.contains("put_config") {
        out.push("put_config is listed in approvals_required".to_string());
    }
    let dropped: Vec<&str> = listed
        .difference(&new.approvals_required)
        .map(String::as_str)
        .collect();
    if !dropped.is_empty() {
        out.push(format!(
            "it removes {} from approvals_required",
            dropped.join(", ")
        ));
    }
    if listed.contains("purge") {
        let ages = [
            (
                "message_bodies_ms",
                current.retention.message_bodies_ms,
                new.retention.message_bodies_ms,
            ),
            (
                "dead_letters_ms",
                current.retention.dead_letters_ms,
                new.retention.dead_letters_ms,
            ),
            (
                "state_ms",
                current.retention.state_ms,
                new.retention.state_ms,
            ),
        ];
        for (field, before, after) in ages {
            if shortens(before, after) {
                out.push(format!(
                    "purge is listed and it shortens retention.{field} (the retention timer \
                     would purge by it)"
                ));
            }
        }
    }
    if listed.contains("sweep_dead_letters") {
        for (section, before, after) in [
            (
                "destinations",
                names(current.destinations.keys()),
                names(new.destinations.keys()),
            ),
            (
                "handlers",
                names(current.handlers.keys()),
                names(new.handlers.keys()),
            ),
        ] {
            if unregisters(&before, &after) {
                out.push(format!(
                    "sweep_dead_letters is listed and it changes which {section} are registered \
                     (their live rows would be dead-lettered)"
                ));
            }
        }
    }
    out
}

/// Whether a retention age goes from `before` to a shorter `after`: an age is off when unset
/// or 0, so turning one on shortens it too.
fn shortens(before: Option<u64>, after: Option<u64>) -> bool {
    let on = |age: Option<u64>| age.filter(|a| *a > 0);
    match (on(before), on(after)) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(b), Some(a)) => a < b,
    }
}

fn names<'a>(keys: impl Iterator<Item = &'a String>) -> BTreeSet<&'a str> {
    keys.map(String::as_str).collect()
}

/// Whether registering `after` instead of `before` makes live rows orphans: a name is
/// dropped, or a section that was empty (registering every name) starts listing names.
fn unregisters(before: &BTreeSet<&str>, after: &BTreeSet<&str>) -> bool {
    !before.is_subset(after) || (before.is_empty() && !after.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(v: serde_json::Value) -> ConfigDoc {
        serde_json::from_value(v).expect("a config")
    }

    #[test]
    fn each_trigger_names_its_reason() {
        let base = doc(serde_json::json!({
            "destinations": { "emr": {} }, "handlers": {},
            "retention": { "message_bodies_ms": 86_400_000 },
            "approvals_required": ["purge", "sweep_dead_letters"]
        }));
        assert!(reasons(&base, &base).is_empty());
        let mut shorter = base.clone();
        shorter.retention.message_bodies_ms = Some(1);
        assert_eq!(reasons(&base, &shorter).len(), 1);
        let mut longer = base.clone();
        longer.retention.message_bodies_ms = Some(2 * 86_400_000);
        longer.retention.state_ms = Some(0);
        assert!(reasons(&base, &longer).is_empty());
        let mut on = base.clone();
        on.retention.state_ms = Some(5);
        assert!(reasons(&base, &on)[0].contains("state_ms"));
        let mut unlisted = base.clone();
        unlisted.approvals_required.clear();
        assert!(reasons(&base, &unlisted)[0].contains("removes purge, sweep_dead_letters"));
        let mut dropped = base.clone();
        dropped.destinations.clear();
        assert!(reasons(&base, &dropped)[0].contains("destinations"));
        assert!(!shortens(None, None) && !shortens(Some(5), Some(0)));
    }
}
