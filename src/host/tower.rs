//! A `tower` layer: one [`CircuitBreaker`] guarding a service that answers `http::Response`s
//! (feature `tower`).
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use breakwater::stream::StreamLimits;
//! use breakwater::tower::BreakerLayer;
//! use breakwater::{BreakerConfig, CircuitBreaker, SystemClock};
//!
//! let breaker = Arc::new(CircuitBreaker::new("anthropic", BreakerConfig::new(), SystemClock).unwrap());
//! let layer = BreakerLayer::new(Arc::clone(&breaker))
//!     // A streamed answer whose model falls silent for 30 s is cut, and counted. The runtime's
//!     // timer: the crate depends on none.
//!     .with_stream_limits(
//!         StreamLimits { idle_ms: Some(30_000), ..StreamLimits::default() },
//!         |ms| tokio::time::sleep(Duration::from_millis(ms)),
//!     );
//! // tower::ServiceBuilder::new().layer(layer).service(client), or `.layer(layer)` on an axum
//! // Router whose handlers call the provider.
//! # let _ = layer;
//! ```
//!
//! - The breaker refuses from `call`, never from `poll_ready`: a load balancer or `Buffer` in
//!   front of the service does not take an OPEN circuit for a service that is not ready. A
//!   refusal is [`Error::Rejected`], carrying `retry_after_ms`.
//! - A response is counted when its head arrives, by its status and headers under the crate's
//!   LLM rules ([`Classifier`]): 5xx, 408, 409, 429 and 529 are failures, other 4xx say nothing
//!   of the upstream's health and are ignored, the rest are successes. The body is not read (a
//!   provider code such as OpenAI's `insufficient_quota` is in it; the reqwest middleware reads
//!   it). Override with [`BreakerLayer::with_classifier`] or [`BreakerLayer::classify_with`].
//! - But a streamed answer (a success by its head, whose content type is `text/event-stream`) is
//!   counted by how its body ends, as the caller reads it, by the core's
//!   [stream rules](crate::stream): a success when the answer ends well; a failure for an error
//!   event inside the 200 (Anthropic's `overloaded_error`), a malformed frame, a stream with no
//!   sign of the model working, an answer cut mid-way (the body's own error) or a limit of
//!   [`BreakerLayer::with_stream_limits`] that ran out; ignored for a refusal, or a body dropped
//!   before its end. The response's body is a [`GuardedBody`] (an `http_body::Body` with the
//!   inner body's chunks, unchanged; any other response's body passes through it as it is),
//!   whose error is the inner body's ([`BodyError::Inner`]) or the guard's
//!   ([`BodyError::Cut`], with the [`StreamCut`]). The head was returned before the stream
//!   could fail: an answer that fails before its first word ([`StreamCut::began`] false) is the
//!   caller's to send again.
//! - The inner service's own error (a refused connection, a time-out from `tower::timeout`) is a
//!   failure.
//! - Dropping the response future before it is ready (a client gone, a `select!` lost) settles
//!   the call as ignored: a half-open probe slot is free at once.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use http::{HeaderMap, Response};
use tower_layer::Layer;
use tower_service::Service;

use crate::breaker::{Outcome, Rejected};
use crate::clock::Clock;
use crate::host::body::{is_event_stream, sleep_with, GuardedBody, Limits};
#[cfg(doc)]
use crate::host::body::{BodyError, StreamCut};
use crate::host::facade::{CircuitBreaker, Error, OwnedCallGuard};
use crate::retry::Classifier;
use crate::stream::StreamLimits;

type Custom = Arc<dyn Fn(u16, &HeaderMap) -> Outcome + Send + Sync>;

/// How responses are counted.
#[derive(Clone)]
enum Judge {
    Rules(Classifier),
    Custom(Custom),
}

impl Judge {
    fn outcome<C: Clock>(
        &self,
        breaker: &CircuitBreaker<C>,
        status: u16,
        headers: &HeaderMap,
    ) -> Outcome {
        match self {
            Judge::Rules(classifier) => {
                crate::host::http::classify(classifier, status, None, headers, breaker.now())
                    .verdict
                    .outcome
            }
            Judge::Custom(f) => f(status, headers),
        }
    }
}

/// How a service's calls are counted: each response by its head, a streamed answer's by how it
/// ends, under these limits.
#[derive(Clone)]
struct Rules {
    judge: Judge,
    limits: Option<Limits>,
}

/// Wraps services in a [`BreakerService`] that shares one breaker.
pub struct BreakerLayer<C: Clock> {
    breaker: Arc<CircuitBreaker<C>>,
    rules: Rules,
}

impl<C: Clock> Clone for BreakerLayer<C> {
    fn clone(&self) -> Self {
        BreakerLayer {
            breaker: Arc::clone(&self.breaker),
            rules: self.rules.clone(),
        }
    }
}

impl<C: Clock> fmt::Debug for BreakerLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerLayer")
            .field("breaker", &self.breaker.name())
            .finish_non_exhaustive()
    }
}

impl<C: Clock> BreakerLayer<C> {
    /// A layer guarding with `breaker`, counting responses by the default [`Classifier`].
    pub fn new(breaker: Arc<CircuitBreaker<C>>) -> Self {
        BreakerLayer {
            breaker,
            rules: Rules {
                judge: Judge::Rules(Classifier::new()),
                limits: None,
            },
        }
    }

    /// Counts responses by `classifier` (which statuses are failures).
    pub fn with_classifier(mut self, classifier: Classifier) -> Self {
        self.rules.judge = Judge::Rules(classifier);
        self
    }

    /// Counts responses as `f(status, headers)` says.
    pub fn classify_with(
        mut self,
        f: impl Fn(u16, &HeaderMap) -> Outcome + Send + Sync + 'static,
    ) -> Self {
        self.rules.judge = Judge::Custom(Arc::new(f));
        self
    }

    /// Runs `limits` on every streamed answer, waiting with `sleep(ms)` (`tokio::time::sleep`,
    /// say): past the first-chunk limit the attempt fails, past the idle one (the model's
    /// silence between two signs of work, keep-alives aside) the answer is cut, each counted as a
    /// failure. None by default: no timer runs.
    pub fn with_stream_limits<F, W>(mut self, limits: StreamLimits, sleep: F) -> Self
    where
        F: Fn(u64) -> W + Send + Sync + 'static,
        W: Future<Output = ()> + Send + 'static,
    {
        self.rules.limits = Some(Limits {
            limits,
            sleep: sleep_with(sleep),
        });
        self
    }

    /// The breaker.
    pub fn breaker(&self) -> &Arc<CircuitBreaker<C>> {
        &self.breaker
    }

    /// The same layer for a server: a refusal becomes a `503 Service Unavailable` response
    /// with `Retry-After` (whole seconds, rounded up) and an empty body, and the service's error
    /// stays the inner service's own. An axum `Router` takes it as it is:
    /// `Router::new().route(…).layer(BreakerLayer::new(breaker).answer_503())`.
    pub fn answer_503(self) -> Answer503Layer<C> {
        Answer503Layer { inner: self }
    }
}

/// A [`BreakerLayer`] whose refusals are answered with a 503 ([`BreakerLayer::answer_503`]).
#[derive(Clone, Debug)]
pub struct Answer503Layer<C: Clock> {
    inner: BreakerLayer<C>,
}

impl<S, C: Clock> Layer<S> for Answer503Layer<C> {
    type Service = Answer503<BreakerService<S, C>>;

    fn layer(&self, inner: S) -> Self::Service {
        Answer503 {
            inner: self.inner.layer(inner),
        }
    }
}

/// A [`BreakerService`] whose refusals are answered with a 503 ([`BreakerLayer::answer_503`]).
#[derive(Clone, Debug)]
pub struct Answer503<S> {
    inner: S,
}

impl<S, C, Req, B> Service<Req> for Answer503<BreakerService<S, C>>
where
    S: Service<Req, Response = Response<B>>,
    C: Clock,
    B: Default,
{
    type Response = Response<GuardedBody<B, C>>;
    type Error = S::Error;
    type Future = Answer503Future<ResponseFuture<S::Future, C>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // The breaker refuses from `call` only: readiness is the inner service's.
        self.inner.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        Answer503Future {
            fut: Box::pin(self.inner.call(req)),
        }
    }
}

/// The future of an [`Answer503`] call.
pub struct Answer503Future<F> {
    fut: Pin<Box<F>>,
}

impl<F> fmt::Debug for Answer503Future<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Answer503Future")
    }
}

impl<F, B, E> Future for Answer503Future<F>
where
    F: Future<Output = Result<Response<B>, Error<E>>>,
    B: Default,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match this.fut.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(response)) => Poll::Ready(Ok(response)),
            Poll::Ready(Err(Error::Inner(e))) => Poll::Ready(Err(e)),
            Poll::Ready(Err(Error::Rejected(r))) => Poll::Ready(Ok(unavailable(r))),
        }
    }
}

/// A 503 with `Retry-After` in whole seconds (at least 1), for a refusal.
fn unavailable<B: Default>(r: Rejected) -> Response<B> {
    let seconds = r.retry_after_ms.div_ceil(1000).max(1);
    let mut response = Response::new(B::default());
    *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
    response
}

impl<S, C: Clock> Layer<S> for BreakerLayer<C> {
    type Service = BreakerService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        BreakerService {
            inner,
            breaker: Arc::clone(&self.breaker),
            rules: Arc::new(self.rules.clone()),
        }
    }
}

/// A service whose calls go through a breaker: see the [module](self).
pub struct BreakerService<S, C: Clock> {
    inner: S,
    breaker: Arc<CircuitBreaker<C>>,
    /// Shared by its calls.
    rules: Arc<Rules>,
}

impl<S: Clone, C: Clock> Clone for BreakerService<S, C> {
    fn clone(&self) -> Self {
        BreakerService {
            inner: self.inner.clone(),
            breaker: Arc::clone(&self.breaker),
            rules: Arc::clone(&self.rules),
        }
    }
}

impl<S, C: Clock> fmt::Debug for BreakerService<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerService")
            .field("breaker", &self.breaker.name())
            .finish_non_exhaustive()
    }
}

impl<S, C, Req, B> Service<Req> for BreakerService<S, C>
where
    S: Service<Req, Response = Response<B>>,
    C: Clock,
{
    type Response = Response<GuardedBody<B, C>>;
    type Error = Error<S::Error>;
    type Future = ResponseFuture<S::Future, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Error::Inner)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let state = match self.breaker.admit_owned() {
            Ok(guard) => State::Running {
                // The limits count from the call (the clock read only under limits).
                start: self
                    .rules
                    .limits
                    .as_ref()
                    .map_or(0, |_| self.breaker.now().0),
                fut: Box::pin(self.inner.call(req)),
                guard: Some(guard),
                rules: Arc::clone(&self.rules),
            },
            // The request is dropped unsent.
            Err(rejected) => State::Rejected(Some(rejected)),
        };
        ResponseFuture { state }
    }
}

/// The future of a [`BreakerService`] call.
pub struct ResponseFuture<F, C: Clock> {
    state: State<F, C>,
}

enum State<F, C: Clock> {
    Rejected(Option<Rejected>),
    Running {
        fut: Pin<Box<F>>,
        guard: Option<OwnedCallGuard<C>>,
        rules: Arc<Rules>,
        start: u64,
    },
}

impl<F, C: Clock> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.state {
            State::Rejected(_) => "ResponseFuture(rejected)",
            State::Running { .. } => "ResponseFuture(running)",
        })
    }
}

impl<F, C, B, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<Response<B>, E>>,
    C: Clock,
{
    type Output = Result<Response<GuardedBody<B, C>>, Error<E>>;

    /// Polled again after it was ready, it stays pending (it does not panic).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Unpin: the inner future is boxed.
        let this = self.get_mut();
        match &mut this.state {
            State::Rejected(rejected) => match rejected.take() {
                Some(r) => Poll::Ready(Err(Error::Rejected(r))),
                None => Poll::Pending,
            },
            State::Running {
                fut,
                guard,
                rules,
                start,
            } => {
                let result = match fut.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(result) => result,
                };
                let Some(guard) = guard.take() else {
                    return Poll::Pending;
                };
                match result {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        let outcome =
                            rules
                                .judge
                                .outcome(guard.breaker(), status, response.headers());
                        // A streamed answer's success is decided by how it ends.
                        if outcome == Outcome::Success
                            && is_event_stream(status, response.headers())
                        {
                            let (parts, body) = response.into_parts();
                            let body =
                                GuardedBody::guarded(body, guard, rules.limits.as_ref(), *start);
                            return Poll::Ready(Ok(Response::from_parts(parts, body)));
                        }
                        guard.settle(outcome);
                        Poll::Ready(Ok(response.map(GuardedBody::plain)))
                    }
                    Err(e) => {
                        guard.settle(Outcome::Failure);
                        Poll::Ready(Err(Error::Inner(e)))
                    }
                }
            }
        }
    }
}
