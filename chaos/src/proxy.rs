//! The fault proxy: node-to-node traffic passes through it.
//!
//! One listener per target node; every node advertises its proxy address, so peers dial the
//! proxy, which forwards TCP to the real node. Rules apply per *directed* link `from → to`:
//! bytes flowing from `from` to `to` on any connection (requests on connections `from` opened,
//! responses on connections `to` opened) are cut or delayed. A cut either drops (connections
//! are closed at once, new ones are closed on accept) or blackholes (bytes stop flowing; the
//! stream resumes intact when the link heals, like a partition TCP outlives).

use crate::peer_ident;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// How a cut link behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutMode {
    /// Close connections (the sender sees resets / refused connections quickly).
    Drop,
    /// Accept but deliver nothing until healed (the sender sees timeouts).
    Blackhole,
}

/// The rule of one directed link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkRule {
    pub cut: Option<CutMode>,
    pub latency_ms: u64,
}

/// A connection blackholed for longer than this is closed rather than resumed.
const MAX_BLACKHOLE: Duration = Duration::from_secs(60);

#[derive(Debug, Default)]
pub struct ProxyStats {
    pub connections: AtomicU64,
    /// Connections whose source node could not be identified (rules for "any source" apply).
    pub unidentified: AtomicU64,
    /// Connections closed by a drop rule.
    pub dropped: AtomicU64,
    pub bytes: AtomicU64,
}

struct Shared {
    rules: Mutex<HashMap<(u64, u64), LinkRule>>,
    nodes: Vec<u64>,
    generation: watch::Sender<u64>,
    /// pid → node id of the running node processes.
    pids: Mutex<HashMap<u32, u64>>,
    stats: ProxyStats,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Shared {
    /// The rule for bytes flowing `from → to`; an unknown endpoint is treated as "every other
    /// node": cut only if all those links are cut, with the largest latency among them.
    fn rule(&self, from: Option<u64>, to: Option<u64>) -> LinkRule {
        let rules = lock(&self.rules);
        match (from, to) {
            (Some(f), Some(t)) => rules.get(&(f, t)).copied().unwrap_or_default(),
            (None, Some(t)) => self.combined(
                &rules,
                self.nodes.iter().filter(|n| **n != t).map(|n| (*n, t)),
            ),
            (Some(f), None) => self.combined(
                &rules,
                self.nodes.iter().filter(|n| **n != f).map(|n| (f, *n)),
            ),
            (None, None) => LinkRule::default(),
        }
    }

    fn combined(
        &self,
        rules: &HashMap<(u64, u64), LinkRule>,
        links: impl Iterator<Item = (u64, u64)>,
    ) -> LinkRule {
        let mut all_cut: Option<CutMode> = None;
        let mut first = true;
        let mut latency = 0;
        for link in links {
            let r = rules.get(&link).copied().unwrap_or_default();
            latency = latency.max(r.latency_ms);
            all_cut = match (first, all_cut, r.cut) {
                (true, _, c) => c,
                (false, Some(a), Some(_)) => Some(a),
                _ => None,
            };
            first = false;
        }
        LinkRule {
            cut: all_cut,
            latency_ms: latency,
        }
    }

    fn bump(&self) {
        self.generation.send_modify(|g| *g = g.wrapping_add(1));
    }
}

/// The running proxy.
pub struct Proxy {
    shared: Arc<Shared>,
    /// Proxy address per target node (what the node advertises).
    pub addrs: BTreeMap<u64, SocketAddr>,
    tasks: Vec<JoinHandle<()>>,
}

impl Proxy {
    /// Bind one listener per target on 127.0.0.1 and start forwarding to `targets` (real node
    /// addresses).
    pub async fn start(targets: &BTreeMap<u64, SocketAddr>) -> anyhow::Result<Self> {
        let (generation, _) = watch::channel(0u64);
        let shared = Arc::new(Shared {
            rules: Mutex::new(HashMap::new()),
            nodes: targets.keys().copied().collect(),
            generation,
            pids: Mutex::new(HashMap::new()),
            stats: ProxyStats::default(),
        });
        let mut addrs = BTreeMap::new();
        let mut tasks = Vec::new();
        for (id, real) in targets {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            let local = listener.local_addr()?;
            addrs.insert(*id, local);
            tasks.push(tokio::spawn(accept_loop(
                listener,
                *id,
                *real,
                shared.clone(),
            )));
        }
        Ok(Self {
            shared,
            addrs,
            tasks,
        })
    }

    /// Record (or forget) the pid of a node's process, for source identification.
    pub fn set_pid(&self, node: u64, pid: Option<u32>) {
        let mut pids = lock(&self.shared.pids);
        pids.retain(|_, n| *n != node);
        if let Some(pid) = pid {
            pids.insert(pid, node);
        }
    }

    pub fn set_rule(&self, from: u64, to: u64, rule: LinkRule) {
        lock(&self.shared.rules).insert((from, to), rule);
        self.shared.bump();
    }

    /// Cut `from → to`.
    pub fn cut(&self, from: u64, to: u64, mode: CutMode) {
        let mut rules = lock(&self.shared.rules);
        rules.entry((from, to)).or_default().cut = Some(mode);
        drop(rules);
        self.shared.bump();
    }

    /// Add latency to `from → to`.
    pub fn delay(&self, from: u64, to: u64, latency_ms: u64) {
        let mut rules = lock(&self.shared.rules);
        rules.entry((from, to)).or_default().latency_ms = latency_ms;
        drop(rules);
        self.shared.bump();
    }

    /// Remove every rule.
    pub fn heal(&self) {
        lock(&self.shared.rules).clear();
        self.shared.bump();
    }

    pub fn stats(&self) -> &ProxyStats {
        &self.shared.stats
    }

    pub fn shutdown(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn accept_loop(listener: TcpListener, target: u64, real: SocketAddr, shared: Arc<Shared>) {
    let proxy_port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    loop {
        let (conn, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %e, "proxy accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        shared.stats.connections.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(serve(conn, peer, proxy_port, target, real, shared.clone()));
    }
}

async fn identify(peer: SocketAddr, proxy_port: u16, shared: &Arc<Shared>) -> Option<u64> {
    for _ in 0..3 {
        let pids = lock(&shared.pids).clone();
        let port = peer.port();
        let found =
            tokio::task::spawn_blocking(move || peer_ident::identify(port, proxy_port, &pids))
                .await
                .ok()
                .flatten();
        if found.is_some() {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

async fn serve(
    conn: TcpStream,
    peer: SocketAddr,
    proxy_port: u16,
    target: u64,
    real: SocketAddr,
    shared: Arc<Shared>,
) {
    let source = identify(peer, proxy_port, &shared).await;
    if source.is_none() {
        shared.stats.unidentified.fetch_add(1, Ordering::Relaxed);
    }
    if shared.rule(source, Some(target)).cut == Some(CutMode::Drop) {
        shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let upstream =
        match tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(real)).await {
            Ok(Ok(s)) => s,
            _ => return,
        };
    let _ = conn.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (cr, cw) = conn.into_split();
    let (ur, uw) = upstream.into_split();
    let up = pump(cr, uw, source, Some(target), shared.clone());
    let down = pump(ur, cw, Some(target), source, shared.clone());
    // Either direction ending ends the connection (both sockets are dropped here).
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

#[derive(PartialEq, Eq)]
enum End {
    Eof,
    Abort,
}

/// Copy `reader → writer` under the rule of link `from → to`.
async fn pump(
    mut reader: tokio::net::tcp::OwnedReadHalf,
    mut writer: tokio::net::tcp::OwnedWriteHalf,
    from: Option<u64>,
    to: Option<u64>,
    shared: Arc<Shared>,
) {
    let (tx, mut rx) = mpsc::channel::<(tokio::time::Instant, Vec<u8>)>(64);
    let writer_fut = async move {
        while let Some((at, bytes)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if writer.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = writer.shutdown().await;
    };
    let reader_shared = shared.clone();
    let reader_fut = async move {
        let shared = reader_shared;
        let mut gen_rx = shared.generation.subscribe();
        let mut buf = vec![0u8; 64 * 1024];
        let mut blackholed_since: Option<Instant> = None;
        loop {
            let rule = shared.rule(from, to);
            match rule.cut {
                Some(CutMode::Drop) => {
                    shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
                    return End::Abort;
                }
                Some(CutMode::Blackhole) => {
                    let since = *blackholed_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > MAX_BLACKHOLE {
                        return End::Abort;
                    }
                    tokio::select! {
                        changed = gen_rx.changed() => if changed.is_err() { return End::Abort },
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                    continue;
                }
                None => blackholed_since = None,
            }
            tokio::select! {
                n = reader.read(&mut buf) => match n {
                    Ok(0) | Err(_) => return End::Eof,
                    Ok(n) => {
                        shared.stats.bytes.fetch_add(n as u64, Ordering::Relaxed);
                        let at = tokio::time::Instant::now() + Duration::from_millis(rule.latency_ms);
                        if tx.send((at, buf[..n].to_vec())).await.is_err() {
                            return End::Abort;
                        }
                    }
                },
                changed = gen_rx.changed() => if changed.is_err() { return End::Abort },
            }
        }
    };
    tokio::pin!(writer_fut);
    let end = tokio::select! {
        e = reader_fut => e,
        _ = &mut writer_fut => return,
    };
    if end == End::Eof {
        // Deliver what is queued (bounded by the link's latency), then close.
        let _ = tokio::time::timeout(Duration::from_secs(10), writer_fut).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn echo_server() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = l.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    loop {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                if s.write_all(&buf[..n]).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    async fn roundtrip(addr: SocketAddr, within: Duration) -> Option<Duration> {
        let started = Instant::now();
        let fut = async {
            let mut s = TcpStream::connect(addr).await.ok()?;
            s.write_all(b"ping").await.ok()?;
            let mut buf = [0u8; 4];
            s.read_exact(&mut buf).await.ok()?;
            (&buf == b"ping").then_some(())
        };
        tokio::time::timeout(within, fut)
            .await
            .ok()
            .flatten()
            .map(|_| started.elapsed())
    }

    #[tokio::test]
    async fn forwards_delays_and_cuts() {
        let real = echo_server().await;
        let proxy = Proxy::start(&[(1u64, real), (2u64, real)].into())
            .await
            .unwrap();
        let addr = proxy.addrs[&1];
        // The test process is not a registered node: its connections are "unknown source".
        assert!(roundtrip(addr, Duration::from_secs(2)).await.is_some());

        // Latency into node 1 from every other node applies to unknown sources.
        proxy.delay(2, 1, 300);
        let took = roundtrip(addr, Duration::from_secs(3)).await.unwrap();
        assert!(took >= Duration::from_millis(300), "{took:?}");
        proxy.heal();

        // Isolating node 1 (every inbound link cut) cuts unknown sources too.
        proxy.cut(2, 1, CutMode::Drop);
        assert!(roundtrip(addr, Duration::from_millis(500)).await.is_none());
        proxy.heal();
        assert!(roundtrip(addr, Duration::from_secs(2)).await.is_some());

        proxy.cut(2, 1, CutMode::Blackhole);
        assert!(roundtrip(addr, Duration::from_millis(500)).await.is_none());
        proxy.heal();
        assert!(roundtrip(addr, Duration::from_secs(2)).await.is_some());
    }

    #[tokio::test]
    async fn blackholed_stream_resumes_intact_after_heal() {
        let real = echo_server().await;
        let proxy = Proxy::start(&[(1u64, real), (2u64, real)].into())
            .await
            .unwrap();
        let mut s = TcpStream::connect(proxy.addrs[&1]).await.unwrap();
        s.write_all(b"a").await.unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        proxy.cut(2, 1, CutMode::Blackhole);
        tokio::time::sleep(Duration::from_millis(50)).await;
        s.write_all(b"b").await.unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(300), s.read_exact(&mut b))
                .await
                .is_err()
        );
        proxy.heal();
        tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut b))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&b, b"b");
    }

    #[test]
    fn directed_rules_and_unknown_sources() {
        let (generation, _) = watch::channel(0u64);
        let shared = Shared {
            rules: Mutex::new(HashMap::new()),
            nodes: vec![1, 2, 3],
            generation,
            pids: Mutex::new(HashMap::new()),
            stats: ProxyStats::default(),
        };
        lock(&shared.rules).insert(
            (1, 2),
            LinkRule {
                cut: Some(CutMode::Drop),
                latency_ms: 0,
            },
        );
        assert_eq!(shared.rule(Some(1), Some(2)).cut, Some(CutMode::Drop));
        assert_eq!(
            shared.rule(Some(2), Some(1)).cut,
            None,
            "a one-way cut leaves the reverse link up"
        );
        assert_eq!(
            shared.rule(None, Some(2)).cut,
            None,
            "node 3 can still reach node 2"
        );
        lock(&shared.rules).insert(
            (3, 2),
            LinkRule {
                cut: Some(CutMode::Drop),
                latency_ms: 20,
            },
        );
        assert_eq!(
            shared.rule(None, Some(2)),
            LinkRule {
                cut: Some(CutMode::Drop),
                latency_ms: 20
            }
        );
    }
}
