import { CircuitBreaker } from 'breakwater';
import { breakerOptions, describe, handleChat } from '@/lib/provider';

export const runtime = 'edge';
export const dynamic = 'force-dynamic';

// Module-level: created once per edge isolate, shared by every request it serves.
const anthropic = new CircuitBreaker('anthropic', breakerOptions());

export async function POST(request: Request): Promise<Response> {
  return handleChat(anthropic, request, 'edge');
}

/** This isolate's breaker (the Node runtime's are at /api/breaker). */
export async function GET(): Promise<Response> {
  return Response.json({ runtime: 'edge', breakers: { anthropic: describe(anthropic) } });
}
