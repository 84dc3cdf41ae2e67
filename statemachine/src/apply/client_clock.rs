//! Test mode's exact client time ([`AtClientTime`], docs/SPEC.md §2.1): the one place a
//! command's time is not the machine's clamped clock.

use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::ids::Millis;
use crate::model::meta::MetaState;
use crate::wire::command::{AtClientTime, Command, Envelope};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;

/// The time `t` an envelope's command applies at, and the command itself: an [`AtClientTime`]
/// applies its inner command at the time it names, leaving the machine's clock where it was
/// (so a later wall-clock command is not pushed into a test's future); every other command at
/// the proposer's clock clamped monotonic, which moves the machine's clock.
pub(crate) fn time_of<'e>(meta: &mut MetaState, envelope: &'e Envelope) -> (Millis, &'e Command) {
    match &envelope.command {
        Command::AtClientTime(at) => (at.now_ms, at.command.as_ref()),
        command => {
            meta.clock = meta.clock.max(envelope.now_ms);
            (meta.clock, command)
        }
    }
}

/// Unwrapped by [`time_of`] before a command applies; one that reaches `apply` was nested in
/// another (or in itself), which names no single time.
impl Apply for AtClientTime {
    fn apply(&self, _cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        Err(Rejection::invalid("command", "a client-time command cannot nest").into())
    }
}
