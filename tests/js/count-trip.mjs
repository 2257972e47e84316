// A success that brings a count window to its minimum opens the breaker then, for its whole open
// period (the JS fast path once reported it without the time, which the core read as a clock
// stepped back to 1970: no open period at all). Bundled into the workerd worker and the edge
// route, so that each runtime runs it; answers what their tests assert.
import { CircuitBreaker, isCircuitOpenError } from 'breakwater';

export async function countTrip() {
  let t = 1_700_000_000_000;
  const w = new CircuitBreaker('count-trip', {
    failureRate: { threshold: 50, minimumCalls: 4, windowCalls: 10 },
    resetTimeout: 30_000,
    clock: () => t,
  });
  const boom = async () => {
    throw Object.assign(new Error('overloaded'), { status: 529 });
  };
  for (let i = 0; i < 3; i++) await w.execute(boom).catch(() => {});
  await w.execute(async () => 'ok');
  const openFor = w.openUntil - t;
  t += 1_000;
  const still = await w.execute(async () => 'probe?').catch((e) => e);

  // Past its minimum a count window's successes are counted without the core (its quiet
  // answer) and handed over before the next failure: the fifth failure after 100 successes
  // makes 5 of the last 10 calls, and opens.
  const b = new CircuitBreaker('count-trip-batched', {
    failureRate: { threshold: 50, minimumCalls: 4, windowCalls: 10 },
    resetTimeout: 30_000,
    clock: () => t,
  });
  for (let i = 0; i < 100; i++) await b.execute(async () => 'ok');
  let failuresToOpen = 0;
  while (b.state === 'CLOSED' && failuresToOpen < 20) {
    failuresToOpen++;
    await b.execute(boom).catch(() => {});
  }
  const { successes, failures } = b.stats;
  return { state: w.state, openFor, refused: isCircuitOpenError(still), failuresToOpen, successes, failures };
}
