import { isCircuitOpenError } from 'breakwater';
import { complete, ProviderError } from '@/lib/provider';
import { sharedBreaker, type Via } from '@/lib/shared-breaker';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

function via(request: Request): Via {
  return new URL(request.url).searchParams.get('via') === 'service' ? 'service' : 'redis';
}

/** A chat call guarded by the breaker every instance shares (`?via=redis` or `?via=service`). */
export async function POST(request: Request): Promise<Response> {
  const breaker = await sharedBreaker(via(request));
  if (!breaker) return Response.json({ error: 'this shared breaker is not configured' }, { status: 404 });
  let prompt = '';
  try {
    const payload = (await request.json()) as { prompt?: unknown };
    prompt = typeof payload.prompt === 'string' ? payload.prompt : '';
  } catch {
    return Response.json({ error: 'the body must be JSON: {"prompt": "…"}' }, { status: 400 });
  }
  try {
    const text = await breaker.execute(() => complete(prompt, request.signal));
    return Response.json({ text, state: breaker.state });
  } catch (err) {
    if (isCircuitOpenError(err)) {
      return Response.json(
        { error: 'the provider is unavailable; failing fast', state: breaker.state, reason: err.reason },
        { status: 503, headers: { 'retry-after': String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))) } },
      );
    }
    const status = err instanceof ProviderError ? err.status : 0;
    return Response.json({ error: String(err), providerStatus: status, state: breaker.state }, { status: 502 });
  }
}

/** The shared breaker as this instance knows it. */
export async function GET(request: Request): Promise<Response> {
  const breaker = await sharedBreaker(via(request));
  if (!breaker) return Response.json({ error: 'this shared breaker is not configured' }, { status: 404 });
  return Response.json({ state: breaker.state, decidingLocally: breaker.decidingLocally });
}
