// What breakwater/cloudflare uses of the Workers runtime's own module, for building its
// declarations alongside the DOM's types. Apps get the real ones from @cloudflare/workers-types
// or `wrangler types`; the emitted declarations name only `DurableObject` and `DurableObjectState`.
/**
 * A Durable Object's own state, as the runtime hands it to the object (`ctx`): its id and storage.
 * @inline
 */
interface DurableObjectState {
  /** The object's id. */
  readonly id: {
    /** The name the id was made from (`idFromName`), when the runtime carries it. */
    readonly name?: string | undefined;
    /** The id as a hex string. */
    toString(): string;
  };
  /** The object's durable storage. */
  readonly storage: {
    /** The value stored under `key`, or undefined. */
    get<T = unknown>(key: string): Promise<T | undefined>;
    /** Stores `value` under `key`. */
    put<T>(key: string, value: T): Promise<void>;
  };
}

declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    /** The object's state: its id and storage. */
    protected ctx: DurableObjectState;
    /** The Worker's environment: its bindings, variables and secrets. */
    protected env: Env;
    constructor(ctx: DurableObjectState, env: Env);
  }
}
