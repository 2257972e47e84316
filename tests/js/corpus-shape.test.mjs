// The shape of every transcript in tests/fixtures/llm: a source, `data` that parses (unless the
// transcript says it is malformed), a well-formed `expect`, and Anthropic event names that match
// their data. Run: node --test tests/js/corpus-shape.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { corpus } from '../fixtures/llm/index.mjs';

const EXPECT = {
  progress: ['output', 'thinking', 'none'],
  ending: ['complete', 'truncated', 'declined', 'failed', 'none'],
  error: ['before', 'after', 'none'],
};

const parse = (data) => {
  try {
    return { ok: true, value: JSON.parse(data) };
  } catch {
    return { ok: false };
  }
};

for (const [api, transcripts] of Object.entries(corpus)) {
  for (const [name, t] of Object.entries(transcripts)) {
    test(`${api}: ${name} is well-formed`, () => {
      assert.equal(typeof t.source, 'string', 'source is a string');
      assert.ok(t.source.trim().length > 0, 'source is not empty');
      assert.ok(Number.isInteger(t.status), 'status is a number');
      assert.ok(t.events || 'body' in t, 'a stream (events) or a JSON answer (body)');

      if (t.expect !== undefined) {
        assert.ok(t.events, 'expect is for stream transcripts');
        assert.deepEqual(Object.keys(t.expect).sort(), ['ending', 'error', 'malformed', 'progress']);
        for (const [key, values] of Object.entries(EXPECT)) assert.ok(values.includes(t.expect[key]), `expect.${key} is one of ${values.join(', ')}: ${t.expect[key]}`);
        assert.equal(typeof t.expect.malformed, 'boolean', 'expect.malformed is a boolean');
      }
      if (t.cut !== undefined) assert.equal(typeof t.cut, 'boolean', 'cut is a boolean');
      if (!t.events) return;

      const malformed = t.expect?.malformed === true;
      let unparsed = 0;
      t.events.forEach((e, i) => {
        const at = `event ${i}`;
        if ('delayMs' in e) return assert.ok(Number.isFinite(e.delayMs) && e.delayMs >= 0, `${at}: delayMs is a duration`);
        if ('comment' in e) return assert.equal(typeof e.comment, 'string', `${at}: comment is a string`);
        assert.equal(typeof e.data, 'string', `${at}: data is a string`);
        if (e.event !== undefined) assert.equal(typeof e.event, 'string', `${at}: event is a string`);
        if (e.data === '[DONE]') return;
        const parsed = parse(e.data);
        if (!parsed.ok) {
          unparsed++;
          return assert.ok(malformed, `${at}: data is JSON (or the transcript says expect.malformed): ${e.data.slice(0, 80)}`);
        }
        if (api === 'anthropic') assert.equal(e.event, parsed.value.type, `${at}: the event line names the data's type`);
      });
      if (malformed) assert.ok(unparsed > 0, 'expect.malformed, so some data is not JSON');
    });
  }
}
