// Lets Node load breakwater/cloudflare, whose BreakerObject extends the Workers runtime's
// `DurableObject` from 'cloudflare:workers' (a module only workerd has). Here that base class is
// what workerd's does for a subclass: it keeps `ctx` and `env`. Import this module first, then
// the package with `await import('breakwater/cloudflare')` (static imports resolve before it runs).
// tests/worker/ runs the object in real workerd.
import { register } from 'node:module';

const base = 'export class DurableObject { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }';
const hooks = `export async function resolve(specifier, context, next) {
  if (specifier === 'cloudflare:workers') {
    return { url: 'data:text/javascript,' + encodeURIComponent(${JSON.stringify(base)}), shortCircuit: true };
  }
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
