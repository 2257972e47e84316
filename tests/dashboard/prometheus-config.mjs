// The Prometheus config of the dashboard's test: dashboards/README.md's ```yaml block (the scrape
// config it tells users to run), as written but for four lines, each of which must be there:
// the demo's ADMIN_TOKEN (read from demo/live.mjs) for `<ADMIN_TOKEN>`, `scheme: http` (the demo
// serves plain HTTP on 127.0.0.1), a 1 s scrape interval, and the demo's Worker as a file_sd
// target (written by demo/live.mjs under DEMO_PROMETHEUS_TARGETS once it listens).
//
// Usage: node tests/dashboard/prometheus-config.mjs TARGETS_FILE > prometheus.yml
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '../..');
export const README = path.join(ROOT, 'dashboards/README.md');
export const DASHBOARD = path.join(ROOT, 'dashboards/breakwater.json');
/** The test's scrape interval, in seconds. */
export const SCRAPE_INTERVAL_S = 1;

/** The README's one ```yaml block. */
export function readmeScrapeConfig() {
  const text = fs.readFileSync(README, 'utf8');
  const blocks = [...text.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  if (blocks.length !== 1) throw new Error(`${README}: ${blocks.length} \`\`\`yaml blocks, expected the one scrape config`);
  return blocks[0];
}

/** The demo's ADMIN_TOKEN, from demo/live.mjs. */
export function demoAdminToken() {
  const live = fs.readFileSync(path.join(ROOT, 'demo/live.mjs'), 'utf8');
  const m = /^const ADMIN_TOKEN = '([^']+)';$/m.exec(live);
  if (!m) throw new Error('demo/live.mjs: no `const ADMIN_TOKEN = \'...\';` line');
  return m[1];
}

/** The README's scrape config with the test's four lines in place of its own. */
export function testConfig(targetsFile) {
  let yaml = readmeScrapeConfig();
  const swaps = [
    ['the token', /^(\s*)credentials: <ADMIN_TOKEN>$/m, (_, i) => `${i}credentials: ${demoAdminToken()}`],
    ['the scheme', /^(\s*)scheme: https$/m, (_, i) => `${i}scheme: http`],
    ['the scrape interval', /^(\s*)scrape_interval: \S+$/m, (_, i) => `${i}scrape_interval: ${SCRAPE_INTERVAL_S}s`],
    [
      'the static target',
      /^(\s*)static_configs:\n(\s*)- targets: \[[^\]\n]*\]$/m,
      (_, i, j) => `${i}file_sd_configs:\n${j}- files: [${JSON.stringify(targetsFile)}]`,
    ],
  ];
  for (const [what, re, to] of swaps) {
    const hits = yaml.match(new RegExp(re.source, `${re.flags}g`))?.length ?? 0;
    if (hits !== 1) throw new Error(`${README}: the scrape config has ${hits} lines for ${what} (${re}), expected 1`);
    yaml = yaml.replace(re, to);
  }
  return yaml;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const targets = process.argv[2];
  if (!targets) {
    console.error('usage: node tests/dashboard/prometheus-config.mjs TARGETS_FILE');
    process.exit(2);
  }
  process.stdout.write(testConfig(path.resolve(targets)));
}
