// breakwater/cloudflare, ESM only, in a Worker's TypeScript: the runtime's types
// (@cloudflare/workers-types, which declares 'cloudflare:workers') in place of the DOM's. The
// clients from breakwater/cloudflare, as the README has it; breakwater/shared's class is the same.
import { env } from 'cloudflare:workers';
import { CircuitOpenError, type BreakerState, type CircuitBreakerOptions } from 'breakwater';
import {
  SharedCircuitBreaker as FromShared,
  type SharedBreakerOptions,
  type SharedEvent,
  type SharedExecuteOptions,
  type SharedStreamOptions,
} from 'breakwater/shared';
import { BreakerObject, breakerRoutes, SharedCircuitBreaker, type BreakerObjectEnv } from 'breakwater/cloudflare';

export { BreakerObject };
const vars = env as unknown as BreakerObjectEnv & { BREAKER: DurableObjectNamespace<BreakerObject> };
const rule: CircuitBreakerOptions = { failureThreshold: 5, resetTimeout: 30_000 };
const options: SharedBreakerOptions = { shared: vars.BREAKER, breaker: rule };
const breaker = new SharedCircuitBreaker('anthropic', options);
// One class, whichever entry it is imported from.
const same: FromShared = breaker;
const other: SharedCircuitBreaker = new FromShared('openai', options);
const states: BreakerState[] = [same.state, other.state];
breaker.onEvent((e: SharedEvent) => void e.type);
// @ts-expect-error: an option name with a typo
new SharedCircuitBreaker('typo', { shared: vars.BREAKER, failClose: true });

export default {
  async fetch(request: Request, env: BreakerObjectEnv, ctx: ExecutionContext): Promise<Response> {
    const run: SharedExecuteOptions<Response> = { waitUntil: (p) => ctx.waitUntil(p) };
    const stream: SharedStreamOptions<Uint8Array> | undefined = undefined;
    void stream;
    void states;
    try {
      return (await breakerRoutes(request, env, { prefix: '/breakwater' })) ?? (await breaker.execute(() => new Response('ok'), run));
    } catch (e) {
      if (e instanceof CircuitOpenError) return new Response('open', { status: 503 });
      throw e;
    }
  },
} satisfies ExportedHandler<BreakerObjectEnv>;
