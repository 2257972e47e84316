// A Cloudflare Worker: one breaker per isolate (module scope), guarding an upstream fetch.
import { CircuitBreaker, isCircuitOpenError, BreakerRegistry } from 'breakwater';

const registry = new BreakerRegistry({ failureThreshold: 2, resetTimeout: 60_000 });

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/snapshot') {
      return Response.json(registry.toJSON());
    }
    const breaker = registry.get(url.searchParams.get('provider') ?? 'anthropic');
    try {
      const res = await breaker.execute(() => fetch(env.UPSTREAM));
      return Response.json({ state: breaker.state, upstreamStatus: res.status });
    } catch (err) {
      if (isCircuitOpenError(err)) {
        return Response.json({ state: breaker.state, fallback: true }, { status: 503 });
      }
      return Response.json({ error: String(err) }, { status: 500 });
    }
  },
};
