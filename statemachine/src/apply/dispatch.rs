//! Every command to its own [`Apply`] implementation, one line each.

use crate::apply::{Apply, ApplyResult, Ctx};
use crate::wire::command::{Command, ExpireRecords};
use crate::wire::outcome::Outcome;

pub(crate) fn dispatch(cx: &mut Ctx<'_, '_>, command: &Command) -> ApplyResult<Outcome> {
    match command {
        Command::EnqueueIngress(c) => c.apply(cx),
        Command::RecordReceived(c) => c.apply(cx),
        Command::EnqueueMessage(c) => c.apply(cx),
        Command::ClaimReady(c) => c.apply(cx),
        Command::ClaimNextFifo(c) => c.apply(cx),
        Command::RenewLeases(c) => c.apply(cx),
        Command::ReclaimExpired(c) => c.apply(cx),
        Command::ReleaseLane(c) => c.apply(cx),
        Command::RouteHandoff(c) => c.apply(cx),
        Command::Handoff(c) => c.apply(cx),
        Command::TransformHandoff(c) => c.apply(cx),
        Command::MarkDone(c) => c.apply(cx),
        Command::CompleteWithResponse(c) => c.apply(cx),
        Command::IngressHandoff(c) => c.apply(cx),
        Command::MarkFailed(c) => c.apply(cx),
        Command::DeadLetterNow(c) => c.apply(cx),
        Command::Replay(c) => c.apply(cx),
        Command::ReplayDead(c) => c.apply(cx),
        Command::CancelQueued(c) => c.apply(cx),
        Command::PutConfig(c) => c.apply(cx),
        Command::WriteReferenceSnapshot(c) => c.apply(cx),
        Command::PurgeMessageBodies(c) => c.apply(cx),
        Command::PurgeDeadLetters(c) => c.apply(cx),
        Command::PurgeState(c) => c.apply(cx),
        Command::ExpireRecords => ExpireRecords.apply(cx),
        Command::RecordAudit(c) => c.apply(cx),
        Command::SealAuditEpoch(c) => c.apply(cx),
        Command::CreateApproval(c) => c.apply(cx),
        Command::DecideApproval(c) => c.apply(cx),
        Command::PutPrincipal(c) => c.apply(cx),
        Command::RevokePrincipal(c) => c.apply(cx),
        Command::Batch(c) => c.apply(cx),
        Command::RewriteValues(c) => c.apply(cx),
        Command::DoneThenClaimNext(c) => c.apply(cx),
        // --- messagefoundry store: queue side ---
        Command::ClaimFifoHead(c) => c.apply(cx),
        Command::ResetStaleInflight(c) => c.apply(cx),
        Command::DeadLetterMissingDestinations(c) => c.apply(cx),
        Command::DeadLetterMissingHandlers(c) => c.apply(cx),
        Command::RecordAuditAs(c) => c.apply(cx),
        Command::RecordView(c) => c.apply(cx),
        Command::IngressHandoffKeyed(c) => c.apply(cx),
        Command::WriteReferenceSnapshotText(c) => c.apply(cx),
        Command::RecoverInflightOnPromotion(c) => c.apply(cx),
        Command::CreateApprovalAs(c) => c.apply(cx),
        Command::DecideApprovalAs(c) => c.apply(cx),
    }
}
