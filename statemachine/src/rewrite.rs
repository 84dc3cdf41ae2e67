//! Key rotation support (docs/SPEC.md §2.6): the values covered by encryption at rest, a stable
//! walk over them for the proposer, and
//! [`Command::RewriteValues`](crate::Command::RewriteValues), which swaps values in place.
//!
//! The state machine never does any cryptography: the proposer reads covered values with
//! [`covered_values`], decrypts and re-encrypts them under the active key, and proposes the new
//! ciphertexts. Each [`Rewrite`] is a compare-and-set: the value is replaced only if it still
//! equals `expected`, so a value changed concurrently (a retry recorded a new error, a purge
//! blanked a body) is never clobbered with stale content.
//!
//! ## Semantics of `RewriteValues`
//! - Each item whose target exists and currently equals `expected` is set to `value`; the outcome
//!   is `Outcome::Count(rewritten)`.
//! - An item whose target does not exist (message, row, event, response, state entry, reference
//!   snapshot or reference key gone, or an optional field that is absent) is **ignored**, like a
//!   compare-and-set miss, not rejected: rows are consumed by handoffs and state is purged between
//!   the proposer's read and the command's application, and one such race must not fail the whole
//!   batch.
//! - Only the value changes: no status, timestamp, index entry, lane position or namespace
//!   version moves (the plaintext is unchanged, only its encryption).
//! - One audit row `keys.rotate` with detail `{"requested":N,"rewritten":M}` is appended to the
//!   default org's chain in the same command, whatever the count.
//! - More than [`MAX_REWRITES`] items is rejected as invalid (nothing changes).
//!
//! ## Walk order
//! [`covered_values`] yields values table by table (messages, rows, events, captured responses,
//! transform state, reference snapshots), each in key order, and within a record in field order.
//! A [`ValueRef`] is its own cursor: pass the last one returned as `after` to continue.
//! `response`-stage row payloads are not covered: they hold a reference that the state machine
//! itself parses ([`crate::complete::ResponseRef`]), never a body.

use crate::audit;
use crate::command::{Outcome, Rejection};
use crate::complete::{response_key, CapturedResponse};
use crate::ids::{MessageId, RowId};
use crate::keys::{read_u32, read_u64, Key};
use crate::machine::{ApplyResult, Ctx};
use crate::message::{Event, Message};
use crate::row::{Stage, WorkRow};
use crate::state::{state_key, ReferenceSnapshot, StateEntry};
use crate::store::{Direction, Store, StoreError, Table};
use crate::txn::Txn;
use crate::{messages, rows};
use serde::{Deserialize, Serialize};

/// Most items one `RewriteValues` may carry.
pub const MAX_REWRITES: usize = 10_000;

/// The audit action of a rewrite.
pub const ROTATE_ACTION: &str = "keys.rotate";

/// One value covered by encryption at rest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueRef {
    MessageRaw {
        message_id: MessageId,
    },
    MessageError {
        message_id: MessageId,
    },
    RowPayload {
        row_id: RowId,
    },
    RowLastError {
        row_id: RowId,
    },
    EventDetail {
        message_id: MessageId,
        event_no: u64,
    },
    ResponseBody {
        message_id: MessageId,
        destination: String,
        seq: u32,
    },
    ResponseDetail {
        message_id: MessageId,
        destination: String,
        seq: u32,
    },
    StateValue {
        namespace: String,
        key: String,
    },
    ReferenceValue {
        name: String,
        key: String,
    },
}

/// Replace the value at `target` with `value` if it currently equals `expected`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    pub target: ValueRef,
    pub expected: String,
    pub value: String,
}

/// The walk position of a value: (table phase, record key, field within the record).
type Position = (u8, Vec<u8>, Vec<u8>);

const PHASES: [(u8, Table); 6] = [
    (0, Table::Messages),
    (1, Table::Rows),
    (2, Table::Events),
    (3, Table::Responses),
    (4, Table::State),
    (5, Table::Reference),
];

fn reference_key(name: &str) -> Vec<u8> {
    Key::new().str(name).build()
}

fn event_key(message: MessageId, no: u64) -> Vec<u8> {
    Key::new().u64(message.0).u64(no).build()
}

impl ValueRef {
    fn position(&self) -> Position {
        match self {
            ValueRef::MessageRaw { message_id } => (0, messages::key(*message_id), vec![0]),
            ValueRef::MessageError { message_id } => (0, messages::key(*message_id), vec![1]),
            ValueRef::RowPayload { row_id } => (1, rows::row_key(*row_id), vec![0]),
            ValueRef::RowLastError { row_id } => (1, rows::row_key(*row_id), vec![1]),
            ValueRef::EventDetail {
                message_id,
                event_no,
            } => (2, event_key(*message_id, *event_no), vec![0]),
            ValueRef::ResponseBody {
                message_id,
                destination,
                seq,
            } => (3, response_key(*message_id, destination, *seq), vec![0]),
            ValueRef::ResponseDetail {
                message_id,
                destination,
                seq,
            } => (3, response_key(*message_id, destination, *seq), vec![1]),
            ValueRef::StateValue { namespace, key } => (4, state_key(namespace, key), vec![0]),
            ValueRef::ReferenceValue { name, key } => {
                (5, reference_key(name), key.as_bytes().to_vec())
            }
        }
    }
}

/// Read a length-prefixed string at `*at`, advancing it.
fn read_str(bytes: &[u8], at: &mut usize) -> Option<String> {
    let len = usize::try_from(read_u32(bytes, *at)?).ok()?;
    let start = at.checked_add(4)?;
    let end = start.checked_add(len)?;
    let s = std::str::from_utf8(bytes.get(start..end)?).ok()?;
    *at = end;
    Some(s.to_string())
}

/// The covered values of one stored record, in field order.
fn record_values(
    phase: u8,
    key: &[u8],
    bytes: &[u8],
) -> Result<Vec<(ValueRef, Vec<u8>, String)>, StoreError> {
    let mut out = Vec::new();
    match phase {
        0 => {
            let m: Message = Txn::<dyn Store>::decode(Table::Messages, bytes)?;
            out.push((
                ValueRef::MessageRaw { message_id: m.id },
                vec![0],
                m.raw.clone(),
            ));
            if let Some(e) = m.error {
                out.push((ValueRef::MessageError { message_id: m.id }, vec![1], e));
            }
        }
        1 => {
            let r: WorkRow = Txn::<dyn Store>::decode(Table::Rows, bytes)?;
            if r.stage != Stage::Response {
                out.push((ValueRef::RowPayload { row_id: r.id }, vec![0], r.payload));
            }
            if let Some(e) = r.last_error {
                out.push((ValueRef::RowLastError { row_id: r.id }, vec![1], e));
            }
        }
        2 => {
            let e: Event = Txn::<dyn Store>::decode(Table::Events, bytes)?;
            if let (Some(detail), Some(m), Some(no)) =
                (e.detail, read_u64(key, 0), read_u64(key, 8))
            {
                out.push((
                    ValueRef::EventDetail {
                        message_id: MessageId(m),
                        event_no: no,
                    },
                    vec![0],
                    detail,
                ));
            }
        }
        3 => {
            let r: CapturedResponse = Txn::<dyn Store>::decode(Table::Responses, bytes)?;
            out.push((
                ValueRef::ResponseBody {
                    message_id: r.message_id,
                    destination: r.destination.clone(),
                    seq: r.response_seq,
                },
                vec![0],
                r.body,
            ));
            if let Some(d) = r.detail {
                out.push((
                    ValueRef::ResponseDetail {
                        message_id: r.message_id,
                        destination: r.destination,
                        seq: r.response_seq,
                    },
                    vec![1],
                    d,
                ));
            }
        }
        4 => {
            let e: StateEntry = Txn::<dyn Store>::decode(Table::State, bytes)?;
            let mut at = 0;
            if let (Some(namespace), Some(k)) = (read_str(key, &mut at), read_str(key, &mut at)) {
                out.push((ValueRef::StateValue { namespace, key: k }, vec![0], e.value));
            }
        }
        _ => {
            let s: ReferenceSnapshot = Txn::<dyn Store>::decode(Table::Reference, bytes)?;
            let mut at = 0;
            if let Some(name) = read_str(key, &mut at) {
                for (k, v) in s.rows {
                    let field = k.as_bytes().to_vec();
                    out.push((
                        ValueRef::ReferenceValue {
                            name: name.clone(),
                            key: k,
                        },
                        field,
                        v,
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// Up to `limit` covered values after `after` (from the start when `None`), in the stable walk
/// order described in the module docs.
pub fn covered_values<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    after: Option<&ValueRef>,
    limit: usize,
) -> Result<Vec<(ValueRef, String)>, StoreError> {
    let cursor = after.map(ValueRef::position);
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    for (phase, table) in PHASES {
        let start: &[u8] = match &cursor {
            Some((p, _, _)) if *p > phase => continue,
            Some((p, key, _)) if *p == phase => key,
            _ => &[],
        };
        for item in txn.scan(table, start, None, Direction::Forward)? {
            let (key, bytes) = item?;
            for (target, field, value) in record_values(phase, &key, &bytes)? {
                let here = (phase, key.clone(), field);
                if cursor.as_ref().is_some_and(|c| here <= *c) {
                    continue;
                }
                out.push((target, value));
                if out.len() >= limit {
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

/// Set `slot` to `new` if it holds `expected`; true when it did.
fn cas(slot: &mut String, expected: &str, new: &str) -> bool {
    if slot == expected {
        *slot = new.to_string();
        true
    } else {
        false
    }
}

fn cas_opt(slot: &mut Option<String>, expected: &str, new: &str) -> bool {
    slot.as_mut().is_some_and(|s| cas(s, expected, new))
}

/// Apply one rewrite; true when the value was replaced.
fn rewrite_one(cx: &mut Ctx<'_, '_>, item: &Rewrite) -> ApplyResult<bool> {
    let (expected, new) = (item.expected.as_str(), item.value.as_str());
    Ok(match &item.target {
        ValueRef::MessageRaw { message_id } | ValueRef::MessageError { message_id } => {
            let Some(mut m) = messages::get(cx.txn, *message_id)? else {
                return Ok(false);
            };
            let hit = match item.target {
                ValueRef::MessageRaw { .. } => cas(&mut m.raw, expected, new),
                _ => cas_opt(&mut m.error, expected, new),
            };
            if hit {
                messages::save(cx, &m);
            }
            hit
        }
        ValueRef::RowPayload { row_id } | ValueRef::RowLastError { row_id } => {
            let Some(before) = rows::get(cx.txn, *row_id)? else {
                return Ok(false);
            };
            let mut after = before.clone();
            let hit = match item.target {
                ValueRef::RowPayload { .. } => cas(&mut after.payload, expected, new),
                _ => cas_opt(&mut after.last_error, expected, new),
            };
            if hit {
                rows::save(cx, &before, &after);
            }
            hit
        }
        ValueRef::EventDetail {
            message_id,
            event_no,
        } => {
            let k = event_key(*message_id, *event_no);
            let Some(mut e) = cx.txn.get::<Event>(Table::Events, &k)? else {
                return Ok(false);
            };
            let hit = cas_opt(&mut e.detail, expected, new);
            if hit {
                cx.txn.put(Table::Events, k, &e);
            }
            hit
        }
        ValueRef::ResponseBody {
            message_id,
            destination,
            seq,
        }
        | ValueRef::ResponseDetail {
            message_id,
            destination,
            seq,
        } => {
            let k = response_key(*message_id, destination, *seq);
            let Some(mut r) = cx.txn.get::<CapturedResponse>(Table::Responses, &k)? else {
                return Ok(false);
            };
            let hit = match item.target {
                ValueRef::ResponseBody { .. } => cas(&mut r.body, expected, new),
                _ => cas_opt(&mut r.detail, expected, new),
            };
            if hit {
                cx.txn.put(Table::Responses, k, &r);
            }
            hit
        }
        ValueRef::StateValue { namespace, key } => {
            let k = state_key(namespace, key);
            let Some(mut e) = cx.txn.get::<StateEntry>(Table::State, &k)? else {
                return Ok(false);
            };
            let hit = cas(&mut e.value, expected, new);
            if hit {
                cx.txn.put(Table::State, k, &e);
            }
            hit
        }
        ValueRef::ReferenceValue { name, key } => {
            let k = reference_key(name);
            let Some(mut s) = cx.txn.get::<ReferenceSnapshot>(Table::Reference, &k)? else {
                return Ok(false);
            };
            let hit = s
                .rows
                .get_mut(key)
                .is_some_and(|slot| cas(slot, expected, new));
            if hit {
                cx.txn.put(Table::Reference, k, &s);
            }
            hit
        }
    })
}

/// `RewriteValues`: compare-and-set each item, then one `keys.rotate` audit row.
pub(crate) fn rewrite_values(cx: &mut Ctx<'_, '_>, items: &[Rewrite]) -> ApplyResult<Outcome> {
    if items.len() > MAX_REWRITES {
        return Err(Rejection::invalid("items", format!("more than {MAX_REWRITES}")).into());
    }
    let mut rewritten = 0u64;
    for item in items {
        if rewrite_one(cx, item)? {
            rewritten += 1;
        }
    }
    audit::record_default(
        cx,
        ROTATE_ACTION,
        None,
        format!(
            "{{\"requested\":{},\"rewritten\":{rewritten}}}",
            items.len()
        ),
    )?;
    Ok(Outcome::Count(rewritten))
}
