//! `raftlane-bench`: the benchmarks of raftlane and of its PostgreSQL baseline (the library,
//! `src/lib.rs`, says what each workload measures; `scripts/bench.sh` runs the recorded suites).

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
    about = "Measure throughput and latency (enqueue, pipeline, claim) of raftlane or a PostgreSQL baseline."
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
