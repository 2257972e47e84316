import { CircuitBreaker, type CircuitBreakerOptions } from 'breakwater';

/**
 * Where the Anthropic API is: `ANTHROPIC_BASE_URL` (as the Anthropic SDK reads it, without
 * `/v1`; a trailing `/v1` is accepted too), e.g. `http://127.0.0.1:8788` for a local fake.
 */
export const ANTHROPIC_BASE_URL = (process.env.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com')
  .replace(/\/+$/, '')
  .replace(/\/v1$/, '');

/**
 * The settings of every breaker here: 5 failures within a minute open it, 30 s later
 * (`BREAKER_RESET_TIMEOUT_MS`) one probe goes through, 2 successful probes close it.
 */
export const breakerOptions: CircuitBreakerOptions = {
  failureThreshold: 5,
  monitoringWindow: 60_000,
  resetTimeout: Number(process.env.BREAKER_RESET_TIMEOUT_MS ?? 30_000),
  halfOpenSuccessThreshold: 2,
};

/** A breaker, made once per server process (module level): every request shares it. */
export const summarizeBreaker = new CircuitBreaker('anthropic', breakerOptions);

/** What the provider answered when it was not a 2xx: breakwater classifies it by `status` and `headers`. */
export class ProviderError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Headers,
  ) {
    super(`the provider answered ${status}`);
    this.name = 'ProviderError';
  }
}

/** `Retry-After` in whole seconds (at least 1) for a refusal's `retryAfterMs`. */
export function retryAfterSeconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)));
}
