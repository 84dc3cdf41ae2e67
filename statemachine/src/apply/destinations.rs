//! Pausing and resuming a destination (docs/SPEC.md §4.9); the rule it sets is `rules::pause`.

use crate::apply::audit;
use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::destination::PausedDestination;
use crate::rules::validate;
use crate::tables::paused;
use crate::wire::command::SetDestinationPaused;
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;

/// Longest `reason` kept with a pause (the audit row carries it too).
pub const MAX_REASON_LEN: usize = 1024;

impl Apply for SetDestinationPaused {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let SetDestinationPaused {
            destination,
            paused: pause,
            reason,
        } = self;
        validate::name("destination", destination)?;
        if reason.as_ref().is_some_and(|r| r.len() > MAX_REASON_LEN) {
            return Err(
                Rejection::invalid("reason", format!("at most {MAX_REASON_LEN} bytes")).into(),
            );
        }
        let was = paused::get(cx.txn, destination)?;
        match (pause, was) {
            (true, Some(_)) | (false, None) => Ok(Outcome::Count(0)),
            (true, None) => {
                let record = PausedDestination {
                    paused_by: cx.actor.to_string(),
                    paused_at: cx.t,
                    reason: reason.clone(),
                };
                paused::put(cx, destination, &record);
                let why = reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                audit::record_default(
                    cx,
                    "destination.pause",
                    None,
                    format!("{destination}{why}"),
                )?;
                Ok(Outcome::Count(1))
            }
            (false, Some(_)) => {
                paused::delete(cx, destination);
                audit::record_default(cx, "destination.resume", None, destination.clone())?;
                Ok(Outcome::Count(1))
            }
        }
    }
}
