//! The node's one listener: accepts connections, runs the TLS handshake when TLS is on, and
//! serves the router (API, Raft RPCs, `/internal`) over HTTP/1.1 on each, dropping slow and idle
//! connections. Not `axum::serve`, which has no timeouts at all: 200 clients trickling header
//! bytes would hold 200 connections open indefinitely.
//!
//! Three bounds, each from [`ConnLimits`]:
//! - the TLS handshake must finish within the header timeout;
//! - a request's head must arrive within the header timeout (hyper's header read timeout, which
//!   also runs while a keep-alive connection waits for its next request, so it bounds idle
//!   keep-alive connections as well);
//! - a request's body must arrive in full within the body timeout, counted from its head
//!   ([`raftlane_api::body_deadline`]: `408 body_timeout`), so a client sending its body a byte
//!   at a time, which keeps the connection from ever being idle, is dropped too;
//! - a connection on which no byte moves either way for the idle timeout is closed, unless a
//!   handler is running (a membership change may wait minutes for a learner to catch up). That
//!   catches what the header timeout does not: a client that stops reading its answer.

use axum::Router;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use raftlane_api::body_deadline::DeadlineBody;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

/// Default of [`ConnLimits::header_timeout`].
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of [`ConnLimits::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stopping server waits for open requests before it drops their connections.
const DRAIN: Duration = Duration::from_secs(5);

/// Connection timeouts (`--http-header-timeout`, `--idle-timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// TLS handshake, and each request's head (including the wait for it on a kept-alive
    /// connection).
    pub header_timeout: Duration,
    /// No byte read or written, and no handler running.
    pub idle_timeout: Duration,
    /// A request's whole body, from the moment its head arrived.
    pub body_timeout: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            body_timeout: raftlane_api::body_deadline::DEFAULT_BODY_TIMEOUT,
        }
    }
}

/// What the idle check of one connection reads.
struct Activity {
    started: Instant,
    /// Milliseconds after `started` of the last byte read or written.
    last_ms: AtomicU64,
    /// Handlers running on this connection.
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let ms = self.started.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let now = self.started.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// Counts a running handler for as long as it lives (also when its future is dropped).
struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(activity: Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// A stream that records when bytes last moved.
struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        result
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serve `app` on `listener` until `stop` turns true; then stop accepting, let open requests
/// finish for a few seconds and drop every connection.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<TlsAcceptor>,
    limits: ConnLimits,
    mut stop: watch::Receiver<bool>,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    break;
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let _ = tcp.set_nodelay(true);
                    let app = app.clone();
                    let tls = tls.clone();
                    let stop = stop.clone();
                    conns.spawn(async move {
                        match tls {
                            None => serve_conn(tcp, app, limits, stop).await,
                            Some(acceptor) => {
                                let handshake =
                                    tokio::time::timeout(limits.header_timeout, acceptor.accept(tcp));
                                match handshake.await {
                                    Ok(Ok(stream)) => serve_conn(stream, app, limits, stop).await,
                                    Ok(Err(e)) => {
                                        tracing::debug!(%peer, error = %e, "TLS handshake failed")
                                    }
                                    Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                                }
                            }
                        }
                    });
                }
                Err(e) => {
                    // E.g. out of file descriptors: wait a little instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN, async { while conns.join_next().await.is_some() {} });
    if drained.await.is_err() {
        conns.abort_all();
    }
}

/// Serve one connection until it ends, times out or the server stops.
async fn serve_conn<S>(stream: S, app: Router, limits: ConnLimits, mut stop: watch::Receiver<bool>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::new());
    let io = Tracked {
        inner: stream,
        activity: activity.clone(),
    };
    let handler_activity = activity.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let app = app.clone();
        let guard = InFlight::new(handler_activity.clone());
        async move {
            let req =
                req.map(|body| axum::body::Body::new(DeadlineBody::new(body, limits.body_timeout)));
            let answer = app.oneshot(req).await;
            drop(guard);
            answer
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let check_every =
        (limits.idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut tick = tokio::time::interval(check_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopping = false;
    loop {
        tokio::select! {
            ended = conn.as_mut() => {
                if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            changed = stop.changed(), if !stopping => {
                if changed.is_err() || *stop.borrow() {
                    // Finish the request in progress, then close.
                    conn.as_mut().graceful_shutdown();
                    stopping = true;
                }
            }
            _ = tick.tick() => {
                if activity.in_flight.load(Ordering::Relaxed) == 0
                    && activity.idle_for() >= limits.idle_timeout
                {
                    tracing::debug!("closing an idle connection");
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    const LIMITS: ConnLimits = ConnLimits {
        header_timeout: Duration::from_millis(400),
        idle_timeout: Duration::from_millis(400),
        body_timeout: Duration::from_millis(600),
    };

    async fn start(tls: Option<TlsAcceptor>) -> (std::net::SocketAddr, watch::Sender<bool>) {
        let app = Router::new()
            .route("/ok", get(|| async { "ok" }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_millis(1200)).await;
                    "slow"
                }),
            )
            .route(
                "/echo",
                axum::routing::post(|raftlane_api::extract::RawBody(body)| async move { body }),
            );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stop_rx) = watch::channel(false);
        tokio::spawn(serve(listener, app, tls, LIMITS, stop_rx));
        (addr, stop)
    }

    /// Read until the server closes the connection (or 5 s pass); how long that took.
    async fn until_closed(stream: &mut TcpStream) -> Duration {
        let started = Instant::now();
        let mut buf = [0u8; 1024];
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
        started.elapsed()
    }

    #[tokio::test]
    async fn a_client_trickling_its_headers_is_dropped_after_the_header_timeout() {
        let (addr, _stop) = start(None).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        // One byte every 50 ms: each arrives well within any per-read timeout, the whole head
        // never does.
        let head = b"GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let mut closed_at = None;
        for byte in head.iter() {
            if stream.write_all(&[*byte]).await.is_err() {
                closed_at = Some(started.elapsed());
                break;
            }
            let mut buf = [0u8; 256];
            if let Ok(Ok(0)) =
                tokio::time::timeout(Duration::from_millis(50), stream.read(&mut buf)).await
            {
                closed_at = Some(started.elapsed());
                break;
            }
        }
        let closed_at = closed_at.expect("the trickling connection was never closed");
        assert!(
            closed_at < Duration::from_secs(2),
            "closed after {closed_at:?}"
        );
    }

    #[tokio::test]
    async fn a_client_trickling_its_body_gets_408_after_the_body_timeout() {
        let (addr, _stop) = start(None).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        stream
            .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
            .await
            .unwrap();
        // One byte every 50 ms: the connection is never idle for the idle timeout (400 ms),
        // and at this pace the 1,000 bytes would take 50 s.
        let mut answer = Vec::new();
        let mut buf = [0u8; 1024];
        while started.elapsed() < Duration::from_secs(5) {
            if stream.write_all(b"a").await.is_err() {
                break;
            }
            match tokio::time::timeout(Duration::from_millis(50), stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
        let answered_at = started.elapsed();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("\"body_timeout\""), "{answer}");
        assert!(
            answered_at < Duration::from_secs(2),
            "answered after {answered_at:?}"
        );

        // A body sent at once is read whole.
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(
                b"POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello",
            )
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("hello"), "{answer}");
    }

    #[tokio::test]
    async fn a_silent_connection_is_dropped_and_requests_are_still_served() {
        let (addr, _stop) = start(None).await;
        let mut silent = TcpStream::connect(addr).await.unwrap();
        let waited = until_closed(&mut silent).await;
        assert!(waited < Duration::from_secs(2), "closed after {waited:?}");

        // A handler that takes longer than the idle timeout is not cut off.
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("slow"), "{answer}");
    }

    #[tokio::test]
    async fn a_tls_handshake_that_never_comes_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        crate::certs::generate(&crate::certs::CertsArgs {
            out: dir.path().to_path_buf(),
            nodes: vec!["n1".into()],
            extra_names: vec!["n1=127.0.0.1".into()],
            client: None,
            days: 1,
        })
        .unwrap();
        let files = crate::tls::TlsFiles {
            cert: dir.path().join("n1.pem"),
            key: dir.path().join("n1.key"),
            client_ca: None,
            ca: None,
        };
        let acceptor = TlsAcceptor::from(files.server_config().unwrap());
        let (addr, _stop) = start(Some(acceptor)).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        // Half a ClientHello record header, then nothing.
        stream.write_all(&[0x16, 0x03]).await.unwrap();
        let waited = until_closed(&mut stream).await;
        assert!(waited < Duration::from_secs(2), "closed after {waited:?}");
    }
}
