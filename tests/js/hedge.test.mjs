// FallbackChain's `hedge` (hedge() from breakwater/adaptive), through the public API against a
// local upstream on 127.0.0.1: a slow tier is hedged on the next one, the first answer wins, the
// loser's request is aborted (the server sees its connection close) and its breaker does not
// count it; the budget bounds the hedges over many calls, and refills once calls are fast again;
// a HALF_OPEN tier is never hedged; bad options are refused by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { CircuitBreaker, FallbackChain } from 'breakwater';
import { hedge, throttle } from 'breakwater/adaptive';
import { anthropic } from '../../js/src/cli/formats.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * An upstream: `/hang` accepts the request and never answers (an LLM whose first token takes
 * tens of seconds); `/fast` answers JSON; `/sse-hang` sends its headers, then nothing;
 * `/sse` streams an Anthropic Messages answer, "Hi" (its frames: js/src/cli/formats.mjs), the
 * end 10 ms after the word. It records when a request's connection closed before an answer was sent.
 */
async function upstream() {
  const closed = [];
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url);
    req.resume();
    let answered = false;
    res.on('close', () => {
      if (!answered) closed.push(req.url);
    });
    const end = (status, type, body) => {
      answered = true;
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    // `{"ok":true}`: any JSON answer (what the tests compare the value with), not a provider's.
    if (req.url === '/fast') setTimeout(() => end(200, 'application/json', '{"ok":true}'), 5);
    else if (req.url === '/sse-hang') res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
    else if (req.url === '/sse') {
      const events = anthropic.stream({ id: 'msg_test', model: 'claude-test', text: 'Hi', inputTokens: 3 });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(events.head() + events.delta('Hi'));
      setTimeout(() => {
        answered = true;
        res.end(events.tail());
      }, 10);
    }
    // /hang: nothing, until the client goes away.
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    url: (p) => base + p,
    closed,
    seen,
    close: () => new Promise((r) => (server.closeAllConnections(), server.close(r))),
  };
}

/** A chain whose primary takes 80 ms, hedged after 20 ms on a backup that answers at once and counts its calls. */
function slowPrimary(primary, backupName) {
  let calls = 0;
  const policy = hedge({ afterMs: 20, budget: 1 });
  const chain = new FallbackChain(
    [
      { breaker: primary, call: () => sleep(80).then(() => 'primary') },
      { breaker: new CircuitBreaker(backupName), call: () => (calls++, 'backup') },
    ],
    { hedge: policy },
  );
  return { chain, policy, backupCalls: () => calls };
}

async function until(check, ms = 3000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await sleep(10);
  }
  return true;
}

test('a slow tier is hedged: the backup answers, the loser is aborted (its connection closes) and not counted', async () => {
  const up = await upstream();
  try {
    // One failure would open the primary: a lost race must not count as one.
    const primary = new CircuitBreaker('primary', { failureThreshold: 1 });
    const backup = new CircuitBreaker('backup');
    const policy = hedge({ afterMs: 50, budget: 1 });
    const chain = new FallbackChain(
      [
        { breaker: primary, call: ({ signal }) => fetch(up.url('/hang'), { signal }).then((r) => r.json()) },
        { breaker: backup, call: ({ signal }) => fetch(up.url('/fast'), { signal }).then((r) => r.json()) },
      ],
      { hedge: policy },
    );
    const events = [];
    chain.onTier((e) => events.push(e));
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      const r = await chain.execute({ inputTokens: 1200 });
      assert.deepEqual([r.tier, r.value], [1, { ok: true }]);
      assert.ok(Date.now() - t0 < 2000, 'answered by the hedge, not after the primary');
    }
    assert.ok(await until(() => up.closed.filter((u) => u === '/hang').length === 3), `the upstream saw ${up.closed} close`);
    assert.deepEqual(
      events.slice(0, 3).map((e) => [e.tier, e.outcome]),
      [[1, 'hedged'], [0, 'lost'], [1, 'answered']],
    );
    assert.ok(events[0].afterMs >= 45, `hedged after ${events[0].afterMs} ms`);
    assert.equal(events[1].inputTokens, 1200);
    await sleep(20);
    assert.equal(primary.state, 'CLOSED');
    assert.equal(primary.stats.failures, 0);
    assert.equal(primary.stats.successes, 0);
    assert.equal(backup.stats.successes, 3);
    const s = policy.stats;
    assert.deepEqual([s.calls, s.started, s.won, s.lost, s.extraInputTokens], [3, 3, 3, 0, 3600]);
  } finally {
    await up.close();
  }
});

test('a stream is hedged before its first content: the first to begin is the answer, the other is cancelled', async () => {
  const up = await upstream();
  try {
    const chain = new FallbackChain(
      [
        { breaker: new CircuitBreaker('s-primary', { failureThreshold: 1 }), call: ({ signal }) => fetch(up.url('/sse-hang'), { signal }) },
        { breaker: new CircuitBreaker('s-backup'), call: ({ signal }) => fetch(up.url('/sse'), { signal }) },
      ],
      { hedge: hedge({ afterMs: 60, budget: 1 }) },
    );
    const { tier, value } = await chain.stream({ firstChunkTimeoutMs: 20_000 });
    assert.equal(tier, 1);
    const text = await new Response(value).text();
    assert.match(text, /"text":"Hi"/);
    assert.match(text, /message_stop/);
    assert.ok(await until(() => up.closed.includes('/sse-hang')), 'the primary stream was closed');
  } finally {
    await up.close();
  }
});

test('a fast primary is never hedged, and a hedge that loses is aborted in its turn', async () => {
  let backupCalls = 0;
  let backupAborted = 0;
  const policy = hedge({ afterMs: 30, budget: 1 });
  let primaryMs = 5;
  const chain = new FallbackChain(
    [
      { breaker: new CircuitBreaker('f-primary'), call: () => sleep(primaryMs).then(() => 'primary') },
      {
        breaker: new CircuitBreaker('f-backup', { failureThreshold: 1 }),
        call: ({ signal }) => {
          backupCalls++;
          return new Promise((resolve, reject) => {
            const t = setTimeout(resolve, 500, 'backup');
            signal.addEventListener('abort', () => (clearTimeout(t), backupAborted++, reject(signal.reason)));
          });
        },
      },
    ],
    { hedge: policy },
  );
  for (let i = 0; i < 5; i++) assert.equal((await chain.execute()).value, 'primary');
  assert.equal(backupCalls, 0);
  primaryMs = 80; // slower than afterMs, faster than the backup: the hedge starts and loses
  assert.equal((await chain.execute({ inputTokens: 10 })).value, 'primary');
  assert.equal(backupCalls, 1);
  assert.ok(await until(() => backupAborted === 1));
  const s = policy.stats;
  assert.deepEqual([s.started, s.won, s.lost, s.extraInputTokens], [1, 0, 1, 10]);
});

test('hedges never exceed the budget over many slow calls, and resume once calls are fast again', async () => {
  let backupCalls = 0;
  let slow = true;
  const policy = hedge({ afterMs: 1, budget: 0.1 });
  const chain = new FallbackChain(
    [
      { breaker: new CircuitBreaker('b-primary'), call: () => sleep(slow ? 15 : 0).then(() => 'primary') },
      { breaker: new CircuitBreaker('b-backup'), call: () => (backupCalls++, sleep(40).then(() => 'backup')) },
    ],
    { hedge: policy },
  );
  let calls = 0;
  for (let round = 0; round < 20; round++) {
    await Promise.all(Array.from({ length: 50 }, () => chain.execute()));
    calls += 50;
    assert.ok(backupCalls <= 0.1 * calls, `${backupCalls} hedges after ${calls} calls`);
  }
  // Every call was slow: the budget, not the delay, decided, and it was spent to the token.
  assert.ok(backupCalls >= 0.09 * calls, `${backupCalls} hedges after ${calls} calls`);
  assert.equal(policy.stats.started, backupCalls);
  assert.ok(policy.stats.refused >= calls - backupCalls - 1);
  // Liveness: fast calls refill the budget (up to 10 tokens), and a slow call is hedged again.
  slow = false;
  for (let i = 0; i < 120; i++) await chain.execute();
  assert.equal(policy.stats.tokens, 10);
  slow = true;
  const before = backupCalls;
  await chain.execute();
  assert.equal(backupCalls, before + 1);
});

test('no hedge while a tier is HALF_OPEN (its call is a probe) or OPEN', async () => {
  let t = 0;
  const clock = () => t;
  const primary = new CircuitBreaker('h-primary', { failureThreshold: 1, resetTimeout: 1000, clock });
  const { chain, policy, backupCalls } = slowPrimary(primary, 'h-backup');
  primary.recordFailure();
  assert.equal(primary.state, 'OPEN');
  assert.equal((await chain.execute()).tier, 1, 'OPEN: skipped at once, the backup asked in turn');
  t = 1000;
  assert.equal(primary.state, 'HALF_OPEN');
  const r = await chain.execute();
  assert.equal(r.value, 'primary', 'the probe ran to its end');
  assert.equal(backupCalls(), 1, 'only the call that skipped the OPEN primary');
  assert.equal(policy.stats.held, 1);
  assert.equal(primary.state, 'CLOSED');
  // Recovered: a slow call is hedged again.
  assert.equal((await chain.execute()).value, 'backup');
  assert.equal(policy.stats.started, 1);
});

test('no hedge while the primary sheds (its adaptive throttle refuses a share of calls)', async () => {
  // Failures push the throttle's refusal probability above 0 while the breaker stays CLOSED; the
  // probability is capped at 1 % and the breaker's seed fixed, so this call is admitted.
  const primary = new CircuitBreaker('t-primary', {
    failureThreshold: 1_000,
    adaptiveThrottle: throttle({ minimumRequests: 5, maxRejectionProbability: 0.01 }),
    random: () => 0.5,
  });
  for (let i = 0; i < 10; i++) primary.recordFailure();
  assert.equal(primary.state, 'CLOSED');
  assert.ok(primary.throttleProbability > 0, `probability ${primary.throttleProbability}`);
  const { chain, policy, backupCalls } = slowPrimary(primary, 't-backup');
  assert.equal((await chain.execute()).value, 'primary');
  assert.equal(backupCalls(), 0);
  assert.deepEqual([policy.stats.started, policy.stats.held], [0, 1]);
});

test("'auto' learns the tier's first-progress times: a call far slower than usual is hedged early", async () => {
  let ms = 5;
  const policy = hedge({ afterMs: 'auto', budget: 1, maxAfterMs: 5_000 });
  const chain = new FallbackChain(
    [
      { breaker: new CircuitBreaker('a-primary'), call: () => sleep(ms).then(() => 'primary') },
      { breaker: new CircuitBreaker('a-backup'), call: () => sleep(5).then(() => 'backup') },
    ],
    { hedge: policy },
  );
  for (let i = 0; i < 30; i++) await chain.execute();
  assert.equal(policy.stats.started, 0);
  ms = 3_000;
  const t0 = Date.now();
  assert.equal((await chain.execute()).value, 'backup');
  assert.ok(Date.now() - t0 < 1_000, `hedged after ${Date.now() - t0} ms (minAfterMs 100, not the 5 s before it learnt)`);
});

test('hedge options are checked by name; a plain object is refused with the import to use', () => {
  const tiers = [{ breaker: new CircuitBreaker('o-1'), call: () => 1 }];
  assert.throws(() => new FallbackChain(tiers, { hedge: { afterMs: 100, budget: 0.1 } }), /hedge.*hedge\(\) from 'breakwater\/adaptive'/s);
  assert.throws(() => hedge({ budget: 0 }), /hedge\.budget.*0/);
  assert.throws(() => hedge({ budget: 1.5 }), /hedge\.budget/);
  assert.throws(() => hedge({ afterMs: -1 }), /hedge\.afterMs.*-1/);
  assert.throws(() => hedge({ afterMs: 'soon' }), /hedge\.afterMs.*soon/);
  assert.throws(() => hedge({ afterMs: 500, quantile: 0.9 }), /quantile.*'auto'/);
  assert.throws(() => hedge({ quantile: 0.2 }), /hedge\.quantile.*0\.2/);
  assert.throws(() => hedge({ minAfterMs: 500, maxAfterMs: 100 }), /hedge\.maxAfterMs.*100/);
  assert.throws(() => hedge({ budjet: 0.1 }), /budjet/);
  const chain = new FallbackChain(tiers, { hedge: hedge() });
  return assert.rejects(chain.execute({ inputTokens: -3 }), /inputTokens.*-3/);
});

test("js/README's hedging example works as written: a healthy primary answers, no hedge", async () => {
  const up = await upstream();
  try {
    const fs = await import('node:fs/promises');
    const { transform } = await import('esbuild');
    const readme = await fs.readFile(new URL('../../js/README.md', import.meta.url), 'utf8');
    const block = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.includes("hedge({ afterMs: 'auto', budget: 0.1 })") && b.includes('FallbackChain('));
    assert.ok(block, 'js/README has the block');
    const code = (await transform(block, { loader: 'ts', format: 'esm' })).code;
    const given = `const prompt = 'hi'; const PRIMARY_MODEL = '/sse'; const BACKUP_MODEL = '/fast';
const streamMessage = (model, prompt, signal) => fetch(${JSON.stringify(up.url(''))} + model, { signal });\n`;
    const file = new URL(`./.readme-hedge-${process.pid}.mjs`, import.meta.url);
    await fs.writeFile(file, given + code + '\nexport { value, tier };\n');
    try {
      const { value, tier } = await import(file.href);
      assert.equal(tier, 0);
      assert.match(await new Response(value).text(), /message_stop/);
      assert.deepEqual(up.seen, ['/sse']);
    } finally {
      await fs.rm(file, { force: true });
    }
  } finally {
    await up.close();
  }
});

test('a shared breaker tells its throttle as a local one does: no hedge while the fleet sheds, hedges again once it stops', async () => {
  const { SharedCircuitBreaker } = await import('breakwater/shared');
  const { coordinatorGlue } = await import('breakwater/coordinator');
  // A rule that does not trip (100 % of 1 000 calls): only the fleet's throttle acts, capped at 1 %.
  const spec = JSON.stringify({
    lease_ms: 1000,
    breaker: {
      trip: { kind: 'failure_rate', threshold_percent: 100, minimum_calls: 1000, window: { calls: 1000 } },
      throttle: { multiplier: 2, window_ms: 10_000, minimum_requests: 5, max_rejection_probability: 0.01 },
    },
  });
  const co = coordinatorGlue().WasmCoordinator.create('llm', spec, undefined, false);
  let now = 1_800_000_000_000;
  const fetch = async (url, init) => new Response(co.exchange(now, init.body, url.includes('/v1/acquire')), { status: 200 });
  const primary = new SharedCircuitBreaker('llm', { service: { url: 'https://breakwater.example', token: 't', fetch }, clock: () => now });
  const failing = Object.assign(new Error('overloaded'), { status: 529 });
  for (let i = 0; i < 10; i++) await primary.execute(() => Promise.reject(failing)).catch(() => {});
  await primary.flush();
  now += 1_001; // the lease runs out: the next one carries the fleet's probability
  await primary.execute(() => 'ok');
  assert.equal(primary.state, 'CLOSED');
  assert.ok(primary.throttleProbability > 0 && primary.throttleProbability <= 0.01, `probability ${primary.throttleProbability}`);
  const { chain, policy, backupCalls } = slowPrimary(primary, 's-backup-2');
  const r = await chain.execute();
  assert.equal(backupCalls(), r.tier === 1 ? 1 : 0, 'no hedge (a call shed by the throttle falls through, once)');
  assert.equal(policy.stats.started, 0);
  // The upstream recovers: successes bring the fleet's probability back to 0, and a slow call is hedged.
  for (let i = 0; i < 60; i++) await primary.execute(() => 'ok').catch(() => {});
  await primary.flush();
  now += 11_000;
  await primary.execute(() => 'ok');
  now += 1_001;
  await primary.execute(() => 'ok');
  assert.equal(primary.throttleProbability, 0);
  assert.equal((await chain.execute()).value, 'backup');
  assert.equal(policy.stats.started, 1);
});

test('a wall clock stepped during a race changes nothing: its delays and first-progress times are monotonic', async () => {
  const wall = Date.now;
  let step = 0;
  Date.now = () => wall() + step;
  try {
    const { chain, policy } = slowPrimary(new CircuitBreaker('c-primary'), 'c-backup');
    const events = [];
    chain.onTier((e) => events.push(e));
    for (const jump of [3_600_000, -7_200_000]) {
      const answer = chain.execute();
      step += jump; // an hour forward, then two back, while the primary runs
      assert.equal((await answer).value, 'backup');
    }
    const afters = events.filter((e) => e.outcome === 'hedged').map((e) => e.afterMs);
    assert.equal(afters.length, 2);
    for (const ms of afters) assert.ok(ms >= 15 && ms < 1_000, `hedged after ${ms} ms`);
    assert.deepEqual([policy.stats.started, policy.stats.won], [2, 2]);
  } finally {
    Date.now = wall;
  }
});
