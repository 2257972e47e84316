// breakwater/cloudflare in Node: BreakerObject and breakerRoutes driven by SharedCircuitBreaker
// clients through a namespace written in the test (a Map per object for ctx.storage), so that
// every path of the shell runs here in a few milliseconds: the names and settings clients send,
// pinned settings, a failed write, a restart, a rolling deploy, the routes' tokens and answers,
// and the warnings a misconfiguration gets. tests/worker/cloudflare.test.mjs runs the same object
// in workerd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import parsePrometheus from 'parse-prometheus-text-format';
import { isCircuitOpenError } from 'breakwater';
import { SharedCircuitBreaker } from 'breakwater/shared';
import './workerd-module.mjs';

const cloudflare = await import('breakwater/cloudflare');
const { BreakerObject, breakerRoutes } = cloudflare;

// The object reads Date.now(), as in workerd: the tests move it.
const T0 = 1_800_000_000_000;
let now = T0;
Date.now = () => now;

/** `ctx` for an object: an id (with or without its name) and a Map as storage; `failPuts` makes writes throw. */
function state(name, storage = new Map(), opts = {}) {
  return {
    id: { name: opts.nameless ? undefined : name, toString: () => `id-${name}` },
    storage: {
      async get(key) {
        return storage.get(key);
      },
      async put(key, value) {
        if (opts.failPuts?.()) throw new Error('storage is down');
        storage.set(key, value);
      },
    },
  };
}

/**
 * A Durable Object namespace in this process: one BreakerObject per name (made on first use, as
 * workerd does), each with its own storage; `restart()` drops the objects and keeps the storage.
 */
function namespace(env = {}, opts = {}) {
  const storages = new Map();
  let objects = new Map();
  const requests = [];
  const object = (name) => {
    if (!objects.has(name)) {
      if (!storages.has(name)) storages.set(name, new Map());
      objects.set(name, new BreakerObject(state(name, storages.get(name), opts), env));
    }
    return objects.get(name);
  };
  return {
    requests,
    storages,
    restart() {
      objects = new Map();
    },
    idFromName: (name) => ({ name }),
    get: (id) => ({
      fetch: async (input, init) => {
        const req = new Request(input, init);
        requests.push({ url: req.url, settings: req.headers.get('breakwater-settings') });
        return object(id.name).fetch(req);
      },
    }),
  };
}

const upstreamDown = () => Promise.reject(Object.assign(new Error('overloaded'), { status: 529 }));

async function fail(b, n) {
  for (let i = 0; i < n; i++) await assert.rejects(b.execute(upstreamDown));
}

test('breakwater/cloudflare exports breakwater/shared’s SharedCircuitBreaker: one class, whichever entry it comes from', () => {
  assert.equal(cloudflare.SharedCircuitBreaker, SharedCircuitBreaker);
  const ns = namespace();
  assert.ok(new cloudflare.SharedCircuitBreaker('either', { shared: ns }) instanceof SharedCircuitBreaker);
  assert.ok(new SharedCircuitBreaker('either', { shared: ns }) instanceof cloudflare.SharedCircuitBreaker);
});

test('a client sends its name and settings; the object runs them, and every client obeys one breaker', async () => {
  now += 3_600_000;
  const ns = namespace();
  const opts = { shared: ns, breaker: { failureThreshold: 2, resetTimeout: 1000 }, leaseMs: 200 };
  const a = new SharedCircuitBreaker('anthropic', opts);
  const b = new SharedCircuitBreaker('anthropic', opts);
  assert.equal(await a.execute(() => 'ok'), 'ok');
  const first = new URL(ns.requests[0].url);
  assert.equal(first.searchParams.get('breaker'), 'anthropic');
  assert.deepEqual(JSON.parse(ns.requests[0].settings).breaker.trip, { kind: 'consecutive_failures', threshold: 2 });
  assert.equal(JSON.parse(ns.requests[0].settings).lease_ms, 200);
  await fail(a, 2);
  assert.equal(a.state, 'OPEN');
  now += 250; // b's lease (if any) has run out: it asks, and hears OPEN
  await assert.rejects(b.execute(() => 'never'), isCircuitOpenError);
  assert.equal(b.state, 'OPEN');
  assert.equal(b.decidingLocally, false);
  // Liveness: after the open period one probe closes it for everyone.
  now += 1000;
  assert.equal(await b.execute(() => 'probe'), 'probe');
  now += 250;
  assert.equal(await a.execute(() => 'again'), 'again');
  assert.equal(a.state, 'CLOSED');
});

test('a module-level breaker draws no random values when it is constructed (workerd refuses them at global scope)', async () => {
  const ns = namespace();
  const real = crypto.getRandomValues;
  let b;
  crypto.getRandomValues = () => {
    throw new Error('Disallowed operation called within global scope');
  };
  try {
    b = new SharedCircuitBreaker('anthropic', { shared: ns, breaker: { failureThreshold: 2 } });
  } finally {
    crypto.getRandomValues = real;
  }
  assert.equal(await b.execute(() => 'ok'), 'ok');
  assert.match(b.clientId, /^js-[0-9a-f]{16}$/);
});

test('an object whose id has no name serves the name its clients send, keeps it, and refuses another', async () => {
  const storage = new Map();
  const obj = new BreakerObject(state('anthropic', storage, { nameless: true }), {});
  const body = JSON.stringify({ client: 'c1', batches: [] });
  const post = (query) => obj.fetch(new Request(`https://breaker/acquire${query}`, { method: 'POST', body }));
  let r = await post('');
  assert.equal(r.status, 404);
  assert.match((await r.json()).message, /no name/);
  r = await post('?breaker=anthropic');
  assert.equal(r.status, 200, await r.clone().text());
  assert.ok((await r.json()).permit);
  r = await post('?breaker=openai');
  assert.equal(r.status, 409);
  assert.match((await r.json()).message, /"anthropic"/);
  r = await post('');
  assert.equal(r.status, 200, 'once named, a request without the name is served under it');
  r = await post('?breaker=bad%20name');
  assert.equal(r.status, 409);
});

test('malformed requests are refused with the reason, and change nothing', async () => {
  const storage = new Map();
  const obj = new BreakerObject(state('llm', storage), {});
  const at = (op, init = {}) => obj.fetch(new Request(`https://breaker/${op}?breaker=llm`, init));
  const cases = [
    [at('acquire', { method: 'POST', body: '{not json' }), 400, /invalid JSON/],
    [at('acquire', { method: 'POST', body: 'x'.repeat(65 * 1024) }), 413, /64 KiB/],
    [at('acquire', { method: 'POST', body: '{"client":"c"}', headers: { 'breakwater-settings': '{"breaker":{"open_jitter":2}}' } }), 400, /open_jitter/],
    [at('acquire', { method: 'POST', body: '{"client":"c"}', headers: { 'breakwater-settings': '{"surprise":1}' } }), 400, /surprise/],
    [at('steal', { method: 'POST', body: '{}' }), 404, /unknown operation/],
    [at('acquire', { method: 'GET' }), 405, /POST/],
    [at('acquire', { method: 'POST', body: '{"client":"not a client id"}' }), 400, /client/],
  ];
  for (const [pending, status, message] of cases) {
    const r = await pending;
    assert.equal(r.status, status);
    assert.match((await r.json()).message, message);
  }
  assert.equal(storage.size, 0, 'nothing was written');
  const ok = await at('acquire', { method: 'POST', body: '{"client":"c"}' });
  assert.equal(ok.status, 200);
});

test('BREAKERS pins the settings and the names; a mistake in it is named', async () => {
  now += 3_600_000;
  const env = { BREAKERS: { anthropic: { lease_ms: 100, breaker: { trip: { kind: 'consecutive_failures', threshold: 4 } } } } };
  const ns = namespace(env);
  // The client asks for 2; the Worker's BREAKERS says 4.
  const b = new SharedCircuitBreaker('anthropic', { shared: ns, breaker: { failureThreshold: 2 } });
  await fail(b, 3);
  assert.equal(b.state, 'CLOSED');
  await fail(b, 1);
  assert.equal(b.state, 'OPEN');
  // A name BREAKERS does not declare: refused, the client decides locally.
  const other = new SharedCircuitBreaker('openai', { shared: ns });
  assert.equal(await other.execute(() => 'local'), 'local');
  assert.equal(other.decidingLocally, true);
  // BREAKERS as a string, with a mistake: 500 naming the breaker and the field.
  const bad = new BreakerObject(state('x'), { BREAKERS: '{"x": {"lease_ms": 0}}' });
  const r = await bad.fetch(new Request('https://breaker/state?breaker=x'));
  assert.equal(r.status, 500);
  assert.match((await r.json()).message, /BREAKERS\["x"\].*lease_ms/);
});

test('the record survives a restart: an OPEN breaker is still OPEN, then recovers', async () => {
  now += 3_600_000;
  const ns = namespace();
  const opts = { shared: ns, breaker: { failureThreshold: 2, resetTimeout: 5000 }, leaseMs: 100 };
  await fail(new SharedCircuitBreaker('llm', opts), 2);
  ns.restart();
  const fresh = new SharedCircuitBreaker('llm', opts);
  now += 1000;
  const e = await fresh.execute(() => 'never').catch((x) => x);
  assert.ok(isCircuitOpenError(e), String(e));
  assert.ok(e.retryAfterMs > 3000 && e.retryAfterMs <= 4000, String(e.retryAfterMs));
  now += 4100;
  assert.equal(await fresh.execute(() => 'probe'), 'probe');
  assert.equal(fresh.state, 'CLOSED');
});

test('a write that fails answers 503 and leaves nothing granted in memory', async () => {
  now += 3_600_000;
  let down = false;
  const ns = namespace({}, { failPuts: () => down });
  const opts = { shared: ns, breaker: { failureThreshold: 1, resetTimeout: 1000 }, leaseMs: 100, retryUnreachableMs: 1 };
  const a = new SharedCircuitBreaker('llm', opts);
  await fail(a, 1);
  assert.equal(a.state, 'OPEN');
  now += 1100;
  down = true; // the probe's grant cannot be stored
  const events = [];
  a.onEvent((e) => events.push(e));
  await a.execute(() => 'decided locally');
  assert.ok(a.decidingLocally);
  assert.ok(events.some((e) => e.type === 'local' && /503/.test(e.reason)), JSON.stringify(events));
  down = false;
  now += 10;
  // The grant was not kept: another client gets the one probe.
  const b = new SharedCircuitBreaker('llm', opts);
  assert.equal(await b.execute(() => 'probe'), 'probe');
  assert.equal(b.state, 'CLOSED');
});

test('a rolling deploy: the stored settings stay in force until a reset installs the ones clients send now', async () => {
  now += 3_600_000;
  const ns = namespace();
  const env = { BREAKER: ns, ADMIN_TOKEN: 'admin-secret' };
  const old = new SharedCircuitBreaker('llm', { shared: ns, breaker: { failureThreshold: 3 }, leaseMs: 100 });
  const next = new SharedCircuitBreaker('llm', { shared: ns, breaker: { failureThreshold: 6 }, leaseMs: 100 });
  // The old version writes the record first; the new version's failures count under its rule
  // (3), and so do the old one's.
  await fail(old, 1);
  await fail(next, 1);
  assert.equal(next.state, 'CLOSED');
  await fail(old, 1);
  assert.equal(old.state, 'OPEN');
  // The deploy completes: only the new version asks now.
  now += 200;
  await assert.rejects(next.execute(() => 'never'), isCircuitOpenError);
  const admin = (path, method = 'GET') =>
    breakerRoutes(new Request(`https://app.example${path}`, { method, headers: { authorization: 'Bearer admin-secret' } }), env, { names: ['llm'] });
  let view = await (await admin('/admin/breakers/llm')).json();
  assert.equal(view.options_mismatch?.resolution, 'adopted');
  assert.equal(view.lease.state, 'OPEN');
  const reset = await (await admin('/admin/breakers/llm/reset', 'POST')).json();
  assert.equal(reset.lease.state, 'CLOSED');
  assert.equal(reset.options_mismatch, null, 'the settings of the clients asking now are installed');
  now += 200;
  await fail(next, 5);
  assert.equal(next.state, 'CLOSED', 'the new rule (6) is in force');
  await fail(next, 1);
  assert.equal(next.state, 'OPEN');
});

test('breakerRoutes without `names` nor BREAKERS says which option is missing, on every route a token opens', async () => {
  // A first Worker written as `breakerRoutes(request, env, { prefix })`: before, /metrics listed
  // nothing and /admin/breakers/<name> answered "no breaker of that name is configured".
  const env = { BREAKER: namespace(), ADMIN_TOKEN: 'admin-secret', SERVICE_TOKEN: 'service-secret' };
  const admin = { authorization: 'Bearer admin-secret' };
  for (const [path, init] of [
    ['/breakwater/metrics', { headers: admin }],
    ['/breakwater/admin/breakers/anthropic', { headers: admin }],
    ['/breakwater/v1/acquire?breaker=anthropic', { method: 'POST', headers: { authorization: 'Bearer service-secret' }, body: '{}' }],
  ]) {
    const resp = await breakerRoutes(new Request(`https://app.example${path}`, init), env, { prefix: '/breakwater' });
    assert.equal(resp.status, 404, path);
    const body = await resp.json();
    assert.equal(body.error, 'not_found', path);
    assert.match(body.message, /`names` option of breakerRoutes/, path);
  }
  // The status page answers, and says the same in its words.
  const page = await breakerRoutes(new Request('https://app.example/breakwater/admin/status', { headers: admin }), env, { prefix: '/breakwater' });
  assert.equal(page.status, 200);
  assert.match(await page.text(), /No breaker is served here: list them in the <code>names<\/code> option of breakerRoutes/);
  // With `names`, the same routes answer.
  const listed = await breakerRoutes(new Request('https://app.example/breakwater/metrics', { headers: admin }), env, { prefix: '/breakwater', names: ['anthropic'] });
  assert.equal(listed.status, 200);
  assert.deepEqual((await listed.json()).map((v) => v.name), ['anthropic']);
});

test('breakerRoutes: tokens, names, metrics in JSON and Prometheus, isolate and reset, the service for Node clients', async () => {
  now += 3_600_000;
  const ns = namespace();
  const env = { BREAKER: ns, ADMIN_TOKEN: 'admin-secret', SERVICE_TOKEN: 'service-secret', BREAKERS: '{"anthropic": {"lease_ms": 100}, "openai/gpt": {}}' };
  const route = (path, init = {}, options = { prefix: '/breakwater' }) => breakerRoutes(new Request(`https://app.example${path}`, init), env, options);
  const admin = { authorization: 'Bearer admin-secret' };
  assert.equal(await route('/app/call'), null, 'not one of its paths');
  assert.equal(await route('/metrics', { headers: admin }), null, 'outside its prefix');
  assert.equal((await route('/breakwater/metrics')).status, 401);
  assert.equal((await route('/breakwater/metrics', { headers: { authorization: 'Bearer nope' } })).status, 401);
  assert.equal(await breakerRoutes(new Request('https://a/metrics'), { BREAKER: ns }), null, 'off without ADMIN_TOKEN');

  // A Node client through the service route.
  const client = new SharedCircuitBreaker('anthropic', {
    service: { url: 'https://app.example/breakwater', token: 'service-secret', fetch: (input, init) => route(new URL(input).pathname + new URL(input).search, init) },
  });
  await fail(client, 5);
  assert.equal(client.state, 'OPEN');
  assert.equal(client.decidingLocally, false);

  const metrics = await (await route('/breakwater/metrics', { headers: admin })).json();
  assert.deepEqual(metrics.map((v) => [v.name, v.lease.state]), [['anthropic', 'OPEN'], ['openai/gpt', 'CLOSED']]);
  const text = await (await route('/breakwater/metrics?format=prometheus', { headers: admin })).text();
  const families = parsePrometheus(text);
  const stateFamily = families.find((f) => f.name === 'breakwater_state');
  const open = stateFamily.metrics.find((m) => m.labels.breaker === 'anthropic' && m.labels.state === 'open');
  assert.equal(open.value, '1');
  const calls = families.find((f) => f.name === 'breakwater_calls_total').metrics;
  assert.equal(calls.find((m) => m.labels.breaker === 'anthropic' && m.labels.result === 'failure').value, '5');

  assert.equal((await route('/breakwater/admin/breakers/openai%2Fgpt', { headers: admin })).status, 200);
  assert.equal((await route('/breakwater/admin/breakers/nope', { headers: admin })).status, 404);
  assert.equal((await route('/breakwater/admin/breakers/anthropic', { method: 'DELETE', headers: admin })).status, 405);
  const isolated = await (await route('/breakwater/admin/breakers/openai/gpt/isolate', { method: 'POST', headers: admin })).json();
  assert.equal(isolated.lease.mode, 'isolated');
  const reset = await (await route('/breakwater/admin/breakers/anthropic/reset', { method: 'POST', headers: admin })).json();
  assert.equal(reset.lease.state, 'CLOSED');

  // The service refuses names outside BREAKERS, a wrong token, and GETs.
  const svc = (q, token = 'service-secret', method = 'POST') =>
    route(`/breakwater/v1/acquire${q}`, { method, headers: { authorization: `Bearer ${token}` }, body: method === 'POST' ? '{"client":"c"}' : undefined });
  assert.equal((await svc('?breaker=anthropic')).status, 200);
  assert.equal((await svc('?breaker=other')).status, 404);
  assert.equal((await svc('')).status, 400);
  assert.equal((await svc('?breaker=anthropic', 'wrong')).status, 401);
  assert.equal((await svc('?breaker=anthropic', 'service-secret', 'GET')).status, 405);
  assert.equal(await route('/breakwater/v1/acquire?breaker=anthropic', { method: 'POST' }, { prefix: '/elsewhere' }), null);

  await assert.rejects(breakerRoutes(new Request('https://a/'), env, { prefx: '/x' }), /unknown option "prefx"/);
  await assert.rejects(breakerRoutes(new Request('https://a/'), env, { prefix: 'x' }), /prefix/);
});

test('a fallback that configuration causes is warned about once per cause, not per call; an outage is not', async () => {
  const warnings = [];
  const real = console.warn;
  console.warn = (...args) => warnings.push(args.join(' '));
  try {
    // No object of that name (BREAKERS pins another): 404.
    const ns = namespace({ BREAKERS: { anthropic: {} } });
    const b = new SharedCircuitBreaker('misspelt', { shared: ns, retryUnreachableMs: 1 });
    const events = [];
    b.onEvent((e) => events.push(e.type));
    for (let i = 0; i < 5; i++) await b.execute(() => 'local');
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0], /"misspelt".*404.*configuration, not an outage.*BREAKERS/);
    assert.ok(events.includes('local'));
    // A wrong token: 401, its own warning.
    const route = (input, init) => breakerRoutes(new Request(input, init), { BREAKER: ns, SERVICE_TOKEN: 'right', BREAKERS: { anthropic: {} } });
    const c = new SharedCircuitBreaker('anthropic', { service: { url: 'https://app.example', token: 'wrong', fetch: route } });
    await c.execute(() => 'local');
    await c.execute(() => 'local');
    assert.equal(warnings.length, 2, warnings.join('\n'));
    assert.match(warnings[1], /401.*token/);
    // An outage (the coordinator unreachable) is not a configuration mistake: no warning.
    const down = new SharedCircuitBreaker('anthropic', { service: { url: 'https://app.example', token: 't', fetch: async () => new Response('down', { status: 503 }) } });
    await down.execute(() => 'local');
    assert.equal(down.decidingLocally, true);
    assert.equal(warnings.length, 2);
  } finally {
    console.warn = real;
  }
});

test('the breaker and leaseMs options are checked like every other option', () => {
  const ns = namespace();
  assert.throws(() => new SharedCircuitBreaker('a', { shared: ns, breaker: { failureThreshold: 0 } }), /failureThreshold/);
  assert.throws(() => new SharedCircuitBreaker('a', { shared: ns, breaker: { resetTimout: 1000 } }), /resetTimout/);
  assert.throws(() => new SharedCircuitBreaker('a', { shared: ns, leaseMs: 0 }), /leaseMs/);
  assert.throws(
    () => new SharedCircuitBreaker('a', { shared: ns, breaker: { slowCallRate: { thresholdPercent: 50, slowCallMs: 100, minimumCalls: 5, window: { calls: 10 } } } }),
    /slow/,
  );
});
