//! The walk over the values covered by encryption at rest, for key rotation (docs/SPEC.md §2.6;
//! the command that rewrites them is [`crate::apply::rewrite`]).
//!
//! ## Walk order
//! [`covered_values`] yields values table by table (messages, rows, events, captured responses,
//! transform state, reference snapshots), each in key order, and within a record in field order.
//! A [`ValueRef`] is its own cursor: pass the last one returned as `after` to continue.
//! `response`-stage row payloads are not covered: they hold a reference that the state machine
//! itself parses ([`crate::model::response::ResponseRef`]), never a body.

use crate::model::message::{Event, Message};
use crate::model::response::CapturedResponse;
use crate::model::row::{Stage, WorkRow};
use crate::model::state::{ReferenceSnapshot, StateEntry};
use crate::storage::{Direction, Store, StoreError, Table, Txn};
use crate::tables::{messages, reference, responses, rows, state};
use crate::wire::rewrite::ValueRef;

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

fn position(target: &ValueRef) -> Position {
    match target {
        ValueRef::MessageRaw { message_id } => (0, messages::key(*message_id), vec![0]),
        ValueRef::MessageError { message_id } => (0, messages::key(*message_id), vec![1]),
        ValueRef::RowPayload { row_id } => (1, rows::row_key(*row_id), vec![0]),
        ValueRef::RowLastError { row_id } => (1, rows::row_key(*row_id), vec![1]),
        ValueRef::EventDetail {
            message_id,
            event_no,
        } => (2, messages::event_key(*message_id, *event_no), vec![0]),
        ValueRef::ResponseBody {
            message_id,
            destination,
            seq,
        } => (3, responses::key(*message_id, destination, *seq), vec![0]),
        ValueRef::ResponseDetail {
            message_id,
            destination,
            seq,
        } => (3, responses::key(*message_id, destination, *seq), vec![1]),
        ValueRef::StateValue { namespace, key } => (4, state::key(namespace, key), vec![0]),
        ValueRef::ReferenceValue { name, key } => {
            (5, reference::key(name), key.as_bytes().to_vec())
        }
    }
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
            if let (Some(detail), Some((message_id, no))) =
                (e.detail, messages::parse_event_key(key))
            {
                out.push((
                    ValueRef::EventDetail {
                        message_id,
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
            if let Some((namespace, k)) = state::parse_key(key) {
                out.push((ValueRef::StateValue { namespace, key: k }, vec![0], e.value));
            }
        }
        _ => {
            let s: ReferenceSnapshot = Txn::<dyn Store>::decode(Table::Reference, bytes)?;
            if let Some(name) = reference::parse_key(key) {
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
pub(crate) fn covered_values<S: Store + ?Sized>(
    txn: &Txn<'_, S>,
    after: Option<&ValueRef>,
    limit: usize,
) -> Result<Vec<(ValueRef, String)>, StoreError> {
    let cursor = after.map(position);
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
