import { globalBreakers } from 'breakwater';
import { breakerOptions } from './provider';

/**
 * The Node runtime's breakers: one per provider or model, one set per server instance.
 *
 * Next.js bundles `proxy.ts`, route handlers and pages separately, each with its own copy of
 * breakwater, so a plain module-level `const` would exist once per bundle. `globalBreakers()`
 * keeps the registry on `globalThis`: the proxy, every route and every page of this server
 * instance see the same breakers for as long as the process lives (`next start`). Everyone goes
 * through `breaker()` below, so each breaker is created with the same options whoever asks
 * first. Edge routes run in a separate runtime and keep breakers of their own.
 */
export const registry = globalBreakers();

/** The breaker named `name` (created on first use with the example's options). */
export function breaker(name: string) {
  return registry.get(name, breakerOptions());
}
