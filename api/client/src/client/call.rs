//! One call of a route, and the loop every call goes through: the node that last answered
//! first, the next node after a connection failure, a timeout or a 503, pausing 50 ms doubling
//! to 1 s, until the client's deadline; a write keeps one `Request-Id` across every attempt.

use super::Client;
use crate::error::{encode_error, ClientError};
use crate::query::Query;
use crate::route::Endpoint;
use bytes::Bytes;
use hyper::{Method, StatusCode};
use raftlane_contract::{headers, Consistency, ReadOpts};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// One call being built: the route's path with its query, body and headers.
pub(crate) struct Call<'c> {
    client: &'c Client,
    method: Method,
    path: String,
    query: Query,
    /// The handle's `consistency`, for a read of the replicated state ([`Call::reads_state`]).
    consistency: Option<Consistency>,
    body: Option<Vec<u8>>,
    headers: Vec<(&'static str, String)>,
    /// How long the server may hold the call (a claim's `wait_ms`): added to each attempt's
    /// timeout and to the deadline.
    wait: Duration,
    /// One attempt at the current node, no failover (a probe of that node).
    once: bool,
    /// A non-2xx status that is an answer here, not a failure (`/readyz`'s 503).
    answering: Option<StatusCode>,
}

impl Client {
    /// A call of `endpoint` with its path segments.
    pub(crate) fn call<const N: usize>(
        &self,
        endpoint: &Endpoint<N>,
        segments: [&str; N],
    ) -> Call<'_> {
        Call::new(
            self,
            endpoint.route.method.method(),
            endpoint.path(segments),
        )
    }

    /// Any call, for a path this client has no method for; the body is sent as JSON. Answers
    /// the JSON (`null` for an empty body).
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ClientError> {
        let mut call = Call::new(self, method, path.to_string());
        if let Some(b) = body {
            call = call.json(&b)?;
        }
        call.answer().await
    }

    /// A plain-text GET (e.g. `/metrics`) from the current node, without auth.
    pub async fn request_text(&self, path: &str) -> Result<String, ClientError> {
        let url = format!("{}{path}", self.current_node().1);
        let (_, _, body) = self
            .http
            .call(Method::GET, &url, &[], Vec::new())
            .await
            .map_err(|e| ClientError::Unavailable(e.to_string()))?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// The node the next call goes to first: its index and URL.
    pub(crate) fn current_node(&self) -> (usize, &str) {
        let i = self.current.load(Ordering::Relaxed) % self.nodes.len().max(1);
        (i, self.nodes.get(i).map(String::as_str).unwrap_or(""))
    }

    /// After a failure at node `i`: the next call starts at the node after it.
    pub(crate) fn move_on_from(&self, i: usize) {
        self.current
            .store((i + 1) % self.nodes.len().max(1), Ordering::Relaxed);
    }

    /// The `Request-Id` of a call: this handle's, or a new one (one per logical write).
    pub(crate) fn write_id(&self) -> String {
        self.request_id
            .clone()
            .unwrap_or_else(|| format!("c-{:032x}", rand::random::<u128>()))
    }

    /// The headers every call of this handle carries (a write adds its `Request-Id`).
    pub(crate) fn common_headers(&self, write: bool) -> Vec<(&'static str, String)> {
        let mut hs = vec![("authorization", format!("Bearer {}", self.token))];
        if let Some(ms) = self.client_time {
            hs.push((headers::CLIENT_TIME_MS, ms.to_string()));
        }
        if write {
            if let Some(id) = self.approval {
                hs.push((headers::APPROVAL, id.to_string()));
            }
        }
        hs
    }

    /// The deadline, past which a call stops trying other nodes.
    pub(crate) fn deadline(&self) -> Duration {
        self.deadline
    }
}

impl<'c> Call<'c> {
    fn new(client: &'c Client, method: Method, path: String) -> Self {
        Call {
            client,
            method,
            path,
            query: Query::default(),
            consistency: None,
            body: None,
            headers: Vec::new(),
            wait: Duration::ZERO,
            once: false,
            answering: None,
        }
    }

    /// The call's query string: the members of `query`, a contract query type.
    pub fn query<Q: Serialize>(mut self, query: &Q) -> Result<Self, ClientError> {
        self.query = std::mem::take(&mut self.query).with(query)?;
        Ok(self)
    }

    /// A read of the replicated state: it carries the handle's `consistency`, if it set one.
    pub fn reads_state(mut self) -> Self {
        self.consistency = self.client.consistency;
        self
    }

    /// The path with its query string, the handle's consistency last.
    fn target(&self) -> Result<String, ClientError> {
        let read = ReadOpts {
            consistency: self.consistency,
        };
        let query = self.query.clone().with(&read)?;
        Ok(format!("{}{}", self.path, query.render()))
    }

    /// Sends `body` as JSON.
    pub fn json<B: Serialize + ?Sized>(mut self, body: &B) -> Result<Self, ClientError> {
        self.body = Some(serde_json::to_vec(body).map_err(encode_error)?);
        Ok(self)
    }

    pub fn header(mut self, name: &'static str, value: String) -> Self {
        self.headers.push((name, value));
        self
    }

    /// The server may hold the call up to `wait_ms` (a claim waiting for work).
    pub fn waiting(mut self, wait_ms: Option<u64>) -> Self {
        self.wait = Duration::from_millis(wait_ms.unwrap_or(0));
        self
    }

    /// One attempt at the current node: a probe of that node, not of the cluster.
    pub fn once(mut self) -> Self {
        self.once = true;
        self
    }

    /// `status` is an answer to decode, not an error (nor a reason to try another node).
    pub fn answering(mut self, status: StatusCode) -> Self {
        self.answering = Some(status);
        self
    }

    /// The answer decoded as `T` (an empty body as JSON `null`).
    pub async fn answer<T: DeserializeOwned>(self) -> Result<T, ClientError> {
        let what = format!("{} {}", self.method, self.path);
        let body = self.send().await?;
        decode(&what, &body)
    }

    /// The answer's body as text.
    pub async fn text(self) -> Result<String, ClientError> {
        let body = self.send().await?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// Sends the call until a node answers it, or the deadline passes; answers the body of
    /// a 2xx answer (or of the status [`Call::answering`] names).
    pub async fn send(self) -> Result<Bytes, ClientError> {
        let client = self.client;
        let write = self.method != Method::GET;
        let mut hs = client.common_headers(write);
        if self.body.is_some() {
            hs.push(("content-type", "application/json".into()));
        }
        // One id for every attempt of this write: a retry after an ambiguous failure (timeout,
        // lost answer, 503 "outcome unknown") gets the first attempt's answer, never a second
        // application.
        if write {
            hs.push((headers::REQUEST_ID, client.write_id()));
        }
        hs.extend(self.headers.iter().cloned());
        let http = if self.wait.is_zero() {
            client.http.clone()
        } else {
            client
                .http
                .clone()
                .with_timeout(super::ATTEMPT_TIMEOUT + self.wait)
        };
        let deadline = client.deadline + self.wait;
        let path = self.target()?;
        let bytes = self.body.unwrap_or_default();
        let started = Instant::now();
        let mut pause = Duration::from_millis(50);
        loop {
            let (i, node) = client.current_node();
            let url = format!("{node}{path}");
            let last = match http
                .call(self.method.clone(), &url, &hs, bytes.clone())
                .await
            {
                Ok((status, _, body)) if status.is_success() || Some(status) == self.answering => {
                    return Ok(body);
                }
                Ok((status, _, body)) if status == StatusCode::SERVICE_UNAVAILABLE => {
                    format!("{url}: 503 {}", String::from_utf8_lossy(&body))
                }
                Ok((status, _, body)) => {
                    return Err(ClientError::from_response(status.as_u16(), &body));
                }
                Err(e) => format!("{url}: {e}"),
            };
            client.move_on_from(i);
            if self.once || started.elapsed() + pause > deadline {
                return Err(ClientError::Unavailable(last));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(1000));
        }
    }
}

/// A body decoded as `T`; `what` names the call in the error.
pub(crate) fn decode<T: DeserializeOwned>(what: &str, body: &[u8]) -> Result<T, ClientError> {
    let body: &[u8] = if body.is_empty() { b"null" } else { body };
    serde_json::from_slice(body).map_err(|e| ClientError::Decode(format!("{what}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes;
    use raftlane_contract::{ApprovalId, MessageQuery, PageLimit};

    fn client() -> Client {
        Client::new(vec!["127.0.0.1:1".into()], "t")
    }

    #[test]
    fn an_approval_goes_with_writes_only() {
        let c = client().with_approval(ApprovalId(9));
        let write = c.common_headers(true);
        assert!(write.contains(&(headers::APPROVAL, "9".to_string())));
        assert!(write.contains(&("authorization", "Bearer t".to_string())));
        assert!(!c
            .common_headers(false)
            .iter()
            .any(|(k, _)| *k == headers::APPROVAL));
    }

    #[test]
    fn a_read_of_the_state_carries_the_handles_consistency() {
        let c = client();
        let call = c.call(&routes::LANE, ["outbound", "a b"]).reads_state();
        assert_eq!(call.target().unwrap(), "/v1/lanes/outbound/a%20b");
        let stale = c.with_consistency(Consistency::Stale);
        let page = MessageQuery {
            limit: PageLimit::new(5),
            ..MessageQuery::default()
        };
        let call = stale
            .call(&routes::MESSAGES, [])
            .query(&page)
            .unwrap()
            .reads_state();
        assert_eq!(
            call.target().unwrap(),
            "/v1/messages?limit=5&consistency=stale"
        );
        assert_eq!(call.method, Method::GET);
        // A call that reads no state carries no consistency.
        let call = stale.call(&routes::MESSAGES, []).query(&page).unwrap();
        assert_eq!(call.target().unwrap(), "/v1/messages?limit=5");
    }

    #[test]
    fn a_handle_keeps_one_request_id() {
        let c = client().for_request("r-1");
        assert_eq!((c.write_id(), c.write_id()), ("r-1".into(), "r-1".into()));
        let fresh = client();
        assert_ne!(fresh.write_id(), fresh.write_id());
    }

    #[test]
    fn an_empty_body_decodes_as_null() {
        assert_eq!(decode::<Value>("x", b"").unwrap(), Value::Null);
        let e = decode::<u64>("GET /v1/x", b"{").unwrap_err();
        assert!(e.to_string().contains("GET /v1/x"), "{e}");
    }
}
