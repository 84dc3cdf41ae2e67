//! Transform state (`namespace, key → value` with per-namespace versions), written by
//! TransformHandoff, and reference snapshots (named sets replaced whole).

use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::ids::MessageId;
use crate::model::state::{ReferenceSnapshot, StateEntry};
use crate::rules::validate;
use crate::tables::{reference, state};
use crate::wire::command::{ReferenceVersion, StateOp, WriteReferenceSnapshot};
use crate::wire::outcome::Outcome;
use std::collections::{BTreeMap, BTreeSet};

impl Apply for WriteReferenceSnapshot {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let WriteReferenceSnapshot {
            name,
            version,
            rows,
        } = self;
        let version = match version {
            ReferenceVersion::Number(version) => return write_reference(cx, name, *version, rows),
            ReferenceVersion::Label(label) => label,
        };
        validate::name("name", name)?;
        validate::name("version", version)?;
        let next = reference::get(cx.txn, name)?.map_or(1, |s| s.version.saturating_add(1));
        let out = write_reference(cx, name, next, rows)?;
        reference::set_label(cx, name, Some(version))?;
        Ok(out)
    }
}

/// Upsert each op; each distinct namespace's version is bumped once.
pub(crate) fn apply_ops(
    cx: &mut Ctx<'_, '_>,
    message: MessageId,
    ops: &[StateOp],
) -> ApplyResult<()> {
    for op in ops {
        validate::name("state_ops.namespace", &op.namespace)?;
        validate::name("state_ops.key", &op.key)?;
    }
    let mut touched = BTreeSet::new();
    for op in ops {
        let entry = StateEntry {
            value: op.value.clone(),
            set_at: cx.t,
            message_id: message,
        };
        state::put(cx, &op.namespace, &op.key, &entry);
        touched.insert(op.namespace.as_str());
    }
    for ns in touched {
        state::bump_namespace(cx, ns)?;
    }
    Ok(())
}

fn write_reference(
    cx: &mut Ctx<'_, '_>,
    name: &str,
    version: u64,
    rows: &BTreeMap<String, String>,
) -> ApplyResult<Outcome> {
    validate::name("name", name)?;
    let snapshot = ReferenceSnapshot {
        version,
        rows: rows.clone(),
        synced_at: cx.t,
        row_count: rows.len() as u64,
    };
    reference::put(cx, name, &snapshot);
    // A numeric write replaces a text version given before (a WriteReferenceSnapshot with a text label).
    reference::set_label(cx, name, None)?;
    Ok(Outcome::Count(snapshot.row_count))
}
