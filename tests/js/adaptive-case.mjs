// breakwater/adaptive in each runtime: its entry loads the adaptive module the runtime's way (a
// static .wasm import in workerd, `?module` on the edge, fetched in browsers and Deno, inlined
// for Node and Bun) beside the main one, and the breakers its values go to shed and limit there. Bundled
// into the workerd worker, the edge route and the browser page, and run by the Deno and Bun
// runners (runtime-cases.mjs); answers what their tests assert.
import { CircuitBreaker, isCircuitOpenError } from 'breakwater';
import { limit, throttle } from 'breakwater/adaptive';

export async function adaptiveCase() {
  let t = 1_700_000_000_000;
  const clock = () => t;
  const boom = async () => {
    throw Object.assign(new Error('overloaded'), { status: 529 });
  };
  // An upstream failing every call, a trip rule that never fires: the throttle alone sheds.
  const shed = new CircuitBreaker('adaptive-shed', { failureThreshold: 1_000_000, adaptiveThrottle: throttle({ minimumRequests: 10 }), clock, random: () => 0.5 });
  let reached = 0;
  let throttled = 0;
  for (let i = 0; i < 200; i++) {
    t += 10;
    const e = await shed.execute(() => (reached++, boom())).catch((x) => x);
    if (isCircuitOpenError(e) && e.reason === 'throttled') throttled++;
  }
  // One slot, no line: a second call while the first is in flight is refused as full.
  const limited = new CircuitBreaker('adaptive-limit', { concurrency: limit({ maxConcurrent: 1 }), clock });
  let release;
  const first = limited.execute(() => new Promise((r) => (release = r)));
  const second = await limited.execute(async () => 'never').catch((e) => e);
  const inFlight = limited.inFlight;
  release('first');
  await first;
  return {
    state: shed.state,
    throttled,
    reached,
    statsThrottled: shed.stats.throttled,
    probability: shed.throttleProbability,
    full: isCircuitOpenError(second) && second.reason === 'full',
    inFlight,
    inFlightAfter: limited.inFlight,
  };
}

/** What every runtime must answer (the draws are seeded: the same everywhere). */
export function checkAdaptive(r, assert) {
  assert.equal(r.state, 'CLOSED');
  assert.equal(r.throttled + r.reached, 200);
  assert.equal(r.statsThrottled, r.throttled);
  assert.ok(r.throttled > 100, `throttled ${r.throttled} of 200`);
  assert.ok(r.probability > 0.7 && r.probability <= 0.8, String(r.probability));
  assert.equal(r.full, true);
  assert.equal(r.inFlight, 1);
  assert.equal(r.inFlightAfter, 0);
}
