//! The guard's clock and judgement for one streamed answer, sans-IO: what the stream said
//! ([`Reading`]s) and the time come in, a [`Step`] comes out. The host reads the stream, holds
//! back what comes before the answer begins, and acts on each step.

use super::read::{Progress, Reading, StreamFailure};
use crate::retry::Ending;

/// The time limits of one stream, in ms, each off when `None`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct StreamLimits {
    /// From the call to the first sign of the model working (thinking counts, keep-alives do
    /// not): past it the attempt fails, retryably (`firstChunkTimeoutMs`).
    pub first_ms: Option<u64>,
    /// After it, the longest silence of the model between two signs of work: past it the answer
    /// is cut, counted as a failure (`idleTimeoutMs`). Time the reader is behind is not silence.
    pub idle_ms: Option<u64>,
    /// From the call to the end: before the answer began a failure; after it a cut that is not
    /// counted (the app's budget ran out, not the model) (`totalTimeoutMs`).
    pub total_ms: Option<u64>,
    /// From the call to the first output (not thinking): a model that only thinks is cut,
    /// counted (`firstOutputTimeoutMs`).
    pub first_output_ms: Option<u64>,
    /// The longest stretch of thinking with no output: past it the model is taken to be looping
    /// in its thoughts, cut and counted (`maxThinkingMs`).
    pub thinking_ms: Option<u64>,
}

/// Why a stream stopped short.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stop {
    /// One of the limits ran out.
    Timeout(Limit),
    /// An error in the stream; `None`: the answer named its ending as failed, with no error.
    Error(Option<StreamFailure>),
    /// A frame that is not what it begins to be (JSON cut short).
    Malformed,
    /// The stream ended with no sign of the model working.
    Empty,
    /// The connection broke (a reset, `terminated`): the host has the error.
    Broken,
}

/// Which limit ran out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Limit {
    /// [`StreamLimits::first_ms`].
    First,
    /// [`StreamLimits::idle_ms`].
    Idle,
    /// [`StreamLimits::total_ms`].
    Total,
    /// [`StreamLimits::first_output_ms`].
    FirstOutput,
    /// [`StreamLimits::thinking_ms`].
    Thinking,
}

impl Limit {
    /// The limit's length in `limits`.
    pub fn ms(self, limits: &StreamLimits) -> u64 {
        let ms = match self {
            Limit::First => limits.first_ms,
            Limit::Idle => limits.idle_ms,
            Limit::Total => limits.total_ms,
            Limit::FirstOutput => limits.first_output_ms,
            Limit::Thinking => limits.thinking_ms,
        };
        ms.unwrap_or(0)
    }
}

/// How a stream that reached its end counts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Settled {
    /// The model answered.
    Success,
    /// Says nothing of the upstream: a refusal, a budget spent before any word (the app's to
    /// read), a stream that began with its ending.
    Ignored,
}

/// What the host does next.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Step {
    /// Before the answer began: hold the item back, read on.
    Hold,
    /// The answer began: hand the reader what was held and this item; from now on pass items on.
    Begin,
    /// Pass the item on, read on.
    Pass,
    /// Before the answer began: the attempt failed (the caller's promise rejects; a retry may
    /// follow, invisible to the reader). Counted by the host's classification of the error.
    Fail(Stop),
    /// After it: the answer is cut; the reader gets what was sent and the contingency. Counted as
    /// a failure unless `counted` is false (the app's own total budget ran out).
    Cut {
        /// Why.
        stop: Stop,
        /// Whether the upstream is to blame.
        counted: bool,
    },
    /// The stream ended, as this.
    End(Settled),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Waiting,
    Streaming,
    Done,
}

/// One stream's watch. Times are the host's clock in ms (any origin, never going back).
#[derive(Clone, Debug)]
pub struct Watch {
    limits: StreamLimits,
    phase: Phase,
    start: u64,
    /// The last sign of work, or when reading resumed after the reader held the guard up.
    progress_at: u64,
    /// When the first sign of work came (none: the stream began with its ending).
    first_at: Option<u64>,
    /// The first output came.
    output: bool,
    /// Where the first-output limit counts from (the start, moved on by pauses).
    output_base: u64,
    /// When the current stretch of thinking began.
    thinking_since: Option<u64>,
    /// The reader is behind and the host stopped reading, since then.
    paused_at: Option<u64>,
    /// The ending named, and the last error seen after the answer began (and after the ending).
    ending: Option<Ending>,
    error: Option<Stop>,
}

impl Watch {
    /// A watch from the call at `now`.
    pub fn new(limits: StreamLimits, now: u64) -> Self {
        Watch {
            limits,
            phase: Phase::Waiting,
            start: now,
            progress_at: now,
            first_at: None,
            output: false,
            output_base: now,
            thinking_since: None,
            paused_at: None,
            ending: None,
            error: None,
        }
    }

    /// Whether the answer began (the reader has the stream).
    pub fn began(&self) -> bool {
        self.phase != Phase::Waiting
    }

    /// When the first sign of work came, if it did: the slow-call rule's time to first chunk.
    pub fn first_at(&self) -> Option<u64> {
        self.first_at
    }

    /// An item read at `now`.
    pub fn item(&mut self, now: u64, r: &Reading) -> Step {
        if self.phase == Phase::Done {
            return Step::Pass;
        }
        let waiting = self.phase == Phase::Waiting;
        let stop = if r.malformed {
            Some(Stop::Malformed)
        } else {
            r.error.map(|e| Stop::Error(Some(e)))
        };
        if let Some(stop) = stop {
            if waiting {
                return self.finish(Step::Fail(stop));
            }
            // After the answer began an error does not end it (the AI SDK's providers send one
            // for a chunk that failed validation, then stream on): what ends it decides.
            self.error = Some(stop);
            self.ending = None;
            return Step::Pass;
        }
        let mut step = if waiting { Step::Hold } else { Step::Pass };
        match r.progress {
            Progress::Output | Progress::Thinking => {
                if waiting {
                    self.first_at = Some(now);
                    self.phase = Phase::Streaming;
                    step = Step::Begin;
                }
                self.progress_at = now;
                if r.progress == Progress::Output {
                    self.output = true;
                    self.thinking_since = None;
                } else if self.thinking_since.is_none() {
                    self.thinking_since = Some(now);
                }
            }
            Progress::None | Progress::KeepAlive => {}
        }
        if let Some(ending) = r.ending {
            self.ending = Some(ending);
            if self.phase == Phase::Waiting {
                match ending {
                    Ending::Failed => return self.finish(Step::Fail(Stop::Error(None))),
                    // A refusal, or a budget spent before the first word: the app reads the
                    // stream as it came.
                    Ending::Declined | Ending::Truncated => {
                        self.phase = Phase::Streaming;
                        return Step::Begin;
                    }
                    Ending::Complete | Ending::Unknown => {}
                }
            }
        }
        step
    }

    /// The stream ended at `now` (the source is done).
    pub fn end(&mut self, _now: u64) -> Step {
        let step = match self.phase {
            Phase::Done => return Step::End(Settled::Ignored),
            Phase::Waiting => Step::Fail(Stop::Empty),
            Phase::Streaming => self.ended(),
        };
        self.finish(step)
    }

    /// Reading the stream failed at `now` (a reset: the host keeps the error).
    pub fn broke(&mut self, now: u64) -> Step {
        self.stopped(now, Stop::Broken, true)
    }

    /// The reader is behind: the host stops reading at `now` until [`Watch::resume`]. Silence
    /// while stopped is not the model's.
    pub fn pause(&mut self, now: u64) {
        if self.paused_at.is_none() {
            self.paused_at = Some(now);
        }
    }

    /// The host reads again at `now`: the model's limits count on from where they stood.
    pub fn resume(&mut self, now: u64) {
        let Some(at) = self.paused_at.take() else {
            return;
        };
        let d = now.saturating_sub(at);
        self.progress_at = self.progress_at.saturating_add(d);
        self.output_base = self.output_base.saturating_add(d);
        if let Some(t) = &mut self.thinking_since {
            *t = t.saturating_add(d);
        }
    }

    /// When the host must call [`Watch::tick`] next (none: no limit runs).
    pub fn deadline(&self) -> Option<u64> {
        self.due().map(|(at, _)| at)
    }

    /// The time is `now`: a limit that ran out stops the stream.
    pub fn tick(&mut self, now: u64) -> Option<Step> {
        let (at, limit) = self.due()?;
        if now < at {
            return None;
        }
        // Only the app's total budget is not the upstream's fault, once the answer began.
        let counted = !(limit == Limit::Total && self.phase == Phase::Streaming);
        Some(self.stopped(now, Stop::Timeout(limit), counted))
    }

    /// The soonest limit still running, and when it runs out.
    fn due(&self) -> Option<(u64, Limit)> {
        let l = &self.limits;
        let mut soonest: Option<(u64, Limit)> = None;
        let mut consider = |base: u64, ms: Option<u64>, limit: Limit| {
            if let Some(ms) = ms {
                let at = base.saturating_add(ms);
                if soonest.is_none_or(|(s, _)| at < s) {
                    soonest = Some((at, limit));
                }
            }
        };
        match self.phase {
            Phase::Done => return None,
            Phase::Waiting => consider(self.start, l.first_ms, Limit::First),
            // An answer that named its ending is only waited for by the total budget, and the
            // model's limits stand still while the reader is behind.
            Phase::Streaming if self.ending.is_some_and(|e| e != Ending::Failed) => {}
            Phase::Streaming if self.paused_at.is_some() => {}
            Phase::Streaming => {
                consider(self.progress_at, l.idle_ms, Limit::Idle);
                if !self.output {
                    consider(self.output_base, l.first_output_ms, Limit::FirstOutput);
                }
                if let Some(t) = self.thinking_since {
                    consider(t, l.thinking_ms, Limit::Thinking);
                }
            }
        }
        consider(self.start, l.total_ms, Limit::Total);
        soonest
    }

    /// A stop at `now` from outside the items (a limit, a broken connection).
    fn stopped(&mut self, _now: u64, stop: Stop, counted: bool) -> Step {
        let step = match self.phase {
            Phase::Done => return Step::End(Settled::Ignored),
            Phase::Waiting => Step::Fail(stop),
            // The answer had named how it ended: it stands.
            Phase::Streaming if self.ending.is_some_and(|e| e != Ending::Failed) => self.ended(),
            Phase::Streaming => Step::Cut { stop, counted },
        };
        self.finish(step)
    }

    /// How a stream that began and reached its end counts.
    fn ended(&self) -> Step {
        match (self.ending, self.error) {
            (Some(Ending::Failed), e) => Step::Cut {
                stop: e.unwrap_or(Stop::Error(None)),
                counted: true,
            },
            (None, Some(e)) => Step::Cut {
                stop: e,
                counted: true,
            },
            (Some(Ending::Declined), _) => Step::End(Settled::Ignored),
            _ if self.first_at.is_none() => Step::End(Settled::Ignored),
            _ => Step::End(Settled::Success),
        }
    }

    fn finish(&mut self, step: Step) -> Step {
        if !matches!(step, Step::Hold | Step::Begin | Step::Pass) {
            self.phase = Phase::Done;
        }
        step
    }
}
