//! A Rust host for the state machine: a breaker that holds its clock and runs the call, and a
//! registry of breakers by name.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use core::fmt;
use core::future::Future;

use crate::breaker::{Breaker, BreakerConfig, Outcome, State, Transition};
use crate::clock::Clock;
use crate::error::{ConfigError, Error};
use crate::retry::{AttemptFailure, RetryDecision, RetryPolicy};
use crate::rng::Random;

/// The longest breaker name, in bytes.
pub const MAX_NAME_LEN: usize = 128;

/// Why a breaker name was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidName {
    /// The name as given (cut to 160 bytes).
    pub name: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for InvalidName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid breaker name {:?}: {}", self.name, self.reason)
    }
}

impl core::error::Error for InvalidName {}

/// Checks a breaker name: 1 to 128 bytes of ASCII letters, digits and `- _ . : /`. Names become
/// Durable Object names and store keys, so they must come from configuration, never from request
/// input; this check keeps a mistake from creating objects at will.
pub fn validate_name(name: &str) -> Result<(), InvalidName> {
    let fail = |reason| {
        let mut cut = 160.min(name.len());
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        Err(InvalidName {
            name: name.get(..cut).unwrap_or_default().to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return fail("empty");
    }
    if name.len() > MAX_NAME_LEN {
        return fail("longer than 128 bytes");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'/'))
    {
        return fail("only ASCII letters, digits and - _ . : / are allowed");
    }
    Ok(())
}

type Listener = Box<dyn FnMut(&str, Transition)>;

/// A named breaker that reads its own clock and runs the guarded call.
///
/// ```
/// use breakwater::{BreakerConfig, CircuitBreaker, Error, ManualClock, Timestamp, TripRule};
///
/// let clock = ManualClock::new(Timestamp(0));
/// let config = BreakerConfig::new().with_trip(TripRule::ConsecutiveFailures { threshold: 1 });
/// let mut breaker = CircuitBreaker::new("anthropic", config, clock.clone()).unwrap();
///
/// let first: Result<(), _> = breaker.call(|| Err::<(), _>("529 overloaded"));
/// assert!(matches!(first, Err(Error::Inner("529 overloaded"))));
/// let second = breaker.call(|| Ok::<_, &str>("never runs"));
/// assert!(matches!(second, Err(Error::Rejected(r)) if r.retry_after_ms == 30_000));
/// ```
pub struct CircuitBreaker<C: Clock> {
    name: String,
    core: Breaker,
    clock: C,
    listener: Option<Listener>,
}

impl<C: Clock> fmt::Debug for CircuitBreaker<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.name)
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> CircuitBreaker<C> {
    /// A CLOSED breaker named `name` (see [`validate_name`]) under `config`.
    pub fn new(name: &str, config: BreakerConfig, clock: C) -> Result<Self, BuildError> {
        validate_name(name).map_err(BuildError::Name)?;
        let core = Breaker::new(config).map_err(BuildError::Config)?;
        Ok(CircuitBreaker {
            name: name.to_string(),
            core,
            clock,
            listener: None,
        })
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The state a call now would find.
    pub fn state(&self) -> State {
        self.core.state_at(self.clock.now())
    }

    /// The state machine (for snapshots and statistics).
    pub fn core(&self) -> &Breaker {
        &self.core
    }

    /// Calls `listener(name, transition)` after every state change.
    pub fn on_transition(&mut self, listener: impl FnMut(&str, Transition) + 'static) {
        self.listener = Some(Box::new(listener));
    }

    /// Runs `f` if the breaker admits it; `Err` counts as a failure, `Ok` as a success.
    pub fn call<T, E>(&mut self, f: impl FnOnce() -> Result<T, E>) -> Result<T, Error<E>> {
        self.call_classified(f, |r| match r {
            Ok(_) => Outcome::Success,
            Err(_) => Outcome::Failure,
        })
    }

    /// Runs `f` if admitted, counting its result as `classify` says (so that, say, a 400 is
    /// [`Outcome::Ignored`]).
    pub fn call_classified<T, E>(
        &mut self,
        f: impl FnOnce() -> Result<T, E>,
        classify: impl FnOnce(&Result<T, E>) -> Outcome,
    ) -> Result<T, Error<E>> {
        let permit = self.admit()?;
        let result = f();
        let outcome = classify(&result);
        self.settle(permit, outcome);
        result.map_err(Error::Inner)
    }

    /// The async form of [`call`](Self::call): awaits `fut` if admitted.
    pub async fn call_async<T, E, F>(&mut self, fut: F) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let permit = self.admit()?;
        let result = fut.await;
        let outcome = if result.is_ok() {
            Outcome::Success
        } else {
            Outcome::Failure
        };
        self.settle(permit, outcome);
        result.map_err(Error::Inner)
    }

    /// Forces OPEN until [`reset`](Self::reset).
    pub fn isolate(&mut self) {
        let t = self.core.isolate(self.clock.now());
        self.emit(t);
    }

    /// Back to CLOSED with clean counters.
    pub fn reset(&mut self) {
        let t = self.core.reset(self.clock.now());
        self.emit(t);
    }

    /// Admit everything (true) or resume (false).
    pub fn set_disabled(&mut self, disabled: bool) {
        self.core.set_disabled(self.clock.now(), disabled);
    }

    fn admit<E>(&mut self) -> Result<crate::Permit, Error<E>> {
        let admission = self.core.acquire(self.clock.now());
        self.emit(admission.transition);
        admission.result.map_err(Error::Rejected)
    }

    fn settle(&mut self, permit: crate::Permit, outcome: Outcome) {
        let t = self.core.report(self.clock.now(), permit, outcome);
        self.emit(t);
    }

    fn emit(&mut self, t: Option<Transition>) {
        if let (Some(t), Some(listener)) = (t, self.listener.as_mut()) {
            listener(&self.name, t);
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

/// One breaker per name (per provider, model or tool), all on one clock.
///
/// ```
/// use breakwater::{BreakerConfig, ManualClock, Registry, Timestamp};
/// let mut registry = Registry::new(BreakerConfig::new(), ManualClock::new(Timestamp(0)));
/// registry.get("anthropic/claude").unwrap();
/// registry.get("openai/gpt").unwrap();
/// assert_eq!(registry.names().collect::<Vec<_>>(), ["anthropic/claude", "openai/gpt"]);
/// ```
pub struct Registry<C: Clock + Clone> {
    defaults: BreakerConfig,
    clock: C,
    breakers: BTreeMap<String, CircuitBreaker<C>>,
}

impl<C: Clock + Clone> Registry<C> {
    /// An empty registry whose breakers get `defaults` unless configured otherwise.
    pub fn new(defaults: BreakerConfig, clock: C) -> Self {
        Registry {
            defaults,
            clock,
            breakers: BTreeMap::new(),
        }
    }

    /// The breaker named `name`, created with the defaults on first use.
    pub fn get(&mut self, name: &str) -> Result<&mut CircuitBreaker<C>, BuildError> {
        let config = self.defaults;
        self.get_with(name, config)
    }

    /// The breaker named `name`, created with `config` if it does not exist yet (an existing
    /// breaker keeps its configuration).
    pub fn get_with(
        &mut self,
        name: &str,
        config: BreakerConfig,
    ) -> Result<&mut CircuitBreaker<C>, BuildError> {
        if !self.breakers.contains_key(name) {
            let breaker = CircuitBreaker::new(name, config, self.clock.clone())?;
            self.breakers.insert(name.to_string(), breaker);
        }
        self.breakers
            .get_mut(name)
            .ok_or(BuildError::Name(InvalidName {
                name: name.to_string(),
                reason: "vanished",
            }))
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.breakers.keys().map(String::as_str)
    }

    /// Every breaker, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &CircuitBreaker<C>)> {
        self.breakers.iter().map(|(k, v)| (k.as_str(), v))
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
