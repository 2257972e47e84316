// apps/user-worker.ts with its SharedCircuitBreaker imported from breakwater/shared, as a Worker
// written before breakwater/cloudflare exported it would: it then loads both shared wasm modules
// (the lease client's and the coordinator's), and must work the same. `/app/entry` also answers
// whether the two imports are one class.
import { env } from 'cloudflare:workers';
import { SharedCircuitBreaker, type NamespaceLike } from 'breakwater/shared';
import { SharedCircuitBreaker as FromCloudflare } from 'breakwater/cloudflare';
import { userApp } from './user-app.js';

export { BreakerObject } from 'breakwater/cloudflare';

const handler = userApp(SharedCircuitBreaker, {
  clients_from: 'breakwater/shared',
  same_class: SharedCircuitBreaker === FromCloudflare,
  // A client made by either import is an instance of the other's (it never calls its object).
  instance_of: new FromCloudflare('instance-check', { shared: (env as unknown as { BREAKER: NamespaceLike }).BREAKER }) instanceof SharedCircuitBreaker,
});
export default handler;
