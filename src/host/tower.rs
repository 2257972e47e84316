//! A `tower` layer: one [`CircuitBreaker`] guarding a service that answers `http::Response`s
//! (feature `tower`).
//!
//! ```
//! use std::sync::Arc;
//! use breakwater::tower::BreakerLayer;
//! use breakwater::{BreakerConfig, CircuitBreaker, SystemClock};
//!
//! let breaker = Arc::new(CircuitBreaker::new("anthropic", BreakerConfig::new(), SystemClock).unwrap());
//! let layer = BreakerLayer::new(Arc::clone(&breaker));
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
use crate::host::facade::{CircuitBreaker, Error, OwnedCallGuard};
use crate::retry::Classifier;

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

/// Wraps services in a [`BreakerService`] that shares one breaker.
pub struct BreakerLayer<C: Clock> {
    breaker: Arc<CircuitBreaker<C>>,
    judge: Judge,
}

impl<C: Clock> Clone for BreakerLayer<C> {
    fn clone(&self) -> Self {
        BreakerLayer {
            breaker: Arc::clone(&self.breaker),
            judge: self.judge.clone(),
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
            judge: Judge::Rules(Classifier::new()),
        }
    }

    /// Counts responses by `classifier` (which statuses are failures).
    pub fn with_classifier(mut self, classifier: Classifier) -> Self {
        self.judge = Judge::Rules(classifier);
        self
    }

    /// Counts responses as `f(status, headers)` says.
    pub fn classify_with(
        mut self,
        f: impl Fn(u16, &HeaderMap) -> Outcome + Send + Sync + 'static,
    ) -> Self {
        self.judge = Judge::Custom(Arc::new(f));
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
    type Response = Response<B>;
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
            judge: self.judge.clone(),
        }
    }
}

/// A service whose calls go through a breaker: see the [module](self).
pub struct BreakerService<S, C: Clock> {
    inner: S,
    breaker: Arc<CircuitBreaker<C>>,
    judge: Judge,
}

impl<S: Clone, C: Clock> Clone for BreakerService<S, C> {
    fn clone(&self) -> Self {
        BreakerService {
            inner: self.inner.clone(),
            breaker: Arc::clone(&self.breaker),
            judge: self.judge.clone(),
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
    type Response = Response<B>;
    type Error = Error<S::Error>;
    type Future = ResponseFuture<S::Future, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Error::Inner)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let state = match self.breaker.admit_owned() {
            Ok(guard) => State::Running {
                fut: Box::pin(self.inner.call(req)),
                guard: Some(guard),
                judge: self.judge.clone(),
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
        judge: Judge,
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
    type Output = Result<Response<B>, Error<E>>;

    /// Polled again after it was ready, it stays pending (it does not panic).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Unpin: the inner future is boxed.
        let this = self.get_mut();
        match &mut this.state {
            State::Rejected(rejected) => match rejected.take() {
                Some(r) => Poll::Ready(Err(Error::Rejected(r))),
                None => Poll::Pending,
            },
            State::Running { fut, guard, judge } => {
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
                        let outcome = judge.outcome(guard.breaker(), status, response.headers());
                        guard.settle(outcome);
                        Poll::Ready(Ok(response))
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
