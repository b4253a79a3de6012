// The Failover page's timeline (ui/js/failover.js) from bindings as the server stores them: the
// cases the browser test does not reach in a few seconds. A history item and the task it stands
// for are one row, as `flotilla ctl failover history` pairs them; a task not in the history yet
// is a row of its own; newest first; a task's deadline is its creation plus its grace period
// (600 s when unset), and a Never or suppressDeletion task has none.
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { timeline, deadline, reasonText } = await import(pathToFileURL(path.join(here, '../../../ui/js/failover.js')));

const binding = (spec, status) => ({ metadata: { name: 'web-deployment', namespace: 'default' },
  spec: { resource: { kind: 'Deployment', namespace: 'default', name: 'web' }, ...spec }, status });

test('a completed failover, one in progress with its task, and a task the history does not hold yet', () => {
  const b = binding({
    clusters: [{ name: 'member3' }],
    gracefulEvictionTasks: [
      { fromCluster: 'member2', purgeMode: 'Gracefully', reason: 'TaintUntolerated', producer: 'TaintManager',
        creationTimestamp: '2026-12-07T03:10:00Z', gracePeriodSeconds: 120 },
      { fromCluster: 'member4', purgeMode: 'Directly', reason: 'ApplicationFailure', producer: 'ApplicationFailover',
        creationTimestamp: '2026-12-07T03:20:00Z', preservedLabelState: { 'ckpt.example.io/id': 'c-7' } },
    ],
  }, {
    failoverHistory: [
      { reason: 'ApplicationFailover', startTime: '2026-12-07T03:00:00Z', fromCluster: 'member1',
        clustersAfterFailover: ['member2'], completionTime: '2026-12-07T03:00:30Z', outcome: 'NewCopyHealthy',
        preservedLabelState: { 'ckpt.example.io/id': 'c-1' } },
      { reason: 'ClusterFailover', startTime: '2026-12-07T03:10:00Z', fromCluster: 'member2' },
    ],
  });
  const t = timeline(b, [{ reason: 'FailoverStarted', type: 'Normal', message: 'leaving member2',
    lastTimestamp: '2026-12-07T03:10:05Z', metadata: {} }]);
  assert.deepEqual(t.map((x) => [x.kind, x.reason, x.from, x.to.join(','), x.inProgress || false]), [
    ['eviction', 'ApplicationFailure', 'member4', 'member3', true],
    ['event', 'FailoverStarted', '', '', false],
    ['failover', 'ClusterFailover', 'member2', 'member3', true],
    ['failover', 'ApplicationFailover', 'member1', 'member2', false],
  ]);
  // the open history item takes its task's purge mode, producer and deadline
  assert.equal(t[2].purgeMode, 'Gracefully');
  assert.equal(t[2].producer, 'TaintManager');
  assert.equal(t[2].deadline.at, '2026-12-07T03:12:00Z');
  assert.equal(t[0].deadline.at, '2026-12-07T03:30:00Z', 'the default grace period, 600 s');
  assert.deepEqual(t[0].state, { 'ckpt.example.io/id': 'c-7' });
  assert.equal(t[3].outcome, 'NewCopyHealthy');
  assert.equal(t[3].deadline, null);
  assert.deepEqual(t[3].state, { 'ckpt.example.io/id': 'c-1' });
});

test('a binding with no failover has an empty timeline', () => {
  assert.deepEqual(timeline(binding({ clusters: [{ name: 'member1' }] }, {})), []);
  assert.deepEqual(timeline({ metadata: { name: 'x' } }, undefined), []);
});

test('deadlines of tasks kept by hand, and the reasons in words', () => {
  assert.match(deadline({ purgeMode: 'Never', creationTimestamp: '2026-12-07T03:00:00Z' }).text, /removed by hand/);
  assert.match(deadline({ purgeMode: 'Gracefully', suppressDeletion: true }).text, /suppressDeletion/);
  assert.equal(deadline({ purgeMode: 'Gracefully' }).at, '', 'no creationTimestamp: no time to show');
  assert.equal(reasonText('TaintUntolerated'), 'Eviction by taint');
  assert.equal(reasonText('ClusterFailover'), 'Cluster failover (taint)');
  assert.equal(reasonText('Maintenance'), 'Maintenance');
});
