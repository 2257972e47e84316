// The Worker of the README: BreakerObject and its clients both from breakwater/cloudflare, so that
// it loads one shared wasm module (the coordinator's, which carries the lease client too). The
// app is apps/user-app.ts; apps/user-worker-shared.ts is the same Worker with its clients from
// breakwater/shared.
import { SharedCircuitBreaker } from 'breakwater/cloudflare';
import { userApp } from './user-app.js';

export { BreakerObject } from 'breakwater/cloudflare';

export default userApp(SharedCircuitBreaker, { clients_from: 'breakwater/cloudflare' });
