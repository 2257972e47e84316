import { registry } from '@/lib/breakers';
import { describe } from '@/lib/provider';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

/** Every breaker of this server instance (Node runtime) and its state. */
export async function GET(): Promise<Response> {
  const breakers: Record<string, ReturnType<typeof describe>> = {};
  for (const [name, breaker] of registry) breakers[name] = describe(breaker);
  return Response.json({ runtime: 'nodejs', breakers });
}
