//! [`AsOperator`]: the proposer's word that the caller holds the operator role (docs/SPEC.md
//! §9.8), so the command it wraps may act on what belongs to other principals.

use crate::apply::{dispatch, Apply, ApplyResult, Ctx};
use crate::wire::command::{AsOperator, Command};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;

impl Apply for AsOperator {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        match self.command.as_ref() {
            // It vouches for one plain command; the wrappers that carry time, a request's
            // fingerprint or a group go around it, never inside.
            Command::AsOperator(_)
            | Command::AtClientTime(_)
            | Command::Fingerprinted(_)
            | Command::Batch(_) => {
                Err(Rejection::invalid("command", "AsOperator wraps one plain command").into())
            }
            command => {
                let was = cx.operator;
                cx.operator = true;
                let out = dispatch::dispatch(cx, command);
                cx.operator = was;
                out
            }
        }
    }
}
