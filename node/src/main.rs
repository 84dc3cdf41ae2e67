//! `raftlane`: the server binary. It runs a node, a local dev cluster, a health probe, or `ctl`,
//! the operator's command line (`node/src/ctl/`); the demo (`raftlane-demo`), the benchmarks
//! (`raftlane-bench`) and the chaos suite (`raftlane-chaos`) are binaries of their own crates,
//! so this one links none of their dependencies (no PostgreSQL client, no histogram library).

use clap::{CommandFactory, Parser, Subcommand};
use raftlane_node::exit_status::{ConfigProblem, ExitStatus};
use raftlane_node::{certs, config::NodeArgs, ctl, dev, health, rejoin, restore, server};

/// mimalloc instead of glibc's malloc: with glibc's, allocation was ~12 % of a saturated node's
/// CPU (many small, short-lived buffers per command; docs/BENCHMARKS.md, "one write per FIFO
/// message, mimalloc").
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
    Certs(certs::CertsCommand),
    /// Operate a cluster: status, members, channels, dead letters, tokens, config, audit, backups.
    Ctl(ctl::CtlArgs),
    /// Lay down one node of a new cluster from a backup (`raftlane ctl snapshot save`).
    Restore(restore::RestoreArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let command = match cli.command {
        // No log lines: ctl's output is for people and scripts, its exit status says how it went.
        Command::Ctl(args) => std::process::exit(ctl::run(args, Cli::command).await),
        other => other,
    };
    raftlane_node::init_logging();
    match command {
        Command::Node(args) => {
            // Before anything is written (resolving the options may create the data directory
            // and its admin.token): files of a node are its user's only (node/src/data_dir.rs).
            raftlane_node::data_dir::restrict_umask();
            run_node(*args).await
        }
        Command::Dev(args) => {
            raftlane_node::data_dir::restrict_umask();
            dev::run(args).await
        }
        Command::Health(args) => args.run().await,
        Command::Certs(args) => {
            args.run()?;
            println!("certificates written to {}", args.args.out.display());
            Ok(())
        }
        Command::Restore(args) => {
            raftlane_node::data_dir::restrict_umask();
            std::process::exit(args.run().await)
        }
        Command::Ctl(_) => Ok(()),
    }
}

/// `raftlane node`: returns only after a signal; every failure ends the process with its
/// [`ExitStatus`] (docs/OPERATIONS.md, "Exit statuses").
async fn run_node(args: NodeArgs) -> anyhow::Result<()> {
    let rejoining = args.rejoin;
    let mut opts = match args.resolve() {
        Ok(opts) => opts,
        Err(e) => refuse(anyhow::Error::new(ConfigProblem(e))),
    };
    if rejoining {
        let tls = match opts.tls.as_ref().map(|t| t.peer_client()).transpose() {
            Ok(tls) => tls,
            Err(e) => refuse(anyhow::Error::new(ConfigProblem(e.into()))),
        };
        if let Err(e) = rejoin::prepare(&mut opts, tls.as_ref()).await {
            let status = e.exit_status();
            refuse_as(status, anyhow::Error::new(e));
        }
    }
    let node = match server::start(opts).await {
        Ok(node) => node,
        Err(e) => refuse(e),
    };
    if let Err(failure) = node.run_until_stopped(dev::wait_for_signal()).await {
        // Not a returned error: its status tells the supervisor whether to restart the node.
        std::process::exit(ExitStatus::of_core_failure(&failure).code());
    }
    Ok(())
}

/// End a node that could not start: an ERROR line, the reason on stderr (a damaged store's
/// reason first, as it begins `STATE DAMAGED` or names the damaged log), and its status.
fn refuse(error: anyhow::Error) -> ! {
    refuse_as(ExitStatus::of_start_error(&error), error)
}

/// [`refuse`] with the status already known.
fn refuse_as(status: ExitStatus, error: anyhow::Error) -> ! {
    // The innermost cause that is ours to word: a refusal's own sentence, not the context
    // it was wrapped in.
    let reason = match status {
        ExitStatus::Damaged | ExitStatus::Config => error
            .chain()
            .find(|c| {
                c.downcast_ref::<raftlane_raft::StartError>().is_some()
                    || c.downcast_ref::<ConfigProblem>().is_some()
            })
            .map(|c| c.to_string())
            .unwrap_or_else(|| format!("{error:#}")),
        _ => format!("{error:#}"),
    };
    tracing::error!(exit_status = status.code(), "{reason}");
    eprintln!("{reason}");
    std::process::exit(status.code())
}
