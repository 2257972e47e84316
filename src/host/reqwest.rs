//! A `reqwest-middleware` middleware: one [`CircuitBreaker`] guarding every request of a reqwest
//! client, with the crate's retry policy if asked (feature `reqwest-middleware`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use std::time::Duration;
//! use breakwater::reqwest::{rejection, BreakerMiddleware};
//! use breakwater::stream::StreamLimits;
//! use breakwater::{BreakerConfig, CircuitBreaker, RetryPolicy, SystemClock};
//!
//! let breaker = Arc::new(CircuitBreaker::new("openai", BreakerConfig::new(), SystemClock)?);
//! let middleware = BreakerMiddleware::new(Arc::clone(&breaker))
//!     // The runtime's timer: the crate depends on none.
//!     .with_retry(RetryPolicy::new(), |ms| tokio::time::sleep(Duration::from_millis(ms)))?
//!     // A streamed answer whose model falls silent for 30 s is cut, and counted.
//!     .with_stream_limits(
//!         StreamLimits { idle_ms: Some(30_000), ..StreamLimits::default() },
//!         |ms| tokio::time::sleep(Duration::from_millis(ms)),
//!     );
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(middleware)
//!     .build();
//! match client.post("https://api.openai.com/v1/chat/completions").send().await {
//!     Err(e) if rejection(&e).is_some() => { /* OPEN: serve the fallback */ }
//!     other => { let _response = other?; }
//! }
//! # Ok(()) }
//! ```
//!
//! - A refusal is `reqwest_middleware::Error::Middleware` holding a [`Rejected`] (read it with
//!   [`rejection`]); the request is not sent.
//! - Each attempt is counted when its response head arrives, by the crate's LLM rules
//!   ([`Classifier`]): by its status and, for an error status, by the provider's code in its
//!   body (read when `content-length` says it is at most [`Code::BODY_LIMIT`] bytes, and given
//!   back to the caller unchanged). So a 529 or a 5xx is a failure, a 400 is ignored, and
//!   OpenAI's 429 `insufficient_quota` is a failure that is not retried.
//! - But a streamed answer (a 2xx `text/event-stream`) is counted by how its body ends, as the
//!   caller reads it ([`GuardedBody`](crate::GuardedBody), by the core's
//!   [stream rules](crate::stream)): a success when the answer ends well; a failure for an error
//!   event inside the 200 (Anthropic's `overloaded_error`, OpenAI's `response.failed`), a
//!   malformed frame, a stream with no sign of the model working, an answer cut mid-way (a
//!   reset), or a limit of [`with_stream_limits`](BreakerMiddleware::with_stream_limits) that
//!   ran out; ignored for a refusal, or a body dropped before its end. The bytes are the
//!   provider's, unchanged; a failure or a cut the guard found ends the body with an error whose
//!   chain holds a [`StreamCut`] (a reset ends it with its own error).
//! - The head was returned before the stream could fail: an answer that fails before its first
//!   word ([`StreamCut::began`] false: the reader was given nothing of it) is not retried by
//!   [`with_retry`](BreakerMiddleware::with_retry). Sending it again, or serving the fallback, is
//!   the caller's:
//!
//!   ```no_run
//!   # async fn demo(client: reqwest_middleware::ClientWithMiddleware) -> Result<(), Box<dyn std::error::Error>> {
//!   use breakwater::StreamCut;
//!   let mut answer = client.post("https://api.anthropic.com/v1/messages").send().await?;
//!   while let Some(bytes) = match answer.chunk().await {
//!       Ok(chunk) => chunk,
//!       Err(e) => match StreamCut::find(&e) {
//!           Some(cut) if !cut.began => { /* nothing said yet: ask again, or the fallback */ None }
//!           Some(_cut) => { /* the answer was cut: tell the reader */ None }
//!           None => return Err(e.into()),
//!       },
//!   } {
//!       let _ = bytes; // on to the reader, as the provider sent it
//!   }
//!   # Ok(()) }
//!   ```
//! - With [`with_retry`](BreakerMiddleware::with_retry), a retryable answer is tried again after
//!   the policy's backoff or the server's `retry-after-ms` / `retry-after`, whichever is longer,
//!   and not at all when the server asks for longer than `max_retry_after_ms`;
//!   `x-should-retry: true|false` has the last word, as in the official SDKs. A request whose
//!   body cannot be copied (a stream) is sent once. A refusal by the breaker is returned at once,
//!   not waited out: the caller serves its fallback.
//! - The future dropped half-way (a time-out around `send()`, a `select!`) settles the attempt as
//!   ignored: a half-open probe slot is free at once.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::fmt;
use core::future::Future;
use std::sync::{Mutex, PoisonError};

use http::Extensions;
use reqwest::{Request, Response, ResponseBuilderExt};
use reqwest_middleware::{Error, Middleware, Next, Result};

use crate::breaker::{Outcome, Rejected};
use crate::clock::Clock;
use crate::error::ConfigError;
#[cfg(doc)]
use crate::host::body::StreamCut;
use crate::host::body::{is_event_stream, sleep_with, GuardedBody, Limits, Sleep};
use crate::host::facade::{CircuitBreaker, OwnedCallGuard};
use crate::retry::{AttemptFailure, Classifier, Code, RetryDecision, RetryPolicy};
use crate::rng::SplitMix64;
use crate::stream::StreamLimits;

struct Retry {
    policy: RetryPolicy,
    sleep: Sleep,
    rng: Mutex<SplitMix64>,
}

/// Guards a reqwest client with a breaker (and retries): see the [module](self).
pub struct BreakerMiddleware<C: Clock> {
    breaker: Arc<CircuitBreaker<C>>,
    classifier: Classifier,
    retry: Option<Retry>,
    limits: Option<Limits>,
}

impl<C: Clock> fmt::Debug for BreakerMiddleware<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerMiddleware")
            .field("breaker", &self.breaker.name())
            .field("retry", &self.retry.as_ref().map(|r| r.policy))
            .finish_non_exhaustive()
    }
}

/// The breaker's refusal inside a middleware error, if that is what it is.
pub fn rejection(error: &Error) -> Option<Rejected> {
    match error {
        Error::Middleware(e) => e.downcast_ref::<Rejected>().copied(),
        Error::Reqwest(_) => None,
    }
}

impl<C: Clock> BreakerMiddleware<C> {
    /// A middleware guarding with `breaker`, counting by the default [`Classifier`], not retrying.
    pub fn new(breaker: Arc<CircuitBreaker<C>>) -> Self {
        BreakerMiddleware {
            breaker,
            classifier: Classifier::new(),
            retry: None,
            limits: None,
        }
    }

    /// Counts and retries by `classifier`.
    pub fn with_classifier(mut self, classifier: Classifier) -> Self {
        self.classifier = classifier;
        self
    }

    /// Retries under `policy`, waiting with `sleep(ms)` (`tokio::time::sleep`, say). Fails with
    /// the policy's first invalid field.
    pub fn with_retry<F, W>(
        mut self,
        policy: RetryPolicy,
        sleep: F,
    ) -> core::result::Result<Self, ConfigError>
    where
        F: Fn(u64) -> W + Send + Sync + 'static,
        W: Future<Output = ()> + Send + 'static,
    {
        policy.validate()?;
        self.retry = Some(Retry {
            policy,
            sleep: sleep_with(sleep),
            rng: Mutex::new(SplitMix64::from_entropy()),
        });
        Ok(self)
    }

    /// Runs `limits` on every streamed answer, waiting with `sleep(ms)` (`tokio::time::sleep`,
    /// say): past the first-chunk limit the attempt fails, past the idle one (the model's
    /// silence between two signs of work, keep-alives aside) the answer is cut, each counted as a
    /// failure and ending the body with a [`StreamCut`]. None by default: no timer runs.
    pub fn with_stream_limits<F, W>(mut self, limits: StreamLimits, sleep: F) -> Self
    where
        F: Fn(u64) -> W + Send + Sync + 'static,
        W: Future<Output = ()> + Send + 'static,
    {
        self.limits = Some(Limits {
            limits,
            sleep: sleep_with(sleep),
        });
        self
    }

    /// The breaker.
    pub fn breaker(&self) -> &Arc<CircuitBreaker<C>> {
        &self.breaker
    }
}

// The attempts: a guarded body is a `reqwest::Body`, `Send + Sync + 'static`.
impl<C: Clock + Send + Sync + 'static> BreakerMiddleware<C> {
    /// Reads an error response's provider code from its body when it is short, and gives back a
    /// response with the same head and body.
    async fn read(&self, response: Response) -> Result<(Response, Option<Code>)> {
        let short = response
            .content_length()
            .is_some_and(|n| n <= Code::BODY_LIMIT as u64);
        if response.status().as_u16() < 400 || !short {
            return Ok((response, None));
        }
        let url = response.url().clone();
        let status = response.status();
        let version = response.version();
        let headers = response.headers().clone();
        let body = response.bytes().await?;
        let code = Code::in_body(&body);
        let mut rebuilt = http::Response::builder()
            .status(status)
            .version(version)
            .url(url)
            .body(body)
            .map_err(Error::middleware)?;
        *rebuilt.headers_mut() = headers;
        Ok((Response::from(rebuilt), code))
    }

    /// One attempt: admitted, sent, counted. The response comes back with how the retry policy
    /// should take it (`None`: a success).
    async fn attempt(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<(Result<Response>, Option<AttemptFailure>)> {
        let guard = self.breaker.admit_owned().map_err(Error::middleware)?;
        // The limits count from the call (the clock read only under limits).
        let start = self.limits.as_ref().map_or(0, |_| self.breaker.now().0);
        let sent = match next.run(req, extensions).await {
            Ok(response) => self.read(response).await,
            Err(e) => Err(e),
        };
        Ok(match sent {
            Ok((response, code)) => {
                let status = response.status().as_u16();
                let now = self.breaker.now();
                let verdict = crate::host::http::classify(
                    &self.classifier,
                    status,
                    code,
                    response.headers(),
                    now,
                );
                // A streamed answer's success is decided by how it ends.
                if verdict.verdict.outcome == Outcome::Success
                    && is_event_stream(status, response.headers())
                {
                    return Ok((Ok(self.guarded(response, guard, start)), None));
                }
                guard.settle(verdict.verdict.outcome);
                let failure = verdict.is_error().then(|| verdict.failure());
                (Ok(response), failure)
            }
            Err(e) => {
                let (outcome, retryable) = judge_error(&e);
                guard.settle(outcome);
                let failure = AttemptFailure {
                    retryable,
                    retry_after_ms: None,
                };
                (Err(e), Some(failure))
            }
        })
    }

    /// The response with its body guarded: the call settles by how the stream ends.
    fn guarded(&self, response: Response, permit: OwnedCallGuard<C>, start: u64) -> Response {
        let url = response.url().clone();
        let (mut parts, body) = http::Response::<reqwest::Body>::from(response).into_parts();
        // reqwest keeps a response's URL in an extension only its builder sets.
        if let Ok(marker) = http::Response::builder().url(url).body(()) {
            parts.extensions.extend(marker.into_parts().0.extensions);
        }
        let body = GuardedBody::guarded(body, permit, self.limits.as_ref(), start);
        Response::from(http::Response::from_parts(parts, reqwest::Body::wrap(body)))
    }
}

/// How a failed send counts: the request never built is the caller's fault; another breaker's
/// refusal (a middleware further in) says nothing of this upstream; anything else (refused,
/// reset, timed out) is the network's.
fn judge_error(e: &Error) -> (Outcome, bool) {
    match e {
        Error::Reqwest(e) if e.is_builder() => (Outcome::Ignored, false),
        Error::Middleware(m) if m.downcast_ref::<Rejected>().is_some() => (Outcome::Ignored, false),
        _ => (Outcome::Failure, true),
    }
}

#[cfg_attr(not(target_arch = "wasm32"), async_trait::async_trait)]
#[cfg_attr(target_arch = "wasm32", async_trait::async_trait(?Send))]
impl<C: Clock + Send + Sync + 'static> Middleware for BreakerMiddleware<C> {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> Result<Response> {
        let Some(retry) = &self.retry else {
            return self.attempt(req, extensions, next).await?.0;
        };
        let mut state = retry.policy.start(self.breaker.now());
        let mut req = req;
        loop {
            // A copy for the next attempt; none for a streaming body, which is then sent once.
            let spare = req.try_clone();
            let (result, failure) = self.attempt(req, extensions, next.clone()).await?;
            let (Some(failure), Some(spare)) = (failure, spare) else {
                return result;
            };
            let decision = {
                let mut rng = retry.rng.lock().unwrap_or_else(PoisonError::into_inner);
                let now = self.breaker.now();
                retry
                    .policy
                    .decide(&mut state, now, failure, &mut *rng, None)
            };
            match decision {
                RetryDecision::Retry { delay_ms, .. } => {
                    drop(result);
                    (retry.sleep)(delay_ms).await;
                    req = spare;
                }
                RetryDecision::GiveUp(_) => return result,
            }
        }
    }
}
