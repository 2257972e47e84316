import { CircuitBreaker, isCircuitOpenError, withRetry } from 'breakwater';

/** An error carrying what the provider answered, in the shape breakwater classifies. */
export class ProviderError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Headers,
    readonly body: string,
  ) {
    super(`provider answered ${status}`);
    this.name = 'ProviderError';
  }
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new RangeError(`${name} must be a non-negative number, got ${raw}`);
  return n;
}

/** The breaker settings both routes use (5 failures in 60 s, 2 probes to close, with the open period from the environment). */
export function breakerOptions() {
  return {
    failureThreshold: envNumber('BREAKER_FAILURE_THRESHOLD', 5),
    monitoringWindow: 60_000,
    resetTimeout: envNumber('BREAKER_RESET_MS', 30_000),
    halfOpenSuccessThreshold: 2,
  };
}

/** One completion from the provider at PROVIDER_URL, retried on 429/5xx/529 with backoff. */
export async function complete(prompt: string, signal: AbortSignal): Promise<string> {
  const base = process.env.PROVIDER_URL;
  if (!base) throw new Error('PROVIDER_URL is not set');
  return withRetry(
    async () => {
      const res = await fetch(`${base}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo', max_tokens: 64, messages: [{ role: 'user', content: prompt }] }),
        signal,
      });
      const body = await res.text();
      if (!res.ok) throw new ProviderError(res.status, res.headers, body);
      const json = JSON.parse(body) as { content?: { text?: string }[] };
      return json.content?.[0]?.text ?? '';
    },
    {
      maxAttempts: envNumber('RETRY_MAX_ATTEMPTS', 2),
      baseDelayMs: envNumber('RETRY_BASE_DELAY_MS', 100),
      maxDelayMs: 2_000,
      maxRetryAfterMs: 2_000,
      signal,
    },
  );
}

/**
 * What a chat route does with a request: the breaker around the retries around the fetch.
 * While the breaker is open the route answers at once: with the fallback if the request asked
 * for one (the user should not notice), otherwise 503 with Retry-After.
 */
export async function handleChat(breaker: CircuitBreaker, request: Request, runtime: string): Promise<Response> {
  let payload: { prompt?: unknown; fallback?: unknown };
  try {
    payload = (await request.json()) as typeof payload;
  } catch {
    return Response.json({ error: 'the body must be JSON: {"prompt": "…"}' }, { status: 400 });
  }
  const prompt = typeof payload.prompt === 'string' ? payload.prompt : '';
  const useFallback = payload.fallback === true;
  try {
    const text = await breaker.execute(() => complete(prompt, request.signal), {
      fallback: useFallback ? () => 'The assistant is busy right now; here is a cached answer.' : undefined,
    });
    return Response.json({ text, runtime, state: breaker.state });
  } catch (err) {
    if (isCircuitOpenError(err)) {
      return Response.json(
        { error: 'the provider is unavailable; failing fast', runtime, state: breaker.state, retryAfterMs: err.retryAfterMs },
        { status: 503, headers: { 'retry-after': String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))) } },
      );
    }
    const status = err instanceof ProviderError ? err.status : 0;
    return Response.json({ error: String(err), providerStatus: status, runtime, state: breaker.state }, { status: 502 });
  }
}

/** A breaker's state as the status route and page show it. */
export function describe(breaker: CircuitBreaker) {
  return { state: breaker.state, mode: breaker.mode, openUntil: breaker.openUntil ?? null, stats: breaker.stats };
}
