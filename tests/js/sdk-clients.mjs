// The official SDK clients (@anthropic-ai/sdk, openai, @google/genai) pointed at one fake
// provider, their own retries off so that the tests count every request; started before a
// suite's tests, reset before each, closed after. One setup for every suite that uses them.
import { before, after, beforeEach } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { GoogleGenAI } from '@google/genai';
import { startFakeProvider } from './fake-provider.mjs';

/** A Messages request and a Chat Completions request (add `stream: true` to stream). */
export const ASK = { model: 'claude-test', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] };
export const CHAT = { model: 'gpt-4.1-nano', messages: [{ role: 'user', content: 'hi' }] };

/**
 * Registers the suite's hooks; `ready` gets `{ provider, anthropic, openai, gemini }` once they
 * are started (in the same hook: node:test does not wait for one root hook before the next).
 */
export function useSdkClients(ready) {
  const c = {};
  before(async () => {
    c.provider = await startFakeProvider();
    c.anthropic = new Anthropic({ apiKey: 'test-key', baseURL: c.provider.url, maxRetries: 0 });
    c.openai = new OpenAI({ apiKey: 'test-key', baseURL: `${c.provider.url}/v1`, maxRetries: 0 });
    c.gemini = new GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: c.provider.url, retryOptions: { attempts: 1 } } });
    ready(c);
  });
  after(() => c.provider.close());
  beforeEach(() => c.provider.reset());
}
