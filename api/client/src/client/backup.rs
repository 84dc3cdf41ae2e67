//! `GET /v1/cluster/snapshot`: a backup of the cluster streamed into the caller's sink as it
//! arrives (it can be larger than memory). The answering node catches up with the leader's
//! commit first, so the backup holds every write acknowledged before the call.

use super::Client;
use crate::error::ClientError;
use crate::routes;
use hyper::{HeaderMap, StatusCode};
use raftlane_contract::{SNAPSHOT_INDEX_HEADER, SNAPSHOT_NODE_HEADER};
use std::io::Write;
use std::time::{Duration, Instant};

/// A backup written to a sink: what its headers say and how long it is. (Not a JSON answer, so
/// not a contract type: the route answers the file itself.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backup {
    /// The last log index the backup reflects.
    pub index: u64,
    /// The node that served it.
    pub node_id: u64,
    /// Bytes written to the sink.
    pub bytes: u64,
}

/// A sink that counts what it was given, so a failure after the first byte is not retried into
/// a sink that already holds part of another node's backup.
struct Counted<'a> {
    inner: &'a mut (dyn Write + Send),
    written: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn number(headers: &HeaderMap, name: &str) -> Result<u64, ClientError> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| ClientError::Decode(format!("backup without a numeric {name} header")))
}

impl Client {
    /// Stream a backup into `sink` (admin). Nodes that cannot serve (no answer, 503) are passed
    /// over until the deadline; once a byte was written, a failure ends the call, as the sink
    /// holds part of a backup (start again with an empty one). The caller makes the file
    /// durable; `raftlane restore` lays a new cluster down from it.
    pub async fn backup(&self, sink: &mut (dyn Write + Send)) -> Result<Backup, ClientError> {
        let path = routes::SNAPSHOT_DOWNLOAD.path([]);
        let headers = self.common_headers(false);
        let mut sink = Counted {
            inner: sink,
            written: 0,
        };
        let started = Instant::now();
        let mut pause = Duration::from_millis(50);
        loop {
            let (i, node) = self.current_node();
            let url = format!("{node}{path}");
            let last = match self.http.download(&url, &headers, &mut sink).await {
                Ok((status, headers, _, bytes)) if status.is_success() => {
                    return Ok(Backup {
                        index: number(&headers, SNAPSHOT_INDEX_HEADER)?,
                        node_id: number(&headers, SNAPSHOT_NODE_HEADER)?,
                        bytes,
                    });
                }
                Ok((status, _, body, _)) if status == StatusCode::SERVICE_UNAVAILABLE => {
                    format!("{url}: 503 {}", String::from_utf8_lossy(&body))
                }
                Ok((status, _, body, _)) => {
                    return Err(ClientError::from_response(status.as_u16(), &body));
                }
                Err(e) if sink.written > 0 => {
                    return Err(ClientError::Unavailable(format!(
                        "{url}: {e} after {} bytes of the backup",
                        sink.written
                    )));
                }
                Err(e) => format!("{url}: {e}"),
            };
            self.move_on_from(i);
            if started.elapsed() + pause > self.deadline() {
                return Err(ClientError::Unavailable(last));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(1000));
        }
    }
}
