//! A deadline for reading a request's body.
//!
//! The listener's header and idle timeouts (node/src/listener.rs) do not catch a client that
//! sends its body one byte at a time: bytes keep moving, so the connection is never idle, and the
//! head has long arrived. Such a client held a handler (and its connection) for as long as it
//! liked, bounded only by `--max-body-bytes`. [`DeadlineBody`] gives the whole body one deadline,
//! counted from when its request's head arrived; past it the body yields [`BodyTimedOut`], which
//! every body extractor turns into `408 body_timeout` ([`crate::extract::body_error`]).

use axum::body::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::error::Error;
use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Default of the node's `--body-timeout`.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The body did not arrive in full before its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub struct BodyTimedOut(pub Duration);

/// Whether `error`, or any error it was caused by, is a [`BodyTimedOut`]: the error reaches an
/// extractor wrapped in axum's and hyper's own error types.
pub fn timed_out<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a BodyTimedOut> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(found) = e.downcast_ref::<BodyTimedOut>() {
            return Some(found);
        }
        current = e.source();
    }
    None
}

/// A request body that fails with [`BodyTimedOut`] once `timeout` has passed since it was made.
pub struct DeadlineBody<B> {
    inner: B,
    timeout: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<B> DeadlineBody<B> {
    /// Wrap `inner`; the deadline starts now.
    pub fn new(inner: B, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            deadline: Box::pin(tokio::time::sleep(timeout)),
        }
    }
}

impl<B> Body for DeadlineBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        // What has already arrived is handed on first; the deadline only stops a wait.
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(Into::into))),
            Poll::Pending => {
                if self.deadline.as_mut().poll(cx).is_ready() {
                    Poll::Ready(Some(Err(Box::new(BodyTimedOut(self.timeout)))))
                } else {
                    Poll::Pending
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_body_that_stops_arriving_fails_with_the_deadline() {
        let body = DeadlineBody::new(Stalled { sent: false }, Duration::from_millis(100));
        let err = body.collect().await.expect_err("the body never ended");
        let found = timed_out(&*err).expect("the error is the deadline");
        assert_eq!(found.0, Duration::from_millis(100));
    }

    /// One byte, then nothing ever again.
    struct Stalled {
        sent: bool,
    }

    impl Body for Stalled {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            if self.sent {
                Poll::Pending
            } else {
                self.sent = true;
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"{")))))
            }
        }
    }

    #[tokio::test]
    async fn a_body_within_its_deadline_is_handed_on_whole() {
        let body = DeadlineBody::new(
            http_body_util::Full::new(Bytes::from_static(b"{\"a\":1}")),
            Duration::from_millis(100),
        );
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"{\"a\":1}");
    }
}
