//! The faults: what each one is, and how it is injected into and removed from a cluster.

use crate::cluster::Cluster;
pub use crate::fault_kind::FaultKind;
use crate::proxy::CutMode;
use std::fmt;

/// Which node a fault hits, resolved when it is injected (the leader changes during a run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Leader,
    /// One of the followers, chosen by `pick`.
    Follower(u64),
}

/// The partition shapes of a three-node cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The leader cut off from both followers (minority leader, majority elects another).
    IsolateLeader,
    /// One follower cut off (majority/minority split with the leader in the majority).
    IsolateFollower(u64),
    /// Only leader → follower is cut (the follower hears nothing, the leader hears it).
    OneWayFromLeader(u64),
    /// Only follower → leader is cut.
    OneWayToLeader(u64),
    /// The leader and one follower cannot talk; the other follower talks to both.
    Bridge(u64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL, restarted when the fault ends.
    Kill {
        target: Target,
    },
    /// SIGSTOP, SIGCONT when the fault ends.
    Pause {
        target: Target,
    },
    Partition {
        shape: Shape,
        mode: CutMode,
    },
    /// Latency on every link of one node, or on all links (`None`).
    Latency {
        target: Option<Target>,
        ms: u64,
    },
    /// Every node SIGKILLed at once, all restarted when the fault ends.
    RestartAll,
    /// One node restarted with its proposer clock offset; restarted without at the end.
    ClockSkew {
        target: Target,
        offset_ms: i64,
    },
    /// One running node's wall clock steps by `step_ms` (as NTP or an operator would step it),
    /// and steps back at the end: the cluster's time must move with neither.
    ClockStep {
        target: Target,
        step_ms: i64,
    },
    /// Each synced write of one node's raft log takes `delay_ms` longer (a failing or saturated
    /// disk), until the fault ends. On the leader, throughput must come back within
    /// [`crate::checkers::throughput::RECOVERS_WITHIN`]: it hands its leadership off.
    SlowFsync {
        target: Target,
        delay_ms: u64,
    },
}

impl Fault {
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Kill { .. } => FaultKind::Kill,
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::Latency { .. } => FaultKind::Latency,
            Fault::RestartAll => FaultKind::RestartAll,
            Fault::ClockSkew { .. } => FaultKind::ClockSkew,
            Fault::ClockStep { .. } => FaultKind::ClockStep,
            Fault::SlowFsync { .. } => FaultKind::SlowFsync,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Leader => f.write_str("leader"),
            Target::Follower(p) => write!(f, "follower#{p}"),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Kill { target } => write!(f, "kill -9 {target}"),
            Fault::Pause { target } => write!(f, "SIGSTOP {target}"),
            Fault::Partition { shape, mode } => write!(f, "partition {shape:?} ({mode:?})"),
            Fault::Latency {
                target: Some(t),
                ms,
            } => write!(f, "+{ms} ms on every link of {t}"),
            Fault::Latency { target: None, ms } => write!(f, "+{ms} ms on every link"),
            Fault::RestartAll => f.write_str("kill -9 every node, then restart all"),
            Fault::ClockSkew { target, offset_ms } => {
                write!(f, "restart {target} with its clock {offset_ms:+} ms")
            }
            Fault::ClockStep { target, step_ms } => {
                write!(f, "step {target}'s running clock {step_ms:+} ms")
            }
            Fault::SlowFsync { target, delay_ms } => {
                write!(f, "+{delay_ms} ms on each fsync of {target}'s raft log")
            }
        }
    }
}

/// How to take an injected fault back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Undo {
    Restart(Vec<u64>),
    Resume(u64),
    HealNetwork,
    RestartWithoutSkew(u64),
    /// Step the node's clock back to the real time (itself a step, the other way).
    StepClockBack(u64),
    /// Give the node's disk its speed back.
    FsyncNormal(u64),
}

/// An injected fault: what it hit, and how to take it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Injected {
    pub description: String,
    pub undo: Undo,
    /// The leader a partition cut off from both followers, if it did.
    pub isolated_leader: Option<u64>,
    /// The fault slows the cluster's writes until it acts on it (a slow disk on the leader):
    /// its throughput is judged ([`crate::checkers::throughput`]).
    pub throughput_judged: bool,
}

impl Injected {
    fn new(description: String, undo: Undo) -> Self {
        Self {
            description,
            undo,
            isolated_leader: None,
            throughput_judged: false,
        }
    }
}

/// Resolve a target to a node id, given the current leader.
pub fn resolve(target: Target, leader: Option<u64>, ids: &[u64]) -> Option<u64> {
    match (target, leader) {
        (Target::Leader, Some(l)) => Some(l),
        (Target::Leader, None) => ids.first().copied(),
        (Target::Follower(p), l) => {
            let followers: Vec<u64> = ids.iter().copied().filter(|i| Some(*i) != l).collect();
            followers
                .get((p % followers.len().max(1) as u64) as usize)
                .copied()
        }
    }
}

/// The directed links a partition cuts, for `leader` and `ids`.
pub fn partition_links(shape: Shape, leader: u64, ids: &[u64]) -> Vec<(u64, u64)> {
    let others = |n: u64| ids.iter().copied().filter(move |i| *i != n);
    let isolate = |n: u64| others(n).flat_map(|o| [(n, o), (o, n)]).collect::<Vec<_>>();
    let follower = |p: u64| resolve(Target::Follower(p), Some(leader), ids).unwrap_or(leader);
    match shape {
        Shape::IsolateLeader => isolate(leader),
        Shape::IsolateFollower(p) => isolate(follower(p)),
        Shape::OneWayFromLeader(p) => vec![(leader, follower(p))],
        Shape::OneWayToLeader(p) => vec![(follower(p), leader)],
        Shape::Bridge(p) => {
            let bridge = follower(p);
            let other = ids
                .iter()
                .copied()
                .find(|i| *i != leader && *i != bridge)
                .unwrap_or(leader);
            if other == leader {
                Vec::new()
            } else {
                vec![(leader, other), (other, leader)]
            }
        }
    }
}

/// Inject `fault`. Returns a description with the nodes it hit, and how to undo it.
pub async fn inject(cluster: &mut Cluster, fault: &Fault) -> anyhow::Result<Injected> {
    let ids = cluster.ids();
    let leader = cluster.leader().await;
    let node =
        |t: Target| resolve(t, leader, &ids).ok_or_else(|| anyhow::anyhow!("no node to target"));
    match fault {
        Fault::Kill { target } => {
            let n = node(*target)?;
            cluster.kill(n).await?;
            Ok(Injected::new(
                format!("{fault}: node {n}"),
                Undo::Restart(vec![n]),
            ))
        }
        Fault::Pause { target } => {
            let n = node(*target)?;
            cluster.pause(n).await?;
            Ok(Injected::new(format!("{fault}: node {n}"), Undo::Resume(n)))
        }
        Fault::Partition { shape, mode } => {
            let l = leader.unwrap_or(1);
            let links = partition_links(*shape, l, &ids);
            let note = cluster.partition(&links, *mode, l).await?;
            let shown: Vec<String> = links.iter().map(|(a, b)| format!("{a}->{b}")).collect();
            let note = note.map(|n| format!(" ({n})")).unwrap_or_default();
            Ok(Injected {
                description: format!("{fault}: leader {l}, cut {}{note}", shown.join(" ")),
                undo: Undo::HealNetwork,
                isolated_leader: (*shape == Shape::IsolateLeader && leader.is_some()).then_some(l),
                throughput_judged: false,
            })
        }
        Fault::Latency { target, ms } => {
            let nodes: Vec<u64> = match target {
                Some(t) => vec![node(*t)?],
                None => ids.clone(),
            };
            cluster.delay(&nodes, *ms).await?;
            Ok(Injected::new(
                format!("{fault}: nodes {nodes:?}"),
                Undo::HealNetwork,
            ))
        }
        Fault::RestartAll => {
            for n in &ids {
                cluster.kill(*n).await?;
            }
            Ok(Injected::new(fault.to_string(), Undo::Restart(ids.clone())))
        }
        Fault::ClockSkew { target, offset_ms } => {
            let n = node(*target)?;
            cluster.restart_with_skew(n, Some(*offset_ms)).await?;
            Ok(Injected::new(
                format!("{fault}: node {n}"),
                Undo::RestartWithoutSkew(n),
            ))
        }
        Fault::ClockStep { target, step_ms } => {
            let n = node(*target)?;
            cluster.step_clock(n, *step_ms).await?;
            let role = if Some(n) == leader {
                "the leader"
            } else {
                "a follower"
            };
            Ok(Injected::new(
                format!("{fault}: node {n} ({role})"),
                Undo::StepClockBack(n),
            ))
        }
        Fault::SlowFsync { target, delay_ms } => {
            let n = node(*target)?;
            cluster.slow_fsync(n, *delay_ms).await?;
            let on_leader = Some(n) == leader;
            let role = if on_leader {
                "the leader"
            } else {
                "a follower"
            };
            Ok(Injected {
                throughput_judged: true,
                ..Injected::new(format!("{fault}: node {n} ({role})"), Undo::FsyncNormal(n))
            })
        }
    }
}

/// Take a fault back.
pub async fn undo(cluster: &mut Cluster, undo: &Undo) -> anyhow::Result<()> {
    match undo {
        Undo::Restart(ids) => {
            for n in ids {
                cluster.start(*n).await?;
            }
            Ok(())
        }
        Undo::Resume(n) => cluster.resume(*n).await,
        Undo::HealNetwork => cluster.heal_network().await,
        Undo::RestartWithoutSkew(n) => cluster.restart_with_skew(*n, None).await,
        Undo::StepClockBack(n) => cluster.step_clock(*n, 0).await,
        Undo::FsyncNormal(n) => cluster.slow_fsync(*n, 0).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_against_the_leader() {
        let ids = [1, 2, 3];
        assert_eq!(resolve(Target::Leader, Some(2), &ids), Some(2));
        assert_eq!(resolve(Target::Follower(0), Some(2), &ids), Some(1));
        assert_eq!(resolve(Target::Follower(1), Some(2), &ids), Some(3));
        assert_eq!(resolve(Target::Follower(5), Some(2), &ids), Some(3));
    }

    #[test]
    fn partition_shapes() {
        let ids = [1, 2, 3];
        let mut iso = partition_links(Shape::IsolateLeader, 2, &ids);
        iso.sort();
        assert_eq!(iso, vec![(1, 2), (2, 1), (2, 3), (3, 2)]);
        assert_eq!(
            partition_links(Shape::OneWayFromLeader(0), 2, &ids),
            vec![(2, 1)]
        );
        assert_eq!(
            partition_links(Shape::OneWayToLeader(1), 2, &ids),
            vec![(3, 2)]
        );
        // Bridge through follower 1: leader 2 and follower 3 cannot talk.
        assert_eq!(
            partition_links(Shape::Bridge(0), 2, &ids),
            vec![(2, 3), (3, 2)]
        );
    }

    #[test]
    fn kinds_parse() {
        assert_eq!(
            FaultKind::parse_list("kill, latency,kill").unwrap(),
            vec![FaultKind::Kill, FaultKind::Latency]
        );
        assert_eq!(FaultKind::parse_list("all").unwrap().len(), 8);
        assert_eq!(
            FaultKind::parse_list("clock-step").unwrap(),
            vec![FaultKind::ClockStep]
        );
        assert!(FaultKind::parse_list("kill,explode").is_err());
    }
}
