import { env } from 'cloudflare:workers';
import { isCircuitOpenError } from 'breakwater';
import { SharedCircuitBreaker, breakerRoutes } from 'breakwater/cloudflare';

// The breaker's Durable Object, hosted by this Worker (wrangler.toml binds it as BREAKER).
export { BreakerObject } from 'breakwater/cloudflare';

interface Env {
  BREAKER: DurableObjectNamespace;
  ANTHROPIC_BASE_URL?: string;
  ANTHROPIC_API_KEY?: string;
  ADMIN_TOKEN?: string;
  /** How long the breaker stays OPEN before one probe (ms). Default 30 s. */
  BREAKER_RESET_TIMEOUT_MS?: string;
}

const NAME = 'anthropic';
const vars = env as unknown as Env;

// Module scope: one client per isolate, every isolate on the same breaker (the object named
// NAME). The settings travel with each request to the object.
const breaker = new SharedCircuitBreaker(NAME, {
  shared: vars.BREAKER,
  breaker: { failureThreshold: 5, monitoringWindow: 60_000, resetTimeout: Number(vars.BREAKER_RESET_TIMEOUT_MS ?? 30_000) },
});

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    // GET /metrics (JSON, or ?format=prometheus), GET /admin/status (the status page),
    // GET /admin/breakers/anthropic: Bearer ADMIN_TOKEN; off while ADMIN_TOKEN is not set.
    const routed = await breakerRoutes(request, env, { names: [NAME] });
    if (routed) return routed;

    const url = new URL(request.url);
    if (url.pathname !== '/api/summarize' || request.method !== 'POST') {
      return Response.json({ error: 'POST /api/summarize {"text": "..."}' }, { status: 404 });
    }
    const { text } = (await request.json().catch(() => ({}))) as { text?: unknown };
    if (typeof text !== 'string' || text === '') {
      return Response.json({ error: 'the body must be JSON: {"text": "..."}' }, { status: 400 });
    }

    const base = (env.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com').replace(/\/+$/, '').replace(/\/v1$/, '');
    try {
      // A resolved Response of 400 or more counts as the provider's failure (529, 429, 5xx) or
      // is ignored (other 4xx), as a thrown error would be.
      const reply = await breaker.execute(
        () =>
          fetch(`${base}/v1/messages`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': env.ANTHROPIC_API_KEY ?? '' },
            body: JSON.stringify({
              model: 'claude-haiku-4-5',
              max_tokens: 300,
              messages: [{ role: 'user', content: `Summarize in two sentences:\n\n${text}` }],
            }),
          }),
        { waitUntil: (p) => ctx.waitUntil(p) },
      );
      if (!reply.ok) {
        // The provider's failure (counted): not served as an answer.
        return Response.json({ error: `the provider answered ${reply.status}` }, { status: 502 });
      }
      const message = (await reply.json()) as { content?: { type: string; text?: string }[] };
      return Response.json({ summary: message.content?.find((c) => c.type === 'text')?.text ?? '' });
    } catch (err) {
      if (isCircuitOpenError(err)) {
        // Refused at once, no request sent: say when to come back.
        return Response.json(
          { error: 'The summarizer is unavailable right now, try again later.' },
          { status: 503, headers: { 'retry-after': String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))) } },
        );
      }
      throw err;
    }
  },
} satisfies ExportedHandler<Env>;
