//! Key rotation (docs/SPEC.md §2.6): [`RewriteValues`], which swaps covered values in place. The
//! proposer finds them with the walk of [`crate::tables::covered`] and makes the new ciphertexts;
//! the targets and the compare-and-set are [`crate::wire::rewrite`].
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
//! - One audit row [`ROTATE_ACTION`] with detail `{"requested":N,"rewritten":M}` is appended to
//!   the default org's chain in the same command, whatever the count.
//! - More than [`MAX_REWRITES`] items is rejected as invalid (nothing changes).

use crate::apply::{audit, Apply, ApplyResult, Ctx};
use crate::tables::{messages, reference, responses, rows, state};
use crate::wire::command::RewriteValues;
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;
use crate::wire::rewrite::{Rewrite, ValueRef, MAX_REWRITES};

/// The audit action of a rewrite.
pub const ROTATE_ACTION: &str = "keys.rotate";

impl Apply for RewriteValues {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let RewriteValues { items } = self;
        rewrite_values(cx, items)
    }
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
            let Some(mut e) = messages::get_event(cx.txn, *message_id, *event_no)? else {
                return Ok(false);
            };
            let hit = cas_opt(&mut e.detail, expected, new);
            if hit {
                messages::replace_event(cx, *message_id, *event_no, &e);
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
            let Some(mut r) = responses::get(cx.txn, *message_id, destination, *seq)? else {
                return Ok(false);
            };
            let hit = match item.target {
                ValueRef::ResponseBody { .. } => cas(&mut r.body, expected, new),
                _ => cas_opt(&mut r.detail, expected, new),
            };
            if hit {
                responses::put(cx, &r);
            }
            hit
        }
        ValueRef::StateValue { namespace, key } => {
            let Some(mut e) = state::get(cx.txn, namespace, key)? else {
                return Ok(false);
            };
            let hit = cas(&mut e.value, expected, new);
            if hit {
                state::put(cx, namespace, key, &e);
            }
            hit
        }
        ValueRef::ReferenceValue { name, key } => {
            let Some(mut s) = reference::get(cx.txn, name)? else {
                return Ok(false);
            };
            let hit = s
                .rows
                .get_mut(key)
                .is_some_and(|slot| cas(slot, expected, new));
            if hit {
                reference::put(cx, name, &s);
            }
            hit
        }
    })
}

/// `RewriteValues`: compare-and-set each item, then one `keys.rotate` audit row.
fn rewrite_values(cx: &mut Ctx<'_, '_>, items: &[Rewrite]) -> ApplyResult<Outcome> {
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
