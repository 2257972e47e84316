// breakwater/cloudflare, ESM only, in a Worker's TypeScript: the runtime's types
// (@cloudflare/workers-types, which declares 'cloudflare:workers') in place of the DOM's.
import { env } from 'cloudflare:workers';
import { SharedCircuitBreaker } from 'breakwater/shared';
import { BreakerObject, breakerRoutes, type BreakerObjectEnv } from 'breakwater/cloudflare';

export { BreakerObject };
const vars = env as unknown as BreakerObjectEnv & { BREAKER: DurableObjectNamespace<BreakerObject> };
const breaker = new SharedCircuitBreaker('anthropic', { shared: vars.BREAKER });

export default {
  async fetch(request: Request, env: BreakerObjectEnv): Promise<Response> {
    return (await breakerRoutes(request, env, { prefix: '/breakwater' })) ?? breaker.execute(() => new Response('ok'));
  },
} satisfies ExportedHandler<BreakerObjectEnv>;
