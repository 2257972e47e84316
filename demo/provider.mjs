// A fake LLM provider for the live demo, on 127.0.0.1: Anthropic-shaped answers, healthy at first,
// then 529 (overloaded_error) for the outage, then stalled (it accepts requests and never answers:
// the caller's deadline ends them), then flapping (alternating windows of 529 and service), then
// healthy again. The schedule is a function of the time since `t0`, so several providers started
// for several strategies fail at exactly the same moments. The backup model is the same server
// with a plan that stays healthy (`ALWAYS_HEALTHY`).
import http from 'node:http';
import { anthropic } from '../js/src/cli/formats.mjs';
import { listenLocal } from '../tests/worker/workerd.mjs';

// The answers' shapes are those of `breakwater fake-llm` (js/src/cli/formats.mjs).
const okBody = (model) => JSON.stringify(anthropic.message({ model, text: `Hello from ${model}.` }));
const OVERLOADED_BODY = JSON.stringify(anthropic.error(529));

/** A plan with no outage: the backup model's. */
export const ALWAYS_HEALTHY = { healthyMs: Infinity, outageMs: 0, stalledMs: 0, flappingMs: 0, flapMs: 1000, recoveryMs: 0 };

/** When the provider recovers for good: the end of the outage, the stall and the flapping. */
export const recoveredAt = (plan) => plan.healthyMs + plan.outageMs + plan.stalledMs + plan.flappingMs;

/**
 * The provider's answer at `ms` after t0: `{ phase, down, stalled }` (`stalled`: no answer at all).
 * `plan`: { healthyMs, outageMs, stalledMs, flappingMs, flapMs, recoveryMs }.
 */
export function phaseAt(plan, ms) {
  const outageStart = plan.healthyMs;
  const stallStart = outageStart + plan.outageMs;
  const flapStart = stallStart + plan.stalledMs;
  if (ms < outageStart) return { phase: 'healthy', down: false, stalled: false };
  if (ms < stallStart) return { phase: 'outage', down: true, stalled: false };
  if (ms < flapStart) return { phase: 'stalled', down: true, stalled: true };
  if (ms < recoveredAt(plan)) {
    // Starts with a window of service: the provider seems back, then fails again.
    const window = Math.floor((ms - flapStart) / plan.flapMs);
    return { phase: 'flapping', down: window % 2 === 1, stalled: false };
  }
  return { phase: 'recovered', down: false, stalled: false };
}

/** The `q` quantile of `values` (nearest rank), 0 for none. */
export function quantile(values, q) {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** A small deterministic PRNG (mulberry32). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Starts a provider. `clock()` gives ms since t0 (negative before the run: healthy, not counted).
 * Counts each request that arrives during the run into per-second buckets. A request that arrives
 * while it is stalled is held open until the caller gives up (or the provider is closed).
 */
export async function startProvider({ plan, clock, seed = 1, model = 'claude-demo' }) {
  const random = rng(seed);
  const stats = { calls: [], total: 0, duringOutage: 0, overloaded: 0, stalled: 0 };
  const recovered = recoveredAt(plan);
  const answer = okBody(model);
  const server = http.createServer((req, res) => {
    const now = clock();
    const { down, stalled } = phaseAt(plan, Math.max(0, now));
    if (now >= 0) {
      const i = Math.floor(now / 1000);
      while (stats.calls.length <= i) stats.calls.push(0);
      stats.calls[i] += 1;
      stats.total += 1;
      if (now >= plan.healthyMs && now < recovered) stats.duringOutage += 1;
      if (stalled) stats.stalled += 1;
      else if (down) stats.overloaded += 1;
    }
    req.resume();
    if (stalled) return;
    // A real completion takes a while; an overload answer comes back quickly.
    const delay = down ? 40 + random() * 60 : 120 + random() * 160;
    setTimeout(() => {
      res.writeHead(down ? 529 : 200, {
        'content-type': 'application/json',
        ...(down ? { 'retry-after': '1' } : {}),
      });
      res.end(down ? OVERLOADED_BODY : answer);
    }, delay);
  });
  const { port, close } = await listenLocal(server);
  return { url: `http://127.0.0.1:${port}/v1/messages`, stats, close };
}
