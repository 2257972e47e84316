// Streams and fallback chains as an app writes them: a Response body, an AI SDK-like part stream,
// and a chain whose tiers are a CircuitBreaker, a SharedCircuitBreaker and a StoreCircuitBreaker.
import { CircuitBreaker, FallbackChain, StreamError, type ChainResult, type TierEvent } from 'breakwater';
import { SharedCircuitBreaker, type NamespaceLike } from 'breakwater/shared';
import { MemoryStore, StoreCircuitBreaker } from 'breakwater/store';

const claude = new CircuitBreaker('anthropic');

export async function chat(req: Request): Promise<Response> {
  const body: ReadableStream<Uint8Array> = await claude.stream(({ signal }) => fetch('https://api.example/v1/messages', { signal }), {
    signal: req.signal,
    firstChunkTimeoutMs: 10_000,
    idleTimeoutMs: 15_000,
    onInterrupted: (error) => `event: error\ndata: ${JSON.stringify({ message: String(error) })}\n\n`,
  });
  return new Response(body);
}

type Part = { type: 'text-delta'; text: string } | { type: 'error'; error: unknown } | { type: 'finish' };
export async function parts(source: () => ReadableStream<Part>): Promise<ReadableStream<Part>> {
  return claude.stream<Part>(source, {
    isContent: (p) => 'type' in p && p.type === 'text-delta',
    errorOf: (p) => ('type' in p && p.type === 'error' ? p.error : undefined),
    onInterrupted: () => ({ type: 'text-delta', text: ' [interrupted]' }),
  });
}

export function chain(ns: NamespaceLike): FallbackChain<string> {
  const shared = new SharedCircuitBreaker('opus', { shared: ns });
  const store = new StoreCircuitBreaker('haiku', { store: new MemoryStore() });
  const models = new FallbackChain<string>(
    [
      { breaker: shared, call: async () => 'opus' },
      { breaker: claude, call: async ({ signal }) => `sonnet ${signal?.aborted}`, name: 'sonnet' },
      { breaker: store, call: () => 'haiku' },
    ],
    { name: 'models', fallThrough: (e) => !(e instanceof StreamError && e.kind === 'empty') },
  );
  models.onTier((e: TierEvent) => console.log(e.chain, e.tier, e.name, e.outcome));
  return models;
}

export async function answer(models: FallbackChain<string>): Promise<ChainResult<string>> {
  return models.execute({ timeoutMs: 5000 });
}
