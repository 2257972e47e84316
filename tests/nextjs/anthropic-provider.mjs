// A fake Anthropic Messages API on 127.0.0.1 for the e2e suites of the example's chat pages:
// server-sent events in Anthropic's format, two models, each with cues of its own.
import http from 'node:http';
import { anthropic } from '../../js/src/cli/formats.mjs';

export const PRIMARY = 'claude-sonnet-4-5';
export const BACKUP = 'claude-haiku-4-5';

// The answers' shapes are those of `breakwater fake-llm` (js/src/cli/formats.mjs): a stream of the
// model's own (3 tokens in, 5 out, whatever the deltas), and an overloaded_error for any error status.
const frames = (model) => anthropic.stream({ id: 'msg_test', model, inputTokens: 3, outputTokens: 5 });
const OVERLOADED = anthropic.error(529);

/**
 * A fake Anthropic Messages API. Each model takes its own cues, one per request:
 * `{ status }` answers that error status; `{ deltas, cutAfter, pauseAfter, resume }` streams the
 * deltas (default: "Hello from <model>."), closing the socket after `cutAfter` of them or waiting
 * for the promise `resume` after `pauseAfter`. Every request is recorded as { model, prompt }.
 */
export async function startProvider() {
  const cues = new Map();
  const requests = [];
  const sockets = new Set();
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const { model, messages } = JSON.parse(body);
    const content = messages?.[0]?.content;
    const prompt = typeof content === 'string' ? content : content?.map((p) => p.text ?? '').join('');
    requests.push({ model, prompt });
    const cue = cues.get(model)?.shift() ?? {};
    if (cue.status) {
      res.writeHead(cue.status, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(OVERLOADED));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const events = frames(model);
    res.write(events.head());
    const deltas = cue.deltas ?? ['Hello ', 'from ', model, '.'];
    for (let i = 0; i < deltas.length; i++) {
      if (cue.cutAfter === i) return res.write('', () => res.destroy());
      if (cue.pauseAfter === i) await cue.resume;
      res.write(events.delta(deltas[i]));
      await new Promise((r) => setTimeout(r, 5)); // each delta its own read
    }
    res.end(events.tail());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    cue(model, ...items) {
      cues.set(model, [...(cues.get(model) ?? []), ...items]);
    },
    /** How many requests each model received for `prompt`. */
    countsFor(prompt) {
      const of = (model) => requests.filter((r) => r.prompt === prompt && r.model === model).length;
      return { [PRIMARY]: of(PRIMARY), [BACKUP]: of(BACKUP) };
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

