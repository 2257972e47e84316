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

/**
 * An operator's switch: `{"name": "claude-sonnet-4-5", "action": "isolate"}` holds a breaker
 * OPEN (its calls go to the fallback) until `"reset"` closes it again. Only with the bearer
 * token in BREAKER_ADMIN_TOKEN; without that variable the switch is off.
 */
export async function POST(request: Request): Promise<Response> {
  const token = process.env.BREAKER_ADMIN_TOKEN;
  if (!token || request.headers.get('authorization') !== `Bearer ${token}`) {
    return Response.json({ error: 'forbidden' }, { status: 403 });
  }
  const { name, action } = (await request.json().catch(() => ({}))) as { name?: unknown; action?: unknown };
  if (typeof name !== 'string' || !registry.has(name)) {
    return Response.json({ error: `no breaker named ${JSON.stringify(name)}` }, { status: 404 });
  }
  const breaker = registry.get(name);
  if (action === 'isolate') breaker.isolate();
  else if (action === 'reset') breaker.reset();
  else return Response.json({ error: 'action must be "isolate" or "reset"' }, { status: 400 });
  return Response.json({ name, ...describe(breaker) });
}
