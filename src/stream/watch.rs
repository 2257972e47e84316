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
            // A refusal in words stays a refusal whatever finish reason follows it.
            if self.ending != Some(Ending::Declined) {
                self.ending = Some(ending);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{Progress, Reading};

    fn r(progress: Progress) -> Reading {
        Reading {
            progress,
            ..Reading::default()
        }
    }
    const OUT: Progress = Progress::Output;
    const THINK: Progress = Progress::Thinking;

    #[test]
    fn keep_alives_do_not_hold_off_the_first_chunk_limit() {
        let mut w = Watch::new(
            StreamLimits {
                first_ms: Some(100),
                ..Default::default()
            },
            0,
        );
        assert_eq!(w.item(50, &Reading::KEEP_ALIVE), Step::Hold);
        assert_eq!(w.deadline(), Some(100));
        assert_eq!(w.tick(99), None);
        assert_eq!(w.tick(100), Some(Step::Fail(Stop::Timeout(Limit::First))));
        assert_eq!(w.deadline(), None);
    }

    #[test]
    fn thinking_is_progress_and_its_stretch_has_its_own_cap() {
        let limits = StreamLimits {
            idle_ms: Some(50),
            thinking_ms: Some(200),
            ..Default::default()
        };
        let mut w = Watch::new(limits, 0);
        assert_eq!(w.item(10, &r(THINK)), Step::Begin);
        for t in (40..200).step_by(30) {
            assert_eq!(w.item(t, &r(THINK)), Step::Pass);
            assert_eq!(w.tick(t), None);
        }
        // Still thinking 200 ms after it began: cut, counted.
        assert_eq!(w.item(205, &r(THINK)), Step::Pass);
        assert_eq!(
            w.tick(210),
            Some(Step::Cut {
                stop: Stop::Timeout(Limit::Thinking),
                counted: true
            })
        );
        // Output ends a stretch: the next one counts anew.
        let limits = StreamLimits {
            thinking_ms: Some(200),
            ..Default::default()
        };
        let mut w = Watch::new(limits, 0);
        w.item(0, &r(THINK));
        w.item(150, &r(OUT));
        w.item(160, &r(THINK));
        assert_eq!(w.tick(300), None);
        assert_eq!(w.deadline(), Some(360));
    }

    #[test]
    fn the_first_output_limit_cuts_a_model_that_only_thinks() {
        let limits = StreamLimits {
            first_output_ms: Some(500),
            ..Default::default()
        };
        let mut w = Watch::new(limits, 0);
        w.item(10, &r(THINK));
        assert_eq!(w.tick(499), None);
        assert_eq!(
            w.tick(500),
            Some(Step::Cut {
                stop: Stop::Timeout(Limit::FirstOutput),
                counted: true
            })
        );
        let mut w = Watch::new(limits, 0);
        w.item(10, &r(THINK));
        w.item(400, &r(OUT));
        assert_eq!(w.deadline(), None);
    }

    #[test]
    fn a_reader_behind_is_not_a_silent_model() {
        let limits = StreamLimits {
            idle_ms: Some(100),
            ..Default::default()
        };
        let mut w = Watch::new(limits, 0);
        w.item(10, &r(OUT));
        // The reader holds the guard up from 20 to 1_020: no limit runs meanwhile.
        w.pause(20);
        assert_eq!(w.deadline(), None);
        assert_eq!(w.tick(1_000), None);
        w.resume(1_020);
        // 10 ms of silence before the pause, so 90 more after it.
        assert_eq!(w.deadline(), Some(1_110));
        assert_eq!(w.item(1_100, &r(OUT)), Step::Pass);
        assert_eq!(w.end(1_150), Step::End(Settled::Success));
    }

    #[test]
    fn the_apps_total_budget_after_the_first_word_is_not_counted() {
        let limits = StreamLimits {
            total_ms: Some(1_000),
            ..Default::default()
        };
        let mut w = Watch::new(limits, 0);
        w.item(10, &r(OUT));
        assert_eq!(
            w.tick(1_000),
            Some(Step::Cut {
                stop: Stop::Timeout(Limit::Total),
                counted: false
            })
        );
        // Before it, a failure.
        let mut w = Watch::new(limits, 0);
        assert_eq!(w.tick(1_000), Some(Step::Fail(Stop::Timeout(Limit::Total))));
    }

    #[test]
    fn an_ending_named_stands_against_a_cut() {
        let limits = StreamLimits {
            idle_ms: Some(100),
            ..Default::default()
        };
        let mut w = Watch::new(limits, 0);
        w.item(10, &r(OUT));
        let end = Reading {
            ending: Some(Ending::Complete),
            ..Reading::default()
        };
        w.item(20, &end);
        assert_eq!(w.deadline(), None);
        assert_eq!(w.broke(30), Step::End(Settled::Success));
    }

    #[test]
    fn an_error_after_the_first_word_fails_the_stream_unless_an_ending_follows() {
        let err = Reading {
            error: Some(StreamFailure {
                code: None,
                status: 500,
            }),
            ..Reading::default()
        };
        let mut w = Watch::new(StreamLimits::default(), 0);
        w.item(1, &r(OUT));
        assert_eq!(w.item(2, &err), Step::Pass);
        assert_eq!(
            w.end(3),
            Step::Cut {
                stop: Stop::Error(err.error),
                counted: true
            }
        );
        let mut w = Watch::new(StreamLimits::default(), 0);
        w.item(1, &r(OUT));
        w.item(2, &err);
        w.item(
            3,
            &Reading {
                ending: Some(Ending::Complete),
                ..Reading::default()
            },
        );
        assert_eq!(w.end(4), Step::End(Settled::Success));
    }

    #[test]
    fn a_refusal_before_any_word_is_the_apps_to_read() {
        let mut w = Watch::new(StreamLimits::default(), 0);
        let declined = Reading {
            ending: Some(Ending::Declined),
            ..Reading::default()
        };
        assert_eq!(w.item(1, &declined), Step::Begin);
        assert_eq!(w.end(2), Step::End(Settled::Ignored));
        let mut w = Watch::new(StreamLimits::default(), 0);
        let complete = Reading {
            ending: Some(Ending::Complete),
            ..Reading::default()
        };
        assert_eq!(w.item(1, &complete), Step::Hold);
        assert_eq!(w.end(2), Step::Fail(Stop::Empty));
    }
}
