//! Test mode's exact client time ([`Envelope::client_time`], docs/SPEC.md §2.1): the one place
//! a command's time is not the machine's clamped clock.

use crate::model::ids::Millis;
use crate::model::meta::MetaState;
use crate::wire::command::Envelope;

/// The time `t` an envelope's command applies at: the time a test client named applies the
/// command at exactly that time, leaving the machine's clock where it was (so a later
/// wall-clock command is not pushed into a test's future); every other command at the
/// proposer's clock clamped monotonic, which moves the machine's clock.
pub(crate) fn time_of(meta: &mut MetaState, envelope: &Envelope) -> Millis {
    match envelope.client_time {
        Some(t) => t,
        None => {
            meta.clock = meta.clock.max(envelope.now_ms);
            meta.clock
        }
    }
}
