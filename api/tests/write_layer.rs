//! The write path below HTTP: a [`Proposer`] over a [`LocalBackend`] writes, reads and refuses
//! membership changes without any HTTP in between; a follower without a cluster secret says
//! so; every [`WriteError`] becomes the HTTP answer it always was; and the `write` module
//! does not reach up into the HTTP layer.

use raftlane_api::backend::{BoxFuture, ClusterStatus, MembershipChange};
use raftlane_api::by_id::ById;
use raftlane_api::metrics::exposition::Format;
use raftlane_api::metrics::set::MetricSet;
use raftlane_api::metrics::Metrics;
use raftlane_api::write::{Settings, WriteError};
use raftlane_api::{ApiError, Backend, LocalBackend, ProposeError, Proposer};
use raftlane_raft::NotLeader;
use raftlane_statemachine::query::Reader;
use raftlane_statemachine::{Command, Envelope, Rejection, Response, RowId, StoreError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn settings() -> Settings {
    Settings {
        cluster_auth: None,
        peer_timeout: Duration::from_secs(2),
        membership_timeout: Duration::from_secs(2),
        keyring: None,
        peer_tls: None,
    }
}

fn start(backend: Arc<dyn Backend>) -> (Proposer, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::default());
    (
        Proposer::start(backend, settings(), metrics.clone()),
        metrics,
    )
}

/// A command that carries nothing (its construction does not depend on the command structs).
fn envelope(request_id: &str) -> Envelope {
    Envelope::new(raftlane_raft::now_ms(), "tester", Command::ExpireRecords)
        .with_request_id(request_id)
}

#[tokio::test]
async fn a_write_through_the_proposer_is_applied_on_a_local_backend() {
    let backend = Arc::new(LocalBackend::new());
    let (writes, metrics) = start(backend.clone());

    let (index, response) = writes.write(envelope("w-1")).await.expect("written");
    assert!(response.is_ok(), "{response:?}");
    assert_eq!(index, 1);
    assert_eq!(backend.status().last_applied, 1);

    // The same request again is answered with the first answer and index (the state machine's
    // repeat, unwrapped by the proposer), not applied twice.
    let (again, repeated) = writes.write(envelope("w-1")).await.expect("answered");
    assert_eq!(again, index);
    assert_eq!(format!("{repeated:?}"), format!("{response:?}"));

    // Concurrent writes share the batcher's entries and each gets its own answer.
    let many = (0..20).map(|i| writes.write(envelope(&format!("m-{i}"))));
    for answer in futures::future::join_all(many).await {
        let (_, response) = answer.expect("written");
        assert!(response.is_ok(), "{response:?}");
    }

    writes
        .linearize()
        .await
        .expect("a local backend always leads");
    assert_eq!(
        writes.read_index().await.expect("a read index"),
        backend.status().last_applied
    );
    assert!(!writes.saturated());
    assert_eq!(writes.relay_counts(), (0, 0), "nothing was forwarded");
    let rendered = metrics.render(MetricSet::default(), Format::Prometheus);
    assert!(
        rendered
            .contains(r#"raftlane_commands_total{command="expire_records",outcome="accepted"} 22"#),
        "{rendered}"
    );

    // A single replica has no peers: Raft's refusal, as the membership route reports it.
    match writes
        .membership(MembershipChange::SetVoters(vec![1, 2]))
        .await
    {
        Err(WriteError::MembershipRefused(m)) => assert_eq!(m, "a local backend has no peers"),
        other => panic!("expected a membership refusal, got {other:?}"),
    }
}

/// A follower: it serves reads from a [`LocalBackend`] but proposes nothing itself, sending
/// every write, read index and membership change to a leader it cannot reach.
struct Follower(LocalBackend);

fn not_here() -> ProposeError {
    ProposeError::ForwardToLeader(NotLeader {
        leader_id: Some(2),
        addr: Some("127.0.0.1:9".into()),
    })
}

impl Backend for Follower {
    fn node_id(&self) -> u64 {
        3
    }
    fn propose(&self, _: Envelope) -> BoxFuture<'_, Result<(u64, Response), ProposeError>> {
        Box::pin(async { Err(not_here()) })
    }
    fn read_index(&self) -> BoxFuture<'_, Result<u64, ProposeError>> {
        Box::pin(async { Err(not_here()) })
    }
    fn wait_applied(&self, index: u64, t: Duration) -> BoxFuture<'_, Result<(), ProposeError>> {
        self.0.wait_applied(index, t)
    }
    fn with_reader(&self, f: &mut dyn FnMut(&Reader<'_>)) -> Result<(), StoreError> {
        self.0.with_reader(f)
    }
    fn status(&self) -> ClusterStatus {
        self.0.status()
    }
    fn digest(&self) -> BoxFuture<'_, Result<(u64, [u8; 32]), String>> {
        self.0.digest()
    }
    fn add_learner(&self, _: u64, _: String) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async { Err(not_here()) })
    }
    fn change_membership(&self, _: Vec<u64>) -> BoxFuture<'_, Result<(), ProposeError>> {
        Box::pin(async { Err(not_here()) })
    }
    fn ready(&self) -> Result<(), String> {
        Ok(())
    }
}

#[tokio::test]
async fn a_follower_without_a_cluster_secret_cannot_reach_the_leader() {
    let (writes, _) = start(Arc::new(Follower(LocalBackend::new())));
    let no_secret = "this node has no cluster secret: it cannot reach the leader";

    match writes.write(envelope("f-1")).await {
        Err(WriteError::Fatal(m)) => assert_eq!(m, no_secret),
        other => panic!("expected a fatal error, got {other:?}"),
    }
    // The write went to the relay, which counted its call before it found no secret to sign.
    assert_eq!(writes.relay_counts(), (1, 1));
    match writes.linearize().await {
        Err(WriteError::Fatal(m)) => assert_eq!(m, no_secret),
        other => panic!("expected a fatal error, got {other:?}"),
    }
    match writes
        .membership(MembershipChange::AddLearner {
            id: 4,
            addr: "127.0.0.1:10".into(),
        })
        .await
    {
        Err(WriteError::Fatal(m)) => assert_eq!(m, no_secret),
        other => panic!("expected a fatal error, got {other:?}"),
    }
}

fn answer(e: WriteError) -> (u16, &'static str, String, Option<u64>) {
    let a = ApiError::from(e);
    (a.status.as_u16(), a.code, a.message, a.retry_after)
}

#[test]
fn every_write_error_keeps_its_http_answer() {
    let unavailable = ProposeError::Unavailable("no quorum".into());
    assert_eq!(
        answer(WriteError::NoLeader {
            what: "write",
            last: unavailable.clone(),
        }),
        (
            503,
            "unavailable",
            "no leader accepted the write: cluster unavailable: no quorum".into(),
            Some(1)
        )
    );
    assert_eq!(
        answer(WriteError::NotApplied(ProposeError::Unavailable(
            "waiting for index 7: timeout".into()
        ))),
        (
            503,
            "unavailable",
            "cluster unavailable: waiting for index 7: timeout".into(),
            Some(1)
        )
    );
    assert_eq!(
        answer(WriteError::Refused("no".into())),
        (409, "refused", "no".into(), None)
    );
    assert_eq!(
        answer(WriteError::MembershipRefused("change in progress".into())),
        (409, "membership_refused", "change in progress".into(), None)
    );
    assert_eq!(
        answer(WriteError::OutcomeUnknown(
            "the leader did not answer in time".into()
        )),
        (
            503,
            "unavailable",
            "outcome unknown: the leader did not answer in time; check /v1/cluster before retrying"
                .into(),
            Some(1)
        )
    );
    assert_eq!(
        answer(WriteError::Fatal("disk".into())),
        (500, "internal", "disk".into(), None)
    );
    // A node whose storage failed: 503 with a code of its own and a retry hint, and RocksDB's
    // text (paths, file names) stays in the node's log.
    let (status, code, message, retry) = answer(WriteError::StorageUnavailable(
        "when Write Logs: IO error: No space left on device: While appending to file: \
         /data/log/000004.log"
            .into(),
    ));
    assert_eq!((status, code, retry), (503, "storage_unavailable", Some(1)));
    assert!(message.contains("no space left on device"), "{message}");
    assert!(!message.contains("/data/log"), "{message}");
    let (_, _, message, _) = answer(WriteError::StorageUnavailable("IO error: EIO".into()));
    assert!(message.contains("an I/O error"), "{message}");
    // A row a row action needs but that does not exist answers as any row named by id that the
    // caller cannot reach.
    let missing = ApiError::from(WriteError::RowNotFound(RowId(7)));
    let by_id = ById::Row(7).not_found();
    assert_eq!(
        (
            missing.status,
            missing.code,
            &missing.message,
            &missing.field
        ),
        (by_id.status, by_id.code, &by_id.message, &by_id.field)
    );
    // What the write layer's workflows answer: a refusal as the state machine's, the two
    // refusals of key rotation and token creation with their codes.
    assert_eq!(
        answer(WriteError::Rejected(Rejection::UnknownRow(RowId(3)))),
        (404, "not_found", "row 3 not found".into(), None)
    );
    assert_eq!(
        answer(WriteError::NoKeyring),
        (
            409,
            "no_keyring",
            "encryption at rest is off on this node (set RAFTLANE_KEYRING)".into(),
            None
        )
    );
    let (status, code, message, _) = answer(WriteError::TokenNotIssued { name: "w".into() });
    assert_eq!((status, code), (409, "token_not_issued"));
    assert!(
        message.starts_with("the principal 'w' does not hold"),
        "{message}"
    );
    // The cause stays reachable as the error's source.
    let e = WriteError::NoLeader {
        what: "linearizable read",
        last: unavailable,
    };
    let source = std::error::Error::source(&e).map(ToString::to_string);
    assert_eq!(source.as_deref(), Some("cluster unavailable: no quorum"));
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The modules of the HTTP layer, which the write path must not use.
const HTTP_MODULES: &[&str] = &[
    "state",
    "extract",
    "router",
    "route_spec",
    "route_table",
    "rate_limit_layer",
    "routes",
    "auth",
    "error",
    "internal",
    "request_id",
    "openapi",
];

/// What `code` (comments removed, whitespace removed) reaches of the crate root: the first
/// path segment after each `crate::`, every item of a `crate::{...}` group.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            let mut item_depth = 0;
            let mut item = String::new();
            for c in group[..end].chars().chain(std::iter::once(',')) {
                match c {
                    '{' => item_depth += 1,
                    '}' => item_depth -= 1,
                    ',' if item_depth == 0 => {
                        found.push(item.split("::").next().unwrap_or("").to_string());
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push(name);
        }
    }
    found
}

#[test]
fn the_write_module_does_not_import_the_http_layer() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/write");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    assert!(
        files.len() >= 5,
        "expected the write module's files under {dir:?}, found {files:?}"
    );
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable source");
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for word in ["axum", "AppState", "ApiError", "ApiResult", "super::super"] {
            assert!(!code.contains(word), "{file:?} uses `{word}`");
        }
        let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        for path in crate_paths(&compact) {
            assert!(
                !HTTP_MODULES.contains(&path.as_str()),
                "{file:?} uses `crate::{path}` (the HTTP layer)"
            );
        }
    }
}

#[test]
fn the_import_check_sees_grouped_and_nested_paths() {
    let paths = crate_paths("usecrate::{backend::Backend,state::{AppState,X}};crate::error::X");
    assert_eq!(paths, ["backend", "state", "error"]);
}
