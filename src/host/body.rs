//! The stream guard of the service integrations: a streamed answer (a 2xx `text/event-stream`
//! response) is counted by how its body ends, not when its head arrives. Its permit moves into
//! a [`GuardedBody`], which reads each chunk into the core's [`SseSplitter`] and [`Watch`] on its
//! way to the reader, passes the bytes on as they came, and settles the call once, from the step
//! that ends the stream. Every decision is the core's ([`Reading`], [`Watch`]); this is its I/O.

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::{Mutex, PoisonError};

use http::header::CONTENT_TYPE;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::breaker::Outcome;
use crate::clock::Clock;
use crate::host::facade::OwnedCallGuard;
use crate::stream::{Limit, Reading, Settled, SseSplitter, Step, Stop, StreamLimits, Watch};

/// The runtime's timer: `sleep(ms)`, passed in (the crate depends on no runtime).
pub(crate) type Sleep = Arc<dyn Fn(u64) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// `sleep` as a [`Sleep`].
pub(crate) fn sleep_with<F, W>(sleep: F) -> Sleep
where
    F: Fn(u64) -> W + Send + Sync + 'static,
    W: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |ms| Box::pin(sleep(ms)))
}

/// A streamed answer's time limits, and the timer that runs them.
#[derive(Clone)]
pub(crate) struct Limits {
    pub(crate) limits: StreamLimits,
    pub(crate) sleep: Sleep,
}

/// Whether a response is a streamed answer for the guard: a 2xx whose content type is
/// `text/event-stream`.
pub(crate) fn is_event_stream(status: u16, headers: &HeaderMap) -> bool {
    (200..300).contains(&status)
        && headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// Why the stream guard ended a body short: the answer failed before it began, or was cut after.
///
/// A body's error, after the bytes that came before it. Find it in an error's chain with
/// [`StreamCut::find`] (reqwest wraps it in its own error), or match
/// [`BodyError::Cut`] on a [`GuardedBody`]'s error.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct StreamCut {
    /// Why.
    pub stop: Stop,
    /// Whether the answer had begun. Before it began, the call's head had already been handed
    /// over: the attempt failed as a body's error, and retrying it is the caller's choice.
    pub began: bool,
    /// Whether the breaker counted it as a failure (not when the app's own total budget ran out
    /// after the answer began).
    pub counted: bool,
}

impl StreamCut {
    /// The stream guard's cut in `error` or in its chain of sources, if it is there.
    ///
    /// ```
    /// use breakwater::stream::Stop;
    /// use breakwater::{BodyError, StreamCut};
    /// let cut = StreamCut { stop: Stop::Empty, began: false, counted: true };
    /// let error: BodyError<std::io::Error> = BodyError::Cut(cut);
    /// assert_eq!(StreamCut::find(&error), Some(cut));
    /// ```
    pub fn find(error: &(dyn core::error::Error + 'static)) -> Option<StreamCut> {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(cut) = e.downcast_ref::<StreamCut>() {
                return Some(*cut);
            }
            next = e.source();
        }
        None
    }
}

impl fmt::Display for StreamCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.began {
            "the answer was cut: "
        } else {
            "the streamed answer failed before it began: "
        })?;
        match self.stop {
            Stop::Timeout(limit) => {
                let name = match limit {
                    Limit::First => "first-chunk",
                    Limit::Idle => "idle",
                    Limit::Total => "total",
                    Limit::FirstOutput => "first-output",
                    Limit::Thinking => "thinking",
                };
                write!(f, "the {name} time limit ran out")
            }
            Stop::Error(Some(e)) => match e.code {
                Some(code) => write!(f, "an error in the stream ({code:?}, {})", e.status),
                None => write!(f, "an error in the stream ({})", e.status),
            },
            Stop::Error(None) => f.write_str("the answer ended as failed"),
            Stop::Malformed => f.write_str("a malformed event"),
            Stop::Empty => f.write_str("the stream ended with no sign of the model working"),
            Stop::Broken => f.write_str("the connection broke"),
        }
    }
}

impl core::error::Error for StreamCut {}

/// The error of a [`GuardedBody`]: the body's own, or the stream guard's cut.
#[derive(Debug)]
pub enum BodyError<E> {
    /// Reading the body failed (a reset): its own error, as it came.
    Inner(E),
    /// The stream guard ended the stream short.
    Cut(StreamCut),
}

impl<E: fmt::Display> fmt::Display for BodyError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Inner(e) => e.fmt(f),
            BodyError::Cut(_) => f.write_str("the breaker's stream guard ended the body"),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for BodyError<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            // Transparent: its text is the inner error's.
            BodyError::Inner(e) => e.source(),
            BodyError::Cut(cut) => Some(cut),
        }
    }
}

pin_project! {
    /// A response body through the breaker's services. A streamed answer's (a 2xx
    /// `text/event-stream`) holds the call's permit and settles it by how the stream ends; any
    /// other is passed through as it is, its call settled when its head arrived.
    ///
    /// The bytes are the provider's, unchanged. A guarded stream settles once: its end as the
    /// core's [`Watch`] judges it (a success, or ignored: a refusal, an answer that was only
    /// its ending); a failure before the answer began (an error event, a malformed frame, an
    /// empty stream, the first-chunk limit) or a cut after it, which end the body with
    /// [`BodyError::Cut`]; a broken connection, which ends it with the body's own error. A body
    /// dropped before its end (the reader went away) settles as ignored. The time limits run
    /// only while the reader waits on the provider: time the reader spends away from the body
    /// is not the model's silence. A stream settles at its end, so under a slow-call rule
    /// (`TripRule::SlowCallRate`) its duration is the whole stream's.
    ///
    /// It is an `http_body::Body` when the inner body's chunks are bytes in one piece
    /// (`AsRef<[u8]>`: the `Bytes` of hyper, axum and reqwest).
    pub struct GuardedBody<B, C: Clock> {
        #[pin]
        inner: B,
        guard: Option<Box<StreamGuard<C>>>,
    }
}

impl<B, C: Clock> GuardedBody<B, C> {
    /// `inner` as it is: its call was settled at its head.
    pub(crate) fn plain(inner: B) -> Self {
        GuardedBody { inner, guard: None }
    }

    /// `inner`, an event stream whose call `permit` settles by how it ends; `limits` run from
    /// `start`, when the call was sent (on the breaker's clock: read only under limits).
    pub(crate) fn guarded(
        inner: B,
        permit: OwnedCallGuard<C>,
        limits: Option<&Limits>,
        start: u64,
    ) -> Self {
        let mut guard = StreamGuard {
            watch: Watch::new(
                limits.map_or_else(StreamLimits::default, |l| l.limits),
                start,
            ),
            splitter: SseSplitter::new(),
            timer: limits.map(|l| Timer {
                sleep: Arc::clone(&l.sleep),
                armed: None,
            }),
            permit: Some(permit),
            next: Next::Read,
        };
        // The head goes to the reader, who reads the body when it will.
        let now = guard.now();
        guard.pause(now);
        GuardedBody {
            inner,
            guard: Some(Box::new(guard)),
        }
    }

    /// Whether the body is a guarded stream, its call not settled until it ends.
    pub fn is_guarded(&self) -> bool {
        self.guard.is_some()
    }
}

impl<B: Default, C: Clock> Default for GuardedBody<B, C> {
    fn default() -> Self {
        GuardedBody::plain(B::default())
    }
}

impl<B, C: Clock> fmt::Debug for GuardedBody<B, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GuardedBody")
            .field("guarded", &self.guard.is_some())
            .finish_non_exhaustive()
    }
}

impl<B, C> Body for GuardedBody<B, C>
where
    B: Body,
    B::Data: AsRef<[u8]>,
    C: Clock,
{
    type Data = B::Data;
    type Error = BodyError<B::Error>;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled<B::Data, B::Error> {
        let this = self.project();
        match this.guard {
            None => this.inner.poll_frame(cx).map_err(BodyError::Inner),
            Some(guard) => guard.poll_frame(this.inner, cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.guard {
            None => self.inner.is_end_stream(),
            // Read to its end even when its source says it is done: the end settles the call.
            Some(guard) => matches!(guard.next, Next::Done),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.guard {
            None => self.inner.size_hint(),
            // A cut ends it short.
            Some(_) => SizeHint::default(),
        }
    }
}

/// What a guarded body does on its next poll.
#[derive(Clone, Copy, Debug)]
enum Next {
    /// Reads the stream on.
    Read,
    /// Ends with the guard's cut.
    Cut(StreamCut),
    /// Has ended.
    Done,
}

/// One guarded stream: the core's splitter and watch, the call's permit until it settles, and
/// the timer when there are limits.
struct StreamGuard<C: Clock> {
    watch: Watch,
    splitter: SseSplitter,
    timer: Option<Timer>,
    permit: Option<OwnedCallGuard<C>>,
    next: Next,
}

/// The sleep in flight for the watch's deadline.
struct Timer {
    sleep: Sleep,
    /// The deadline it sleeps until, and the sleep.
    armed: Option<(u64, Nap)>,
}

/// A sleep, `Sync` so that the body is (`reqwest::Body::wrap` asks it). Never locked: it is
/// polled through `&mut` ([`Mutex::get_mut`]).
struct Nap(Mutex<Pin<Box<dyn Future<Output = ()> + Send>>>);

impl Nap {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .poll(cx)
    }
}

/// What a body's poll gives.
type Polled<D, E> = Poll<Option<Result<Frame<D>, BodyError<E>>>>;

impl<C: Clock> StreamGuard<C> {
    fn poll_frame<B>(
        &mut self,
        inner: Pin<&mut B>,
        cx: &mut Context<'_>,
    ) -> Polled<B::Data, B::Error>
    where
        B: Body,
        B::Data: AsRef<[u8]>,
    {
        if !matches!(self.next, Next::Read) {
            return Poll::Ready(self.finish());
        }
        let now = self.now();
        // The reader is back.
        self.watch.resume(now);
        match inner.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.read(now, data.as_ref());
                }
                // The chunk goes to the reader: the limits wait until it asks again.
                self.pause(now);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                let step = self.watch.broke(now);
                self.stop(step);
                // The connection's own error, not a cut of the guard's.
                self.next = Next::Done;
                Poll::Ready(Some(Err(BodyError::Inner(e))))
            }
            Poll::Ready(None) => {
                let step = self.watch.end(now);
                self.stop(step);
                Poll::Ready(self.finish())
            }
            Poll::Pending => match self.poll_limits(now, cx) {
                Poll::Ready(step) => {
                    self.stop(step);
                    Poll::Ready(self.finish())
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    /// The time on the breaker's clock, read only when limits run (without them time decides
    /// nothing).
    fn now(&self) -> u64 {
        match (&self.timer, &self.permit) {
            (Some(_), Some(permit)) => permit.breaker().now().0,
            _ => 0,
        }
    }

    fn pause(&mut self, now: u64) {
        if self.timer.is_some() {
            self.watch.pause(now);
        }
    }

    /// Reads a chunk's events into the watch, up to the one that stops the stream.
    fn read(&mut self, now: u64, bytes: &[u8]) {
        let watch = &mut self.watch;
        let mut stopped = None;
        self.splitter.push(bytes, &mut |item| {
            if stopped.is_some() {
                return;
            }
            let reading = Reading::item(&item);
            let step = watch.item(now, &reading);
            if !matches!(step, Step::Hold | Step::Begin | Step::Pass) {
                stopped = Some(step);
            }
        });
        if let Some(step) = stopped {
            self.stop(step);
        }
    }

    /// Acts on a step that ends the stream: settles the call, and says how the body ends.
    fn stop(&mut self, step: Step) {
        let (outcome, next) = match step {
            Step::Hold | Step::Begin | Step::Pass => return,
            Step::End(Settled::Success) => (Outcome::Success, Next::Done),
            Step::End(Settled::Ignored) => (Outcome::Ignored, Next::Done),
            Step::Fail(stop) => (
                Outcome::Failure,
                Next::Cut(StreamCut {
                    stop,
                    began: false,
                    counted: true,
                }),
            ),
            Step::Cut { stop, counted } => (
                if counted {
                    Outcome::Failure
                } else {
                    Outcome::Ignored
                },
                Next::Cut(StreamCut {
                    stop,
                    began: true,
                    counted,
                }),
            ),
        };
        if let Some(permit) = self.permit.take() {
            permit.settle(outcome);
        }
        self.timer = None;
        self.next = next;
    }

    /// The body's end: the cut once, then nothing.
    fn finish<D, E>(&mut self) -> Option<Result<Frame<D>, BodyError<E>>> {
        match core::mem::replace(&mut self.next, Next::Done) {
            Next::Cut(cut) => Some(Err(BodyError::Cut(cut))),
            Next::Read | Next::Done => None,
        }
    }

    /// Runs the limits while the reader waits on the provider: the step of one that ran out.
    fn poll_limits(&mut self, now: u64, cx: &mut Context<'_>) -> Poll<Step> {
        let Some(timer) = &mut self.timer else {
            return Poll::Pending;
        };
        let Some(deadline) = self.watch.deadline() else {
            timer.armed = None;
            return Poll::Pending;
        };
        if let Some(step) = self.watch.tick(now) {
            return Poll::Ready(step);
        }
        // A sleep for a later deadline than the watch's (the answer began, and its limits are
        // shorter) gives way to one for the watch's; one for an earlier deadline is kept, and
        // looked at again when it wakes.
        let nap = match &mut timer.armed {
            Some((at, nap)) if *at <= deadline => nap,
            armed => {
                let nap = Nap(Mutex::new((timer.sleep)(deadline.saturating_sub(now))));
                &mut armed.insert((deadline, nap)).1
            }
        };
        if nap.poll(cx).is_pending() {
            return Poll::Pending;
        }
        timer.armed = None;
        let now = self.now();
        match self.watch.tick(now) {
            Some(step) => Poll::Ready(step),
            // Woken before the deadline (the limits moved on): asked again at once, to sleep anew.
            None => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}
