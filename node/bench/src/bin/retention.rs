//! `raftlane-retention-bench`: how long the longest single apply of a retention purge takes, and
//! the whole purge, on one state machine over RocksDB (no Raft, no HTTP: what every replica does
//! when it applies the entries).
//!
//! It fills a fresh store with `--messages` delivered messages (each: one outbound row claimed
//! and done, four events), applied in batches of 1,000 commands like group-committed entries,
//! then purges all of them:
//! - `paged` (default): `RetentionPage` BlankBodies, then DeleteEnded, one page per apply, until
//!   a page answers that nothing is left — what the leader's retention tick proposes;
//! - `legacy`: one `PurgeMessageBodies` over everything, the single unbounded command the tick
//!   proposed before paging, then the paged deletion: the comparison the paging is judged by.
//!
//! Figures and the command are in docs/BENCHMARKS.md ("retention").

use clap::{Parser, ValueEnum};
use raftlane_statemachine::machine::BatchItem;
use raftlane_statemachine::rocks::RocksStore;
use raftlane_statemachine::row::Stage;
use raftlane_statemachine::wire::command::{
    ClaimReady, Delivery, EnqueueMessage, MarkDone, MessageFields, PurgeMessageBodies,
    RetentionPage, RetentionPass, MAX_RETENTION_PAGE,
};
use raftlane_statemachine::{Command, Envelope, Millis, Outcome, StateMachine};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Paged blanking, then paged deletion.
    Paged,
    /// One unbounded PurgeMessageBodies, then paged deletion.
    Legacy,
}

#[derive(Parser)]
#[command(
    name = "raftlane-retention-bench",
    version,
    about = "Longest single apply and total time of a retention purge of N ended messages (one state machine over RocksDB)."
)]
struct Cli {
    /// Ended messages to purge.
    #[arg(long, default_value_t = 1_000_000)]
    messages: u64,
    /// Bytes of each message's raw body and of its outbound payload.
    #[arg(long, default_value_t = 256)]
    body_bytes: usize,
    #[arg(long, value_enum, default_value = "paged")]
    mode: Mode,
    /// Ended messages per page (at most 1,000).
    #[arg(long, default_value_t = MAX_RETENTION_PAGE)]
    page: u32,
    /// Where the RocksDB store goes (a fresh directory below it, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
}

const START: Millis = 1_700_000_000_000;

/// The store and the next log index.
struct Machine {
    sm: StateMachine<RocksStore>,
    index: u64,
}

impl Machine {
    /// Apply `commands` as one batch (one store write), answering each response.
    fn apply(&mut self, now: Millis, commands: Vec<Command>) -> anyhow::Result<Vec<Outcome>> {
        let envelopes: Vec<Envelope> = commands
            .into_iter()
            .map(|c| Envelope::new(now, "bench", c))
            .collect();
        let items: Vec<BatchItem<'_>> = envelopes
            .iter()
            .map(|envelope| {
                self.index += 1;
                BatchItem::Command {
                    index: self.index,
                    envelope,
                }
            })
            .collect();
        let responses = self.sm.apply_batch(&items, &[])?;
        responses
            .into_iter()
            .map(|r| match r {
                Some(Ok(outcome)) => Ok(outcome),
                other => Err(anyhow::anyhow!("unexpected answer {other:?}")),
            })
            .collect()
    }
}

/// Fill the store with `n` delivered messages, 1,000 per round: enqueues, one claim, dones.
fn fill(m: &mut Machine, n: u64, body_bytes: usize) -> anyhow::Result<Millis> {
    let body = "x".repeat(body_bytes);
    let mut now = START;
    let mut left = n;
    let started = Instant::now();
    while left > 0 {
        let round = left.min(1_000);
        let enqueues = (0..round)
            .map(|_| {
                Command::EnqueueMessage(EnqueueMessage {
                    channel: "orders".into(),
                    raw: body.clone(),
                    fields: MessageFields::default(),
                    deliveries: vec![Delivery {
                        destination: "api".into(),
                        payload: body.clone(),
                    }],
                    idempotency_key: None,
                })
            })
            .collect();
        m.apply(now, enqueues)?;
        let claimed = m.apply(
            now,
            vec![Command::ClaimReady(ClaimReady {
                stage: Stage::Outbound,
                limit: round as u32,
                channel: None,
                destination: None,
                owner: "worker".into(),
                ttl_ms: 600_000,
            })],
        )?;
        let Some(Outcome::Claimed(rows)) = claimed.into_iter().next() else {
            anyhow::bail!("claim answered something else");
        };
        let dones = rows
            .iter()
            .map(|r| {
                Command::MarkDone(MarkDone {
                    row_id: r.row_id,
                    fence: r.fence,
                })
            })
            .collect();
        m.apply(now, dones)?;
        left -= round;
        now += 1;
    }
    println!(
        "filled {n} delivered messages in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(now)
}

/// What one purge took.
#[derive(Default)]
struct Timing {
    applies: u64,
    purged: u64,
    longest: Duration,
    total: Duration,
}

impl Timing {
    fn add(&mut self, took: Duration, purged: u64) {
        self.applies += 1;
        self.purged += purged;
        self.longest = self.longest.max(took);
        self.total += took;
    }

    fn print(&self, what: &str) {
        println!(
            "{what}: {} purged in {} apply(s); longest single apply {:.1} ms; total {:.2} s",
            self.purged,
            self.applies,
            self.longest.as_secs_f64() * 1e3,
            self.total.as_secs_f64()
        );
    }
}

/// Run one paged pass to its end, one page per apply (each its own store write, like an entry).
fn paged(
    m: &mut Machine,
    now: Millis,
    pass: RetentionPass,
    older_than: Millis,
    limit: u32,
) -> anyhow::Result<Timing> {
    let mut timing = Timing::default();
    loop {
        let started = Instant::now();
        let out = m.apply(
            now,
            vec![Command::RetentionPage(RetentionPage {
                pass,
                older_than,
                limit,
            })],
        )?;
        let took = started.elapsed();
        let Some(Outcome::RetentionPaged { purged, next, .. }) = out.into_iter().next() else {
            anyhow::bail!("{pass:?} answered something else");
        };
        timing.add(took, purged);
        if next.is_none() {
            return Ok(timing);
        }
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let base = cli.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("raftlane-retention-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = run(&cli, &dir);
    std::fs::remove_dir_all(&dir)?;
    result
}

fn run(cli: &Cli, dir: &std::path::Path) -> anyhow::Result<()> {
    let command: Vec<String> = std::env::args().collect();
    println!("raftlane-retention-bench: {}", command.join(" "));
    let mut m = Machine {
        sm: StateMachine::open(RocksStore::open(dir)?)?,
        index: 0,
    };
    // The one-time walk over messages from before the index: nothing, in a new store.
    m.apply(
        START,
        vec![Command::RetentionPage(RetentionPage {
            pass: RetentionPass::IndexEnded,
            older_than: 0,
            limit: MAX_RETENTION_PAGE,
        })],
    )?;
    let end = fill(&mut m, cli.messages, cli.body_bytes)?;
    let now = end + 1_000;
    // Everything ended before `now`.
    let cutoff = now;
    match cli.mode {
        Mode::Paged => {
            paged(&mut m, now, RetentionPass::BlankBodies, cutoff, cli.page)?
                .print("blank bodies (paged)");
        }
        Mode::Legacy => {
            let started = Instant::now();
            let out = m.apply(
                now,
                vec![Command::PurgeMessageBodies(PurgeMessageBodies {
                    older_than: cutoff,
                })],
            )?;
            let mut timing = Timing::default();
            let purged = match out.first() {
                Some(Outcome::Count(n)) => *n,
                _ => anyhow::bail!("PurgeMessageBodies answered something else"),
            };
            timing.add(started.elapsed(), purged);
            timing.print("blank bodies (one PurgeMessageBodies)");
        }
    }
    paged(&mut m, now, RetentionPass::DeleteEnded, cutoff, cli.page)?
        .print("delete messages (paged)");
    let left = m.sm.read().message(raftlane_statemachine::MessageId(0))?;
    anyhow::ensure!(left.is_none(), "the first message is still there");
    Ok(())
}
