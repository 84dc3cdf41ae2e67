//! The command layout of log formats 1 and 2: how their envelopes carry a command.
//!
//! Before format 3 the envelope could not grow a field, so what belongs to the envelope travelled
//! as commands wrapped around the command ([`AtClientTime`], [`Fingerprinted`], [`AsOperator`]),
//! and a command that needed one more field got a twin (`RecordAuditAs`, `IngressHandoffKeyed`,
//! `WriteReferenceSnapshotText`, `CreateApprovalAs`, `DecideApprovalAs`). [`CommandV1`] is that
//! vocabulary, variant for variant in its order (bincode writes a variant as its position), so
//! that every entry a format 1 or 2 log holds decodes, and a node of this build writes, until the
//! cluster's format is raised, the very bytes an older node reads.
//!
//! In memory there is one vocabulary, [`Command`]: the wrappers are the envelope's header
//! fields and each twin is its command with an optional part. [`split`] turns a format 1/2
//! command into header fields and a [`Command`]; [`join`] turns them back, so that an envelope
//! read in format 1 or 2 is written again byte for byte (openraft re-sends and re-stores
//! entries). Wrappers are peeled in the one order proposers wrote them (client time, then the
//! fingerprint, then the operator's word, around one plain command); anything else a log might
//! hold is kept whole as [`Nested`], which `apply` refuses as the wrappers themselves did.

use crate::model::approval::ApprovalStatus;
use crate::model::ids::{ApprovalId, Fence, Millis, RowId};
use crate::wire::codec::{self, DecodeError};
use crate::wire::command::*;
use crate::wire::legacy::Nested;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A command as formats 1 and 2 encode it. Variants are encoded by position: never reorder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommandV1 {
    EnqueueIngress(EnqueueIngress),
    RecordReceived(RecordReceived),
    EnqueueMessage(EnqueueMessage),
    ClaimReady(ClaimReady),
    ClaimNextFifo(ClaimNextFifo),
    RenewLeases(RenewLeases),
    ReclaimExpired(ReclaimExpired),
    ReleaseLane(ReleaseLane),
    RouteHandoff(RouteHandoff),
    Handoff(Handoff),
    TransformHandoff(TransformHandoff),
    MarkDone(MarkDone),
    CompleteWithResponse(CompleteWithResponse),
    IngressHandoff(IngressHandoffV1),
    MarkFailed(MarkFailed),
    DeadLetterNow(DeadLetterNow),
    Replay(Replay),
    ReplayDead(ReplayDead),
    CancelQueued(CancelQueued),
    PutConfig(PutConfig),
    WriteReferenceSnapshot(WriteReferenceSnapshotV1),
    PurgeMessageBodies(PurgeMessageBodies),
    PurgeDeadLetters(PurgeDeadLetters),
    PurgeState(PurgeState),
    ExpireRecords,
    RecordAudit(RecordAuditV1),
    SealAuditEpoch(SealAuditEpoch),
    CreateApproval(CreateApprovalV1),
    DecideApproval(DecideApprovalV1),
    PutPrincipal(PutPrincipal),
    RevokePrincipal(RevokePrincipal),
    Batch(Batch),
    RewriteValues(RewriteValues),
    DoneThenClaimNext(DoneThenClaimNext),
    CreateUser(CreateUser),
    UpdateUser(UpdateUser),
    DeleteUser(DeleteUser),
    UpsertRole(UpsertRole),
    SetUserRoles(SetUserRoles),
    SetAdGroupMap(SetAdGroupMap),
    CreateSession(CreateSession),
    UpdateSession(UpdateSession),
    RevokeUserSessions(RevokeUserSessions),
    EnforceSessionCap(EnforceSessionCap),
    PurgeExpiredSessions(PurgeExpiredSessions),
    ClaimFifoHead(ClaimFifoHead),
    ResetStaleInflight(ResetStaleInflight),
    DeadLetterMissingDestinations(DeadLetterMissingDestinations),
    DeadLetterMissingHandlers(DeadLetterMissingHandlers),
    RecordAuditAs(RecordAuditAsV1),
    RecordView(RecordView),
    IngressHandoffKeyed(IngressHandoffKeyedV1),
    WriteReferenceSnapshotText(WriteReferenceSnapshotTextV1),
    RecoverInflightOnPromotion(RecoverInflightOnPromotion),
    CreateApprovalAs(CreateApprovalAsV1),
    DecideApprovalAs(DecideApprovalAsV1),
    AtClientTime(AtClientTime),
    NodeHeartbeat(NodeHeartbeat),
    NodeLeave(NodeLeave),
    CampaignLeadership(CampaignLeadership),
    ResignLeadership(ResignLeadership),
    BumpCounter(BumpCounter),
    ConsumeApproval(ConsumeApproval),
    SetPrincipalOrgs(SetPrincipalOrgs),
    Fingerprinted(Fingerprinted),
    IssueToken(IssueToken),
    RetentionPage(RetentionPage),
    SessionAt(SessionAt),
    HandOnThenClaimNext(HandOnThenClaimNext),
    AsOperator(AsOperator),
    ReserveOwner(ReserveOwner),
    SetDestinationPaused(SetDestinationPaused),
    SetLogFormat(SetLogFormat),
}

/// Test mode's exact client time, wrapped around the command (format 3: header field 5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AtClientTime {
    pub now_ms: Millis,
    pub command: Box<CommandV1>,
}

/// The request's fingerprint, wrapped around the command (format 3: header field 6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprinted {
    pub fingerprint: [u8; 32],
    pub command: Box<CommandV1>,
}

/// The proposer's word that the caller is an operator (format 3: header field 7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsOperator {
    pub command: Box<CommandV1>,
}

/// [`RecordAudit`] as the envelope's principal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordAuditV1 {
    pub action: String,
    pub channel: Option<String>,
    pub org: Option<String>,
    pub detail: Option<String>,
}

/// [`RecordAudit`] naming its row's actor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordAuditAsV1 {
    pub action: String,
    pub actor: Option<String>,
    pub channel: Option<String>,
    pub org: Option<String>,
    pub detail: Option<String>,
}

/// [`IngressHandoff`] without a child key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngressHandoffV1 {
    pub row_id: RowId,
    pub fence: Fence,
    pub loopback_channel: String,
    pub depth_cap: u32,
}

/// [`IngressHandoff`] with a child key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngressHandoffKeyedV1 {
    pub row_id: RowId,
    pub fence: Fence,
    pub loopback_channel: String,
    pub depth_cap: u32,
    pub child_key: String,
    pub control_id: Option<String>,
    pub message_type: Option<String>,
    pub summary: Option<String>,
    pub peek_failed: bool,
}

/// [`WriteReferenceSnapshot`] with a numeric version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteReferenceSnapshotV1 {
    pub name: String,
    pub version: u64,
    pub rows: BTreeMap<String, String>,
}

/// [`WriteReferenceSnapshot`] with a text label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteReferenceSnapshotTextV1 {
    pub name: String,
    pub version: String,
    pub rows: BTreeMap<String, String>,
}

/// [`CreateApproval`] with a time to live.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateApprovalV1 {
    pub operation: String,
    pub params: String,
    pub ttl_ms: u64,
}

/// [`CreateApproval`] named and dated by the caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateApprovalAsV1 {
    pub key: String,
    pub operation: String,
    pub params: String,
    pub requester: String,
    pub requested_at: Millis,
    pub expires_at: Option<Millis>,
}

/// [`DecideApproval`] by id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecideApprovalV1 {
    pub id: ApprovalId,
    pub approve: bool,
}

/// [`DecideApproval`] by the caller's key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecideApprovalAsV1 {
    pub key: String,
    pub status: ApprovalStatus,
    pub approver: Option<String>,
    pub decided_at: Millis,
}

/// What formats 1 and 2 wrap around a command, and format 3 keeps in the envelope's header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wrappers {
    pub client_time: Option<Millis>,
    pub fingerprint: Option<[u8; 32]>,
    pub as_operator: bool,
}

/// The header fields of `envelope` that formats 1 and 2 write as wrappers around its command.
pub fn wrappers(envelope: &Envelope) -> Wrappers {
    Wrappers {
        client_time: envelope.client_time,
        fingerprint: envelope.fingerprint,
        as_operator: envelope.as_operator,
    }
}

/// The header fields and the command a format 1/2 command stands for.
pub fn split(command: CommandV1) -> (Wrappers, Command) {
    let mut wrappers = Wrappers::default();
    let mut command = command;
    if let CommandV1::AtClientTime(at) = command {
        wrappers.client_time = Some(at.now_ms);
        command = *at.command;
    }
    if let CommandV1::Fingerprinted(f) = command {
        wrappers.fingerprint = Some(f.fingerprint);
        command = *f.command;
    }
    if let CommandV1::AsOperator(a) = command {
        wrappers.as_operator = true;
        command = *a.command;
    }
    // A batch is a whole entry of its own, never wrapped: a wrapped one stays as it was written.
    let wrapped = wrappers != Wrappers::default();
    let live = match command {
        CommandV1::Batch(b) if !wrapped => Command::Batch(b),
        c => plain(c),
    };
    (wrappers, live)
}

/// The format 1/2 command for `wrappers` around `command`: [`split`] backwards. Fails only for
/// a [`Nested`] whose bytes are not a format 1 command (a format 3 reader checks them).
pub fn join(wrappers: &Wrappers, command: &Command) -> Result<CommandV1, DecodeError> {
    let mut out = to_v1(command)?;
    if wrappers.as_operator {
        out = CommandV1::AsOperator(AsOperator {
            command: Box::new(out),
        });
    }
    if let Some(fingerprint) = wrappers.fingerprint {
        out = CommandV1::Fingerprinted(Fingerprinted {
            fingerprint,
            command: Box::new(out),
        });
    }
    if let Some(now_ms) = wrappers.client_time {
        out = CommandV1::AtClientTime(AtClientTime {
            now_ms,
            command: Box::new(out),
        });
    }
    Ok(out)
}

/// The same command variant in both vocabularies, both ways.
macro_rules! same {
    ($($v:ident),* $(,)?) => {
        /// A format 1/2 command that is not a wrapper.
        fn plain(c: CommandV1) -> Command {
            match c {
                $(CommandV1::$v(x) => Command::$v(x),)*
                CommandV1::ExpireRecords => Command::ExpireRecords,
                CommandV1::RecordAudit(x) => Command::RecordAudit(RecordAudit {
                    action: x.action,
                    channel: x.channel,
                    org: x.org,
                    detail: x.detail,
                    author: AuditAuthor::Principal,
                }),
                CommandV1::RecordAuditAs(x) => Command::RecordAudit(RecordAudit {
                    action: x.action,
                    channel: x.channel,
                    org: x.org,
                    detail: x.detail,
                    author: AuditAuthor::Named(x.actor),
                }),
                CommandV1::IngressHandoff(x) => Command::IngressHandoff(IngressHandoff {
                    row_id: x.row_id,
                    fence: x.fence,
                    loopback_channel: x.loopback_channel,
                    depth_cap: x.depth_cap,
                    child: None,
                }),
                CommandV1::IngressHandoffKeyed(x) => Command::IngressHandoff(IngressHandoff {
                    row_id: x.row_id,
                    fence: x.fence,
                    loopback_channel: x.loopback_channel,
                    depth_cap: x.depth_cap,
                    child: Some(ChildKey {
                        key: x.child_key,
                        control_id: x.control_id,
                        message_type: x.message_type,
                        summary: x.summary,
                        peek_failed: x.peek_failed,
                    }),
                }),
                CommandV1::WriteReferenceSnapshot(x) => {
                    Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
                        name: x.name,
                        version: ReferenceVersion::Number(x.version),
                        rows: x.rows,
                    })
                }
                CommandV1::WriteReferenceSnapshotText(x) => {
                    Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
                        name: x.name,
                        version: ReferenceVersion::Label(x.version),
                        rows: x.rows,
                    })
                }
                CommandV1::CreateApproval(x) => Command::CreateApproval(CreateApproval {
                    operation: x.operation,
                    params: x.params,
                    terms: ApprovalTerms::Ttl(x.ttl_ms),
                }),
                CommandV1::CreateApprovalAs(x) => Command::CreateApproval(CreateApproval {
                    operation: x.operation,
                    params: x.params,
                    terms: ApprovalTerms::Named(NamedApproval {
                        key: x.key,
                        requester: x.requester,
                        requested_at: x.requested_at,
                        expires_at: x.expires_at,
                    }),
                }),
                CommandV1::DecideApproval(x) => Command::DecideApproval(DecideApproval {
                    decision: Decision::ById {
                        id: x.id,
                        approve: x.approve,
                    },
                }),
                CommandV1::DecideApprovalAs(x) => Command::DecideApproval(DecideApproval {
                    decision: Decision::ByKey(KeyedDecision {
                        key: x.key,
                        status: x.status,
                        approver: x.approver,
                        decided_at: x.decided_at,
                    }),
                }),
                c @ (CommandV1::AtClientTime(_)
                | CommandV1::Fingerprinted(_)
                | CommandV1::AsOperator(_)
                | CommandV1::Batch(_)) => Command::Nested(Nested(codec::encode(&c))),
            }
        }

        /// The format 1/2 command of a live one (wrappers aside: see [`join`]).
        fn to_v1(c: &Command) -> Result<CommandV1, DecodeError> {
            Ok(match c {
                $(Command::$v(x) => CommandV1::$v(x.clone()),)*
                Command::ExpireRecords => CommandV1::ExpireRecords,
                Command::Batch(b) => CommandV1::Batch(b.clone()),
                Command::Nested(Nested(bytes)) => return codec::decode::<CommandV1>(bytes),
                Command::RecordAudit(x) => match &x.author {
                    AuditAuthor::Principal => CommandV1::RecordAudit(RecordAuditV1 {
                        action: x.action.clone(),
                        channel: x.channel.clone(),
                        org: x.org.clone(),
                        detail: x.detail.clone(),
                    }),
                    AuditAuthor::Named(actor) => CommandV1::RecordAuditAs(RecordAuditAsV1 {
                        action: x.action.clone(),
                        actor: actor.clone(),
                        channel: x.channel.clone(),
                        org: x.org.clone(),
                        detail: x.detail.clone(),
                    }),
                },
                Command::IngressHandoff(x) => match &x.child {
                    None => CommandV1::IngressHandoff(IngressHandoffV1 {
                        row_id: x.row_id,
                        fence: x.fence,
                        loopback_channel: x.loopback_channel.clone(),
                        depth_cap: x.depth_cap,
                    }),
                    Some(child) => CommandV1::IngressHandoffKeyed(IngressHandoffKeyedV1 {
                        row_id: x.row_id,
                        fence: x.fence,
                        loopback_channel: x.loopback_channel.clone(),
                        depth_cap: x.depth_cap,
                        child_key: child.key.clone(),
                        control_id: child.control_id.clone(),
                        message_type: child.message_type.clone(),
                        summary: child.summary.clone(),
                        peek_failed: child.peek_failed,
                    }),
                },
                Command::WriteReferenceSnapshot(x) => match &x.version {
                    ReferenceVersion::Number(version) => {
                        CommandV1::WriteReferenceSnapshot(WriteReferenceSnapshotV1 {
                            name: x.name.clone(),
                            version: *version,
                            rows: x.rows.clone(),
                        })
                    }
                    ReferenceVersion::Label(version) => {
                        CommandV1::WriteReferenceSnapshotText(WriteReferenceSnapshotTextV1 {
                            name: x.name.clone(),
                            version: version.clone(),
                            rows: x.rows.clone(),
                        })
                    }
                },
                Command::CreateApproval(x) => match &x.terms {
                    ApprovalTerms::Ttl(ttl_ms) => CommandV1::CreateApproval(CreateApprovalV1 {
                        operation: x.operation.clone(),
                        params: x.params.clone(),
                        ttl_ms: *ttl_ms,
                    }),
                    ApprovalTerms::Named(n) => CommandV1::CreateApprovalAs(CreateApprovalAsV1 {
                        key: n.key.clone(),
                        operation: x.operation.clone(),
                        params: x.params.clone(),
                        requester: n.requester.clone(),
                        requested_at: n.requested_at,
                        expires_at: n.expires_at,
                    }),
                },
                Command::DecideApproval(x) => match &x.decision {
                    Decision::ById { id, approve } => CommandV1::DecideApproval(DecideApprovalV1 {
                        id: *id,
                        approve: *approve,
                    }),
                    Decision::ByKey(k) => CommandV1::DecideApprovalAs(DecideApprovalAsV1 {
                        key: k.key.clone(),
                        status: k.status,
                        approver: k.approver.clone(),
                        decided_at: k.decided_at,
                    }),
                },
            })
        }
    };
}

same!(
    EnqueueIngress,
    RecordReceived,
    EnqueueMessage,
    ClaimReady,
    ClaimNextFifo,
    RenewLeases,
    ReclaimExpired,
    ReleaseLane,
    RouteHandoff,
    Handoff,
    TransformHandoff,
    MarkDone,
    CompleteWithResponse,
    MarkFailed,
    DeadLetterNow,
    Replay,
    ReplayDead,
    CancelQueued,
    PutConfig,
    PurgeMessageBodies,
    PurgeDeadLetters,
    PurgeState,
    SealAuditEpoch,
    PutPrincipal,
    RevokePrincipal,
    RewriteValues,
    DoneThenClaimNext,
    CreateUser,
    UpdateUser,
    DeleteUser,
    UpsertRole,
    SetUserRoles,
    SetAdGroupMap,
    CreateSession,
    UpdateSession,
    RevokeUserSessions,
    EnforceSessionCap,
    PurgeExpiredSessions,
    ClaimFifoHead,
    ResetStaleInflight,
    DeadLetterMissingDestinations,
    DeadLetterMissingHandlers,
    RecordView,
    RecoverInflightOnPromotion,
    NodeHeartbeat,
    NodeLeave,
    CampaignLeadership,
    ResignLeadership,
    BumpCounter,
    ConsumeApproval,
    SetPrincipalOrgs,
    IssueToken,
    RetentionPage,
    SessionAt,
    HandOnThenClaimNext,
    ReserveOwner,
    SetDestinationPaused,
    SetLogFormat,
);
