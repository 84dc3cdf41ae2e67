//! Group commit: the envelopes of a [`Batch`], applied one by one as if each had its own entry,
//! each under its own operation id ([`op_id`]).

use crate::apply::{request, Apply, ApplyResult, Ctx};
use crate::model::meta::MetaState;
use crate::storage::{Store, StoreError, Txn};
use crate::wire::command::{op_id, Batch, Command, Envelope, MAX_BATCH};
use crate::wire::outcome::{Outcome, Response};
use crate::wire::rejection::Rejection;

/// Apply the envelopes of a batch at log `index`, each exactly once per request id.
pub(crate) fn apply_group<'s>(
    txn: &mut Txn<'s, dyn Store + 's>,
    meta: &mut MetaState,
    index: u64,
    commands: &[Envelope],
) -> Result<Response, StoreError> {
    if commands.len() > MAX_BATCH {
        return Ok(Err(Rejection::invalid(
            "commands",
            format!("more than {MAX_BATCH} in one batch"),
        )));
    }
    let mut responses = Vec::with_capacity(commands.len());
    for (position, envelope) in commands.iter().enumerate() {
        let response = match envelope.command {
            Command::Batch(_) => Err(Rejection::invalid("commands", "a batch cannot nest")),
            _ => request::once(txn, meta, index, op_id(index, position), envelope)?,
        };
        responses.push(response);
    }
    Ok(Ok(Outcome::Batch(responses)))
}

/// A batch is unpacked before commands are applied ([`apply_group`]); one that reaches `apply`
/// was nested in another.
impl Apply for Batch {
    fn apply(&self, _cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        Err(Rejection::invalid("commands", "a batch cannot nest").into())
    }
}
