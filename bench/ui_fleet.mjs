// ui_fleet.mjs - the dashboard's Fleet page with 1,000 clusters, measured in the same headless
// chromium the browser test drives (puppeteer-core from tests/e2e/ui, Debian's chromium).
//
//   node bench/ui_fleet.mjs [--clusters 1000] [--churn 2000] [--rounds 3] [--flotilla build/flotilla] [--keep]
//
// It starts `flotilla server` (fresh data directory, loopback port, HTTPS, the admin token),
// creates the Clusters directly through the API (Pull mode, so no member is probed; a Ready
// condition and a resource summary in their status; ten regions), then opens /ui/#/fleet signed
// in and reports, from the page's Performance API:
//   - first paint and first contentful paint;
//   - interactive: when the last tile is in the DOM and the page answers input (the main thread
//     is idle: a timer set then fires on time);
//   - baseline in the same run: the page fetching and parsing the same list with fetch(), no
//     rendering, and the ratio;
//   - live update: a Cluster's taint added through the API until its tile shows it (median,
//     P99 of 20);
//   - churn: --rounds rounds of --churn status updates spread over the clusters, the JS heap
//     after a forced GC before and after each round, and the bytes the watches delivered per
//     event.
// Targets (issue 43): interactive ≤ 1 s; heap growth from the first round of churn to the
// last ≤ 10%.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const require = createRequire(path.join(root, 'tests/e2e/ui/package.json'));
const puppeteer = (await import(require.resolve('puppeteer-core'))).default;

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const N = Number(opt('clusters', '1000'));
const CHURN = Number(opt('churn', '2000'));
const ROUNDS = Number(opt('rounds', '3'));
const BIN = path.resolve(opt('flotilla', path.join(root, 'build/flotilla')));
const KEEP = args.includes('--keep');
const CHROMIUM = process.env.FLOTILLA_CHROMIUM || '/usr/bin/chromium';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let server = null; // the server's process, stopped on the way out whatever happens
function problem(msg, dir) {
  console.log(`SERVER PROBLEM: ${msg}`);
  try { console.log(fs.readFileSync(path.join(dir, 'server.log'), 'utf8').slice(-3000)); } catch { /* none */ }
  if (server && server.exitCode === null) server.kill('SIGKILL');
  process.exit(1);
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

function call(ctx, method, p, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? null : JSON.stringify(body);
    const req = https.request({ host: '127.0.0.1', port: ctx.port, path: p, method, ca: ctx.ca, agent: ctx.agent,
      headers: { Authorization: `Bearer ${ctx.token}`, 'Content-Type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
        ...(data ? { 'Content-Length': Buffer.byteLength(data) } : {}) } }, (res) => {
      let b = '';
      res.on('data', (d) => { b += d; });
      res.on('end', () => resolve({ code: res.statusCode, body: b }));
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

async function startServer() {
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'flotilla-ui-bench-'));
  const port = await freePort();
  const log = fs.openSync(path.join(dir, 'server.log'), 'a');
  const proc = spawn(BIN, ['server', '--data-dir', dir, '--listen', `127.0.0.1:${port}`], { stdio: ['ignore', log, log] });
  server = proc;
  for (let i = 0; i < 400; i++) {
    if (fs.existsSync(path.join(dir, 'pki/admin.token')) && fs.existsSync(path.join(dir, 'kubeconfig'))) {
      const ctx = { dir, port, proc, ca: fs.readFileSync(path.join(dir, 'pki/ca.crt')),
        token: fs.readFileSync(path.join(dir, 'pki/admin.token'), 'utf8').trim(),
        agent: new https.Agent({ keepAlive: true, maxSockets: 16 }) };
      try {
        if ((await call(ctx, 'GET', '/readyz')).code === 200) return ctx;
      } catch { /* not yet */ }
    }
    if (proc.exitCode !== null) problem(`server exited ${proc.exitCode}`, dir);
    await sleep(50);
  }
  problem('server not ready in 20 s', dir);
}

const CLUSTERS = '/apis/cluster.karmada.io/v1alpha1/clusters';
const name = (i) => `cluster-${String(i).padStart(4, '0')}`;

async function pool(n, conc, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: conc }, async () => {
    while (next < n) await fn(next++);
  }));
}

function status(i, used) {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return { conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: 'cluster is healthy and ready to accept workloads', lastTransitionTime: now }],
    kubernetesVersion: 'v1.32.0', nodeSummary: { totalNum: 3, readyNum: 3 },
    resourceSummary: { allocatable: { cpu: '24', memory: '96Gi', pods: '330' },
      allocated: { cpu: `${used % 24}`, memory: `${(used * 3) % 96}Gi`, pods: `${(used * 7) % 330}` } } };
}

async function createClusters(ctx) {
  const t0 = Date.now();
  await pool(N, 16, async (i) => {
    const c = { apiVersion: 'cluster.karmada.io/v1alpha1', kind: 'Cluster',
      metadata: { name: name(i), labels: { 'topology.kubernetes.io/region': `region-${i % 10}`, team: `team-${i % 7}` } },
      spec: { syncMode: 'Pull', region: `region-${i % 10}`, zone: `zone-${i % 30}` } };
    const r = await call(ctx, 'POST', CLUSTERS, c);
    if (r.code !== 201) problem(`create ${name(i)}: ${r.code} ${r.body}`, ctx.dir);
    const s = await call(ctx, 'PATCH', `${CLUSTERS}/${name(i)}/status`, { status: status(i, i) });
    if (s.code !== 200) problem(`status ${name(i)}: ${s.code} ${s.body}`, ctx.dir);
  });
  return Date.now() - t0;
}

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };

async function main() {
  const ctx = await startServer();
  const createMs = await createClusters(ctx);
  console.log(`clusters: ${N} created (with status) in ${createMs} ms`);
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, acceptInsecureCerts: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--js-flags=--expose-gc'] });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1440, height: 900 });
    const base = `https://127.0.0.1:${ctx.port}`;
    const cdp = await page.createCDPSession();
    await cdp.send('Network.enable');
    let watchBytes = 0;
    const watchIds = new Set();
    cdp.on('Network.requestWillBeSent', (e) => { if (e.request.url.includes('watch=1')) watchIds.add(e.requestId); });
    cdp.on('Network.dataReceived', (e) => { if (watchIds.has(e.requestId)) watchBytes += e.dataLength; });
    await page.evaluateOnNewDocument((token, n) => {
      sessionStorage.setItem('flotilla.token', token);
      // when the n-th tile is in the DOM, then when a timer set at that moment fires
      window.longTasks = [];
      window.renders = [];
      new PerformanceObserver((l) => { for (const e of l.getEntries()) window.longTasks.push(e.duration); })
        .observe({ type: 'longtask', buffered: true });
      new PerformanceObserver((l) => {
        for (const e of l.getEntries()) if (e.name === 'fleet:render' && !window.interactiveAt) window.renders.push(e.duration);
      }).observe({ type: 'measure' });
      const obs = new MutationObserver(() => {
        const k = document.querySelectorAll('.tile').length;
        if (!window.firstTilesAt && k >= Math.min(n, 100)) window.firstTilesAt = performance.now();
        if (window.tilesAt || k < n) return;
        window.tilesAt = performance.now();
        setTimeout(() => { window.interactiveAt = performance.now(); }, 0);
        obs.disconnect();
      });
      document.addEventListener('DOMContentLoaded', () => obs.observe(document.getElementById('main'), { childList: true, subtree: true }));
    }, ctx.token, N);
    await page.goto(`${base}/ui/#/fleet`, { waitUntil: 'load' });
    await page.waitForFunction(() => window.interactiveAt, { timeout: 60000, polling: 50 });
    const t = await page.evaluate(() => {
      const paint = Object.fromEntries(performance.getEntriesByType('paint').map((e) => [e.name, e.startTime]));
      const res = performance.getEntriesByType('resource');
      const list = res.find((e) => e.name.endsWith('/clusters'));
      const renders = window.renders;
      const total = renders.reduce((m, d) => m + d, 0);
      return { first: window.firstTilesAt, longest: Math.max(0, ...window.longTasks), nlong: window.longTasks.length,
        fp: paint['first-paint'], fcp: paint['first-contentful-paint'], tiles: window.tilesAt, interactive: window.interactiveAt,
        domNodes: document.getElementsByTagName('*').length,
        listStart: list ? list.startTime : NaN, listEnd: list ? list.responseEnd : NaN,
        render: Math.max(0, ...renders), renderTotal: total, renders: renders.length,
        lastModule: Math.max(...res.filter((e) => e.name.endsWith('.js')).map((e) => e.responseEnd)) };
    });
    // the baseline: the same list, fetched and parsed by the same page, not rendered
    const baseline = [];
    for (let i = 0; i < 5; i++) {
      baseline.push(await page.evaluate(async (p, token) => {
        const t0 = performance.now();
        const r = await fetch(p, { headers: { Authorization: `Bearer ${token}` }, cache: 'no-store' });
        const l = await r.json();
        if (!l.items.length) throw new Error('empty');
        return performance.now() - t0;
      }, CLUSTERS, ctx.token));
    }
    const baseMed = pct(baseline, 50);
    console.log(`first paint ${t.fp.toFixed(0)} ms, first contentful paint ${t.fcp.toFixed(0)} ms`);
    console.log(`modules loaded by ${t.lastModule.toFixed(0)} ms; the list asked at ${t.listStart.toFixed(0)} ms, answered by ${t.listEnd.toFixed(0)} ms; rendering the tiles: ${t.renders} passes, ${t.renderTotal.toFixed(0)} ms in all, the longest ${t.render.toFixed(0)} ms`);
    console.log(`long tasks (> 50 ms) until then: ${t.nlong}, the longest ${t.longest.toFixed(0)} ms`);
    console.log(`first screenful (100 tiles) in the DOM at ${t.first.toFixed(0)} ms`);
    console.log(`all ${N} tiles in the DOM at ${t.tiles.toFixed(0)} ms, interactive at ${t.interactive.toFixed(0)} ms (${t.domNodes} elements)`);
    console.log(`baseline: fetch + parse of the same list in the page, median of 5: ${baseMed.toFixed(0)} ms; interactive ÷ baseline: ${(t.interactive / baseMed).toFixed(1)}×`);
    console.log(`target interactive ≤ 1000 ms: ${t.interactive <= 1000 ? 'met' : 'NOT met'}`);

    // live update: a taint from the API until the tile shows it
    const lat = [];
    for (let i = 0; i < 20; i++) {
      const n = name((i * 37) % N);
      await page.evaluate((c) => {
        window.seenAt = 0;
        const check = () => {
          const el = document.querySelector(`.tile[data-cluster="${c}"] .chip.taint`);
          if (el) window.seenAt = performance.now(); else requestAnimationFrame(check);
        };
        requestAnimationFrame(check);
      }, n);
      const sent = await page.evaluate(() => performance.now() + performance.timeOrigin);
      const r = await call(ctx, 'PATCH', `${CLUSTERS}/${n}`, { spec: { taints: [{ key: 'bench/taint', effect: 'NoSchedule' }] } });
      if (r.code !== 200) problem(`patch ${n}: ${r.code} ${r.body}`, ctx.dir);
      await page.waitForFunction(() => window.seenAt, { timeout: 10000, polling: 'raf' });
      const seen = await page.evaluate(() => window.seenAt + performance.timeOrigin);
      lat.push(seen - sent);
    }
    console.log(`live update (taint via API → tile shows it), 20 of them: median ${pct(lat, 50).toFixed(0)} ms, P99 ${pct(lat, 99).toFixed(0)} ms`);

    // churn: status updates, heap before and after (after a GC), bytes per event
    const heap = async () => {
      await cdp.send('HeapProfiler.collectGarbage');
      return (await page.metrics()).JSHeapUsedSize;
    };
    // --rounds rounds of --churn updates: the heap after each; the target compares the last
    // round with the first (after warm-up: code and caches the first events bring are not a leak)
    const h0 = await heap();
    const heaps = [];
    let bytes = 0, ms = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const bytes0 = watchBytes;
      const tc = Date.now();
      await pool(CHURN, 8, async (k) => {
        const i = (k * 13) % N;
        const r = await call(ctx, 'PATCH', `${CLUSTERS}/${name(i)}/status`, { status: { resourceSummary: status(i, k + round * CHURN).resourceSummary } });
        if (r.code !== 200) problem(`status patch ${name(i)}: ${r.code} ${r.body}`, ctx.dir);
      });
      ms += Date.now() - tc;
      await sleep(1500); // the last events reach the page
      bytes += watchBytes - bytes0;
      heaps.push(await heap());
    }
    const mib = (x) => (x / 1048576).toFixed(2);
    const total = CHURN * ROUNDS;
    console.log(`churn: ${ROUNDS} rounds of ${CHURN} status updates (${((total * 1000) / ms).toFixed(0)}/s); JS heap after a GC: ${mib(h0)} MiB before, then ${heaps.map(mib).join(', ')} MiB`);
    const steady = (heaps[heaps.length - 1] - heaps[0]) / heaps[0];
    console.log(`heap growth from the first round to the last: ${(steady * 100).toFixed(1)}% (from before the churn: ${(((heaps[heaps.length - 1] - h0) / h0) * 100).toFixed(1)}%)`);
    console.log(`watch bytes per event (as chromium received them, TLS off, chunk framing on): ${(bytes / total).toFixed(0)}`);
    console.log(`target heap growth ≤ 10% (first round to last): ${steady <= 0.1 ? 'met' : 'NOT met'}`);
  } finally {
    await browser.close();
    ctx.proc.kill('SIGTERM');
    await new Promise((r) => ctx.proc.on('exit', r));
    if (!KEEP) fs.rmSync(ctx.dir, { recursive: true, force: true });
    else console.log(`kept ${ctx.dir}`);
  }
}

main().catch((e) => {
  console.error(e);
  if (server && server.exitCode === null) server.kill('SIGKILL');
  process.exit(1);
});
