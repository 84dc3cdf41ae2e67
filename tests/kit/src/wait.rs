//! Waiting without fixed sleeps: every wait in the kit is a condition polled against a generous
//! deadline, so tests hold on a slow, loaded 2-core machine and still fail with a message when
//! the condition never comes.

use std::future::Future;
use std::time::Duration;

/// Upper bound for any single wait of the kit (elections, convergence, rebinding a port).
pub const WAIT: Duration = Duration::from_secs(60);

/// Poll `cond` every 50 ms until it holds; panics naming `what` once [`WAIT`] has passed.
pub async fn wait_until<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if cond().await {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out waiting for: {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Bind `addr`, retrying for up to `within`: rebinding the port of a node that was just stopped
/// races the teardown of its sockets, and the OS may refuse it for a moment.
pub async fn bind(addr: &str, within: Duration) -> std::io::Result<tokio::net::TcpListener> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => return Ok(l),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(%addr, error = %e, "bind failed; retrying");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// A free loopback listener (port 0): the port is the kernel's choice, so parallel tests never
/// collide, and the listener is handed to the node as is, so no other process can take the port
/// between choosing and serving.
pub async fn free_listener() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a free loopback port")
}

/// Log to the test output, filtered by `RUST_LOG` (default: warnings). Safe to call from every
/// test: only the first call installs the subscriber.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}
