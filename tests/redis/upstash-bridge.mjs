// Test scaffolding, not part of the package: a local HTTP bridge that speaks the documented
// Upstash Redis REST protocol in front of a real redis-server, so that `@upstash/redis` (Vercel
// KV's client) can be exercised without the Upstash service.
//
//   POST /             body: a command as a JSON array (["EVAL", script, 1, key, ...])
//                      → 200 {"result": ...} or 400 {"error": "..."}
//   POST /pipeline     body: an array of commands → [{"result": ...} | {"error": "..."}, ...]
//   Authorization: Bearer <token> (else 401 {"error": "Unauthorized"})
//   Upstash-Encoding: base64 → every string in a result base64-encoded, except the status "OK"
import http from 'node:http';
import { once } from 'node:events';
import { createClient } from 'redis';

export async function startUpstashBridge(redisUrl, token = 'test-token') {
  const redis = createClient({ url: redisUrl, disableOfflineQueue: true });
  redis.on('error', () => {});
  await redis.connect();
  const stats = { commands: 0 };
  const encode = (v, b64) => {
    if (typeof v === 'string') return b64 && v !== 'OK' ? Buffer.from(v, 'utf8').toString('base64') : v;
    if (Array.isArray(v)) return v.map((x) => encode(x, b64));
    if (typeof v === 'bigint') return Number(v);
    return v ?? null;
  };
  const run = async (cmd, b64) => {
    if (!Array.isArray(cmd) || cmd.length === 0) return { error: 'ERR bad command' };
    stats.commands += 1;
    try {
      return { result: encode(await redis.sendCommand(cmd.map((a) => String(a))), b64) };
    } catch (e) {
      return { error: e?.message ?? String(e) };
    }
  };
  const server = http.createServer(async (req, res) => {
    const reply = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${token}`) return reply(401, { error: 'Unauthorized' });
    let text = '';
    for await (const chunk of req) text += chunk;
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return reply(400, { error: 'ERR the body is not JSON' });
    }
    const b64 = String(req.headers['upstash-encoding'] ?? '').toLowerCase() === 'base64';
    const path = new URL(req.url, 'http://x').pathname.replace(/\/+$/, '');
    if (path === '/pipeline' || path === '/multi-exec') {
      if (!Array.isArray(body)) return reply(400, { error: 'ERR a pipeline is an array of commands' });
      const out = [];
      for (const cmd of body) out.push(await run(cmd, b64));
      return reply(200, out);
    }
    const r = await run(body, b64);
    return r.error ? reply(400, r) : reply(200, r);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    token,
    stats,
    async close() {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(r));
      await redis.close?.();
    },
  };
}
