// Measurements for the closing note (printed as `# measure: …` lines and written to
// tests/worker/.build/measurements.json): upstream calls spent before all 8 isolates stop during
// an outage (shared object vs per-isolate local breakers), object requests per 100 healthy
// calls, and guarded calls per second through one object with batching.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startUpstream, objectWorker, rustApp, jsApp, start, call, drive, JS_APP } from './harness.mjs';

const BREAKERS = {
  upstream: { lease_ms: 1000, breaker: { trip: { kind: 'consecutive_failures', threshold: 5 }, open_duration_ms: 30_000 } },
};
const NAMES = ['rust-1', 'rust-2', 'rust-3', 'rust-4', 'js-1', 'js-2', 'js-3', 'js-4'];
const results = {};
let upstream;

after(async () => {
  await upstream?.close();
  fs.writeFileSync(path.join(path.dirname(JS_APP), 'measurements.json'), JSON.stringify(results, null, 2));
});

async function cluster(mode, breakers = BREAKERS) {
  const opts = { upstream: upstream.url, breaker: 'upstream', breakers, mode, localThreshold: 5, localOpenMs: 30_000 };
  const env = await start([
    objectWorker({ breakers }),
    ...NAMES.map((n) => (n.startsWith('rust') ? rustApp(n, opts) : jsApp(n, opts))),
  ]);
  const apps = await Promise.all(NAMES.map(async (n) => [n, await env.app(n)]));
  return { env, apps };
}

async function outageCost(mode) {
  const { env, apps } = await cluster(mode);
  try {
    upstream.state.mode = 'up';
    await drive(apps, { concurrency: 2, stopApp: (_, t) => t.ok >= 10 });
    upstream.state.mode = 'down';
    const before = upstream.state.count;
    const tallies = await drive(apps, { concurrency: 2, stopApp: (_, t) => t.rejected > 0 });
    for (const [name, t] of tallies) assert.ok(t.rejected > 0, `${mode}: ${name} never stopped`);
    return upstream.state.count - before;
  } finally {
    upstream.state.mode = 'up';
    await env.mf.dispose();
  }
}

test('outage cost: upstream calls before all 8 isolates stop, shared vs local', async () => {
  upstream = await startUpstream();
  const shared = await outageCost('shared');
  const local = await outageCost('local');
  results.outage = { shared, local, isolates: 8, loops_per_isolate: 2, threshold: 5 };
  console.log(`# measure: outage cost (8 isolates x 2 concurrent loops, 5 failures trip): shared object ${shared} upstream calls, per-isolate local breakers ${local}`);
  assert.ok(shared < local);
});

test('object requests per 100 healthy calls, and guarded calls per second with batching', async () => {
  const { env, apps } = await cluster('shared');
  try {
    // Warm up: every isolate gets its lease.
    await Promise.all(apps.map(([, f]) => call(f)));
    const req0 = await Promise.all(apps.map(async ([, f]) => (await call(f, '/app/stats', { method: 'GET' })).body.object_requests));
    const u0 = upstream.state.count;
    const t0 = performance.now();
    await drive(apps, { concurrency: 4, stopApp: (_, t) => t.ok >= 500 });
    const healthyMs = performance.now() - t0;
    const req1 = await Promise.all(apps.map(async ([, f]) => (await call(f, '/app/stats', { method: 'GET' })).body.object_requests));
    const calls = upstream.state.count - u0;
    const requests = req1.reduce((a, b) => a + b, 0) - req0.reduce((a, b) => a + b, 0);
    const per100 = (100 * requests) / calls;
    const perIsolatePerSecond = calls / 8 / (healthyMs / 1000);
    results.healthy = { calls, object_requests: requests, per_100_calls: per100, seconds: healthyMs / 1000, calls_per_isolate_per_second: perIsolatePerSecond, lease_ms: 1000, max_batch: 1000 };
    console.log(`# measure: healthy traffic over HTTP: ${calls} guarded calls in ${(healthyMs / 1000).toFixed(1)} s, ${requests} object requests = ${per100.toFixed(2)} per 100 calls at ${perIsolatePerSecond.toFixed(0)} calls/s per isolate (lease 1 s, batch 1000)`);

    // Throughput: guarded no-op calls inside the isolates, all 8 at once, through one object.
    const N = 20_000;
    const t1 = performance.now();
    const bench = await Promise.all(apps.map(([, f]) => call(f, `/app/bench?n=${N}`)));
    const benchMs = performance.now() - t1;
    const ok = bench.reduce((a, { body }) => a + body.ok, 0);
    const benchRequests = bench.reduce((a, { body }) => a + body.object_requests, 0) - req1.reduce((a, b) => a + b, 0);
    const perSecond = ok / (benchMs / 1000);
    results.throughput = { calls: ok, seconds: benchMs / 1000, calls_per_second: perSecond, object_requests: benchRequests };
    results.throughput.per_100_calls = (100 * benchRequests) / ok;
    console.log(`# measure: throughput: ${ok} guarded calls (8 isolates x ${N}) in ${(benchMs / 1000).toFixed(2)} s = ${Math.round(perSecond)} calls/s through one object, ${benchRequests} object requests`);
    assert.equal(ok, 8 * N);

    // The same object with one round trip per call (no lease, no batching), from the 4 JS apps.
    const M = 500;
    const t2 = performance.now();
    const js = apps.filter(([n]) => n.startsWith('js'));
    await Promise.all(js.map(([, f]) => call(f, `/app/unbatched?n=${M}`)));
    const unbatchedMs = performance.now() - t2;
    const unbatched = (js.length * M) / (unbatchedMs / 1000);
    results.unbatched = { calls: js.length * M, seconds: unbatchedMs / 1000, calls_per_second: unbatched };
    console.log(`# measure: reference without lease/batching: ${js.length * M} calls, one object request each, in ${(unbatchedMs / 1000).toFixed(2)} s = ${Math.round(unbatched)} calls/s`);
    // While healthy a client asks only to renew its lease (once per lease period in which it
    // admits calls) and to send a full batch: at most one request per isolate per lease period
    // plus one per `max_batch` outcomes. Per 100 calls that is 100 / (calls per isolate per
    // lease period), so under 1 once an isolate makes 100 calls per lease period.
    const bound = 8 * (healthyMs / 1000 + 2) + calls / 1000;
    assert.ok(requests <= bound, `${requests} object requests > ${bound}`);
    assert.ok(benchRequests * 100 <= ok, `${benchRequests} object requests for ${ok} calls`);
  } finally {
    await env.mf.dispose();
  }
});

test('object requests per 100 healthy calls with a 5 s lease', async () => {
  const breakers = { upstream: { ...BREAKERS.upstream, lease_ms: 5000 } };
  const { env, apps } = await cluster('shared', breakers);
  try {
    await Promise.all(apps.map(([, f]) => call(f)));
    const stats = () => Promise.all(apps.map(async ([, f]) => (await call(f, '/app/stats', { method: 'GET' })).body.object_requests));
    const req0 = (await stats()).reduce((a, b) => a + b, 0);
    const u0 = upstream.state.count;
    const t0 = performance.now();
    await drive(apps, { concurrency: 4, stopApp: (_, t) => t.ok >= 800 });
    const seconds = (performance.now() - t0) / 1000;
    const requests = (await stats()).reduce((a, b) => a + b, 0) - req0;
    const calls = upstream.state.count - u0;
    const per100 = (100 * requests) / calls;
    results.healthy_lease_5s = { calls, object_requests: requests, per_100_calls: per100, seconds, lease_ms: 5000 };
    console.log(`# measure: healthy traffic, 5 s lease: ${calls} calls in ${seconds.toFixed(1)} s, ${requests} object requests = ${per100.toFixed(2)} per 100 calls`);
    assert.ok(requests <= 8 * (seconds / 5 + 2) + calls / 1000);
  } finally {
    await env.mf.dispose();
  }
});
