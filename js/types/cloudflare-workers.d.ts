// What breakwater/cloudflare uses of the Workers runtime's own module, for building its
// declarations alongside the DOM's types. Apps get the real ones from @cloudflare/workers-types
// or `wrangler types`; the emitted declarations name only `DurableObject` and `DurableObjectState`.
interface DurableObjectState {
  readonly id: { readonly name?: string | undefined; toString(): string };
  readonly storage: {
    get<T = unknown>(key: string): Promise<T | undefined>;
    put<T>(key: string, value: T): Promise<void>;
  };
}

declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    protected ctx: DurableObjectState;
    protected env: Env;
    constructor(ctx: DurableObjectState, env: Env);
  }
}
