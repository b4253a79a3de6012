// The dashboard (/ui/) in a real browser: Debian's chromium, headless, driven by
// puppeteer-core (which never downloads a browser of its own). One `flotilla up` with three
// simulated members and a token file; an administrator and a view-only user sign in with
// their tokens as a user would paste them. Each page is screenshotted into
// build-artifacts/ui/ (FLOTILLA_ARTIFACTS overrides), checked with axe-core for serious or
// critical violations, and the whole run for console errors and failed requests.
//
//   FLOTILLA_BIN=$PWD/build-asan/flotilla node --test tests/e2e/ui/
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import puppeteer from 'puppeteer-core';
import { freePort } from '../free_port.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const BIN = process.env.FLOTILLA_BIN || path.join(root, 'build/flotilla');
const CHROMIUM = process.env.FLOTILLA_CHROMIUM || '/usr/bin/chromium';
const KUBECTL = fs.existsSync('/usr/bin/kubectl') ? '/usr/bin/kubectl' : 'kubectl';
const ARTIFACTS = process.env.FLOTILLA_ARTIFACTS || path.join(root, 'build-artifacts/ui');
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const ADMIN_TOKEN = 'ui-admin-token-0123456789abcdef';
const VIEWER_TOKEN = 'ui-viewer-token-0123456789abcdef';
const run = promisify(execFile);

// `flotilla up` with 3 members and a token file; resolves once it says it is up.
async function startFleet() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-ui-'));
  fs.writeFileSync(path.join(dir, 'tokens.csv'),
    `${ADMIN_TOKEN},ui-admin,2001\n${VIEWER_TOKEN},ui-viewer,2002,"viewers"\n`);
  const port = await freePort();
  const proc = spawn(BIN, ['up', '--data-dir', dir, '--members', '3', '--listen', `127.0.0.1:${port}`,
    '--', '--token-auth-file', path.join(dir, 'tokens.csv')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // a member that stops answering turns not-ready within seconds, not the default 30 s
    env: { ...process.env, FLOTILLA_CLUSTER_STATUS_INTERVAL_MS: '500', FLOTILLA_CLUSTER_FAILURE_THRESHOLD_MS: '1500' },
  });
  let out = '';
  proc.stderr.on('data', (d) => { out = (out + d).slice(-8000); });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`flotilla up not up within 40s:\n${out}`)), 40000);
    proc.stdout.on('data', (d) => {
      out = (out + d).slice(-8000);
      if (out.includes('Flotilla is up')) { clearTimeout(timer); resolve(); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`flotilla up exited ${code}:\n${out}`)); });
  });
  const kubectl = async (...args) => (await run(KUBECTL, ['--kubeconfig', path.join(dir, 'kubeconfig'), ...args],
    { timeout: 20000 })).stdout;
  const stop = async () => {
    if (proc.exitCode !== null) return;
    const done = new Promise((r) => proc.on('exit', r));
    proc.kill('SIGINT');
    const t = setTimeout(() => proc.kill('SIGKILL'), 20000);
    await done;
    clearTimeout(t);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { dir, url: `https://127.0.0.1:${port}`, kubectl, stop };
}

const RBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ui-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: User, name: ui-admin, apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: fleet-reader}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ui-viewers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: fleet-reader}
subjects: [{kind: Group, name: viewers, apiGroup: rbac.authorization.k8s.io}]
`;

const APP = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - {targetCluster: {clusterNames: [member1]}, weight: 1}
        - {targetCluster: {clusterNames: [member2]}, weight: 2}
        - {targetCluster: {clusterNames: [member3]}, weight: 3}
`;

// One replica on one of member1 and member2; a cluster failover carries its replica count over
// as a label. Its image never pulls (the simulator's fake/ images), so the new copy never turns
// Healthy and the eviction stays in progress until its grace period is over.
const FO_APP = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: fo, namespace: default, labels: {app: fo}}
spec:
  replicas: 1
  selector: {matchLabels: {app: fo}}
  template:
    metadata: {labels: {app: fo}}
    spec: {containers: [{name: fo, image: fake/nginx}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: fo, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: fo}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    spreadConstraints: [{spreadByField: cluster, maxGroups: 1, minGroups: 1}]
    replicaScheduling: {replicaSchedulingType: Duplicated}
  failover:
    cluster:
      purgeMode: Gracefully
      statePreservation: {rules: [{aliasLabelName: failover.example.io/replicas, jsonPath: "{.replicas}"}]}
`;

async function apply(fleet, yaml) {
  const f = path.join(fleet.dir, `apply-${Date.now()}.yaml`);
  fs.writeFileSync(f, yaml);
  return fleet.kubectl('apply', '-f', f);
}

// What the page did wrong: console errors, uncaught exceptions, failed or refused requests
// other than those a step expects (a wrong token's 401, a view-only user's 403, watches cut
// on purpose).
function watchProblems(page) {
  const problems = [];
  const expected = [];
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    // the browser logs every refused or failed fetch too: those are judged below
    if (expected.some((e) => (e.code && m.text().includes(`status of ${e.code}`)) || (e.failed && m.text().includes('net::ERR_')))) return;
    problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    const why = r.failure() ? r.failure().errorText : '';
    if (why === 'net::ERR_ABORTED' && r.url().includes('watch=1')) return; // a page's watches, ended on leaving it
    if (!expected.some((e) => e.failed && r.url().includes(e.url))) problems.push(`failed: ${r.method()} ${r.url()} ${why}`);
  });
  page.on('response', (r) => {
    if (r.status() < 400) return;
    if (!expected.some((e) => e.code === r.status() && r.url().includes(e.url))) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  // expect(e) allows e until the returned function is called
  const expect = (e) => {
    expected.push(e);
    return () => expected.splice(expected.indexOf(e), 1);
  };
  return { problems, expect };
}

async function shot(page, name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function axe(page, what) {
  await page.evaluate(AXE); // through the debugger, not a <script>: the page's CSP stays as served
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`);
  });
  assert.deepEqual(res, [], `axe-core on ${what}`);
}

async function signIn(page, token) {
  await page.waitForSelector('#token', { visible: true });
  await page.$eval('#token', (el) => { el.value = ''; });
  await page.type('#token', token);
  await page.click('#signin');
}

async function go(page, hash) {
  await page.click(`#nav a[href="${hash}"]`);
  await page.waitForFunction((h) => location.hash === h, {}, hash);
}

// A TCP relay between the browser and the server (TLS passes through it untouched), so a
// test can cut the connection as a network would: cut() ends every open connection and
// refuses new ones, mend() lets them through again.
async function relay(target) {
  const socks = new Set();
  let down = false;
  const srv = net.createServer((c) => {
    if (down) { c.destroy(); return; }
    const s = net.connect(target.port, target.host);
    socks.add(c); socks.add(s);
    c.pipe(s); s.pipe(c);
    const end = () => { c.destroy(); s.destroy(); socks.delete(c); socks.delete(s); };
    c.on('error', end); s.on('error', end); c.on('close', end); s.on('close', end);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${srv.address().port}`,
    cut() { down = true; for (const x of socks) x.destroy(); socks.clear(); },
    mend() { down = false; },
    close() { this.cut(); srv.close(); },
  };
}

// Click what sel names once it is there; a live page may rebuild it between the look and the
// click (a status update), so a detached element is looked up again, as a user would retry.
async function press(page, sel) {
  for (let i = 0; ; i++) {
    await page.waitForSelector(sel, { timeout: 10000 });
    try {
      return await page.click(sel);
    } catch (e) {
      if (i === 3 || !/detached|No element found/.test(e.message)) throw e;
    }
  }
}

const text = (page, sel) => page.$eval(sel, (el) => el.textContent);

test('the dashboard, live, in headless chromium', { timeout: 90000 }, async (t) => {
  const started = Date.now();
  const fleet = await startFleet();
  let browser;
  t.after(async () => {
    if (browser) await browser.close();
    await fleet.stop();
  });
  await apply(fleet, RBAC);
  const link = await relay({ host: '127.0.0.1', port: Number(new URL(fleet.url).port) });
  t.after(() => link.close());
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    acceptInsecureCerts: true, // the server's own CA, which this throwaway profile does not trust
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const { problems, expect } = watchProblems(page);

  await t.test('/ui redirects to the page, which a wrong token cannot pass', async () => {
    const allowed = expect({ code: 401, url: '/selfsubjectreviews' });
    const resp = await page.goto(`${link.url}/ui`, { waitUntil: 'load' });
    assert.equal(new URL(resp.url()).pathname, '/ui/');
    assert.match(resp.headers()['content-security-policy'], /script-src 'self'/);
    await signIn(page, 'not-a-token');
    await page.waitForSelector('#login-error:not([hidden])');
    assert.match(await text(page, '#login-error'), /not accepted \(401 Unauthorized\)/);
    assert.equal(await page.$eval('#nav', (n) => n.hidden), true, 'nothing but the message');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('flotilla.token')), null);
    allowed();
    await shot(page, '0-login-wrong-token');
    await axe(page, 'the sign-in page');
  });

  await t.test('Fleet shows the three members, Ready', async () => {
    await signIn(page, ADMIN_TOKEN);
    await page.waitForFunction(() => document.querySelectorAll('.tile[data-ready="ready"]').length === 3, { timeout: 15000 });
    const names = await page.$$eval('.tile', (ts) => ts.map((x) => x.dataset.cluster));
    assert.deepEqual(names, ['member1', 'member2', 'member3']);
    assert.match(await text(page, '#who'), /ui-admin/);
    assert.match(await text(page, '#fleet-summary'), /3 clusters: 3 ready/);
    assert.ok(!page.url().includes(ADMIN_TOKEN), 'the token is never in the URL');
    await page.evaluate(() => { window.sameDocument = true; }); // gone if anything reloads the page
    await shot(page, '1-fleet');
    await axe(page, 'Fleet');
  });

  await t.test('Applications shows the replica split of a Deployment applied with kubectl, without reload', async () => {
    await go(page, '#/apps');
    await page.waitForSelector('#apps-list');
    await apply(fleet, APP);
    const split = 'member1: 1, member2: 2, member3: 3';
    await page.waitForSelector(`li[data-binding="default/web-deployment"] .split[data-split="${split}"]`, { timeout: 15000 });
    await page.waitForFunction(() => /Current 3/.test(document.querySelector('li[data-binding="default/web-deployment"] .counts').textContent), { timeout: 15000 });
    assert.equal(await page.evaluate(() => window.sameDocument), true, 'no reload');
    await page.click('li[data-binding="default/web-deployment"] summary');
    await page.waitForSelector('li[data-binding="default/web-deployment"] table.detail tbody tr:nth-child(3)');
    // the drill-down's events: the template's and the binding's
    await page.waitForSelector('li[data-binding="default/web-deployment"] .app-events li[data-reason="ApplyPolicySucceed"]', { timeout: 10000 });
    await page.waitForSelector('li[data-binding="default/web-deployment"] .app-events li[data-reason="ScheduleBindingSucceed"]');
    await shot(page, '2-applications');
    await axe(page, 'Applications');
  });

  await t.test('Suspension: suspend the policy for member1 from the page and see it acknowledged', async () => {
    await go(page, '#/suspension');
    const card = 'article[data-policy="default/web"]';
    await page.waitForSelector(`${card} tr[data-cluster="member1"]`, { timeout: 15000 });
    await press(page, `${card} button[data-action="suspend"]`);
    await page.waitForSelector('#confirm[open] input[value="member1"]');
    await page.click('#confirm input[value="member1"]');
    await page.click('#confirm-ok');
    await page.waitForFunction((c) => {
      const el = document.querySelector(`${c} tr[data-cluster="member1"] .ack`);
      return el && el.textContent === 'Suspended, acknowledged';
    }, { timeout: 15000 }, card);
    assert.equal(await text(page, `${card} tr[data-cluster="member2"] .ack`), 'Dispatching');
    const pp = JSON.parse(await fleet.kubectl('get', 'pp', 'web', '-n', 'default', '-o', 'json'));
    assert.deepEqual(pp.spec.suspension, { dispatchingOnClusters: { clusterNames: ['member1'] } });
    await shot(page, '3-suspension');
    await axe(page, 'Suspension');
  });

  await t.test('Policies: what each selects and where it sends it; an OverridePolicy applied with kubectl appears', async () => {
    await go(page, '#/policies');
    const row = '#pp-table tr[data-policy="default/web"]';
    await page.waitForSelector(`${row} td[data-held="1"]`, { timeout: 10000 });
    const cells = await page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent));
    assert.deepEqual(cells, ['Deployment default/web', 'member1, member2, member3 · divided (Weighted)', '0', '1', 'member1']);
    await apply(fleet, `apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: web-labels, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders: {labelsOverrider: [{operator: add, value: {tier: canary}}]}
`);
    await page.waitForSelector('#op-table tr[data-policy="default/web-labels"]', { timeout: 10000 });
    assert.deepEqual(await page.$$eval('#op-table tr[data-policy="default/web-labels"] td', (tds) => tds.map((td) => td.textContent)),
      ['Deployment default/web', 'member2: labelsOverrider']);
    await shot(page, '3b-policies');
    await axe(page, 'Policies');
    // what member2 really receives: the override's label and its share of the replicas
    await go(page, '#/apps');
    const app = 'li[data-binding="default/web-deployment"]';
    await page.waitForSelector(`${app} details[open] button[data-action="work"][data-cluster="member2"]`);
    await page.waitForFunction(async () => {
      const r = await fetch('/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-member2/works',
        { headers: { Authorization: `Bearer ${sessionStorage.getItem('flotilla.token')}` } });
      return JSON.stringify(await r.json()).includes('canary');
    }, { timeout: 10000, polling: 200 });
    await press(page, `${app} button[data-action="work"][data-cluster="member2"]`);
    await page.waitForSelector(`${app} .work-diff[data-cluster="member2"]`, { timeout: 10000 });
    const added = await page.$$eval(`${app} .work-diff .add`, (xs) => xs.map((x) => x.textContent.trim()));
    const removed = await page.$$eval(`${app} .work-diff .del`, (xs) => xs.map((x) => x.textContent.trim()));
    assert.ok(added.some((l) => /^\+\s+"tier": "canary",?$/.test(l)), `the override's label: ${added}`);
    assert.ok(added.some((l) => /^\+\s+"replicas": 2,?$/.test(l)) && removed.some((l) => /^-\s+"replicas": 6,?$/.test(l)),
      `member2's share: ${added} / ${removed}`);
    assert.ok(!added.some((l) => l.includes('karmada.io/')), `no bookkeeping: ${added}`);
    await shot(page, '3c-rendered-work');
    await axe(page, 'Applications with a rendered Work');
  });

  await t.test('Fleet: cordon member3 from the page; the taint is there', async () => {
    await go(page, '#/fleet');
    // by keyboard: Enter on the tile's button asks first; Escape leaves the cluster as it was
    const button = '.tile[data-cluster="member3"] button[data-action="cordon"]';
    await page.waitForSelector(button);
    await page.focus(button);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#confirm[open]');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'confirm-cancel', 'the safe choice has focus');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#confirm:not([open])');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.action), 'cordon', 'focus returns to the button');
    assert.equal(JSON.parse(await fleet.kubectl('get', 'cluster', 'member3', '-o', 'json')).spec.taints, undefined);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#confirm[open]');
    await page.keyboard.press('Tab'); // to Confirm
    await page.keyboard.press('Enter');
    await page.waitForSelector('.tile[data-cluster="member3"] .chip.taint', { timeout: 10000 });
    assert.match(await text(page, '.tile[data-cluster="member3"] .chip.taint'), /unschedulable:NoSchedule/);
    const c = JSON.parse(await fleet.kubectl('get', 'cluster', 'member3', '-o', 'json'));
    assert.deepEqual(c.spec.taints.map((x) => `${x.key}:${x.effect}`), ['cluster.karmada.io/unschedulable:NoSchedule']);
    await shot(page, '4-fleet-cordoned');
    await go(page, '#/fleet');
  });

  await t.test('Applications: a reschedule asked from the page is taken by the scheduler', async () => {
    await go(page, '#/apps');
    const app = 'li[data-binding="default/web-deployment"]';
    const before = JSON.parse(await fleet.kubectl('get', 'rb', 'web-deployment', '-n', 'default', '-o', 'json'));
    assert.equal(before.spec.rescheduleTriggeredAt, undefined);
    await page.waitForSelector(`${app} button[data-action="reschedule"]`, { timeout: 10000 });
    await press(page, `${app} button[data-action="reschedule"]`);
    await page.waitForSelector('#confirm[open]');
    await page.click('#confirm-ok');
    await page.waitForFunction(() => /asked/.test(document.querySelector('#alert').textContent));
    let b;
    for (let i = 0; i < 50; i++) {
      b = JSON.parse(await fleet.kubectl('get', 'rb', 'web-deployment', '-n', 'default', '-o', 'json'));
      if (b.spec.rescheduleTriggeredAt && b.status.lastScheduledTime >= b.spec.rescheduleTriggeredAt) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(b.spec.rescheduleTriggeredAt, 'asked');
    assert.ok(b.status.lastScheduledTime >= b.spec.rescheduleTriggeredAt, `scheduled again: ${b.status.lastScheduledTime}`);
    await go(page, '#/fleet');
  });

  await t.test('Fleet: pause delivery to member1 until acknowledged, then resume it', async () => {
    const tile = '.tile[data-cluster="member1"]';
    await page.waitForSelector(`${tile} button[data-action="pause"]`, { timeout: 10000 });
    await press(page, `${tile} button[data-action="pause"]`);
    await page.waitForSelector('#confirm[open]');
    await page.click('#confirm-ok');
    await page.waitForFunction((t) => {
      const c = document.querySelector(`${t} .chip.paused`);
      return c && c.textContent === 'Paused';
    }, { timeout: 15000 }, tile);
    const c = JSON.parse(await fleet.kubectl('get', 'cluster', 'member1', '-o', 'json'));
    assert.equal(c.spec.suspendDispatching, true);
    const p = c.status.conditions.find((x) => x.type === 'Paused');
    assert.equal(p.status, 'True');
    assert.equal(p.observedGeneration, c.metadata.generation, 'acknowledged at the current generation');
    await press(page, `${tile} button[data-action="resume"]`);
    await page.waitForSelector('#confirm[open]');
    await page.click('#confirm-ok');
    await page.waitForSelector(`${tile} button[data-action="pause"]`, { timeout: 10000 });
    assert.equal(await page.$(`${tile} .chip.paused`), null);
  });

  await t.test('a lost connection shows "reconnecting", then resumes the watches from their resourceVersion', async () => {
    const lists = [], watches = [];
    const onReq = (r) => {
      const u = new URL(r.url());
      if (!u.pathname.endsWith('/clusters')) return;
      (u.searchParams.get('watch') ? watches : lists).push(u.searchParams.get('resourceVersion'));
    };
    // from a page that has listed and watches (not one still loading, which would list again)
    await page.waitForFunction(() => document.querySelector('#conn').textContent === 'Live' &&
      document.querySelectorAll('.tile[data-cluster^="member"]').length === 3, { timeout: 10000 });
    const allowed = expect({ failed: true, url: '/' }); // requests made while cut fail: that is the point
    link.cut();
    await page.waitForFunction(() => document.querySelector('#conn').textContent === 'Reconnecting…', { timeout: 15000 });
    await shot(page, '4b-reconnecting');
    page.on('request', onReq);
    link.mend();
    await page.waitForFunction(() => document.querySelector('#conn').textContent === 'Live', { timeout: 15000 });
    page.off('request', onReq);
    allowed();
    assert.deepEqual(lists, [], 'no relist');
    assert.ok(watches.length >= 1 && watches.every((rv) => Number(rv) > 0), `resumed from a resourceVersion: ${watches}`);
    // and it is live again: an uncordon from kubectl shows
    await fleet.kubectl('patch', 'cluster', 'member3', '--type=json', '-p', '[{"op":"remove","path":"/spec/taints"}]');
    await page.waitForSelector('.tile[data-cluster="member3"] button[data-action="cordon"]', { timeout: 10000 });
  });

  await t.test('a member taken down with flotilla ctl fault turns its tile not-ready, and back', async () => {
    const fault = (how) => run(BIN, ['ctl', 'fault', 'member2', '--members-kubeconfig',
      path.join(fleet.dir, 'members', 'admin.kubeconfig'), '--set', how], { timeout: 20000 });
    await fault('down');
    await page.waitForSelector('.tile[data-cluster="member2"][data-ready="notready"]', { timeout: 15000 });
    assert.match(await text(page, '#fleet-summary'), /3 clusters: 2 ready, 1 not ready/);
    await shot(page, '5-fleet-member-down');
    await fault('clear');
    await page.waitForSelector('.tile[data-cluster="member2"][data-ready="ready"]', { timeout: 15000 });
  });

  await t.test('Events: live and filterable', async () => {
    await go(page, '#/events');
    await page.waitForSelector('#events-body tr[data-reason="ScheduleBindingSucceed"]', { timeout: 10000 });
    await page.type('#events-search', 'ApplyPolicySucceed');
    await page.waitForFunction(() => [...document.querySelectorAll('#events-body tr')].every((r) => r.dataset.reason === 'ApplyPolicySucceed'));
    assert.ok((await page.$$('#events-body tr[data-reason="ApplyPolicySucceed"]')).length >= 1);
    await page.$eval('#events-search', (el) => { el.value = ''; el.dispatchEvent(new Event('input')); });
    await shot(page, '6-events');
    await axe(page, 'Events');
  });

  await t.test('the dark theme follows the system, and passes axe-core too', async () => {
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
    try {
      await go(page, '#/apps');
      await page.waitForSelector('li[data-binding="default/web-deployment"] .split');
      const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      assert.equal(bg, 'rgb(17, 19, 24)', 'the dark background');
      await shot(page, '6b-applications-dark');
      await axe(page, 'Applications, dark');
      await go(page, '#/fleet');
      await page.waitForSelector('.tile[data-cluster="member1"]');
      await shot(page, '6c-fleet-dark');
      await axe(page, 'Fleet, dark');
    } finally {
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    }
  });

  await t.test('a view-only user sees an action refused with the API\'s message', async () => {
    expect({ code: 403, url: '/propagationpolicies/web' });
    await page.click('#logout');
    await signIn(page, VIEWER_TOKEN);
    await page.waitForFunction(() => /ui-viewer/.test(document.querySelector('#who').textContent));
    await go(page, '#/suspension');
    const card = 'article[data-policy="default/web"]';
    // once the page has all it shows (the Works too), as a user would see it settle
    await page.waitForSelector(`${card} tr[data-cluster="member1"] .ack.acked`, { timeout: 10000 });
    await press(page, `${card} button[data-action="resume"]:not([disabled])`);
    await page.waitForSelector('#confirm[open] input[value="member1"]');
    await page.click('#confirm input[value="member1"]');
    await page.click('#confirm-ok');
    await page.waitForSelector('#alert:not([hidden])');
    assert.match(await text(page, '#alert'),
      /was refused: .*User "ui-viewer" cannot update resource "propagationpolicies"/);
    const pp = JSON.parse(await fleet.kubectl('get', 'pp', 'web', '-n', 'default', '-o', 'json'));
    assert.deepEqual(pp.spec.suspension, { dispatchingOnClusters: { clusterNames: ['member1'] } }, 'unchanged');
    await shot(page, '7-viewer-refused');
  });

  await t.test('a long cluster name is cut with an ellipsis and whole in its title; the grid keeps its columns', async () => {
    const long = `a-cluster-with-a-rather-long-name-${'x'.repeat(14)}`; // 48, the most a Cluster takes
    await apply(fleet, `apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: ${long}}
spec: {syncMode: Pull}
`);
    await go(page, '#/fleet');
    const tileSel = `.tile[data-cluster="${long}"]`;
    await page.waitForSelector(tileSel, { timeout: 10000 });
    const m = await page.$eval(tileSel, (t) => {
      const n = t.querySelector('.name');
      const other = document.querySelector('.tile[data-cluster="member1"]');
      return { title: n.title, cut: n.scrollWidth > n.clientWidth, overflow: getComputedStyle(n).textOverflow,
        width: t.getBoundingClientRect().width, otherWidth: other.getBoundingClientRect().width };
    });
    assert.equal(m.title, long);
    assert.equal(m.overflow, 'ellipsis');
    assert.ok(m.cut, 'the name does not fit, and is cut');
    assert.ok(Math.abs(m.width - m.otherWidth) < 1, `same width as the others: ${m.width} vs ${m.otherWidth}`);
    await shot(page, '8-fleet-long-name');
    await axe(page, 'Fleet with a long name');
  });

  await t.test('Failover: a NoExecute taint moves a workload; its timeline entry appears without reload', async () => {
    // last: the taint moves web off that cluster too, which the steps above would not expect
    await go(page, '#/failover');
    await page.waitForSelector('#failover-list');
    await apply(fleet, FO_APP);
    let old;
    for (let i = 0; i < 75 && !old; i++) {
      const rb = JSON.parse(await fleet.kubectl('get', 'rb', '-n', 'default', '-o', 'json')).items
        .find((b) => b.metadata.name === 'fo-deployment');
      const cs = (rb && rb.spec.clusters) || [];
      if (cs.length === 1) old = cs[0].name;
      else await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(old, 'fo scheduled');
    const neu = old === 'member1' ? 'member2' : 'member1';
    await fleet.kubectl('patch', 'cluster', old, '--type=merge', '-p',
      JSON.stringify({ spec: { taints: [{ key: 'ui-test/outage', effect: 'NoExecute' }] } }));
    const app = 'section[data-binding="default/fo-deployment"]';
    const entry = `${app} li[data-kind="failover"][data-reason="ClusterFailover"][data-from="${old}"][data-to="${neu}"]`;
    await page.waitForSelector(entry, { timeout: 15000 });
    assert.equal(await page.evaluate(() => window.sameDocument), true, 'no reload');
    assert.match(await text(page, `${entry} .route`), new RegExp(`^${old} → ${neu}$`));
    // in progress: the task's deadline is its creation plus the default grace period (600 s)
    const rb = JSON.parse(await fleet.kubectl('get', 'rb', 'fo-deployment', '-n', 'default', '-o', 'json'));
    const task = rb.spec.gracefulEvictionTasks.find((x) => x.fromCluster === old);
    assert.equal(await page.$eval(entry, (e) => e.dataset.state), 'inprogress');
    assert.equal(await page.$eval(`${entry} .deadline`, (e) => e.dataset.deadline),
      new Date(Date.parse(task.creationTimestamp) + 600000).toISOString().replace(/\.000Z$/, 'Z'));
    assert.match(await text(page, `${entry} .deadline`), /ends when the new copies are Healthy, at the latest .+ \(in 10m\)$/);
    // the preserved state the binding holds, shown as labels
    const kept = Object.entries((rb.status.failoverHistory.find((x) => x.fromCluster === old) || {}).preservedLabelState || {});
    assert.deepEqual(await page.$$eval(`${entry} .preserved li`, (ls) => ls.map((l) => l.textContent)),
      kept.map(([k, v]) => `${k}=${v}`));
    // web was on that cluster too, without a toleration: it has a timeline of its own
    await page.waitForSelector(`section[data-binding="default/web-deployment"] li[data-from="${old}"]`, { timeout: 15000 });
    // filters: by application, then by cluster
    await page.type('#failover-search', 'fo-');
    await page.waitForFunction(() => [...document.querySelectorAll('.fo-app')].map((x) => x.dataset.binding).join() === 'default/fo-deployment');
    await page.$eval('#failover-search', (el) => { el.value = ''; el.dispatchEvent(new Event('input')); });
    await page.select('#failover-cluster', 'member3');
    await page.waitForFunction(() => !document.querySelector('section[data-binding="default/fo-deployment"]'));
    await page.select('#failover-cluster', '');
    await page.waitForSelector(entry);
    // by keyboard: from the application filter, Tab, Tab, Space shows only what is in progress
    // (web's failover is over: its new copies are Healthy)
    await page.waitForSelector('section[data-binding="default/web-deployment"] li[data-state="done"]', { timeout: 15000 });
    await page.focus('#failover-search');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'failover-cluster');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    await page.waitForFunction(() => !document.querySelector('section[data-binding="default/web-deployment"]'));
    assert.ok(await page.$(entry), 'the eviction in progress stays');
    await page.keyboard.press('Space');
    await page.waitForSelector('section[data-binding="default/web-deployment"]');
    await shot(page, '9-failover');
    await axe(page, 'Failover');
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
    try {
      await shot(page, '9b-failover-dark');
      await axe(page, 'Failover, dark');
    } finally {
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    }
  });

  assert.deepEqual(problems, [], 'console errors or failed requests');
  assert.ok(Date.now() - started < 90000);
});
