//! `raftlane-demo` (the README's first command, through `scripts/demo.sh`): start a local
//! three-node cluster in this process (the test kit's `NodeCluster` with `ClusterOptions::dev`:
//! the same cluster, data directory and flags as `raftlane dev`), push the demo workload through
//! the whole pipeline, print its summary and a curl session to try, and keep the cluster running
//! until Ctrl-C (or exit: `--exit-after-demo`).

use clap::Parser;
use raftlane_node::dev::{self, DevArgs};
use raftlane_testkit::node::{ClusterOptions, NodeCluster};

/// The nodes run in this process, so they allocate as `raftlane node` does (see node/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "raftlane-demo",
    version,
    about = "Start a local three-node raftlane cluster (127.0.0.1:P..P+2), push a demo workload through the whole pipeline, print a summary and a curl session, then keep the cluster running until Ctrl-C."
)]
struct DemoArgs {
    #[command(flatten)]
    cluster: DevArgs,
    /// Messages the demo enqueues.
    #[arg(long, default_value_t = 240)]
    demo_messages: u32,
    /// Exit after the demo instead of waiting for Ctrl-C (for scripts and CI; exit status 1 if
    /// the demo found a problem).
    #[arg(long)]
    exit_after_demo: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = DemoArgs::parse();
    raftlane_node::init_logging();
    dev::prepare(&args.cluster)?;
    let options = ClusterOptions::dev(
        args.cluster.base_port,
        &args.cluster.data_dir,
        args.cluster.admin_token.clone(),
    )?;
    let cluster = NodeCluster::start_with(options).await?;
    dev::announce(
        cluster.leader_id().unwrap_or(0),
        &cluster.addrs,
        &cluster.admin_token,
    );
    let client = raftlane_client::Client::new(cluster.addrs.clone(), cluster.admin_token.clone());
    let mut failed = false;
    let mut interrupted = false;
    // Ctrl-C during the demo still shuts the nodes down cleanly: the signal handler is in place
    // from here on, not only once the demo is over.
    tokio::select! {
        result = raftlane_demo::run(&client, &cluster.addrs, args.demo_messages) => match result {
            Ok(summary) => failed = !summary.ok(),
            Err(e) => {
                eprintln!("demo failed: {e:#}");
                failed = true;
            }
        },
        () = dev::wait_for_signal() => {
            println!("\nInterrupted during the demo.");
            interrupted = true;
        }
    }
    if !interrupted {
        dev::print_curl_help(&cluster.addrs[0], &cluster.admin_token);
        if !args.exit_after_demo {
            println!("\nThe cluster keeps running. Press Ctrl-C to stop it.");
            dev::wait_for_signal().await;
        }
    }
    dev::stop_with(cluster.shutdown()).await;
    if failed {
        anyhow::bail!("the demo found a problem (see above)");
    }
    Ok(())
}
