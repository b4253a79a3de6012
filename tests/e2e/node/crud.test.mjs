// End-to-end tests of flotilla server with the official JavaScript client,
// @kubernetes/client-node 1.4.0: ConfigMap CRUD, list, error codes, custom objects and watch.
// Starts its own server (FLOTILLA_BIN, default ../../../build/flotilla) on a free loopback port.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { freePort } from '../free_port.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.env.FLOTILLA_BIN || path.resolve(here, '../../../build/flotilla');
const NS = 'node-e2e';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function readyz(port, ca) {
  return new Promise((resolve) => {
    const req = https.get({ host: '127.0.0.1', port, path: '/readyz', ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => { req.destroy(); resolve(false); });
  });
}

async function startServer() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-node-'));
  const port = await freePort();
  const log = fs.openSync(path.join(dir, 'server.log'), 'a');
  const proc = spawn(BIN, ['server', '--data-dir', dir, '--listen', `127.0.0.1:${port}`],
    { stdio: ['ignore', log, log] });
  let exited = null;
  proc.on('exit', (code, signal) => { exited = { code, signal }; });
  const kubeconfig = path.join(dir, 'kubeconfig');
  const deadline = Date.now() + 20000;
  for (;;) {
    if (exited) throw new Error(`server exited early: ${JSON.stringify(exited)}\n${serverLog(dir)}`);
    if (Date.now() > deadline) throw new Error(`server not ready within 20s\n${serverLog(dir)}`);
    if (fs.existsSync(kubeconfig) && fs.existsSync(path.join(dir, 'pki', 'ca.crt'))) {
      const ca = fs.readFileSync(path.join(dir, 'pki', 'ca.crt'));
      if (await readyz(port, ca)) break;
    }
    await sleep(50);
  }
  const stop = async () => {
    if (!exited) {
      const done = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 20000);
      exited = await done;
      clearTimeout(timer);
    }
    fs.closeSync(log);
    return exited;
  };
  return { dir, port, kubeconfig, proc, stop };
}

function serverLog(dir) {
  try {
    return fs.readFileSync(path.join(dir, 'server.log'), 'utf8').slice(-4000);
  } catch {
    return '';
  }
}

// Status code of a rejected client call (ApiException in 1.x carries .code).
async function rejectsWith(promise, code) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.code, code, `expected HTTP ${code}, got ${e.code}: ${e.body ?? e.message}`);
    return typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
  }
  assert.fail(`expected HTTP ${code}, but the call succeeded`);
}

let server;
let kc;
let core;

test.before(async () => {
  server = await startServer();
  kc = new k8s.KubeConfig();
  kc.loadFromFile(server.kubeconfig);
  core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } });
});

test.after(async () => {
  if (!server) return;
  const { code, signal } = await server.stop();
  const log = serverLog(server.dir);
  fs.rmSync(server.dir, { recursive: true, force: true });
  assert.equal(signal, null, `server died of ${signal}\n${log}`);
  assert.equal(code, 0, `server exited with ${code}\n${log}`);
});

test('ConfigMap create, read, replace, list, delete', { timeout: 30000 }, async () => {
  const created = await core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name: 'js-crud', labels: { app: 'js' } }, data: { a: '1' } },
  });
  assert.equal(created.metadata.name, 'js-crud');
  assert.ok(created.metadata.uid);
  assert.ok(created.metadata.resourceVersion);

  const read = await core.readNamespacedConfigMap({ name: 'js-crud', namespace: NS });
  assert.deepEqual(read.data, { a: '1' });
  assert.equal(read.metadata.uid, created.metadata.uid);

  read.data.b = '2';
  const replaced = await core.replaceNamespacedConfigMap({ name: 'js-crud', namespace: NS, body: read });
  assert.deepEqual(replaced.data, { a: '1', b: '2' });
  assert.ok(Number(replaced.metadata.resourceVersion) > Number(created.metadata.resourceVersion));

  const list = await core.listNamespacedConfigMap({ namespace: NS, labelSelector: 'app=js' });
  assert.deepEqual(list.items.map((i) => i.metadata.name), ['js-crud']);
  assert.ok(list.metadata.resourceVersion);

  await core.deleteNamespacedConfigMap({ name: 'js-crud', namespace: NS });
  const st = await rejectsWith(core.readNamespacedConfigMap({ name: 'js-crud', namespace: NS }), 404);
  assert.equal(st.reason, 'NotFound');
});

test('conflicts and duplicates are 409 with the right reason', { timeout: 30000 }, async () => {
  await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'js-cas' }, data: { v: '0' } } });
  const st = await rejectsWith(core.createNamespacedConfigMap({
    namespace: NS, body: { metadata: { name: 'js-cas' }, data: { v: 'dup' } },
  }), 409);
  assert.equal(st.reason, 'AlreadyExists');

  const stale = await core.readNamespacedConfigMap({ name: 'js-cas', namespace: NS });
  const fresh = await core.readNamespacedConfigMap({ name: 'js-cas', namespace: NS });
  fresh.data.v = '1';
  await core.replaceNamespacedConfigMap({ name: 'js-cas', namespace: NS, body: fresh });
  stale.data.v = 'stale';
  const conflict = await rejectsWith(core.replaceNamespacedConfigMap({ name: 'js-cas', namespace: NS, body: stale }), 409);
  assert.equal(conflict.reason, 'Conflict');
  const now = await core.readNamespacedConfigMap({ name: 'js-cas', namespace: NS });
  assert.deepEqual(now.data, { v: '1' });
});

test('Karmada PropagationPolicy through CustomObjectsApi', { timeout: 30000 }, async () => {
  const co = kc.makeApiClient(k8s.CustomObjectsApi);
  const group = 'policy.karmada.io';
  const version = 'v1alpha1';
  const plural = 'propagationpolicies';
  await co.createNamespacedCustomObject({
    group, version, namespace: NS, plural,
    body: {
      apiVersion: `${group}/${version}`, kind: 'PropagationPolicy', metadata: { name: 'js-pp' },
      spec: {
        resourceSelectors: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'nginx' }],
        placement: { clusterAffinity: { clusterNames: ['member1'] } },
      },
    },
  });
  const got = await co.getNamespacedCustomObject({ group, version, namespace: NS, plural, name: 'js-pp' });
  assert.deepEqual(got.spec.placement.clusterAffinity.clusterNames, ['member1']);
  const list = await co.listNamespacedCustomObject({ group, version, namespace: NS, plural });
  assert.deepEqual(list.items.map((i) => i.metadata.name), ['js-pp']);
  await co.deleteNamespacedCustomObject({ group, version, namespace: NS, plural, name: 'js-pp' });
  await rejectsWith(co.getNamespacedCustomObject({ group, version, namespace: NS, plural, name: 'js-pp' }), 404);
});

test('Watch on configmaps receives ADDED, MODIFIED and DELETED', { timeout: 30000 }, async () => {
  const list = await core.listNamespacedConfigMap({ namespace: NS });
  const events = [];
  let waiter = null;
  let doneErr;
  let ended = false;
  const watch = new k8s.Watch(kc);
  const controller = await watch.watch(`/api/v1/namespaces/${NS}/configmaps`,
    { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: true },
    (type, obj) => {
      if (type === 'BOOKMARK') return;
      events.push({ type, name: obj.metadata.name, data: obj.data, rv: obj.metadata.resourceVersion });
      if (waiter) waiter();
    },
    (err) => { ended = true; doneErr = err; if (waiter) waiter(); });

  const waitEvents = async (n, ms = 10000) => {
    const deadline = Date.now() + ms;
    while (events.length < n) {
      if (ended) assert.fail(`watch ended early (${doneErr}) after ${JSON.stringify(events)}`);
      const left = deadline - Date.now();
      if (left <= 0) assert.fail(`only ${events.length} of ${n} events: ${JSON.stringify(events)}`);
      await new Promise((r) => { waiter = r; setTimeout(r, Math.min(left, 200)); });
    }
  };

  try {
    const made = await core.createNamespacedConfigMap({
      namespace: NS, body: { metadata: { name: 'js-watched' }, data: { step: '1' } },
    });
    await waitEvents(1);
    made.data.step = '2';
    await core.replaceNamespacedConfigMap({ name: 'js-watched', namespace: NS, body: made });
    await waitEvents(2);
    await core.deleteNamespacedConfigMap({ name: 'js-watched', namespace: NS });
    await waitEvents(3);
  } finally {
    controller.abort();
  }
  const watched = events.filter((e) => e.name === 'js-watched');
  assert.deepEqual(watched.map((e) => e.type), ['ADDED', 'MODIFIED', 'DELETED']);
  assert.deepEqual(watched[0].data, { step: '1' });
  assert.deepEqual(watched[1].data, { step: '2' });
  const rvs = watched.map((e) => Number(e.rv));
  assert.ok(rvs[0] < rvs[1] && rvs[1] < rvs[2], `resourceVersions not increasing: ${rvs}`);
});
