// ui_fleet.mjs - the dashboard's Fleet page with 1,000 clusters and 5,000 applications,
// measured in the same headless chromium the browser test drives (puppeteer-core from
// tests/e2e/ui, Debian's chromium).
//
//   node bench/ui_fleet.mjs [--clusters 1000] [--apps 5000] [--loads 2] [--churn 2000] [--rounds 3]
//                           [--churn-minutes M] [--rate 100] [--trace PREFIX] [--verbose]
//                           [--screenshot PREFIX] [--flotilla build/flotilla] [--keep]
//
// It starts `flotilla server` (fresh data directory, loopback port, HTTPS, the admin token),
// creates the Clusters directly through the API (Pull mode, so no member is probed; a Ready
// condition, the common APIs and a resource summary in their status; ten regions), then opens
// /ui/#/fleet signed in, --loads times, each in a fresh browser context (nothing cached), and
// reports, from the page's Performance API:
//   - first paint and first contentful paint; when the list was answered (the page may ask
//     for it in two requests: the first's answer, then the last's); when the first 100 tiles
//     (a screenful at 1440x900, and some) are in the DOM;
//   - interactive: when the last tile is in the DOM and the page answers input (the main thread
//     is idle: a timer set then fires on time);
//   - baseline in the same run: the page fetching and parsing the same list with fetch(), no
//     rendering, and the ratio;
//   - with --trace PREFIX, chromium's trace of the k-th load in PREFIX-k.json (for
//     chrome://tracing or the DevTools Performance panel; tracing slows the load), and with
//     --screenshot PREFIX the viewport once loaded in PREFIX-k.png (to compare two builds).
// Then it creates --apps applications as a user would have them: Deployments in five
// namespaces, each namespace with ten PropagationPolicies that divide a Deployment's replicas
// over three named clusters (by static weight), so the server holds their ResourceBindings
// and three Works each (Pull clusters have no agent: nothing is delivered, which the page does
// not need), waits until the server is quiet, and opens the page --loads times again: the
// same figures with and without the applications, in the same run. On the last page:
//   - live update: a Cluster's taint added through the API until its tile shows it (median,
//     P99 of 20);
//   - churn: --rounds rounds of --churn status updates spread over the clusters, the JS heap
//     after a forced GC before and after each round, and the bytes the watches delivered per
//     event; or, with --churn-minutes M, M minutes of status updates at --rate a second (100:
//     every one of 1,000 clusters reporting every 10 s, Karmada's default
//     cluster-status-update-frequency), the heap after a forced GC at the end of each minute.
// Targets (issue 43): interactive <= 1 s with the applications; heap growth from the first
// round (or minute) of churn to the last <= 10%.
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
const APPS = Number(opt('apps', '5000'));
const LOADS = Math.max(1, Number(opt('loads', '2')));
const MINUTES = Number(opt('churn-minutes', '0'));
const RATE = Number(opt('rate', '100'));
const TRACE = opt('trace', '');
const VERBOSE = args.includes('--verbose'); // each load's requests and their timings
const SHOT = opt('screenshot', ''); // the viewport after each load: SHOT-<n>.png // a chromium trace of each load: TRACE-<n>.json
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
  // the Clusters are Pull clusters whose agents do not run: without a renewed Lease the
  // server would call them Unknown (and taint them) 30 s after their creation, so the
  // threshold is a day here, as if their agents renewed their Leases
  const proc = spawn(BIN, ['server', '--data-dir', dir, '--listen', `127.0.0.1:${port}`], { stdio: ['ignore', log, log],
    env: { ...process.env, FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS: '86400000' } });
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

// What the scheduler needs to place a Deployment there (its API is enabled), and what a
// member commonly reports besides: the common workload kinds, not every API of a real member.
const API_ENABLEMENTS = [
  ['v1', 'configmaps ConfigMap namespaces Namespace persistentvolumeclaims PersistentVolumeClaim pods Pod secrets Secret services Service serviceaccounts ServiceAccount'],
  ['apps/v1', 'daemonsets DaemonSet deployments Deployment replicasets ReplicaSet statefulsets StatefulSet'],
  ['batch/v1', 'cronjobs CronJob jobs Job'],
  ['autoscaling/v2', 'horizontalpodautoscalers HorizontalPodAutoscaler'],
  ['networking.k8s.io/v1', 'ingresses Ingress networkpolicies NetworkPolicy'],
  ['policy/v1', 'poddisruptionbudgets PodDisruptionBudget'],
].map(([groupVersion, pairs]) => {
  const w = pairs.split(' ');
  return { groupVersion, resources: w.filter((_, i) => i % 2 === 0).map((n, i) => ({ name: n, kind: w[2 * i + 1] })) };
});

function status(i, used) {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return { conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: 'cluster is healthy and ready to accept workloads', lastTransitionTime: now }],
    kubernetesVersion: 'v1.32.0', apiEnablements: API_ENABLEMENTS, nodeSummary: { totalNum: 3, readyNum: 3 },
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

// --apps applications as a user would have them: NS namespaces, each with PER_NS policies
// that divide a Deployment's replicas over SPREAD named clusters by static weight; the i-th
// Deployment goes to namespace i % NS under policy (i / NS) % PER_NS.
const NS = 5, PER_NS = 10, SPREAD = 3;
const APP_POLICIES = (ns) => `/apis/policy.karmada.io/v1alpha1/namespaces/team-${ns}/propagationpolicies`;
const BINDINGS = '/apis/work.karmada.io/v1alpha2/resourcebindings';
const WORKS = '/apis/work.karmada.io/v1alpha1/works';

async function storeRevision(ctx) {
  const r = await call(ctx, 'GET', '/metrics');
  const m = /^flotilla_store_revision (\d+)/m.exec(r.body);
  if (r.code !== 200 || !m) problem(`/metrics: ${r.code}, no flotilla_store_revision`, ctx.dir);
  return Number(m[1]);
}

// Creates the applications, then waits until the store has not moved for 3 s (bindings
// scheduled, Works written); returns what the server holds then.
async function createApps(ctx) {
  const t0 = Date.now();
  for (let ns = 0; ns < NS; ns++) {
    const r = await call(ctx, 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `team-${ns}` } });
    if (r.code !== 201) problem(`create namespace team-${ns}: ${r.code} ${r.body}`, ctx.dir);
    for (let p = 0; p < PER_NS; p++) {
      const g = ns * PER_NS + p;
      const names = Array.from({ length: SPREAD }, (_, j) => name((g * 37 + j * Math.floor(N / SPREAD)) % N));
      const pp = { apiVersion: 'policy.karmada.io/v1alpha1', kind: 'PropagationPolicy', metadata: { name: `group-${p}`, namespace: `team-${ns}` },
        spec: { resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', labelSelector: { matchLabels: { group: `group-${p}` } } }],
          placement: { clusterAffinity: { clusterNames: names },
            replicaScheduling: { replicaSchedulingType: 'Divided', replicaDivisionPreference: 'Weighted',
              weightPreference: { staticWeightList: names.map((c) => ({ targetCluster: { clusterNames: [c] }, weight: 1 })) } } } } };
      const q = await call(ctx, 'POST', APP_POLICIES(ns), pp);
      if (q.code !== 201) problem(`create policy team-${ns}/group-${p}: ${q.code} ${q.body}`, ctx.dir);
    }
  }
  await pool(APPS, 16, async (i) => {
    const ns = i % NS, p = Math.floor(i / NS) % PER_NS, n = `app-${String(i).padStart(5, '0')}`;
    const d = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: n, namespace: `team-${ns}`, labels: { app: n, group: `group-${p}` } },
      spec: { replicas: 3, selector: { matchLabels: { app: n } },
        template: { metadata: { labels: { app: n } }, spec: { containers: [{ name: 'app', image: 'nginx:1.25',
          resources: { requests: { cpu: '100m', memory: '64Mi' } } }] } } } };
    const r = await call(ctx, 'POST', `/apis/apps/v1/namespaces/team-${ns}/deployments`, d);
    if (r.code !== 201) problem(`create deployment team-${ns}/${n}: ${r.code} ${r.body}`, ctx.dir);
  });
  const created = Date.now() - t0;
  let rev = await storeRevision(ctx), still = Date.now();
  while (Date.now() - still < 3000) {
    if (Date.now() - t0 > 600000) problem('the store still moves 10 minutes after the applications were created', ctx.dir);
    await sleep(500);
    const now = await storeRevision(ctx);
    if (now !== rev) { rev = now; still = Date.now(); }
  }
  const quiet = still - t0;
  const rbs = JSON.parse((await call(ctx, 'GET', BINDINGS)).body).items || [];
  const works = JSON.parse((await call(ctx, 'GET', WORKS)).body).items || [];
  const scheduled = rbs.filter((b) => ((b.spec && b.spec.clusters) || []).length > 0).length;
  return { created, quiet, bindings: rbs.length, scheduled, works: works.length };
}

// Opens /ui/#/fleet signed in, in a fresh browser context (no cache, no session), and reads
// the load's figures from the page. The page is left open: the caller closes its context.
async function openFleet(browser, ctx, tracePath) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1440, height: 900 });
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  const net = { watchBytes: 0 };
  const watchIds = new Set();
  cdp.on('Network.requestWillBeSent', (e) => { if (e.request.url.includes('watch=1')) watchIds.add(e.requestId); });
  cdp.on('Network.dataReceived', (e) => { if (watchIds.has(e.requestId)) net.watchBytes += e.dataLength; });
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
  if (tracePath) await page.tracing.start({ path: tracePath, screenshots: false });
  await page.goto(`https://127.0.0.1:${ctx.port}/ui/#/fleet`, { waitUntil: 'load' });
  await page.waitForFunction(() => window.interactiveAt, { timeout: 60000, polling: 50 });
  if (tracePath) await page.tracing.stop();
  const t = await page.evaluate(() => {
    const paint = Object.fromEntries(performance.getEntriesByType('paint').map((e) => [e.name, e.startTime]));
    const res = performance.getEntriesByType('resource');
    // the list: one request, or a first page and the rest (?limit=, ?continue=)
    const lists = res.filter((e) => /\/clusters(\?(limit|continue)=|$)/.test(e.name));
    const renders = window.renders;
    return { first: window.firstTilesAt, longest: Math.max(0, ...window.longTasks), nlong: window.longTasks.length,
      fp: paint['first-paint'], fcp: paint['first-contentful-paint'], tiles: window.tilesAt, interactive: window.interactiveAt,
      domNodes: document.getElementsByTagName('*').length,
      listStart: lists.length ? lists[0].startTime : NaN, listEnd: lists.length ? Math.max(...lists.map((e) => e.responseEnd)) : NaN,
      listFirst: lists.length ? lists[0].responseEnd : NaN, listRequests: lists.length,
      render: Math.max(0, ...renders), renderTotal: renders.reduce((m, d) => m + d, 0), renders: renders.length,
      timings: res.map((e) => [e.name.replace(/^https:\/\/[^/]+/, ''), e.startTime, e.connectStart, e.secureConnectionStart, e.connectEnd,
        e.requestStart, e.responseStart, e.responseEnd, e.transferSize, e.nextHopProtocol]),
      nav: (({ connectStart, secureConnectionStart, connectEnd, requestStart, responseStart, responseEnd, domInteractive, domContentLoadedEventEnd }) =>
        ({ connectStart, secureConnectionStart, connectEnd, requestStart, responseStart, responseEnd, domInteractive, domContentLoadedEventEnd }))(performance.getEntriesByType('navigation')[0]),
      assetBytes: res.filter((e) => e.name.includes('/ui/')).reduce((m, e) => m + e.transferSize, 0),
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
  t.base = pct(baseline, 50);
  return { context, page, cdp, net, t };
}

function report(label, t) {
  if (VERBOSE) {
    console.log(`[${label}] document: ${JSON.stringify(t.nav, (k, v) => (typeof v === 'number' ? Math.round(v) : v))}`);
    console.log(`[${label}] requests (start, connect, tls, connected, request, response, end, bytes, protocol):`);
    for (const r of t.timings) console.log(`[${label}]   ${r.map((v) => (typeof v === 'number' ? Math.round(v) : v)).join(' ')}`);
  }
  console.log(`[${label}] first paint ${t.fp.toFixed(0)} ms, first contentful paint ${t.fcp.toFixed(0)} ms; the page's files: ${t.assetBytes} bytes transferred`);
  console.log(`[${label}] modules loaded by ${t.lastModule.toFixed(0)} ms; the list asked at ${t.listStart.toFixed(0)} ms, answered by ${t.listEnd.toFixed(0)} ms (${t.listRequests} request(s), the first answered by ${t.listFirst.toFixed(0)} ms); rendering the tiles: ${t.renders} passes, ${t.renderTotal.toFixed(0)} ms in all, the longest ${t.render.toFixed(0)} ms`);
  console.log(`[${label}] long tasks (> 50 ms) until then: ${t.nlong}, the longest ${t.longest.toFixed(0)} ms`);
  console.log(`[${label}] first screenful (100 tiles) in the DOM at ${t.first.toFixed(0)} ms`);
  console.log(`[${label}] all ${N} tiles in the DOM at ${t.tiles.toFixed(0)} ms, interactive at ${t.interactive.toFixed(0)} ms (${t.domNodes} elements)`);
  console.log(`[${label}] baseline: fetch + parse of the same list in the page, median of 5: ${t.base.toFixed(0)} ms; interactive ÷ baseline: ${(t.interactive / t.base).toFixed(1)}×`);
}

async function main() {
  const ctx = await startServer();
  const createMs = await createClusters(ctx);
  console.log(`clusters: ${N} created (with status) in ${createMs} ms; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, acceptInsecureCerts: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--js-flags=--expose-gc'] });
  let open = null;
  try {
    const rows = [];
    const measure = async (label) => {
      for (let i = 0; i < LOADS; i++) {
        if (open) await open.context.close();
        open = await openFleet(browser, ctx, TRACE && `${TRACE}-${rows.length + 1}.json`);
        const l = `${label} ${i + 1}`;
        if (SHOT) await open.page.screenshot({ path: `${SHOT}-${rows.length + 1}.png` });
        report(l, open.t);
        rows.push([l, open.t, os.loadavg()[0]]);
      }
    };
    await measure('no apps');
    if (APPS > 0) {
      const a = await createApps(ctx);
      console.log(`apps: ${APPS} Deployments in ${NS} namespaces under ${NS * PER_NS} policies (${SPREAD} clusters each) created in ${a.created} ms, the store quiet at ${a.quiet} ms: ${a.bindings} bindings (${a.scheduled} scheduled), ${a.works} Works; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
      // a Work per application and cluster, and one per namespace and cluster (namespace sync)
      if (a.scheduled !== APPS || a.works !== APPS * SPREAD + NS * N) console.log(`NOTE: expected ${APPS} scheduled bindings and ${APPS * SPREAD + NS * N} Works`);
      await measure(`${APPS} apps`);
    }
    console.log('\n| load | first paint ms | list answered ms | first screenful ms | all tiles ms | **interactive ms** | tile rendering, JS ms (passes, longest) | longest task ms | elements | baseline ms | load avg (1 min) |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const [l, t, la] of rows) {
      console.log(`| ${l} | ${t.fp.toFixed(0)} | ${t.listEnd.toFixed(0)} | ${t.first.toFixed(0)} | ${t.tiles.toFixed(0)} | **${t.interactive.toFixed(0)}** | ${t.renderTotal.toFixed(0)} (${t.renders}, ${t.render.toFixed(0)}) | ${t.longest.toFixed(0)} | ${t.domNodes} | ${t.base.toFixed(0)} | ${la.toFixed(1)} |`);
    }
    const last = rows[rows.length - 1][1];
    console.log(`\ntarget interactive ≤ 1000 ms (${rows[rows.length - 1][0]}): ${last.interactive <= 1000 ? 'met' : 'NOT met'}`);
    const { page, cdp, net } = open;

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
    const patch = async (i, k) => {
      const r = await call(ctx, 'PATCH', `${CLUSTERS}/${name(i)}/status`, { status: { resourceSummary: status(i, k).resourceSummary } });
      if (r.code !== 200) problem(`status patch ${name(i)}: ${r.code} ${r.body}`, ctx.dir);
    };
    const mib = (x) => (x / 1048576).toFixed(2);
    const h0 = await heap();
    const heaps = [];
    let total = 0, bytes = 0, ms = 0;
    if (MINUTES > 0) {
      // M minutes at RATE updates a second, paced (the k-th update of a minute is sent at
      // k / RATE s into it); the heap after a GC at the end of each minute
      const perMin = Math.round(RATE * 60);
      const bytes0 = net.watchBytes;
      for (let m = 0; m < MINUTES; m++) {
        const start = Date.now();
        let next = 0;
        await Promise.all(Array.from({ length: 8 }, async () => {
          while (next < perMin) {
            const k = next++;
            const wait = start + (k * 1000) / RATE - Date.now();
            if (wait > 0) await sleep(wait);
            await patch((k * 13 + m * 7) % N, total + k);
          }
        }));
        total += perMin;
        ms += Date.now() - start;
        heaps.push(await heap());
        console.log(`churn minute ${m + 1}: ${perMin} status updates in ${((Date.now() - start) / 1000).toFixed(1)} s; JS heap after a GC ${mib(heaps[m])} MiB; load average ${os.loadavg()[0].toFixed(1)}`);
      }
      await sleep(1500); // the last events reach the page
      bytes = net.watchBytes - bytes0;
    } else {
      // --rounds rounds of --churn updates: the heap after each; the target compares the last
      // round with the first (after warm-up: code and caches the first events bring are not a leak)
      for (let round = 0; round < ROUNDS; round++) {
        const bytes0 = net.watchBytes;
        const tc = Date.now();
        await pool(CHURN, 8, async (k) => patch((k * 13) % N, k + round * CHURN));
        ms += Date.now() - tc;
        await sleep(1500); // the last events reach the page
        bytes += net.watchBytes - bytes0;
        heaps.push(await heap());
      }
      total = CHURN * ROUNDS;
    }
    const unit = MINUTES > 0 ? 'minute' : 'round';
    console.log(`churn: ${total} status updates (${((total * 1000) / ms).toFixed(0)}/s); JS heap after a GC: ${mib(h0)} MiB before, then ${heaps.map(mib).join(', ')} MiB`);
    const steady = (heaps[heaps.length - 1] - heaps[0]) / heaps[0];
    console.log(`heap growth from the first ${unit} to the last: ${(steady * 100).toFixed(1)}% (from before the churn: ${(((heaps[heaps.length - 1] - h0) / h0) * 100).toFixed(1)}%)`);
    console.log(`watch bytes per event (as chromium received them, TLS off, chunk framing on): ${(bytes / total).toFixed(0)}`);
    console.log(`target heap growth ≤ 10% (first ${unit} to last): ${steady <= 0.1 ? 'met' : 'NOT met'}; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
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
