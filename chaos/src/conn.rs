//! One attempt of one API call against one node, classified the way the checkers need it.
//!
//! The workloads do their own failover instead of the client's: the typed client retries a
//! write on a 503 or on another node, which can turn "maybe applied" into a misleading definite
//! answer. Here every call is a single attempt on a node chosen by the caller (a pinned client
//! with a zero failover deadline), under our own timeout, and the answer is one of: success,
//! a definite refusal, "never sent" (safe to retry anywhere) or unknown.

use raftlane_client::{Client, ClientError};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt<T> {
    Ok(T),
    /// A 4xx answer: the cluster decided, nothing happened (`code` is the API error code).
    Refused {
        status: u16,
        code: String,
        message: String,
    },
    /// The request never reached a node (connection refused): nothing happened.
    NotSent(String),
    /// Timeout, dropped connection, 503, 5xx: it may or may not have happened.
    Unknown(String),
}

impl<T> Attempt<T> {
    /// The same attempt with its success value mapped.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Attempt<U> {
        match self {
            Attempt::Ok(v) => Attempt::Ok(f(v)),
            Attempt::Refused {
                status,
                code,
                message,
            } => Attempt::Refused {
                status,
                code,
                message,
            },
            Attempt::NotSent(e) => Attempt::NotSent(e),
            Attempt::Unknown(e) => Attempt::Unknown(e),
        }
    }

    pub fn from_result(r: Result<T, ClientError>) -> Self {
        match r {
            Ok(v) => Attempt::Ok(v),
            Err(ClientError::Api {
                status,
                code,
                message,
                ..
            }) if (400..500).contains(&status) => Attempt::Refused {
                status,
                code,
                message,
            },
            Err(ClientError::Api {
                status,
                code,
                message,
                ..
            }) => Attempt::Unknown(format!("{status} {code}: {message}")),
            Err(ClientError::Unavailable(m)) => {
                // hyper-util reports a failed TCP connect as "client error (Connect)".
                let lower = m.to_ascii_lowercase();
                if lower.contains("(connect)") || lower.contains("connection refused") {
                    Attempt::NotSent(m)
                } else {
                    Attempt::Unknown(m)
                }
            }
            Err(ClientError::Decode(m)) => Attempt::Unknown(m),
        }
    }
}

/// Pinned single-attempt clients, one per node.
#[derive(Clone)]
pub struct Conn {
    nodes: Vec<Client>,
    timeout: Duration,
}

impl Conn {
    pub fn new(addrs: &[String], token: &str, timeout: Duration) -> Self {
        let base = Client::new(addrs.to_vec(), token.to_string());
        let nodes = (0..addrs.len())
            .map(|i| base.pinned(i).with_deadline(Duration::ZERO))
            .collect();
        Self { nodes, timeout }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node id (1-based) that node index `i` (taken modulo the node count) addresses.
    pub fn node_id(&self, i: usize) -> u64 {
        (i % self.nodes.len().max(1)) as u64 + 1
    }

    /// The pinned client of node index `i` (0-based).
    pub fn node(&self, i: usize) -> Option<&Client> {
        self.nodes.get(i)
    }

    /// One attempt on node index `i`.
    pub async fn once<T, F, Fut>(&self, i: usize, f: F) -> Attempt<T>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let Some(client) = self.nodes.get(i % self.nodes.len().max(1)).cloned() else {
            return Attempt::NotSent("no nodes".into());
        };
        match tokio::time::timeout(self.timeout, f(client)).await {
            Ok(r) => Attempt::from_result(r),
            Err(_) => Attempt::Unknown(format!("timed out after {:?}", self.timeout)),
        }
    }
}

/// A sticky node choice that moves on after a failure.
#[derive(Debug, Default)]
pub struct Cursor(AtomicUsize);

impl Cursor {
    pub fn new(start: usize) -> Self {
        Self(AtomicUsize::new(start))
    }
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
    pub fn advance(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_errors() {
        let a: Attempt<()> = Attempt::from_result(Err(ClientError::Api {
            status: 409,
            code: "stale_fence".into(),
            message: String::new(),
            field: None,
            extra: Default::default(),
        }));
        assert!(matches!(a, Attempt::Refused { status: 409, .. }));
        let a: Attempt<()> = Attempt::from_result(Err(ClientError::Api {
            status: 500,
            code: "internal".into(),
            message: String::new(),
            field: None,
            extra: Default::default(),
        }));
        assert!(matches!(a, Attempt::Unknown(_)));
        let a: Attempt<()> = Attempt::from_result(Err(ClientError::Unavailable(
            "http://x: peer unreachable: client error (Connect)".into(),
        )));
        assert!(matches!(a, Attempt::NotSent(_)));
        let a: Attempt<()> = Attempt::from_result(Err(ClientError::Unavailable(
            "http://x: peer unreachable: client error (Connect) (outcome unknown)".into(),
        )));
        assert!(matches!(a, Attempt::NotSent(_)));
        let a: Attempt<()> = Attempt::from_result(Err(ClientError::Unavailable(
            "http://x: 503 no leader".into(),
        )));
        assert!(matches!(a, Attempt::Unknown(_)));
        let a: Attempt<()> = Attempt::from_result(Err(ClientError::Unavailable(
            "http://x: timed out (outcome unknown)".into(),
        )));
        assert!(matches!(a, Attempt::Unknown(_)));
    }
}
