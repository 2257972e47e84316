// A route handler as it would run on Vercel Edge: a module-level breaker shared by requests.
import { CircuitBreaker, isCircuitOpenError, withRetry } from 'breakwater';

const breaker = new CircuitBreaker('edge-upstream', { failureThreshold: 2, resetTimeout: 60_000 });

async function handle(request) {
  const upstream = new URL(request.url).searchParams.get('upstream');
  try {
    const res = await breaker.execute(() =>
      withRetry(() => fetch(upstream), { maxAttempts: 2, sleep: async () => {} }),
    );
    return Response.json({ state: breaker.state, upstreamStatus: res.status });
  } catch (err) {
    if (isCircuitOpenError(err)) {
      return Response.json({ state: breaker.state, fallback: true, retryAfterMs: err.retryAfterMs }, { status: 503 });
    }
    throw err;
  }
}

self.addEventListener('fetch', (event) => event.respondWith(handle(event.request)));
