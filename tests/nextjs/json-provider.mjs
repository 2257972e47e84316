// A fake LLM provider for the Next.js e2e suites (non-streaming Messages API), on 127.0.0.1, and
// the example app started in front of it.
import http from 'node:http';
import { anthropic } from '../../js/src/cli/formats.mjs';
import { nextStart } from './next-start.mjs';

/** The model a request asks for (the answer names it), if its body says. */
function modelOf(body) {
  try {
    return JSON.parse(body).model ?? 'claude-fake';
  } catch {
    return 'claude-fake';
  }
}

/** A provider that is up or down (answering `status`), optionally slow, and counts calls. */
export function startProvider() {
  const state = { status: 200, delayMs: 0, calls: 0 };
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    state.calls += 1;
    if (state.delayMs) await new Promise((r) => setTimeout(r, state.delayMs));
    if (state.status === 200) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(anthropic.message({ id: 'msg_test', model: modelOf(body), text: 'hello from the provider', inputTokens: 3 })));
    } else {
      res.writeHead(state.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(anthropic.error(529)));
    }
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ state, url: `http://127.0.0.1:${server.address().port}`, server })),
  );
}

/**
 * The provider and the example app in front of it (`nextStart`), with the breaker and retry
 * settings the single-instance suites use: 3 failures open it for `resetMs`, 2 attempts per call.
 */
export async function startAppWithProvider(resetMs) {
  const provider = await startProvider();
  const server = await nextStart({
    PROVIDER_URL: provider.url,
    BREAKER_FAILURE_THRESHOLD: '3',
    BREAKER_RESET_MS: String(resetMs),
    RETRY_MAX_ATTEMPTS: '2',
    RETRY_BASE_DELAY_MS: '20',
  });
  return {
    provider,
    server,
    async stop() {
      await server.stop();
      await new Promise((r) => provider.server.close(r));
    },
  };
}
