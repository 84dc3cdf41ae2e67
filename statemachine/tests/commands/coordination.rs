//! Engine coordination (docs/SPEC.md §15): the registry of engine processes with heartbeats and
//! clean leaves, one leadership lease per group with a fence that changes with the owner, and
//! shared counters.

use crate::harness::*;
use raftlane_statemachine::model::coordination::{LeaderLease, NodeStatus};
use raftlane_statemachine::wire::command::{
    BumpCounter, CampaignLeadership, NodeHeartbeat, NodeLeave, ResignLeadership,
};

fn beat(node: &str) -> Command {
    Command::NodeHeartbeat(NodeHeartbeat {
        node_id: node.into(),
        host: Some("host".into()),
        pid: Some(7),
    })
}

fn campaign(node: &str, ttl_ms: u64) -> Command {
    Command::CampaignLeadership(CampaignLeadership {
        group: "mf".into(),
        node_id: node.into(),
        ttl_ms,
    })
}

fn lease(out: Outcome) -> LeaderLease {
    match out {
        Outcome::Leader(l) => l,
        other => panic!("expected Leader, got {other:?}"),
    }
}

#[test]
fn heartbeats_register_refresh_and_a_leave_leaves_a_tombstone() {
    let mut h = Harness::new();
    h.ok(beat("a"));
    let first = h.sm.read().engine_nodes().unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].started_at, first[0].last_seen), (T0, T0));
    h.advance(500);
    h.ok(beat("a"));
    let node = &h.sm.read().engine_nodes().unwrap()[0];
    assert_eq!((node.started_at, node.last_seen), (T0, T0 + 500));
    assert_eq!(node.status, NodeStatus::Active);

    assert_eq!(
        h.ok(Command::NodeLeave(NodeLeave {
            node_id: "a".into()
        })),
        Outcome::Count(1)
    );
    assert_eq!(
        h.sm.read().engine_nodes().unwrap()[0].status,
        NodeStatus::Left
    );
    // Back again: one record, a new incarnation.
    h.advance(500);
    h.ok(beat("a"));
    let nodes = h.sm.read().engine_nodes().unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].status, NodeStatus::Active);
    assert_eq!(nodes[0].started_at, T0 + 1_000);
    assert_eq!(
        h.ok(Command::NodeLeave(NodeLeave {
            node_id: "never".into()
        })),
        Outcome::Count(0)
    );
    assert_eq!(
        h.run(beat("")),
        Err(invalid("node_id", "must not be empty"))
    );
}

#[test]
fn one_leader_at_a_time_and_the_fence_changes_with_the_owner() {
    let mut h = Harness::new();
    let a = lease(h.ok(campaign("a", 1_000)));
    assert_eq!(a.owner, "a");
    assert_eq!(a.expires_at, T0 + 1_000);
    // b finds a's live lease.
    h.advance(400);
    let seen_by_b = lease(h.ok(campaign("b", 1_000)));
    assert_eq!(seen_by_b, a);
    // a renews: same fence, later expiry.
    let renewed = lease(h.ok(campaign("a", 1_000)));
    assert_eq!(renewed.fence, a.fence);
    assert_eq!(renewed.expires_at, T0 + 1_400);
    // a stops renewing; at its expiry the lease still binds, after it b takes over under a
    // new fence.
    h.advance(1_000);
    assert_eq!(lease(h.ok(campaign("b", 1_000))).owner, "a");
    h.advance(1);
    let b = lease(h.ok(campaign("b", 1_000)));
    assert_eq!(b.owner, "b");
    assert!(b.fence > a.fence);
    assert_eq!(b.expires_at, T0 + 2_401);
    assert_eq!(h.sm.read().leadership("mf").unwrap(), Some(b.clone()));
    // The deposed a learns it from its next campaign.
    assert_eq!(lease(h.ok(campaign("a", 1_000))).owner, "b");
}

#[test]
fn resigning_or_leaving_frees_the_lease_at_once() {
    let mut h = Harness::new();
    lease(h.ok(campaign("a", 60_000)));
    let resign = |node: &str| {
        Command::ResignLeadership(ResignLeadership {
            group: "mf".into(),
            node_id: node.into(),
        })
    };
    assert_eq!(
        h.ok(resign("b")),
        Outcome::Count(0),
        "only the holder resigns"
    );
    assert_eq!(h.ok(resign("a")), Outcome::Count(1));
    assert_eq!(lease(h.ok(campaign("b", 60_000))).owner, "b");
    // A clean leave gives the leadership up too.
    h.ok(beat("b"));
    h.ok(Command::NodeLeave(NodeLeave {
        node_id: "b".into(),
    }));
    assert_eq!(h.sm.read().leadership("mf").unwrap(), None);
    assert_eq!(lease(h.ok(campaign("c", 60_000))).owner, "c");
    assert_eq!(
        h.run(campaign("c", 0)),
        Err(invalid("ttl_ms", "must be between 1 and 86400000 ms"))
    );
}

#[test]
fn counters_count_up_from_zero() {
    let mut h = Harness::new();
    assert_eq!(h.sm.read().counter("config_version").unwrap(), 0);
    let bump = || {
        Command::BumpCounter(BumpCounter {
            name: "config_version".into(),
        })
    };
    assert_eq!(h.ok(bump()), Outcome::Count(1));
    assert_eq!(h.ok(bump()), Outcome::Count(2));
    assert_eq!(h.sm.read().counter("config_version").unwrap(), 2);
    assert_eq!(h.sm.read().counter("other").unwrap(), 0);
}

/// docs/SPEC.md §9.8: a node id is bound to the principal of its first heartbeat; another
/// principal's heartbeat, campaign, resignation or leave under it is refused and changes
/// nothing; an operator's (the envelope's `as_operator`) resignation and leave go through, audited; an admin's
/// reservation binds a name ahead of use, and its release frees it.
#[test]
fn a_node_id_is_its_principals_and_an_admin_reserves_one_ahead() {
    use raftlane_statemachine::wire::command::ReserveOwner;
    let mut h = Harness::new();
    h.ok_as("engine-a", beat("node-a"));
    let led = h.ok_as("engine-a", campaign("node-a", 10_000));
    assert_eq!(lease(led).owner, "node-a");
    let taken = || Rejection::NameOfAnother {
        field: "node_id".into(),
        name: "node-a".into(),
        principal: "engine-a".into(),
    };
    let resign = || {
        Command::ResignLeadership(ResignLeadership {
            group: "mf".into(),
            node_id: "node-a".into(),
        })
    };
    let leave = || {
        Command::NodeLeave(NodeLeave {
            node_id: "node-a".into(),
        })
    };
    h.reject_as("engine-b", beat("node-a"), taken());
    h.reject_as("engine-b", campaign("node-a", 10_000), taken());
    h.reject_as("engine-b", resign(), taken());
    h.reject_as("engine-b", leave(), taken());
    // An operator's override.
    let as_op = as_operator;
    assert_eq!(h.ok_as("ops", as_op(resign())), Outcome::Count(1));
    assert_eq!(h.ok_as("ops", as_op(leave())), Outcome::Count(1));
    let overrides =
        h.sm.read()
            .audit_by_actor(DEFAULT_ORG, "ops", "owner.override", 100)
            .unwrap()
            .len();
    assert_eq!(overrides, 2);

    // Reserved ahead: nobody else takes it, and its principal does.
    h.ok(put_principal(
        "engine-c",
        &token_hash('c'),
        Role::Engine,
        None,
    ));
    let reserve = |p: Option<&str>| {
        Command::ReserveOwner(ReserveOwner {
            owner: "node-c".into(),
            principal: p.map(str::to_string),
        })
    };
    assert_eq!(h.ok(reserve(Some("engine-c"))), Outcome::Count(1));
    assert_eq!(h.ok(reserve(Some("engine-c"))), Outcome::Count(0));
    h.reject(
        Command::ReserveOwner(ReserveOwner {
            owner: "node-a".into(),
            principal: Some("engine-c".into()),
        }),
        Rejection::AlreadyExists {
            field: "owner".into(),
            value: "node-a".into(),
        },
    );
    h.reject(
        Command::ReserveOwner(ReserveOwner {
            owner: "node-x".into(),
            principal: Some("nobody".into()),
        }),
        Rejection::UnknownPrincipal("nobody".into()),
    );
    h.reject_as(
        "engine-b",
        beat("node-c"),
        Rejection::NameOfAnother {
            field: "node_id".into(),
            name: "node-c".into(),
            principal: "engine-c".into(),
        },
    );
    h.ok_as("engine-c", beat("node-c"));
    assert_eq!(h.ok(reserve(None)), Outcome::Count(1));
    assert_eq!(h.sm.read().lease_owner("node-c").unwrap(), None);
    h.ok_as("engine-b", beat("node-c"));
    assert_eq!(
        h.sm.read().lease_owner("node-c").unwrap().as_deref(),
        Some("engine-b")
    );
}
