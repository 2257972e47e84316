import { NextResponse, type NextRequest } from 'next/server';
import { breaker } from '@/lib/breakers';

/**
 * Next.js 16's proxy (formerly middleware; it runs on the Node runtime): while the provider's
 * breaker is OPEN, requests to the routes below are answered 503 with a Retry-After here, before
 * any route handler runs. `isOpen()` only looks: it takes no half-open probe slot and counts
 * nothing, so when the open period ends the next request reaches the route, whose `execute`
 * sends the probe. The breaker is the routes' own (`globalBreakers()` in lib/breakers.ts): the
 * proxy is bundled separately from them, but the registry lives on `globalThis`.
 *
 * /api/chat is left out on purpose: it answers with a fallback while OPEN when asked to.
 */
export function proxy(request: NextRequest) {
  const anthropic = breaker('anthropic');
  if (!anthropic.isOpen()) return NextResponse.next();
  const retryAfterMs = anthropic.retryAfterMs;
  return NextResponse.json(
    { error: 'the provider is unavailable; failing fast', state: anthropic.state, retryAfterMs, from: 'proxy' },
    { status: 503, headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) } },
  );
}

export const config = { matcher: ['/api/summarize'] };
