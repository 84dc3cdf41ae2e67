//! `raftlane-chaos`: the chaos suite's command line (flags: [`raftlane_chaos::ChaosArgs`]). The
//! local backend runs nodes as `raftlane node` child processes of the server binary, by default
//! the `raftlane` next to this executable (then PATH; `--binary` chooses another).

use clap::Parser;
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "raftlane-chaos",
    version,
    about = "Run workloads against a three-node raftlane cluster while injecting faults, then check (non-zero exit on any violation)."
)]
struct Cli {
    #[command(flatten)]
    args: raftlane_chaos::ChaosArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // As the server binary logs (`RAFTLANE_LOG`, default `info,openraft=error`).
    let filter = EnvFilter::try_from_env("RAFTLANE_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,openraft=error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .init();
    raftlane_chaos::run(cli.args).await
}
