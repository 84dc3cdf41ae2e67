//! Transform state (`namespace, key → value` with per-namespace versions) and reference
//! snapshots (named sets replaced whole).

use crate::command::{Outcome, StateOp};
use crate::ids::{MessageId, Millis};
use crate::keys::Key;
use crate::machine::{ApplyResult, Ctx};
use crate::store::Table;
use crate::validate;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateEntry {
    /// JSON text.
    pub value: String,
    pub set_at: Millis,
    pub message_id: MessageId,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferenceSnapshot {
    pub version: u64,
    pub rows: BTreeMap<String, String>,
    pub synced_at: Millis,
    pub row_count: u64,
}

pub(crate) fn state_key(namespace: &str, key: &str) -> Vec<u8> {
    Key::new().str(namespace).str(key).build()
}

pub(crate) fn namespace_key(namespace: &str) -> Vec<u8> {
    Key::new().str(namespace).build()
}

/// Increase a namespace's version by one.
pub(crate) fn bump_namespace(cx: &mut Ctx<'_, '_>, namespace: &str) -> ApplyResult<u64> {
    let k = namespace_key(namespace);
    let version = cx
        .txn
        .get::<u64>(Table::StateNamespaces, &k)?
        .unwrap_or(0)
        .saturating_add(1);
    cx.txn.put(Table::StateNamespaces, k, &version);
    Ok(version)
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
        cx.txn
            .put(Table::State, state_key(&op.namespace, &op.key), &entry);
        touched.insert(op.namespace.as_str());
    }
    for ns in touched {
        bump_namespace(cx, ns)?;
    }
    Ok(())
}

pub(crate) fn write_reference(
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
    cx.txn
        .put(Table::Reference, Key::new().str(name).build(), &snapshot);
    Ok(Outcome::Count(snapshot.row_count))
}
