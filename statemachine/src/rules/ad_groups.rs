//! How the AD group maps name a group: trimmed and lowercased, so a directory's `Domain Admins`
//! and a map's ` domain admins ` are the same group. Applied when a map is written and to the
//! groups a lookup asks for. Lowercasing follows the Unicode tables of the Rust standard
//! library, like every string rule of `apply`, so every node must run the same build.

use crate::model::user::AdGroupMap;
use std::collections::BTreeSet;

/// A group as the maps store it; `None` for a blank one (skipped).
pub fn normalize_group(group: &str) -> Option<String> {
    let g = group.trim();
    (!g.is_empty()).then(|| g.to_lowercase())
}

/// The groups asked for, normalised, blanks dropped, each once, sorted.
pub fn normalize_groups<'a>(groups: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    groups.into_iter().filter_map(normalize_group).collect()
}

/// The entries of a map as stored: groups normalised, blank groups skipped; for the scope map the
/// channel is trimmed and a blank one skipped (a role id is kept as given); each pair once,
/// sorted by group then value.
pub fn normalize_entries(map: AdGroupMap, entries: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = BTreeSet::new();
    for (group, value) in entries {
        let Some(group) = normalize_group(group) else {
            continue;
        };
        let value = match map {
            AdGroupMap::Roles => value.as_str(),
            AdGroupMap::Scope => value.trim(),
        };
        if map == AdGroupMap::Scope && value.is_empty() {
            continue;
        }
        out.insert((group, value.to_string()));
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
            .collect()
    }

    #[test]
    fn groups_are_trimmed_lowercased_deduplicated_and_sorted() {
        assert_eq!(
            normalize_group("  Domain Admins "),
            Some("domain admins".into())
        );
        assert_eq!(normalize_group(" \t "), None);
        let asked = normalize_groups(["B", " b", "", "a"]);
        assert_eq!(asked.into_iter().collect::<Vec<_>>(), vec!["a", "b"]);
    }

    #[test]
    fn scope_channels_are_trimmed_role_ids_are_not() {
        let entries = pairs(&[("G", " c1 "), ("g", "c1"), ("h", " "), (" ", "c2")]);
        assert_eq!(
            normalize_entries(AdGroupMap::Scope, &entries),
            pairs(&[("g", "c1")])
        );
        let entries = pairs(&[("G", " admin"), ("g", "admin"), ("Z", "viewer")]);
        assert_eq!(
            normalize_entries(AdGroupMap::Roles, &entries),
            pairs(&[("g", " admin"), ("g", "admin"), ("z", "viewer")])
        );
    }
}
