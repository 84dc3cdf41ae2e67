//! `raftlane`: the server binary. It runs a node, a local dev cluster, or a health probe; the
//! demo (`raftlane-demo`), the benchmarks (`raftlane-bench`) and the chaos suite
//! (`raftlane-chaos`) are binaries of their own crates, so this one links none of their
//! dependencies (no PostgreSQL client, no histogram library).

use clap::{Parser, Subcommand};
use raftlane_node::{certs, config::NodeArgs, dev, health, server};

/// mimalloc instead of glibc's malloc: allocation was ~12 % of a saturated node's CPU (many
/// small, short-lived buffers per command), measured on 2026-12-03; the switch is commit 0a362a3
/// (docs/BENCHMARKS.md, "2026-12-03 — one write per FIFO message, mimalloc").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "raftlane",
    version,
    about = "A replicated message pipeline: queues, FIFO lanes and an audit chain decided by Raft."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one node of a cluster (flags, RAFTLANE_* environment variables or --config FILE).
    Node(Box<NodeArgs>),
    /// Run a local three-node cluster in the foreground (127.0.0.1:P..P+2) until Ctrl-C
    /// (the demo workload on such a cluster is the `raftlane-demo` binary).
    Dev(dev::DevArgs),
    /// Probe a node: exit 0 when URL answers 200, else print why and exit 1 (container health checks).
    Health(health::HealthArgs),
    /// Write a CA and one TLS certificate per node (and optionally a client) into a folder.
    Certs(certs::CertsArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    raftlane_node::init_logging();
    match cli.command {
        Command::Node(args) => {
            let opts = args.resolve()?;
            let node = server::start(opts).await?;
            if node
                .run_until_stopped(dev::wait_for_signal())
                .await
                .is_err()
            {
                // Not a returned error: its status tells the supervisor to restart the node.
                std::process::exit(server::EXIT_CORE_FAILED);
            }
            Ok(())
        }
        Command::Dev(args) => dev::run(args).await,
        Command::Health(args) => args.run().await,
        Command::Certs(args) => {
            certs::generate(&args)?;
            println!("certificates written to {}", args.out.display());
            Ok(())
        }
    }
}
