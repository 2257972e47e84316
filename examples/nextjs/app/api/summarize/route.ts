import { breaker } from '@/lib/breakers';
import { handleChat } from '@/lib/provider';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

// A second route on the same provider, so the same breaker: what /api/chat learns about the
// provider protects this route too. It has no fallback answer; while the breaker is OPEN,
// proxy.ts answers for it before this handler runs.
const anthropic = breaker('anthropic');

export async function POST(request: Request): Promise<Response> {
  return handleChat(anthropic, request, 'nodejs');
}
