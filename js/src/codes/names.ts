// What the core's codes are called, once for every module of the package: each table is indexed
// by the code the core answers (a breaker's state, its mode, a refusal's reason, an outcome),
// beside the type of its names. A leaf: it imports nothing.

/** A breaker's state. */
export type BreakerState = 'CLOSED' | 'OPEN' | 'HALF_OPEN';
/** A breaker's mode: deciding by its rule, forced OPEN (`isolate()`), or letting everything through (`disable()`). */
export type BreakerMode = 'automatic' | 'isolated' | 'disabled';
/** Why a call was not admitted. */
export type RejectReason = 'open' | 'half-open-full' | 'isolated' | 'throttled' | 'full';
/** How a call ended, as every breaker of this package counts it. */
export type CallOutcome = 'success' | 'failure' | 'ignored';

/** Indexed by `State`'s codes (`Info.State`, a transition's `from` and `to`, a lease's state). */
export const STATES: readonly BreakerState[] = ['CLOSED', 'OPEN', 'HALF_OPEN'];
/** Indexed by `Mode`'s codes (`Info.Mode`). */
export const MODES: readonly BreakerMode[] = ['automatic', 'isolated', 'disabled'];
/** Indexed by `Reject`'s reason codes. */
export const REASONS: readonly RejectReason[] = ['open', 'half-open-full', 'isolated', 'throttled', 'full'];
/** Indexed by `Outcome`'s codes, which a breaker reports to the core (`outcomeCode`). */
export const OUTCOMES: readonly CallOutcome[] = ['success', 'failure', 'ignored'];
