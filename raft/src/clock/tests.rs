//! The cluster's clock: majority evidence, and what a wall-clock step on any node does to the
//! time the leader stamps (nothing beyond a bounded rate, whichever node, whichever way).

use super::*;
use crate::clock::slew::{DEADBAND_MS, FAST_PER_MILLE};

fn voters(ids: &[NodeId]) -> BTreeSet<NodeId> {
    ids.iter().copied().collect()
}

#[test]
fn a_fast_leader_stamps_the_majoritys_time() {
    // The leader (1) runs 20 s fast: both followers are 20 s behind it.
    let clock = ClusterClock::new(1, 0, 30_000);
    clock.record(2, -20_000);
    clock.record(3, -19_990);
    assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(-19_990));
}

#[test]
fn a_fast_follower_cannot_move_the_time() {
    let clock = ClusterClock::new(1, 0, 30_000);
    clock.record(2, 20_000);
    clock.record(3, 5);
    assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(5));
    // With the third node silent, the two remaining clocks must both have reached the time.
    let clock = ClusterClock::new(1, 0, 30_000);
    clock.record(2, 20_000);
    assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(0));
    // A node an hour fast is cut off: with only it answering, there is no majority.
    let clock = ClusterClock::new(1, 0, 30_000);
    clock.record(2, 3_600_000);
    assert!(clock.cluster_offset(&voters(&[1, 2, 3])).is_err());
}

#[test]
fn a_node_beyond_the_bound_does_not_count() {
    // Node 2 runs 20 s fast (inside the bound), node 3 60 s fast (cut off): the time is
    // node 1's and node 2's lower one, not the 20 s the two fast clocks agree on.
    let clock = ClusterClock::new(1, 0, 30_000);
    clock.record(2, 20_000);
    clock.record(3, 60_000);
    assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(0));
}

#[test]
fn a_slow_node_cannot_hold_the_time_back() {
    let clock = ClusterClock::new(1, 0, 30_000);
    clock.record(2, -60_000);
    clock.record(3, 2);
    assert_eq!(clock.cluster_offset(&voters(&[1, 2, 3])), Ok(0));
}

#[test]
fn without_a_majority_of_samples_there_is_no_time() {
    let clock = ClusterClock::new(1, 0, 30_000);
    assert_eq!(
        clock.cluster_offset(&voters(&[1, 2, 3])),
        Err(ClockError::NoMajority { have: 1, need: 2 })
    );
    // A single voter is its own majority; learners' samples do not count.
    assert_eq!(clock.cluster_offset(&voters(&[1])), Ok(0));
    // No voters known (membership not loaded yet): no time, not this node's own clock.
    assert!(clock.cluster_offset(&voters(&[])).is_err());
    clock.record(4, 10_000);
    assert!(clock.cluster_offset(&voters(&[1, 2, 3])).is_err());
}

#[test]
fn a_node_beyond_the_bound_knows_it() {
    // Node 3 runs an hour fast: both others answer an hour behind it.
    let clock = ClusterClock::new(3, 0, 30_000);
    clock.record(1, -3_600_000);
    clock.record(2, -3_599_990);
    let skew = clock.own_skew(&voters(&[1, 2, 3])).expect("skew reported");
    assert!(skew.contains("3599990 ms ahead of"), "{skew}");
    // Node 1 (honest) sees node 3 fast but itself in agreement with node 2.
    let clock = ClusterClock::new(1, 0, 30_000);
    clock.record(2, 10);
    clock.record(3, 3_600_000);
    assert_eq!(clock.own_skew(&voters(&[1, 2, 3])), None);
}

#[test]
fn an_answer_is_placed_at_the_middle_of_its_round_trip() {
    let time = Arc::new(ManualTime::new(1_000));
    let clock = ClusterClock::with_source(1, 30_000, time.clone());
    let sent = clock.wall_ms();
    time.advance(20);
    let received = clock.wall_ms();
    clock.record_answer(2, sent, 61_010, received);
    assert_eq!(clock.offsets()[0].offset_ms, 60_000);
}

#[test]
fn restamps_beyond_the_bound_are_counted_but_an_unstamped_proposal_is_not() {
    let clock = ClusterClock::new(1, 0, 30_000);
    clock.note_restamp("a", 100_000, 10_000);
    clock.note_restamp("a", 10_001, 10_000);
    assert_eq!(clock.restamped_far(), 1);
    // The leader's own timer proposals were built with 0 and counted as ~1.8·10¹² ms of skew
    // every time (logged every 10 s).
    let mut envelope = Envelope::new(0, "raftlane:timer", Command::ExpireRecords);
    clock.stamp(&voters(&[1]), &mut envelope).expect("stamped");
    assert!(envelope.now_ms > 1_700_000_000_000);
    assert_eq!(clock.restamped_far(), 1);
}

#[test]
fn a_new_term_starts_from_the_evidence() {
    let time = Arc::new(ManualTime::new(1_000_000));
    let clock = ClusterClock::with_source(1, 30_000, time.clone());
    let single = voters(&[1]);
    clock.leading(1);
    assert_eq!(clock.cluster_now(&single), Ok(1_000_000));
    // The only clock steps 25 s: in term 1 the time moves 1 % faster at most...
    time.step(25_000);
    time.advance(1_000);
    assert_eq!(clock.cluster_now(&single), Ok(1_001_010));
    // ...a leader of a later term starts from its evidence.
    clock.leading(2);
    assert_eq!(clock.cluster_now(&single), Ok(1_026_000));
}

// --- wall-clock steps in a simulated three-node cluster ---------------------------------------

const BASE: u64 = 1_800_000_000_000;
const BOUND: u64 = 30_000;

struct SimNode {
    id: NodeId,
    time: Arc<ManualTime>,
    clock: ClusterClock,
}

/// Three nodes on hand-moved clocks; node 1 leads and heartbeats both followers every 250 ms
/// (1 ms each way), stamping every 50 ms.
struct Sim {
    nodes: Vec<SimNode>,
    /// Real time elapsed, ms.
    real: u64,
}

impl Sim {
    fn new() -> Self {
        let nodes = (1..=3)
            .map(|id| {
                let time = Arc::new(ManualTime::new(BASE));
                let clock = ClusterClock::with_source(id, BOUND, time.clone());
                SimNode { id, time, clock }
            })
            .collect();
        Sim { nodes, real: 0 }
    }

    fn pass(&mut self, ms: u64) {
        for n in &self.nodes {
            n.time.advance(ms);
        }
        self.real += ms;
    }

    /// The true time.
    fn truth(&self) -> u64 {
        BASE + self.real
    }

    /// One heartbeat from the leader (index 0) to follower `f`; `step` (node index, ms) happens
    /// while it is in flight, after the follower answered.
    fn heartbeat(&mut self, f: usize, step: Option<(usize, i64)>) {
        let sent = self.nodes[0].clock.wall_ms();
        self.pass(1);
        let follower = &self.nodes[f];
        // The follower checks the signature's freshness; a refusal still carries its clock.
        if follower.clock.wall_ms().abs_diff(sent) <= BOUND {
            follower.clock.record_call(self.nodes[0].id, sent);
        }
        let peer_ms = follower.clock.wall_ms();
        if let Some((who, ms)) = step {
            self.nodes[who].time.step(ms);
        }
        self.pass(1);
        let received = self.nodes[0].clock.wall_ms();
        self.nodes[0]
            .clock
            .record_answer(self.nodes[f].id, sent, peer_ms, received);
    }
}

/// What the stamps of one run looked like.
#[derive(Debug, Default)]
struct Seen {
    stamps: u64,
    refused: u64,
    /// Largest distance of a stamp from the true time.
    worst_ms: u64,
}

/// Checks one clock's successive readings: never faster than real time (+1 % slew), never
/// slower than half of it, never backwards.
#[derive(Default)]
struct Pace {
    last: Option<(u64, u64)>,
}

impl Pace {
    fn check(&mut self, what: &str, real: u64, t: u64) {
        if let Some((last_real, last_t)) = self.last {
            let dr = real - last_real;
            assert!(t >= last_t, "{what}: backwards {last_t} → {t}");
            let dt = t - last_t;
            assert!(
                dt <= dr + dr * FAST_PER_MILLE / 1000 + 1,
                "{what}: moved {dt} ms in {dr} ms of real time (at {real})"
            );
            assert!(
                dt + 1 >= dr / 2,
                "{what}: stood (nearly) still: {dt} ms in {dr} ms of real time (at {real})"
            );
        }
        self.last = Some((real, t));
    }
}

/// Node `who` (0: the leader) steps `step_ms` at 30 s, inside a heartbeat, and back at 80 s;
/// the leader stamps every 50 ms for 120 s, the stepped follower estimates as often (its
/// estimate, the lower of its own clock and the leader's, never runs ahead of the real time).
fn run(who: usize, step_ms: i64) -> (Seen, Sim) {
    let mut sim = Sim::new();
    let all = voters(&[1, 2, 3]);
    sim.nodes[0].clock.leading(1);
    let mut seen = Seen::default();
    let mut stamps = Pace::default();
    let what = format!("node {} stepping {step_ms:+} ms", who + 1);
    while sim.real < 120_000 {
        if sim.real.is_multiple_of(250) {
            let step = match sim.real {
                30_000 => Some((who, step_ms)),
                80_000 => Some((who, -step_ms)),
                _ => None,
            };
            sim.heartbeat(1, step);
            sim.heartbeat(2, None);
        }
        if sim.real.is_multiple_of(50) {
            match sim.nodes[0].clock.cluster_now(&all) {
                Ok(t) => {
                    seen.stamps += 1;
                    seen.worst_ms = seen.worst_ms.max(t.abs_diff(sim.truth()));
                    stamps.check(&format!("{what}: stamp"), sim.real, t);
                }
                Err(_) => seen.refused += 1,
            }
            if who != 0 {
                let t = sim.nodes[who].clock.estimate_now(&all);
                assert!(
                    t <= sim.truth() + 5,
                    "{what}: node {}'s estimate runs {} ms ahead",
                    who + 1,
                    t - sim.truth()
                );
            }
        }
        sim.pass(10 - sim.real % 10);
    }
    (seen, sim)
}

#[test]
fn a_step_of_the_leaders_wall_clock_inside_the_bound_moves_nothing() {
    for step in [1_500, -1_500, 5_000, -5_000, 25_000, -25_000] {
        let (seen, sim) = run(0, step);
        assert_eq!(seen.refused, 0, "step {step:+}: {seen:?}");
        // The stamped time stayed with the real time (no +25 s, no +12.5 s sample), and so
        // neither cut a lease nor stood still afterwards.
        assert!(seen.worst_ms <= 5, "step {step:+}: {seen:?}");
        let leader = &sim.nodes[0].clock;
        assert_eq!(
            leader.wall_steps(),
            2,
            "step {step:+}: the step and its undo"
        );
        assert!(
            leader.discarded_samples() >= 2,
            "step {step:+}: the samples across each step are thrown away"
        );
    }
}

#[test]
fn a_step_of_the_leaders_wall_clock_beyond_the_bound_cuts_it_off_without_moving_the_time() {
    for step in [600_000, -600_000] {
        let (seen, _) = run(0, step);
        // While stepped, every peer is beyond the bound: no majority, no stamp (the followers
        // refuse its calls, and elect another leader). Before and after, the real time.
        // 50 s stepped, 16 stamps a second.
        assert_eq!(seen.refused, 800, "step {step:+}: {seen:?}");
        assert!(seen.worst_ms <= 5, "step {step:+}: {seen:?}");
    }
}

#[test]
fn a_step_of_a_followers_wall_clock_moves_nothing() {
    for step in [5_000, -5_000, 25_000, -25_000, 600_000, -600_000] {
        let (seen, _) = run(1, step);
        assert_eq!(seen.refused, 0, "step {step:+}: {seen:?}");
        assert!(seen.worst_ms <= 5, "step {step:+}: {seen:?}");
    }
}

#[test]
fn a_new_leader_after_a_step_starts_near_the_real_time() {
    // Follower 2's clock stepped back 25 s long ago; it is elected and stamps with samples from
    // both others: the majority's time, not its own.
    let mut sim = Sim::new();
    sim.nodes[1].time.step(-25_000);
    for _ in 0..40 {
        sim.heartbeat(1, None);
        sim.heartbeat(2, None);
        sim.pass(248);
    }
    let all = voters(&[1, 2, 3]);
    let _ = sim.nodes[1].clock.estimate_now(&all);
    // Node 2 leads now: its vote requests' answers give it the others' clocks.
    let node2 = &sim.nodes[1].clock;
    for peer in [0, 2] {
        let sent = node2.wall_ms();
        let peer_ms = sim.nodes[peer].clock.wall_ms();
        let received = node2.wall_ms();
        node2.record_answer(sim.nodes[peer].id, sent, peer_ms, received);
    }
    node2.leading(2);
    let t = node2.cluster_now(&all).expect("a majority");
    assert!(
        t.abs_diff(sim.truth()) <= DEADBAND_MS,
        "{t} vs {}",
        sim.truth()
    );
}
