// dashboards/breakwater.json against what a real Prometheus scraped from the live demo's shared
// Worker (run by scripts/test-dashboard.sh, which sets PROMETHEUS_URL and the demo's span,
// RANGE_START_MS and RANGE_END_MS). Every target of every panel is evaluated with
// /api/v1/query_range over the span, Grafana's variables put in as Grafana would (`$breaker` as
// its All value; `$__interval` the step, `$__rate_interval` from it and the scrape interval,
// `$__range` the span), and must return a series with a finite value, not zero throughout (an
// outage moves every panel). The state panel must show the breaker open at some point and closed
// at the end: the demo's outage and its recovery.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it, before } from 'node:test';
import { DASHBOARD, README, readmeScrapeConfig, SCRAPE_INTERVAL_S } from './prometheus-config.mjs';

const PROM = process.env.PROMETHEUS_URL;
const START_MS = Number(process.env.RANGE_START_MS);
const END_MS = Number(process.env.RANGE_END_MS);
if (!PROM || !(START_MS > 0) || !(END_MS > START_MS)) {
  throw new Error('run by scripts/test-dashboard.sh: PROMETHEUS_URL, RANGE_START_MS and RANGE_END_MS are needed');
}

const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8'));
const panels = dashboard.panels ?? [];
const variables = Object.fromEntries((dashboard.templating?.list ?? []).map((v) => [v.name, v]));

// Grafana's interval variables for a range query at this step: `$__rate_interval` is
// max(`$__interval` + scrape interval, 4 × scrape interval); `$__range` the whole time range.
const STEP_S = 1;
const SPAN_S = Math.ceil((END_MS - START_MS) / 1000);
const INTERVALS = {
  __interval: `${STEP_S}s`,
  __rate_interval: `${Math.max(STEP_S + SCRAPE_INTERVAL_S, 4 * SCRAPE_INTERVAL_S)}s`,
  __range: `${SPAN_S}s`,
};

/** `expr` with the dashboard's variables in it as Grafana puts them for All (and the data source's). */
function substitute(expr) {
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)/g, (whole, a, b, c) => {
    const name = a ?? b ?? c;
    if (name in INTERVALS) return INTERVALS[name];
    const v = variables[name];
    if (!v) throw new Error(`unknown variable ${whole} in ${expr}`);
    if (v.type === 'query' && v.includeAll) {
      if (typeof v.allValue !== 'string' || !v.allValue) throw new Error(`variable ${name} has no allValue (Grafana would list the values)`);
      return v.allValue;
    }
    throw new Error(`variable ${whole} in ${expr}: not a query variable with All`);
  });
}

async function api(route, params) {
  const url = `${PROM}${route}?${new URLSearchParams(params)}`;
  const resp = await fetch(url);
  const body = await resp.json().catch(() => null);
  if (!resp.ok || body?.status !== 'success') {
    throw new Error(`${route} ${JSON.stringify(params)}: HTTP ${resp.status} ${body?.errorType ?? ''} ${body?.error ?? ''}`);
  }
  return body.data;
}

const range = () => ({ start: (START_MS / 1000).toFixed(3), end: (END_MS / 1000).toFixed(3), step: String(STEP_S) });

async function queryRange(expr) {
  const data = await api('/api/v1/query_range', { query: expr, ...range() });
  assert.equal(data.resultType, 'matrix', `${expr}: result type ${data.resultType}`);
  return data.result;
}

const finite = (values) => values.map(([t, v]) => [t, Number(v)]).filter(([, v]) => Number.isFinite(v));
const labels = (metric) =>
  `{${Object.entries(metric)
    .filter(([k]) => !['job', 'instance', 'demo', 'strategy'].includes(k))
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}}`;

describe('dashboards/breakwater.json', () => {
  it('is a Grafana dashboard with a Prometheus data source variable and a breaker variable (multi, All)', () => {
    assert.ok(dashboard.schemaVersion >= 36, `schemaVersion ${dashboard.schemaVersion}`);
    const ds = variables.datasource;
    assert.equal(ds?.type, 'datasource', 'a `datasource` variable of type datasource');
    assert.equal(ds.query, 'prometheus');
    const b = variables.breaker;
    assert.equal(b?.type, 'query');
    assert.equal(b.definition, 'label_values(breakwater_state, breaker)');
    assert.equal(b.query?.query ?? b.query, 'label_values(breakwater_state, breaker)');
    assert.ok(b.multi && b.includeAll, 'breaker: multi and include All');
    assert.ok(panels.length > 0, 'no panels');
    for (const p of panels) {
      assert.equal(p.datasource?.uid, '${datasource}', `panel "${p.title}": data source ${JSON.stringify(p.datasource)}`);
      assert.ok(p.targets?.length > 0, `panel "${p.title}" has no targets`);
      for (const t of p.targets) {
        assert.ok(t.expr, `panel "${p.title}" target ${t.refId}: no expr`);
        assert.equal(t.datasource?.uid ?? '${datasource}', '${datasource}', `panel "${p.title}" target ${t.refId}: data source`);
      }
    }
    assert.ok(panels.some((p) => p.type === 'state-timeline'), 'no state-timeline panel');
  });

  it("names every panel in dashboards/README.md's table, and no other", () => {
    const readme = fs.readFileSync(README, 'utf8');
    const listed = [...readme.matchAll(/^\| \*\*([^*]+)\*\* \|/gm)].map((m) => m[1]);
    assert.deepEqual(listed, panels.map((p) => p.title), "the README's panel table and the dashboard's panels differ");
  });
});

describe("js/README.md's alert rules", () => {
  // The ```yaml block of its Metrics section: a list of rules, as a user pastes them into a group.
  const jsReadme = fs.readFileSync(new URL('../../js/README.md', import.meta.url), 'utf8');
  const block = /^```yaml\n(- alert:[\s\S]*?)^```/m.exec(jsReadme)?.[1];

  it('load in Prometheus as written (promtool check rules)', () => {
    assert.ok(block, 'js/README.md has a ```yaml block of alert rules');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'breakwater-rules-'));
    try {
      const indented = block.replace(/^(?=.)/gm, '      ');
      const file = path.join(dir, 'rules.yml');
      fs.writeFileSync(file, `groups:\n  - name: breakwater\n    rules:\n${indented}`);
      const out = execFileSync('/usr/bin/promtool', ['check', 'rules', file], { encoding: 'utf8', stdio: 'pipe' });
      assert.match(out, /SUCCESS: \d+ rules found/, out);
    } catch (e) {
      assert.fail(`promtool rejects js/README.md's alert rules: ${e.stderr ?? e.message}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('name only series the package writes', () => {
    const written = new Set(
      ['../../js/src/metrics/prometheus.ts', '../../src/metrics.rs', '../../src/shared/metrics.rs'].flatMap((f) =>
        [...fs.readFileSync(new URL(f, import.meta.url), 'utf8').matchAll(/breakwater_[a-z_]+/g)].map((m) => m[0]),
      ),
    );
    const named = [...block.matchAll(/breakwater_[a-z_]+/g)].map((m) => m[0]);
    assert.ok(named.length > 0);
    // A histogram's series are its name with _bucket, _sum or _count.
    const family = (series) => series.replace(/_(bucket|sum|count)$/, '');
    for (const series of named) assert.ok(written.has(series) || written.has(family(series)), `${series} is not a series the package writes`);
  });
});

describe('Prometheus, scraping the demo with the README scrape config', () => {
  it('accepts the README scrape config as written (promtool check config)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'breakwater-dashboard-'));
    try {
      fs.writeFileSync(path.join(dir, 'prometheus.yml'), readmeScrapeConfig());
      execFileSync('/usr/bin/promtool', ['check', 'config', path.join(dir, 'prometheus.yml')], { stdio: 'pipe' });
    } catch (e) {
      assert.fail(`promtool rejects the README's scrape config: ${e.stderr ?? e.message}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("scraped the demo's Worker at /metrics?format=prometheus with the token", async () => {
    const info = await api('/api/v1/status/buildinfo', {});
    const up = await queryRange('up{job="breakwater"}');
    const ok = up.flatMap((s) => finite(s.values)).filter(([, v]) => v === 1).length;
    if (ok === 0) {
      const { activeTargets } = await api('/api/v1/targets', {});
      assert.fail(`no successful scrape (up == 1) in the demo's span; targets: ${JSON.stringify(activeTargets.map((t) => [t.scrapeUrl, t.health, t.lastError]))}`);
    }
    console.log(`prometheus ${info.version}: ${ok} successful scrapes of the demo's Worker in ${SPAN_S} s; intervals ${JSON.stringify(INTERVALS)}`);
  });

  it('has the breaker variable: label_values(breakwater_state, breaker) lists the demo breaker', async () => {
    const values = await api('/api/v1/label/breaker/values', {
      'match[]': 'breakwater_state',
      start: range().start,
      end: range().end,
    });
    assert.ok(values.length > 0, 'label_values(breakwater_state, breaker) is empty');
    console.log(`breaker variable: ${values.join(', ')}`);
  });
});

for (const p of panels) {
  describe(`panel "${p.title}" (${p.type})`, () => {
    for (const t of p.targets ?? []) {
      it(`${t.refId}: ${t.expr}`, async () => {
        const expr = substitute(t.expr);
        let series;
        try {
          series = await queryRange(expr);
        } catch (e) {
          assert.fail(`panel "${p.title}" target ${t.refId}: ${expr}: ${e.message}`);
        }
        const withData = series.filter((s) => finite(s.values).length > 0);
        // The sample: the largest finite value, where and when it was.
        let peak = null;
        for (const s of withData) {
          for (const [at, v] of finite(s.values)) if (!peak || Math.abs(v) > Math.abs(peak.v)) peak = { s, at, v };
        }
        console.log(
          `panel "${p.title}" ${t.refId}: ${series.length} series (${withData.length} with finite values), ` +
            `sample ${peak ? `${labels(peak.s.metric)} = ${+peak.v.toPrecision(4)} at +${(peak.at - START_MS / 1000).toFixed(0)} s` : 'none'}` +
            `\n    expr: ${expr}`,
        );
        assert.ok(series.length > 0, `panel "${p.title}" target ${t.refId}: no series over the demo's span for ${expr}`);
        assert.ok(withData.length > 0, `panel "${p.title}" target ${t.refId}: ${series.length} series, none with a finite value, for ${expr}`);
        // An outage moves every panel: a query that stays at zero throughout reads the wrong thing.
        assert.ok(peak.v !== 0, `panel "${p.title}" target ${t.refId}: only zeros over the demo's outage for ${expr}`);
      });
    }
  });
}

describe('the outage, as the dashboard shows it', () => {
  const panel = panels.find((p) => p.type === 'state-timeline');
  let series = [];
  const mapped = {};
  before(async () => {
    for (const m of panel?.fieldConfig?.defaults?.mappings ?? []) {
      for (const [value, o] of Object.entries(m.options ?? {})) mapped[o.text] = Number(value);
    }
    if (panel) series = await queryRange(substitute(panel.targets[0].expr));
  });

  it('the state panel shows the breaker open at some point and closed at the end', () => {
    assert.ok(panel, 'no state-timeline panel');
    assert.ok(Number.isFinite(mapped.open) && Number.isFinite(mapped.closed), `the state panel maps no values to open and closed: ${JSON.stringify(mapped)}`);
    assert.ok(series.length > 0, `panel "${panel.title}": no series`);
    for (const s of series) {
      const points = finite(s.values);
      const name = labels(s.metric);
      const open = points.filter(([, v]) => v === mapped.open);
      assert.ok(open.length > 0, `panel "${panel.title}" ${name}: never open (values: ${[...new Set(points.map(([, v]) => v))].join(', ')})`);
      const [lastAt, last] = points.at(-1);
      assert.equal(last, mapped.closed, `panel "${panel.title}" ${name}: ${last} at the end, not closed (${mapped.closed})`);
      const firstOpen = open[0][0] - START_MS / 1000;
      const lastOpen = open.at(-1)[0] - START_MS / 1000;
      console.log(
        `panel "${panel.title}" ${name}: open at ${open.length} of ${points.length} steps of ${STEP_S} s (first at +${firstOpen.toFixed(0)} s, last at +${lastOpen.toFixed(0)} s), closed at the end (+${(lastAt - START_MS / 1000).toFixed(0)} s)`,
      );
    }
  });
});
