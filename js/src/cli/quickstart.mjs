// quickstart.mjs: 10 calls a second to a fake LLM (`npx breakwater fake-llm`) through a circuit breaker.
import { CircuitBreaker, isCircuitOpenError } from 'breakwater';

const url = `${process.env.FAKE_LLM_URL ?? 'http://127.0.0.1:8788'}/v1/messages`;
const seconds = Number(process.env.RUN_SECONDS ?? 120);

// Opens after 5 failures in a row; 3 s later lets a call through (a probe); 2 good probes close it.
const breaker = new CircuitBreaker('fake-llm', { failureThreshold: 5, resetTimeout: 3_000, halfOpenSuccessThreshold: 2 });
breaker.onStateChange(({ from, to }) => console.log(`breaker: ${from} -> ${to}`));

const ask = () =>
  breaker.execute(
    ({ signal }) =>
      fetch(url, {
        method: 'POST',
        signal: signal ?? null, // aborted when timeoutMs (below) runs out
        headers: { 'content-type': 'application/json', 'x-api-key': 'fake', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'claude-sonnet-4-6', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] }),
      }),
    { timeoutMs: 2_000 },
  );

const calls = { answered: 0, failed: 0, refused: 0 };
let retryAfterMs = 0;
for (let tick = 1; tick <= seconds * 10; tick++) {
  try {
    const response = await ask(); // a 529 comes back as it is, and counts as a failure
    calls[response.ok ? 'answered' : 'failed']++;
    await response.text();
  } catch (error) {
    if (isCircuitOpenError(error)) {
      calls.refused++; // refused at once, nothing sent: the error says when to come back
      retryAfterMs = error.retryAfterMs;
    } else {
      calls.failed++; // a time-out (mode hang), or no fake LLM running
    }
  }
  if (tick % 10 === 0) {
    const wait = breaker.state === 'OPEN' ? `, retry after ${retryAfterMs} ms` : '';
    console.log(`${tick / 10}s ${breaker.state}: ${calls.answered + calls.failed} sent (${calls.failed} failed), ${calls.refused} refused fast${wait}`);
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
}
