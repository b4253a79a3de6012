// The dashboard's informer (ui/js/api.js) against a scripted API in this process: the cases a
// real server produces only rarely or slowly. A watch cut mid-stream is resumed from the last
// resourceVersion it delivered (a BOOKMARK's included), not re-listed; a 410 Expired, as an
// ERROR event or as the watch's own answer, re-lists; a 403 stops the informer with the API's
// message.
import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// the page's frame callback, as a browser would call it
globalThis.requestAnimationFrame = (fn) => setTimeout(fn, 0);
const { Informer, setToken } = await import(pathToFileURL(path.join(here, '../../../ui/js/api.js')));

const cm = (name, rv) => ({ metadata: { name, namespace: 'default', resourceVersion: String(rv) } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A server answering with script[i] to the i-th request: a function (req, res) of its own.
async function scripted(script) {
  const seen = [];
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    seen.push({ watch: u.searchParams.get('watch'), rv: u.searchParams.get('resourceVersion'), auth: req.headers.authorization,
      limit: u.searchParams.get('limit'), cont: u.searchParams.get('continue') });
    const step = script[Math.min(seen.length - 1, script.length - 1)];
    step(req, res);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${srv.address().port}/api/v1/configmaps`, seen, close: () => { srv.closeAllConnections(); srv.close(); } };
}

const list = (rv, ...items) => (req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ kind: 'ConfigMapList', metadata: { resourceVersion: String(rv) }, items }));
};
// a first page of a list, with the token of the rest
const page = (rv, cont, ...items) => (req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ kind: 'ConfigMapList', metadata: { resourceVersion: String(rv), continue: cont }, items }));
};
// a watch that sends events, then (cut) destroys the connection or (hold) stays open
const watch = (events, how) => (req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  for (const e of events) res.write(`${JSON.stringify(e)}\n`);
  if (how === 'cut') setTimeout(() => req.socket.destroy(), 20);
};
const status = (code, reason, message) => (req, res) => {
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message }));
};

async function until(cond, what) {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await sleep(25);
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('a cut watch resumes from the last resourceVersion, a bookmark\'s included, without a relist', async () => {
  const s = await scripted([
    list(10, cm('a', 5)),
    watch([{ type: 'ADDED', object: cm('b', 11) }, { type: 'BOOKMARK', object: { metadata: { resourceVersion: '14' } } }], 'cut'),
    watch([{ type: 'MODIFIED', object: cm('a', 15) }], 'hold'),
  ]);
  setToken('t0k3n');
  const inf = new Informer(s.url).start();
  try {
    await until(() => inf.items.get('default/a')?.metadata.resourceVersion === '15', 'the event after the resume');
    assert.deepEqual(s.seen.map((x) => [x.watch, x.rv]), [[null, null], ['1', '10'], ['1', '14']]);
    assert.equal(s.seen[0].limit, null, 'an informer that is not progressive lists everything at once');
    assert.ok(s.seen.every((x) => x.auth === 'Bearer t0k3n'), 'the token in the header of every request');
    assert.deepEqual([...inf.items.keys()].sort(), ['default/a', 'default/b']);
  } finally {
    inf.stop();
    s.close();
  }
});

test('410 Expired re-lists: as an ERROR event and as the watch\'s answer', async () => {
  const s = await scripted([
    list(10, cm('a', 5), cm('gone', 6)),
    watch([{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } }], 'hold'),
    list(20, cm('a', 18)),
    status(410, 'Expired', 'too old resource version: 20 (25)'),
    list(30, cm('a', 18), cm('c', 29)),
    watch([], 'hold'),
  ]);
  const inf = new Informer(s.url).start();
  try {
    await until(() => s.seen.length === 6, 'the third list and its watch');
    assert.deepEqual(s.seen.map((x) => [x.watch, x.rv]),
      [[null, null], ['1', '10'], [null, null], ['1', '20'], [null, null], ['1', '30']]);
    await until(() => inf.items.has('default/c'), 'the third list applied');
    assert.deepEqual([...inf.items.keys()].sort(), ['default/a', 'default/c'], 'what a relist no longer has is gone');
  } finally {
    inf.stop();
    s.close();
  }
});

test('a progressive first list shows its first page before the rest; an expired continue re-lists', async () => {
  const s = await scripted([
    page(10, 'tok1', cm('a', 5)),
    status(410, 'Expired', 'The provided continue parameter is too old'),
    page(20, 'tok2', cm('a', 5), cm('b', 19)),
    (req, res) => setTimeout(() => list(20, cm('c', 7))(req, res), 300), // the rest, slowly
    watch([], 'hold'),
  ]);
  const inf = new Informer(s.url, { progressive: true }).start();
  const shown = [];
  inf.subscribe(() => shown.push([[...inf.items.keys()].sort().join(','), inf.synced]));
  try {
    await until(() => s.seen.length === 5, 'the watch after the second list');
    assert.deepEqual(s.seen.map((x) => [x.limit, x.cont, x.watch, x.rv]), [
      ['100', null, null, null], // the first page
      [null, 'tok1', null, null], // the rest: 410, so a new list
      ['100', null, null, null],
      [null, 'tok2', null, null],
      [null, null, '1', '20'], // watched from the list's revision
    ]);
    await until(() => inf.synced, 'synced');
    assert.deepEqual([...inf.items.keys()].sort(), ['default/a', 'default/b', 'default/c']);
    assert.ok(shown.some(([keys, synced]) => keys === 'default/a,default/b' && !synced), `the first page shown before the rest: ${JSON.stringify(shown)}`);
    assert.deepEqual(shown[shown.length - 1], ['default/a,default/b,default/c', true]);
  } finally {
    inf.stop();
    s.close();
  }
});

test('a relist of a progressive informer is one request and replaces the items at once', async () => {
  const s = await scripted([
    list(10, cm('a', 5)),
    watch([{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } }], 'hold'),
    (req, res) => setTimeout(() => list(20, cm('b', 19))(req, res), 200),
    watch([], 'hold'),
  ]);
  const inf = new Informer(s.url, { progressive: true }).start();
  const shown = [];
  inf.subscribe(() => shown.push([...inf.items.keys()].sort().join(',')));
  try {
    await until(() => s.seen.length === 4, 'the relist\'s watch');
    assert.deepEqual(s.seen.map((x) => [x.limit, x.watch, x.rv]), [['100', null, null], [null, '1', '10'], [null, null, null], [null, '1', '20']],
      'a relist of a synced informer is one request');
    await until(() => inf.items.has('default/b'), 'the relist applied');
    assert.deepEqual(shown, ['default/a', 'default/b'], 'nothing empty or partial shown while relisting');
  } finally {
    inf.stop();
    s.close();
  }
});

test('403 stops the informer with the API\'s message', async () => {
  const s = await scripted([status(403, 'Forbidden', 'configmaps is forbidden: User "v" cannot list resource "configmaps"')]);
  const inf = new Informer(s.url).start();
  try {
    await until(() => inf.error, 'the error');
    assert.equal(inf.error.code, 403);
    assert.match(inf.error.message, /User "v" cannot list/);
    await sleep(300);
    assert.equal(s.seen.length, 1, 'no retry of a refusal');
  } finally {
    inf.stop();
    s.close();
  }
});
