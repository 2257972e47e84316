#!/usr/bin/env node
// The package's command, `breakwater` (package.json's `bin`; js/build.mjs bundles this into
// dist/cli.mjs, apart from every entry the `exports` map names):
//   breakwater try        a breaker opening and recovering against the fake, in about 20 s
//   breakwater fake-llm   a fake LLM provider on 127.0.0.1 for your own code
// Usage errors exit with code 2, after the message (which names the flag and its value) and the
// usage text; other failures with 1.
import { isIP } from 'node:net';
import { DEFAULT_PORT, MODES, MODE_NAMES, UsageError, baseUrls, checkMode, parseDuration, parseOutage, startFakeLlm } from './fake-llm.mjs';

const MODE_LIST = [...MODES]
  .map(([mode, what]) => `  ${mode.padEnd(18)} ${what}`)
  .join('\n');
const USAGE = `Usage: breakwater <command> [options]

Commands:
  try        watch a circuit breaker open and recover, against a fake LLM provider (about 20 s)
  fake-llm   run a fake LLM provider (Anthropic Messages, OpenAI Chat Completions) for your code

breakwater fake-llm [options]
  --port N          the port to listen on (default ${DEFAULT_PORT}; 0 picks a free one)
  --host ADDRESS    the IP address to listen on (default 127.0.0.1: this machine only)
  --mode MODE       how it answers (default ok); see the modes below
  --outage SPEC     change the mode on a schedule: 10s (529 for 10 s, then ok) or steps such as
                    ok:5s,529:20s,ok (durations: 500ms, 10s, 2m; the last mode stays)
  --delay MS        slow-first-token's wait before the first word (default 3000; or 2s...)

Modes:
${MODE_LIST}

Base URLs (the fake answers /v1/messages and /v1/chat/completions, and both without /v1):
${baseUrls(`http://127.0.0.1:${DEFAULT_PORT}`)
  .map(({ sdk, variable, note }) => `  ${sdk.padEnd(18)} ${variable}${note ? `  (${note})` : ''}`)
  .join('\n')}

While it runs (POST /_fake/mode ends any --outage schedule):
  curl http://127.0.0.1:${DEFAULT_PORT}/_fake                                    the mode, requests served
  curl -X POST http://127.0.0.1:${DEFAULT_PORT}/_fake/mode -d '{"mode":"529"}'   change the mode
`;

/** The flags of fake-llm: each one's parser, and its value when not given. */
const FLAGS = {
  '--port': (v) => {
    if (!/^\d+$/.test(v) || Number(v) > 65535) throw new UsageError(`invalid --port ${JSON.stringify(v)}: expected an integer from 0 to 65535`);
    return Number(v);
  },
  '--host': (v) => {
    if (!isIP(v) && v !== 'localhost') {
      throw new UsageError(`invalid --host ${JSON.stringify(v)}: expected an IP address such as 127.0.0.1 (0.0.0.0: every interface), or localhost`);
    }
    return v;
  },
  '--mode': (v) => checkMode(v, '--mode'),
  '--outage': (v) => parseOutage(v),
  '--delay': (v) => parseDuration(v, '--delay', { bare: 'ms' }),
};

/** `--flag value` and `--flag=value` pairs, each flag once, parsed by `flags`. */
function parseFlags(args, flags) {
  const out = {};
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].startsWith('--') ? args[i].split(/=(.*)/s) : [args[i]];
    if (!Object.hasOwn(flags, flag)) {
      const known = Object.keys(flags);
      throw new UsageError(`unknown ${flag.startsWith('-') ? 'option' : 'argument'} ${JSON.stringify(args[i])}${known.length ? ` (options: ${known.join(', ')})` : ''}`);
    }
    const value = inline ?? args[++i];
    if (value === undefined || (inline === undefined && value.startsWith('--'))) throw new UsageError(`${flag} needs a value`);
    if (Object.hasOwn(out, flag)) throw new UsageError(`${flag} given twice`);
    out[flag] = flags[flag](value);
  }
  return out;
}

const time = (d) => d.toTimeString().slice(0, 8) + `.${String(d.getMilliseconds()).padStart(3, '0')}`;

/** Stops the server on SIGINT or SIGTERM, then exits (a second signal exits at once). */
function stopOnSignal(close) {
  const stop = async (signal) => {
    process.off('SIGINT', stop).off('SIGTERM', stop).once('SIGINT', () => process.exit(130)).once('SIGTERM', () => process.exit(143));
    console.log(`\n${signal}: stopping the fake LLM`);
    await close();
    process.exit(0);
  };
  process.once('SIGINT', stop).once('SIGTERM', stop);
}

async function fakeLlm(args) {
  const flags = parseFlags(args, FLAGS);
  if (flags['--mode'] !== undefined && flags['--outage'] !== undefined) {
    throw new UsageError(`--mode ${flags['--mode']} and --outage cannot go together: --outage sets the modes (e.g. --outage ${flags['--mode']}:10s,ok)`);
  }
  const fake = await startFakeLlm({
    port: flags['--port'] ?? DEFAULT_PORT,
    host: flags['--host'] ?? '127.0.0.1',
    mode: flags['--mode'] ?? 'ok',
    delayMs: flags['--delay'] ?? 3000,
    onRequest: ({ at, method, path, mode, status, note }) =>
      console.log(`${time(at)}  ${method} ${path}  mode ${mode}  ${status ?? '---'}${note ? `  (${note})` : ''}`),
    onModeChange: ({ mode, by }) => console.log(`${time(new Date())}  mode -> ${mode} (${by})`),
  }).catch((error) => {
    if (error.code === 'EADDRINUSE') error.message = `port ${error.port} is in use: stop what uses it, or choose another with --port`;
    else if (error.code === 'EADDRNOTAVAIL') error.message = `cannot listen on --host ${error.address}: not an address of this machine`;
    throw error;
  });
  const { url } = fake;
  const schedule = flags['--outage'];
  const sdks = baseUrls(url)
    .map(({ sdk, variable, option, note }) => `    ${sdk.padEnd(18)} ${variable}  or  ${option}${note ? `\n${' '.repeat(23)}${note}` : ''}`)
    .join('\n');
  console.log(`breakwater fake-llm: a fake LLM provider on ${url}, ${schedule ? 'modes on the --outage schedule' : `mode ${fake.state().mode}`}
  Point each SDK at it (every key is accepted; the fake answers each path with or without /v1):
${sdks}
  change the mode: curl -X POST ${url}/_fake/mode -d '{"mode":"529"}'   (modes: ${MODE_NAMES.join(', ')})
  see the mode and the requests served: curl ${url}/_fake
  Ctrl-C stops it.`);
  if (['0.0.0.0', '::'].includes(flags['--host'])) console.log(`  --host ${flags['--host']}: it listens on every interface; whoever reaches this machine can call it.`);
  if (schedule) fake.schedule(schedule);
  stopOnSignal(fake.close);
}

/**
 * `breakwater try`: the fake on a free port, healthy for 3 s, overloaded (529) for 8 s, then
 * healthy; and, against it, the quick start's script (./quickstart.mjs, the code
 * docs/quickstart.md shows), run in this process for 18 s.
 */
const TRY_SCHEDULE = 'ok:3s,529:8s,ok';
const TRY_SECONDS = 18;

async function tryIt(args) {
  parseFlags(args, {});
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
  const fake = await startFakeLlm({
    port: 0,
    onModeChange: ({ mode }) =>
      console.log(`[fake LLM at ${elapsed()}] ${mode === 'ok' ? 'healthy: answers every call' : 'overloaded: answers 529 overloaded_error'}`),
  });
  stopOnSignal(fake.close);
  console.log(`breakwater try: the quick start's script (quickstart.mjs) calls a fake LLM at ${fake.url}
10 times a second for ${TRY_SECONDS} s, through a CircuitBreaker. The fake is healthy, then overloaded
for 8 s, then healthy again. Watch the breaker open, refuse calls fast, probe, and close by itself.
`);
  fake.schedule(parseOutage(TRY_SCHEDULE));
  process.env.FAKE_LLM_URL = fake.url;
  process.env.RUN_SECONDS = String(TRY_SECONDS);
  try {
    // A path computed at run time: the bundler leaves the script a file of its own (dist/quickstart.mjs).
    await import(new URL('./quickstart.mjs', import.meta.url).href);
  } finally {
    await fake.close();
  }
  const { requests, served } = fake.state();
  console.log(`
The fake LLM received ${requests} requests: ${served.ok} answered, ${served['529']} overloaded (529).
Every other call was refused fast by the open breaker, without a request.
Next: docs/quickstart.md (https://github.com/breakwater-llm/breakwater/blob/main/docs/quickstart.md),
and \`npx breakwater fake-llm\` to try your own code against a fake provider.`);
}

const COMMANDS = { try: tryIt, 'fake-llm': fakeLlm };

async function main([command, ...args]) {
  if (command === undefined || command === '--help' || command === '-h' || args.includes('--help') || args.includes('-h')) {
    (command === undefined ? process.stderr : process.stdout).write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (!Object.hasOwn(COMMANDS, command)) throw new UsageError(`unknown command ${JSON.stringify(command)} (commands: ${Object.keys(COMMANDS).join(', ')})`);
  await COMMANDS[command](args);
  return undefined;
}

main(process.argv.slice(2)).then(
  (code) => code !== undefined && process.exit(code),
  (error) => {
    const usage = error instanceof UsageError;
    const command = Object.hasOwn(COMMANDS, process.argv[2] ?? '') ? ` ${process.argv[2]}` : '';
    // A system error (a port in use...) by its message; anything else, a bug, with its stack.
    const text = usage || error?.code ? error.message : (error?.stack ?? String(error));
    process.stderr.write(`breakwater${command}: ${text}\n${usage ? `\n${USAGE}` : ''}`);
    process.exit(usage ? 2 : 1);
  },
);
