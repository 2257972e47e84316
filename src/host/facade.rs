//! A Rust host for the state machine: a breaker that holds its clock and runs the call, a
//! registry of breakers by name, and the error of a guarded call.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::future::Future;

use super::quick::{Granted, Quick};
use crate::breaker::FastPath;
use crate::breaker::{Breaker, BreakerConfig, Outcome, Permit, Rejected, State, Stats, Transition};
use crate::clock::{Clock, Timestamp};
use crate::error::ConfigError;
use crate::name::{validate_name, InvalidName};
use crate::retry::{AttemptFailure, RetryDecision, RetryPolicy};
use crate::rng::Random;

type Listener = Box<dyn Fn(&str, Transition) + Send + Sync>;

/// A named breaker that reads its own clock and runs the guarded call.
///
/// Every method takes `&self`: share one breaker between threads and tasks with an `Arc` (it is
/// `Send + Sync` when its clock is, under `std`). The state machine sits behind a short critical
/// section, a `std::sync::Mutex` (a `RefCell` without `std`), taken twice per call, to admit and
/// to settle, and never held while the call runs, across an `.await`, or while a listener or the
/// clock runs.
///
/// ```
/// use breakwater::{BreakerConfig, CircuitBreaker, Error, ManualClock, Timestamp, TripRule};
///
/// let clock = ManualClock::new(Timestamp(0));
/// let config = BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 1 });
/// let breaker = CircuitBreaker::new("anthropic", config, clock.clone()).unwrap();
///
/// let first: Result<(), _> = breaker.call(|| Err::<(), _>("529 overloaded"));
/// assert!(matches!(first, Err(Error::Inner("529 overloaded"))));
/// let second = breaker.call(|| Ok::<_, &str>("never runs"));
/// assert!(matches!(second, Err(Error::Rejected(r)) if r.retry_after_ms == 30_000));
/// ```
///
/// A call cancelled half-way (its future dropped by a time-out, `select!`, or a client that went
/// away) settles as [`Outcome::Ignored`]: a half-open probe slot is free at once, and nothing is
/// counted. See [`CallGuard`].
pub struct CircuitBreaker<C: Clock> {
    name: String,
    /// The core, and the successes its last quiet answer let `quick` count alone.
    core: Lock<(Breaker, Granted)>,
    /// The CLOSED fast path: admissions and quiet successes without the lock.
    quick: Quick,
    clock: C,
    listener: Option<Listener>,
    /// Whether a report needs its call's admission time ([`FastPath::TIMED`]).
    timed: bool,
    /// The slow-call rule's threshold, or `u64::MAX`.
    slow_call_ms: u64,
}

impl<C: Clock> fmt::Debug for CircuitBreaker<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.name)
            .field("core", &self.core())
            .finish_non_exhaustive()
    }
}

impl<C: Clock> CircuitBreaker<C> {
    /// A CLOSED breaker named `name` (see [`validate_name`]) under `config`.
    pub fn new(name: &str, config: BreakerConfig, clock: C) -> Result<Self, BuildError> {
        validate_name(name).map_err(BuildError::Name)?;
        let core = Breaker::new(config).map_err(BuildError::Config)?;
        let quick = Quick::default();
        let granted = quick.publish(&core);
        Ok(CircuitBreaker {
            name: name.to_string(),
            core: Lock::new((core, granted)),
            quick,
            clock,
            listener: None,
            timed: config.fast_path().contains(FastPath::TIMED),
            slow_call_ms: config.trip.slow_call_ms().unwrap_or(u64::MAX),
        })
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The state a call now would find.
    pub fn state(&self) -> State {
        let now = self.clock.now();
        self.with_core(Some(now), |core| core.state_at(now))
    }

    /// A copy of the state machine as it is now (for snapshots and inspection).
    pub fn core(&self) -> Breaker {
        self.with_core(None, |core| core.clone())
    }

    /// The running totals.
    pub fn stats(&self) -> Stats {
        self.with_core(None, |core| *core.stats())
    }

    /// The configuration.
    pub fn config(&self) -> BreakerConfig {
        self.core.with(|(core, _)| *core.config())
    }

    /// Calls `listener(name, transition)` after every state change, outside the critical
    /// section (a listener may call the breaker). It runs on whichever thread made the change.
    pub fn on_transition(&mut self, listener: impl Fn(&str, Transition) + Send + Sync + 'static) {
        self.listener = Some(Box::new(listener));
    }

    /// Runs `f` if the breaker admits it; `Err` counts as a failure, `Ok` as a success.
    pub fn call<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, Error<E>> {
        self.call_classified(f, count_errors)
    }

    /// Runs `f` if admitted, counting its result as `classify` says (so that, say, a 400 is
    /// [`Outcome::Ignored`]).
    pub fn call_classified<T, E>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&Result<T, E>) -> Outcome,
    ) -> Result<T, Error<E>> {
        let guard = self.admit().map_err(Error::Rejected)?;
        let result = f();
        guard.settle(classify(&result));
        result.map_err(Error::Inner)
    }

    /// The async form of [`call`](Self::call): awaits `fut` if admitted. The breaker is not
    /// locked while `fut` runs, so any number of calls run at once; if this future is dropped
    /// before `fut` ends, the call settles as [`Outcome::Ignored`].
    pub async fn call_async<T, E, F>(&self, fut: F) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        self.call_async_classified(fut, count_errors).await
    }

    /// [`call_async`](Self::call_async), counting the result as `classify` says (an HTTP
    /// response is an `Ok` whatever its status: see
    /// [`Classifier::classify_response`](crate::Classifier::classify_response)).
    pub async fn call_async_classified<T, E, F>(
        &self,
        fut: F,
        classify: impl FnOnce(&Result<T, E>) -> Outcome,
    ) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let guard = self.admit().map_err(Error::Rejected)?;
        let result = fut.await;
        guard.settle(classify(&result));
        result.map_err(Error::Inner)
    }

    /// Asks to run one call now. The guard reports its outcome with
    /// [`settle`](CallGuard::settle); dropped unsettled, it settles as [`Outcome::Ignored`].
    pub fn admit(&self) -> Result<CallGuard<'_, C>, Rejected> {
        let (result, transition) = self.acquire();
        let guard = result.map(|permit| CallGuard {
            breaker: self,
            permit: Some(permit),
        });
        // The listener hears of the transition once the guard holds the permit: a listener
        // that panics unwinds through the guard, which gives the probe slot back.
        self.emit(transition);
        guard
    }

    /// [`admit`](Self::admit) for a breaker in an `Arc`, with a guard that owns a handle to it
    /// (to move into a spawned task).
    pub fn admit_owned(self: &Arc<Self>) -> Result<OwnedCallGuard<C>, Rejected> {
        let (result, transition) = self.acquire();
        let guard = result.map(|permit| OwnedCallGuard {
            permit: Some(permit),
            breaker: Arc::clone(self),
        });
        self.emit(transition);
        guard
    }

    /// What a call now would be answered, taking nothing (no probe slot, no count): see
    /// [`Breaker::peek`].
    pub fn peek(&self) -> Result<(), Rejected> {
        let now = self.clock.now();
        self.core.with(|(core, _)| core.peek(now))
    }

    /// Forces OPEN until [`reset`](Self::reset).
    pub fn isolate(&self) {
        let now = self.clock.now();
        let t = self.with_core(Some(now), |core| core.isolate(now));
        self.emit(t);
    }

    /// Back to CLOSED with clean counters.
    pub fn reset(&self) {
        let now = self.clock.now();
        let t = self.with_core(Some(now), |core| core.reset(now));
        self.emit(t);
    }

    /// Admit everything (true) or resume (false).
    pub fn set_disabled(&self, disabled: bool) {
        let now = self.clock.now();
        self.with_core(Some(now), |core| core.set_disabled(now, disabled));
    }

    /// The time on the breaker's clock.
    pub fn now(&self) -> crate::clock::Timestamp {
        self.clock.now()
    }

    /// Runs `f` on the core under the lock, after handing it what the fast path counted alone,
    /// and opens the fast path again as far as the core then allows. `now`: the time, when
    /// the caller read it. A transition the hand-over caused (none while the host keeps to the
    /// quiet answer) is emitted once the lock is released.
    fn with_core<R>(&self, now: Option<Timestamp>, f: impl FnOnce(&mut Breaker) -> R) -> R {
        let (r, t) = self.core.with(|(core, granted)| {
            let (admitted, successes) = self.quick.take(*granted);
            let t = (admitted | successes != 0)
                .then(|| core.record_quiet(now.unwrap_or(core.latest()), admitted, successes))
                .flatten();
            let r = f(core);
            *granted = self.quick.publish(core);
            (r, t)
        });
        self.emit(t);
        r
    }

    /// Admits a call, and returns the transition admitting it made, for the caller to emit once
    /// a guard holds the permit. While the fast path is open, without the lock, and without
    /// reading the clock unless a report will need the admission time (the clock is most of
    /// a call's cost: `SystemTime::now` is some 35 ns here).
    fn acquire(&self) -> (Result<Permit, Rejected>, Option<Transition>) {
        if let Some(permit) = self.quick.admit(self.timed, || self.clock.now()) {
            return (Ok(permit), None);
        }
        let now = self.clock.now();
        let admission = self.with_core(Some(now), |core| core.acquire(now));
        (admission.result, admission.transition)
    }

    /// Reports an admitted call: a quiet success is counted alone (reading the clock only when
    /// the core's answer depends on time); anything else reaches the core with the time.
    fn settle(&self, permit: Permit, outcome: Outcome) {
        let mut read = None;
        if outcome == Outcome::Success
            && self.quick.succeed(&permit, self.slow_call_ms, || {
                *read.insert(self.clock.now())
            })
        {
            return;
        }
        let now = read.unwrap_or_else(|| self.clock.now());
        let t = self.with_core(Some(now), |core| core.report(now, permit, outcome));
        self.emit(t);
    }

    fn emit(&self, t: Option<Transition>) {
        if let (Some(t), Some(listener)) = (t, self.listener.as_ref()) {
            listener(&self.name, t);
        }
    }
}

fn count_errors<T, E>(result: &Result<T, E>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(_) => Outcome::Failure,
    }
}

/// An admitted call of a [`CircuitBreaker`], not yet settled.
///
/// Report how the call ended with [`settle`](Self::settle). Dropped without it (a future
/// cancelled by a time-out or `select!`, an early `?`, a panic unwinding), the guard settles the
/// call as [`Outcome::Ignored`]: a half-open probe slot is freed at once rather than when its
/// lease runs out (`probe_timeout_ms`, 30 s by default, with every other call refused meanwhile),
/// and nothing is counted for or against the upstream.
#[must_use = "dropping the guard settles the call as Ignored at once"]
pub struct CallGuard<'a, C: Clock> {
    breaker: &'a CircuitBreaker<C>,
    permit: Option<Permit>,
}

impl<C: Clock> CallGuard<'_, C> {
    /// The permit the call was admitted with.
    pub fn permit(&self) -> Option<Permit> {
        self.permit
    }

    /// Reports how the call ended.
    pub fn settle(mut self, outcome: Outcome) {
        if let Some(permit) = self.permit.take() {
            self.breaker.settle(permit, outcome);
        }
    }
}

impl<C: Clock> Drop for CallGuard<'_, C> {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.breaker.settle(permit, Outcome::Ignored);
        }
    }
}

impl<C: Clock> fmt::Debug for CallGuard<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallGuard")
            .field("breaker", &self.breaker.name)
            .field("permit", &self.permit)
            .finish()
    }
}

/// [`CallGuard`] holding an `Arc` of its breaker, from [`CircuitBreaker::admit_owned`].
#[must_use = "dropping the guard settles the call as Ignored at once"]
pub struct OwnedCallGuard<C: Clock> {
    breaker: Arc<CircuitBreaker<C>>,
    permit: Option<Permit>,
}

impl<C: Clock> OwnedCallGuard<C> {
    /// The breaker that admitted the call.
    pub fn breaker(&self) -> &Arc<CircuitBreaker<C>> {
        &self.breaker
    }

    /// The permit the call was admitted with.
    pub fn permit(&self) -> Option<Permit> {
        self.permit
    }

    /// Reports how the call ended.
    pub fn settle(mut self, outcome: Outcome) {
        if let Some(permit) = self.permit.take() {
            self.breaker.settle(permit, outcome);
        }
    }
}

impl<C: Clock> Drop for OwnedCallGuard<C> {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.breaker.settle(permit, Outcome::Ignored);
        }
    }
}

impl<C: Clock> fmt::Debug for OwnedCallGuard<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedCallGuard")
            .field("breaker", &self.breaker.name)
            .field("permit", &self.permit)
            .finish()
    }
}

/// The breaker's state behind a short critical section: a `Mutex` under `std`, so that the
/// breaker is `Sync`; a `RefCell` without it (single-threaded hosts). Only the core's own code
/// runs inside (no clock, no listener, no user code), so the section never re-enters and never
/// panics; a poisoned mutex (impossible for that reason) is used as it is.
struct Lock<T> {
    #[cfg(feature = "std")]
    cell: std::sync::Mutex<T>,
    #[cfg(not(feature = "std"))]
    cell: core::cell::RefCell<T>,
}

impl<T> Lock<T> {
    fn new(value: T) -> Self {
        Lock {
            #[cfg(feature = "std")]
            cell: std::sync::Mutex::new(value),
            #[cfg(not(feature = "std"))]
            cell: core::cell::RefCell::new(value),
        }
    }

    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        #[cfg(feature = "std")]
        let mut guard = self
            .cell
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        #[cfg(not(feature = "std"))]
        let mut guard = self.cell.borrow_mut();
        f(&mut guard)
    }
}

/// The error of a guarded call: either the call's own error, or the breaker refused to run it.
#[derive(Clone, Debug, PartialEq)]
pub enum Error<E> {
    /// The guarded operation ran and failed with this error.
    Inner(E),
    /// The breaker did not run the operation; [`Rejected::retry_after_ms`] says when to ask again.
    Rejected(Rejected),
}

impl<E> Error<E> {
    /// The operation's own error, if it ran.
    pub fn into_inner(self) -> Option<E> {
        match self {
            Error::Inner(e) => Some(e),
            Error::Rejected(_) => None,
        }
    }

    /// True if the breaker refused the call.
    pub fn is_rejected(&self) -> bool {
        matches!(self, Error::Rejected(_))
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Inner(e) => e.fmt(f),
            Error::Rejected(r) => r.fmt(f),
        }
    }
}

impl<E: core::error::Error + 'static> core::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Error::Inner(e) => Some(e),
            Error::Rejected(_) => None,
        }
    }
}

/// Why a [`CircuitBreaker`] could not be built.
#[derive(Clone, Debug, PartialEq)]
pub enum BuildError {
    /// The name is not acceptable.
    Name(InvalidName),
    /// The configuration is invalid.
    Config(ConfigError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Name(e) => e.fmt(f),
            BuildError::Config(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for BuildError {}

/// One breaker per name (per provider, model or tool), all on one clock. Shared by reference
/// (`&self` throughout; `Sync` under `std`): every task asking for a name gets the same breaker.
///
/// ```
/// use breakwater::{BreakerConfig, ManualClock, Registry, Timestamp};
/// let registry = Registry::new(BreakerConfig::new(), ManualClock::new(Timestamp(0)));
/// let claude = registry.get("anthropic/claude").unwrap();
/// registry.get("openai/gpt").unwrap();
/// assert!(std::sync::Arc::ptr_eq(&claude, &registry.get("anthropic/claude").unwrap()));
/// assert_eq!(registry.names(), ["anthropic/claude", "openai/gpt"]);
/// ```
pub struct Registry<C: Clock + Clone> {
    defaults: BreakerConfig,
    clock: C,
    breakers: Lock<BTreeMap<String, Arc<CircuitBreaker<C>>>>,
}

impl<C: Clock + Clone> fmt::Debug for Registry<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.names())
            .finish_non_exhaustive()
    }
}

impl<C: Clock + Clone> Registry<C> {
    /// An empty registry whose breakers get `defaults` unless configured otherwise.
    pub fn new(defaults: BreakerConfig, clock: C) -> Self {
        Registry {
            defaults,
            clock,
            breakers: Lock::new(BTreeMap::new()),
        }
    }

    /// The breaker named `name`, created with the defaults on first use.
    pub fn get(&self, name: &str) -> Result<Arc<CircuitBreaker<C>>, BuildError> {
        self.get_with(name, self.defaults)
    }

    /// The breaker named `name`, created with `config` if it does not exist yet (an existing
    /// breaker keeps its configuration).
    pub fn get_with(
        &self,
        name: &str,
        config: BreakerConfig,
    ) -> Result<Arc<CircuitBreaker<C>>, BuildError> {
        self.breakers.with(|breakers| {
            if let Some(b) = breakers.get(name) {
                return Ok(Arc::clone(b));
            }
            let breaker = Arc::new(CircuitBreaker::new(name, config, self.clock.clone())?);
            breakers.insert(name.to_string(), Arc::clone(&breaker));
            Ok(breaker)
        })
    }

    /// The names, in order.
    pub fn names(&self) -> Vec<String> {
        self.breakers.with(|b| b.keys().cloned().collect())
    }

    /// Every breaker, by name, in order.
    pub fn breakers(&self) -> Vec<(String, Arc<CircuitBreaker<C>>)> {
        self.breakers
            .with(|b| b.iter().map(|(k, v)| (k.clone(), Arc::clone(v))).collect())
    }
}

/// Runs `op` under `policy`: after each failed attempt, `judge` says whether and when to retry,
/// and `sleep(ms)` waits (the only place time passes). Returns the last result and the number of
/// attempts made.
pub fn retry_blocking<T, E, R: Random + ?Sized, C: Clock>(
    policy: &RetryPolicy,
    clock: &C,
    rng: &mut R,
    mut sleep: impl FnMut(u64),
    judge: impl Fn(&E) -> AttemptFailure,
    mut op: impl FnMut(u32) -> Result<T, E>,
) -> (Result<T, E>, u32) {
    let mut state = policy.start(clock.now());
    loop {
        match op(state.attempts) {
            Ok(v) => return (Ok(v), state.attempts),
            Err(e) => match policy.decide(&mut state, clock.now(), judge(&e), rng, None) {
                RetryDecision::Retry { delay_ms, .. } => sleep(delay_ms),
                RetryDecision::GiveUp(_) => return (Err(e), state.attempts),
            },
        }
    }
}

/// The async form of [`retry_blocking`]: runs `op(attempt)` under `policy`, and between
/// attempts awaits `sleep(ms)`, the runtime's timer (`tokio::time::sleep`, say), so the crate
/// depends on no runtime. `judge` reads each error into an [`AttemptFailure`], whose
/// `retry_after_ms` (the server's Retry-After, as
/// [`Classifier::classify_response`](crate::Classifier::classify_response) reads it) the policy
/// honours up to its `max_retry_after_ms`. Returns the last result and the number of attempts.
///
/// Attempts are numbered from 1. Dropping the returned future cancels the attempt or the wait in
/// progress; nothing is left
/// behind (pass breaker calls as `op`, and their guards settle as ignored).
///
/// ```
/// # fn block_on<F: core::future::Future>(f: F) -> F::Output {
/// #     let mut f = core::pin::pin!(f);
/// #     let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
/// #     loop { if let core::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
/// # }
/// use breakwater::{retry_async, AttemptFailure, ManualClock, RetryPolicy, SplitMix64, Timestamp};
///
/// let clock = ManualClock::new(Timestamp(0));
/// let mut slept = Vec::new();
/// let (result, attempts) = block_on(retry_async(
///     &RetryPolicy::new(),
///     &clock,
///     &mut SplitMix64::new(7),
///     |ms| { slept.push(ms); async {} },
///     |_: &u16| AttemptFailure { retryable: true, retry_after_ms: Some(2_000) },
///     |attempt| async move { if attempt < 3 { Err(529) } else { Ok("answer") } },
/// ));
/// assert_eq!((result, attempts), (Ok("answer"), 3));
/// assert_eq!(slept, [2_000, 2_000]);
/// ```
pub async fn retry_async<T, E, R, C, S, W, J, O, F>(
    policy: &RetryPolicy,
    clock: &C,
    rng: &mut R,
    mut sleep: S,
    judge: J,
    mut op: O,
) -> (Result<T, E>, u32)
where
    R: Random + ?Sized,
    C: Clock,
    S: FnMut(u64) -> W,
    W: Future<Output = ()>,
    J: Fn(&E) -> AttemptFailure,
    O: FnMut(u32) -> F,
    F: Future<Output = Result<T, E>>,
{
    let mut state = policy.start(clock.now());
    loop {
        match op(state.attempts).await {
            Ok(v) => return (Ok(v), state.attempts),
            Err(e) => match policy.decide(&mut state, clock.now(), judge(&e), rng, None) {
                RetryDecision::Retry { delay_ms, .. } => sleep(delay_ms).await,
                RetryDecision::GiveUp(_) => return (Err(e), state.attempts),
            },
        }
    }
}
