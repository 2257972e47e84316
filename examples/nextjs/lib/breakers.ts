import { BreakerRegistry } from 'breakwater';
import { breakerOptions } from './provider';

/**
 * The Node runtime's breakers: one registry per server instance, one breaker per provider.
 *
 * Next.js bundles route handlers and pages separately, so a plain module-level `const` can exist
 * once per bundle layer inside the same process. Keeping the registry on `globalThis` makes it
 * one per process: every route and page of this server instance sees the same breakers, for as
 * long as the process lives (`next start`). Edge routes run in a separate runtime and keep
 * breakers of their own.
 */
const g = globalThis as typeof globalThis & { __breakwaterRegistry?: BreakerRegistry };
export const registry = (g.__breakwaterRegistry ??= new BreakerRegistry(breakerOptions()));
