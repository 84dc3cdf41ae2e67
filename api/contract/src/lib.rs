//! # raftlane-contract
//!
//! What a raftlane node and its clients agree on over HTTP, in one place: header names, how a
//! name becomes a path segment, the error body, and every route's query, request body and
//! answer as a named type, grouped by area ([`messages`], [`work`], [`rows`], [`config`],
//! [`audit`], [`admin`], [`recovery`], [`dashboard`], [`coordination`], [`tokens`], [`keys`],
//! [`cluster`], [`users`]), with what queries share: paging ([`page`]), a read's consistency
//! ([`read`]) and a list's spelling ([`comma_list`]). The server parses and answers with these
//! types, the Rust client sends and decodes them, and the OpenAPI document's schemas and query
//! parameters are derived from them ([`schema`]), so a change to a member shows up on all three
//! at compile time. A member with a closed set of values is an enum, so both sides and the
//! document know the set, and a value outside it is refused naming the member.
//!
//! Answers may carry the state machine's plain types as they are (a claimed row, a message, a
//! work row, the configuration document); their schemas are derived where those types are
//! declared (`raftlane-statemachine`'s `schema` feature), so there is one declaration of each.
//! The crate depends only on those plain types, not on storage or Raft, so a program that only
//! calls the API never compiles RocksDB.

pub mod admin;
pub mod audit;
pub mod cluster;
pub mod comma_list;
pub mod config;
pub mod coordination;
pub mod dashboard;
pub mod destinations;
pub mod error;
pub mod headers;
pub mod keys;
pub mod messages;
pub mod page;
pub mod path;
pub mod read;
pub mod recovery;
pub mod rows;
pub mod schema;
pub mod tokens;
pub mod users;
pub mod work;

pub use admin::{
    ApprovalCreated, ApprovalDecided, ApprovalList, ApprovalListQuery, ApprovalListStatus,
    ApprovalRequest, ApprovalView, DecideRequest, KeyedApprovalRequest, KeyedDecideRequest,
    KeyedDecided, NamespaceList, NamespaceQuery, NamespaceVersion, PurgeKind, PurgeRequest, Purged,
    Reference, ReferenceList, ReferenceRequest, ReferenceSetInfo, ReferenceVersion,
    ReferenceWritten, StateValue,
};
pub use audit::{
    AuditAnchor, AuditAppendRequest, AuditAppended, AuditEntry, AuditQuery, AuditRows,
    AuditSealRequest, AuditVerification,
};
pub use cluster::{
    Ack, ClusterStatus, Health, LeaderTransferRequest, LeaderTransferred, LearnerRequest,
    LogFormatRequest, LogFormatStatus, Member, MembershipRequest, OpenApiDocument, Readiness,
    RemovedLearner, SnapshotTaken, StateDigest, SNAPSHOT_INDEX_HEADER, SNAPSHOT_NODE_HEADER,
};
pub use comma_list::CommaList;
pub use config::{ConfigAnswer, ConfigWritten};
pub use coordination::{
    CampaignRequest, CounterValue, EngineNode, EngineNodes, HeartbeatAck, HeartbeatRequest,
    HeldLanes, Leadership, NodeLeft, ResignRequest, Resigned,
};
pub use dashboard::{
    ConnectionMetrics, DestinationTraffic, InboundTraffic, StorageStats, TrafficQuery,
};
pub use destinations::{PauseRequest, PauseState, PausedDestinationView, PausedDestinations};
pub use error::{ErrorBody, ErrorDetail};
pub use keys::{RotateRequest, Rotated};
pub use messages::{
    Count, DeadLetterOrder, DeadLetterQuery, DeadLetterRow, DeadLetterStage, DeadLetters,
    DetailMessage, DetailResponse, DetailRow, EnqueueRequest, Enqueued, ListedMessage,
    MessageDetail, MessageDetailQuery, MessageList, MessageMeta, MessageQuery, ReplayDeadRequest,
    Requeued, RowMeta, Stats, Viewed, ViewedRequest,
};
pub use page::{Offset, PageLimit, UnboundedLimit, MAX_PAGE};
pub use raftlane_statemachine::model::config::ConfigDoc;
pub use raftlane_statemachine::model::ids::{ApprovalId, Fence, MessageId, Millis, RowId};
pub use raftlane_statemachine::row::{RowStatus, Stage};
pub use raftlane_statemachine::wire::command::{HandoffDisposition, RouteDisposition};
pub use raftlane_statemachine::ClaimedRow;
pub use read::{Consistency, ReadOpts};
pub use recovery::{
    Reclaimed, RecoverRequest, Recovered, ResetRows, StageScope, SweepRequest, Swept,
};
pub use rows::{
    ClaimNext, DeadBody, DeliveryBody, DoneBody, FailBody, HandoffBody, ItemError, ReingressBody,
    ResponseBody, RetryBody, RetryBodyJson, RouteBody, RouteHandler, RowAction, RowActionBody,
    RowActionItem, RowActionResult, RowActionResults, RowActionsRequest, RowAnswer, RowDetail,
    StateOpBody, TransformBody,
};
pub use tokens::{
    OwnerBinding, OwnerReservation, Revoked, TokenCreated, TokenInfo, TokenList, TokenRequest,
};
pub use users::{
    AuthProvider, ChannelScopeChange, ConsumeChange, CreateSessionRequest, CreateUserRequest,
    DisabledChange, GroupEntry, GroupMap, GroupMapQuery, GroupMapRequest, GroupMapWritten,
    LoginFailureChange, NoChangeBody, PasswordChange, ProfileChange, ReauthChange,
    RevokeSessionsRequest, RoleAssignmentView, RoleList, RoleRequest, RoleView, RoleWritten,
    RolesAssigned, SessionCapRequest, SessionChangeAt, SessionChangeBody, SessionChanged,
    SessionCreated, SessionList, SessionView, SessionsPurged, SessionsRevoked, TotpEnableChange,
    TotpSecretChange, UserChangeBody, UserChanged, UserCreated, UserDeleted, UserList, UserQuery,
    UserRoles, UserRolesRequest, UserSecrets, UserView,
};
pub use work::{
    CancelRequest, Cancelled, ClaimRequest, Claimed, FifoClaim, FifoClaimRequest, FifoEmptyReason,
    LaneList, LaneListQuery, LaneStatus, ReleaseRequest, Released, RenewRequest, Renewed,
};
