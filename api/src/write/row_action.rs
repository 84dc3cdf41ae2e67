//! Row actions as the write path makes them: an action's typed body turned into the command to
//! propose (names checked, defaults filled in by [`super::policy`]), and the answer of a plain
//! action once the state machine applied it.
//!
//! Payloads stay plain here: [`super::at_rest`] seals them on their way to the log. Who may act
//! on the row (scope, claim holder, what an action reaches beyond its row) is the http layer's
//! to judge before it asks for the command.

use super::{Proposer, WriteError};
use raftlane_contract::{
    ClaimNext, DeliveryBody, FailBody, ReingressBody, ResponseBody, RouteBody, RowAction,
    RowAnswer, StateOpBody, TransformBody,
};
use raftlane_statemachine::row::WorkRow;
use raftlane_statemachine::wire::command::ChildKey;
use raftlane_statemachine::wire::command::{
    CompleteWithResponse, DeadLetterNow, Delivery, HandOn, HandlerWork, Handoff, IngressHandoff,
    MarkDone, MarkFailed, RouteHandoff, StateOp, TransformHandoff,
};
use raftlane_statemachine::{checks, Command, Envelope, Fence, Outcome, Rejection, RowId};

/// A row action once its body is checked.
#[derive(Debug)]
pub enum RowCommand {
    /// Proposed as it is and answered by [`Proposer::plain_row_action`].
    Plain(Command),
    /// `done` with `claim_next`: the row marked done and its lane's next row claimed in one
    /// command (`DoneThenClaimNext`).
    DoneThenClaim {
        row: WorkRow,
        fence: Fence,
        next: ClaimNext,
    },
    /// `route`, `handoff` or `transform` with `claim_next` (`HandOnThenClaimNext`).
    HandOnThenClaim {
        row: WorkRow,
        action: HandOn,
        next: ClaimNext,
    },
}

impl Proposer {
    /// The command row action `action` on row `row_id` proposes (`row`: the row as the http
    /// layer found it, `None` when it does not exist). A `fail` without a retry policy takes
    /// the config's as of now; an action that needs its row (a `fail`, a `claim_next`) on a
    /// missing one is [`WriteError::RowNotFound`].
    pub async fn row_command(
        &self,
        row_id: RowId,
        row: Option<WorkRow>,
        action: RowAction,
    ) -> Result<RowCommand, WriteError> {
        let invalid = WriteError::Invalid;
        let plain = |command: Result<Command, Rejection>| command.map(RowCommand::Plain);
        match action {
            RowAction::Done(b) => done(row_id, row, b.fence, b.claim_next),
            RowAction::Fail(b) => Ok(RowCommand::Plain(self.fail(row_id, row, b).await?)),
            RowAction::Response(b) => plain(response(row_id, b)).map_err(invalid),
            RowAction::Dead(b) => Ok(RowCommand::Plain(Command::DeadLetterNow(DeadLetterNow {
                row_id,
                fence: b.fence,
                error: b.error,
            }))),
            RowAction::Reingress(b) => plain(reingress(row_id, b)).map_err(invalid),
            hand_on => {
                let (action, claim_next) = handoff(row_id, hand_on).map_err(invalid)?;
                then_claim(row_id, row, action, claim_next)
            }
        }
    }

    /// A `fail` with its retry policy: the one requested, else the config's for the row's
    /// stage and destination ([`Proposer::retry_policy`]).
    async fn fail(
        &self,
        row_id: RowId,
        row: Option<WorkRow>,
        b: FailBody,
    ) -> Result<Command, WriteError> {
        let row = row.ok_or(WriteError::RowNotFound(row_id))?;
        let retry = self
            .retry_policy(row.stage, row.destination_name.as_deref(), b.retry.as_ref())
            .await?;
        Ok(Command::MarkFailed(MarkFailed {
            row_id,
            fence: b.fence,
            error: b.error,
            retry,
        }))
    }

    /// Propose a plain row action (`envelope`: its command as the caller's next proposal) and
    /// answer what it did; a refusal is [`WriteError::Rejected`].
    pub async fn plain_row_action(&self, envelope: Envelope) -> Result<RowAnswer, WriteError> {
        let (index, response) = self.write(envelope).await?;
        action_answer(index, response.map_err(WriteError::Rejected)?)
    }
}

/// `done`: on its own, or with `claim_next` the done and the lane's next claim in one command
/// (its row must exist: the lane is the row's).
fn done(
    row_id: RowId,
    row: Option<WorkRow>,
    fence: Fence,
    claim_next: Option<ClaimNext>,
) -> Result<RowCommand, WriteError> {
    match claim_next {
        None => Ok(RowCommand::Plain(Command::MarkDone(MarkDone {
            row_id,
            fence,
        }))),
        Some(next) => {
            let row = row.ok_or(WriteError::RowNotFound(row_id))?;
            Ok(RowCommand::DoneThenClaim { row, fence, next })
        }
    }
}

/// A `route`'s handoff: handler names checked, its disposition by [`super::policy`].
fn route(row_id: RowId, b: RouteBody) -> Result<RouteHandoff, Rejection> {
    for h in &b.handlers {
        checks::name("handlers.handler", &h.handler)?;
    }
    let disposition = super::policy::route_disposition(b.disposition, b.handlers.len());
    Ok(RouteHandoff {
        row_id,
        fence: b.fence,
        handlers: b
            .handlers
            .into_iter()
            .map(|h| HandlerWork {
                handler: h.handler,
                payload: h.payload,
            })
            .collect(),
        disposition,
    })
}

/// A `transform`'s handoff: its state writes' names checked, their values as stored text.
fn transform(row_id: RowId, b: TransformBody) -> Result<TransformHandoff, Rejection> {
    let state_ops = b
        .state_ops
        .into_iter()
        .map(|op: StateOpBody| {
            checks::name("state_ops.namespace", &op.namespace)?;
            checks::name("state_ops.key", &op.key)?;
            Ok(StateOp {
                namespace: op.namespace,
                key: op.key,
                value: op.value.to_string(),
            })
        })
        .collect::<Result<_, Rejection>>()?;
    Ok(TransformHandoff {
        row_id,
        fence: b.fence,
        deliveries: deliveries(b.deliveries)?,
        state_ops,
    })
}

/// A `response`: the row completed with the destination's answer.
fn response(row_id: RowId, b: ResponseBody) -> Result<Command, Rejection> {
    checks::opt_name("reingress_to", b.reingress_to.as_deref())?;
    Ok(Command::CompleteWithResponse(CompleteWithResponse {
        row_id,
        fence: b.fence,
        body: b.body,
        outcome: b.outcome,
        detail: b.detail,
        reingress_to: b.reingress_to,
    }))
}

/// A `route`, `handoff` or `transform` as the handoff it makes, with its `claim_next`.
/// Called with those three only: any other action is answered by its own arm of
/// [`Proposer::row_command`], and reaching here with one is refused as a bad action.
fn handoff(row_id: RowId, action: RowAction) -> Result<(HandOn, Option<ClaimNext>), Rejection> {
    Ok(match action {
        RowAction::Route(b) => {
            let next = b.claim_next.clone();
            (HandOn::Route(route(row_id, b)?), next)
        }
        RowAction::Handoff(b) => (
            HandOn::Handoff(Handoff {
                row_id,
                fence: b.fence,
                disposition: super::policy::handoff_disposition(b.disposition, b.deliveries.len()),
                deliveries: deliveries(b.deliveries)?,
            }),
            b.claim_next,
        ),
        RowAction::Transform(b) => {
            let next = b.claim_next.clone();
            (HandOn::Transform(transform(row_id, b)?), next)
        }
        other => {
            return Err(Rejection::invalid(
                "action",
                format!("'{}' is not a handoff", other.name()),
            ))
        }
    })
}

/// A handoff as the command to propose: on its own, or with `claim_next` the handoff and the
/// lane's next claim in one command (its row must exist: the lane is the row's).
fn then_claim(
    row_id: RowId,
    row: Option<WorkRow>,
    action: HandOn,
    claim_next: Option<ClaimNext>,
) -> Result<RowCommand, WriteError> {
    let Some(next) = claim_next else {
        return Ok(RowCommand::Plain(match action {
            HandOn::Route(c) => Command::RouteHandoff(c),
            HandOn::Handoff(c) => Command::Handoff(c),
            HandOn::Transform(c) => Command::TransformHandoff(c),
        }));
    };
    let row = row.ok_or(WriteError::RowNotFound(row_id))?;
    Ok(RowCommand::HandOnThenClaim { row, action, next })
}

/// A `reingress`: a caller-named child (`child_key`, docs/SPEC.md §14.7) or a child the state
/// machine names; the child's description only with its key.
fn reingress(row_id: RowId, b: ReingressBody) -> Result<Command, Rejection> {
    checks::name("loopback_channel", &b.loopback_channel)?;
    let depth_cap = super::policy::depth_cap(b.depth_cap);
    if let Some(child_key) = b.child_key {
        checks::name("child_key", &child_key)?;
        return Ok(Command::IngressHandoff(IngressHandoff {
            row_id,
            fence: b.fence,
            loopback_channel: b.loopback_channel,
            depth_cap,
            child: Some(ChildKey {
                key: child_key,
                control_id: b.control_id,
                message_type: b.message_type,
                summary: b.summary,
                peek_failed: b.peek_failed.unwrap_or(false),
            }),
        }));
    }
    for (field, given) in [
        ("control_id", b.control_id.is_some()),
        ("message_type", b.message_type.is_some()),
        ("summary", b.summary.is_some()),
        ("peek_failed", b.peek_failed.is_some()),
    ] {
        if given {
            return Err(Rejection::Invalid {
                field: field.to_string(),
                reason: "describes a caller-named child: only with child_key".to_string(),
            });
        }
    }
    Ok(Command::IngressHandoff(IngressHandoff {
        row_id,
        fence: b.fence,
        loopback_channel: b.loopback_channel,
        depth_cap,
        child: None,
    }))
}

/// A handoff's deliveries, their destination names checked.
pub fn deliveries(list: Vec<DeliveryBody>) -> Result<Vec<Delivery>, Rejection> {
    list.into_iter()
        .map(|d| {
            checks::name("deliveries.destination", &d.destination)?;
            Ok(Delivery {
                destination: d.destination,
                payload: d.payload,
            })
        })
        .collect()
}

/// The answer of a plain row action that took effect.
pub fn action_answer(index: u64, outcome: Outcome) -> Result<RowAnswer, WriteError> {
    Ok(match outcome {
        Outcome::HandedOff(applied) => RowAnswer::HandedOff {
            applied,
            index,
            next: None,
        },
        Outcome::Done => RowAnswer::Done {
            index,
            next: None,
            ok: true,
        },
        Outcome::Failed {
            dead,
            next_attempt_at,
        } => RowAnswer::Failed {
            dead,
            index,
            next_attempt_at,
        },
        Outcome::Reingressed(child_message_id) => RowAnswer::Reingressed {
            child_message_id,
            index,
        },
        other => return Err(WriteError::UnexpectedOutcome(Box::new(other))),
    })
}
