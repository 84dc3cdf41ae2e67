//! The small storage trait the state machine persists through, and its in-memory implementation.
//!
//! The state machine sees storage as a set of ordered key-value tables (RocksDB column families
//! in production). It never writes directly: [`Txn`](crate::storage::txn::Txn) collects one
//! applied batch of commands into a [`WriteBatch`], and the store commits that batch atomically,
//! together with `last_applied`.

use std::collections::BTreeMap;
use std::ops::Bound;

/// The tables (column families) of the state. Keys are built with [`crate::storage::keys`], each
/// table's layout in its module of [`crate::tables`]; the tags are positions, pinned by
/// `tests/golden_wire.rs` (`tables.hex`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    /// Counters, the monotonic clock, `last_applied` and opaque metadata of the Raft adapter.
    Meta,
    Messages,
    Rows,
    /// message id ‖ row id → () : the rows of a message.
    MessageRows,
    /// message id ‖ event no → Event.
    Events,
    /// lane ‖ created_at ‖ seq → () for pending rows: the FIFO order, head first.
    LanePending,
    /// lane ‖ seq → () for inflight rows of a lane (stranded-head recovery).
    LaneInflight,
    /// lane → LaneState (max created_at, lease).
    Lanes,
    /// stage ‖ next_attempt_at ‖ seq → () for pending rows: ClaimReady order.
    Due,
    /// lease_expires_at ‖ seq → () for inflight rows: ReclaimExpired order.
    Leases,
    /// message id ‖ destination ‖ response seq → CapturedResponse.
    Responses,
    /// namespace ‖ key → StateEntry.
    State,
    /// namespace → version.
    StateNamespaces,
    /// name → ReferenceSnapshot.
    Reference,
    /// version → ConfigDoc (all versions; the newest is current).
    Config,
    /// org ‖ seq → AuditRow.
    Audit,
    /// org → AuditHead.
    AuditHeads,
    /// channel ‖ key → IdempotencyRecord.
    Idempotency,
    /// approval id → Approval.
    Approvals,
    /// principal name → Principal; token hash → name lives in `PrincipalTokens`.
    Principals,
    PrincipalTokens,
    /// derived child key → child message id (IngressHandoff dedupe).
    Children,
    /// stage ‖ seq → () for dead rows: the dead-letter view and ReplayDead.
    DeadRows,
    /// expires_at ‖ channel ‖ key → () : idempotency keys by expiry.
    IdempotencyExpiry,
    /// actor ‖ request id → RequestRecord: the remembered answer of a write (see `apply::request`).
    Requests,
    /// expires_at ‖ actor ‖ request id → () : remembered answers by expiry.
    RequestExpiry,
    /// message id → u64: how many events the message has, i.e. the next event's number
    /// (see `tables::messages::event`).
    EventCounts,
    /// user id → User (docs/SPEC.md §13).
    Users,
    /// username → user id: usernames are unique.
    Usernames,
    /// user id ‖ role id → RoleAssignment.
    UserRoles,
    /// role id → AuthRole.
    Roles,
    /// map tag ‖ AD group ‖ role id or channel → () : the AD group maps.
    AdGroupMaps,
    /// token hash → Session.
    Sessions,
    /// user id ‖ token hash → () : the sessions of a user.
    UserSessions,
    /// expires_at ‖ token hash → () : sessions by expiry (PurgeExpiredSessions).
    SessionExpiry,
    // --- messagefoundry store: queue side ---
    /// org ‖ actor ‖ seq → () : audit rows by actor, for every row with an actor appended since
    /// this index exists (see `tables::audit`).
    AuditActors,
    /// org → u64: the first seq of the org's chain `AuditActors` covers (rows before it were
    /// appended by a build without the index, and are scanned instead).
    AuditIndexFrom,
    /// the caller's child key → child message id (an IngressHandoff with a child key, docs/SPEC.md §14.7).
    ChildKeys,
    /// reference snapshot name → its text version (a WriteReferenceSnapshot with a text label, §14.8).
    ReferenceLabels,
    /// the caller's approval key → ApprovalId (CreateApproval with named terms, §14.10).
    ApprovalKeys,
    /// ApprovalId → the caller's approval key (the reverse of `ApprovalKeys`).
    ApprovalKeyOf,
    // --- engine coordination (docs/SPEC.md §15) ---
    /// node id → NodeRecord: the engine processes' registry.
    EngineNodes,
    /// group → LeaderLease: one leadership lease per group.
    Leadership,
    /// name → u64: shared counters (the engine's configuration version).
    Counters,
    // --- security (docs/SPEC.md §9.4) ---
    /// lease owner name → the principal that first claimed under it: an owner name belongs to
    /// one principal (`rules::lease_owner`).
    LeaseOwners,
    /// principal name → Vec<org>: the audit orgs a principal may read and append to (absent:
    /// every org for an unscoped principal, none for a channel-scoped one).
    PrincipalOrgs,
    // --- Request-Id reuse (docs/SPEC.md §10.5) ---
    /// actor ‖ request id → [u8; 32]: the fingerprint of the request a remembered answer
    /// belongs to (see `apply::request`); expires with its `Requests` record.
    RequestFingerprints,
    // --- retention (docs/SPEC.md §8.6) ---
    /// failed (u8) ‖ ended_at ‖ message id → () : ended messages by end time, what the paged
    /// retention passes walk (see `tables::ended`).
    EndedMessages,
    /// message id → MessageEnd: a message's entry in `EndedMessages`, so a replay or a new end
    /// can remove it.
    MessageEnds,
    /// pass tag (u8) → RetentionCursor: where each cursor-keeping retention pass resumes.
    RetentionCursors,
    // --- poison rows (docs/SPEC.md §5.2) ---
    /// tally name → u64: the state machine's own running totals, such as the rows that died of
    /// lease expiries (`rules::retry::expire_lease`), served at `/metrics`.
    Tallies,
    /// row id → RetryPolicy: the policy of a live row's last `fail`, by which a lease expiry on
    /// it is judged (`tables::row_retry`).
    RowRetry,
    // --- a principal acts only on what is its own (docs/SPEC.md §9.8) ---
    /// org ‖ seq → String: the authenticated principal that wrote an audit row whose actor the
    /// caller named (RecordAudit naming its actor): the row reads "actor via principal" (`tables::audit`).
    AuditPrincipals,
    // --- paused destinations (docs/SPEC.md §4.9) ---
    /// destination → PausedDestination: destinations whose rows are handed to no one.
    PausedDestinations,
}

impl Table {
    pub const ALL: [Table; 54] = [
        Table::Meta,
        Table::Messages,
        Table::Rows,
        Table::MessageRows,
        Table::Events,
        Table::LanePending,
        Table::LaneInflight,
        Table::Lanes,
        Table::Due,
        Table::Leases,
        Table::Responses,
        Table::State,
        Table::StateNamespaces,
        Table::Reference,
        Table::Config,
        Table::Audit,
        Table::AuditHeads,
        Table::Idempotency,
        Table::Approvals,
        Table::Principals,
        Table::PrincipalTokens,
        Table::Children,
        Table::DeadRows,
        Table::IdempotencyExpiry,
        Table::Requests,
        Table::RequestExpiry,
        Table::EventCounts,
        Table::Users,
        Table::Usernames,
        Table::UserRoles,
        Table::Roles,
        Table::AdGroupMaps,
        Table::Sessions,
        Table::UserSessions,
        Table::SessionExpiry,
        // --- messagefoundry store: queue side ---
        Table::AuditActors,
        Table::AuditIndexFrom,
        Table::ChildKeys,
        Table::ReferenceLabels,
        Table::ApprovalKeys,
        Table::ApprovalKeyOf,
        // --- engine coordination ---
        Table::EngineNodes,
        Table::Leadership,
        Table::Counters,
        // --- security ---
        Table::LeaseOwners,
        Table::PrincipalOrgs,
        // --- Request-Id reuse ---
        Table::RequestFingerprints,
        // --- retention ---
        Table::EndedMessages,
        Table::MessageEnds,
        Table::RetentionCursors,
        // --- poison rows ---
        Table::Tallies,
        Table::RowRetry,
        // --- a principal acts only on what is its own ---
        Table::AuditPrincipals,
        Table::PausedDestinations,
    ];

    /// Column family name in RocksDB.
    pub fn name(self) -> &'static str {
        match self {
            Table::Meta => "meta",
            Table::Messages => "messages",
            Table::Rows => "rows",
            Table::MessageRows => "message_rows",
            Table::Events => "events",
            Table::LanePending => "lane_pending",
            Table::LaneInflight => "lane_inflight",
            Table::Lanes => "lanes",
            Table::Due => "due",
            Table::Leases => "leases",
            Table::Responses => "responses",
            Table::State => "state",
            Table::StateNamespaces => "state_namespaces",
            Table::Reference => "reference",
            Table::Config => "config",
            Table::Audit => "audit",
            Table::AuditHeads => "audit_heads",
            Table::Idempotency => "idempotency",
            Table::Approvals => "approvals",
            Table::Principals => "principals",
            Table::PrincipalTokens => "principal_tokens",
            Table::Children => "children",
            Table::DeadRows => "dead_rows",
            Table::IdempotencyExpiry => "idempotency_expiry",
            Table::Requests => "requests",
            Table::RequestExpiry => "request_expiry",
            Table::EventCounts => "event_counts",
            Table::Users => "users",
            Table::Usernames => "usernames",
            Table::UserRoles => "user_roles",
            Table::Roles => "roles",
            Table::AdGroupMaps => "ad_group_maps",
            Table::Sessions => "sessions",
            Table::UserSessions => "user_sessions",
            Table::SessionExpiry => "session_expiry",
            // --- messagefoundry store: queue side ---
            Table::AuditActors => "audit_actors",
            Table::AuditIndexFrom => "audit_index_from",
            Table::ChildKeys => "child_keys",
            Table::ReferenceLabels => "reference_labels",
            Table::ApprovalKeys => "approval_keys",
            Table::ApprovalKeyOf => "approval_key_of",
            // --- engine coordination ---
            Table::EngineNodes => "engine_nodes",
            Table::Leadership => "leadership",
            Table::Counters => "counters",
            // --- security ---
            Table::LeaseOwners => "lease_owners",
            Table::PrincipalOrgs => "principal_orgs",
            // --- Request-Id reuse ---
            Table::RequestFingerprints => "request_fingerprints",
            // --- retention ---
            Table::EndedMessages => "ended_messages",
            Table::MessageEnds => "message_ends",
            Table::RetentionCursors => "retention_cursors",
            // --- poison rows ---
            Table::Tallies => "tallies",
            Table::RowRetry => "row_retry",
            // --- a principal acts only on what is its own ---
            Table::AuditPrincipals => "audit_principals",
            Table::PausedDestinations => "paused_destinations",
        }
    }

    /// Stable one-byte tag (used by the digest and snapshot streams).
    pub fn tag(self) -> u8 {
        self as u8
    }

    pub fn from_tag(tag: u8) -> Option<Table> {
        Table::ALL.get(tag as usize).copied()
    }
}

/// A storage failure. Fatal for the replica (it stops applying), never a panic.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage I/O error: {0}")]
    Io(String),
    #[error("corrupt value in table {table:?}: {reason}")]
    Corrupt { table: Table, reason: String },
}

pub type KvPair = (Vec<u8>, Vec<u8>);
/// One entry of the whole state: the unit of snapshot streams.
pub type TableEntry = (Table, Vec<u8>, Vec<u8>);
pub type KvIter<'a> = Box<dyn Iterator<Item = Result<KvPair, StoreError>> + 'a>;

/// Iteration direction of a range scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// One atomic set of puts and deletes.
#[derive(Debug, Default, Clone)]
pub struct WriteBatch {
    pub ops: Vec<(Table, Vec<u8>, Option<Vec<u8>>)>,
}

impl WriteBatch {
    pub fn put(&mut self, table: Table, key: Vec<u8>, value: Vec<u8>) {
        self.ops.push((table, key, Some(value)));
    }
    pub fn delete(&mut self, table: Table, key: Vec<u8>) {
        self.ops.push((table, key, None));
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// Ordered key-value storage with atomic batches.
pub trait Store: Send + Sync {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;

    /// Keys in `[start, end)` (`end = None`: to the end of the table), in `dir` order.
    fn scan<'a>(
        &'a self,
        table: Table,
        start: &[u8],
        end: Option<&[u8]>,
        dir: Direction,
    ) -> Result<KvIter<'a>, StoreError>;

    /// Apply the batch atomically and durably enough for the caller (RocksDB: one WriteBatch).
    fn write(&mut self, batch: WriteBatch) -> Result<(), StoreError>;

    /// Remove everything (before installing a snapshot).
    fn clear(&mut self) -> Result<(), StoreError>;
}

/// In-memory store for tests and the reference model.
#[derive(Debug, Default, Clone)]
pub struct MemStore {
    tables: BTreeMap<Table, BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl MemStore {
    pub fn new() -> Self {
        Self::default()
    }
}

/// Bounds of the `[start, end)` range as `BTreeMap` bounds.
pub(crate) fn range_bounds<'k>(
    start: &'k [u8],
    end: Option<&'k [u8]>,
) -> (Bound<&'k [u8]>, Bound<&'k [u8]>) {
    (
        Bound::Included(start),
        match end {
            Some(e) => Bound::Excluded(e),
            None => Bound::Unbounded,
        },
    )
}

impl Store for MemStore {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.tables.get(&table).and_then(|t| t.get(key)).cloned())
    }

    fn scan<'a>(
        &'a self,
        table: Table,
        start: &[u8],
        end: Option<&[u8]>,
        dir: Direction,
    ) -> Result<KvIter<'a>, StoreError> {
        let Some(t) = self.tables.get(&table) else {
            return Ok(Box::new(std::iter::empty()));
        };
        if end.is_some_and(|e| e <= start) {
            return Ok(Box::new(std::iter::empty()));
        }
        let range = t.range::<[u8], _>(range_bounds(start, end));
        let map = |(k, v): (&Vec<u8>, &Vec<u8>)| Ok((k.clone(), v.clone()));
        Ok(match dir {
            Direction::Forward => Box::new(range.map(map)),
            Direction::Reverse => Box::new(range.rev().map(map)),
        })
    }

    fn write(&mut self, batch: WriteBatch) -> Result<(), StoreError> {
        for (table, key, value) in batch.ops {
            let t = self.tables.entry(table).or_default();
            match value {
                Some(v) => {
                    t.insert(key, v);
                }
                None => {
                    t.remove(&key);
                }
            }
        }
        Ok(())
    }

    fn clear(&mut self) -> Result<(), StoreError> {
        self.tables.clear();
        Ok(())
    }
}
