// Seed 000's route body — `if (!breaker.isHealthy()) return fallback(); … recordSuccess() /
// recordFailure()` — run as the article writes it against two instances of one breaker (a local
// one, or a shared one: a Durable Object, a store, the breaker service), in whatever runtime
// imports this: Node (tests/js/seed000-shared.test.mjs), workerd (tests/js/workerd/worker.mjs),
// the edge runtime (tests/js/edge/route.mjs) and Redis (tests/redis/store.test.mjs). It answers
// what happened; `checkSeed000` says what each runtime must see.
//
// `make(i)` builds instance i (0 or 1) with seed 000's options; `wait(ms)` lets that much time
// pass (a manual clock, or real time); `flush(b)` lets a shared instance's background requests
// finish (nothing for a local breaker).

/** A provider that fails on cue, counting the calls that reach it. */
export function provider() {
  const p = { down: false, calls: 0 };
  p.messages = {
    create: async () => {
      p.calls++;
      await new Promise((r) => setTimeout(r, 1));
      if (p.down) throw Object.assign(new Error('Overloaded'), { status: 529 });
      return { content: [{ type: 'text', text: 'hello' }] };
    },
  };
  return p;
}

// Seed 000's route body, as the article writes it (the breaker and the client passed in).
export async function callAgent(anthropicBreaker, client, prompt) {
  if (!anthropicBreaker.isHealthy()) {
    return getFallbackResponse(prompt);
  }

  try {
    const response = await client.messages.create({
      model: 'claude-sonnet-4-6',
      max_tokens: 1024,
      messages: [{ role: 'user', content: prompt }],
    });

    anthropicBreaker.recordSuccess();
    const content = response.content[0];
    return content.type === 'text' ? content.text : '';
  } catch (error) {
    anthropicBreaker.recordFailure();
    throw error;
  }
}
const getFallbackResponse = () => 'fallback';

/** `n` calls through `callAgent`; answers by kind. */
export async function calls(breaker, client, n) {
  const seen = { text: 0, fallback: 0, error: 0 };
  for (let i = 0; i < n; i++) {
    try {
      const r = await callAgent(breaker, client, 'hi');
      seen[r === 'fallback' ? 'fallback' : 'text']++;
    } catch {
      seen.error++;
    }
  }
  return seen;
}

/**
 * The outage, seen from two instances: both warm, the provider goes down, instance 0 meets the
 * threshold (2 failures), then 10 more calls; instance 1, one lease later, 10 calls; the provider
 * heals, the open period passes, probes close the breaker; both are called again.
 */
export async function seed000Case({ make, wait, flush = async () => {}, leaseMs, resetTimeout }) {
  const a = make(0);
  const b = make(1);
  const client = provider();
  const r = { healthyType: typeof a.isHealthy() };
  a.recordIgnored();
  r.warm = [await calls(a, client, 2), await calls(b, client, 2)];
  await flush(a);
  await flush(b);

  client.down = true;
  client.calls = 0;
  r.failing = await calls(a, client, 2);
  r.blocked = await calls(a, client, 10);
  r.reachedFromA = client.calls;
  r.stateA = a.state;

  await flush(a);
  client.calls = 0;
  await wait(leaseMs);
  // The call that finds the lease run out is answered by the instance's own breaker while the
  // renewal is on its way; the next ones by the fleet's state.
  r.renewing = await calls(b, client, 1);
  await flush(b);
  r.others = await calls(b, client, 10);
  r.reachedFromB = client.calls;
  r.stateB = b.state;

  client.down = false;
  await wait(resetTimeout);
  // Probes: the first call after the open period asks for one in the background; the next takes it.
  r.rounds = 0;
  for (; r.rounds < 12 && a.state !== 'CLOSED'; r.rounds++) {
    await calls(a, client, 1);
    await flush(a);
  }
  r.afterA = await calls(a, client, 3);
  await wait(leaseMs);
  await calls(b, client, 1);
  await flush(b);
  r.afterB = await calls(b, client, 3);
  r.final = [a.state, b.state];
  return r;
}

/** What every kind of breaker, in every runtime, must answer. */
export function checkSeed000(r, assert) {
  assert.equal(r.healthyType, 'boolean', 'isHealthy() answers a boolean, not a Promise');
  assert.deepEqual(r.warm, [{ text: 2, fallback: 0, error: 0 }, { text: 2, fallback: 0, error: 0 }]);
  assert.deepEqual(r.failing, { text: 0, fallback: 0, error: 2 });
  assert.deepEqual(r.blocked, { text: 0, fallback: 10, error: 0 }, 'the instance that saw the failures blocks at once');
  assert.equal(r.reachedFromA, 2);
  assert.equal(r.stateA, 'OPEN');
  assert.ok(r.reachedFromB <= 1, `the others block within one lease: ${r.reachedFromB} calls reached the provider`);
  assert.deepEqual(r.others, { text: 0, fallback: 10, error: 0 });
  assert.equal(r.stateB, 'OPEN');
  // Two probes, each fetched by one call and taken by the next: 4 rounds; more only when a
  // parked probe outlived PARKED_PERMIT_MS on a slow machine and was given back.
  assert.ok(r.rounds <= 10, `recovered in ${r.rounds} rounds`);
  assert.deepEqual(r.afterA, { text: 3, fallback: 0, error: 0 });
  assert.deepEqual(r.afterB, { text: 3, fallback: 0, error: 0 });
  assert.deepEqual(r.final, ['CLOSED', 'CLOSED']);
}

/**
 * The same route body on a local breaker (one instance: nothing is shared): the threshold's
 * failures reach the provider, then it blocks at once, and lets calls through again once the
 * provider heals and the open period has passed.
 */
export async function seed000LocalCase({ breaker, wait, resetTimeout }) {
  const client = provider();
  const r = { healthyType: typeof breaker.isHealthy() };
  breaker.recordIgnored();
  client.down = true;
  r.outage = await calls(breaker, client, 10);
  r.reached = client.calls;
  r.state = breaker.state;
  client.down = false;
  await wait(resetTimeout);
  r.after = await calls(breaker, client, 3);
  r.final = breaker.state;
  return r;
}

export function checkSeed000Local(r, assert) {
  assert.equal(r.healthyType, 'boolean');
  assert.deepEqual(r.outage, { text: 0, fallback: 8, error: 2 });
  assert.equal(r.reached, 2);
  assert.equal(r.state, 'OPEN');
  assert.deepEqual(r.after, { text: 3, fallback: 0, error: 0 });
  assert.equal(r.final, 'CLOSED');
}
